package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// givenUp counts the savepoints of the history whose disposal was given
// up.
func givenUp(st *JobStatus) int {
	n := 0
	for _, r := range st.Savepoints.Records {
		if r.Disposal().GaveUp {
			n++
		}
	}
	return n
}

// deleteStep is what a Delete does next: a Delete's counterpart of the
// action of a Reconcile's Plan.
type deleteStep int

const (
	// deleteStepAction steps the action in flight (a teardown, or the
	// action a Reconcile left in flight), whatever it is.
	deleteStepAction deleteStep = iota
	// deleteStepDone: deleted already; nothing is sent.
	deleteStepDone
	// deleteStepKeep: nothing runs (nothing was deployed, or the job was
	// suspended with a savepoint): recorded deleted, the newest state
	// the status knows kept in the RestorePointStore for a later deploy.
	deleteStepKeep
	// deleteStepForget: a bounded job finished: recorded deleted,
	// nothing to stop or keep.
	deleteStepForget
	// deleteStepDetach: the job is left running, no longer managed
	// (JobSpec.OnDelete).
	deleteStepDetach
	// deleteStepWait: the last teardown did not succeed and is tried
	// again at RetryAt.
	deleteStepWait
	// deleteStepTeardown starts the teardown of the job (Plan.Mode
	// stateless for a job that never ran).
	deleteStepTeardown
)

// deletePlan is the plan of a Delete: the Plan that PlanDelete shows and
// the step that Delete carries out.
type deletePlan struct {
	Plan
	step deleteStep
	// outcome is the outcome a Delete that ends at this step reports.
	outcome Outcome
}

// deleteObservation is what a Delete reads of the job before it plans:
// only for a teardown, whether the job never ran (neverRan).
type deleteObservation struct {
	neverRan bool
}

// observeDelete reads what planDelete decides on beyond the status:
// nothing, unless the Delete tears the job down (three requests at most).
func (c *Controller) observeDelete(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) deleteObservation {
	if c.planDelete(spec, st, deleteObservation{}, now).step != deleteStepTeardown {
		return deleteObservation{}
	}
	return deleteObservation{neverRan: c.neverRan(ctx, st)}
}

// planDelete is the decision of a Delete: a pure function of the spec,
// the status, what observeDelete read and the time.
func (c *Controller) planDelete(spec JobSpec, st *JobStatus, obs deleteObservation, now time.Time) deletePlan {
	sit := situationOf(spec, st, Observation{})
	p := deletePlan{Plan: Plan{Situation: sit, Mode: spec.Update.WithDefaults().Mode, State: policy.Deleted, Reason: ReasonDeleted},
		outcome: OutcomeSucceeded}
	if !c.planDeleteStill(spec, st, &p) {
		c.planDeleteJob(spec, st, obs, now, &p)
	}
	return p
}

// planDeleteStill plans the Delete of a deployment whose job is not to
// be stopped now (an action is in flight, it was deleted, never ran,
// finished or was suspended), and reports whether it did.
func (c *Controller) planDeleteStill(spec JobSpec, st *JobStatus, p *deletePlan) bool {
	switch {
	case st.InFlight():
		as := st.actionSpec(spec)
		p.Action, p.InFlight, p.Target, p.Mode = st.Action, true, st.Target, as.Update.WithDefaults().Mode
		p.State, p.Reason = c.inFlightState(st), ActionReason(st.Action, "")
		p.step = deleteStepAction
	case deleted(st):
		p.State, p.Reason, p.Message = st.State, st.Reason, st.Message
		p.step, p.outcome = deleteStepDone, c.deletedOutcome(st)
	case st.JobID == "":
		// Nothing was ever deployed, or no job of it ran (a deploy that
		// was blocked or refused): the newest state the status knows
		// (one a status reused after a Delete, or an import, recorded)
		// is kept for a later deploy all the same.
		p.Reason, p.Message = ReasonNotDeployed, "nothing was deployed"
		p.step, p.outcome = deleteStepKeep, OutcomeNotNeeded
	case finished(st) && (c.Deployer == nil || st.Cluster.IsZero()):
		// A bounded job that finished: nothing runs, no state to keep.
		p.Message = "job " + string(st.JobID) + " had FINISHED; nothing to stop"
		p.step = deleteStepForget
	case st.Suspended && !stateUnread(spec, st):
		// Stopped with a savepoint already: recorded for a later deploy
		// under the name, nothing else to stop.
		p.Message = "the job was suspended with the savepoint " + st.Latest.Location
		p.step = deleteStepKeep
	default:
		return false
	}
	return true
}

// planDeleteJob plans the Delete of a deployment whose job may run: it
// is refused (an unknown OnDelete), detached, left until a failed
// teardown is tried again, or torn down.
func (c *Controller) planDeleteJob(spec JobSpec, st *JobStatus, obs deleteObservation, now time.Time, p *deletePlan) {
	switch {
	case spec.OnDelete != "" && spec.OnDelete != DeleteTeardown && spec.OnDelete != DeleteDetach:
		err := fmt.Errorf("%w: %w", ErrInvalidSpec, onDeleteError(spec.OnDelete))
		p.State, p.Reason, p.Message, p.Blocked = st.State, ReasonInvalidSpec, err.Error(), err.Error()
		p.step = deleteStepDetach // refused there
	case spec.OnDelete == DeleteDetach:
		p.Reason = ReasonDetached
		p.Message = fmt.Sprintf("job %s is detached: it runs on, no longer managed; nothing was sent to it", st.JobID)
		p.step = deleteStepDetach
	case st.Action == ActionTeardown && st.Progress.Done() && now.Before(st.RetryAt):
		// The status says how the teardown ended until it is tried again.
		p.State, p.Reason, p.Message = st.State, st.Reason, st.Message
		p.RequeueAfter = c.bounded(st.RetryAt.Sub(now))
		p.step = deleteStepWait
	default:
		p.Action, p.State, p.Reason, p.Message = ActionTeardown, policy.Stopping, ActionReason(ActionTeardown, ""), ""
		if obs.neverRan {
			// Its state is the state it started from, which the status
			// keeps: cancelled at once, no savepoint to wait for.
			p.Mode = policy.UpgradeStateless
		}
		p.step = deleteStepTeardown
	}
}

// PlanDelete is what Delete would do next for the job, and why, without
// acting: it reads what Delete reads (only when Delete would tear the job
// down: its details, the cluster's free slots and its checkpoint
// statistics, to tell a job that never ran) and changes neither st nor
// the job. Plan.Action is the action Delete steps (InFlight: the
// teardown, or the action a Reconcile left in flight, which is carried
// on first) or starts (ActionTeardown; Plan.Mode is how its stop keeps
// state, UpgradeStateless for a job that never ran). With no action,
// State, Reason and Message are what the status reports, Blocked why the
// spec cannot be carried out (an unknown JobSpec.OnDelete), RequeueAfter
// when a failed teardown is tried again, and Dispose the first savepoint
// Delete disposes of once the job is deleted
// (SavepointPolicy.DisposeOnDelete).
func (c *Controller) PlanDelete(ctx context.Context, spec JobSpec, st JobStatus) (Plan, error) {
	st = *st.DeepCopy()
	if err := c.begin(ctx, &st); err != nil {
		return Plan{}, err
	}
	ctx = c.withSecrets(ctx, spec, &st)
	now := c.clock().Now()
	p := c.planDelete(spec, &st, c.observeDelete(ctx, spec, &st, now), now)
	switch p.step {
	case deleteStepDone, deleteStepKeep, deleteStepForget:
		gone := st
		gone.Deleted = true
		p.Dispose, _ = c.nextDeleteDisposal(spec, &gone, now)
	}
	return p.Plan, nil
}

// delete is Delete up to the disposals of savepoints: it observes,
// plans and acts as Reconcile does.
func (c *Controller) delete(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	if err := c.begin(ctx, st); err != nil {
		return Result{}, err
	}
	ctx = c.withSecrets(ctx, spec, st)
	defer func(spec JobSpec) { st.Verdict = st.VerdictFor(spec) }(spec)
	now := c.clock().Now()
	st.Settled = false
	obs := c.observeDelete(ctx, spec, st, now)
	p := c.planDelete(spec, st, obs, now)
	c.auditBeforeDelete(ctx, spec, st, p, now)
	res, err := c.actDelete(ctx, spec, st, p, now)
	if res.Outcome != "" && (!res.Done || res.Outcome != OutcomeSucceeded && res.Outcome != OutcomeNotNeeded) {
		// A teardown that ended otherwise (the job gone, its savepoint
		// lost) may have left its savepoint only on storage: Delete
		// audits before it is done (auditBeforeDone).
		c.markAuditDue(st, res.Outcome)
	}
	return res, err
}

// actDelete carries out the plan of a Delete.
func (c *Controller) actDelete(ctx context.Context, spec JobSpec, st *JobStatus, p deletePlan, now time.Time) (Result, error) {
	switch p.step {
	case deleteStepAction:
		if cancelsUnran(spec, st) && !c.neverRan(ctx, st) {
			// The teardown chose to cancel the job without state because
			// it had never run; it has run since (its tasks got their
			// slots, it may have checkpointed): it is torn down as the
			// spec's mode says, keeping its state.
			return c.start(ctx, spec, st, ActionTeardown, JobTemplate{}, now, nil)
		}
		return c.step(ctx, spec, st, now)
	case deleteStepDone:
		return Result{Done: true, Outcome: p.outcome}, nil
	case deleteStepKeep:
		c.set(st, p.State, p.Reason, p.Message)
		st.Deleted = true
		if err := c.keepNewest(ctx, st); err != nil {
			st.Deleted = false
			return Result{RequeueAfter: c.retry()}, err
		}
		return Result{Done: true, Outcome: p.outcome}, nil
	case deleteStepForget:
		c.set(st, p.State, p.Reason, p.Message)
		st.Deleted = true
		return Result{Done: true, Outcome: p.outcome}, nil
	case deleteStepDetach:
		return c.detach(spec, st)
	case deleteStepWait:
		return Result{RequeueAfter: p.RequeueAfter}, nil
	}
	spec.Update.Mode = p.Mode
	return c.start(ctx, spec, st, ActionTeardown, JobTemplate{}, now, nil)
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

// cancelsUnran reports whether st's action is a teardown about to cancel
// its job without state under a spec whose mode keeps state: the
// teardown chose the cancel because the job had never run when it began
// (or the spec was of the Stateless mode then). The cancel goes only to a
// job that still never ran, checked in the call that sends it.
func cancelsUnran(spec JobSpec, st *JobStatus) bool {
	p := &st.Progress
	return st.Action == ActionTeardown && !p.Done() && p.Phase == PhaseCancel && p.Stop.Strategy == CancelWithoutState &&
		p.Replace.StopOutcome == "" && spec.Update.Mode != policy.UpgradeStateless
}

// deletedOutcome is the outcome a Delete of an already deleted job
// reports.
func (c *Controller) deletedOutcome(st *JobStatus) Outcome {
	if st.Action == ActionTeardown && st.Progress.Done() {
		return st.Progress.Outcome
	}
	return OutcomeSucceeded
}
