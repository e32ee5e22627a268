package lifecycle

import (
	"context"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// record writes what the observation showed into st: the job's state
// and failure, its stability and health sample, a bounded job's result,
// and a savepoint that stopped the job.
func (c *Controller) record(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs Observation, plan Plan, now time.Time) {
	if !obs.Read {
		return
	}
	st.JobState = observedState(st, obs, plan)
	if obs.Failure != "" {
		st.Failure = obs.Failure
	}
	switch plan.Situation {
	case SituationRunning:
		recordRunning(spec, st, obs, now)
	case SituationFinished:
		if !finished(st) && obs.Job != nil {
			c.recordResult(ctx, api, st, obs.Job)
		}
	case SituationCancelled, SituationFailed, SituationLost, SituationHalted:
		c.keepChosenCheckpoint(st)
	case SituationStoppedExternally, SituationStoppedWithSavepoint:
		if rec := terminating(obs); !hasLocation(st.Savepoints.Records, rec.Location) || rec.Time.After(st.Latest.Time) {
			c.recordSavepoint(st, rec)
		}
		if spec.State == DesiredSuspended {
			st.Suspended = true // stopped with a savepoint already
		}
	}
}

// observedState is the job's state to record from obs: none for a job
// Flink does not know, and the recorded end of a job whose answer came
// from before it (a stale answer: the end is read again).
func observedState(st *JobStatus, obs Observation, plan Plan) flinkapi.JobState {
	switch {
	case plan.Situation == SituationFinishUnconfirmed && obs.Job != nil && !obs.Job.State.IsGloballyTerminal():
		if p := st.Progress; p.Replace.Observed.State.IsGloballyTerminal() {
			return p.Replace.Observed.State
		}
		return ""
	case obs.Job != nil:
		return obs.Job.State
	}
	return ""
}

// recordRunning records what a call learnt of the running job: that it
// runs without checkpointing, that it became stable, a health sample.
func recordRunning(spec JobSpec, st *JobStatus, obs Observation, now time.Time) {
	if obs.NoCheckpointing {
		st.NoCheckpointing = st.JobID
	}
	if !st.Deployed.IsZero() && !st.runsStably() && stableNow(obs.Job, obs) {
		st.markStable()
	}
	if spec.Health.Action != "" && !obs.HealthDeferred {
		st.Health.Add(st.JobID, obs.Job.StartTime, healthSample(st, obs, now), spec.Health)
	}
}

// keepChosenCheckpoint records, once the job has ended, the retained
// checkpoint the last action chose to carry its state over before it
// cancelled the job and that it did not start from (it ended before,
// its deadline passed): the state the job ended with, which Flink may no
// longer list after a failover. A retry of the action restores it. One
// that Flink refused to start from is not kept: the checkpoint may be
// gone (subsumed while the job ran on past a cancel that did not take),
// and every retry would be refused again.
func (c *Controller) keepChosenCheckpoint(st *JobStatus) {
	p := &st.Progress
	if !p.Done() || p.Outcome == OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint || p.Replace.RestoreFrom == "" ||
		p.Replace.PreviousJobID != st.JobID || p.Replace.Observed.Checkpoint != p.Replace.RestoreFrom || p.Replace.Observed.CheckpointTime.IsZero() || p.Submit.NewJobID != "" ||
		p.restoreRefused() {
		return
	}
	rec := savepoint.Record{Location: p.Replace.RestoreFrom, Time: p.Replace.Observed.CheckpointTime, JobID: p.Replace.PreviousJobID}
	if rec.Time.After(st.Latest.Time) {
		c.recordSavepoint(st, rec)
	}
}

// restoreTime is the time of the state p restored from.
func restoreTime(p *Progress) time.Time {
	switch {
	case p.Replace.RestoreFrom == p.Savepoint.Location && !p.Savepoint.Status.TriggerTime.IsZero():
		return p.Savepoint.Status.TriggerTime
	case p.Replace.RestoreFrom == p.Replace.Request.Path && !p.Replace.Request.Time.IsZero():
		return p.Replace.Request.Time
	case p.Replace.RestoreFrom == p.Replace.Observed.Checkpoint:
		return p.Replace.Observed.CheckpointTime
	case p.Replace.RestoreFrom == p.Replace.Observed.Latest.Location:
		return p.Replace.Observed.Latest.Time
	}
	return time.Time{}
}

// restoredRecord is the record of the state p started its new job from,
// if its time is known.
func restoredRecord(p *Progress) savepoint.Record {
	switch {
	case p.Replace.RestoreFrom == "":
		return savepoint.Record{}
	case p.Replace.RestoreFrom == p.Replace.Observed.Latest.Location && !p.Replace.Observed.Latest.Time.IsZero():
		return p.Replace.Observed.Latest
	}
	t := restoreTime(p)
	if t.IsZero() {
		return savepoint.Record{}
	}
	return savepoint.Record{Location: p.Replace.RestoreFrom, Time: t, JobID: p.Replace.PreviousJobID}
}

// recordSavepoint adds rec to the history and makes it the latest if it
// is newer. Nothing is dropped: a record leaves the history only once
// disposed of.
func (c *Controller) recordSavepoint(st *JobStatus, rec savepoint.Record) {
	st.Savepoints = st.Savepoints.Add(rec)
	if rec.Time.After(st.Latest.Time) || st.Latest.Location == "" {
		st.Latest = rec
	}
}
