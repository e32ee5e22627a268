package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/policy"
)

// FormatVersion is the newest format of what this package stores (a
// Progress, a JobStatus, the files of a FileStore) that this release
// writes and reads. It grows when the meaning of a stored field changes;
// every release reads every older format (lifecycle/testdata/golden holds
// each, as written by the release that introduced it). Format 2 added
// the clusters of a Deployer (Progress.Submit.Cluster, JobStatus.Cluster);
// format 3 the results of bounded jobs (JobStatus.Result), cron schedules
// of savepoints (SavepointPolicy.Schedule, TimeZone), triggered
// checkpoints (JobSpec.Checkpoints, JobStatus.Checkpoint) and the
// autoscaler (JobSpec.Autoscale, JobStatus.Autoscale); format 4 typed
// state that format 3 kept in the text of Progress.LastError
// (Progress.Stop.Unconfirmed), when the checkpoint statistics were read
// (Observed.CheckpointRead), a state read again after statistics a
// failed-over JobManager may have answered (Observed.Reread), the spec an action started with
// (JobStatus.ActionSpec), the jar's digest (JobTemplate.JarDigest,
// JobStatus.JarDigest), bounded jobs (JobSpec.Bounded), jobs without
// checkpointing (JobStatus.NoCheckpointing), the situation of the last
// call (JobStatus.Situation, Settled) and deleted statuses
// (JobStatus.Deleted); format 5 the savepoint ledger (the disposal in
// progress, JobStatus.Disposing, the failed disposals and delete choices
// on savepoint records, SavepointPolicy.DisposeOnDelete), one-shot
// requests (JobSpec.Requests, JobStatus.RequestsHandled,
// Progress.Checkpoint.ID), the retained checkpoints of replaced jobs
// (JobStatus.Replaced), adopting and detaching (JobSpec.Adopt, OnDelete,
// JobStatus.Detached); format 6 the upload of the stable template's
// build (JobStatus.StableJarID, StableJarDigest), the look-up of that
// upload (PhaseCheckJar) and the outcomes of a job found under a derived
// id that is not the deployment's and of a jar file that holds another
// build (OutcomeForeignJob, OutcomeJarChanged), the job that earned stability
// (JobStatus.StableJobID: a status without it reads as one whose Stable
// the job it records earned), the last call's verdict
// (JobStatus.Verdict) and the look-up of a savepoint trigger before it
// is sent again (Progress.Savepoint.Resend); format 7 periodic checkpoints as an
// action of their own (ActionCheckpoint, its trigger in the action's
// Progress instead of JobStatus.Checkpoint); format 8 one record per
// operation in a Progress: a header every operation keeps and the records
// of the operations and sub-operations that set them (Progress.Stop,
// Submit, Savepoint, Replace, Teardown, Dispose, BlueGreen, Rescale,
// Checkpoint), where older formats kept every field at the top level
// (read into the records), and the task slots of a BlueGreen's new job
// (BlueGreenProgress.Slots, which older formats kept as Parallelism);
// and the summary of the last audit of the Controller's Storage
// (JobStatus.Audit) and the savepoints found there
// (savepoint.ReasonFound); format 9 the compact form of the savepoint
// history (JobStatus.Savepoints, savepoint format 3: the job, the reason
// and the location prefix most records share written once, see
// savepoint.History.MarshalJSON), which Add and Remove give a history
// (one of an older form is written as it was read until then).
const FormatVersion = 9

// formatCheckpointAction is the first format whose periodic checkpoints
// are an action (ActionCheckpoint).
const formatCheckpointAction = 7

// ErrUnknownFormat is matched by errors.Is for stored data of a format
// newer than FormatVersion: a Progress (refused by every Step), a
// JobStatus (refused by Reconcile and Delete), a JobSpec (refused by
// Validate) or a FileStore file (refused by Get). It was written by
// a later flinkkit, and this one refuses it rather than act on it or
// write it back half understood. It is the same value as
// savepoint.ErrUnknownFormat and policy.ErrUnknownFormat.
var ErrUnknownFormat = format.ErrUnknown

// ErrForeignProgress is returned by Step, before any request, for a
// Progress that another operation, or the same operation for another job,
// wrote: acting on it could poll another job's savepoint, or end at once
// while the job keeps running. Store one Progress per operation and job.
var ErrForeignProgress = errors.New("lifecycle: the stored progress belongs to another operation or job")

// ErrInvalidProgress is returned by Step, before any request, for a
// Progress that no operation of this release wrote: a phase or outcome it
// does not know, an outcome without the Done phase (or the reverse), or a
// started Progress that names no operation.
var ErrInvalidProgress = errors.New("lifecycle: the stored progress is not one this release wrote")

// Names of the operations, as recorded in Progress.Operation.
const (
	opTakeSavepoint = "TakeSavepoint"
	opStop          = "Stop"
	opSubmit        = "Submit"
	opUpgrade       = "Upgrade"
	opRestart       = "Restart"
	opTeardown      = "Teardown"
	opRescale       = "Rescale"
	opDispose       = "DisposeSavepoints"
	opBlueGreen     = "BlueGreen"
	opCanary        = "Canary"
)

// bound runs step, the body of the Step of operation op built for job, if
// p may be stepped by it (check), counts the Step in p.Steps unless p had
// ended or the step refused to start it (an error, no phase), and records
// op, job and the format in p once it has started. A sub-operation that
// the step runs (a Stop or a Submit inside an Upgrade) is stepped without
// bound: it is not counted again. env is the operation's own copy of its
// Env, whose client bound replaces with one that records every answer
// (recorder): an answer of any of the step's requests that says the
// client is set up wrong for the cluster (flinkapi.ErrMisconfigured: 401,
// 403, a redirect, a TLS failure) is returned as Step's error: polling
// until the deadline cannot change it. p keeps what the step recorded, so
// that the caller resumes once the client is fixed. args are the program
// arguments of the job the operation may start: the step's context
// carries the secrets they name (withSecrets), read from env.Secrets.
func bound(ctx context.Context, p *Progress, op string, job flinkapi.JobID, env *Env, args []string, step func(ctx context.Context) (Result, error)) (Result, error) {
	if err := check(p, op, job); err != nil {
		return Result{}, err
	}
	migrate(p)
	counted := !p.Done() && ctx.Err() == nil
	s := &sink{}
	if env != nil {
		env.Client = record(env.Client, s)
		ctx = withSecrets(ctx, env.Secrets, args)
	}
	res, err := step(context.WithValue(ctx, sinkKey{}, s))
	if counted && (err == nil || p.Phase != "") {
		p.Steps++
	}
	if p.Phase != "" && p.Operation == "" {
		p.Operation, p.Target = op, job
	}
	if p.Operation != "" {
		p.FormatVersion = FormatVersion
	}
	if err == nil && s.err != nil {
		return Result{RequeueAfter: res.RequeueAfter}, fmt.Errorf("lifecycle: %s of job %s: %w", op, jobName(job), s.err)
	}
	return res, err
}

// sink holds the first answer of a step that says the client is set up
// wrong for the cluster.
type sink struct{ err error }

type sinkKey struct{}

// noted records err in the step's sink if it matches
// flinkapi.ErrMisconfigured, and returns it: for calls that do not go
// through an operation's client (a Deployer's, the Controller's own).
func noted(ctx context.Context, err error) error {
	if err != nil && errors.Is(err, flinkapi.ErrMisconfigured) {
		if s, ok := ctx.Value(sinkKey{}).(*sink); ok && s.err == nil {
			s.err = err
		}
	}
	return err
}

// check reports whether p may be stepped by the operation op built for
// job: p's format is one this release reads, it names op and job (or has
// not started), and its phase and outcome are ones this release writes.
func check(p *Progress, op string, job flinkapi.JobID) error {
	if err := format.Check("lifecycle.Progress", p.FormatVersion, FormatVersion); err != nil {
		return err
	}
	if err := checkBound(p, op, job); err != nil {
		return err
	}
	switch {
	case !knownPhases[p.Phase]:
		return fmt.Errorf("%w: unknown phase %q", ErrInvalidProgress, p.Phase)
	case !knownOutcomes[p.Outcome]:
		return fmt.Errorf("%w: unknown outcome %q", ErrInvalidProgress, p.Outcome)
	case (p.Outcome != "") != (p.Phase == PhaseDone):
		return fmt.Errorf("%w: phase %q with outcome %q", ErrInvalidProgress, p.Phase, p.Outcome)
	case !knownOutcomes[p.Replace.Ending], p.Replace.Ending == "" && p.Phase == PhaseDeleteCluster:
		return fmt.Errorf("%w: phase %q with the outcome %q to end with", ErrInvalidProgress, p.Phase, p.Replace.Ending)
	case p.Phase == PhaseRecord && !reportedByFlink(p):
		return fmt.Errorf("%w: phase %q records the location %q, which Flink did not report for job %s", ErrInvalidProgress, p.Phase,
			teardownRecord(p).Location, jobName(p.Target))
	}
	return nil
}

// checkBound reports whether p, unless it has not started, is bound to
// the operation op and to job.
func checkBound(p *Progress, op string, job flinkapi.JobID) error {
	fresh := p.Phase == "" && p.Outcome == ""
	switch {
	case p.Operation == "" && !fresh:
		return fmt.Errorf("%w: it is in phase %q with outcome %q but names no operation (a Progress is bound to its operation and job at its first Step)",
			ErrInvalidProgress, p.Phase, p.Outcome)
	case p.Operation != "" && p.Operation != op:
		return fmt.Errorf("%w: it was written by %s (job %s), not by %s", ErrForeignProgress, p.Operation, jobName(p.Target), op)
	case p.Operation != "" && !strings.EqualFold(string(p.Target), string(job)):
		return fmt.Errorf("%w: it was written by %s for job %s, not for job %s", ErrForeignProgress, op, jobName(p.Target), jobName(job))
	}
	return nil
}

// reportedByFlink reports whether the location a Progress in its record
// phase stores is one Flink reported for the job the Progress is bound
// to, in this operation: the savepoint of a trigger it recorded for that
// job, or the newest state it read from that job's checkpoint
// statistics. Nothing else enters a restore-point store.
func reportedByFlink(p *Progress) bool {
	job := p.Replace.PreviousJobID
	if job == "" || !strings.EqualFold(string(job), string(p.Target)) {
		return false
	}
	loc := teardownRecord(p).Location
	switch {
	case loc == "":
		return false
	case loc == p.Replace.RestoreFrom && (p.Savepoint.Location == "" || p.Replace.RestoreKind == policy.KindCheckpoint):
		// The newest state of a job that had ended (endedFound).
		return loc == p.Replace.Observed.Checkpoint && !p.Replace.Observed.CheckpointTime.IsZero() &&
			(p.Replace.RestoreKind == policy.KindSavepoint || p.Replace.RestoreKind == policy.KindCheckpoint)
	}
	s := &p.Savepoint.Status
	return loc == s.Location && s.TriggerID != "" && strings.EqualFold(string(s.JobID), string(job))
}

func jobName(id flinkapi.JobID) string {
	if id == "" {
		return "(none)"
	}
	return string(id)
}

// formatUnconfirmed is the first format that records Progress.Stop.Unconfirmed.
const formatUnconfirmed = 4

// migrate turns what a Progress of an older format recorded as text into
// the typed fields this release decides on: up to format 3, a stop
// waiting for its job to end (PhaseWaitStopped) after an answer that
// Flink did not know the job, to be confirmed by its job list, started
// LastError with notFound.
func migrate(p *Progress) {
	if p.FormatVersion < formatUnconfirmed && p.Phase == PhaseWaitStopped && strings.HasPrefix(p.LastError, notFound) {
		p.Stop.Unconfirmed = true
	}
}
