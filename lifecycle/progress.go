package lifecycle

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Phase is where an operation stands. The strings are stable: they are
// stored in Progress.
type Phase string

// Phases of the operations. The zero Phase means the operation has not
// started; Step's first call records what the first request needs (trigger
// id, job id) and moves on.
const (
	// PhaseSavepoint: a savepoint (or stop with savepoint) is triggered,
	// polled, or recovered from the checkpoint history.
	PhaseSavepoint Phase = "Savepoint"
	// PhaseCancel: the job is to be cancelled.
	PhaseCancel Phase = "Cancel"
	// PhaseWaitStopped: the job is polled until it reaches a terminal state.
	PhaseWaitStopped Phase = "WaitStopped"
	// PhaseUpload: the jar is uploaded.
	PhaseUpload Phase = "Upload"
	// PhaseSubmit: the jar is run with the recorded job id.
	PhaseSubmit Phase = "Submit"
	// PhaseWaitRunning: the submitted job is polled until it runs.
	PhaseWaitRunning Phase = "WaitRunning"
	// PhaseDone: the operation ended; Outcome says how.
	PhaseDone Phase = "Done"
)

// Outcome is how an operation ended. The strings are stable.
type Outcome string

// Outcomes. Every operation ends in one of them, at the latest at its
// deadline.
const (
	// OutcomeSucceeded: the operation did what it was asked.
	OutcomeSucceeded Outcome = "Succeeded"
	// OutcomeSavepointFailed: Flink reported the savepoint failed (or
	// refused the trigger). A job asked to stop keeps running.
	OutcomeSavepointFailed Outcome = "SavepointFailed"
	// OutcomeSavepointLost: Flink forgot the trigger id and its checkpoint
	// history shows that no savepoint came of it.
	OutcomeSavepointLost Outcome = "SavepointLost"
	// OutcomeJobFailedWhileStopping: the stop's savepoint completed, then
	// the job failed while stopping. Progress.Location holds the savepoint;
	// the job may have restarted.
	OutcomeJobFailedWhileStopping Outcome = "JobFailedWhileStopping"
	// OutcomeJobGone: Flink does not know the job.
	OutcomeJobGone Outcome = "JobGone"
	// OutcomeJobTerminal: the job had already ended in another way.
	OutcomeJobTerminal Outcome = "JobTerminal"
	// OutcomeJobFailed: the submitted job failed before it ran.
	OutcomeJobFailed Outcome = "JobFailed"
	// OutcomeSubmitFailed: Flink refused the jar upload or run.
	OutcomeSubmitFailed Outcome = "SubmitFailed"
	// OutcomeTimedOut: the phase's deadline passed; Reason says where.
	OutcomeTimedOut Outcome = "TimedOut"
)

// Progress is the stored state of one lifecycle operation: plain data with
// stable JSON names, meant for a Kubernetes status, a file or a database.
// Store it after every Step and pass it back unchanged; everything a
// request needs to be idempotent (trigger id, job id) is recorded in it
// by the Step before the one that sends the request. The zero Progress
// starts an operation.
type Progress struct {
	// Phase is where the operation stands.
	Phase Phase `json:"phase,omitempty"`
	// JobID is the job operated on: for Submit, the id chosen before the
	// job is submitted.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Strategy is the stop strategy Stop chose.
	Strategy StopStrategy `json:"strategy,omitempty"`
	// Savepoint is the status of the savepoint operation, if any.
	Savepoint savepoint.Status `json:"savepoint,omitzero"`
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
	LastError string `json:"lastError,omitempty"`
	// Steps counts the calls of Step.
	Steps int `json:"steps,omitempty"`
}

// Done reports whether the operation has ended.
func (p *Progress) Done() bool { return p.Outcome != "" }

// Record returns the savepoint the operation produced, if it has a
// location: also when the job failed while stopping after it completed.
func (p *Progress) Record() (savepoint.Record, bool) {
	st := p.Savepoint
	if st.Location == "" {
		st.Location = p.Location
	}
	return savepoint.RecordOf(st)
}

// DeepCopyInto copies in into out. in must be non-nil. Progress holds only
// values, strings and time.Time, so a shallow copy is deep.
func (in *Progress) DeepCopyInto(out *Progress) { *out = *in }

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

// keepLocation copies a savepoint location into p; a location once set
// stays.
func keepLocation(p *Progress) {
	if p.Location == "" && p.Savepoint.Location != "" {
		p.Location = p.Savepoint.Location
	}
}
