package lifecycle

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Progress is the stored state of one lifecycle operation: plain data with
// stable JSON names, meant for a Kubernetes status, a file or a database.
// Store it after every Step and pass it back unchanged; everything a
// request needs to be idempotent (trigger id, job id) is recorded in it
// by the Step before the one that sends the request. The zero Progress
// starts an operation.
//
// Its fields are a header that every operation keeps (what it is, where it
// stands, when it started and must end, how it ended) and one record per
// operation or sub-operation, each set only by the operations that go
// through it and left out of the stored form when empty (format 8): Stop,
// Submit, Savepoint (a savepoint or checkpoint trigger), Replace (the job an
// Upgrade, Restart, Teardown, BlueGreen or Canary replaces or stops),
// Teardown, Dispose, BlueGreen, Rescale and Checkpoint. A Progress of an
// older format, which kept every field at the top level, is read into
// the same records.
type Progress struct {
	// FormatVersion is the format the Progress was written in
	// (FormatVersion), recorded by every Step. 0 reads as 1; every Step
	// refuses a newer format with ErrUnknownFormat before anything else:
	// do not store the Progress back then, it would lose what this release
	// does not know.
	FormatVersion int `json:"formatVersion,omitempty"`
	// Operation names the operation the Progress belongs to
	// ("TakeSavepoint", "Stop", "Submit", "Upgrade", "Restart",
	// "Teardown", "Rescale", "DisposeSavepoints", "BlueGreen", "Canary",
	// "TriggerCheckpoint") and Target the job it was built for (its Job
	// field; Submit: its JobID), both recorded at the first Step. A Step of
	// another operation, or of the same one for another job, refuses the
	// Progress with ErrForeignProgress.
	Operation string         `json:"operation,omitempty"`
	Target    flinkapi.JobID `json:"target,omitempty"`
	// Phase is where the operation, or the sub-operation it is in, stands.
	Phase Phase `json:"phase,omitempty"`
	// JobID is the job operated on: for Submit, the id chosen before the
	// job is submitted.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Requests counts the requests of the current phase (jar upload, jar
	// run, cancel) that got no definite answer. Before a jar run or a
	// cancel is sent again, the job is looked at: the first may have taken
	// effect.
	Requests int `json:"requests,omitempty"`
	// Started is when the operation started.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Started time.Time `json:"started,omitzero"`
	// Deadline is when the current phase ends in OutcomeTimedOut.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Deadline time.Time `json:"deadline,omitzero"`
	// Outcome is set once the operation has ended.
	Outcome Outcome `json:"outcome,omitempty"`
	// Reason explains the Outcome for people.
	Reason string `json:"reason,omitempty"`
	// LastError is the last transient error, cleared by a definite answer.
	// It is for people: no step decides on its text.
	LastError string `json:"lastError,omitempty"`
	// Steps counts the calls of Step.
	Steps int `json:"steps,omitempty"`

	// Savepoint is the savepoint (or checkpoint) trigger of TakeSavepoint,
	// of a stop with savepoint, or of a triggered checkpoint.
	Savepoint SavepointProgress `json:"savepoint,omitzero"`
	// Stop is the record of a Stop, on its own or inside another
	// operation.
	Stop StopProgress `json:"stop,omitzero"`
	// Submit is the record of a Submit, on its own or inside another
	// operation: the job it started or adopted.
	Submit SubmitProgress `json:"submit,omitzero"`
	// Replace is the record of an operation that replaces or stops a job
	// (Upgrade, Restart, Teardown, Rescale by upgrade, BlueGreen, Canary):
	// the job replaced, what was seen of it and the state the new job
	// starts from.
	Replace ReplaceProgress `json:"replace,omitzero"`
	// Teardown is the record of a Teardown.
	Teardown TeardownProgress `json:"teardown,omitzero"`
	// Dispose is the record of DisposeSavepoints.
	Dispose DisposeProgress `json:"dispose,omitzero"`
	// BlueGreen is the record of a BlueGreen or a Canary: the new job's
	// health.
	BlueGreen BlueGreenProgress `json:"blueGreen,omitzero"`
	// Rescale is the record of a Rescale.
	Rescale RescaleProgress `json:"rescale,omitzero"`
	// Checkpoint is the record of a checkpoint triggered through the REST
	// API.
	Checkpoint CheckpointProgress `json:"checkpoint,omitzero"`
}

// Observed is what Upgrade and Restart saw of the previous job and its
// state before asking the policy.
type Observed struct {
	// State is the job's state; empty if it is Missing or not read.
	State flinkapi.JobState `json:"state,omitempty"`
	// Missing reports that Flink did not know the job.
	Missing bool `json:"missing,omitempty"`
	// Since is when the job entered State.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Since time.Time `json:"since,omitzero"`
	// End is when the job reached a terminal state.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	End time.Time `json:"end,omitzero"`
	// Checkpoint is the external path of the job's latest retained
	// checkpoint.
	Checkpoint string `json:"checkpoint,omitempty"`
	// CheckpointTime is when that checkpoint was triggered.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	CheckpointTime time.Time `json:"checkpointTime,omitzero"`
	// CheckpointRead is when the job's checkpoint statistics, and
	// Checkpoint from them, were read from Flink (format 4): a running
	// job is cancelled for state chosen on statistics read shortly
	// before, never on ones read so long ago that Flink may have
	// discarded the checkpoint since, or the job checkpointed past the
	// state chosen.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	CheckpointRead time.Time `json:"checkpointRead,omitzero"`
	// Latest is the newest savepoint known: the caller's, or the one in
	// the RestorePointStore, whichever is newer. In a BlueGreen's or a
	// Canary's Progress: the savepoint the new job starts from, once
	// chosen (its own, or the one the old job ended with).
	Latest savepoint.Record `json:"latest,omitzero"`
	// StatsAfter is the earliest time the job's checkpoint statistics may
	// be read once it is in a terminal State: Flink answers them from a
	// cache (Timing.Cache), and an answer cached before the job ended can
	// name a checkpoint that its end discarded or miss the savepoint that
	// ended it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	StatsAfter time.Time `json:"statsAfter,omitzero"`
	// Adopt is the next id Upgrade and Restart look up for a job that an
	// earlier operation on the same job started (see Upgrade.JobID), and
	// Lookups how many they looked up.
	Adopt   flinkapi.JobID `json:"adopt,omitempty"`
	Lookups int            `json:"lookups,omitempty"`
	// Reread is set when the job, read RUNNING, showed checkpoint
	// statistics without a completed checkpoint or a restore, and its
	// state is read again before deciding (format 4): a JobManager that
	// failed over in between answers such statistics while it restores
	// the job from its latest checkpoint. Cleared once decided.
	Reread bool `json:"reread,omitempty"`
}

// Done reports whether the operation has ended.
func (p *Progress) Done() bool { return p.Outcome != "" }

// Stopped reports whether the operation ended with its job (for Upgrade
// and Restart, the job replaced) stopped for good: Flink lists it in a
// terminal state, or no longer knows it. A Teardown that did not succeed
// but Stopped has nothing left to stop: its Reason says which state could
// not be found, and tearing down again cannot bring it back, so a caller
// deleting the deployment may let it go, with that warning.
func (p *Progress) Stopped() bool {
	if !p.Done() {
		return false
	}
	switch {
	case p.Outcome == OutcomeJobGone, p.Replace.StopOutcome == OutcomeJobGone, p.Replace.Observed.Missing:
		return true
	case p.Outcome == OutcomeSucceeded && p.Operation == opTeardown:
		return true
	}
	return p.Replace.Observed.State.IsGloballyTerminal() && !p.Replace.Observed.StatsAfter.IsZero()
}

// Record returns the savepoint the operation produced, if it has a
// location: also when the job failed while stopping after it completed.
func (p *Progress) Record() (savepoint.Record, bool) {
	st := p.Savepoint.Status
	if st.Location == "" {
		st.Location = p.Savepoint.Location
	}
	return savepoint.RecordOf(st)
}

// HandledRestore returns the token of the restore request (p.Request)
// that the ended operation dealt with for good, to record as handled
// (policy.Observations.RestoreHandled, Upgrade.RestoreHandled); "" while
// the request is still to be carried out. A request counts as handled
// once the new job was started from it (whether it then ran or failed:
// Flink's answer to that path will not change) or when the policy refused
// the request itself (invalid, or too old for its age check). After a
// savepoint that failed or a deadline, it stays pending, and the next
// Upgrade tries again.
func (p *Progress) HandledRestore() string {
	if !p.Done() || p.Replace.Request.IsZero() {
		return ""
	}
	switch p.Outcome {
	case OutcomeSucceeded, OutcomeJobFailed, OutcomeSubmitFailed:
		// A SubmitFailed without a jar id (or, through a Deployer,
		// without a cluster) failed before the path reached Flink.
		if p.Replace.RestoreFrom == p.Replace.Request.Path && p.reachedFlink() {
			return p.Replace.Request.Token
		}
	case OutcomeBlocked:
		switch p.Replace.Decision {
		case policy.ReasonInvalidRestoreRequest, policy.ReasonRestoreRequestTooOld, policy.ReasonRestoreRequestAgeUnknown:
			return p.Replace.Request.Token
		}
	}
	return ""
}

// reachedFlink reports whether the submission's restore path reached
// Flink: the jar run was sent with a jar id, or the Deployer started a
// cluster with it. A SubmitFailed without either failed before.
func (p *Progress) reachedFlink() bool {
	return p.Submit.JarID != "" || !p.Submit.Cluster.IsZero()
}

// restoreRefused reports whether Flink refused for good a submission
// that carried RestoreFrom (SubmitFailed once the path reached it). Its
// answer does not say whether it refused the path or the jar: the path
// may be one Flink cannot restore, so it is never a restore point.
func (p *Progress) restoreRefused() bool {
	return p.Outcome == OutcomeSubmitFailed && p.Replace.RestoreFrom != "" && p.reachedFlink()
}

// DeepCopyInto copies in into out. in must be non-nil. Progress holds only
// values, strings and time.Time, so a shallow copy is deep.
func (in *Progress) DeepCopyInto(out *Progress) {
	*out = *in
	out.Replace.Preflight = in.Replace.Preflight.DeepCopy()
	in.Replace.Observed.Latest.DeepCopyInto(&out.Replace.Observed.Latest)
}

// DeepCopy returns a copy of in, or nil for nil.
func (in *Progress) DeepCopy() *Progress {
	if in == nil {
		return nil
	}
	out := new(Progress)
	in.DeepCopyInto(out)
	return out
}

// Result is what Step returns: when to call it again, or that the
// operation ended and how.
type Result struct {
	// RequeueAfter is when to call Step again; 0 with Done false means at
	// once (after storing the Progress).
	RequeueAfter time.Duration
	// Done is true once the operation ended.
	Done bool
	// Outcome is how it ended, when Done.
	Outcome Outcome
}

// finish ends the operation.
func finish(p *Progress, o Outcome, reason string) Result {
	p.Phase = PhaseDone
	p.Outcome = o
	p.Reason = reason
	return Result{Done: true, Outcome: o}
}

// startAt records now as the start of the operation, unless p started
// before: a sub-operation (a Stop or a Submit inside an Upgrade) keeps the
// start of the operation it is part of.
func startAt(p *Progress, now time.Time) {
	if p.Started.IsZero() {
		p.Started = now
	}
}

// keepLocation copies a savepoint location into p. A location once set
// stays until a newer savepoint of the operation completes (an Upgrade's
// second attempt after the job failed while stopping), which replaces it:
// the new job must start from the newest state.
func keepLocation(p *Progress) {
	if p.Savepoint.Status.Location != "" {
		p.Savepoint.Location = p.Savepoint.Status.Location
	}
}
