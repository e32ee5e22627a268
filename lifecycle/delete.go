package lifecycle

import (
	"context"
	"errors"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// givenUp counts the savepoints of the history whose disposal was given
// up.
func givenUp(st *JobStatus) int {
	n := 0
	for _, r := range st.Savepoints.Records {
		if r.Disposal.GaveUp {
			n++
		}
	}
	return n
}

// delete is Delete up to the disposals of savepoints.
func (c *Controller) delete(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	if err := c.begin(ctx, st); err != nil {
		return Result{}, err
	}
	ctx = c.withSecrets(ctx, spec, st)
	defer func(spec JobSpec) { st.Verdict = st.VerdictFor(spec) }(spec)
	now := c.clock().Now()
	st.Settled = false
	if st.InFlight() {
		return c.step(ctx, spec, st, now)
	}
	switch {
	case deleted(st):
		return Result{Done: true, Outcome: c.deletedOutcome(st)}, nil
	case st.JobID == "":
		// Nothing was ever deployed, or no job of it ran (a deploy that
		// was blocked or refused): the newest state the status knows
		// (one a status reused after a Delete, or an import, recorded)
		// is kept for a later deploy all the same.
		c.set(st, policy.Deleted, ReasonNotDeployed, "nothing was deployed")
		st.Deleted = true
		if err := c.keepNewest(ctx, st); err != nil {
			st.Deleted = false
			return Result{RequeueAfter: c.retry()}, err
		}
		return Result{Done: true, Outcome: OutcomeNotNeeded}, nil
	case finished(st) && (c.Deployer == nil || st.Cluster.IsZero()):
		// A bounded job that finished: nothing runs, no state to keep.
		c.set(st, policy.Deleted, ReasonDeleted, "job "+string(st.JobID)+" had FINISHED; nothing to stop")
		st.Deleted = true
		return Result{Done: true, Outcome: OutcomeSucceeded}, nil
	case st.Suspended && !stateUnread(spec, st):
		// Stopped with a savepoint already: recorded for a later deploy
		// under the name, nothing else to stop.
		c.set(st, policy.Deleted, ReasonDeleted, "the job was suspended with the savepoint "+st.Latest.Location)
		st.Deleted = true
		if err := c.keepNewest(ctx, st); err != nil {
			st.Deleted = false
			return Result{RequeueAfter: c.retry()}, err
		}
		return Result{Done: true, Outcome: OutcomeSucceeded}, nil
	case spec.OnDelete != "" && spec.OnDelete != DeleteTeardown:
		return c.detach(spec, st)
	case st.Action == ActionTeardown && st.Progress.Done() && now.Before(st.RetryAt):
		return Result{RequeueAfter: c.bounded(st.RetryAt.Sub(now))}, nil
	}
	if c.neverRan(ctx, st) {
		// Its state is the state it started from, which the status
		// keeps: cancelled at once, no savepoint to wait for.
		spec.Update.Mode = policy.UpgradeStateless
	}
	return c.start(ctx, spec, st, ActionTeardown, JobTemplate{}, now)
}

// neverRan reports whether the job is up but cannot run: its tasks wait
// for more task slots than the cluster has free, and no checkpoint
// completed since it started. It holds no state beyond the one it
// started from. Three requests at most.
func (c *Controller) neverRan(ctx context.Context, st *JobStatus) bool {
	api, _, err := c.recordedAPI(st)
	if err != nil {
		return false
	}
	d, err := api.Job(ctx, st.JobID)
	if err != nil || d == nil || d.State.IsGloballyTerminal() || len(d.Vertices) == 0 {
		return false
	}
	for _, v := range d.Vertices {
		if t := v.Tasks; t.Created+t.Scheduled < t.Total || t.Total == 0 {
			return false // a task got further than waiting for a slot
		}
	}
	need, held := slotsNeeded(d)
	if free, _ := c.freeSlots(ctx, api); free < 0 || need-held <= free {
		return false
	}
	stats, err := api.Checkpoints(ctx, st.JobID)
	if err != nil {
		return errors.Is(err, flinkapi.ErrNotFound) && !flinkapi.IsJobNotFound(err) // no checkpointing at all
	}
	return stats.LatestCompleted == nil || stats.LatestCompleted.TriggerTime.Before(d.StartTime)
}

// deletedOutcome is the outcome a Delete of an already deleted job
// reports.
func (c *Controller) deletedOutcome(st *JobStatus) Outcome {
	if st.Action == ActionTeardown && st.Progress.Done() {
		return st.Progress.Outcome
	}
	return OutcomeSucceeded
}
