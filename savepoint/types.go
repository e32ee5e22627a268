package savepoint

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// State is where a savepoint operation stands, as derived from Flink's
// answers. The zero State means no savepoint was triggered.
type State string

// States of a savepoint operation. Pending, InFlight, Lost and Unconfirmed
// are active: an answer from Flink, a recovery, Flink's job list or the
// deadline moves them on. All other states are final: Succeeded, Failed,
// LostForGood, JobGone, JobTerminal and TimedOut (and any string this
// package does not know, so that nothing waits on a state nobody derives).
// A new savepoint needs a new trigger id.
const (
	// Pending: a trigger id was chosen and recorded; Flink has not
	// acknowledged the trigger yet. Re-send the trigger with the same id.
	Pending State = "Pending"
	// InFlight: Flink acknowledged the trigger or answered IN_PROGRESS.
	// Poll the operation's status.
	InFlight State = "InFlight"
	// Succeeded: COMPLETED with a location, or a Lost savepoint that
	// Recover found in the checkpoint history.
	Succeeded State = "Succeeded"
	// Failed: COMPLETED with a failure cause, a permanent error (400), or a
	// request that could not be sent (invalid input, a feature the
	// cluster's version lacks). A stop-with-savepoint whose savepoint
	// completed before the job failed while stopping is Failed with a
	// Location.
	Failed State = "Failed"
	// Lost: Flink no longer knows the trigger id (404 for the trigger: the
	// JobManager restarted or the result expired). Never treated as failed:
	// the savepoint may have completed, and Recover looks for it in the
	// job's checkpoint history.
	Lost State = "Lost"
	// LostForGood: Lost, and the checkpoint history, which reaches back to
	// the trigger time, holds no savepoint that this trigger produced.
	LostForGood State = "LostForGood"
	// Unconfirmed: Flink answered that it does not know the job (404 for
	// the job, or an operation that completed with
	// FlinkJobNotFoundException), and nothing confirmed it yet. One such
	// answer can come while the job runs (a JobManager failover), and
	// Flink gives it for a job that ended, too (a trigger it forgot, sent
	// again after the job finished). Read Flink's job list (GET /jobs)
	// and pass it to AfterJobList (NeedsJobList). Status.Before holds the
	// state to go back to, Status.OperationFailed whether the answer was
	// the end of the operation, and Status.Failure Flink's message.
	Unconfirmed State = "Unconfirmed"
	// JobGone: Flink does not know the job, and its job list does not
	// list it (see Unconfirmed).
	JobGone State = "JobGone"
	// JobTerminal: the job already reached another terminal state (409).
	JobTerminal State = "JobTerminal"
	// TimedOut: still Pending, InFlight, Lost or Unconfirmed at the
	// deadline. The
	// savepoint may still complete on the cluster; a later answer that
	// carries its location adds the location but keeps the state.
	TimedOut State = "TimedOut"
)

// active reports whether s still waits for an answer, a recovery, Flink's
// job list or the deadline: Pending, InFlight, Lost and Unconfirmed.
func (s State) active() bool { return s == Pending || s == InFlight || s == Lost || s == Unconfirmed }

// Final reports whether s is set and not active. Strings this package does
// not know count as final.
func (s State) Final() bool { return s != "" && !s.active() }

// Reason says why a savepoint was taken. Each has a stable string, stored in
// Kubernetes objects: the strings never change.
type Reason string

// Reasons for a savepoint.
const (
	ReasonUser      Reason = "User"      // a user asked for it
	ReasonScheduled Reason = "Scheduled" // periodic savepoint
	ReasonUpdate    Reason = "Update"    // taken to update the job
	ReasonStop      Reason = "Stop"      // taken to stop or cancel the job
	ReasonDelete    Reason = "Delete"    // taken before deleting the job
	ReasonRestart   Reason = "Restart"   // taken before restarting the job
	// ReasonImported: taken elsewhere (another operator, the Flink CLI)
	// and imported into a history; retention treats it as a user's.
	ReasonImported Reason = "Imported"
	// ReasonFound: found on storage by an audit of the deployment's
	// savepoint directory (lifecycle's Controller): a completed savepoint
	// of one of the deployment's jobs that its history did not record,
	// taken from outside (the Flink UI or CLI) or whose record was lost.
	// Retention treats it as one the deployment took.
	ReasonFound Reason = "Found"
)

// Valid reports whether r is one of the reasons above.
func (r Reason) Valid() bool {
	switch r {
	case ReasonUser, ReasonScheduled, ReasonUpdate, ReasonStop, ReasonDelete, ReasonRestart, ReasonImported, ReasonFound:
		return true
	}
	return false
}

// Status is the status record of one savepoint operation: plain data, safe
// to store in a Kubernetes status and to deep-copy. Begin creates it; the
// derivation functions (AfterTrigger, AfterPoll, Recover, AfterJobList,
// CheckDeadline) return its next value.
type Status struct {
	// Kind says which REST call triggered it (savepoint or stop).
	Kind flinkapi.OperationKind `json:"kind,omitempty"`
	// JobID is the job the savepoint is taken of.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// TriggerID is chosen and recorded before the trigger request is sent.
	// Flink before 1.15 chooses its own; AfterTrigger records it.
	TriggerID flinkapi.TriggerID `json:"triggerID,omitempty"`
	// TriggerTime is when the trigger was (first) sent.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	TriggerTime time.Time `json:"triggerTime,omitzero"`
	// Deadline is when an unfinished savepoint counts as TimedOut; zero: none.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Deadline time.Time `json:"deadline,omitzero"`
	// Reason says why the savepoint is taken.
	Reason Reason `json:"reason,omitempty"`
	// State is where the operation stands.
	State State `json:"state,omitempty"`
	// Location is where the savepoint lies, once known. Once set it is never
	// cleared or replaced.
	Location string `json:"location,omitempty"`
	// Recovered is true when Flink had forgotten the trigger id and Recover
	// found Location in the job's checkpoint history.
	Recovered bool `json:"recovered,omitempty"`
	// Failure is a readable cause of a final state other than Succeeded:
	// the root "Caused by" message of Flink's stack trace, Flink's error
	// message, or what the deadline interrupted. An Unconfirmed status
	// holds Flink's message that it does not know the job: the Failure of
	// the JobGone or Failed status its job list may confirm.
	Failure string `json:"failure,omitempty"`
	// Before is the state an Unconfirmed status was in when Flink said it
	// did not know the job (Pending, InFlight or Lost), and goes back to
	// if Flink's job list shows the job running after a 404. Empty in
	// every other state.
	Before State `json:"before,omitempty"`
	// OperationFailed is set on an Unconfirmed status whose operation
	// completed with FlinkJobNotFoundException: that trigger id has
	// failed, so a job that Flink's job list shows running makes the
	// savepoint Failed (a new savepoint needs a new trigger id). Unset
	// after a 404 for the job, which nothing ended: the request may be
	// sent again. False in every other state.
	OperationFailed bool `json:"operationFailed,omitempty"`
	// Attempts counts answers that were transient (503, 429, timeouts,
	// connection failures, other 5xx, a failed read of Flink's job list)
	// since the last definite answer. An answer that Flink does not know
	// the job is not definite until its job list confirms it: it leaves
	// the count alone.
	Attempts int `json:"attempts,omitempty"`
	// LastError is the message of the last transient answer: Flink's
	// message, the HTTP status text, or for a request that got no answer its
	// innermost cause ("connection refused"). Empty after a definite answer.
	LastError string `json:"lastError,omitempty"`
	// LastErrorCode is the HTTP status of the last transient answer; 0 when
	// the request got no answer or after a definite answer.
	LastErrorCode int `json:"lastErrorCode,omitempty"`
	// LastUpdate is when an answer, a recovery or the deadline last applied
	// to the Status. Answers the Status ignores leave it alone.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	LastUpdate time.Time `json:"lastUpdate,omitzero"`
}

// Active reports whether the savepoint still waits for an answer, a
// recovery, Flink's job list or the deadline: its State is Pending,
// InFlight, Lost or Unconfirmed.
func (s Status) Active() bool { return s.State.active() }

// Final reports whether the operation has ended (see State.Final).
func (s Status) Final() bool { return s.State.Final() }

// NeedsTrigger reports whether the trigger request must be sent (again),
// with the recorded TriggerID: the status is Pending.
func (s Status) NeedsTrigger() bool { return s.State == Pending }

// NeedsPoll reports whether the operation's status must be asked for
// (flinkapi's OperationStatus with s.Operation()): the status is InFlight.
func (s Status) NeedsPoll() bool { return s.State == InFlight }

// NeedsRecovery reports whether the job's checkpoint statistics must be read
// and passed to Recover: the status is Lost.
func (s Status) NeedsRecovery() bool { return s.State == Lost }

// NeedsJobList reports whether Flink's job list (flinkapi's ListJobs, GET
// /jobs) must be read and passed to AfterJobList: the status is
// Unconfirmed.
func (s Status) NeedsJobList() bool { return s.State == Unconfirmed }

// unknown reports whether the latest answer was transient: the state is
// what was known before it.
func (s Status) unknown() bool { return s.Attempts > 0 }

// Operation returns the asynchronous operation to poll.
func (s Status) Operation() flinkapi.Operation {
	return flinkapi.Operation{Kind: s.Kind, JobID: s.JobID, TriggerID: s.TriggerID}
}

// Record is a completed savepoint: the latest successful one of a job, or an
// entry of a History.
//
// What few records hold, the delete choice and failed disposals, is kept
// out of line in a RecordExtra, so that the records every History
// operation copies stay small (80 bytes on 64-bit platforms). Read it
// with OnDelete and Disposal, set it with SetOnDelete and SetDisposal. Its
// JSON is flat: {"location", "time", "reason", "jobID", "onDelete",
// "disposal"}, as before the RecordExtra existed.
type Record struct {
	// Location is where the savepoint lies.
	Location string `json:"location"`
	// Time is when the savepoint was triggered. Its state is no older than
	// that, so an age computed from Time never understates the state's age.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Time time.Time `json:"time"`
	// Reason says why the savepoint was taken.
	Reason Reason `json:"reason,omitempty"`
	// JobID is the job the savepoint was taken of.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// RecordExtra holds the delete choice and the failed disposals of
	// the few records that have either; nil for the others. Its fields
	// are read through the methods OnDelete and Disposal. SetOnDelete
	// and SetDisposal replace it with a new one, so that one RecordExtra
	// that copies of a Record share never changes; do not write through
	// the pointer.
	*RecordExtra `json:",inline"`
}

// RecordExtra is what few Records hold: plain data, kept out of line
// (Record.RecordExtra). Its zero value is what a Record without one
// holds.
type RecordExtra struct {
	// OnDelete says what a delete of the job does with this savepoint:
	// empty leaves it to the policy (lifecycle's
	// SavepointPolicy.DisposeOnDelete).
	// +kubebuilder:validation:Enum="";Keep;Dispose
	OnDelete OnDelete `json:"onDelete,omitempty"`
	// Disposal is how the disposals of this savepoint failed so far; zero
	// while none failed. A savepoint whose disposal failed stays in the
	// history until a disposal succeeds.
	Disposal Disposal `json:"disposal,omitzero"`
}

// OnDelete returns what a delete of the job does with this savepoint:
// OnDeletePolicy (empty) unless SetOnDelete chose otherwise.
func (r Record) OnDelete() OnDelete {
	if r.RecordExtra == nil {
		return OnDeletePolicy
	}
	return r.RecordExtra.OnDelete
}

// Disposal returns how the disposals of this savepoint failed so far;
// zero while none failed.
func (r Record) Disposal() Disposal {
	if r.RecordExtra == nil {
		return Disposal{}
	}
	return r.RecordExtra.Disposal
}

// SetOnDelete sets what a delete of the job does with this savepoint. It
// gives r a RecordExtra of its own: copies of r keep theirs.
func (r *Record) SetOnDelete(d OnDelete) {
	e := r.extra()
	e.OnDelete = d
	r.setExtra(e)
}

// SetDisposal sets how the disposals of this savepoint failed so far
// (Disposal{} once one succeeds or to try again). It gives r a
// RecordExtra of its own: copies of r keep theirs.
func (r *Record) SetDisposal(d Disposal) {
	e := r.extra()
	e.Disposal = d
	r.setExtra(e)
}

// extra returns a copy of r's RecordExtra, zero when r has none.
func (r Record) extra() RecordExtra {
	if r.RecordExtra == nil {
		return RecordExtra{}
	}
	return *r.RecordExtra
}

// setExtra points r at a new RecordExtra holding e, or at none when e
// is zero.
func (r *Record) setExtra(e RecordExtra) {
	if e.OnDelete == OnDeletePolicy && e.Disposal.zero() {
		r.RecordExtra = nil
		return
	}
	r.RecordExtra = &e
}

// OnDelete says what a delete of a job does with one of its savepoints.
// The strings are stable.
type OnDelete string

// What a delete does with a savepoint.
const (
	// OnDeletePolicy (empty): as the job's policy says.
	OnDeletePolicy OnDelete = ""
	// OnDeleteKeep: kept on storage whatever the policy says.
	OnDeleteKeep OnDelete = "Keep"
	// OnDeleteDispose: disposed of whatever the policy says (the final
	// savepoint of the delete excepted).
	OnDeleteDispose OnDelete = "Dispose"
)

// Valid reports whether d is one of the values above.
func (d OnDelete) Valid() bool {
	return d == OnDeletePolicy || d == OnDeleteKeep || d == OnDeleteDispose
}

// DisposalError is why a disposal of a savepoint failed, in a closed set.
// The strings are stable.
type DisposalError string

// Why a disposal failed.
const (
	// DisposalUnreachable: the JobManager did not answer, or answered
	// only with transient errors (503, resets), until the deadline.
	DisposalUnreachable DisposalError = "Unreachable"
	// DisposalRefused: the JobManager refused the request (an answer
	// that is not transient, such as 400 or 500).
	DisposalRefused DisposalError = "Refused"
	// DisposalFailed: the disposal ran and failed (its files could not
	// be deleted: permissions, storage errors).
	DisposalFailed DisposalError = "Failed"
)

// Disposal is how the disposals of a savepoint failed so far: plain
// data, part of a Record.
type Disposal struct {
	// Attempts counts the disposals that failed.
	// +kubebuilder:validation:Minimum=0
	Attempts int `json:"attempts,omitempty"`
	// Error is why the last one failed, and Message the same for people
	// (Flink's message, at most 512 bytes).
	Error   DisposalError `json:"error,omitempty"`
	Message string        `json:"message,omitempty"`
	// RetryAt is when the next attempt may start.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	RetryAt time.Time `json:"retryAt,omitzero"`
	// GaveUp is set once MaxAttempts disposals failed: the savepoint stays
	// on storage and in the history, reported, until a caller disposes of
	// it by hand and removes it (History.Remove) or clears Disposal to
	// try again.
	GaveUp bool `json:"gaveUp,omitempty"`
}

// Failed reports whether a disposal of the record failed and was not
// retried with success since.
func (d Disposal) Failed() bool { return d.Attempts > 0 }

// zero reports whether d is the zero Disposal.
func (d Disposal) zero() bool {
	return d.Attempts == 0 && d.Error == "" && d.Message == "" && d.RetryAt.IsZero() && !d.GaveUp
}
