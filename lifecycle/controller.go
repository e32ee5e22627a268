package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/policy"
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
	// _metadata written), never from one it shows gone. With a Deployer,
	// the savepoints the ledger disposes of while no application cluster
	// runs (the job suspended or deleted) are deleted from it, as no
	// JobManager is there to dispose of them. Nil: they stay, and a start
	// from a checkpoint rests on Flink's answers alone.
	Storage Storage
	// AuditInterval is how often, with a Storage, Reconcile audits the
	// deployment's savepoint and checkpoint directories (Audit) and
	// applies what it found (ApplyAudit): besides the audit once an
	// action that starts, stops or replaces a job ended (at the next
	// call; after a periodic savepoint, a checkpoint or a disposal only
	// when it did not succeed, and not after a savepoint past its
	// deadline, which is looked up as late) and before it starts the
	// job again from the status's state while
	// the job is gone. 0: DefaultAuditInterval; negative: only after
	// actions and before such starts; an audit whose listing failed is
	// done again after RetryInterval, doubled for each failure in a row,
	// at most AuditInterval later. An audit sends at most MaxAuditRequests Storage requests
	// and one GET to Flink within MaxRequestsPerCall; a call between
	// audits sends none for it.
	AuditInterval time.Duration
	// Shared, if set, is the cluster's shared overview: a job at rest is
	// checked with it, without a request of its own (SharedObservation).
	// Give every Controller of one session cluster the same one.
	Shared *SharedObservation
	// Resync is how often a job at rest whose health is not judged is
	// called back (Result.RequeueAfter) while Shared is watched
	// (SharedObservation.Changes or Run, called within the last three
	// MaxAge): the watch names the jobs whose overview changed, and their
	// callers call them at once, so a job at rest needs a call of its own
	// only for its savepoint schedule (when due, as always) and as a
	// resync (the retention's disposals then wait for it). Each job's
	// resyncs come at times of their own, every Resync from an offset its
	// job id's hash gives, so that the resyncs of a fleet that came to
	// rest at once spread over Resync: the first comes between half and
	// one and a half Resync after the call, the next ones Resync apart.
	// A job whose health is judged is called back at its next health
	// check (every other PollInterval, half of the fleet in each). 0:
	// DefaultResync; never less than PollInterval. Without a watch,
	// PollInterval.
	//
	// A resync of a job at rest whose overview entry, spec and status
	// are those of its last full call (one that found the job at rest
	// from the overview alone, planned nothing, sent no request and left
	// the status as it found it), with the same jar digest and settings
	// and nothing timed due since (the savepoint schedule, the
	// retention's MaxAge, the retry of a failed disposal), is a
	// comparison with that call, as an informer's handler compares the
	// object handed to it again: it returns when to call again, sends no
	// request and changes nothing. Anything else, and every call of a
	// job whose health is judged or with a Storage, is a full call.
	Resync time.Duration
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
	// A resync of a job at rest that its last full call stands for
	// (Resync); every other call in full, noting, when it may, what a
	// later resync compares with.
	if res, ok := c.resyncAtRest(ctx, spec, st); ok {
		return res, nil
	}
	if !c.mayRest(spec, st) {
		if c.Shared != nil && st.JobID != "" {
			c.Shared.setRestMemo(st.JobID, nil, nil)
		}
		return c.reconcile(ctx, spec, st, nil)
	}
	before, rc := st.DeepCopy(), &restCall{}
	res, err := c.reconcile(ctx, spec, st, rc)
	c.noteRest(spec, before, st, rc, res, err)
	return res, err
}

// reconcile is Reconcile's full call; rc, if not nil, receives the spec
// it planned with, its observation, its plan and its time.
func (c *Controller) reconcile(ctx context.Context, spec JobSpec, st *JobStatus, rc *restCall) (Result, error) {
	if err := c.begin(ctx, st); err != nil {
		return Result{}, err
	}
	// Whatever the call did, the status ends with its verdict of spec
	// (validated once).
	valid := false
	defer func(spec JobSpec) { st.Verdict = st.verdictFor(spec, valid) }(spec)
	ctx = c.withSecrets(ctx, spec, st)
	now := c.clock().Now()
	err := spec.Validate()
	valid = err == nil
	if err != nil {
		c.set(st, st.State, ReasonInvalidSpec, err.Error())
		st.Settled = false
		return Result{RequeueAfter: c.poll()}, err
	}
	spec, err = c.withDigest(ctx, spec.effective(st), st)
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
	if c.auditInCall(ctx, spec, st, &obs, plan, now) {
		plan = c.PlanFor(spec, *st, obs, now) // from what storage showed
	}
	plan.Verdict = c.planVerdict(spec, st, obs, now, plan)
	if rc != nil {
		*rc = restCall{spec: spec, obs: obs, plan: plan, now: now}
	}
	res, err := c.act(ctx, api, spec, st, obs, plan, now)
	if res.Outcome != "" {
		c.markAuditDue(st, res.Outcome) // an action ended: the next call audits
	}
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
//
// A savepoint that outlived its deadline before the teardown
// (JobStatus.LateSavepoint) is looked up first, one request per call,
// and recorded when it completed.
//
// Delete observes, plans and acts as Reconcile does; PlanDelete shows
// what a call would do without doing it.
func (c *Controller) Delete(ctx context.Context, spec JobSpec, st *JobStatus) (Result, error) {
	entry := st.Latest.Location
	res, err := c.delete(ctx, spec, st)
	if err != nil || !res.Done || st.Detached != "" && st.Detached == st.JobID {
		return res, err
	}
	now := c.clock().Now()
	if st.LateSavepoint.Pending() {
		// A savepoint that outlived its deadline before the teardown:
		// looked up until it is recorded (then disposed of as the policy
		// says) or given up, not left on storage unrecorded.
		api, _, err := c.recordedAPI(st)
		if err != nil {
			return Result{RequeueAfter: c.retry()}, err
		}
		wait := c.lookLate(ctx, api, st, &Observation{}, now)
		if err := c.keepFound(ctx, st, entry); err != nil {
			return Result{RequeueAfter: c.retry()}, err
		}
		if wait > 0 {
			st.Message = "the job is deleted; its savepoint " + string(st.LateSavepoint.TriggerID) + ", which outlived its deadline, is looked up"
			return Result{RequeueAfter: c.bounded(wait)}, nil
		}
	}
	wait := c.auditBeforeDone(ctx, spec, st, now)
	if err := c.keepFound(ctx, st, entry); err != nil {
		return Result{RequeueAfter: c.retry()}, err
	}
	if wait > 0 {
		st.Message = "the job is deleted; a listing of the storage failed, and its savepoints there are looked for again in " + wait.Round(time.Second).String()
		return Result{RequeueAfter: c.bounded(wait)}, nil
	}
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

// keepFound records in the store, as keepNewest does, a newest state
// that this Delete call found once the job was torn down (a late
// savepoint recorded, or one an audit found on storage that Flink had
// forgotten): the teardown's record in the store predates it. entry is
// the status's Latest when the call began.
func (c *Controller) keepFound(ctx context.Context, st *JobStatus, entry string) error {
	if !st.Deleted || st.Latest.Location == entry {
		return nil
	}
	return c.keepNewest(ctx, st)
}

// maxDeleteAudits bounds the audits in a row whose listings failed that
// a Delete runs after the teardown before it ends.
const maxDeleteAudits = 5

// auditBeforeDone audits the storage again, with a Storage, once the
// job is torn down, when the last audit (the one before the teardown)
// owes one or could not list everything: a savepoint of the deployment
// that Flink forgot (a JobManager restart) lies only on storage, and
// once Delete is done nothing records it. It returns when to call again
// while a listing keeps failing, up to maxDeleteAudits audits in a row;
// 0 once the audit read everything (or gave up).
func (c *Controller) auditBeforeDone(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time) time.Duration {
	s := st.Audit
	if c.Storage == nil || s == nil || !s.Due && s.ListFailures == 0 || s.ListFailures > 0 && s.FailedInARow >= maxDeleteAudits {
		return 0
	}
	if at := s.Time.Add(c.auditRetry(s)); s.ListFailures > 0 && now.Before(at) {
		return at.Sub(now)
	}
	a, err := c.audit(ctx, spec, st, false, true)
	if err != nil {
		return c.retry()
	}
	c.applyAudit(st, &a, now)
	if s := st.Audit; s.ListFailures > 0 && s.FailedInARow < maxDeleteAudits {
		return c.auditRetry(s)
	}
	return 0
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

// set records the deployment state, its stable reason and the message.
func (c *Controller) set(st *JobStatus, state policy.DeploymentState, reason, message string) {
	st.State, st.Reason, st.Message = state, reason, message
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
