package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// blueGreenStops bounds the cancels of the old job that a blue/green
// upgrade tries again after a stop that timed out.
const blueGreenStops = 2

// DefaultBlueGreenWindow is how long the new job of a blue/green upgrade
// has, once it runs, to become healthy before it is cancelled.
const DefaultBlueGreenWindow = 5 * time.Minute

// BlueGreen upgrades a running job on a session cluster without a gap in
// which no version of it runs: it checks that the cluster has the free
// task slots the new job needs, takes a savepoint of the old job without
// stopping it, starts the new job from that savepoint with a new job id
// beside the old one, waits until the new job is healthy (RUNNING, all
// its tasks running, a checkpoint completed after its start, and Ready,
// if set), and only then stops the old job. A new job that fails, or is
// not healthy by the end of the window, is cancelled and the old job is
// left running, untouched (OutcomeBlueGreenAborted).
//
// During the overlap both jobs run and emit output: the sinks must be
// idempotent or transactional. The new job starts from the savepoint, so
// it processes again what the old one processed since.
//
// Build it anew from its configuration whenever convenient: all its state
// is in the Progress passed to Step, except Ready, which is asked again.
type BlueGreen struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the running job to replace.
	Job flinkapi.JobID
	// JarID, JarFile and Run describe the new job as for Submit;
	// Run.SavepointPath is set to the savepoint taken.
	JarID   flinkapi.JarID
	JarFile string
	Run     flinkapi.RunJarRequest
	// JobID, if set, is the new job's id; it must differ from Job. Empty:
	// an id derived from Job (distinct from Upgrade's), looked up in
	// Flink's job list before the savepoint, so that a BlueGreen started
	// again with a lost Progress adopts the job the first one started
	// instead of starting a third.
	JobID flinkapi.JobID
	// Slots is the number of free task slots the new job needs; 0:
	// Run.Parallelism, or if that is 0 the old job's largest vertex
	// parallelism.
	Slots int
	// Window bounds the time from the new job running until it is
	// healthy (DefaultBlueGreenWindow).
	Window time.Duration
	// StopOld is how the old job is stopped once the new one is
	// healthy: empty or CancelWithoutState cancels it (its state is in
	// the new job); StopWithSavepoint, CancelWithSavepoint or
	// SavepointThenCancel keep a fallback savepoint (Progress.Savepoint.Location),
	// and cancel the old job if that savepoint fails.
	StopOld StopStrategy
	// Ready, if set, is asked once the new job runs with all its tasks
	// and a checkpoint completed (for example: the source's lag below a
	// bound, read from the job's metrics); the new job is healthy once it
	// answers true. An error counts as a transient failure. It is not
	// stored: pass it to every BlueGreen built for the Progress.
	Ready func(ctx context.Context, api API, job flinkapi.JobID) (bool, error)
	// Deployer and Cluster, if set, run the jobs in application clusters:
	// the old job in Cluster, the new one in a cluster the Deployer
	// starts (Progress.Submit.Cluster; the free slots of a shared cluster are not
	// checked then). Each job is read and stopped through its cluster's
	// client; once the old job is stopped its cluster is deleted, and the
	// new job's once it was cancelled (PhaseDeleteCluster).
	Deployer Deployer
	Cluster  Cluster
	// Preflight, if set and not Disabled, checks the new job's plan
	// against the old job, and the free task slots, before the savepoint
	// (PreflightPolicy; Progress.Replace.Preflight); a refusal ends the operation
	// Blocked (policy.ReasonPreflightRefused), the old job untouched.
	Preflight *PreflightPolicy

	canary         bool // the operation is a Canary's
	oldAPI, newAPI API  // the clients of the old and the new job, per Step // the clients of the old and the new job, per Step
}

// blueGreenJobID is the id of the job a blue/green upgrade of the job
// seed names starts.
func blueGreenJobID(seed flinkapi.JobID) flinkapi.JobID {
	return derivedJobID("blue-green\x00" + strings.ToLower(string(seed)))
}

// Step does at most one request. The operation goes Observe (the old
// job's details: it must run), CheckSlots (the cluster's free slots),
// Adopt (Flink's job list: a job of the new id that an earlier run
// started is adopted), the savepoint phase of TakeSavepoint (its location
// recorded in p.Location and p.RestoreFrom, its record in
// p.Observed.Latest, before the submission),
// ConfirmOld (the old job's state once more: a job someone else stopped
// meanwhile with a newer savepoint has the new job start from that one),
// the phases of Submit (p.NewJobID recorded before the jar run), WaitHealthy,
// HealthCheckpoint, Readiness and ConfirmHealthy within the window, then
// the phases of Stop for the old job (p.Healthy is set first). It ends
// Succeeded with p.NewJobID the new job; Blocked when the old job does
// not run or the slots do not suffice (nothing done); in the outcome of a
// savepoint that failed (nothing started); SubmitFailed when Flink refused
// the new job; BlueGreenAborted once a new job that failed or was not
// healthy in time is cancelled; TimedOut if that cancel, or the old job's,
// timed out (p.NewJobID then names a job that may run). Step returns an
// error only for a canceled context.
func (b *BlueGreen) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *b
	return bound(ctx, p, opBlueGreen, b.Job, &op.Env, b.Run.ProgramArgs, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opBlueGreen, b.OnTransition, b.Logger, func() (Result, error) { return op.step(ctx, p) })
	})
}

// step is one Step of b on p, between the frame's checks and report.
func (b *BlueGreen) step(ctx context.Context, p *Progress) (Result, error) {
	op := *b
	old, err := jobEnv(b.Env, b.Deployer, b.Cluster)
	if err != nil {
		return Result{}, err
	}
	nw, err := jobEnv(b.Env, b.Deployer, p.Submit.Cluster)
	if err != nil {
		return Result{}, err
	}
	op.oldAPI, op.newAPI = old.Client, nw.Client
	now := b.clock().Now()
	var res Result
	if p.Phase == PhaseDeleteCluster {
		res = stepDeleteCluster(ctx, b.Deployer, b.retired(p), p, now, b.Timing)
	} else if res, err = op.advance(ctx, p, now); err == nil && res.Done && b.retires(p) {
		res = retire(p, now, b.Timing)
	}
	return res, err
}

// retires reports whether the operation, which just ended, deletes a
// cluster of the Deployer first: the old job's once the new one took
// over, or the new job's once it was cancelled.
func (b *BlueGreen) retires(p *Progress) bool {
	switch {
	case b.Deployer == nil || p.Submit.Cluster.IsZero():
		return false
	case p.Outcome == OutcomeSucceeded:
		return !b.Cluster.IsZero() && b.Cluster.Name != p.Submit.Cluster.Name
	}
	return p.Outcome == OutcomeBlueGreenAborted
}

// retired is the cluster PhaseDeleteCluster deletes.
func (b *BlueGreen) retired(p *Progress) Cluster {
	if p.BlueGreen.AbortReason != "" {
		return p.Submit.Cluster
	}
	return b.Cluster
}

func (b *BlueGreen) window() time.Duration { return orDefault(b.Window, DefaultBlueGreenWindow) }

// newJobID is the id the new job is submitted with.
func (b *BlueGreen) newJobID(p *Progress) flinkapi.JobID {
	switch {
	case b.JobID != "":
		return b.JobID
	case p.Replace.Observed.Adopt != "":
		return p.Replace.Observed.Adopt
	}
	return b.derivedJobID()
}

func (b *BlueGreen) submitOp(p *Progress) *Submit {
	op := &Submit{Env: b.Env.quiet(), JarID: b.JarID, JarFile: b.JarFile, Run: b.Run, JobID: b.newJobID(p), Deployer: b.Deployer}
	if op.JarID == "" && p.Replace.Preflight != nil {
		op.JarID = p.Submit.JarID // uploaded by the preflight
	}
	op.Run.SavepointPath = p.Replace.RestoreFrom
	return op
}

// stopOp stops the old job (or, while aborting, cancels the new one).
func (b *BlueGreen) stopOp(p *Progress) *Stop {
	env := b.Env.quiet()
	env.Client = b.oldAPI
	if p.JobID != p.Replace.PreviousJobID {
		env.Client = b.newAPI
	}
	op := &Stop{Env: env, Job: p.JobID, Strategy: p.Stop.Strategy, Reason: savepoint.ReasonUpdate}
	if p.Stop.Strategy == CancelWithoutState {
		// The old job's state is in the new, healthy job; the new job
		// being aborted keeps none worth having.
		op.Mode = policy.UpgradeStateless
	}
	return op
}

// subStep runs the first step of a sub-operation (which sends nothing)
// on p, from the start of its phase: the operation's start and step count
// stay as they are (startAt, bound).
func subStep(ctx context.Context, p *Progress, op interface {
	step(context.Context, *Progress) (Result, error)
}) (Result, error) {
	resetPhase(p)
	return op.step(ctx, p)
}

// advance is one step of b on p, between the frame's checks.
func (b *BlueGreen) advance(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if p.BlueGreen.AbortReason != "" && (p.Phase == PhaseCancel || p.Phase == PhaseWaitStopped) {
		return b.stepAbort(ctx, p)
	}
	switch p.Phase {
	case "":
		return b.begin(ctx, p, now), nil
	case PhasePreflight:
		return b.stepPreflight(ctx, p, now)
	case PhaseObserve, PhaseCheckSlots, PhaseAdopt:
		return b.stepObserve(ctx, p, now)
	case PhaseSavepoint, PhaseCancel, PhaseWaitStopped:
		return b.stepStop(ctx, p, now)
	case PhaseConfirmOld:
		return b.confirmOld(ctx, p, now)
	case PhaseUpload, PhaseSubmit, PhaseWaitRunning, PhaseFailureCause:
		return b.stepSubmit(ctx, p, now)
	case PhaseWaitHealthy, PhaseHealthCheckpoint, PhaseReadiness, PhaseConfirmHealthy:
		return b.health(ctx, p, now)
	}
	return finish(p, OutcomeBlocked, fmt.Sprintf("unknown phase %q of %s", p.Phase, opBlueGreen)), nil
}

// stepAbort steps the cancel of the new job of an aborted upgrade; once
// it ended, the upgrade ends aborted.
func (b *BlueGreen) stepAbort(ctx context.Context, p *Progress) (Result, error) {
	res, err := b.stopOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	return b.aborted(p), nil
}

// stepObserve steps the observation of the old job and the cluster; it
// times out at the deadline once a request failed.
func (b *BlueGreen) stepObserve(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	res, err := b.observe(ctx, p, now)
	if err == nil && !res.Done && !now.Before(p.Deadline) && p.LastError != "" {
		return finish(p, OutcomeTimedOut, "the deadline passed before the blue/green upgrade could start: "+p.LastError), nil
	}
	return res, err
}

// stepStop steps the savepoint of the old job before the new job starts,
// the cancel of a canary once it was healthy, or the stop of the old job
// once the new one is.
func (b *BlueGreen) stepStop(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch {
	case p.BlueGreen.Healthy.IsZero():
		return b.afterSavepoint(ctx, p)
	case b.canary:
		return b.canaryCancelled(ctx, p)
	}
	return b.stopOld(ctx, p, now)
}

// begin records the old job and goes on to observe it, once every
// secret the new job's arguments name can be read.
func (b *BlueGreen) begin(ctx context.Context, p *Progress, now time.Time) Result {
	startAt(p, now)
	p.Replace.PreviousJobID, p.JobID = b.Job, b.Job
	p.Deadline = now.Add(orDefault(b.Timing.Stop, defaultStopTimeout))
	if b.Job == "" {
		return finish(p, OutcomeBlocked, "a blue/green upgrade needs a running job (Job); deploy it with Upgrade")
	}
	if why := missingSecret(ctx, b.Run.ProgramArgs, b.Deployer != nil); why != "" {
		return finish(p, OutcomeBlocked, why+"; nothing was started, the old job "+string(b.Job)+" is left as it is")
	}
	if b.JobID != "" && strings.EqualFold(string(b.JobID), string(b.Job)) {
		return finish(p, OutcomeSubmitFailed, "the new job's id is the old job's id "+string(b.Job))
	}
	b.startPreflight(p)
	return Result{}
}

// stepSubmit steps the submission of the new job; once it runs, its
// health is waited for within the window.
func (b *BlueGreen) stepSubmit(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	res, err := b.submitOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	switch {
	case p.Outcome == OutcomeSucceeded:
		resetPhase(p)
		p.Phase, p.Deadline = PhaseWaitHealthy, now.Add(b.window())
		return Result{}, nil
	case p.Submit.NewJobID == "":
		p.Reason = "the new job " + string(p.JobID) + ": " + p.Reason + "; the old job " + string(p.Replace.PreviousJobID) + " runs on"
		return Result{Done: true, Outcome: p.Outcome}, nil
	}
	return b.abort(ctx, p, "the new job "+string(p.JobID)+" did not start: "+p.Reason)
}

// observe reads the old job (it must run, and names the slots needed),
// the free slots, and Flink's job list for the new job's id.
func (b *BlueGreen) observe(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case PhaseObserve:
		return b.observeOld(ctx, p), nil
	case PhaseCheckSlots:
		return b.checkSlots(ctx, p, now)
	}
	return b.lookupAdopt(ctx, p, now) // PhaseAdopt
}

// observeOld reads the old job, which must run, and records the task
// slots the new job needs beside it.
func (b *BlueGreen) observeOld(ctx context.Context, p *Progress) Result {
	d, err := b.oldAPI.Job(ctx, b.Job)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: b.Timing.backoff(2)}
	}
	p.LastError = ""
	p.Replace.Observed.State, p.Replace.Observed.Since = d.State, d.Timestamps[d.State]
	if d.State != flinkapi.JobRunning {
		return finish(p, OutcomeBlocked, fmt.Sprintf("the job %s is %s: a blue/green upgrade needs it RUNNING", b.Job, d.State))
	}
	p.BlueGreen.Slots = b.slotsNeeded(d)
	p.Phase = PhaseCheckSlots
	return Result{}
}

// slotsNeeded is the number of task slots the new job needs: Slots, or
// the run's parallelism, or the highest of the old job's vertices, and
// at least one.
func (b *BlueGreen) slotsNeeded(d *flinkapi.JobDetails) int {
	n := b.Slots
	if n <= 0 {
		n = b.Run.Parallelism
	}
	if n <= 0 {
		for _, v := range d.Vertices {
			n = max(n, v.Parallelism)
		}
	}
	return max(n, 1)
}

// checkSlots reads the session cluster's free task slots, which must
// hold the new job beside the old one, and goes on to the savepoint or,
// with a derived job id, to the lookup of a job to adopt.
func (b *BlueGreen) checkSlots(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if b.Deployer == nil { // a Deployer's new cluster brings its own slots
		ov, err := b.oldAPI.Overview(ctx)
		if err != nil {
			p.LastError = errMessage(err)
			return Result{RequeueAfter: b.Timing.backoff(2)}, nil
		}
		if ov.SlotsAvailable < p.BlueGreen.Slots {
			return finish(p, OutcomeBlocked, fmt.Sprintf("the cluster has %d free task slots of %d; the new job needs %d beside the old job %s: add task slots, or upgrade with Upgrade (stop, then start)",
				ov.SlotsAvailable, ov.SlotsTotal, p.BlueGreen.Slots, b.Job)), nil
		}
	}
	p.LastError = ""
	if b.JobID != "" || b.Deployer != nil {
		// (With a Deployer the new job runs in a cluster of its own:
		// Deploy, idempotent for the job id, finds it instead.)
		return b.startSavepoint(ctx, p, now)
	}
	p.Phase, p.Replace.Observed.Adopt = PhaseAdopt, b.derivedJobID()
	return Result{}, nil
}

// lookupAdopt looks in Flink's job list for a job an earlier run
// started under the derived id: one that runs is adopted, and with none
// the savepoint of the old job begins.
func (b *BlueGreen) lookupAdopt(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	jobs, err := b.oldAPI.ListJobs(ctx)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: b.Timing.backoff(2)}, nil
	}
	// A job that started before the old one is no earlier run's (a job
	// id reused): it is passed over.
	id, st, n, ok, err := resolveDerived(ctx, b.oldAPI, jobs, p.Replace.Observed.Adopt, true, b.Job)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: b.Timing.backoff(2)}, nil
	}
	p.Replace.Observed.Lookups = n
	switch {
	case !ok:
		return finish(p, OutcomeBlocked, fmt.Sprintf("%d jobs started in place of %s have ended; look at why, and start the next one with its own JobID", maxLookups, b.Job)), nil
	case st == "":
		p.Replace.Observed.Adopt, p.LastError = id, ""
		return b.startSavepoint(ctx, p, now)
	}
	// An earlier run whose Progress was lost started it: adopt it and
	// wait until it is healthy.
	resetPhase(p)
	p.Replace.Observed.Adopt = id
	if _, err := b.submitOp(p).step(ctx, p); err != nil {
		return Result{}, err
	}
	p.Phase, p.Submit.Adopted, p.Submit.NewJobID = PhaseWaitRunning, true, id
	p.LastError = "adopting the job " + string(id) + " (" + string(st) + ") that an earlier blue/green upgrade started"
	return Result{}, nil
}

func (b *BlueGreen) savepointOp() *TakeSavepoint {
	env := b.Env.quiet()
	env.Client = b.oldAPI
	return &TakeSavepoint{Env: env, Job: b.Job, Reason: savepoint.ReasonUpdate}
}

func (b *BlueGreen) startSavepoint(ctx context.Context, p *Progress, _ time.Time) (Result, error) {
	resetPhase(p)
	return b.savepointOp().step(ctx, p) // records the trigger id, sends nothing
}

// afterSavepoint steps the savepoint of the running old job; once it
// completed, its location is recorded as the restore point, and the
// submission begins.
func (b *BlueGreen) afterSavepoint(ctx context.Context, p *Progress) (Result, error) {
	res, err := b.savepointOp().step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	if p.Outcome != OutcomeSucceeded || p.Savepoint.Location == "" {
		p.Reason = "the savepoint of the old job " + string(b.Job) + " did not complete (" + p.Reason + "): no new job was started, the old job runs on"
		return res, nil
	}
	p.Replace.RestoreFrom, p.Replace.RestoreKind = p.Savepoint.Location, policy.KindSavepoint
	if rec, ok := p.Record(); ok {
		// Kept as the record of the restore point: the stop of the old
		// job with a savepoint (StopOld) replaces p.Savepoint later, and
		// the state the new job started from keeps its time.
		p.Replace.Observed.Latest = rec
	}
	resetPhase(p)
	p.Phase, p.Deadline = PhaseConfirmOld, b.clock().Now().Add(orDefault(b.Timing.Stop, defaultStopTimeout))
	return Result{}, nil
}

// confirmOld reads the old job once more after its savepoint completed,
// before the new job is submitted, one request per step: someone else
// (a user in the Flink UI) may have stopped or cancelled it since, or it
// may have failed. A job that runs, or that Flink no longer knows, leaves
// the restore point as it is; one on its way to another state (failing,
// restarting, cancelling) is read again until it runs or ends. A FINISHED
// job was stopped with a savepoint (see finalState). A job that ended in
// another way ends the upgrade Blocked with nothing started: nothing of
// it runs beside which to start the new job, and its newest state, for
// the update policy to choose (a retained checkpoint newer than the
// blue/green savepoint), is for the Controller's next plan.
func (b *BlueGreen) confirmOld(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if ended(p) {
		return b.finalState(ctx, p, now)
	}
	st, err := b.oldAPI.JobStatus(ctx, b.Job)
	switch {
	case flinkapi.IsJobNotFound(err), err == nil && st == flinkapi.JobRunning:
		return b.submitNew(ctx, p)
	case err != nil:
		return b.confirmLater(p, now, errMessage(err)), nil
	case st.IsGloballyTerminal():
		seenTerminal(p, st, now, b.Timing)
		p.LastError = ""
		return b.finalState(ctx, p, now)
	}
	return b.confirmLater(p, now, fmt.Sprintf("the old job %s is %s", b.Job, st)), nil
}

// finalState starts the new job from the savepoint a FINISHED old job
// ended with, once Flink's cache holds no checkpoint statistics from
// before its end (Timing.Cache): a savepoint triggered after the
// blue/green savepoint is the job's final state (a FINISHED job keeps no
// checkpoint), and since nothing of the old job runs any more, the new
// job starts from it (recorded as Observed.Latest, which the status then
// records as the newest state). An old job that ended otherwise ends the
// upgrade Blocked (see confirmOld).
func (b *BlueGreen) finalState(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if p.Replace.Observed.State != flinkapi.JobFinished {
		return finish(p, OutcomeBlocked, fmt.Sprintf("the job %s is %s after the savepoint %s of the blue/green upgrade completed: no new job was started beside it",
			b.Job, p.Replace.Observed.State, p.Savepoint.Location)), nil
	}
	if now.Before(p.Replace.Observed.StatsAfter) {
		return Result{RequeueAfter: p.Replace.Observed.StatsAfter.Sub(now)}, nil
	}
	stats, err := b.oldAPI.Checkpoints(ctx, b.Job)
	if err != nil && !errors.Is(err, flinkapi.ErrNotFound) {
		return b.confirmLater(p, now, errMessage(err)), nil
	}
	if rec, ok := finalSavepoint(b.Job, stats); ok && rec.Location != p.Replace.RestoreFrom && rec.Time.After(p.Savepoint.Status.TriggerTime) {
		p.Replace.Observed.Latest = rec
		p.Replace.RestoreFrom, p.Replace.RestoreKind = rec.Location, policy.KindSavepoint
	}
	return b.submitNew(ctx, p)
}

// finalSavepoint is the newest savepoint in the checkpoint history of
// job, which ended.
func finalSavepoint(job flinkapi.JobID, stats *flinkapi.CheckpointStatistics) (savepoint.Record, bool) {
	if stats == nil || stats.LatestSavepoint == nil || stats.LatestSavepoint.ExternalPath == "" {
		return savepoint.Record{}, false
	}
	sp := stats.LatestSavepoint
	return savepoint.Record{Location: sp.ExternalPath, Time: sp.TriggerTime, JobID: job, Reason: savepoint.ReasonUser}, true
}

// confirmLater reads the old job again after a backoff (a read that
// failed, or a job on its way to another state: why); past the deadline,
// the upgrade ends TimedOut with nothing started.
func (b *BlueGreen) confirmLater(p *Progress, now time.Time, why string) Result {
	p.LastError = why
	if !now.Before(p.Deadline) {
		return finish(p, OutcomeTimedOut, "the old job "+string(b.Job)+" was not seen running or ended after its savepoint "+p.Savepoint.Location+" completed: "+why+"; no new job was started")
	}
	p.Requests++
	return Result{RequeueAfter: b.Timing.backoff(p.Requests)}
}

// submitNew starts the submission of the new job from p.RestoreFrom.
func (b *BlueGreen) submitNew(ctx context.Context, p *Progress) (Result, error) {
	p.LastError = ""
	return subStep(ctx, p, b.submitOp(p))
}

// health judges the new job: its details, its checkpoints, the caller's
// readiness check, and its state once more, within the window.
func (b *BlueGreen) health(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	h := healthRead{b: b, p: p, now: now, id: p.Submit.NewJobID, past: !now.Before(p.Deadline)}
	switch p.Phase {
	case PhaseWaitHealthy:
		return h.running(ctx)
	case PhaseHealthCheckpoint:
		return h.checkpointed(ctx)
	case PhaseReadiness:
		return h.ready(ctx)
	}
	return h.confirm(ctx)
}

// healthRead is one read of the new job's health by b on p at now: id is
// the new job, past whether the window's deadline has passed.
type healthRead struct {
	b    *BlueGreen
	p    *Progress
	now  time.Time
	id   flinkapi.JobID
	past bool
}

// notYet waits for the new job's health, or past the window aborts.
func (h healthRead) notYet(ctx context.Context, why string) (Result, error) {
	if h.past {
		return h.b.abort(ctx, h.p, fmt.Sprintf("the new job %s was not healthy within the window (%v): %s", h.id, h.b.window(), why))
	}
	h.p.Phase = PhaseWaitHealthy
	return Result{RequeueAfter: h.b.Timing.pollSince(h.p.Deadline.Add(-h.b.window()), h.now)}, nil
}

// failed records a read that failed: read again after a backoff, or past
// the window, the job was not seen healthy in it.
func (h healthRead) failed(ctx context.Context, err error) (Result, error) {
	h.p.LastError = errMessage(err)
	if h.past {
		return h.notYet(ctx, h.p.LastError)
	}
	return Result{RequeueAfter: h.b.Timing.backoff(2)}, nil
}

// ill reports whether a new job in state st will not become healthy.
func ill(st flinkapi.JobState) bool {
	return st != flinkapi.JobRunning && st != flinkapi.JobCreated && st != flinkapi.JobInitializing && st != flinkapi.JobReconciling
}

// running reads whether the new job and all its tasks run.
func (h healthRead) running(ctx context.Context) (Result, error) {
	d, err := h.b.newAPI.Job(ctx, h.id)
	if err != nil {
		return h.failed(ctx, err)
	}
	h.p.LastError = ""
	if ill(d.State) {
		return h.b.abort(ctx, h.p, fmt.Sprintf("the new job %s is %s before it was healthy", h.id, d.State))
	}
	if d.State != flinkapi.JobRunning {
		return h.notYet(ctx, "it is "+string(d.State))
	}
	for _, v := range d.Vertices {
		if v.Status != string(flinkapi.JobRunning) {
			return h.notYet(ctx, "its task "+v.Name+" is "+v.Status)
		}
	}
	h.p.BlueGreen.NewJobStart = d.StartTime
	h.p.Phase = PhaseHealthCheckpoint
	return Result{}, nil
}

// checkpointed reads whether the new job completed a checkpoint since it
// started.
func (h healthRead) checkpointed(ctx context.Context) (Result, error) {
	stats, err := h.b.newAPI.Checkpoints(ctx, h.id)
	if err != nil {
		return h.failed(ctx, err)
	}
	h.p.LastError = ""
	if c := stats.LatestCompleted; (c == nil || c.TriggerTime.Before(h.p.BlueGreen.NewJobStart)) && !h.uncheckpointed(ctx, stats) {
		return h.notYet(ctx, "no checkpoint completed since it started at "+stamp(h.p.BlueGreen.NewJobStart))
	}
	h.p.Phase = PhaseConfirmHealthy
	if h.b.Ready != nil {
		h.p.Phase = PhaseReadiness
	}
	return Result{}, nil
}

// uncheckpointed reports whether the new job, which completed no
// checkpoint yet, runs with periodic checkpointing off: then it is
// healthy once its tasks run. It reads the job's checkpoint
// configuration (a second request of the step) only while it has taken
// no checkpoint at all.
func (h healthRead) uncheckpointed(ctx context.Context, stats *flinkapi.CheckpointStatistics) bool {
	if stats.Counts.Total > 0 {
		return false
	}
	cfg, err := h.b.newAPI.CheckpointConfig(ctx, h.id)
	return err == nil && (cfg.Interval <= 0 || cfg.Interval >= noCheckpointInterval)
}

// ready asks the caller's readiness check, if any.
func (h healthRead) ready(ctx context.Context) (Result, error) {
	if h.b.Ready != nil {
		ok, err := h.b.Ready(ctx, h.b.newAPI, h.id)
		noted(ctx, err)
		if err != nil {
			return h.failed(ctx, err)
		}
		h.p.LastError = ""
		if !ok {
			return h.notYet(ctx, "the readiness check says it is not ready")
		}
	}
	h.p.Phase = PhaseConfirmHealthy
	return Result{}, nil
}

// confirm reads the new job's state once more (the details are cached;
// the state is not) and, if it still runs, records it healthy and starts
// the stop of the old job.
func (h healthRead) confirm(ctx context.Context) (Result, error) {
	st, err := h.b.newAPI.JobStatus(ctx, h.id)
	if err != nil {
		return h.failed(ctx, err)
	}
	h.p.LastError = ""
	if st != flinkapi.JobRunning {
		if ill(st) {
			return h.b.abort(ctx, h.p, fmt.Sprintf("the new job %s is %s after it was seen healthy", h.id, st))
		}
		return h.notYet(ctx, "it is "+string(st))
	}
	p := h.p
	p.BlueGreen.Healthy = h.now
	if h.b.canary {
		return h.b.cancelCanary(ctx, p)
	}
	strategy := h.b.StopOld
	if strategy == "" {
		strategy = CancelWithoutState
	}
	p.Stop.Strategy = strategy
	p.JobID = p.Replace.PreviousJobID
	return subStep(ctx, p, h.b.stopOp(p))
}

// stopOld steps the stop of the old job once the new one is healthy. A
// stop with savepoint that fails falls back to a cancel: the new job
// holds the state.
func (b *BlueGreen) stopOld(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	res, err := b.stopOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	p.Replace.StopOutcome = p.Outcome
	switch {
	case p.Outcome == OutcomeSucceeded, p.Outcome == OutcomeJobGone, p.Outcome == OutcomeJobTerminal:
		reason := p.Reason
		p.JobID = p.Submit.NewJobID
		return finish(p, OutcomeSucceeded, fmt.Sprintf("the new job %s is healthy (started from savepoint %s); the old job %s: %s", p.Submit.NewJobID, p.Replace.RestoreFrom, p.Replace.PreviousJobID, reason)), nil
	case p.Stop.Strategy != CancelWithoutState && p.Outcome != OutcomeTimedOut:
		// The fallback savepoint failed while the old job runs on.
		p.Replace.Decision = policy.Reason("FallbackSavepointFailed")
		p.Stop.Strategy, p.JobID = CancelWithoutState, p.Replace.PreviousJobID
		return subStep(ctx, p, b.stopOp(p))
	case p.Outcome == OutcomeTimedOut && p.Replace.Attempts < blueGreenStops:
		// Both jobs may run: the stop of the old one ran out of time (a
		// JobManager that did not answer, or a caller away past the
		// deadline). It is cancelled again, with a deadline of its own,
		// before the operation gives up.
		p.Replace.Attempts++
		p.Stop.Strategy, p.JobID = CancelWithoutState, p.Replace.PreviousJobID
		return subStep(ctx, p, b.stopOp(p))
	}
	reason := p.Reason
	p.JobID = p.Submit.NewJobID
	return finish(p, OutcomeTimedOut, fmt.Sprintf("the new job %s is healthy, but the old job %s could not be stopped: %s; both run", p.Submit.NewJobID, p.Replace.PreviousJobID, reason)), nil
}

// abort cancels the new job, which failed or was not healthy in time,
// and leaves the old job as it is.
func (b *BlueGreen) abort(ctx context.Context, p *Progress, why string) (Result, error) {
	p.BlueGreen.AbortReason = why
	p.Stop.Strategy, p.JobID = CancelWithoutState, p.Submit.NewJobID
	return subStep(ctx, p, b.stopOp(p))
}

// aborted ends the operation once the cancel of the new job ended.
func (b *BlueGreen) aborted(p *Progress) Result {
	why := p.BlueGreen.AbortReason
	if p.Outcome == OutcomeSucceeded {
		p.Submit.NewJobID, p.JobID = "", p.Replace.PreviousJobID // ended: nothing to adopt
		return finish(p, OutcomeBlueGreenAborted, why+"; it was cancelled ("+p.Reason+"), the old job "+string(p.Replace.PreviousJobID)+" runs on untouched")
	}
	return finish(p, OutcomeTimedOut, why+"; cancelling it failed ("+p.Reason+"): a job "+string(p.Submit.NewJobID)+" may run beside the old job "+string(p.Replace.PreviousJobID))
}

// BlueGreenProgress is the record of a BlueGreen or a Canary in a
// Progress: the new job's health.
type BlueGreenProgress struct {
	// Slots are the task slots the new job needs.
	Slots int `json:"slots,omitempty"`
	// NewJobStart is when the new job started, as its details say: a
	// checkpoint completed after it is part of its health.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	NewJobStart time.Time `json:"newJobStart,omitzero"`
	// Healthy is when the new job was confirmed healthy, recorded before
	// the old job is stopped: never earlier.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Healthy time.Time `json:"healthy,omitzero"`
	// AbortReason is why the new job is cancelled (it failed, or was not
	// healthy within the window); set while it is cancelled, and the start
	// of the Reason the operation then ends with.
	AbortReason string `json:"abortReason,omitempty"`
}
