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
type Progress struct {
	// FormatVersion is the format the Progress was written in
	// (FormatVersion), recorded by every Step. 0 reads as 1; every Step
	// refuses a newer format with ErrUnknownFormat before anything else:
	// do not store the Progress back then, it would lose what this release
	// does not know.
	FormatVersion int `json:"formatVersion,omitempty"`
	// Operation names the operation the Progress belongs to
	// ("TakeSavepoint", "Stop", "Submit", "Upgrade", "Restart",
	// "Teardown", "Rescale", "DisposeSavepoints", "BlueGreen") and Target the job it
	// was built for (its Job field; Submit: its JobID), both recorded at
	// the first Step. A Step of another operation, or of the same one for
	// another job, refuses the Progress with ErrForeignProgress.
	Operation string         `json:"operation,omitempty"`
	Target    flinkapi.JobID `json:"target,omitempty"`
	// Phase is where the operation stands.
	Phase Phase `json:"phase,omitempty"`
	// JobID is the job operated on: for Submit, the id chosen before the
	// job is submitted.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Strategy is the stop strategy Stop chose.
	Strategy StopStrategy `json:"strategy,omitempty"`
	// Savepoint is the status of the savepoint operation, if any.
	Savepoint savepoint.Status `json:"savepoint,omitzero"`
	// Resend is when the job's checkpoint history last showed no
	// savepoint of the recorded trigger, which Flink had not
	// acknowledged, before it was sent again (format 5): a trigger
	// recorded, or cleared so, longer ago than Flink surely keeps a
	// trigger id is looked up in the history before it is sent, as a
	// request sent with it before may have taken a savepoint whose id
	// Flink forgot since.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Resend time.Time `json:"resend,omitzero"`
	// Location is the savepoint's location once known. It is never cleared.
	Location string `json:"location,omitempty"`
	// JarID is the uploaded jar Submit runs.
	JarID flinkapi.JarID `json:"jarID,omitempty"`
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
	// Unconfirmed reports that an answer about the job said Flink does not
	// know it: Flink's job list is asked in the next step, and confirms it
	// or shows the job after all (one such answer can come from a
	// JobManager failing over). Format 4; a Progress of an older format
	// recorded it as the start of LastError, which the first Step turns
	// into this field.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
	// Steps counts the calls of Step.
	Steps int `json:"steps,omitempty"`

	// PreviousJobID is the job Upgrade, Restart or Teardown replaces or
	// stops; JobID becomes the new job's id once it is chosen.
	PreviousJobID flinkapi.JobID `json:"previousJobID,omitempty"`
	// NewJobID is the job Submit, Upgrade, Restart, Rescale or BlueGreen started or
	// adopted: recorded in the step that sends the request that submits
	// it (the jar run, or the Deployer's Deploy) before it is sent, and
	// never cleared, whatever the outcome. Non-empty, a job of that id may
	// run (also after TimedOut): the caller adopts it as the deployment's
	// job and names it in the next operation, never the job it replaced.
	// Empty, no submission was sent (JobID may already hold the id chosen
	// for it), or it was refused for good (SubmitFailed: Flink refused the
	// jar run, or the Deployer the deploy), so that nothing runs under it,
	// or BlueGreen cancelled it (BlueGreenAborted: Flink confirmed it
	// ended).
	NewJobID flinkapi.JobID `json:"newJobID,omitempty"`
	// Cluster is the cluster a Deployer started for NewJobID, recorded
	// once Deploy returned it: its client reads the new job.
	Cluster Cluster `json:"cluster,omitzero"`
	// Ending is the outcome the operation ends with once the old job's
	// cluster is deleted (PhaseDeleteCluster).
	Ending Outcome `json:"ending,omitempty"`
	// Adopted reports that NewJobID was started by an earlier operation
	// on the same job (whose Progress was lost) and adopted by this one.
	Adopted bool `json:"adopted,omitempty"`
	// Observed is what Upgrade and Restart saw of the previous job.
	Observed Observed `json:"observed,omitzero"`
	// Decision is the reason of the policy's latest decision.
	Decision policy.Reason `json:"decision,omitempty"`
	// RestoreFrom is the path the new job starts from, recorded before
	// the old job is cancelled or the new one submitted; empty: without
	// state. RestoreKind says what it is.
	RestoreFrom string `json:"restoreFrom,omitempty"`
	// RestoreKind is Savepoint, Checkpoint or None once chosen.
	RestoreKind policy.RestoreKind `json:"restoreKind,omitempty"`
	// Attempts counts the savepoints Upgrade or Teardown triggered.
	Attempts int `json:"attempts,omitempty"`
	// StopOutcome is how the stop of Upgrade or Teardown ended.
	StopOutcome Outcome `json:"stopOutcome,omitempty"`
	// Recorded is set once Teardown stored Location under its name.
	Recorded bool `json:"recorded,omitempty"`
	// Disposed counts the savepoints DisposeSavepoints dealt with.
	Disposed int `json:"disposed,omitempty"`
	// DisposeFailed counts those of them it could not dispose of.
	DisposeFailed int `json:"disposeFailed,omitempty"`
	// Disposal is the trigger id of the disposal in flight.
	Disposal flinkapi.TriggerID `json:"disposal,omitempty"`
	// Request is the restore request Upgrade carries out, recorded at its
	// first Step (see Upgrade.Restore and HandledRestore).
	Request policy.RestoreRequest `json:"request,omitzero"`

	// NewJobStart is when the new job of BlueGreen started, as its
	// details say: a checkpoint completed after it is part of its health.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	NewJobStart time.Time `json:"newJobStart,omitzero"`
	// Healthy is when BlueGreen confirmed the new job healthy, recorded
	// before the old job is stopped: never earlier.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Healthy time.Time `json:"healthy,omitzero"`
	// AbortReason is why BlueGreen cancels the new job (it failed, or was
	// not healthy within the window); set while it is cancelled, and the
	// start of the Reason it then ends with.
	AbortReason string `json:"abortReason,omitempty"`

	// Parallelism is the parallelism Rescale sets, or the task slots the
	// new job of BlueGreen needs.
	Parallelism int `json:"parallelism,omitempty"`
	// Scheduler is the job's scheduler as Rescale found it; empty if
	// unknown.
	Scheduler policy.Scheduler `json:"scheduler,omitempty"`
	// RescalePath is the way Rescale took (InPlace or Upgrade) once chosen.
	RescalePath policy.RescalePath `json:"rescalePath,omitempty"`
	// Vertices are the ids of the job's vertices, comma-separated, whose
	// parallelism bounds Rescale sets; recorded before the request.
	Vertices string `json:"vertices,omitempty"`

	// Preflight is what Upgrade's preflight read and found before the
	// old job was touched (format 4); nil when none was asked for.
	Preflight *Preflight `json:"preflight,omitempty"`

	// CheckpointID is the checkpoint a triggered checkpoint completed as
	// (ActionCheckpointRequest; format 5).
	CheckpointID int64 `json:"checkpointID,omitempty"`
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
	case p.Outcome == OutcomeJobGone, p.StopOutcome == OutcomeJobGone, p.Observed.Missing:
		return true
	case p.Outcome == OutcomeSucceeded && p.Operation == opTeardown:
		return true
	}
	return p.Observed.State.IsGloballyTerminal() && !p.Observed.StatsAfter.IsZero()
}

// Record returns the savepoint the operation produced, if it has a
// location: also when the job failed while stopping after it completed.
func (p *Progress) Record() (savepoint.Record, bool) {
	st := p.Savepoint
	if st.Location == "" {
		st.Location = p.Location
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
	if !p.Done() || p.Request.IsZero() {
		return ""
	}
	switch p.Outcome {
	case OutcomeSucceeded, OutcomeJobFailed, OutcomeSubmitFailed:
		// A SubmitFailed without a jar id (or, through a Deployer,
		// without a cluster) failed before the path reached Flink.
		if p.RestoreFrom == p.Request.Path && p.reachedFlink() {
			return p.Request.Token
		}
	case OutcomeBlocked:
		switch p.Decision {
		case policy.ReasonInvalidRestoreRequest, policy.ReasonRestoreRequestTooOld, policy.ReasonRestoreRequestAgeUnknown:
			return p.Request.Token
		}
	}
	return ""
}

// reachedFlink reports whether the submission's restore path reached
// Flink: the jar run was sent with a jar id, or the Deployer started a
// cluster with it. A SubmitFailed without either failed before.
func (p *Progress) reachedFlink() bool {
	return p.JarID != "" || !p.Cluster.IsZero()
}

// restoreRefused reports whether Flink refused for good a submission
// that carried RestoreFrom (SubmitFailed once the path reached it). Its
// answer does not say whether it refused the path or the jar: the path
// may be one Flink cannot restore, so it is never a restore point.
func (p *Progress) restoreRefused() bool {
	return p.Outcome == OutcomeSubmitFailed && p.RestoreFrom != "" && p.reachedFlink()
}

// DeepCopyInto copies in into out. in must be non-nil. Progress holds only
// values, strings and time.Time, so a shallow copy is deep.
func (in *Progress) DeepCopyInto(out *Progress) {
	*out = *in
	out.Preflight = in.Preflight.DeepCopy()
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

// keepLocation copies a savepoint location into p. A location once set
// stays until a newer savepoint of the operation completes (an Upgrade's
// second attempt after the job failed while stopping), which replaces it:
// the new job must start from the newest state.
func keepLocation(p *Progress) {
	if p.Savepoint.Location != "" {
		p.Location = p.Savepoint.Location
	}
}
