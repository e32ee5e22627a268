package lifecycle

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// PlanFor is the Controller's decision for a job: a pure function of the
// spec, the stored status, what was observed of the job and the time. It
// names the job's situation and returns the action a Reconcile would
// start (or step) with the state it would restore from, or the state it
// would report, and why it would be blocked. It sends no request and
// changes nothing; Controller.Plan observes the job and calls it.
// spec must be valid (JobSpec.Validate).
func (c *Controller) PlanFor(spec JobSpec, st JobStatus, obs Observation, now time.Time) Plan {
	spec = spec.effective(&st)
	p := c.planFor(spec, st, obs, now)
	p.Dispose = c.nextDisposal(spec, &st, &p, now)
	if n := givenUp(&st); n > 0 && p.Action == "" && !p.InFlight {
		// Reported until a caller deals with them (see savepoint.Disposal).
		p.Message += fmt.Sprintf("; %d savepoints could not be disposed of after %d attempts and stay on storage (see savepoints)", n, MaxDisposeAttempts)
	}
	return p
}

// planFor is PlanFor without the savepoint ledger's disposal.
func (c *Controller) planFor(spec JobSpec, st JobStatus, obs Observation, now time.Time) Plan {
	sit := situationOf(spec, &st, obs)
	p := Plan{Situation: sit, Mode: spec.Update.WithDefaults().Mode}
	if sit == SituationInFlight {
		as := st.actionSpec(spec)
		p.Action, p.InFlight, p.Target, p.Mode = st.Action, true, st.Target, as.Update.WithDefaults().Mode
		p.State, p.Reason = c.inFlightState(&st), ActionReason(st.Action, "")
		return p
	}
	if ap, ok := c.planAdopt(spec, &st, obs, p); ok {
		return ap
	}
	if spec.State == DesiredSuspended {
		return c.requestsWaiting(spec, &st, c.planSuspended(spec, &st, obs, p))
	}
	if a, target := c.desired(spec, &st, obs, sit); a != "" {
		if c.restartFirst(spec, &st, obs, sit, a, now) {
			p.RequeueAfter = c.poll()
			return c.planDown(spec, &st, obs, now, p)
		}
		return c.planStart(spec, &st, obs, now, p, a, target)
	}
	return c.requestsWaiting(spec, &st, c.planAtRest(spec, &st, obs, now, p))
}

// desired is the action the spec asks for whatever the job's health: a
// deploy, or the change of a new Job or restore request.
func (c *Controller) desired(spec JobSpec, st *JobStatus, obs Observation, sit Situation) (JobAction, JobTemplate) {
	switch {
	case sit == SituationNeverDeployed, sit == SituationDeleted, sit == SituationSuspended:
		return ActionDeploy, spec.Job
	case c.refusedUpgrade(spec, st):
		return ActionRollback, st.Stable
	case !spec.Job.equal(st.Deployed) && spec.Job.Fingerprint() != st.FailedJob:
		return c.change(spec, st, sit), spec.Job
	case spec.Restore.Pending(st.RestoreHandled):
		return ActionUpgrade, spec.Job
	case sit == SituationStoppedWithSavepoint, sit == SituationStoppedExternally:
		// A streaming job stopped with a savepoint while the spec says
		// Running: started again from that savepoint, its newest state.
		return ActionDeploy, st.Deployed
	}
	return "", JobTemplate{}
}

// change is the action that carries a new Job to the job: a rescale when
// only the parallelism changed, a blue/green upgrade when enabled, else an
// upgrade. A job that does not run is upgraded, never rescaled or
// upgraded beside itself: there is nothing to keep running.
func (c *Controller) change(spec JobSpec, st *JobStatus, sit Situation) JobAction {
	if sit.down() || sit == SituationFinished || sit == SituationFinishUnconfirmed {
		return ActionUpgrade
	}
	if spec.Job.onlyParallelism(st.Deployed) && spec.Job.Parallelism > 0 {
		return ActionRescale
	}
	switch {
	case spec.BlueGreen.Canary && c.Deployer == nil && st.CanaryPassed == spec.Job.Fingerprint():
		return ActionUpgrade // its canary passed
	case spec.BlueGreen.Canary && c.Deployer == nil:
		return ActionCanary
	case spec.BlueGreen.Enabled:
		return ActionBlueGreen
	}
	return ActionUpgrade
}

// planStart plans the start of action a, unless the same action with the
// same spec failed and waits for its RetryAt.
func (c *Controller) planStart(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan, a JobAction, target JobTemplate) Plan {
	if c.waiting(spec, st, a, now) {
		p.State, p.Reason = c.waitingState(st, obs, now), ReasonRetryWait
		p.Message = fmt.Sprintf("%s ended %s at its last try; tried again at %s", st.Action, st.Progress.Outcome, st.RetryAt.UTC().Format(time.RFC3339))
		p.RequeueAfter = c.bounded(st.RetryAt.Sub(now))
		if st.Progress.Replace.Decision == policy.ReasonPreflightRefused {
			p.Blocked = st.Progress.Reason // the job is left as it is until the spec, or the cluster, changes
		}
		return p
	}
	p.Action, p.Target = a, target
	c.restorePoint(spec, st, obs, now, &p)
	return p
}

// waitingState is the state reported while the last action waits for
// its RetryAt: the state it ended with, but for an action that started
// no job and left the deployment's job as it found it (setFailed
// reported that job's state as the action last knew it, showsJobLeft):
// that job as observed now, which may have moved on since (a job then
// starting runs, or Flink lost it).
func (c *Controller) waitingState(st *JobStatus, obs Observation, now time.Time) policy.DeploymentState {
	if !obs.Read || !showsJobLeft(st) {
		return st.State
	}
	return policy.DeploymentStateOf(c.policyObservations(st, obs, now), policy.Recorded{JobID: st.JobID})
}

// waiting reports whether the last action did not succeed, is the one a
// would start again for the same spec, and waits until RetryAt.
func (c *Controller) waiting(spec JobSpec, st *JobStatus, a JobAction, now time.Time) bool {
	if !st.Progress.Done() || st.Progress.Outcome == OutcomeSucceeded || !now.Before(st.RetryAt) {
		return false
	}
	if !sameChange(st.Action, a) {
		return false
	}
	return c.retrying(spec, st)
}

// restorePoint fills in the state a start of p.Action would restore
// from: a new savepoint of a running job (modes Savepoint and LastState
// when it runs), else the newest state the status knows.
func (c *Controller) restorePoint(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p *Plan) {
	running := p.Situation.runs() || p.Situation == SituationUnreachable
	switch {
	case spec.Restore.Pending(st.RestoreHandled) && (p.Action == ActionUpgrade || p.Action == ActionDeploy):
		p.RestorePoint = savepoint.Record{Location: spec.Restore.Path, Time: spec.Restore.Time, Reason: savepoint.ReasonUser}
	case running && p.Action != ActionDeploy && p.Mode != policy.UpgradeStateless:
		p.NewSavepoint = p.Mode == policy.UpgradeSavepoint || p.Action == ActionBlueGreen || p.Action == ActionCanary
		if !p.NewSavepoint {
			p.RestorePoint = newest(st.Latest, checkpointRecord(obs))
		}
	case p.Mode == policy.UpgradeStateless && running:
	default:
		p.RestorePoint = newest(st.Latest, checkpointRecord(obs), terminating(obs))
	}
	if !p.RestorePoint.Time.IsZero() {
		p.RestoreAge = policy.Duration(now.Sub(p.RestorePoint.Time))
	}
}

// planSuspended plans a spec that asks for the job suspended.
func (c *Controller) planSuspended(spec JobSpec, st *JobStatus, obs Observation, p Plan) Plan {
	switch p.Situation {
	case SituationNeverDeployed, SituationSuspended, SituationDeleted:
		p.State, p.Reason, p.Message = policy.Suspended, ReasonSuspended, suspendedMessage(st.Latest)
		p.RequeueAfter = c.poll()
		return p
	case SituationStoppedWithSavepoint, SituationStoppedExternally:
		// Already stopped with a savepoint: suspended as it is.
		rec := terminating(obs)
		p.State, p.Reason, p.Message = policy.Suspended, ReasonSuspended, suspendedMessage(newest(st.Latest, rec))
		p.RequeueAfter = c.poll()
		return p
	}
	p.Action, p.Target = ActionSuspend, st.Deployed
	return p
}

func suspendedMessage(latest savepoint.Record) string {
	if latest.Location == "" {
		return "the job is suspended"
	}
	return "the job is suspended; it resumes from the savepoint " + latest.Location
}

// planAtRest plans a job whose spec is carried out: it is observed, and
// its state asks for a restart, a rollback, a restart of an unhealthy
// job, a savepoint or a disposal, or for nothing.
func (c *Controller) planAtRest(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan) Plan {
	p.RequeueAfter = c.poll()
	if c.planRequests(spec, st, obs, now, &p) {
		return p
	}
	switch p.Situation {
	case SituationUnreachable:
		p.State, p.Reason, p.Message = policy.Unknown, string(policy.ReasonJobManagerUnreachable), obs.Error
		if obs.Job != nil {
			p.Message = fmt.Sprintf("job %s is in state %s, which this release does not know", st.JobID, obs.Job.State)
		}
		return p
	case SituationFinished:
		p.State, p.Reason, p.Message = policy.Succeeded, string(policy.ReasonJobFinished), finishedMessage(st)
		return p
	case SituationFinishUnconfirmed:
		p.State, p.Reason = policy.Unknown, ReasonFinishUnconfirmed
		p.Message = "job " + string(st.JobID) + " FINISHED; its checkpoint history could not be read to tell whether a savepoint stopped it"
		p.RequeueAfter = min(c.poll(), c.Timing.poll()*5)
		return p
	case SituationRunning:
		return c.planRunning(spec, st, obs, now, p)
	case SituationStarting:
		if c.slotsShort(st, obs, &p) {
			return p
		}
	}
	return c.planDown(spec, st, obs, now, p)
}

// planDown plans a job that does not run: a rollback or a restart, as
// the policies say.
func (c *Controller) planDown(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan) Plan {
	pobs := c.policyObservations(st, obs, now)
	state := policy.DeploymentStateOf(pobs, policy.Recorded{JobID: st.JobID})
	if c.rollbackArmed(spec, st) && (p.Situation == SituationFailed || p.Situation == SituationLost) {
		if c.waiting(spec, st, ActionRollback, now) {
			p.State, p.Reason, p.RequeueAfter = state, ReasonRetryWait, c.bounded(st.RetryAt.Sub(now))
			return p
		}
		p.Action, p.Target = ActionRollback, st.Stable
		c.restorePoint(spec, st, obs, now, &p)
		return p
	}
	if p.Situation == SituationFailed && c.slotsShort(st, obs, &p) {
		return p // a restart could not run either
	}
	rd := policy.EvaluateRestart(spec.Restart, pobs, now)
	if rd.Action == policy.ActionRestart {
		if c.waiting(spec, st, ActionRestart, now) {
			p.State, p.Reason, p.RequeueAfter = state, ReasonRetryWait, c.bounded(st.RetryAt.Sub(now))
			return p
		}
		p.Action, p.Target = ActionRestart, st.Deployed
		p.RestorePoint = restoreRecord(rd.RestorePoint)
		if !p.RestorePoint.Time.IsZero() {
			p.RestoreAge = policy.Duration(now.Sub(p.RestorePoint.Time))
		}
		return p
	}
	p.State, p.Reason = state, string(rd.Reason)
	p.Message = fmt.Sprintf("job %s is %s: %s", st.JobID, jobStateName(obs.Job), rd.Message())
	if rd.RequeueAfter > 0 {
		p.RequeueAfter = min(rd.RequeueAfter, c.poll())
	}
	return p
}

// rollbackArmed reports whether a rollback to the last stable job may
// start: enabled, a stable job known and not the one deployed, and a
// state to go back with (the upgrade's restore point), or none needed
// (stateless updates).
func (c *Controller) rollbackArmed(spec JobSpec, st *JobStatus) bool {
	return spec.Rollback.Enabled && !st.Stable.IsZero() && !st.Deployed.equal(st.Stable) &&
		(st.UpgradeFrom.Location != "" || spec.Update.Mode == policy.UpgradeStateless)
}

// restartFirst reports whether the upgrade a that carries a new Job to a
// job that is down cannot be carried out now for lack of state (the
// update policy blocks it: NoRecentSavepoint, NoRecentState) while the
// restart policy brings the deployed template back from its newest state
// (now, or after its backoff): then the job is restarted first, and the
// change follows as the update mode says once it runs.
func (c *Controller) restartFirst(spec JobSpec, st *JobStatus, obs Observation, sit Situation, a JobAction, now time.Time) bool {
	if a != ActionUpgrade || !sit.down() || st.Deployed.IsZero() || spec.Restore.Pending(st.RestoreHandled) || finished(st) {
		return false
	}
	pobs := c.policyObservations(st, obs, now)
	pobs.SpecChanged = true
	if ud := policy.EvaluateUpdate(spec.Update, pobs, now); ud.Action != policy.ActionBlock ||
		ud.Reason != policy.ReasonNoRecentSavepoint && ud.Reason != policy.ReasonNoRecentState {
		return false
	}
	rd := policy.EvaluateRestart(spec.Restart, pobs, now)
	return rd.Action == policy.ActionRestart || rd.Reason == policy.ReasonRestartBackoff
}

// refusedUpgrade reports whether the last action was an upgrade to the
// spec's Job whose new job Flink refused (SubmitFailed, JobFailed) once
// the old job had stopped, and which the rollback policy takes back to
// the last stable template from the state it started from (recorded
// when it ended: UpgradeFrom, FailedJob): at once, not after RetryAt.
func (c *Controller) refusedUpgrade(spec JobSpec, st *JobStatus) bool {
	p := &st.Progress
	return st.Action == ActionUpgrade && p.Done() && (p.Outcome == OutcomeSubmitFailed || p.Outcome == OutcomeJobFailed) && stoppedOld(p) &&
		spec.Job.equal(st.Target) && st.FailedJob == st.Target.Fingerprint() && spec.Rollback.Enabled && !st.Stable.IsZero() &&
		!st.Stable.equal(st.Target) && (st.UpgradeFrom.Location != "" || spec.Update.Mode == policy.UpgradeStateless)
}

// policyObservations are obs as package policy reads them.
func (c *Controller) policyObservations(st *JobStatus, obs Observation, now time.Time) policy.Observations {
	po := policy.Observations{JobManagerReachable: obs.Reachable, LastContact: now, LatestSavepoint: st.Latest,
		Restarts: st.Restarts, LastRestart: st.LastRestart}
	if d := obs.Job; d != nil {
		po.Job = &policy.Job{ID: d.ID, State: d.State, StartTime: d.StartTime, EndTime: d.EndTime, StateSince: d.Timestamps[d.State]}
	}
	if cp := latestCheckpoint(obs.Checkpoints); cp.Path != "" {
		po.LatestCheckpoint = cp
	}
	if rec := terminating(obs); rec.Location != "" && rec.Time.After(po.LatestSavepoint.Time) {
		po.LatestSavepoint = rec
	}
	return po
}

// planRunning plans a running job: whether it became stable, a rollback
// of one that does not, a restart of an unhealthy one, too few slots for
// its tasks, and the savepoints and disposals that are due.
func (c *Controller) planRunning(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan) Plan {
	d := obs.Job
	pending := !st.runsStably() && !stableNow(d, obs)
	if pending && c.rollbackArmed(spec, st) && !now.Before(st.DeployedAt.Add(orDefault(spec.Rollback.ReadinessTimeout.Std(), DefaultReadinessTimeout))) {
		p.Action, p.Target = ActionRollback, st.Stable
		c.restorePoint(spec, st, obs, now, &p)
		return p
	}
	c.runningReason(spec, st, obs, pending, &p)
	if p.Reason == ReasonWaitingForStable {
		p.RequeueAfter = min(p.RequeueAfter, c.stableWait(st, now))
	}
	if c.slotsShort(st, obs, &p) {
		return p
	}
	if spec.Health.Action != "" && !obs.HealthDeferred {
		if hd := c.health(spec, st, obs, now); hd.Action == policy.ActionCancelFirst && hd.RestorePoint.IsSet() {
			p.Action, p.Target = ActionHealthRestart, st.Deployed
			p.RestorePoint = restoreRecord(hd.RestorePoint)
			p.RestoreAge = policy.Duration(now.Sub(p.RestorePoint.Time))
			return p
		} else if hd.State == policy.Unhealthy {
			p.Reason, p.Message = string(hd.Reason), hd.Message()
		}
	}
	if p.Reason == ReasonWaitingForStable {
		// A triggered checkpoint makes the job stable sooner.
		return c.planCheckpoint(spec, st, obs, now, p)
	}
	if p.Reason != ReasonRunning {
		return p
	}
	p.Settled = true
	p.RequeueAfter = c.atRestRequeue(spec, st, obs, now)
	return c.planDue(spec, st, obs, now, p)
}

// stableWait is when to look again at a job waiting to become stable:
// Timing.Lag times the time since it was deployed, so that its first
// checkpoint is seen about as late as the operations see their changes,
// at least Timing.Cache (Flink answers the job's details and checkpoint
// statistics from its cache for that long) and at most PollInterval.
func (c *Controller) stableWait(st *JobStatus, now time.Time) time.Duration {
	p := c.poll()
	return lagDelay(c.Timing.lag(), st.DeployedAt, now, min(c.Timing.cache(), p), p)
}

// runningReason is the reason a running job reports: Running, or why it
// does not run the spec's job stably.
func (c *Controller) runningReason(spec JobSpec, st *JobStatus, obs Observation, pending bool, p *Plan) {
	p.State, p.Reason, p.Message = policy.Running, ReasonRunning, "job "+string(st.JobID)+" runs the spec's job"
	switch {
	case st.FailedJob != "" && spec.Job.Fingerprint() == st.FailedJob && !spec.Job.equal(st.Deployed) && st.Action == ActionBlueGreen:
		p.Reason = ReasonBlueGreenAborted
		p.Message = fmt.Sprintf("job %s runs the previous job: the spec's job did not become healthy beside it (%s); change it to try again",
			st.JobID, st.Progress.Reason)
	case st.FailedJob != "" && spec.Job.Fingerprint() == st.FailedJob && !spec.Job.equal(st.Deployed) && st.Action == ActionCanary:
		p.Reason = ReasonCanaryFailed
		p.Message = fmt.Sprintf("job %s runs the previous job, untouched: the spec's job failed its restore canary (%s); change it to try again",
			st.JobID, st.Progress.Reason)
	case st.FailedJob != "" && spec.Job.Fingerprint() == st.FailedJob && !spec.Job.equal(st.Deployed):
		p.Reason = ReasonRolledBack
		p.Message = fmt.Sprintf("job %s runs the last stable job: the spec's job did not become stable and was rolled back; change it to try again", st.JobID)
	case pending:
		p.Reason = ReasonWaitingForStable
		p.Message = "job " + string(st.JobID) + " runs; it counts as stable once all its tasks run and a checkpoint completed"
		if obs.NoCheckpointing {
			p.Message = "job " + string(st.JobID) + " runs without checkpointing; it counts as stable once all its tasks run"
		}
	}
}

// planDue plans the savepoint, or else the triggered checkpoint, that
// is due beside the running job, or when to look again for the next
// one. (The retention's disposals are the ledger's: Plan.Dispose.)
func (c *Controller) planDue(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan) Plan {
	due, next := c.savepointDue(spec, st, obs.Job, now)
	if due {
		p.Action, p.Target = ActionSavepoint, st.Deployed
		return p
	}
	if !next.IsZero() {
		p.RequeueAfter = max(min(p.RequeueAfter, next.Sub(now)), soon)
	}
	return c.planCheckpoint(spec, st, obs, now, p)
}

// planCheckpoint plans the triggered checkpoint that is due beside the
// running job (JobSpec.Checkpoints), or when to look again.
func (c *Controller) planCheckpoint(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan) Plan {
	due, next := checkpointDue(spec, st, obs.Job, obs.Checkpoints, now)
	switch {
	case due:
		p.Action, p.Target = ActionCheckpoint, st.Deployed
	case next.IsZero():
	case !now.Before(next):
		// Due once every vertex runs.
		p.RequeueAfter = max(min(p.RequeueAfter, c.Timing.poll()), soon)
	default:
		p.RequeueAfter = max(min(p.RequeueAfter, next.Sub(now)), soon)
	}
	return p
}

// health is the health decision over the job's history with this
// observation's sample added (to a copy: act adds it to the status).
func (c *Controller) health(spec JobSpec, st *JobStatus, obs Observation, now time.Time) policy.HealthDecision {
	h := *st.Health.DeepCopy()
	h.Add(st.JobID, obs.Job.StartTime, healthSample(st, obs, now), spec.Health)
	return policy.EvaluateHealth(spec.Health, h, c.policyObservations(st, obs, now), now)
}

// healthSample is the health sample of the running job in obs.
func healthSample(st *JobStatus, obs Observation, now time.Time) policy.HealthSample {
	d := obs.Job
	s := policy.HealthSample{Time: now, State: d.State, StateSince: d.Timestamps[d.State], Restarts: obs.Restarts, SavepointFailures: st.SavepointFailures}
	if stats := obs.Checkpoints; stats != nil {
		s.CompletedCheckpoints = stats.Counts.Completed
		if lc := stats.LatestCompleted; lc != nil {
			s.LatestCheckpoint = lc.LatestAck
		}
	}
	return s
}

// stableNow reports whether the running job in obs is stable: all its
// tasks run and a checkpoint completed after its start, or it runs with
// checkpointing off.
func stableNow(d *flinkapi.JobDetails, obs Observation) bool {
	if !tasksRunning(d) {
		return false
	}
	return obs.NoCheckpointing || stable(d, obs.Checkpoints)
}

// inFlightState is the deployment state while st's action is in flight.
func (c *Controller) inFlightState(st *JobStatus) policy.DeploymentState {
	if row, ok := actions[st.Action]; ok {
		return row.during
	}
	return policy.Unknown
}

// newest is the newest of the records that name a location.
func newest(rs ...savepoint.Record) savepoint.Record {
	var n savepoint.Record
	for _, r := range rs {
		if r.Location != "" && (n.Location == "" || r.Time.After(n.Time)) {
			n = r
		}
	}
	return n
}

// checkpointRecord is the job's newest retained checkpoint in obs, as a
// record.
func checkpointRecord(obs Observation) savepoint.Record {
	cp := latestCheckpoint(obs.Checkpoints)
	if cp.Path == "" {
		return savepoint.Record{}
	}
	var job flinkapi.JobID
	if obs.Job != nil {
		job = obs.Job.ID
	}
	return savepoint.Record{Location: cp.Path, Time: cp.Time, JobID: job}
}

// terminating is the savepoint that ended the job in obs, if any.
func terminating(obs Observation) savepoint.Record {
	rec, _ := obs.terminatingSavepoint()
	return rec
}

// bounded caps a wait at the Controller's longest interval: a time in a
// stored status far ahead of the clock is never waited for.
func (c *Controller) bounded(d time.Duration) time.Duration {
	upper := max(c.poll(), c.retry())
	if c.Shared != nil && c.Shared.watching() {
		upper = max(upper, c.resync()*3/2) // atRestRequeue
	}
	return min(max(d, soon), upper)
}

// restoreRecord is the record of a policy's restore point.
func restoreRecord(r policy.RestorePoint) savepoint.Record {
	if r.Path == "" {
		return savepoint.Record{}
	}
	return savepoint.Record{Location: r.Path, Time: r.Time}
}

// slotsShort reports, in p, a job whose tasks wait for more task slots
// than the cluster has free.
func (c *Controller) slotsShort(st *JobStatus, obs Observation, p *Plan) bool {
	need, held := slotsNeeded(obs.Job)
	if obs.FreeSlots < 0 || need-held <= obs.FreeSlots {
		return false
	}
	p.Reason, p.State = ReasonNotEnoughSlots, policy.Deploying
	p.Blocked = fmt.Sprintf("job %s needs %d task slots, %d free of the cluster's %d (it holds %d)", st.JobID, need, obs.FreeSlots, obs.TotalSlots, held)
	p.Message = p.Blocked
	return true
}

// atRestRequeue is when to call a job back that runs at rest: while the
// shared overview is watched, at the job's next resync (resyncIn: about
// every Resync, the fleet's spread over it) or, when its health is
// judged, at its next health check (nextHealthSlot: every other poll
// interval, half of the fleet in each); else PollInterval; once Flink's
// cache expired when the overview showed a change its details did not.
func (c *Controller) atRestRequeue(spec JobSpec, st *JobStatus, obs Observation, now time.Time) time.Duration {
	if obs.OverviewChanged {
		// The details may be the cache's, older than the overview.
		return min(c.Timing.cache()+soon, c.poll())
	}
	if c.Shared == nil || !c.Shared.watching() || !c.atRest(spec, st) {
		return c.poll()
	}
	if spec.Health.Action != "" {
		return nextHealthSlot(st.JobID, now, c.poll())
	}
	return resyncIn(st.JobID, now, c.resync())
}

// resync is the Controller's Resync, at least PollInterval.
func (c *Controller) resync() time.Duration {
	return max(orDefault(c.Resync, DefaultResync), c.poll())
}

// stateUnread reports whether the suspend that ended in st left its
// job's state unread while the spec keeps state now: it recorded neither
// a savepoint nor a retained checkpoint of the job, because its deadline
// passed before it read them or because it ran under the Stateless mode
// (changed since). Delete then tears the job down again, which reads the
// ended job's retained checkpoint and records it, rather than keep the
// older restore point the status names.
func stateUnread(spec JobSpec, st *JobStatus) bool {
	p := &st.Progress
	if st.Action != ActionSuspend || !p.Done() || st.JobID == "" || spec.Update.Mode == policy.UpgradeStateless ||
		p.Savepoint.Location != "" || p.Replace.RestoreFrom != "" {
		return false
	}
	statelessThen := st.ActionSpec != nil && st.ActionSpec.Update.Mode == policy.UpgradeStateless
	return p.Outcome == OutcomeTimedOut || p.Outcome == OutcomeSucceeded && statelessThen
}

// retrying reports whether the spec asks for what it asked when the last
// action, which did not succeed, started: then that action waits until
// RetryAt. A spec changed since is tried at once.
func (c *Controller) retrying(spec JobSpec, st *JobStatus) bool {
	switch st.Action {
	case ActionSavepoint, ActionCheckpoint, ActionDispose:
		return false // they have their own schedule
	case ActionSuspend:
		return spec.State == DesiredSuspended
	}
	if as := st.ActionSpec; as != nil {
		// The Job the spec asked for when the action started: a spec
		// changed since, also back to the template deployed before, is a
		// new spec.
		return spec.Job.equal(as.Job)
	}
	// The template the action deployed (Upgrade, Rescale, Deploy), or the
	// one it replaced (Rollback, Restart, HealthRestart).
	return spec.Job.equal(st.Target) || spec.Job.equal(st.Deployed) || st.Target.IsZero()
}

func finishedMessage(st *JobStatus) string {
	msg := "job " + string(st.JobID) + " FINISHED"
	if !st.Result.EndTime.IsZero() {
		msg += " at " + st.Result.EndTime.UTC().Format(time.RFC3339)
	}
	if st.Result.NetRuntime > 0 {
		msg += " after " + st.Result.NetRuntime.Std().String()
	}
	return msg + "; a finished job is not restarted"
}

// savepointDue reports whether a periodic savepoint is due, and when the
// next one is.
func (c *Controller) savepointDue(spec JobSpec, st *JobStatus, d *flinkapi.JobDetails, now time.Time) (bool, time.Time) {
	in := savepoint.ScheduleInput{Interval: spec.Savepoints.Interval.Std(), JobState: d.State, JobStart: d.StartTime, Last: st.Latest}
	in.Cron, _ = spec.Savepoints.cron() // valid: Reconcile validated spec
	if st.Action == ActionSavepoint {
		in.Current = st.Progress.Savepoint.Status
	}
	if st.LateSavepoint.Pending() {
		// None is due until it is found or given up; its lookup says
		// when to call again.
		return false, time.Time{}
	}
	due, _, next := savepoint.Due(in, now)
	return due, next
}
