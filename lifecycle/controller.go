package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// DefaultResync is Controller.Resync's default.
	DefaultResync = 10 * time.Minute
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
	// Name; a job deployed later under that Name starts from it. With a
	// Store, every call refuses a Name the stores do not take before any
	// request (ErrInvalidName; the message says which names are).
	Store RestorePointStore
	Name  string
	// Namespace, if set, keeps the jobs of this Controller's deployments
	// apart from those of any other installation that deploys the same
	// Name to the same session cluster (another team, another operator,
	// a test run): it is mixed into the id a deployment's first job
	// derives from Name, so two Controllers of one Name and different
	// Namespaces never find each other's jobs under their derived ids.
	// Give every installation its own, and keep it. Empty: the ids of
	// earlier releases. A status records its job's id, so a Namespace set
	// or changed later moves no running job: it names the jobs deployed
	// afresh (a new deployment, or one whose status was lost).
	Namespace string
	// PollInterval is how often a job at rest is observed
	// (DefaultControllerPoll); RetryInterval how long after an action that
	// did not succeed it may be tried again (DefaultRetryInterval).
	PollInterval  time.Duration
	RetryInterval time.Duration
	// Storage, if set, is where the jobs' checkpoints lie: the retained
	// checkpoints of a job the deployment replaced are removed from it
	// once the new job completed a checkpoint of its own (see
	// JobStatus.Replaced and LocalStorage), and a start from a
	// checkpoint goes from the newest one complete there (its
	// _metadata written), never from one it shows gone. Nil: they stay,
	// and a start from a checkpoint rests on Flink's answers alone.
	Storage Storage
	// Shared, if set, is the cluster's shared overview: a job at rest is
	// checked with it, without a request of its own (SharedObservation).
	// Give every Controller of one session cluster the same one.
	Shared *SharedObservation
	// Resync is when a job at rest whose health is not judged is called
	// back (Result.RequeueAfter) while Shared is watched
	// (SharedObservation.Changes or Run, called within the last three
	// MaxAge): the watch names the jobs whose overview changed, and their
	// callers call them at once, so a job at rest needs a call of its own
	// only for its savepoint schedule (when due, as always) and as a
	// resync (the retention's disposals then wait for it). 0:
	// DefaultResync; never less than PollInterval. Without a watch,
	// PollInterval.
	Resync time.Duration
}

// atRestRequeue is when to call a job back that runs at rest: Resync when
// the shared overview is watched and nothing of the spec needs a regular
// look of its own (health checks), else PollInterval; once Flink's cache
// expired when the overview showed a change its details did not.
func (c *Controller) atRestRequeue(spec JobSpec, st *JobStatus, obs Observation) time.Duration {
	if obs.OverviewChanged {
		// The details may be the cache's, older than the overview.
		return min(c.Timing.cache()+soon, c.poll())
	}
	if spec.Health.Action == "" && c.Shared != nil && c.Shared.watching() && c.atRest(spec, st) {
		return max(orDefault(c.Resync, DefaultResync), c.poll())
	}
	return c.poll()
}

func (c *Controller) poll() time.Duration { return orDefault(c.PollInterval, DefaultControllerPoll) }

func (c *Controller) retry() time.Duration { return orDefault(c.RetryInterval, DefaultRetryInterval) }

// Reconcile moves the job one step towards spec, in three steps: it
// observes the job (only what the plan needs), plans (PlanFor: the job's
// situation and the action to start or the state to report), and acts:
// it starts the planned action or steps the one in flight once. It sends
// at most MaxRequestsPerCall requests, records in st what the next
// request needs before sending it, and returns when to call again
// (Result.RequeueAfter; Done is never set; Outcome is set on the call in
// which an action ended: st.Action says which, st.Progress.Reason why).
// JobStatus.Converged tells when the spec is carried out.
// Store st before anything else, whatever the result. An invalid spec
// is acted on not at all: it is reported in st (Reason InvalidSpec), and
// Reconcile returns Validate's error (matching ErrInvalidSpec); calling
// again helps only once the spec changed.
// Reconcile returns an error for a canceled context, a status of a newer
// format (ErrUnknownFormat), one this release did not write
// (ErrInvalidStatus) or of another deployment (ErrForeignStatus), the
// errors of the operations' Step (among them flinkapi.ErrMisconfigured)
// and of the Store.
func (c *Controller) Reconcile(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	if err := c.begin(ctx, st); err != nil {
		return Result{}, err
	}
	// Whatever the call did, the status ends with its verdict of spec.
	defer func(spec JobSpec) { st.Verdict = st.VerdictFor(spec) }(spec)
	ctx = c.withSecrets(ctx, spec, st)
	now := c.clock().Now()
	if err := spec.Validate(); err != nil {
		c.set(st, st.State, ReasonInvalidSpec, err.Error())
		st.Settled = false
		return Result{RequeueAfter: c.poll()}, err
	}
	spec, err := c.withDigest(ctx, spec.effective(st), st)
	if errors.Is(err, ErrInvalidSpec) {
		c.set(st, st.State, ReasonInvalidSpec, err.Error())
		st.Settled = false
		return Result{RequeueAfter: c.poll()}, err
	}
	if err != nil {
		return Result{RequeueAfter: c.poll()}, err
	}
	api, s, err := c.recordedAPI(st)
	if err != nil {
		return Result{RequeueAfter: c.retry()}, err
	}
	obs, err := c.observe(ctx, api, spec, st)
	if err != nil {
		return Result{RequeueAfter: c.poll()}, err
	}
	plan := c.PlanFor(spec, *st, obs, now)
	plan.Verdict = c.planVerdict(spec, st, obs, now, plan)
	res, err := c.act(ctx, api, spec, st, obs, plan, now)
	keepStableJar(st)
	if err == nil && s.err != nil {
		err = fmt.Errorf("lifecycle: observing job %s: %w", jobName(st.JobID), s.err)
	}
	return res, err
}

// recordedAPI is the client of the deployment's job (jobAPI), recording
// the first answer of any call that says it is set up wrong for the
// cluster: Reconcile returns it as its error.
func (c *Controller) recordedAPI(st *JobStatus) (API, *sink, error) {
	api, err := c.jobAPI(st)
	if err != nil {
		return nil, nil, err
	}
	s := &sink{}
	return record(api, s), s, nil
}

// Plan observes the job as Reconcile would (read-only requests) and
// returns what Reconcile would do now, without doing it: the job's
// situation, the action it would start with its restore point and the
// restore point's age, or the state it would report, and why it is
// blocked. For a deploy, upgrade or rescale on a session cluster it also
// runs the preflight (Plan.Preflight): Flink's plan of the new job from
// the jar uploaded before (POST /jars/:jarid/plan, which changes nothing
// on the cluster) and the cluster's slots; for one that starts a job
// where none runs, it reads Flink's job list for a job under the new
// job's derived id (Plan.Adopt: one it would adopt, or, with Reason
// ForeignJob, one not provably the deployment's, which blocks the plan).
// st is not changed. An invalid spec gives a plan blocked by
// it (Reason InvalidSpec); a status Reconcile refuses gives its error.
func (c *Controller) Plan(ctx context.Context, spec JobSpec, st JobStatus) (Plan, error) {
	st = *st.DeepCopy()
	if err := c.begin(ctx, &st); err != nil {
		return Plan{}, err
	}
	ctx = c.withSecrets(ctx, spec, &st)
	now := c.clock().Now()
	if err := spec.Validate(); err != nil {
		return Plan{Situation: situationOf(spec, &st, Observation{}), State: st.State, Reason: ReasonInvalidSpec,
			Blocked: err.Error(), Message: err.Error(), Verdict: VerdictInvalid}, nil
	}
	spec, err := c.withDigest(ctx, spec.effective(&st), &st)
	if errors.Is(err, ErrInvalidSpec) {
		return Plan{Situation: situationOf(spec, &st, Observation{}), State: st.State, Reason: ReasonInvalidSpec,
			Blocked: err.Error(), Message: err.Error()}, nil
	}
	if err != nil {
		return Plan{}, err
	}
	api, s, err := c.recordedAPI(&st)
	if err != nil {
		return Plan{}, err
	}
	obs, err := c.observe(ctx, api, spec, &st)
	if err == nil && s.err != nil {
		err = fmt.Errorf("lifecycle: observing job %s: %w", jobName(st.JobID), s.err)
	}
	if err != nil {
		return Plan{}, err
	}
	plan := c.PlanFor(spec, st, obs, now)
	c.planDerived(ctx, api, &st, obs, &plan)
	plan.Verdict = c.planVerdict(spec, &st, obs, now, plan)
	c.planPreflight(ctx, api, spec, &st, obs, &plan)
	if !plan.InFlight && !plan.Target.IsZero() && plan.Blocked == "" {
		// The action checks the secrets first: without them it ends
		// Blocked, the job left as it is.
		if why := missingSecret(ctx, plan.Target.Args, c.Deployer != nil); why != "" {
			plan.Blocked, plan.Verdict = why, VerdictBlocked
		}
	}
	return plan, nil
}

// Delete tears the job down: the action in flight ends first (each ends
// by its deadlines), then Teardown stops the job with a final savepoint,
// recorded under Name; the job's newest state the status knows is
// recorded there too when the teardown found none newer. It returns Done
// once nothing runs any more (Outcome Succeeded, or another one when the
// job had already ended without state to keep: Progress.Stopped), and
// otherwise when to call again: a teardown that left the job running
// (the policy keeps state and no savepoint could be taken) is tried again
// after RetryInterval. Without a Store, the status says that nothing
// keeps the job's newest state (Reason DeletedStateNotKept). With the
// spec's OnDelete Detach, the job is left running instead (DeleteDetach).
//
// Once the job is torn down, the savepoints that SavepointPolicy's
// DisposeOnDelete or their record's OnDelete asks for are disposed of,
// one request per call, before Delete returns Done; the final savepoint
// (JobStatus.Latest) is kept, and so is every savepoint of a detached
// job. One whose disposal failed MaxDisposeAttempts times stays in the
// history and on storage, and Delete returns Done with the status
// saying so.
func (c *Controller) Delete(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	res, err := c.delete(ctx, spec, st)
	if err != nil || !res.Done || st.Detached != "" && st.Detached == st.JobID {
		return res, err
	}
	now := c.clock().Now()
	next := func(kept ...string) (string, time.Duration) { return c.nextDeleteDisposal(spec, st, now, kept...) }
	loc, wait, err := c.disposeChecked(ctx, spec, st, now, next)
	switch {
	case err != nil:
		return Result{RequeueAfter: c.retry()}, err
	case loc != "":
		st.Message = "the job is deleted; disposing of its savepoints as the policy says, " + loc + " now"
		return Result{RequeueAfter: c.bounded(wait)}, nil
	case wait > 0:
		st.Message = "the job is deleted; a disposal of its savepoints failed and is tried again in " + wait.Round(time.Second).String()
		return Result{RequeueAfter: c.bounded(wait)}, nil
	}
	if n := givenUp(st); n > 0 {
		st.Message = fmt.Sprintf("the job is deleted; %d of its savepoints could not be disposed of and stay on storage (see savepoints)", n)
	}
	return res, nil
}

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
		p.Location != "" || p.RestoreFrom != "" {
		return false
	}
	statelessThen := st.ActionSpec != nil && st.ActionSpec.Update.Mode == policy.UpgradeStateless
	return p.Outcome == OutcomeTimedOut || p.Outcome == OutcomeSucceeded && statelessThen
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

// ErrForeignStatus is returned, before any request, for a JobStatus that
// another deployment (another Controller.Name) wrote.
var ErrForeignStatus = errors.New("lifecycle: the stored job status belongs to another deployment")

// ErrInvalidStatus is returned, before any request and before st is
// changed, for a JobStatus that no Controller of this release wrote: an
// unknown action, a progress of an unknown phase or outcome, or one
// whose recorded savepoint location does not follow from what it
// recorded of the savepoint.
var ErrInvalidStatus = errors.New("lifecycle: the stored job status is not one this release wrote")

// begin checks st's format, owner and content, and only then records the
// format this release writes and the owner: a status that is refused is
// left as it was.
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
	if c.Store != nil && c.Name != "" {
		// The name is the restore points' key: refused here, before any
		// request, rather than by the store at the first delete.
		if err := checkName(c.Name); err != nil {
			return err
		}
	}
	if err := checkStatus(st); err != nil {
		return err
	}
	st.FormatVersion, st.Name = FormatVersion, c.Name
	return nil
}

// checkStatus reports what in st no Controller of this release writes.
func checkStatus(st *JobStatus) error {
	p := &st.Progress
	if err := format.Check("lifecycle.Progress", p.FormatVersion, FormatVersion); err != nil {
		return err
	}
	// Histories a later flinkkit wrote decode to their version alone:
	// refused here, before they are used or written back.
	if err := st.Savepoints.CheckFormat(); err != nil {
		return err
	}
	if err := st.Health.CheckFormat(); err != nil {
		return err
	}
	if _, ok := actions[st.Action]; !ok && st.Action != "" {
		return fmt.Errorf("%w: unknown action %q", ErrInvalidStatus, st.Action)
	}
	switch {
	case !knownPhases[p.Phase]:
		return fmt.Errorf("%w: progress in unknown phase %q", ErrInvalidStatus, p.Phase)
	case !knownOutcomes[p.Outcome] || !knownOutcomes[p.Ending] || !knownOutcomes[p.StopOutcome]:
		return fmt.Errorf("%w: progress with unknown outcome %q", ErrInvalidStatus, p.Outcome)
	case p.Phase != "" && (p.Outcome != "") != (p.Phase == PhaseDone):
		return fmt.Errorf("%w: progress in phase %q with outcome %q", ErrInvalidStatus, p.Phase, p.Outcome)
	case p.Phase != "" && st.Action == "":
		return fmt.Errorf("%w: progress in phase %q of no action", ErrInvalidStatus, p.Phase)
	case p.Phase == PhaseRecord && !reportedByFlink(p):
		return fmt.Errorf("%w: progress records the location %q, which Flink did not report for job %s", ErrInvalidStatus,
			teardownRecord(p).Location, jobName(p.PreviousJobID))
	}
	if op, ok := actionOperations[st.Action]; ok && st.InFlight() {
		// What the action's Step would refuse, refused before the status
		// is changed.
		job := st.JobID
		if op == opDispose {
			job = ""
		}
		if err := check(p, op, job); err != nil {
			return err
		}
	}
	return nil
}

// set records the deployment state, its stable reason and the message.
func (c *Controller) set(st *JobStatus, state policy.DeploymentState, reason, message string) {
	st.State, st.Reason, st.Message = state, reason, message
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
		st.Progress.Request = healthRequest(plan.RestorePoint, now) // recorded before the first step, which keeps it
		return c.step(ctx, spec, st, now)
	case plan.Action == ActionAdopt:
		return c.adoptJob(ctx, spec, st, obs, now)
	case plan.Action != "":
		return c.start(ctx, spec, st, plan.Action, plan.Target, now)
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
	if plan.Situation != SituationRunning || obs.Job == nil {
		return Result{RequeueAfter: c.bounded(plan.RequeueAfter)}, nil
	}
	c.cleanupRetained(ctx, spec, st, obs, plan)
	return c.beside(ctx, api, spec, st, obs, plan, now)
}

// beside does what is due beside the running job: a sample of the
// autoscaler (which may start a rescale) and a step of the triggered
// checkpoints.
func (c *Controller) beside(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs Observation, plan Plan, now time.Time) (Result, error) {
	// Each sends one request at most, within MaxRequestsPerCall.
	budget := MaxRequestsPerCall - obs.Requests
	if spec.Autoscale.Enabled && plan.Settled && budget > 0 {
		budget--
		if r, ok := c.autoscale(ctx, api, spec, st, obs.Job, now); ok && r.Change() {
			return c.startAutoscale(ctx, spec, st, r, now)
		}
	}
	wait := plan.RequeueAfter
	if budget <= 0 && spec.Checkpoints.Interval > 0 {
		// The checkpoint step waits for the next call.
		return Result{RequeueAfter: c.bounded(min(wait, c.Timing.poll()))}, nil
	}
	if cp := c.checkpointStep(ctx, api, spec, st, obs.Job, obs.Checkpoints, now); cp > 0 {
		wait = min(wait, cp)
	}
	return Result{RequeueAfter: c.bounded(wait)}, nil
}

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
		if p := st.Progress; p.Observed.State.IsGloballyTerminal() {
			return p.Observed.State
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
	if !p.Done() || p.Outcome == OutcomeSucceeded || p.RestoreKind != policy.KindCheckpoint || p.RestoreFrom == "" ||
		p.PreviousJobID != st.JobID || p.Observed.Checkpoint != p.RestoreFrom || p.Observed.CheckpointTime.IsZero() || p.NewJobID != "" ||
		p.restoreRefused() {
		return
	}
	rec := savepoint.Record{Location: p.RestoreFrom, Time: p.Observed.CheckpointTime, JobID: p.PreviousJobID}
	if rec.Time.After(st.Latest.Time) {
		c.recordSavepoint(st, rec)
	}
}

// withSecrets returns ctx carrying the secrets that the job's arguments
// name, in the spec and in every template the status records (whose
// values may have reached Flink before), read from c.Secrets.
func (c *Controller) withSecrets(ctx context.Context, spec JobSpec, st *JobStatus) context.Context {
	lists := [][]string{spec.Job.Args, st.Deployed.Args, st.Target.Args, st.Stable.Args}
	if as := st.ActionSpec; as != nil {
		lists = append(lists, as.Job.Args)
	}
	return withSecrets(ctx, c.Secrets, lists...)
}

// withDigest is spec with the digest of its jar file's content, read
// from Env.Jars when the file changed since it was last read; a file
// that does not exist keeps the digest of the deployed template of the
// same file. A file Jars refuses is an error matching ErrInvalidSpec,
// returned before any of it is read; a context that ends during the read
// is its error.
func (c *Controller) withDigest(ctx context.Context, spec JobSpec, st *JobStatus) (JobSpec, error) {
	t := &spec.Job
	if names, _ := secretNames(t.Args); len(names) > 0 && c.Deployer != nil {
		return spec, fmt.Errorf("%w: job.args name secrets (%s), which only a session cluster takes: a Deployer would have to keep their values in the cluster it creates",
			ErrInvalidSpec, strings.Join(names, ", "))
	}
	if t.JarFile == "" || t.JarID != "" || c.Deployer != nil {
		return spec, nil
	}
	digest := c.Jars.digest
	if c.Shared != nil {
		digest = func(ctx context.Context, file string) (string, error) { return c.Shared.jarDigest(ctx, c.Jars, file) }
	}
	d, err := digest(ctx, t.JarFile)
	switch {
	case errors.Is(err, ErrInvalidSpec):
		return spec, err
	case err != nil && ctx.Err() != nil:
		return spec, err
	case err != nil && st.Deployed.JarFile == t.JarFile:
		d = st.Deployed.JarDigest
	case err != nil:
		d = ""
	}
	// The spec may be stored in st: a copy of the caller's arguments, or
	// the status's own when they are equal.
	if len(t.Args) > 0 && slices.Equal(t.Args, st.Deployed.Args) {
		t.Args = st.Deployed.Args
	} else {
		t.Args = slices.Clone(t.Args)
	}
	if len(t.FlinkConfiguration) > 0 && sameConfig(t.FlinkConfiguration, st.Deployed.FlinkConfiguration) {
		t.FlinkConfiguration = st.Deployed.FlinkConfiguration
	}
	t.JarDigest = d
	return spec, nil
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

// healthRequest is the restore request of a restart of an unhealthy job:
// from the chosen restore point, cancelling the job without a savepoint.
func healthRequest(rp savepoint.Record, now time.Time) policy.RestoreRequest {
	return policy.RestoreRequest{Path: rp.Location, Token: "health:" + rp.Location + ":" + now.UTC().Format(time.RFC3339Nano),
		Time: rp.Time, CancelWithoutSavepoint: true}
}

// jobAPI is the client of the deployment's job: that of its cluster when
// the Deployer started one (Deployer.Client), one that knows no job when
// that cluster was deleted (the job was suspended or torn down with it),
// else Env.Client.
func (c *Controller) jobAPI(st *JobStatus) (API, error) {
	switch {
	case c.Deployer == nil:
		return withoutRetries(c.Client), nil
	case !st.Cluster.IsZero():
		api, err := clusterClient(c.Deployer, st.Cluster)
		return withoutRetries(api), err
	case st.JobID != "":
		return absentAPI{}, nil
	}
	return withoutRetries(c.Client), nil
}

// withoutRetries is api sending every request once when it is a
// *flinkapi.Client: the Controller retries by being called again, and a
// call never waits in a retry nor sends more than MaxRequestsPerCall
// requests.
func withoutRetries(api API) API {
	switch a := api.(type) {
	case *flinkapi.Client:
		if a != nil {
			return a.WithoutRetries()
		}
	case *clusterAPI:
		return &clusterAPI{API: withoutRetries(a.API), d: a.d, c: a.c}
	}
	return api
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
		u.digest = st.Target.JarDigest // the build to run; the file may hold another since
		u.checkJar = u.JarID != "" && u.JarID == stableJar(st.Target, st) && u.JarID != st.JarID
		if u.checkJar && spec.Job.JarFile == st.Target.JarFile && spec.Job.JarDigest == st.Target.JarDigest {
			// The file holds that build again (as the action's spec
			// read it): uploaded anew, whether or not the old upload
			// is still there.
			u.JarID, u.checkJar = "", false
		}
	}
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
		u.Restore = st.Progress.Request
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
	case st.JarID != "" && st.JarFile == t.JarFile && (st.JarDigest == t.JarDigest || t.JarDigest == "" || st.JarDigest == ""):
		// Uploaded from the same file, whose content did not change.
		return st.JarID
	}
	// The stable template's build, uploaded before the file was
	// rebuilt: a rollback runs it (keepStableJar).
	return stableJar(t, st)
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

// recordSavepoint adds rec to the history and makes it the latest if it
// is newer. Nothing is dropped: a record leaves the history only once
// disposed of.
func (c *Controller) recordSavepoint(st *JobStatus, rec savepoint.Record) {
	st.Savepoints = st.Savepoints.Add(rec)
	if rec.Time.After(st.Latest.Time) || st.Latest.Location == "" {
		st.Latest = rec
	}
}
