package savepoint

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// State is where a savepoint operation stands, as derived from Flink's
// answers. The zero State means no savepoint was triggered.
type State string

// States of a savepoint operation. Succeeded, Failed, TimedOut, JobGone and
// LostForGood are final: a new savepoint needs a new trigger id. Lost is not
// final: the savepoint may have completed, and Recover looks for it in the
// job's checkpoint history.
const (
	// Pending: a trigger id was chosen and recorded; Flink has not
	// acknowledged the trigger yet. Re-send the trigger with the same id.
	Pending State = "Pending"
	// InFlight: Flink acknowledged the trigger or answered IN_PROGRESS.
	InFlight State = "InFlight"
	// Succeeded: COMPLETED with a location.
	Succeeded State = "Succeeded"
	// Failed: COMPLETED with a failure cause, or a permanent error (400).
	Failed State = "Failed"
	// Lost: Flink no longer knows the trigger id (404 for the trigger: the
	// JobManager restarted or the result expired). Never treated as failed.
	Lost State = "Lost"
	// LostForGood: Lost, and the checkpoint history holds no savepoint that
	// this trigger produced.
	LostForGood State = "LostForGood"
	// JobGone: Flink does not know the job (404 for the job).
	JobGone State = "JobGone"
	// JobTerminal: the job already reached another terminal state (409).
	JobTerminal State = "JobTerminal"
	// TimedOut: still in flight, or unknown, past the deadline.
	TimedOut State = "TimedOut"
)

// Reason says why a savepoint was taken. Each has a stable string.
type Reason string

// Reasons for a savepoint.
const (
	ReasonUser      Reason = "User"      // a user asked for it
	ReasonScheduled Reason = "Scheduled" // periodic savepoint
	ReasonUpdate    Reason = "Update"    // taken to update the job
	ReasonStop      Reason = "Stop"      // taken to stop or cancel the job
	ReasonDelete    Reason = "Delete"    // taken before deleting the job
	ReasonRestart   Reason = "Restart"   // taken before restarting the job
)

// Status is the status record of one savepoint operation: plain data, safe
// to store in a Kubernetes status and to deep-copy.
type Status struct {
	// Kind says which REST call triggered it (savepoint or stop).
	Kind flinkapi.OperationKind `json:"kind,omitempty"`
	// JobID is the job the savepoint is taken of.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// TriggerID is chosen and recorded before the trigger request is sent.
	TriggerID flinkapi.TriggerID `json:"triggerID,omitempty"`
	// TriggerTime is when the trigger was (first) sent.
	TriggerTime time.Time `json:"triggerTime,omitzero"`
	// Deadline is when an unfinished savepoint counts as TimedOut; zero: none.
	Deadline time.Time `json:"deadline,omitzero"`
	Reason   Reason    `json:"reason,omitempty"`
	State    State     `json:"state,omitempty"`
	// Location is where the savepoint lies, once known. Once set it is never
	// cleared.
	Location string `json:"location,omitempty"`
	// Failure is a readable cause of failure (root "Caused by" message).
	Failure string `json:"failure,omitempty"`
	// Attempts counts answers that were transient (503, 429, timeouts,
	// connection failures, other 5xx) since the last definite answer.
	Attempts int `json:"attempts,omitempty"`
	// LastError is the last transient error's message.
	LastError string `json:"lastError,omitempty"`
	// LastUpdate is when Status last changed.
	LastUpdate time.Time `json:"lastUpdate,omitzero"`
}

// Record is the latest successful savepoint of a job.
type Record struct {
	Location string         `json:"location"`
	Time     time.Time      `json:"time"`
	Reason   Reason         `json:"reason,omitempty"`
	JobID    flinkapi.JobID `json:"jobID,omitempty"`
}
