package policy

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Observations is what the caller saw of a job and what it recorded about
// it, just before asking for a decision. All times are instants; Flink's
// milliseconds are converted by package flinkapi before they get here.
//
// +kubebuilder:object:generate=false
type Observations struct {
	// FlinkVersion is the cluster's Flink version; zero if unknown. The
	// current rules do not depend on it; it travels with the observations
	// so a decision can be logged together with it.
	FlinkVersion flinkapi.Version `json:"flinkVersion,omitzero"`

	// JobManagerReachable reports whether the JobManager answered the
	// caller's latest requests. When it is false, Job says nothing.
	JobManagerReachable bool `json:"jobManagerReachable"`
	// LastContact is when the JobManager last answered. While it does not
	// answer, decisions wait until LastContact plus the policy's
	// TransitionTimeout. Set it to the time of deployment before the first
	// answer; if it is zero, the wait is counted from now.
	LastContact time.Time `json:"lastContact,omitzero"`

	// Job is the job as the JobManager reports it; nil when the
	// JobManager answered but does not know the job (never submitted, or
	// lost when the JobManager restarted without its HA data).
	Job *Job `json:"job,omitempty"`

	// Savepoint is the status of the latest savepoint operation of the
	// current update or restart (package savepoint): Pending, InFlight,
	// Lost or Unconfirmed while it runs. Its Location, once set, is a
	// restore point whatever its State says.
	Savepoint savepoint.Status `json:"savepoint,omitzero"`
	// SavepointAttempts counts the savepoints the caller triggered for the
	// current operation, the one in Savepoint included. Zero with a failed
	// Savepoint counts as one.
	SavepointAttempts int `json:"savepointAttempts,omitempty"`
	// LatestSavepoint is the job's latest successful savepoint.
	LatestSavepoint savepoint.Record `json:"latestSavepoint,omitzero"`
	// LatestCheckpoint is the job's latest completed, retained checkpoint.
	LatestCheckpoint Checkpoint `json:"latestCheckpoint,omitzero"`

	// Restarts is the number of restarts the caller recorded (see
	// RestartPolicy.CountRestart).
	Restarts int `json:"restarts,omitempty"`
	// LastRestart is when the caller last restarted the job.
	LastRestart time.Time `json:"lastRestart,omitzero"`

	// SpecChanged reports that the desired spec differs from the one last
	// deployed. Without it EvaluateUpdate has nothing to do.
	SpecChanged bool `json:"specChanged,omitempty"`
	// Restore is the user's explicit restore request, if any. Unless its
	// Token is RestoreHandled, EvaluateUpdate carries it out in preference
	// to the state the policy would choose, whether or not the spec
	// changed.
	Restore RestoreRequest `json:"restore,omitzero"`
	// RestoreHandled is the Token of the last restore request carried out
	// (see lifecycle's Progress.HandledRestore); a request with this token
	// is not carried out again.
	RestoreHandled string `json:"restoreHandled,omitempty"`
	// FirstDeploy reports that nothing was deployed before, so no state is
	// expected: a stateful update that finds no state at all starts without
	// state instead of blocking. An initial savepoint can be given as
	// LatestSavepoint. It implies SpecChanged, and it lets an update proceed
	// while no JobManager answers (an application cluster that does not
	// exist yet).
	FirstDeploy bool `json:"firstDeploy,omitempty"`
}

// Job is a Flink job as the JobManager reported it.
//
// +kubebuilder:object:generate=false
type Job struct {
	// ID is the job's id.
	ID flinkapi.JobID `json:"id"`
	// State is the job's state as Flink reports it.
	State flinkapi.JobState `json:"state"`
	// StartTime is Flink's start-time of the job.
	StartTime time.Time `json:"startTime,omitzero"`
	// EndTime is Flink's end-time: when the job reached a terminal state;
	// zero before. EvaluateRestart counts the backoff from it.
	EndTime time.Time `json:"endTime,omitzero"`
	// StateSince is when the job entered State (Flink's timestamps map of
	// GET /jobs/:jobid). Waits on a transitional state are counted from it;
	// if it is zero, from StartTime; if both are zero, from now.
	StateSince time.Time `json:"stateSince,omitzero"`
}

// Checkpoint is a completed checkpoint of a job.
//
// +kubebuilder:object:generate=false
type Checkpoint struct {
	// Path is the checkpoint's external path. Only retained
	// (externalized) checkpoints have one; a checkpoint without a path is
	// never restored from.
	Path string `json:"path,omitempty"`
	// Time is when the checkpoint was triggered: the moment its state
	// describes. A checkpoint without a time is never restored from.
	Time time.Time `json:"time,omitzero"`
}

// jobState returns the observed job state, "" when the job is missing.
func (o *Observations) jobState() flinkapi.JobState {
	if o.Job == nil {
		return ""
	}
	return o.Job.State
}
