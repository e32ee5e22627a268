package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Defaults of the Controller's intervals.
const (
	// DefaultControllerPoll is how often a job at rest is observed.
	DefaultControllerPoll = 30 * time.Second
	// DefaultRetryInterval is how long after an action that did not
	// succeed the same spec is tried again.
	DefaultRetryInterval = time.Minute
)

// MaxRequestsPerCall bounds the REST requests of one call of Reconcile or
// Delete: one step of the action in flight (one request), or an
// observation of the job at rest (its details, its checkpoint statistics,
// its restart count and its exceptions, each only when needed).
const MaxRequestsPerCall = 4

// soon is the RequeueAfter for "at once": after a step that asks for no
// wait, or once an action ended and the job is to be observed again.
const soon = 10 * time.Millisecond

// Controller keeps one job as its JobSpec says: Reconcile observes the
// job, decides through package policy, starts the action the spec and
// the policies ask for (deploy, upgrade, rescale, autoscale, restart,
// restart of an unhealthy job, rollback, suspend, savepoint, disposal) or
// steps the one in flight, applies its outcome to the JobStatus, and says
// when to call again; Delete tears the job down. It never sleeps and holds no state of
// its own: everything is in the JobStatus, which the caller stores after
// every call. Build it anew whenever convenient.
type Controller struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Deployer, if set, starts new jobs instead of the jar run (an
	// application cluster; see Submit.Deployer).
	Deployer Deployer
	// Store and Name, if set, keep the final savepoint of a Delete under
	// Name; a job deployed later under that Name starts from it.
	Store RestorePointStore
	Name  string
	// PollInterval is how often a job at rest is observed
	// (DefaultControllerPoll); RetryInterval how long after an action that
	// did not succeed it may be tried again (DefaultRetryInterval).
	PollInterval  time.Duration
	RetryInterval time.Duration
}

func (c *Controller) clock() Clock { return clockOr(c.Clock) }

func (c *Controller) poll() time.Duration { return orDefault(c.PollInterval, DefaultControllerPoll) }

func (c *Controller) retry() time.Duration { return orDefault(c.RetryInterval, DefaultRetryInterval) }

// Reconcile moves the job one step towards spec: it steps the action in
// flight once, or observes the job at rest and starts the action the spec
// and its policies ask for. It sends at most MaxRequestsPerCall requests,
// records in st what the next request needs before sending it, and
// returns when to call again (Result.RequeueAfter; Done is never set;
// Outcome is set on the call in which an action ended: st.Action says
// which, st.Progress.Reason why). JobStatus.Converged tells when the spec
// is carried out.
// Store st before anything else, whatever the result. An invalid spec
// is reported in st (Reason InvalidSpec) and acted on not at all.
// Reconcile returns an error for a canceled context, a status of a newer
// format (ErrUnknownFormat), the errors of the operations' Step (among
// them flinkapi.ErrMisconfigured) and of the Store.
func (c *Controller) Reconcile(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	if err := c.begin(ctx, st); err != nil {
		return Result{}, err
	}
	now := c.clock().Now()
	if err := spec.Validate(); err != nil {
		c.set(st, st.State, "InvalidSpec", err.Error())
		return Result{RequeueAfter: c.poll()}, nil
	}
	spec = spec.effective(st)
	if st.InFlight() {
		return c.step(ctx, spec, st, now)
	}
	return c.decide(ctx, spec, st, now)
}

// Delete tears the job down: the action in flight ends first (each ends
// by its deadlines), then Teardown stops the job with a final savepoint,
// recorded under Name. It returns Done once nothing runs any more
// (Outcome Succeeded, or another one when the job had already ended
// without state to keep: Progress.Stopped), and otherwise when to call
// again: a teardown that left the job running (the policy keeps state
// and no savepoint could be taken) is tried again after RetryInterval.
func (c *Controller) Delete(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	if err := c.begin(ctx, st); err != nil {
		return Result{}, err
	}
	now := c.clock().Now()
	if st.InFlight() {
		return c.step(ctx, spec, st, now)
	}
	switch {
	case st.Action == ActionTeardown && st.Progress.Done() && (st.Progress.Outcome == OutcomeSucceeded || st.Progress.Stopped()):
		return Result{Done: true, Outcome: st.Progress.Outcome}, nil
	case st.JobID == "" && st.Action != ActionTeardown:
		// Nothing was ever deployed.
		c.set(st, policy.Unknown, "NotDeployed", "nothing was deployed")
		return Result{Done: true, Outcome: OutcomeNotNeeded}, nil
	case finished(st) && st.Action != ActionTeardown && (c.Deployer == nil || st.Cluster.IsZero()):
		// A bounded job that finished: nothing runs, no state to keep.
		c.set(st, policy.Succeeded, "Deleted", "job "+string(st.JobID)+" had FINISHED; nothing to stop")
		return Result{Done: true, Outcome: OutcomeSucceeded}, nil
	case st.Suspended && st.Action != ActionTeardown:
		// Stopped with a savepoint already: record it for a later
		// deploy under the name, nothing else to stop.
		if c.Store != nil && c.Name != "" && st.Latest.Location != "" {
			if err := c.Store.Put(ctx, c.Name, st.Latest); err != nil {
				return Result{RequeueAfter: c.retry()}, fmt.Errorf("lifecycle: recording the savepoint of %q: %w", c.Name, err)
			}
		}
		c.set(st, policy.Suspended, "Deleted", "the job was suspended with the savepoint "+st.Latest.Location)
		return Result{Done: true, Outcome: OutcomeSucceeded}, nil
	case st.Action == ActionTeardown && st.Progress.Done() && now.Before(st.RetryAt):
		return Result{RequeueAfter: st.RetryAt.Sub(now)}, nil
	}
	return c.start(ctx, spec, st, ActionTeardown, JobTemplate{}, now)
}

// ErrForeignStatus is returned, before any request, for a JobStatus that
// another deployment (another Controller.Name) wrote.
var ErrForeignStatus = errors.New("lifecycle: the stored job status belongs to another deployment")

// begin checks st's format and owner, and records the format this release
// writes and the owner.
func (c *Controller) begin(ctx context.Context, st *JobStatus) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := format.Check("lifecycle.JobStatus", st.FormatVersion, FormatVersion); err != nil {
		return err
	}
	if st.Name != "" && st.Name != c.Name {
		return fmt.Errorf("%w: it was written for %q, not for %q", ErrForeignStatus, st.Name, c.Name)
	}
	st.FormatVersion, st.Name = FormatVersion, c.Name
	return nil
}

// set records the deployment state, its stable reason and the message.
func (c *Controller) set(st *JobStatus, state policy.DeploymentState, reason, message string) {
	st.State, st.Reason, st.Message = state, reason, message
}

// decide observes the job at rest and starts the action its spec and
// policies ask for, if any.
func (c *Controller) decide(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) (Result, error) {
	if st.Progress.Done() && st.Progress.Outcome != OutcomeSucceeded && now.Before(st.RetryAt) && c.retrying(spec, st) {
		// The same spec is tried again after RetryAt; a new one at once.
		return Result{RequeueAfter: st.RetryAt.Sub(now)}, nil
	}
	switch {
	case spec.State == DesiredSuspended:
		if st.JobID == "" || st.Suspended {
			c.set(st, policy.Suspended, "Suspended", suspendedMessage(st))
			return Result{RequeueAfter: c.poll()}, nil
		}
		return c.start(ctx, spec, st, ActionSuspend, st.Deployed, now)
	case st.JobID == "" || st.Suspended:
		return c.start(ctx, spec, st, ActionDeploy, spec.Job, now)
	case !spec.Job.equal(st.Deployed):
		if spec.Job.Fingerprint() == st.FailedJob {
			break // rolled back: observe carries on with the stable job
		}
		if spec.Job.onlyParallelism(st.Deployed) && spec.Job.Parallelism > 0 {
			return c.start(ctx, spec, st, ActionRescale, spec.Job, now)
		}
		if spec.BlueGreen.Enabled {
			return c.start(ctx, spec, st, ActionBlueGreen, spec.Job, now)
		}
		return c.start(ctx, spec, st, ActionUpgrade, spec.Job, now)
	case spec.Restore.Pending(st.RestoreHandled):
		return c.start(ctx, spec, st, ActionUpgrade, spec.Job, now)
	}
	return c.observe(ctx, spec, st, now)
}

// retrying reports whether the spec asks for what it asked when the last
// action, which did not succeed, started: then that action waits until
// RetryAt. A spec changed since is tried at once.
func (c *Controller) retrying(spec JobSpec, st *JobStatus) bool {
	switch st.Action {
	case ActionSavepoint, ActionDispose:
		return false // they have their own schedule
	case ActionSuspend:
		return spec.State == DesiredSuspended
	}
	// The template the action deployed (Upgrade, Rescale, Deploy), or the
	// one it replaced (Rollback, Restart, HealthRestart).
	return spec.Job.equal(st.Target) || spec.Job.equal(st.Deployed) || st.Target.IsZero()
}

func suspendedMessage(st *JobStatus) string {
	if st.Latest.Location == "" {
		return "the job is suspended"
	}
	return "the job is suspended; it resumes from the savepoint " + st.Latest.Location
}

// observe reads the job at rest and starts what its state asks for: a
// restart or rollback of a failed job, a rollback of an upgraded job that
// does not become stable, a restart of an unhealthy job, a savepoint or a
// disposal that is due.
func (c *Controller) observe(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) (Result, error) {
	api, err := c.jobAPI(st)
	if err != nil {
		return Result{RequeueAfter: c.poll()}, err
	}
	d, err := api.Job(ctx, st.JobID)
	noted(ctx, err)
	switch {
	case errors.Is(err, flinkapi.ErrMisconfigured):
		return Result{RequeueAfter: c.poll()}, err
	case err != nil && !flinkapi.IsJobNotFound(err):
		st.JobState = ""
		c.set(st, policy.Unknown, string(policy.ReasonJobManagerUnreachable), errMessage(err))
		return Result{RequeueAfter: c.poll()}, nil
	}
	obs := policy.Observations{JobManagerReachable: true, LastContact: now, LatestSavepoint: st.Latest,
		Restarts: st.Restarts, LastRestart: st.LastRestart}
	st.JobState = ""
	if d != nil {
		st.JobState = d.State
		obs.Job = &policy.Job{ID: d.ID, State: d.State, StartTime: d.StartTime, EndTime: d.EndTime, StateSince: d.Timestamps[d.State]}
	}
	if d != nil && d.State == flinkapi.JobFinished && !finished(st) {
		c.recordResult(ctx, api, st, d)
	}
	if finished(st) && (d == nil || d.State == flinkapi.JobFinished) {
		// A bounded job's success, also once Flink forgot the job: never
		// restarted, never savepointed.
		c.set(st, policy.Succeeded, string(policy.ReasonJobFinished), finishedMessage(st))
		return Result{RequeueAfter: c.poll()}, nil
	}
	state := policy.DeploymentStateOf(obs, policy.Recorded{JobID: st.JobID})
	failing := d != nil && (d.State == flinkapi.JobFailed || d.State == flinkapi.JobFailing || d.State == flinkapi.JobRestarting)
	if failing {
		c.readFailure(ctx, api, st)
	}
	rollback := spec.Rollback.Enabled && !st.Stable.IsZero() && !st.Deployed.equal(st.Stable) && st.UpgradeFrom.Location != ""
	if state != policy.Running {
		if rollback && (state == policy.Failed || state == policy.Lost) {
			return c.start(ctx, spec, st, ActionRollback, st.Stable, now)
		}
		// A retained checkpoint is a restore point too; Restart checks
		// again that Flink keeps it.
		var stats *flinkapi.CheckpointStatistics
		if state == policy.Failed || state == policy.Lost || state == policy.Suspended {
			stats = c.readCheckpoints(ctx, api, st)
		}
		if cp := latestCheckpoint(stats); cp.Path != "" {
			obs.LatestCheckpoint = cp
		}
		rd := policy.EvaluateRestart(spec.Restart, obs, now)
		if rd.Action == policy.ActionRestart {
			return c.start(ctx, spec, st, ActionRestart, st.Deployed, now)
		}
		c.set(st, state, string(rd.Reason), fmt.Sprintf("job %s is %s: %s", st.JobID, jobStateName(d), rd.Message()))
		if rd.RequeueAfter > 0 {
			return Result{RequeueAfter: min(rd.RequeueAfter, c.poll())}, nil
		}
		return Result{RequeueAfter: c.poll()}, nil
	}

	// The job runs. Its checkpoints tell whether an upgraded job became
	// stable and how healthy it is.
	pending := !st.Deployed.equal(st.Stable)
	health := spec.Health.Action != ""
	var stats *flinkapi.CheckpointStatistics
	if pending || health || spec.Checkpoints.Interval > 0 {
		stats = c.readCheckpoints(ctx, api, st)
	}
	if pending && stable(d, stats) {
		st.Stable = st.Deployed
		pending = false
	}
	if pending && rollback && !now.Before(st.DeployedAt.Add(orDefault(spec.Rollback.ReadinessTimeout.Std(), DefaultReadinessTimeout))) {
		return c.start(ctx, spec, st, ActionRollback, st.Stable, now)
	}
	reason, message := string(policy.Running), "job "+string(st.JobID)+" runs the spec's job"
	switch {
	case spec.Job.Fingerprint() == st.FailedJob && !spec.Job.equal(st.Deployed) && st.Action == ActionBlueGreen:
		reason, message = string(OutcomeBlueGreenAborted), fmt.Sprintf("job %s runs the previous job: the spec's job did not become healthy beside it (%s); change it to try again",
			st.JobID, st.Progress.Reason)
	case spec.Job.Fingerprint() == st.FailedJob && !spec.Job.equal(st.Deployed):
		reason, message = "RolledBack", fmt.Sprintf("job %s runs the last stable job: the spec's job did not become stable and was rolled back; change it to try again", st.JobID)
	case pending:
		reason, message = "WaitingForStable", "job "+string(st.JobID)+" runs; it counts as stable once all its tasks run and a checkpoint completed"
	}
	if health {
		hd := c.judgeHealth(ctx, api, spec, st, d, stats, obs, now)
		if hd.Action == policy.ActionCancelFirst && hd.RestorePoint.IsSet() {
			st.Target = st.Deployed
			return c.startHealthRestart(ctx, spec, st, hd, now)
		}
		if hd.State == policy.Unhealthy {
			reason, message = string(hd.Reason), hd.Message()
		}
	}
	c.set(st, policy.Running, reason, message)
	if spec.Autoscale.Enabled && !pending && reason == string(policy.Running) {
		if r, ok := c.autoscale(ctx, api, spec, st, d, now); ok && r.Change() {
			return c.startAutoscale(ctx, spec, st, r, now)
		}
	}
	if due, next := c.savepointDue(spec, st, d, now); due {
		return c.start(ctx, spec, st, ActionSavepoint, st.Deployed, now)
	} else if spec.Savepoints.disposes() && len(savepoint.ChooseDisposals(st.Savepoints.Records, c.retention(spec.Savepoints, st), now)) > 0 {
		return c.start(ctx, spec, st, ActionDispose, st.Deployed, now)
	} else if cp := c.checkpointStep(ctx, api, spec, st, d, stats, now); cp > 0 || !next.IsZero() {
		wait := c.poll()
		if !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
		if cp > 0 {
			wait = min(wait, cp)
		}
		return Result{RequeueAfter: max(wait, soon)}, nil
	}
	return Result{RequeueAfter: c.poll()}, nil
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

func jobStateName(d *flinkapi.JobDetails) string {
	if d == nil {
		return "unknown to Flink"
	}
	return string(d.State)
}

// readCheckpoints reads the job's checkpoint statistics; nil when they
// cannot be read.
func (c *Controller) readCheckpoints(ctx context.Context, api API, st *JobStatus) *flinkapi.CheckpointStatistics {
	stats, err := api.Checkpoints(ctx, st.JobID)
	noted(ctx, err)
	if err != nil {
		return nil
	}
	return stats
}

// latestCheckpoint is the newest completed retained checkpoint in stats.
func latestCheckpoint(stats *flinkapi.CheckpointStatistics) policy.Checkpoint {
	if stats == nil || stats.LatestCompleted == nil {
		return policy.Checkpoint{}
	}
	c := stats.LatestCompleted
	if c.ExternalPath == "" || c.Discarded || c.IsSavepoint {
		return policy.Checkpoint{}
	}
	return policy.Checkpoint{Path: c.ExternalPath, Time: c.TriggerTime}
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

// readFailure records the root cause of the job's newest exception.
func (c *Controller) readFailure(ctx context.Context, api API, st *JobStatus) {
	ex, err := api.JobExceptions(ctx, st.JobID, 1)
	noted(ctx, err)
	if err != nil || len(ex.Entries) == 0 {
		return
	}
	e := ex.Entries[0]
	cause := flinkapi.RootCause(e.StackTrace)
	if cause == "" {
		cause = e.Message
	}
	if len(cause) > MaxFailureLength {
		cause = cause[:MaxFailureLength]
	}
	if cause != "" {
		st.Failure = cause
	}
}

// judgeHealth adds a sample of the running job to its health history and
// evaluates it.
func (c *Controller) judgeHealth(ctx context.Context, api API, spec JobSpec, st *JobStatus, d *flinkapi.JobDetails, stats *flinkapi.CheckpointStatistics,
	obs policy.Observations, now time.Time) policy.HealthDecision {
	sample := policy.HealthSample{Time: now, State: d.State, StateSince: d.Timestamps[d.State], Restarts: -1, SavepointFailures: st.SavepointFailures}
	if n, ok, err := api.JobRestarts(ctx, st.JobID); noted(ctx, err) == nil && ok {
		sample.Restarts = n
	}
	if stats != nil {
		sample.CompletedCheckpoints = stats.Counts.Completed
		if lc := stats.LatestCompleted; lc != nil {
			sample.LatestCheckpoint = lc.LatestAck
		}
	}
	st.Health.Add(st.JobID, d.StartTime, sample, spec.Health)
	if cp := latestCheckpoint(stats); cp.Path != "" {
		obs.LatestCheckpoint = cp
	}
	return policy.EvaluateHealth(spec.Health, st.Health, obs, now)
}

// savepointDue reports whether a periodic savepoint is due, and when the
// next one is.
func (c *Controller) savepointDue(spec JobSpec, st *JobStatus, d *flinkapi.JobDetails, now time.Time) (bool, time.Time) {
	in := savepoint.ScheduleInput{Interval: spec.Savepoints.Interval.Std(), JobState: d.State, JobStart: d.StartTime, Last: st.Latest}
	in.Cron, _ = spec.Savepoints.cron() // valid: Reconcile validated spec
	if st.Action == ActionSavepoint {
		in.Current = st.Progress.Savepoint
	}
	due, _, next := savepoint.Due(in, now)
	return due, next
}

// retention is the retention of p, keeping what the deployment may still
// need: the restore point of the running job and of a rollback.
func (c *Controller) retention(p SavepointPolicy, st *JobStatus) savepoint.RetentionOptions {
	r := savepoint.RetentionOptions{MaxCount: p.MaxCount, MaxAge: p.MaxAge.Std(), DisposeUpdate: p.DisposeUpdate, DisposeUser: p.DisposeUser}
	for _, loc := range []string{st.Latest.Location, st.UpgradeFrom.Location, st.Progress.RestoreFrom} {
		if loc != "" {
			r.InUse = append(r.InUse, loc)
		}
	}
	return r
}

// startHealthRestart restarts the unhealthy running job from the restore
// point the health policy chose: an Upgrade that cancels it (the restore
// point is recorded first) and starts the same template from there.
func (c *Controller) startHealthRestart(ctx context.Context, spec JobSpec, st *JobStatus, hd policy.HealthDecision, now time.Time) (Result, error) {
	st.Progress = Progress{}
	st.Action, st.RetryAt = ActionHealthRestart, time.Time{}
	req := healthRequest(hd, now)
	st.Progress.Request = req // recorded before the first step, which keeps it
	return c.step(ctx, spec, st, now)
}

// healthRequest is the restore request of a restart of an unhealthy job:
// from the chosen restore point, cancelling the job without a savepoint.
func healthRequest(hd policy.HealthDecision, now time.Time) policy.RestoreRequest {
	return policy.RestoreRequest{Path: hd.RestorePoint.Path, Token: "health:" + hd.RestorePoint.Path + ":" + now.UTC().Format(time.RFC3339Nano),
		Time: hd.RestorePoint.Time, CancelWithoutSavepoint: true}
}

// start records a new action and takes its first step, which sends no
// request: it records the trigger or job id later requests use, and the
// caller stores it before the next step sends them.
func (c *Controller) start(ctx context.Context, spec JobSpec, st *JobStatus, a JobAction, target JobTemplate, now time.Time) (Result, error) {
	st.Action, st.Target, st.Progress, st.RetryAt = a, target, Progress{}, time.Time{}
	target.DeepCopyInto(&st.Target)
	if a == ActionDispose {
		st.Retention = spec.Savepoints
	}
	return c.step(ctx, spec, st, now)
}

// step steps the action in flight once, and applies its outcome once it
// ended.
func (c *Controller) step(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) (Result, error) {
	op, err := c.operation(spec, st)
	if err != nil {
		return Result{RequeueAfter: c.retry()}, fmt.Errorf("lifecycle: %s: %w", st.Action, err)
	}
	res, err := op.Step(ctx, &st.Progress)
	if err != nil {
		return Result{RequeueAfter: max(res.RequeueAfter, soon)}, fmt.Errorf("lifecycle: %s: %w", st.Action, err)
	}
	if !res.Done {
		msg := strings.TrimSpace(fmt.Sprintf("%s: phase %s %s", st.Action, st.Progress.Phase, st.Progress.LastError))
		if background(st.Action) {
			// The job runs on: the deployment stays Running.
			c.set(st, policy.Running, string(policy.Running), "job "+string(st.JobID)+" runs; "+msg)
		} else {
			c.set(st, actionStates[st.Action], string(st.Action)+"InProgress", msg)
		}
		return Result{RequeueAfter: max(res.RequeueAfter, soon)}, nil
	}
	if err := c.finish(ctx, spec, st, now); err != nil {
		return Result{RequeueAfter: soon}, err
	}
	if st.Action == ActionTeardown && (st.Progress.Outcome == OutcomeSucceeded || st.Progress.Stopped()) {
		return Result{Done: true, Outcome: st.Progress.Outcome}, nil
	}
	return Result{RequeueAfter: soon, Outcome: st.Progress.Outcome}, nil
}

// background reports whether a is done beside the running job, which it
// leaves running whatever its outcome: a savepoint or a disposal.
func background(a JobAction) bool { return a == ActionSavepoint || a == ActionDispose }

// actionStates are the deployment states while an action is in flight.
var actionStates = map[JobAction]policy.DeploymentState{
	ActionDeploy: policy.Deploying, ActionUpgrade: policy.Updating, ActionRescale: policy.Updating, ActionAutoscale: policy.Updating,
	ActionRestart: policy.Restarting, ActionHealthRestart: policy.Restarting, ActionRollback: policy.Updating, ActionBlueGreen: policy.Updating,
	ActionSavepoint: policy.Running, ActionDispose: policy.Running, ActionSuspend: policy.Stopping, ActionTeardown: policy.Stopping,
}

// operation builds the lifecycle operation of st.Action from spec and st.
// It holds no state of its own: everything it needs to resume is in
// st.Progress.
func (c *Controller) operation(spec JobSpec, st *JobStatus) (Stepper, error) {
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
	switch st.Action {
	case ActionSavepoint:
		return &TakeSavepoint{Env: sp, Job: st.JobID, Reason: savepoint.ReasonScheduled}, nil
	case ActionDispose:
		return &DisposeSavepoints{Env: env, History: st.Savepoints, Retention: c.retention(st.Retention, st)}, nil
	case ActionSuspend:
		return &Teardown{Env: sp, Job: st.JobID, Mode: spec.Update.Mode, Deployer: c.Deployer, Cluster: cl}, nil
	case ActionTeardown:
		return &Teardown{Env: sp, Job: st.JobID, Mode: spec.Update.Mode, AllowCancelWithoutState: spec.AllowCancelWithoutState,
			Store: c.Store, Name: c.Name, Deployer: c.Deployer, Cluster: cl}, nil
	case ActionRestart:
		return &Restart{Env: env, Job: st.JobID, Policy: spec.Restart, Restarts: st.Restarts, LastRestart: st.LastRestart,
			Latest: st.Latest, Store: c.Store, Name: c.Name, JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile,
			Run: st.Target.run(), Deployer: c.Deployer, Cluster: cl}, nil
	case ActionRescale, ActionAutoscale:
		return &Rescale{Env: env, Job: st.JobID, Parallelism: st.Target.Parallelism, Policy: spec.Rescale, Upgrade: *c.upgrade(spec, st, env)}, nil
	case ActionBlueGreen:
		b := &BlueGreen{Env: sp, Job: st.JobID, JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile, Run: st.Target.run(),
			Window: spec.BlueGreen.Window.Std(), Deployer: c.Deployer, Cluster: cl}
		if spec.BlueGreen.KeepSavepoint {
			b.StopOld = StopWithSavepoint
		}
		return b, nil
	}
	return c.upgrade(spec, st, env), nil // Deploy, Upgrade, HealthRestart, Rollback
}

// jobAPI is the client of the deployment's job: that of its cluster when
// the Deployer started one (Deployer.Client), one that knows no job when
// that cluster was deleted (the job was suspended or torn down with it),
// else Env.Client.
func (c *Controller) jobAPI(st *JobStatus) (API, error) {
	switch {
	case c.Deployer == nil:
		return c.Client, nil
	case !st.Cluster.IsZero():
		return clusterClient(c.Deployer, st.Cluster)
	case st.JobID != "":
		return absentAPI{}, nil
	}
	return c.Client, nil
}

// upgrade is the Upgrade of the Deploy, Upgrade, HealthRestart and
// Rollback actions (and of a Rescale through an upgrade).
func (c *Controller) upgrade(spec JobSpec, st *JobStatus, env Env) *Upgrade {
	u := &Upgrade{Env: env, Job: st.JobID, Policy: spec.Update, Latest: st.Latest, Store: c.Store, Name: c.Name,
		JarID: c.jarID(st.Target, st), JarFile: st.Target.JarFile, Run: st.Target.run(), Deployer: c.Deployer}
	if c.Deployer != nil {
		u.Cluster = st.Cluster
	}
	switch st.Action {
	case ActionDeploy:
		u.FirstDeploy = st.Deployed.IsZero() && st.Latest.Location == ""
		u.Restore, u.RestoreHandled = spec.Restore, st.RestoreHandled
	case ActionUpgrade:
		u.Restore, u.RestoreHandled = spec.Restore, st.RestoreHandled
		// A bounded job that finished runs its new Job afresh.
		u.FirstDeploy = finished(st)
	case ActionHealthRestart:
		u.Restore = st.Progress.Request
	case ActionRollback:
		u.Restore = policy.RestoreRequest{Path: st.UpgradeFrom.Location, Token: "rollback:" + st.Deployed.Fingerprint() + ":" + st.UpgradeFrom.Location,
			Time: st.UpgradeFrom.Time, CheckAge: true, CancelWithoutSavepoint: true}
	}
	return u
}

// env is the Env of the operation of st.Action: its transitions are
// named after the action (Suspend, Rollback, ...), not after the
// operation that carries it out.
func (c *Controller) env(st *JobStatus) Env {
	env := c.Env
	if hook := c.OnTransition; hook != nil {
		action := string(st.Action)
		env.OnTransition = func(tr Transition) {
			tr.Operation = action
			hook(tr)
		}
	}
	return env
}

// jarID is the uploaded jar to run t with: its own, or the one uploaded
// from the same file before; empty: upload t.JarFile.
func (c *Controller) jarID(t JobTemplate, st *JobStatus) flinkapi.JarID {
	switch {
	case t.JarID != "":
		return t.JarID
	case st.JarID != "" && st.JarFile == t.JarFile:
		return st.JarID
	}
	return ""
}

// finish applies the outcome of the action that ended to st: the
// savepoint it took, the job it started, the restart it made.
func (c *Controller) finish(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) error {
	p := &st.Progress
	if rec, ok := p.Record(); ok && rec.Location != "" {
		c.recordSavepoint(st, rec)
	} else if (st.Action == ActionSuspend || st.Action == ActionTeardown) && p.RestoreFrom != "" {
		// A job that had ended: its newest state, a savepoint it ended
		// with or its retained checkpoint, is its restore point.
		c.recordSavepoint(st, teardownRecord(p))
	}
	before := st.Deployed
	if p.JarID != "" && st.Target.JarID == "" && st.Target.JarFile != "" {
		st.JarID, st.JarFile = p.JarID, st.Target.JarFile
	}
	replaces := st.Action == ActionDeploy || st.Action == ActionUpgrade || st.Action == ActionRestart || st.Action == ActionHealthRestart ||
		st.Action == ActionRollback || st.Action == ActionBlueGreen || (st.Action == ActionRescale || st.Action == ActionAutoscale) && p.RescalePath == policy.RescaleByUpgrade
	if replaces && p.NewJobID != "" {
		// A new job was (or may have been) submitted, or an earlier one
		// adopted: from now on it is the job to observe, so that a retry
		// never starts a second one.
		if st.JobID != p.NewJobID {
			st.Health, st.JobState = policy.HealthHistory{}, ""
			if p.Outcome == OutcomeSucceeded {
				st.JobState = flinkapi.JobRunning // the operation saw it RUNNING
			}
		}
		st.JobID, st.Deployed, st.DeployedAt, st.Suspended = p.NewJobID, st.Target, now, false
		if c.Deployer != nil {
			st.Cluster = p.Cluster // the old one is deleted (PhaseDeleteCluster)
		}
		if p.RestoreFrom != "" && (st.Action == ActionUpgrade || st.Action == ActionDeploy || st.Action == ActionBlueGreen) {
			// The state the template before wrote: what a rollback to
			// it restores (never the state a new template wrote since).
			st.UpgradeFrom = savepoint.Record{Location: p.RestoreFrom, Time: restoreTime(p), JobID: p.PreviousJobID}
		}
		if rec := restoredRecord(p); rec.Location != "" && (st.Latest.Location == "" || rec.Time.After(st.Latest.Time)) {
			// Until it completes a checkpoint, the new job's newest state
			// is the state it started from (the restore-point store's
			// savepoint, a retained checkpoint, a requested path): a
			// restart of a job lost before then restores it.
			st.Latest = rec
		}
	}
	if h := p.HandledRestore(); h != "" && (st.Action == ActionUpgrade || st.Action == ActionDeploy) {
		st.RestoreHandled = h
	}
	o := p.Outcome
	if (st.Action == ActionSuspend || st.Action == ActionTeardown) && c.Deployer != nil && (o == OutcomeSucceeded || p.Stopped()) {
		st.Cluster = Cluster{} // deleted with the stopped job (PhaseDeleteCluster)
	}
	switch {
	case o == OutcomeSucceeded:
		switch st.Action {
		case ActionRescale, ActionAutoscale:
			if st.Stable.equal(before) {
				st.Stable = st.Target // the same job at another parallelism
			}
			st.Deployed = st.Target
		case ActionRestart:
			st.Restarts = spec.Restart.CountRestart(st.Restarts, st.LastRestart, now)
			st.LastRestart = now
		case ActionRollback:
			st.FailedJob, st.Stable = before.Fingerprint(), st.Target
		case ActionBlueGreen:
			st.Stable = st.Target // healthy beside the old job before it stopped
		case ActionSavepoint:
			st.SavepointFailures = 0
		case ActionDispose:
			st.Savepoints = st.Savepoints.Remove(locations(c.disposed(st))...)
		case ActionSuspend:
			st.Suspended = true
		}
		if background(st.Action) {
			c.set(st, policy.Running, string(policy.Running), "job "+string(st.JobID)+" runs; "+p.Reason)
		} else {
			c.set(st, actionDone[st.Action], string(st.Action)+"Succeeded", p.Reason)
		}
	case o == OutcomeNotNeeded:
		c.set(st, st.State, string(st.Action)+string(o), p.Reason)
	default:
		switch st.Action {
		case ActionSavepoint:
			// The job runs on; the schedule tries again one interval
			// after the failed attempt.
			st.SavepointFailures++
		case ActionDispose:
			st.Savepoints = st.Savepoints.Remove(locations(c.disposed(st))...)
		case ActionAutoscale:
			// The job keeps the parallelism it runs at; the cool-down
			// counts from the attempt.
			st.Autoscale.Parallelism = st.Deployed.Parallelism
		case ActionBlueGreen:
			st.RetryAt = now.Add(c.retry())
			if o == OutcomeBlueGreenAborted {
				// The old job runs on; the new one is not tried again
				// until the spec changes.
				st.FailedJob = st.Target.Fingerprint()
			}
		default:
			st.RetryAt = now.Add(c.retry())
		}
		if background(st.Action) {
			// The job runs on; the failure is in the message and the
			// action's transition.
			c.set(st, policy.Running, string(policy.Running), fmt.Sprintf("job %s runs; %s %s: %s", st.JobID, st.Action, o, p.Reason))
		} else {
			c.set(st, st.State, string(st.Action)+string(o), p.Reason)
		}
	}
	return nil
}

// actionDone are the deployment states once an action succeeded.
var actionDone = map[JobAction]policy.DeploymentState{
	ActionDeploy: policy.Running, ActionUpgrade: policy.Running, ActionRescale: policy.Running, ActionAutoscale: policy.Running, ActionRestart: policy.Running,
	ActionHealthRestart: policy.Running, ActionRollback: policy.Running, ActionBlueGreen: policy.Running, ActionSavepoint: policy.Running,
	ActionDispose: policy.Running,
	ActionSuspend: policy.Suspended, ActionTeardown: policy.Stopping,
}

// restoreTime is the time of the state p restored from.
func restoreTime(p *Progress) time.Time {
	switch {
	case p.RestoreFrom == p.Location && !p.Savepoint.TriggerTime.IsZero():
		return p.Savepoint.TriggerTime
	case p.RestoreFrom == p.Request.Path && !p.Request.Time.IsZero():
		return p.Request.Time
	case p.RestoreFrom == p.Observed.Checkpoint:
		return p.Observed.CheckpointTime
	case p.RestoreFrom == p.Observed.Latest.Location:
		return p.Observed.Latest.Time
	}
	return time.Time{}
}

// restoredRecord is the record of the state p started its new job from,
// if its time is known.
func restoredRecord(p *Progress) savepoint.Record {
	switch {
	case p.RestoreFrom == "":
		return savepoint.Record{}
	case p.RestoreFrom == p.Observed.Latest.Location && !p.Observed.Latest.Time.IsZero():
		return p.Observed.Latest
	}
	t := restoreTime(p)
	if t.IsZero() {
		return savepoint.Record{}
	}
	return savepoint.Record{Location: p.RestoreFrom, Time: t, JobID: p.PreviousJobID}
}

// recordSavepoint adds rec to the history (bounded) and makes it the
// latest if it is newer.
func (c *Controller) recordSavepoint(st *JobStatus, rec savepoint.Record) {
	st.Savepoints = st.Savepoints.Add(rec)
	if n := len(st.Savepoints.Records); n > MaxStoredSavepoints {
		st.Savepoints.Records = st.Savepoints.Records[n-MaxStoredSavepoints:]
	}
	if rec.Time.After(st.Latest.Time) || st.Latest.Location == "" {
		st.Latest = rec
	}
}

// disposed are the savepoints the Dispose in flight disposed of: those it
// chose and dealt with, less those its Reason names as failed.
func (c *Controller) disposed(st *JobStatus) []savepoint.Record {
	d := DisposeSavepoints{History: st.Savepoints, Retention: c.retention(st.Retention, st)}
	chosen := d.Chosen(&st.Progress)
	var out []savepoint.Record
	for i, r := range chosen {
		if i >= st.Progress.Disposed {
			break
		}
		if !strings.Contains(st.Progress.Reason, r.Location+": ") || strings.Contains(st.Progress.Reason, r.Location+": already gone") {
			out = append(out, r)
		}
	}
	return out
}

func locations(rs []savepoint.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Location
	}
	return out
}
