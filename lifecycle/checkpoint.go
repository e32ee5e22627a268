package lifecycle

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// CheckpointPolicy has the Controller trigger checkpoints of the running
// job through the REST API (POST /jobs/:id/checkpoints, Flink 1.17+) for
// jobs whose own checkpoint interval is long, so that a restore from the
// latest state (a restart, a last-state upgrade) loses little. A
// checkpoint is triggered once Interval has passed since the latest of the
// job's start, its latest completed checkpoint (its own or a triggered
// one) and the latest trigger, and only while every vertex of the job
// runs; a failed one is tried again one Interval after it. (Flink 2.3
// was seen refusing a trigger sent as the job details first showed every
// vertex RUNNING: "Not all required tasks are currently running", a
// failure that counts toward nothing.) Each is an action of its own
// (ActionCheckpoint) beside the running job: a change of the spec waits
// for it, at most the update policy's savepoint deadline.
//
// A triggered checkpoint is a checkpoint to Flink: one that fails on a
// TaskManager (declined, or failed in its asynchronous part) or expires
// counts toward execution.checkpointing.tolerable-failed-checkpoints like
// the job's own (CheckpointFailureManager; the default, 0, fails the job
// over at the first such failure). Set it in the job's
// FlinkConfiguration when checkpoints may fail. The Controller itself
// only records failures (JobStatus.Checkpoint.Failures) and acts on
// none.
type CheckpointPolicy struct {
	// Interval between triggered checkpoints; zero: none is triggered.
	Interval policy.Duration `json:"interval,omitzero"`
}

// CheckpointTrigger is the record of the Controller's triggered
// checkpoints of the job JobID. Each is the action ActionCheckpoint (or
// ActionCheckpointRequest), whose Progress records the trigger id, and
// stores it, before the trigger is sent: a Controller that died in
// between sends it again with the same id, which Flink takes once.
type CheckpointTrigger struct {
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// TriggerID and Sent are a trigger in flight as formats 3 to 6
	// recorded it, beside the action in flight; format 7 keeps it in the
	// action's Progress. A status of an older format drops it on its
	// first call (a checkpoint it asked for shows as the job's latest
	// completed one all the same).
	TriggerID flinkapi.TriggerID `json:"triggerID,omitempty"`
	Sent      bool               `json:"sent,omitempty"`
	// TriggerTime is when the last triggered checkpoint started.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	TriggerTime time.Time `json:"triggerTime,omitzero"`
	// CheckpointID and CompletedAt are those of the last triggered
	// checkpoint that completed.
	CheckpointID int64 `json:"checkpointID,omitempty"`
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	CompletedAt time.Time `json:"completedAt,omitzero"`
	// Failure is why the last triggered checkpoint failed, Failures how
	// many failed in a row.
	Failure  string `json:"failure,omitempty"`
	Failures int    `json:"failures,omitempty"`
}

// triggeredRecord is st.Checkpoint, made the record of the job st
// runs: a new job has its own count.
func triggeredRecord(st *JobStatus) *CheckpointTrigger {
	cp := &st.Checkpoint
	if cp.JobID != st.JobID {
		*cp = CheckpointTrigger{JobID: st.JobID}
	}
	cp.TriggerTime = st.Progress.Started
	return cp
}

// checkpointed records the checkpoint a triggered checkpoint's action
// completed.
func checkpointed(_ *Controller, _ JobSpec, st *JobStatus, _ JobTemplate, now time.Time) {
	cp := triggeredRecord(st)
	cp.CheckpointID, cp.CompletedAt, cp.Failure, cp.Failures = st.Progress.Checkpoint.ID, now, "", 0
}

// checkpointDue reports whether a periodic checkpoint of the running job
// d is due (JobSpec.Checkpoints), and when the next one is: Interval
// after the latest of the job's start, its latest completed checkpoint
// (its own or a triggered one) and the latest trigger, once every vertex
// of the job runs.
func checkpointDue(spec JobSpec, st *JobStatus, d *flinkapi.JobDetails, stats *flinkapi.CheckpointStatistics, now time.Time) (bool, time.Time) {
	every := spec.Checkpoints.Interval.Std()
	if every <= 0 || d == nil {
		return false, time.Time{}
	}
	base := d.StartTime
	if cp := st.Checkpoint; cp.JobID == st.JobID {
		base = later(later(base, cp.TriggerTime), cp.CompletedAt)
	}
	next := later(base, latestCompletedTime(stats)).Add(every)
	return !now.Before(next) && tasksRunning(d), next
}

func truncateFailure(s string) string { return truncate(s, MaxFailureLength) }
