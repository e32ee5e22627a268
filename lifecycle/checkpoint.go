package lifecycle

import (
	"context"
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
// failure that counts toward nothing.)
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

// CheckpointTrigger is the state of the Controller's triggered
// checkpoints of the job JobID. TriggerID is recorded, and stored, before
// the trigger is sent; a Controller that died in between sends it again
// with the same id, which Flink takes once.
type CheckpointTrigger struct {
	JobID     flinkapi.JobID     `json:"jobID,omitempty"`
	TriggerID flinkapi.TriggerID `json:"triggerID,omitempty"`
	// Sent is set once Flink acknowledged the trigger.
	Sent bool `json:"sent,omitempty"`
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

// checkpointTriggerAPI is what the Controller needs to trigger
// checkpoints; *flinkapi.Client has it.
type checkpointTriggerAPI interface {
	TriggerCheckpoint(ctx context.Context, job flinkapi.JobID, req flinkapi.CheckpointRequest) (flinkapi.Operation, error)
	OperationStatus(ctx context.Context, op flinkapi.Operation) (*flinkapi.OperationResult, error)
}

// checkpointStep moves the triggered checkpoints of the running job d on
// by at most one request: it sends a trigger recorded by an earlier call,
// polls the one in flight, or records a new trigger when one is due (then
// the caller stores st before the next call sends it). It returns when to
// look again, zero when nothing is scheduled.
func (c *Controller) checkpointStep(ctx context.Context, api API, spec JobSpec, st *JobStatus, d *flinkapi.JobDetails,
	stats *flinkapi.CheckpointStatistics, now time.Time) time.Duration {
	every := spec.Checkpoints.Interval.Std()
	cp := &st.Checkpoint
	if every <= 0 || !supports[checkpointTriggerAPI](api) {
		return 0
	}
	trig := api.(checkpointTriggerAPI)
	if cp.JobID != st.JobID {
		*cp = CheckpointTrigger{JobID: st.JobID} // a new job: its own count
	}
	fail := func(msg string) {
		cp.TriggerID, cp.Sent, cp.Failure = "", false, truncateFailure(msg)
		cp.Failures++
	}
	op := flinkapi.Operation{Kind: flinkapi.OpCheckpoint, JobID: st.JobID, TriggerID: cp.TriggerID}
	switch {
	case cp.TriggerID != "" && !cp.Sent:
		_, err := trig.TriggerCheckpoint(ctx, st.JobID, flinkapi.CheckpointRequest{TriggerID: cp.TriggerID})
		switch {
		case err == nil:
			cp.Sent = true
		case flinkapi.IsRetryable(err):
			// Sent again with the same id at the next call.
		default:
			fail("trigger: " + errMessage(err))
			return every
		}
		return c.Timing.poll()
	case cp.TriggerID != "":
		res, err := trig.OperationStatus(ctx, op)
		switch {
		case flinkapi.IsTriggerNotFound(err):
			fail("Flink forgot the checkpoint trigger " + string(cp.TriggerID))
			return every
		case err != nil:
			return c.Timing.poll()
		case !res.Completed():
			return c.Timing.poll()
		case res.Succeeded():
			cp.CheckpointID, cp.CompletedAt, cp.Failure, cp.Failures = res.CheckpointID, now, "", 0
			cp.TriggerID, cp.Sent = "", false
		default:
			fail(res.Failure.Message())
		}
	}
	base := d.StartTime
	for _, t := range []time.Time{cp.TriggerTime, cp.CompletedAt, latestCompletedTime(stats)} {
		if t.After(base) {
			base = t
		}
	}
	next := base.Add(every)
	if now.Before(next) {
		return next.Sub(now)
	}
	if !tasksRunning(d) {
		return c.Timing.poll()
	}
	cp.TriggerID, cp.Sent, cp.TriggerTime = flinkapi.NewTriggerID(), false, now
	return soon // stored before the next call sends it
}

// retainedState is the newest state of a job that its checkpoints keep:
// its latest completed checkpoint (not a savepoint) with an external path
// that Flink has not discarded. A JobManager that failed over shows no
// completed checkpoint until the job completes one, although the
// checkpoint it restored the job from is still the job's newest state:
// that one is returned then, timed at its restore (when it was taken is
// not shown; no later than that). Zero: none.
func retainedState(stats *flinkapi.CheckpointStatistics) policy.Checkpoint {
	if stats == nil {
		return policy.Checkpoint{}
	}
	if c := stats.LatestCompleted; c != nil {
		if c.ExternalPath == "" || c.Discarded || c.IsSavepoint {
			return policy.Checkpoint{}
		}
		return policy.Checkpoint{Path: c.ExternalPath, Time: c.TriggerTime}
	}
	if r := stats.LatestRestored; r != nil && !r.IsSavepoint && r.ExternalPath != "" {
		return policy.Checkpoint{Path: r.ExternalPath, Time: r.RestoreTime}
	}
	return policy.Checkpoint{}
}

func latestCompletedTime(stats *flinkapi.CheckpointStatistics) time.Time {
	if stats == nil || stats.LatestCompleted == nil {
		return time.Time{}
	}
	return stats.LatestCompleted.TriggerTime
}

// tasksRunning reports whether d and all its vertices run.
func tasksRunning(d *flinkapi.JobDetails) bool {
	if d == nil || d.State != flinkapi.JobRunning || len(d.Vertices) == 0 {
		return false
	}
	for _, v := range d.Vertices {
		if v.Status != string(flinkapi.JobRunning) {
			return false
		}
	}
	return true
}

func truncateFailure(s string) string { return truncate(s, MaxFailureLength) }
