package lifecycle

import (
	"context"
	"errors"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// needsObservation reports whether the plan needs the job read: a job is
// recorded, no action is in flight, and it is neither suspended nor
// deleted.
func needsObservation(st *JobStatus) bool {
	return st.JobID != "" && !st.InFlight() && !st.Suspended && !deleted(st)
}

// observe reads the job into one Observation: its details first, then
// only what its state makes the plan need (checkpoint statistics,
// exceptions, restarts, free slots, the checkpoint configuration), at
// most MaxRequestsPerCall requests in all. It changes nothing.
func (c *Controller) observe(ctx context.Context, api API, spec JobSpec, st *JobStatus) (Observation, error) {
	if id := adoptTarget(spec, st); id != "" && c.Deployer == nil {
		return c.observeAdopt(ctx, api, id)
	}
	obs := Observation{Restarts: -1, FreeSlots: -1}
	if !needsObservation(st) {
		return obs, nil
	}
	if c.atRest(spec, st) {
		o, ok, changed := c.observeShared(ctx, api, spec, st)
		if ok {
			return o, nil
		}
		obs.OverviewChanged = changed
	}
	obs.Read, obs.Requests = true, 1
	d, err := api.Job(ctx, st.JobID)
	switch {
	case errors.Is(err, flinkapi.ErrMisconfigured):
		return obs, err
	case err != nil && !flinkapi.IsJobNotFound(err):
		obs.Error = errMessage(err)
		return obs, nil
	}
	obs.Reachable, obs.Job = true, d
	if d == nil {
		return obs, nil
	}
	if needsCheckpoints(spec, st, d) || c.awaitsCheckpoint(st, d) {
		c.observeCheckpoints(ctx, api, st, &obs)
	}
	c.observeMore(ctx, api, spec, st, &obs)
	return obs, nil
}

// observeCheckpoints reads the checkpoint statistics of the job obs
// read, and whether Flink's cache may still answer them from before the
// job ended.
func (c *Controller) observeCheckpoints(ctx context.Context, api API, st *JobStatus, obs *Observation) {
	d := obs.Job
	obs.CheckpointsRead = true
	obs.Requests++
	stats, err := api.Checkpoints(ctx, st.JobID)
	switch {
	case err == nil:
		obs.Checkpoints = stats
		obs.CheckpointsStale = !d.EndTime.IsZero() && c.clock().Now().Before(d.EndTime.Add(c.Timing.cache()))
	case errors.Is(err, flinkapi.ErrNotFound) && !flinkapi.IsJobNotFound(err):
		obs.CheckpointsAbsent = true
	}
}

// observeMore reads what a job in d's state needs beyond its details and
// checkpoints.
func (c *Controller) observeMore(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs *Observation) {
	d := obs.Job
	switch d.State {
	case flinkapi.JobFailed:
		obs.Failure = c.readFailure(ctx, api, st.JobID)
		obs.FreeSlots, obs.TotalSlots = c.freeSlots(ctx, api)
		obs.Requests += 2
		return
	case flinkapi.JobFailing, flinkapi.JobRestarting:
		obs.Failure = c.readFailure(ctx, api, st.JobID)
		obs.Requests++
		return
	case flinkapi.JobCreated, flinkapi.JobInitializing:
		obs.FreeSlots, obs.TotalSlots = c.freeSlots(ctx, api)
		obs.Requests++
		return
	case flinkapi.JobRunning:
		c.observeRunning(ctx, api, spec, st, obs)
	}
}

// observeRunning reads what a running job needs beyond its details and
// checkpoints: its restarts for the health check, the free slots while
// its tasks do not all run, and whether it checkpoints at all while it
// has not yet run stably.
func (c *Controller) observeRunning(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs *Observation) {
	d := obs.Job
	if spec.Health.Action != "" {
		obs.Requests++
		if n, ok, err := api.JobRestarts(ctx, st.JobID); err == nil && ok {
			obs.Restarts = n
		}
	}
	pending := !st.runsStably()
	switch {
	case !tasksRunning(d):
		obs.FreeSlots, obs.TotalSlots = c.freeSlots(ctx, api)
		obs.Requests++
	case pending && st.NoCheckpointing == st.JobID:
		obs.NoCheckpointing = true
	case pending && obs.Checkpoints != nil && latestCompletedTime(obs.Checkpoints).Before(d.StartTime):
		obs.Requests++
		if cfg, err := api.CheckpointConfig(ctx, st.JobID); err == nil {
			obs.NoCheckpointing = cfg.Interval <= 0 || cfg.Interval >= noCheckpointInterval
		}
	}
}

// needsCheckpoints reports whether the plan needs the job's checkpoint
// statistics: to tell a stop with savepoint from a bounded job's end, to
// restart a failed job from its retained checkpoint, or to judge a
// running job's stability and health.
func needsCheckpoints(spec JobSpec, st *JobStatus, d *flinkapi.JobDetails) bool {
	switch d.State {
	case flinkapi.JobFinished:
		return !finished(st)
	case flinkapi.JobFailed, flinkapi.JobSuspended, flinkapi.JobCanceled:
		return true
	case flinkapi.JobRunning:
		return !st.runsStably() || spec.Health.Action != "" || spec.Checkpoints.Interval > 0
	}
	return false
}

// readFailure reads the root cause of the job's newest exception.
func (c *Controller) readFailure(ctx context.Context, api API, job flinkapi.JobID) string {
	ex, err := api.JobExceptions(ctx, job, 1)
	if err != nil || len(ex.Entries) == 0 {
		return ""
	}
	e := ex.Entries[0]
	cause := flinkapi.RootCause(e.StackTrace)
	if cause == "" {
		cause = e.Message
	}
	return truncateFailure(cause)
}

// freeSlots reads the session cluster's free and total task slots; -1
// if unknown, and for an application cluster (a Deployer's).
func (c *Controller) freeSlots(ctx context.Context, api API) (free, total int) {
	if c.Deployer != nil {
		// An application cluster brings its own task slots: its job
		// never waits for a session's free ones.
		return -1, 0
	}
	if ov, err := api.Overview(ctx); err == nil {
		return ov.SlotsAvailable, ov.SlotsTotal
	}
	return -1, 0
}

func jobStateName(d *flinkapi.JobDetails) string {
	if d == nil {
		return "unknown to Flink"
	}
	return string(d.State)
}

// latestCheckpoint is the newest retained checkpoint in stats
// (retainedState).
func latestCheckpoint(stats *flinkapi.CheckpointStatistics) policy.Checkpoint {
	return retainedState(stats)
}

// stable reports whether a job runs stably: RUNNING, all its vertices
// running, and a checkpoint completed after its start.
func stable(d *flinkapi.JobDetails, stats *flinkapi.CheckpointStatistics) bool {
	if d == nil || d.State != flinkapi.JobRunning || stats == nil || stats.LatestCompleted == nil {
		return false
	}
	for _, v := range d.Vertices {
		if v.Status != string(flinkapi.JobRunning) {
			return false
		}
	}
	return !stats.LatestCompleted.TriggerTime.Before(d.StartTime)
}
