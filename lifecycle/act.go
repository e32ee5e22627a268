package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// actionRow is one action of the Controller: the states it reports, the
// operation that carries it out, and what its success and failure write
// to the status. A new action is one row of actions.
type actionRow struct {
	// during is the deployment state while the action is in flight, done
	// the one once it succeeded.
	during, done policy.DeploymentState
	// background: done beside the running job, which it leaves running
	// whatever its outcome.
	background bool
	// replaces: the action starts a new job (Rescale and Autoscale only
	// when they go through an upgrade).
	replaces bool
	// operation names the operation whose Progress the action keeps
	// (ActionAdopt keeps none): a status whose Progress in flight
	// another operation, or the same for another job, wrote is refused
	// before anything is changed or sent.
	operation string
	// build is the operation of the action.
	build func(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper
	// succeeded and failed apply the action's outcome; before is the
	// template deployed when it ended.
	succeeded func(c *Controller, spec JobSpec, st *JobStatus, before JobTemplate, now time.Time)
	failed    func(c *Controller, st *JobStatus, o Outcome, now time.Time)
}

// opBase is what every operation of the Controller is built from.
type opBase struct {
	env Env // the Controller's, with the job's client
	sp  Env // env with the update policy's savepoint deadline
	cl  Cluster
}

// actions is the table of the Controller's actions.
var actions = map[JobAction]actionRow{
	ActionDeploy:        {operation: opUpgrade, during: policy.Deploying, done: policy.Running, replaces: true, build: buildUpgrade, failed: retryLater},
	ActionUpgrade:       {operation: opUpgrade, during: policy.Updating, done: policy.Running, replaces: true, build: buildUpgrade, failed: upgradeFailed},
	ActionHealthRestart: {operation: opUpgrade, during: policy.Restarting, done: policy.Running, replaces: true, build: buildUpgrade, failed: retryLater},
	ActionRollback: {operation: opUpgrade, during: policy.Updating, done: policy.Running, replaces: true, build: buildUpgrade, failed: retryLater,
		succeeded: func(_ *Controller, _ JobSpec, st *JobStatus, before JobTemplate, _ time.Time) {
			if !before.equal(st.Target) {
				// (An upgrade whose new job Flink refused deployed none:
				// its template was recorded failed when it ended.)
				st.FailedJob = before.Fingerprint()
			}
			st.Stable = st.Target
		}},
	ActionRescale:   {operation: opRescale, during: policy.Updating, done: policy.Running, build: buildRescale, succeeded: rescaled, failed: retryLater},
	ActionAutoscale: {operation: opRescale, during: policy.Updating, done: policy.Running, build: buildRescale, succeeded: rescaled, failed: autoscaleFailed},
	ActionRestart: {operation: opRestart, during: policy.Restarting, done: policy.Running, replaces: true, failed: retryLater,
		build: func(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
			return &Restart{Env: b.env, Job: st.JobID, Policy: spec.Restart, Restarts: st.Restarts, LastRestart: st.LastRestart,
				Latest: st.Latest, Store: c.storeFor(st), Name: c.Name, JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile,
				Run: st.Target.run(), Deployer: c.Deployer, Cluster: b.cl, storage: c.Storage, latestRanOn: latestRanOn(st),
				seen: checkpointSeen(st)}
		},
		succeeded: func(_ *Controller, spec JobSpec, st *JobStatus, _ JobTemplate, now time.Time) {
			st.Restarts = spec.Restart.CountRestart(st.Restarts, st.LastRestart, now)
			st.LastRestart = now
		}},
	ActionBlueGreen: {operation: opBlueGreen, during: policy.Updating, done: policy.Running, replaces: true,
		build: func(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
			bg := &BlueGreen{Env: b.sp, Job: st.JobID, JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile, Run: st.Target.run(),
				Window: spec.BlueGreen.Window.Std(), Deployer: c.Deployer, Cluster: b.cl}
			bg.Preflight = &spec.Preflight
			if spec.BlueGreen.KeepSavepoint {
				bg.StopOld = StopWithSavepoint
			}
			return bg
		},
		succeeded: func(_ *Controller, _ JobSpec, st *JobStatus, _ JobTemplate, _ time.Time) {
			st.markStable() // the new job was healthy beside the old one before it stopped
		},
		failed: func(c *Controller, st *JobStatus, o Outcome, now time.Time) {
			st.RetryAt = now.Add(c.retry())
			if o == OutcomeBlueGreenAborted {
				// The old job runs on; the new one is not tried again
				// until the spec changes, and its retained checkpoints go.
				st.FailedJob = st.Target.Fingerprint()
				c.noteCancelled(st, blueGreenJobID(st.JobID))
			}
		}},
	ActionCanary: {operation: opCanary, during: policy.Updating, done: policy.Running,
		build: func(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
			run := st.Target.run()
			run.AllowNonRestoredState = spec.Update.AllowNonRestoredState
			return &Canary{Env: b.sp, Job: st.JobID, JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile, Run: run,
				Window: spec.BlueGreen.Window.Std(), Preflight: &spec.Preflight}
		},
		succeeded: func(c *Controller, _ JobSpec, st *JobStatus, _ JobTemplate, _ time.Time) {
			st.CanaryPassed = st.Target.Fingerprint()  // the upgrade follows
			c.noteCancelled(st, canaryJobID(st.JobID)) // cancelled once healthy
		},
		failed: func(c *Controller, st *JobStatus, o Outcome, now time.Time) {
			st.RetryAt = now.Add(c.retry())
			if o == OutcomeCanaryFailed {
				// The old job runs on untouched; the new one is not tried
				// again until the spec changes, and the canary's retained
				// checkpoints go.
				st.FailedJob = st.Target.Fingerprint()
				c.noteCancelled(st, canaryJobID(st.JobID))
			}
		}},
	ActionSavepoint: {operation: opTakeSavepoint, during: policy.Running, done: policy.Running, background: true,
		build: func(_ *Controller, _ JobSpec, st *JobStatus, b opBase) Stepper {
			return &TakeSavepoint{Env: b.sp, Job: st.JobID, Reason: savepoint.ReasonScheduled}
		},
		succeeded: func(_ *Controller, _ JobSpec, st *JobStatus, _ JobTemplate, _ time.Time) { st.SavepointFailures = 0 },
		// The job runs on; the schedule tries again one interval after
		// the failed attempt. One that timed out while Flink may still
		// complete it is looked up at later calls (LateSavepoint), and
		// counts as failed only if it does not complete.
		failed: func(c *Controller, st *JobStatus, _ Outcome, now time.Time) {
			if !c.awaitLate(st, now) {
				st.SavepointFailures++
			}
		}},
	ActionDispose: {operation: opDispose, during: policy.Running, done: policy.Running, background: true,
		build: func(c *Controller, _ JobSpec, st *JobStatus, b opBase) Stepper {
			return &DisposeSavepoints{Env: b.env, History: st.Savepoints, Retention: c.retention(st.Retention, st)}
		},
		// Only a status an earlier release wrote has one in flight. Its
		// savepoints stay in the history: the ledger disposes of each
		// again, and a savepoint gone counts as disposed of then.
	},
	ActionSuspend: {operation: opTeardown, during: policy.Stopping, done: policy.Suspended,
		failed: func(c *Controller, st *JobStatus, o Outcome, now time.Time) {
			if st.Progress.Stopped() {
				// Nothing is left to stop: suspended with the newest
				// state the status knows.
				st.Suspended = true
				return
			}
			retryLater(c, st, o, now)
		},
		build: func(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
			return &Teardown{Env: b.sp, Job: st.JobID, Mode: spec.Update.Mode, Deployer: c.Deployer, Cluster: b.cl}
		},
		succeeded: func(_ *Controller, _ JobSpec, st *JobStatus, _ JobTemplate, _ time.Time) { st.Suspended = true }},
	ActionTeardown: {operation: opTeardown, during: policy.Stopping, done: policy.Deleted, failed: retryLater,
		build: func(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
			return &Teardown{Env: b.sp, Job: st.JobID, Mode: spec.Update.Mode, AllowCancelWithoutState: spec.AllowCancelWithoutState,
				Store: c.Store, Name: c.Name, Deployer: c.Deployer, Cluster: b.cl}
		}},
	ActionAdopt: {during: policy.Running, done: policy.Running, build: buildAdopted}, // adopt.go
	ActionCheckpoint: {operation: opTriggerCheckpoint, during: policy.Running, done: policy.Running, background: true,
		build: func(_ *Controller, _ JobSpec, st *JobStatus, b opBase) Stepper {
			return &triggerCheckpoint{Env: b.sp, Job: st.JobID, Reason: savepoint.ReasonScheduled}
		},
		succeeded: checkpointed,
		// The job runs on; the schedule tries again one interval after
		// the failed attempt.
		failed: func(_ *Controller, st *JobStatus, _ Outcome, _ time.Time) {
			cp := triggeredRecord(st)
			cp.Failure = truncateFailure(st.Progress.Reason)
			cp.Failures++
		}},
	// The one-shot requests (requests.go).
	ActionSavepointRequest: {operation: opTakeSavepoint, during: policy.Running, done: policy.Running, background: true,
		build: func(_ *Controller, _ JobSpec, st *JobStatus, b opBase) Stepper {
			return &TakeSavepoint{Env: b.sp, Job: st.JobID, Reason: savepoint.ReasonUser}
		},
		// One that timed out while Flink may still complete it is looked
		// up at later calls (LateSavepoint).
		failed: func(c *Controller, st *JobStatus, _ Outcome, now time.Time) { c.awaitLate(st, now) }},
	ActionCheckpointRequest: {operation: opTriggerCheckpoint, during: policy.Running, done: policy.Running, background: true,
		build: func(_ *Controller, _ JobSpec, st *JobStatus, b opBase) Stepper {
			return &triggerCheckpoint{Env: b.sp, Job: st.JobID, Reason: savepoint.ReasonUser}
		},
		succeeded: checkpointed},
	ActionRestartRequest: {operation: opUpgrade, during: policy.Restarting, done: policy.Running, replaces: true, build: buildUpgrade},
}

func buildUpgrade(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
	return c.upgrade(spec, st, b.env)
}

func buildRescale(c *Controller, spec JobSpec, st *JobStatus, b opBase) Stepper {
	return &Rescale{Env: b.env, Job: st.JobID, Parallelism: st.Target.Parallelism, Policy: spec.Rescale, Upgrade: *c.upgrade(spec, st, b.env)}
}

func retryLater(c *Controller, st *JobStatus, _ Outcome, now time.Time) {
	st.RetryAt = now.Add(c.retry())
}

// upgradeFailed: an upgrade is tried again after RetryAt, unless Flink
// refused its new job once the old job had stopped and the rollback
// policy it started with takes the job back to the last stable template:
// then the state it started from is the rollback's (UpgradeFrom), and
// its template is not deployed again until the spec's Job changes.
func upgradeFailed(c *Controller, st *JobStatus, o Outcome, now time.Time) {
	retryLater(c, st, o, now)
	p := &st.Progress
	as := st.ActionSpec
	if o != OutcomeSubmitFailed && o != OutcomeJobFailed || !stoppedOld(p) || as == nil || !as.Rollback.Enabled ||
		st.Stable.IsZero() || st.Stable.equal(st.Target) {
		return
	}
	switch {
	case p.Replace.RestoreFrom != "" && (p.Replace.Request.IsZero() || p.Replace.RestoreFrom != p.Replace.Request.Path) && !restoreTime(p).IsZero():
		// The state the stable job wrote: the savepoint it stopped with,
		// or the checkpoint chosen before its cancel.
		st.UpgradeFrom = savepoint.Record{Location: p.Replace.RestoreFrom, Time: restoreTime(p), JobID: p.Replace.PreviousJobID}
	case as.Update.Mode == policy.UpgradeStateless:
		st.UpgradeFrom = savepoint.Record{} // back without state
	default:
		return // no state of the stable job to go back with
	}
	st.FailedJob = st.Target.Fingerprint()
}

// rescaled: the same job at another parallelism.
func rescaled(_ *Controller, _ JobSpec, st *JobStatus, before JobTemplate, _ time.Time) {
	if st.Stable.equal(before) {
		st.Stable = st.Target
	}
	st.Deployed = st.Target
}

// autoscaleFailed: the job keeps the parallelism it runs at; the
// cool-down counts from the attempt.
func autoscaleFailed(_ *Controller, st *JobStatus, _ Outcome, _ time.Time) {
	st.Autoscale.Parallelism = st.Deployed.Parallelism
}

// start records a new action, with the spec it carries out, and takes
// its first step, which sends no request: it records the trigger or job
// id later requests use, and the caller stores it before the next step
// sends them.
//
// seed, if set, is what the upgrade's preflight would read of the old job,
// read by this call's observation: recorded with the action, so that the
// preflight does not read the job again.
func (c *Controller) start(ctx context.Context, spec JobSpec, st *JobStatus, a JobAction, target JobTemplate, now time.Time, seed *Preflight) (Result, error) {
	if c.resumesChange(st, a, target) {
		// The same change tried again after its job was stopped: it
		// carries the job's state over as it started to.
		spec.Update = st.ActionSpec.Update
	}
	st.Action, st.Progress, st.RetryAt = a, Progress{}, time.Time{}
	st.Progress.Replace.Preflight = seed
	target.DeepCopyInto(&st.Target)
	forgetDetached(st, a, c.Storage != nil)
	if a == ActionDeploy {
		st.Deleted = false // a status reused after a Delete: deployed anew
	}
	st.ActionSpec = spec.DeepCopy()
	if a == ActionDispose {
		st.Retention = spec.Savepoints
	}
	return c.step(ctx, spec, st, now)
}

// observedPreflight is the old job's part of an upgrade's preflight
// (Preflight.Old, Held, OldRead) from the job details obs read in this
// call, or nil when a starts no upgrade or obs read no running job of st.
func observedPreflight(a JobAction, st *JobStatus, obs Observation) *Preflight {
	d := obs.Job
	if a != ActionUpgrade || !obs.Read || d == nil || d.ID != st.JobID || d.State.IsGloballyTerminal() || len(d.Vertices) == 0 {
		return nil
	}
	return &Preflight{Old: planOf(d), Held: heldSlots(d), OldRead: true}
}

// resumesChange reports whether starting a for target tries again the
// change the last action, which did not succeed, made to the same
// template after it stopped the job or chose the state to carry over
// (recorded before its cancel).
func (c *Controller) resumesChange(st *JobStatus, a JobAction, target JobTemplate) bool {
	p := &st.Progress
	return st.ActionSpec != nil && p.Done() && p.Outcome != OutcomeSucceeded && sameChange(st.Action, a) && st.Target.equal(target) &&
		p.Replace.PreviousJobID != "" && p.Replace.PreviousJobID == st.JobID && (stoppedOld(p) || p.Replace.RestoreFrom != "")
}

// sameChange reports whether action a carries out the change the action
// before did: the same action, or a deploy, upgrade or rescale of the
// same template (an upgrade takes over a rescale whose job stopped).
func sameChange(before, a JobAction) bool {
	deploys := func(x JobAction) bool {
		return x == ActionDeploy || x == ActionUpgrade || x == ActionRescale || x == ActionAutoscale
	}
	return before == a || deploys(before) && deploys(a)
}

// stoppedOld reports whether p is an Upgrade's or Restart's (also
// within a Rescale) that saw the job it replaces ended.
func stoppedOld(p *Progress) bool {
	switch p.Operation {
	case opUpgrade, opRestart, opRescale:
		return p.Replace.Observed.State.IsGloballyTerminal()
	}
	return false
}

// step steps the action in flight once, with the spec it started with,
// and applies its outcome once it ended.
func (c *Controller) step(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) (Result, error) {
	spec = st.actionSpec(spec)
	row := actions[st.Action]
	op, err := c.operation(spec, st, row)
	if err != nil {
		return Result{RequeueAfter: c.retry()}, fmt.Errorf("lifecycle: %s: %w", st.Action, err)
	}
	taken := st.Progress.Savepoint.Status
	res, err := op.Step(ctx, &st.Progress)
	keepReplaced(st, taken)
	if err != nil {
		return Result{RequeueAfter: max(res.RequeueAfter, soon)}, fmt.Errorf("lifecycle: %s: %w", st.Action, err)
	}
	if !res.Done {
		msg := fmt.Sprintf("%s: phase %s", st.Action, st.Progress.Phase)
		if st.Progress.LastError != "" {
			msg += " " + st.Progress.LastError
		}
		if row.background {
			// The job runs on: the deployment stays Running.
			c.set(st, policy.Running, ReasonRunning, "job "+string(st.JobID)+" runs; "+msg)
		} else {
			c.set(st, row.during, ActionReason(st.Action, ""), msg)
		}
		return Result{RequeueAfter: max(res.RequeueAfter, soon)}, nil
	}
	if err := c.finish(ctx, spec, st, row, now); err != nil {
		return Result{RequeueAfter: soon}, err
	}
	if st.Action == ActionTeardown && deleted(st) {
		return Result{Done: true, Outcome: st.Progress.Outcome}, nil
	}
	return Result{RequeueAfter: soon, Outcome: st.Progress.Outcome}, nil
}

// operation builds the operation of st.Action. It holds no state of its
// own: everything it needs to resume is in st.Progress.
func (c *Controller) operation(spec JobSpec, st *JobStatus, row actionRow) (Stepper, error) {
	if row.build == nil {
		return nil, fmt.Errorf("%w: unknown action %q", ErrInvalidStatus, st.Action)
	}
	env := c.env(st)
	api, err := c.jobAPI(st)
	if err != nil {
		return nil, err
	}
	env.Client = api
	sp := env // for the operations that take savepoints: the policy's deadline
	sp.Timing.Savepoint = spec.Update.WithDefaults().SavepointDeadline.Std()
	// The job's cluster, when a Deployer started it: the operations that
	// stop or replace the job delete it once it is of no more use.
	cl := st.Cluster
	if c.Deployer == nil {
		cl = Cluster{}
	}
	return row.build(c, spec, st, opBase{env: env, sp: sp, cl: cl}), nil
}

// finish applies the outcome of the action that ended to st: the
// savepoint it took, the job it started, the restart it made, and what
// its row writes.
func (c *Controller) finish(ctx context.Context, spec JobSpec, st *JobStatus, row actionRow, now time.Time) error {
	p := &st.Progress
	c.recordTaken(st)
	before := st.Deployed
	if p.Submit.JarID != "" && st.Target.JarID == "" && st.Target.JarFile != "" {
		st.JarID, st.JarFile, st.JarDigest = p.Submit.JarID, st.Target.JarFile, st.Target.JarDigest
	}
	if (row.replaces || p.Rescale.Path == policy.RescaleByUpgrade) && p.Submit.NewJobID != "" {
		c.adopt(st, now)
	} else if stoppedOld(p) && p.Replace.PreviousJobID == st.JobID {
		// The action stopped (or found ended) the job and started none:
		// the job is known ended, whatever a cached answer says next.
		st.JobState = p.Replace.Observed.State
	}
	if h := p.HandledRestore(); h != "" && (st.Action == ActionUpgrade || st.Action == ActionDeploy) {
		st.RestoreHandled = h
	}
	c.stopped(st)
	c.applyOutcome(spec, st, row, before, now)
	tornDown := st.Action == ActionTeardown && deleted(st)
	if tornDown {
		st.Deleted = true
	}
	// The action no longer is in flight: the status says where the job
	// stands, as far as this call knows.
	st.Situation, st.Settled = situationLeft(st), false
	if tornDown {
		return c.keepNewest(ctx, st)
	}
	return nil
}

// stopped records the job a suspend or a teardown stopped as stopped:
// its state is read again when it is deployed (a globally terminal one
// is kept), and a Deployer's cluster went with it (PhaseDeleteCluster).
func (c *Controller) stopped(st *JobStatus) {
	p := &st.Progress
	if st.Action != ActionSuspend && st.Action != ActionTeardown || p.Outcome != OutcomeSucceeded && !p.Stopped() {
		return
	}
	st.JobState = ""
	if p.Replace.Observed.State.IsGloballyTerminal() {
		st.JobState = p.Replace.Observed.State
	}
	if c.Deployer != nil {
		st.Cluster = Cluster{}
	}
}

// keepReplaced records in the history the savepoint taken, which the
// action's Progress held completed before this step and no longer holds:
// a later savepoint of the same action (a blue/green upgrade's stop of
// the old job with a savepoint, after the one its new job started from)
// replaced it. Flink completed it at the action's trigger; retention can
// dispose of it only once the history names it, also when the action
// then ends otherwise (aborted, timed out) or a later action moves
// Latest and UpgradeFrom past it. It is recorded in the status written
// with the step that replaced it, so no lost write separates the two.
// Latest is the action's to set once it ended.
func keepReplaced(st *JobStatus, taken savepoint.Status) {
	if taken.Location == "" || st.Progress.Savepoint.Status.TriggerID == taken.TriggerID {
		return
	}
	if rec, ok := savepoint.RecordOf(taken); ok {
		st.Savepoints = st.Savepoints.Add(rec)
	}
}

// recordTaken records the savepoint the ended action took, or the
// newest state of a job a suspend or teardown found ended.
func (c *Controller) recordTaken(st *JobStatus) {
	p := &st.Progress
	rec, ok := p.Record()
	if ok && rec.Location != "" {
		c.recordSavepoint(st, rec)
		if st.Action == ActionTeardown && rec.Location == teardownRecord(p).Location {
			// A Delete's final savepoint is the job's newest state, also
			// when a record imported while it stopped the job has a
			// later time (the savepoint is timed from its trigger).
			st.Latest = rec
		}
	}
	if (st.Action == ActionSuspend || st.Action == ActionTeardown) && p.Replace.RestoreFrom != "" {
		// A job that had ended: its newest state, a savepoint it ended
		// with or its retained checkpoint, is its restore point; also
		// when a savepoint completed before the job failed while it
		// stopped and its retained checkpoint is newer.
		if cp := teardownRecord(p); cp.Location != rec.Location || !ok {
			c.recordSavepoint(st, cp)
		}
	}
}

// applyOutcome writes what the action's row says of its outcome, and
// the state to report.
func (c *Controller) applyOutcome(spec JobSpec, st *JobStatus, row actionRow, before JobTemplate, now time.Time) {
	p := &st.Progress
	o := p.Outcome
	switch {
	case o == OutcomeSucceeded:
		if row.succeeded != nil {
			row.succeeded(c, spec, st, before, now)
		}
		c.setDone(st, row, ActionReason(st.Action, o), p.Reason)
	case o == OutcomeNotNeeded:
		c.set(st, st.State, ActionReason(st.Action, o), p.Reason)
	default:
		if row.failed != nil {
			row.failed(c, st, o, now)
		}
		c.setFailed(st, row, o)
	}
}

// setDone reports an action that succeeded.
func (c *Controller) setDone(st *JobStatus, row actionRow, reason, why string) {
	if row.background {
		c.set(st, policy.Running, ReasonRunning, "job "+string(st.JobID)+" runs; "+why)
		return
	}
	c.set(st, row.done, reason, why)
}

// setFailed reports an action that did not succeed: the job runs on
// beside a background action; a deploy whose job never ran failed.
func (c *Controller) setFailed(st *JobStatus, row actionRow, o Outcome) {
	p := &st.Progress
	switch {
	case row.background:
		// The job runs on; the failure is in the message and the
		// action's transition.
		c.set(st, policy.Running, ReasonRunning, fmt.Sprintf("job %s runs; %s %s: %s", st.JobID, st.Action, o, p.Reason))
	case st.Action == ActionTeardown && deleted(st):
		c.set(st, policy.Deleted, ActionReason(st.Action, o), p.Reason)
	case st.Action == ActionSuspend && st.Suspended:
		c.set(st, policy.Suspended, ActionReason(st.Action, o), p.Reason)
	case showsJobLeft(st):
		// No job was started: the job is as the action left it (as it
		// was, when it was refused), not in the action's own state.
		state, missing := leftJob(st)
		c.set(st, leftState(st, state, missing), ActionReason(st.Action, o), p.Reason)
	case o == OutcomeSubmitFailed || o == OutcomeJobFailed || st.Action == ActionDeploy:
		c.set(st, policy.DeployFailed, ActionReason(st.Action, o), p.Reason)
	default:
		c.set(st, st.State, ActionReason(st.Action, o), p.Reason)
	}
}

// showsJobLeft reports whether the state setFailed reports for st's
// action, which ended without success, is that of the deployment's job
// as the action left it: an action in place of the job (not beside it,
// nor a deploy, a suspend or a delete that carried out its stop) that
// started no job, and none that Flink refused or that failed.
func showsJobLeft(st *JobStatus) bool {
	p := &st.Progress
	switch {
	case actions[st.Action].background, st.Action == ActionTeardown && deleted(st), st.Action == ActionSuspend && st.Suspended,
		p.Outcome == OutcomeSubmitFailed, p.Outcome == OutcomeJobFailed, st.Action == ActionDeploy:
		return false
	}
	return p.Submit.NewJobID == ""
}

// leftJob is the state of the deployment's job once its action ended in
// this call: as the action last read it (missing: Flink did not know
// it), or, when the action read it not, as the call that started the
// action recorded it.
func leftJob(st *JobStatus) (flinkapi.JobState, bool) {
	p := &st.Progress
	if p.Submit.NewJobID == "" && p.Replace.PreviousJobID != "" && p.Replace.PreviousJobID == st.JobID && (p.Replace.Observed.State != "" || p.Replace.Observed.Missing) {
		return p.Replace.Observed.State, p.Replace.Observed.Missing
	}
	return st.JobState, false
}

// leftState is the deployment state of the job an action that started
// none left, in state (or missing).
func leftState(st *JobStatus, state flinkapi.JobState, missing bool) policy.DeploymentState {
	obs := policy.Observations{JobManagerReachable: true}
	switch {
	case st.JobID == "":
		return policy.DeployFailed // nothing was deployed
	case state != "":
		obs.Job = &policy.Job{ID: st.JobID, State: state}
	case !missing:
		return policy.Unknown // read at the next call
	}
	return policy.DeploymentStateOf(obs, policy.Recorded{JobID: st.JobID})
}

// situationLeft is the job's situation once its action ended in this
// call, as far as the call knows it without reading the job again: no
// longer ActionInFlight. Empty when only the next call's observation can
// tell (a new job not seen running, a job whose state is not known).
func situationLeft(st *JobStatus) Situation {
	switch {
	case deleted(st):
		return SituationDeleted
	case st.Suspended:
		return SituationSuspended
	case st.JobID == "":
		return SituationNeverDeployed
	}
	state, missing := leftJob(st)
	if missing {
		return SituationLost
	}
	return situationOfJobState(state) // empty: FINISHED (how, the checkpoint history tells) or not known
}

// adopt makes the job the action submitted (or may have submitted, or
// adopted) the deployment's job, so that a retry never starts a second
// one, and records the state it started from.
func (c *Controller) adopt(st *JobStatus, now time.Time) {
	p := &st.Progress
	c.noteReplaced(st)
	if st.JobID != p.Submit.NewJobID && c.Storage == nil && latestRanOn(st) && p.Replace.RestoreFrom != st.Latest.Location {
		// The checkpoint recorded while the replaced job ran on is no
		// restore point once another job is the deployment's: no later
		// reading of the replaced job tells whether Flink discarded it.
		st.Latest = newestRecord(st.Savepoints.Records)
	}
	if st.JobID != p.Submit.NewJobID {
		// The new job earns stability of its own (JobStatus.StableJobID):
		// Stable stays the job's that earned it, also in a status an
		// earlier release wrote (the job it recorded).
		st.StableJobID = st.stableJob()
		st.Health, st.JobState = policy.HealthHistory{}, ""
		if p.Outcome == OutcomeSucceeded {
			st.JobState = "RUNNING" // the operation saw it RUNNING
		}
	}
	if st.JobID != p.Submit.NewJobID || p.Replace.RestoreFrom != "" {
		st.RestoredFrom = p.Replace.RestoreFrom
	}
	st.JobID, st.Deployed, st.DeployedAt, st.Suspended = p.Submit.NewJobID, st.Target, now, false
	if p.Submit.Adopted {
		// A job an earlier run started, found under the id derived from
		// the job it replaced: the deployment's, but what it runs is
		// unknown (that run's records were lost, and the spec may have
		// changed since). It is never reported as running the target:
		// with no template known, the next call deploys the spec to it.
		st.Deployed = JobTemplate{}
	}
	if c.Deployer != nil {
		st.Cluster = p.Submit.Cluster // the old one is deleted (PhaseDeleteCluster)
	}
	if p.Outcome != OutcomeSucceeded {
		// A job that failed or was not seen running: the path it was
		// given may be one Flink refused, never a restore point.
		return
	}
	startedFrom(st)
}

// startedFrom records the state the new job of the action that ended
// in st, which succeeded, started from: the rollback's state (UpgradeFrom)
// and, when it is the newest, Latest.
func startedFrom(st *JobStatus) {
	p := &st.Progress
	if p.Replace.RestoreFrom != "" && (st.Action == ActionUpgrade || st.Action == ActionDeploy || st.Action == ActionBlueGreen) {
		// The state the template before wrote: what a rollback to it
		// restores (never the state a new template wrote since).
		st.UpgradeFrom = savepoint.Record{Location: p.Replace.RestoreFrom, Time: restoreTime(p), JobID: p.Replace.PreviousJobID}
	}
	rec := restoredRecord(p)
	switch {
	case rec.Location == "":
	case p.Replace.RestoreFrom == p.Replace.Request.Path && !p.Replace.Request.IsZero():
		// A restore the user asked for: its state is the job's newest,
		// also when it is older than the savepoint it replaces.
		st.Latest = rec
	case st.Latest.Location == "" || rec.Time.After(st.Latest.Time):
		// Until it completes a checkpoint, the new job's newest state
		// is the state it started from: a restart of a job lost before
		// then restores it.
		st.Latest = rec
	}
}

// keepNewest makes sure a finished Delete leaves the job's newest state
// in the store: the teardown recorded what it took or found; when it
// found nothing newer (the job had ended without state), the status's
// latest savepoint is recorded. Without a store, the status says that
// nothing keeps it.
func (c *Controller) keepNewest(ctx context.Context, st *JobStatus) error {
	if c.Storage == nil && latestRanOn(st) {
		// A checkpoint recorded while the job ran on, which no reading
		// of the teardown showed retained: no restore point for a later
		// deploy (Flink discarded it once the next one completed).
		st.Latest = newestRecord(st.Savepoints.Records)
	}
	if st.Latest.Location == "" {
		return nil
	}
	if c.Store == nil || c.Name == "" {
		st.Reason = ReasonDeletedStateNotKept
		st.Message = "the job is deleted; no restore-point store keeps its newest state " + st.Latest.Location +
			" (set Controller.Store and Name to start a later deploy from it)"
		return nil
	}
	rec, ok, err := c.Store.Get(ctx, c.Name)
	if err != nil {
		return fmt.Errorf("lifecycle: reading the restore point of %q: %w", c.Name, err)
	}
	if ok && (rec.Location == st.Latest.Location || rec.Time.After(st.Latest.Time)) {
		return nil
	}
	if err := c.Store.Put(ctx, c.Name, st.Latest); err != nil {
		return fmt.Errorf("lifecycle: recording the savepoint of %q: %w", c.Name, err)
	}
	return nil
}

// storeFor is the restore-point store the operations of st read the
// newest state from: none when the status's latest state is the one a
// restore request chose, which wins over a newer one in the store.
func (c *Controller) storeFor(st *JobStatus) RestorePointStore {
	if as := st.ActionSpec; as != nil && as.Restore.Token != "" && as.Restore.Token == st.RestoreHandled &&
		as.Restore.Path == st.Latest.Location {
		return nil
	}
	return c.Store
}

// act carries out plan: it records what the observation showed, then
// starts the planned action, steps the one in flight, or reports the
// job's state and does what is due beside the running job (a sample of
// the autoscaler, a triggered checkpoint).
func (c *Controller) act(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs Observation, plan Plan, now time.Time) (Result, error) {
	c.record(ctx, api, spec, st, obs, plan, now)
	st.Situation, st.Settled, st.Verdict = plan.Situation, plan.Settled, plan.Verdict
	c.takeRequest(spec, st, plan)
	switch {
	case plan.InFlight:
		return c.step(ctx, spec, st, now)
	case plan.Action == ActionHealthRestart:
		st.Target = st.Deployed
		st.Action, st.Progress, st.RetryAt, st.ActionSpec = ActionHealthRestart, Progress{}, time.Time{}, spec.DeepCopy()
		st.Progress.Replace.Request = healthRequest(plan.RestorePoint, now) // recorded before the first step, which keeps it
		return c.step(ctx, spec, st, now)
	case plan.Action == ActionAdopt:
		return c.adoptJob(ctx, spec, st, obs, now)
	case plan.Action != "":
		return c.start(ctx, spec, st, plan.Action, plan.Target, now, observedPreflight(plan.Action, st, obs))
	}
	c.set(st, plan.State, plan.Reason, plan.Message)
	if plan.Dispose != "" && obs.Requests < MaxRequestsPerCall {
		obs.Requests++
		next := func(kept ...string) (string, time.Duration) { return c.nextDisposal(spec, st, &plan, now, kept...), 0 }
		switch _, w, err := c.disposeChecked(ctx, spec, st, now, next); {
		case err != nil:
			// Nothing is sent until the store says what it keeps.
			plan.RequeueAfter = min(plan.RequeueAfter, c.retry())
		case w > 0:
			plan.RequeueAfter = min(plan.RequeueAfter, w)
		}
	} else if plan.Dispose == "" {
		c.dropKeptDisposal(ctx, spec, st, nil)
	}
	if plan.Situation != SituationUnreachable {
		if w := c.lookLate(ctx, api, st, &obs, now); w > 0 {
			plan.RequeueAfter = min(plan.RequeueAfter, w)
		}
	}
	if plan.Situation != SituationRunning || obs.Job == nil {
		return Result{RequeueAfter: c.bounded(plan.RequeueAfter)}, nil
	}
	c.cleanupRetained(ctx, spec, st, obs, plan)
	return c.beside(ctx, api, spec, st, obs, plan, now)
}

// beside does what is due beside the running job: a sample of the
// autoscaler, which may start a rescale, within MaxRequestsPerCall.
func (c *Controller) beside(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs Observation, plan Plan, now time.Time) (Result, error) {
	if spec.Autoscale.Enabled && plan.Settled && obs.Requests < MaxRequestsPerCall {
		if r, ok := c.autoscale(ctx, api, spec, st, obs.Job, now); ok && r.Change() {
			return c.startAutoscale(ctx, spec, st, r, now)
		}
	}
	return Result{RequeueAfter: c.bounded(plan.RequeueAfter)}, nil
}

// retention is the retention of p, keeping what the deployment may still
// need: the restore point of the running job and of a rollback. MaxCount
// and MaxAge bound every savepoint the deployment took, whatever its
// reason (periodic, update, a user's request, stop, restart, delete):
// DisposeUpdate no longer keeps update savepoints. Imported savepoints
// (savepoint.ReasonImported), which the deployment did not take, are
// kept unless DisposeUser allows their disposal; kept, they count
// towards MaxCount.
func (c *Controller) retention(p SavepointPolicy, st *JobStatus) savepoint.RetentionOptions {
	r := savepoint.RetentionOptions{MaxCount: p.MaxCount, MaxAge: p.MaxAge.Std(), DisposeUpdate: true, DisposeUser: true}
	for _, loc := range []string{st.Latest.Location, st.UpgradeFrom.Location, st.Progress.Replace.RestoreFrom} {
		if loc != "" {
			r.InUse = append(r.InUse, loc)
		}
	}
	if !p.DisposeUser {
		for _, rec := range st.Savepoints.Records {
			if rec.Reason == savepoint.ReasonImported {
				r.InUse = append(r.InUse, rec.Location)
			}
		}
	}
	return r
}

// healthRequest is the restore request of a restart of an unhealthy job:
// from the chosen restore point, cancelling the job without a savepoint.
func healthRequest(rp savepoint.Record, now time.Time) policy.RestoreRequest {
	return policy.RestoreRequest{Path: rp.Location, Token: "health:" + rp.Location + ":" + now.UTC().Format(time.RFC3339Nano),
		Time: rp.Time, CancelWithoutSavepoint: true}
}

// upgrade is the Upgrade of the Deploy, Upgrade, HealthRestart and
// Rollback actions (and of a Rescale through an upgrade).
func (c *Controller) upgrade(spec JobSpec, st *JobStatus, env Env) *Upgrade {
	u := &Upgrade{Env: env, Job: st.JobID, Policy: spec.Update, Latest: st.Latest, Store: c.storeFor(st), Name: c.Name,
		JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile, Run: st.Target.run(), Deployer: c.Deployer}
	if c.Deployer != nil {
		u.Cluster = st.Cluster
	}
	u.detached, u.namespace = detachedFrom(st), c.Namespace
	u.storage, u.latestRanOn, u.seen = c.Storage, latestRanOn(st), checkpointSeen(st)
	if c.Deployer == nil && st.Target.JarID == "" {
		upgradeJar(u, spec, st)
	}
	upgradeOfAction(u, spec, st)
	return u
}

// upgradeJar sets the build u is to run from a jar file: its digest, and
// whether the recorded upload of the stable build is to be checked
// before the old job is touched.
func upgradeJar(u *Upgrade, spec JobSpec, st *JobStatus) {
	u.digest = st.Target.JarDigest // the build to run; the file may hold another since
	u.checkJar = u.JarID != "" && u.JarID == stableJar(st.Target, st) && u.JarID != st.JarID
	if u.checkJar && spec.Job.JarFile == st.Target.JarFile && spec.Job.JarDigest == st.Target.JarDigest {
		// The file holds that build again (as the action's spec
		// read it): uploaded anew, whether or not the old upload
		// is still there.
		u.JarID, u.checkJar = "", false
	}
}

// upgradeOfAction sets what u does for st.Action: where it restores
// from, whether it is a first deploy, and its preflight.
func upgradeOfAction(u *Upgrade, spec JobSpec, st *JobStatus) {
	switch st.Action {
	case ActionDeploy:
		// Nothing ran before, or a bounded job that finished runs again.
		u.FirstDeploy = st.Deployed.IsZero() && st.Latest.Location == "" || finished(st)
		u.Restore, u.RestoreHandled = spec.Restore, st.RestoreHandled
		u.Preflight = &spec.Preflight
	case ActionUpgrade:
		u.Restore, u.RestoreHandled = spec.Restore, st.RestoreHandled
		u.Preflight = &spec.Preflight
		// A bounded job that finished runs its new Job afresh.
		u.FirstDeploy = finished(st)
	case ActionRescale, ActionAutoscale:
		u.Preflight = &spec.Preflight // through an upgrade: the new parallelism against the slots and the maximum
	case ActionHealthRestart:
		u.Restore = st.Progress.Replace.Request
	case ActionRestartRequest:
		rp := spec.Restart
		u.restartDown = &rp
	case ActionRollback:
		if st.UpgradeFrom.Location == "" {
			break // a stateless update: back without state
		}
		u.Restore = policy.RestoreRequest{Path: st.UpgradeFrom.Location, Token: "rollback:" + st.Deployed.Fingerprint() + ":" + st.UpgradeFrom.Location,
			Time: st.UpgradeFrom.Time, CheckAge: true, CancelWithoutSavepoint: true}
	}
}

// checkpointSeen is the checkpoint of the deployment's job that the
// Controller last saw complete (JobStatus.Checkpoint: a periodic trigger
// or a checkpoint request); zero: none.
func checkpointSeen(st *JobStatus) seenCheckpoint {
	cp := st.Checkpoint
	if cp.JobID == "" || cp.JobID != st.JobID || cp.CheckpointID <= 0 || cp.CompletedAt.IsZero() {
		return seenCheckpoint{}
	}
	return seenCheckpoint{job: cp.JobID, id: cp.CheckpointID, at: cp.CompletedAt}
}
