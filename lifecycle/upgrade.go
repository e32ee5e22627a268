package lifecycle

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Upgrade replaces a job by a new one (a new jar, new arguments, a new
// parallelism) as its UpdatePolicy says, or deploys a job where none runs:
// it reads the old job's state and latest retained checkpoint, asks
// policy.EvaluateUpdate, stops the old job through Stop (with a savepoint,
// or by cancelling once a restore point is recorded), submits the new job
// through Submit from the chosen restore point, and ends once it runs.
// Build it anew from its configuration whenever convenient: all its state
// is in the Progress passed to Step.
type Upgrade struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the job to replace; empty: none runs (a deploy, or a
	// redeploy after Teardown).
	Job flinkapi.JobID
	// Policy is the update policy.
	Policy policy.UpdatePolicy
	// FirstDeploy reports that nothing was deployed before, so no state is
	// expected (policy.Observations.FirstDeploy).
	FirstDeploy bool
	// Latest is the caller's record of the job's latest savepoint, if any.
	Latest savepoint.Record
	// Store and Name, if set, add the record stored under Name (by
	// Teardown) as a candidate restore point; the newer of it and Latest
	// counts.
	Store RestorePointStore
	Name  string
	// Restore is the user's restore request, if any, and RestoreHandled
	// the token of the last one carried out (policy.RestoreRequest). A
	// pending request is recorded in Progress.Replace.Request at the first Step
	// and carried out from there, so a caller that restarts mid-way
	// neither loses nor repeats it; once the operation ends, record
	// Progress.HandledRestore() as the handled token.
	Restore        policy.RestoreRequest
	RestoreHandled string
	// JarID, JarFile and Run describe the new job as for Submit.
	// Run.SavepointPath and Run.AllowNonRestoredState are set from the
	// chosen restore point and the policy.
	JarID   flinkapi.JarID
	JarFile string
	Run     flinkapi.RunJarRequest
	// JobID, if set, is the new job's id; it must differ from Job. Empty:
	// an id derived from Job (or, without Job, from Name), so that an
	// Upgrade of the same job started again, with a Progress that was
	// lost or with the old job's id, finds the job the first one
	// submitted and adopts it (Progress.Submit.NewJobID, Progress.Submit.Adopted)
	// instead of starting another. When that job has ended, the next id
	// is derived from its id. Only an id derived from Job (or JobID)
	// proves whose job it is: a job that has not ended under an id
	// derived from Name may be another deployment's of the same Name, or
	// run another spec, and is never adopted: the Upgrade ends
	// OutcomeForeignJob, naming it in Progress.Replace.Observed.Adopt, and starts
	// nothing. With neither Job nor Name, a random id: set JobID to make
	// such a deploy safe to repeat.
	JobID flinkapi.JobID
	// Deployer, if set, starts the new job instead of the jar run (see
	// Submit.Deployer): for an application cluster, in a cluster of its
	// own (Progress.Submit.Cluster).
	Deployer Deployer
	// Cluster is the Deployer's cluster Job runs in: Job is read and
	// stopped through its client (Deployer.Client; Env.Client is not
	// used), and the cluster is deleted once the new job was started in
	// its own (PhaseDeleteCluster). Zero: Job runs on Env.Client's cluster.
	Cluster Cluster
	// Strategy forces a stop strategy for the savepoint; empty:
	// ChooseStopStrategy. Drain is passed to Stop.
	Strategy StopStrategy
	Drain    bool
	// Preflight, if set and not Disabled, checks the new job's plan
	// against the old job and the cluster's task slots before the old job
	// is touched (PreflightPolicy; Progress.Replace.Preflight); a refusal ends the
	// upgrade Blocked (policy.ReasonPreflightRefused), the old job
	// running. Nil: no preflight.
	Preflight *PreflightPolicy
	// detached is a job a Delete left running (JobStatus.Detached) when
	// the Upgrade deploys anew without Job: the new job's id derives
	// from it, so that the name's ids never lead to it (adopt.go).
	detached flinkapi.JobID
	// restartDown, if set, is the restart policy of a restart request
	// (ActionRestartRequest): a job found down (failed, lost, cancelled,
	// ended) is started again from its newest state, savepoint or
	// retained checkpoint, within the restart policy's MaxStateAge,
	// whatever the update mode (restartDecision).
	restartDown *policy.RestartPolicy
	// storage, if set, is where the jobs' checkpoints lie
	// (Controller.Storage): a start from a checkpoint goes ahead only
	// as far as it shows it there (checkpointOnStorage).
	storage Storage
	// latestRanOn reports that Latest is a checkpoint of Job recorded
	// while Job ran on (latestRanOn): no restore point unless a reading
	// of the action or the storage shows it retained.
	latestRanOn bool
	// seen is the checkpoint of Job the Controller last saw complete
	// (JobStatus.Checkpoint): statistics that do not show it, read while
	// Flink's REST cache may still hold an answer from before it
	// completed, are read again (cachedBeforeSeen).
	seen seenCheckpoint
	// namespace is the Controller's Namespace, mixed into the id derived
	// from Name.
	namespace string
	// digest, if set, is the SHA-256 of the build JarFile must hold to be
	// uploaded: checked before the old job is touched (OutcomeJarChanged).
	digest string
	// checkJar: JarID is the upload of the stable build recorded in the
	// status (JobStatus.StableJarID), which the file no longer holds:
	// the cluster's jars are read before the old job is touched.
	checkJar bool
}

// Step does at most one REST request. The operation goes Observe (the old
// job's state, from the uncached status call), ObserveDetails (for a job
// that does not run: when it entered that state and ended),
// ObserveCheckpoints (its latest retained checkpoint) and ObserveRetention
// (whether Flink keeps that checkpoint once the job is cancelled or
// failed; if not, it is no restore point), skipping what the decision
// does not need, then does what the policy decides: the phases of Stop, a new decision
// after a stop that did not succeed (a retry, a fallback, or an end), and
// the phases of Submit. The restore point is recorded in p.RestoreFrom
// before the old job is cancelled or the new one submitted. It ends
// Succeeded once the new job runs, Blocked with the policy's reason
// (p.Decision) and message, or in the Outcome of the stop or submission
// that failed; every phase has a deadline. Step returns an error for a
// canceled context, ErrStateRequired if a cancel without a restore point
// is asked for a policy that keeps state, and an error of the Store.
func (u *Upgrade) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *u
	return bound(ctx, p, opUpgrade, u.Job, &op.Env, u.Run.ProgramArgs, func(ctx context.Context) (Result, error) { return op.step(ctx, p) })
}

// step is Step without the check of p's binding: Rescale upgrades through
// it on its own Progress.
func (u *Upgrade) step(ctx context.Context, p *Progress) (Result, error) {
	pol := u.Policy.WithDefaults()
	env, err := jobEnv(u.Env, u.Deployer, u.Cluster)
	if err != nil {
		return Result{}, err
	}
	r := &replacer{
		op: "Upgrade", client: env.Client, job: u.Job, latest: u.Latest, store: u.Store, name: u.Name, deployer: u.Deployer, cluster: u.Cluster,
		firstDeploy: u.FirstDeploy, detached: u.detached, namespace: u.namespace, digest: u.digest, checkJar: u.checkJar,
		evaluate: func(obs policy.Observations, now time.Time) policy.Decision {
			if u.restartDown != nil && (obs.Job == nil || obs.Job.State.IsTerminal()) {
				return restartDecision(u.Policy, *u.restartDown, obs, now)
			}
			return policy.EvaluateUpdate(u.Policy, obs, now)
		},
		restore: u.Restore, restoreHandled: u.RestoreHandled,
		stop:       Stop{Env: env.quiet(), Job: u.Job, Mode: pol.Mode, Strategy: u.Strategy, Drain: u.Drain, Reason: savepoint.ReasonUpdate},
		submit:     Submit{Env: env.quiet(), JarID: u.JarID, JarFile: u.JarFile, Run: u.Run, JobID: u.JobID, Deployer: u.Deployer},
		allowEmpty: pol.Mode == policy.UpgradeStateless || pol.AllowStartWithoutState,
		// A running job in Savepoint mode is stopped with a savepoint; its
		// checkpoints matter only to LastState and the fallback.
		skipCheckpoints: func(st flinkapi.JobState) bool {
			return st == flinkapi.JobRunning && pol.Mode != policy.UpgradeLastState && !pol.FallbackToLastState
		},
		timing: u.Timing, clock: u.clock(), hook: u.OnTransition, logger: u.Logger,
		preflight: u.Preflight, storage: u.storage, latestRanOn: u.latestRanOn, seen: u.seen,
	}
	r.submit.Run.AllowNonRestoredState = pol.AllowNonRestoredState
	return r.step(ctx, p)
}

// restartDecision is the decision for a restart request of a job that
// is down: the update policy's, but choosing the newest state among
// savepoints and retained checkpoints within the restart policy's
// MaxStateAge, as a restart does; a job under the Stateless mode with
// no such state starts without state, as it would have.
func restartDecision(up policy.UpdatePolicy, rp policy.RestartPolicy, obs policy.Observations, now time.Time) policy.Decision {
	if up.Mode == policy.UpgradeStateless {
		up.AllowStartWithoutState = true
	}
	up.Mode, up.FallbackToLastState = policy.UpgradeLastState, false
	up.MaxStateAge = rp.WithDefaults().MaxStateAge
	return policy.EvaluateUpdate(up, obs, now)
}

// Restart starts a job that failed (or that the JobManager lost) again, as
// its RestartPolicy says: from the newest savepoint or retained
// checkpoint within the maximum age (policy.EvaluateRestart), with a new
// job id recorded before the submission. Build it anew from its
// configuration whenever convenient: all its state is in the Progress
// passed to Step.
type Restart struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the failed job.
	Job flinkapi.JobID
	// Policy is the restart policy.
	Policy policy.RestartPolicy
	// Restarts and LastRestart are the caller's record of restarts
	// (policy.RestartPolicy.CountRestart); count this one once Restart
	// ends Succeeded.
	Restarts    int
	LastRestart time.Time
	// Latest, Store and Name give candidate savepoints as for Upgrade.
	Latest savepoint.Record
	Store  RestorePointStore
	Name   string
	// JarID, JarFile, Run, JobID and Deployer describe the new job as for
	// Upgrade.
	JarID    flinkapi.JarID
	JarFile  string
	Run      flinkapi.RunJarRequest
	JobID    flinkapi.JobID
	Deployer Deployer
	// Cluster is the Deployer's cluster Job ran in, as for Upgrade.
	Cluster Cluster
	// storage is Upgrade.storage.
	storage Storage
	// latestRanOn is Upgrade.latestRanOn.
	latestRanOn bool
	// seen is Upgrade.seen.
	seen seenCheckpoint
}

// Step does at most one REST request: Observe and ObserveCheckpoints as for
// Upgrade, then the phases of Submit when the policy decides to restart.
// It ends Succeeded once the new job runs, NotNeeded when the job runs,
// finished or was cancelled, Blocked with the policy's reason (p.Decision)
// when the policy does not allow a restart now, or in the Outcome of the
// submission. Step returns an error for a canceled context and an error
// of the Store.
func (s *Restart) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *s
	return bound(ctx, p, opRestart, s.Job, &op.Env, s.Run.ProgramArgs, func(ctx context.Context) (Result, error) {
		r, err := op.replacer()
		if err != nil {
			return Result{}, err
		}
		return r.step(ctx, p)
	})
}

// replacer is the engine that carries s out.
func (s *Restart) replacer() (*replacer, error) {
	env, err := jobEnv(s.Env, s.Deployer, s.Cluster)
	if err != nil {
		return nil, err
	}
	return &replacer{
		op: "Restart", client: env.Client, job: s.Job, latest: s.Latest, store: s.Store, name: s.Name, deployer: s.Deployer, cluster: s.Cluster,
		evaluate: func(obs policy.Observations, now time.Time) policy.Decision {
			obs.SpecChanged = false
			obs.Restarts, obs.LastRestart = s.Restarts, s.LastRestart
			return policy.EvaluateRestart(s.Policy, obs, now)
		},
		submit: Submit{Env: env.quiet(), JarID: s.JarID, JarFile: s.JarFile, Run: s.Run, JobID: s.JobID, Deployer: s.Deployer},
		timing: s.Timing, clock: s.clock(), hook: s.OnTransition, logger: s.Logger, storage: s.storage,
		latestRanOn: s.latestRanOn, seen: s.seen,
	}, nil
}

// replacer is the engine of Upgrade and Restart.
type replacer struct {
	op          string
	client      API
	job         flinkapi.JobID
	latest      savepoint.Record
	store       RestorePointStore
	name        string
	deployer    Deployer
	cluster     Cluster // the old job's, with a Deployer
	firstDeploy bool
	// restore and restoreHandled are the caller's restore request and the
	// token of the last one carried out (Upgrade only).
	restore        policy.RestoreRequest
	restoreHandled string
	evaluate       func(policy.Observations, time.Time) policy.Decision
	stop           Stop   // configuration of the stop; Strategy and Mode are set per phase
	submit         Submit // configuration of the submission; Run.SavepointPath is set per phase
	allowEmpty     bool   // the policy allows cancelling without a restore point
	// skipCheckpoints reports that the decision for a job in this state
	// does not depend on its checkpoints; nil: it always may.
	skipCheckpoints func(flinkapi.JobState) bool
	timing          Timing
	clock           Clock
	hook            func(Transition)
	logger          *slog.Logger
	// preflight, if set, checks the new job's plan and the cluster's
	// slots before the old job is touched.
	preflight *PreflightPolicy
	detached  flinkapi.JobID // Upgrade.detached
	storage   Storage        // Upgrade.storage
	namespace string         // Upgrade.namespace
	digest    string         // Upgrade.digest
	checkJar  bool           // Upgrade.checkJar

	latestRanOn bool           // Upgrade.latestRanOn
	seen        seenCheckpoint // Upgrade.seen
}

// maxLookups bounds the ids Adopt follows in Flink's job list: each job
// an earlier operation started that has ended adds one.
const maxLookups = 32

// firstJobID is the id the new job starts with: the configured one, or
// one derived from the old job or the name; empty: a random one. With a
// Deployer and no old job, from the job that wrote the state the new job
// starts from (the restore-point store's record), if known: every
// cluster is new, and no job list shows which ids jobs of the name had
// before, so a deployment created again by its name gets an id of its
// own, not the one its first job had.
func (r *replacer) firstJobID(p *Progress) (id flinkapi.JobID, derived bool) {
	switch {
	case r.submit.JobID != "":
		return r.submit.JobID, false
	case r.job != "":
		return derivedJobID(strings.ToLower(string(r.job))), true
	case r.deployer != nil && p.Replace.RestoreFrom != "" && p.Replace.RestoreFrom == p.Replace.Observed.Latest.Location && p.Replace.Observed.Latest.JobID != "":
		return derivedJobID(strings.ToLower(string(p.Replace.Observed.Latest.JobID))), true
	case r.detached != "":
		return detachedJobID(r.detached), true
	case r.name != "":
		return nameJobID(r.namespace, r.name), true
	}
	return "", false
}

// nameJobID is the id of the first job of the deployment name in the
// Controller's namespace (Controller.Namespace): without one, the id
// earlier releases gave it.
func nameJobID(namespace, name string) flinkapi.JobID {
	if namespace == "" {
		return derivedJobID("name\x00" + name)
	}
	return derivedJobID(fmt.Sprintf("namespace\x00%d\x00%s\x00name\x00%s", len(namespace), namespace, name))
}

// derivedJobID is the id of the job that follows the one seed names: the
// first 16 bytes of a SHA-256 over it, in hex, as Flink writes job ids.
func derivedJobID(seed string) flinkapi.JobID {
	sum := sha256.Sum256([]byte("flinkkit next job\x00" + seed))
	return flinkapi.JobID(hex.EncodeToString(sum[:16]))
}

// adopt looks the new job's id up in Flink's job list before a job is
// started in place of one that no longer runs: a job of that id that
// runs (or is about to) was started by an earlier operation whose
// Progress was lost, and is adopted; one that has ended is passed over
// for the id derived from it. It ends in the decision, or in the wait for
// the adopted job to run.
func (r *replacer) adopt(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	jobs, err := r.client.ListJobs(ctx)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.timing.backoff(2)}, nil
	}
	_, derived := r.firstJobID(p)
	id, st, n, ok, err := resolveDerived(ctx, r.client, jobs, p.Replace.Observed.Adopt, derived, r.job)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.timing.backoff(2)}, nil
	}
	p.Replace.Observed.Lookups = n
	switch {
	case !ok:
		return finish(p, OutcomeBlocked, fmt.Sprintf("%d jobs started in place of %s have ended; look at why, and start the next one with its own JobID", maxLookups, jobName(r.job))), nil
	case st == "":
		p.Replace.Observed.Adopt, p.LastError = id, ""
		return r.decide(ctx, p, now)
	case !st.IsGloballyTerminal() && !r.owns():
		// Nothing shows that this deployment started it: it is named,
		// never taken over, stopped or started beside.
		p.Replace.Observed.Adopt = id
		return finish(p, OutcomeForeignJob, foreignMessage(id, st)), nil
	case !st.IsGloballyTerminal():
		return r.adopted(ctx, p, id, st)
	}
	return finish(p, OutcomeSubmitFailed, fmt.Sprintf("the id %s chosen for the new job (JobID) is that of a job that has ended %s; choose another", id, st)), nil
}

// owns reports whether a job that has not ended, found under the ids
// the new job's id derives from, is provably one an earlier run of this
// operation started: the ids derive from the job it replaces, which
// this deployment ran (a job id is never reused, and only an operation
// that replaces that job derives them), or from the id the caller
// chose (JobID). Ids derived from a name (or from a detached job) are
// shared by every deployment of that name without a namespace of its
// own, by one re-created after a detach and by one whose status was
// lost: a job under them may run another spec, or be another
// deployment's, so it is never taken for this one's.
func (r *replacer) owns() bool {
	return r.submit.JobID != "" || r.job != ""
}

// foreignMessage says why the job id found running under a derived id
// in state st was not adopted.
func foreignMessage(id flinkapi.JobID, st flinkapi.JobState) string {
	return fmt.Sprintf("job %s (%s) runs under the id derived for the new job, and nothing this deployment recorded shows it started it: "+
		"nothing was started and the job is left as it is; to take it over, name it in JobSpec.Adopt; to deploy beside it, give the Controller a Namespace of its own", id, st)
}

// resolveDerived is the look-up of a new job's id among id and, with
// derived, the ids derived from it, in Flink's job list jobs
// (followDerived): the replacer's and BlueGreen's adoption, the jar
// run's answer that the id is in use (Submit.otherJob) and
// Controller.Plan's preview of an adoption all resolve derived ids here.
// With old set (the job the new one replaces, this deployment's), a job
// found that has not ended and started before old did is passed over
// (startedBefore): no operation replacing old can have started it,
// whatever id it runs under. It returns followDerived's answer; the
// error is that of the jobs overview the start times are read from.
func resolveDerived(ctx context.Context, api API, jobs []flinkapi.JobIDStatus, id flinkapi.JobID, derived bool, old flinkapi.JobID) (flinkapi.JobID, flinkapi.JobState, int, bool, error) {
	found, st, n, ok := followDerived(jobs, id, derived, nil)
	if !ok || !derived || old == "" || st == "" || st.IsGloballyTerminal() {
		return found, st, n, ok, nil
	}
	// The job found would be taken: Flink's start times show whether an
	// operation replacing old can have started it.
	older, err := startedBefore(ctx, api, old)
	if err != nil {
		return "", "", 0, false, err
	}
	found, st, n, ok = followDerived(jobs, id, derived, older)
	return found, st, n, ok, nil
}

// followDerived looks id up in Flink's job list jobs and, with derived,
// passes over an id whose job has ended, or is one of others (lower-case
// ids of jobs no operation of this deployment started), for the id
// derived from it, at most maxLookups ids in all. It returns the id it
// stopped at, its state there (empty: not listed), and how many ids it
// looked at; ok is false when all maxLookups had ended. Without derived
// it stops at id.
func followDerived(jobs []flinkapi.JobIDStatus, id flinkapi.JobID, derived bool, others map[string]bool) (flinkapi.JobID, flinkapi.JobState, int, bool) {
	states := make(map[string]flinkapi.JobState, len(jobs))
	for _, j := range jobs {
		states[strings.ToLower(string(j.ID))] = j.Status
	}
	for n := 1; n <= maxLookups; n++ {
		st := states[strings.ToLower(string(id))]
		if st == "" || (!st.IsGloballyTerminal() && !others[strings.ToLower(string(id))]) || !derived {
			return id, st, n, true
		}
		id = derivedJobID(strings.ToLower(string(id)))
	}
	return id, "", maxLookups + 1, false
}

// startedBefore reads Flink's jobs overview and returns the lower-case
// ids of the jobs that started before the job old did: no operation that
// replaces old can have started one of them, whatever id it runs under.
// A job id is reused when Flink forgot the job that had it (a JobManager
// restart without high availability) or when a deployment is created
// again under its name after a Delete left its job running (detached):
// the ids derived from its new jobs are then those the jobs of its
// earlier life ran under, the detached one among them. Empty when Flink
// does not list old.
func startedBefore(ctx context.Context, api API, old flinkapi.JobID) (map[string]bool, error) {
	jobs, err := api.JobsOverview(ctx)
	if err != nil {
		return nil, err
	}
	var start time.Time
	for _, j := range jobs {
		if strings.EqualFold(string(j.ID), string(old)) {
			start = j.StartTime
		}
	}
	if start.IsZero() {
		return nil, nil
	}
	older := map[string]bool{}
	for _, j := range jobs {
		if !j.StartTime.IsZero() && j.StartTime.Before(start) {
			older[strings.ToLower(string(j.ID))] = true
		}
	}
	return older, nil
}

// adopted takes over the job id that an earlier operation started: the
// operation goes on with the wait for it to run.
func (r *replacer) adopted(ctx context.Context, p *Progress, id flinkapi.JobID, st flinkapi.JobState) (Result, error) {
	resetPhase(p)
	op := r.submit
	op.JobID = id
	if _, err := op.step(ctx, p); err != nil { // records the id and the deadline, sends nothing
		return Result{}, err
	}
	p.Phase, p.Submit.Adopted, p.Submit.NewJobID = PhaseWaitRunning, true, id
	p.LastError = "adopting the job " + string(id) + " (" + string(st) + ") that an earlier operation started"
	return Result{}, nil
}

func (r *replacer) step(ctx context.Context, p *Progress) (Result, error) {
	return frame(ctx, p, r.op, r.hook, r.logger, func() (Result, error) {
		from, now := p.Phase, r.clock.Now()
		res, err := r.advance(ctx, p, now)
		if err == nil && res.Done && from != PhaseDeleteCluster && r.retires(p) {
			res = retire(p, now, r.timing)
		}
		return res, err
	})
}

// retires reports whether the operation, which just ended, deletes the
// old job's cluster first: a Deployer started the new job in a cluster of
// its own, so nothing runs in the old one any more.
func (r *replacer) retires(p *Progress) bool {
	return r.deployer != nil && !r.cluster.IsZero() && !p.Submit.Cluster.IsZero() && p.Submit.Cluster.Name != r.cluster.Name
}

func (r *replacer) advance(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case "":
		return r.begin(ctx, p, now)
	case PhaseObserve, PhaseObserveDetails, PhaseObserveCheckpoints, PhaseObserveRetention, PhaseAdopt:
		return r.stepObserve(ctx, p, now)
	case PhaseSavepoint, PhaseCancel, PhaseWaitStopped:
		return r.stepStop(ctx, p, now)
	case PhaseDeleteCluster:
		return stepDeleteCluster(ctx, r.deployer, r.cluster, p, now, r.timing), nil
	case PhasePreflight:
		return r.stepPreflight(ctx, p, now)
	case PhaseCheckJar:
		return r.stepCheckJar(ctx, p, now)
	case PhaseUpload, PhaseSubmit, PhaseWaitRunning, PhaseFailureCause:
		return r.stepSubmit(ctx, p)
	}
	return finish(p, OutcomeBlocked, fmt.Sprintf("unknown phase %q of %s", p.Phase, r.op)), nil
}

// begin records what the operation starts from (the newest savepoint
// known, the restore request, the old job) and goes on to observe the
// old job, or to the decision when there is none.
func (r *replacer) begin(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	latest, err := r.latestRecord(ctx)
	if err != nil {
		return Result{}, err
	}
	// A preflight the Controller recorded with the action, before the
	// operation started, from what its call read of the old job: the
	// preflight takes it over (begunFrom).
	var seed *Preflight
	if p.Started.IsZero() {
		seed, p.Replace.Preflight = p.Replace.Preflight, nil
	}
	startAt(p, now)
	p.Replace.PreviousJobID, p.JobID = r.job, r.job
	p.Replace.Observed = Observed{Latest: latest}
	if r.restore.Pending(r.restoreHandled) {
		p.Replace.Request = r.restore
	}
	p.Deadline = now.Add(orDefault(r.timing.Stop, defaultStopTimeout))
	if why := r.jarChanged(ctx); why != "" {
		return finish(p, OutcomeJarChanged, why), nil
	}
	if why := missingSecret(ctx, r.submit.Run.ProgramArgs, r.deployer != nil); why != "" {
		return finish(p, OutcomeBlocked, why+"; nothing was stopped or started"), nil
	}
	if r.checksJar() {
		p.Phase = PhaseCheckJar
		return Result{}, nil
	}
	return r.begunFrom(ctx, p, now, seed)
}

// begun goes on from begin once the jar to run is known to be there:
// to the preflight, to the observation of the old job, or, with none,
// to the decision.
func (r *replacer) begun(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	return r.begunFrom(ctx, p, now, nil)
}

// begunFrom is begun with the old job's part of the preflight already
// read (seed; nil: none).
func (r *replacer) begunFrom(ctx context.Context, p *Progress, now time.Time, seed *Preflight) (Result, error) {
	if r.startPreflight(p, seed) {
		return Result{}, nil
	}
	if r.job == "" {
		p.Replace.Observed.Missing = true
		return r.decide(ctx, p, now)
	}
	p.Phase = PhaseObserve
	return Result{}, nil
}

// latestRecord is the newest savepoint known: the caller's, or the one
// stored under the name, whichever is newer.
func (r *replacer) latestRecord(ctx context.Context) (savepoint.Record, error) {
	latest := r.latest
	if r.store == nil || r.name == "" {
		return latest, nil
	}
	rec, ok, err := r.store.Get(ctx, r.name)
	if err != nil {
		return latest, fmt.Errorf("lifecycle: restore point %q: %w", r.name, err)
	}
	if ok && rec.Location != "" && rec.Time.After(latest.Time) {
		latest = rec
	}
	return latest, nil
}

// stepObserve does one read of the observation (or of the adoption) of
// the old job, within the phase's deadline.
func (r *replacer) stepObserve(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if !now.Before(p.Deadline) && p.LastError != "" {
		// Reads failed until the deadline (or the policy waited
		// until it): past it with none failed, the time passed while
		// the caller was away, and the reads go on.
		return finish(p, OutcomeTimedOut, "the deadline passed while reading the job's state: "+p.LastError), nil
	}
	phase, deadline := p.Phase, p.Deadline
	var res Result
	var err error
	if p.Phase == PhaseAdopt {
		res, err = r.adopt(ctx, p, now)
	} else {
		res, err = r.observe(ctx, p, now)
	}
	if err == nil && !res.Done && !now.Before(deadline) && p.Phase == phase && p.Deadline.Equal(deadline) && p.LastError != "" {
		// The one more read past the deadline failed too.
		return finish(p, OutcomeTimedOut, "the deadline passed while reading the job's state: "+p.LastError), nil
	}
	return res, err
}

// stepStop steps the stop of the old job, and goes on once it ended.
func (r *replacer) stepStop(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if p.Phase == PhaseCancel && p.Stop.Strategy == CancelWithoutState && p.Replace.RestoreFrom != "" && stale(p, now) {
		// The caller was away between the decision and the cancel, or
		// between a cancel that did not take (the job was read running
		// since) and the one sent again: the checkpoint recorded may
		// have been discarded since, and the job has checkpointed on,
		// past the state recorded.
		return r.reobserve(p, now), nil
	}
	res, err := r.stopOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	return r.afterStop(ctx, p, now)
}

// stepSubmit steps the submission of the new job, and names it in the
// Reason once it ended.
func (r *replacer) stepSubmit(ctx context.Context, p *Progress) (Result, error) {
	res, err := r.submitOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	switch {
	case p.Outcome == OutcomeSucceeded && p.Submit.Adopted:
		p.Reason = fmt.Sprintf("the new job %s, which an earlier operation on %s started, is RUNNING: adopted", p.JobID, jobName(p.Replace.PreviousJobID))
	case p.Outcome == OutcomeSucceeded:
		from := "without state"
		if p.Replace.RestoreFrom != "" {
			from = "from " + string(p.Replace.RestoreKind) + " " + p.Replace.RestoreFrom
		}
		p.Reason = fmt.Sprintf("the new job %s is RUNNING, started %s", p.JobID, from)
	default:
		p.Reason = "the new job " + string(p.JobID) + ": " + p.Reason
	}
	return res, nil
}

// observe reads the old job's state, for a job that does not run its
// details (when it entered the state, when it ended), then its checkpoint
// statistics, then decides.
//
// The state comes from the job status call, which Flink answers from the
// JobManager without the REST layer's cache of job details (a few
// seconds), so a job that just failed is seen as FAILED, and a running
// job needs no details at all: the policy reads a job's timestamps only
// for a state other than RUNNING.
func (r *replacer) observe(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case PhaseObserve:
		return r.observeState(ctx, p, now)
	case PhaseObserveDetails:
		return r.observeDetails(ctx, p, now)
	case PhaseObserveRetention:
		return r.observeRetention(ctx, p, now)
	}
	return r.observeCheckpoints(ctx, p, now)
}

// observeState reads the old job's state (after an answer that Flink did
// not know it, its job list).
func (r *replacer) observeState(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if p.Requests > 0 {
		return r.confirmGone(ctx, p, now)
	}
	st, err := r.client.JobStatus(ctx, p.Replace.PreviousJobID)
	switch {
	case err == nil:
		if st.IsGloballyTerminal() {
			seenTerminal(p, st, now, r.timing)
		} else {
			p.Replace.Observed.State, p.Replace.Observed.StatsAfter = st, time.Time{}
		}
		p.Replace.Observed.Missing, p.LastError = false, ""
		p.Replace.Observed.Since, p.Replace.Observed.End = time.Time{}, time.Time{}
		if st != flinkapi.JobRunning {
			p.Phase = PhaseObserveDetails
			return Result{}, nil
		}
		return r.observed(ctx, p, now)
	case flinkapi.IsJobNotFound(err):
		// One answer that Flink does not know the job may be
		// transient; deciding on it could start a second job while
		// the old one runs. Flink's job list confirms it first.
		p.Replace.Observed.State, p.Replace.Observed.Missing, p.LastError = "", true, notFound+errMessage(err)
		p.Requests = 1
		return Result{RequeueAfter: r.timing.poll()}, nil
	}
	p.LastError = errMessage(err)
	return Result{RequeueAfter: r.timing.backoff(2)}, nil
}

// observeDetails reads when a job that does not run entered its state and
// ended.
func (r *replacer) observeDetails(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	d, err := r.client.Job(ctx, p.Replace.PreviousJobID)
	switch {
	case err == nil:
		// Details may lag the status by a few seconds; their
		// timestamps count only when they show the same state.
		if d.State == p.Replace.Observed.State {
			p.Replace.Observed.Since, p.Replace.Observed.End = d.Timestamps[d.State], d.EndTime
			// A job that ended long ago has no statistics in the cache
			// from before its end.
			if at := d.EndTime.Add(r.timing.cache() + savepoint.ClockSkew); ended(p) && !d.EndTime.IsZero() && at.Before(p.Replace.Observed.StatsAfter) {
				p.Replace.Observed.StatsAfter = at
			}
		}
		p.LastError = ""
		return r.observed(ctx, p, now)
	case flinkapi.IsJobNotFound(err):
		// Confirmed by Flink's job list first, as above.
		p.Replace.Observed.State, p.Replace.Observed.Missing, p.LastError = "", true, notFound+errMessage(err)
		p.Phase, p.Requests = PhaseObserve, 1
		return Result{RequeueAfter: r.timing.poll()}, nil
	}
	p.LastError = errMessage(err)
	return Result{RequeueAfter: r.timing.backoff(2)}, nil
}

// observeCheckpoints reads the old job's latest retained checkpoint.
func (r *replacer) observeCheckpoints(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if ended(p) && now.Before(p.Replace.Observed.StatsAfter) {
		// The statistics Flink has cached may be from before the job
		// ended: they can name a checkpoint its end discarded.
		p.Deadline = later(p.Deadline, p.Replace.Observed.StatsAfter.Add(r.timing.poll()))
		return Result{RequeueAfter: p.Replace.Observed.StatsAfter.Sub(now)}, nil
	}
	stats, err := r.client.Checkpoints(ctx, p.Replace.PreviousJobID)
	switch {
	case err == nil && cancelledFor(p):
		newestRetained(p, stats, now)
	case err == nil && r.cachedBeforeSeen(p, stats, now):
		// A checkpoint the Controller saw the job complete (one it
		// triggered) is missing from statistics read less than the
		// cache's duration after: Flink answered them from its cache,
		// filled before that checkpoint completed. Decided on, they
		// would take an older restore point for the job's newest state:
		// the job is read again once the cache has passed.
		at := r.seen.at.Add(r.timing.cache())
		p.Phase, p.LastError = PhaseObserve, fmt.Sprintf("the checkpoint statistics Flink answered from its cache do not show checkpoint %d, which completed", r.seen.id)
		p.Deadline = later(p.Deadline, at.Add(r.timing.poll()))
		return Result{RequeueAfter: at.Sub(now)}, nil
	case err == nil && cachedSubsumed(p, stats):
		// Flink discards a checkpoint of a job that has not ended once
		// a newer one completed: statistics whose latest is discarded
		// were answered from Flink's cache, filled before that one
		// completed. They tell nothing of what the job retains: the
		// job is read again once the cache has passed.
		p.Phase, p.LastError = PhaseObserve, "the checkpoint statistics Flink answered from its cache show the latest checkpoint discarded"
		p.Deadline = later(p.Deadline, now.Add(r.timing.cache()+r.timing.poll()))
		return Result{RequeueAfter: r.timing.cache()}, nil
	case err == nil:
		p.Replace.Observed.CheckpointRead = now
		dropDiscarded(p, stats)
		newerSavepoint(p, stats)
		if c := retainedState(stats); c.Path != "" {
			p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime, p.Replace.Observed.CheckpointRead = c.Path, c.Time, now
			p.Phase, p.LastError = PhaseObserveRetention, ""
			return Result{}, nil
		}
		if mayHaveFailedOver(p, stats) {
			p.Replace.Observed.Reread, p.Phase, p.LastError = true, PhaseObserve, ""
			return Result{}, nil
		}
	case flinkapi.IsJobNotFound(err):
		// A JobManager failing over answers so while it recovers the
		// job: no answer that the job has no statistics. Flink's job
		// list confirms it first (confirmGone); if the list shows the
		// job, its state and statistics are read again.
		p.Replace.Observed.State, p.Replace.Observed.Missing, p.LastError = "", true, notFound+errMessage(err)
		p.Phase, p.Requests = PhaseObserve, 1
		return Result{RequeueAfter: r.timing.poll()}, nil
	case permanent(err):
		// No statistics: decide on what is known.
	default:
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.timing.backoff(2)}, nil
	}
	p.LastError = ""
	return r.decide(ctx, p, now)
}

// seenCheckpoint is a checkpoint of a job that the Controller saw
// complete: its id, and when the Controller saw it completed.
type seenCheckpoint struct {
	job flinkapi.JobID
	id  int64
	at  time.Time
}

// cachedBeforeSeen reports whether stats, read of p's job before the
// cache's duration has passed since the Controller saw the job complete
// checkpoint r.seen, show no checkpoint that recent: Flink answered them
// from its cache, filled before that checkpoint completed. Once the cache
// has passed, its answers were filled after, and statistics that still
// do not show it (a job Flink knows anew under the same id) are decided
// on.
func (r *replacer) cachedBeforeSeen(p *Progress, stats *flinkapi.CheckpointStatistics, now time.Time) bool {
	s := r.seen
	return s.id > 0 && s.job == p.Replace.PreviousJobID && now.Before(s.at.Add(r.timing.cache())) && newestCheckpointID(stats) < s.id
}

// newestCheckpointID is the highest id of a completed checkpoint or
// savepoint, or of the one restored, that stats show; zero: none.
func newestCheckpointID(stats *flinkapi.CheckpointStatistics) int64 {
	var id int64
	for _, c := range []*flinkapi.CheckpointStats{stats.LatestCompleted, stats.LatestSavepoint} {
		if c != nil {
			id = max(id, c.ID)
		}
	}
	if r := stats.LatestRestored; r != nil {
		id = max(id, r.ID)
	}
	for _, c := range stats.History {
		if c.Status == flinkapi.CheckpointCompleted {
			id = max(id, c.ID)
		}
	}
	return id
}

// cachedSubsumed reports whether stats, read of p's job that was not
// seen ended, show its latest completed checkpoint discarded: Flink
// subsumed it after its cache answered them.
func cachedSubsumed(p *Progress, stats *flinkapi.CheckpointStatistics) bool {
	return cachedDiscarded(stats) && !ended(p) && !p.Replace.Observed.State.IsGloballyTerminal()
}

// newerSavepoint makes the job's latest completed savepoint in stats the
// newest savepoint known (Observed.Latest) when Flink triggered it after
// that one: a savepoint someone else took, or the operation's own, which
// the Progress times from when its trigger was recorded, possibly long
// before it was sent. Flink's trigger time is the one its checkpoints are
// compared with; timed at the recording, a savepoint sent after the
// caller was away would be taken for older than the checkpoints
// completed in between.
func newerSavepoint(p *Progress, stats *flinkapi.CheckpointStatistics) {
	c := stats.LatestSavepoint
	if c == nil || c.Status != flinkapi.CheckpointCompleted || c.ExternalPath == "" || c.Discarded || !c.TriggerTime.After(p.Replace.Observed.Latest.Time) {
		return
	}
	rec := savepoint.Record{Location: c.ExternalPath, Time: c.TriggerTime, JobID: p.Replace.PreviousJobID}
	if c.ExternalPath == p.Savepoint.Status.Location {
		rec.Reason = p.Savepoint.Status.Reason
	}
	p.Replace.Observed.Latest = rec
}

// mayHaveFailedOver reports whether the statistics of a job read RUNNING
// show neither a completed checkpoint nor a restore, the first time in
// this decision: a JobManager that failed over (with high availability)
// since the job's state was read answers so while it restores the job
// from its latest checkpoint, and deciding on them would take an older
// restore point for the job's newest state. The job's state is read
// again then: INITIALIZING or CREATED, the policy waits for it; RUNNING
// again, its statistics are read again and show the restore.
func mayHaveFailedOver(p *Progress, stats *flinkapi.CheckpointStatistics) bool {
	return p.Replace.Observed.State == flinkapi.JobRunning && !p.Replace.Observed.Reread &&
		stats.LatestCompleted == nil && stats.LatestRestored == nil
}

// cancelledFor reports whether the old job of p was cancelled for the
// retained checkpoint recorded as its restore point (LastState, or the
// fallback to it): the new job starts from that checkpoint or a newer one
// of the same job, never from older state.
func cancelledFor(p *Progress) bool {
	return p.Replace.StopOutcome == OutcomeSucceeded && p.Stop.Strategy == CancelWithoutState && p.Replace.RestoreKind == policy.KindCheckpoint && p.Replace.Request.IsZero()
}

// newestRetained updates the observed checkpoint of a job cancelled for
// it (cancelledFor) from the statistics read after the cancel: a newer
// retained checkpoint replaces it (Flink keeps only the latest), one the
// statistics show discarded is forgotten, keeping its time as the
// lower bound of its successor. Statistics that show neither leave it:
// the cancelled job's configuration retains it.
func newestRetained(p *Progress, stats *flinkapi.CheckpointStatistics, now time.Time) {
	for _, c := range stats.History {
		if c.ExternalPath != "" && c.ExternalPath == p.Replace.Observed.Checkpoint && c.Discarded {
			p.Replace.Observed.Checkpoint = ""
		}
	}
	if c := retainedState(stats); c.Path != "" && (p.Replace.Observed.Checkpoint == "" || !c.Time.Before(p.Replace.Observed.CheckpointTime)) {
		p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime, p.Replace.Observed.CheckpointRead = c.Path, c.Time, now
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// dropDiscarded forgets a checkpoint recorded as the restore point that
// the statistics show discarded: it is no restore point any more (a later
// checkpoint subsumed it before the cancel took effect).
func dropDiscarded(p *Progress, stats *flinkapi.CheckpointStatistics) {
	if p.Replace.RestoreKind != policy.KindCheckpoint || p.Replace.RestoreFrom == "" {
		return
	}
	for _, c := range stats.History {
		if c.ExternalPath == p.Replace.RestoreFrom && c.Discarded {
			p.Replace.RestoreFrom, p.Replace.RestoreKind = "", ""
			return
		}
	}
}

// confirmGone asks Flink's job list whether it knows the old job, after an
// answer about the job said it did not: the job is missing only if the
// list does not show it either; if it does, its state is read again.
func (r *replacer) confirmGone(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	known, st, err := listJob(ctx, r.client, p.Replace.PreviousJobID)
	switch {
	case err != nil:
		p.LastError = notFound + errMessage(err)
		return Result{RequeueAfter: r.timing.backoff(2)}, nil
	case known:
		p.Requests, p.Replace.Observed.Missing = 0, false
		p.LastError = "Flink lists the job (" + string(st) + ") that it said it did not know"
		return Result{RequeueAfter: r.timing.poll()}, nil
	}
	p.Requests, p.LastError = 0, ""
	p.Replace.Observed.State, p.Replace.Observed.Missing = "", true
	return r.decide(ctx, p, now)
}

// observed goes on once the job's state is known: to its checkpoints, or
// to the decision when it does not depend on them.
func (r *replacer) observed(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if r.skipCheckpoints != nil && r.skipCheckpoints(p.Replace.Observed.State) {
		return r.decide(ctx, p, now)
	}
	p.Phase = PhaseObserveCheckpoints
	return Result{}, nil
}

// observeRetention reads the job's checkpointing configuration and keeps
// the observed checkpoint only if Flink retains it when the job ended as
// it did (or, for a job still running, when it is cancelled): otherwise
// its files are gone, or will be once the job is cancelled.
func (r *replacer) observeRetention(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	done, ended := readRetention(ctx, r.client, p)
	if ended != "" {
		// The job ended since it was read (a stop with a savepoint from
		// outside, which discards its retained checkpoints): it is
		// observed again from its state.
		p.Phase, p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = PhaseObserve, "", time.Time{}
		p.LastError = "Flink lists the job " + string(ended) + " since it was read: observed again"
		return Result{}, nil
	}
	if !done {
		return Result{RequeueAfter: r.timing.backoff(2)}, nil
	}
	return r.decide(ctx, p, now)
}

// readRetention reads the checkpointing configuration of p's previous job
// and forgets the observed checkpoint unless Flink retains it (retains);
// with the retention unknown (no such call, the route unknown, or a job
// that Flink's job list does not show either) the checkpoint cannot be
// relied on. An answer that Flink does not know the job may come from a
// JobManager failing over while it knows the job: it is confirmed by
// Flink's job list in the next read (Progress.Stop.Unconfirmed), and the
// configuration read again if the list shows the job. It reports false
// after a transient answer, recorded in p.LastError: the read is to be
// repeated; ended is the state the job list shows for a job observed
// running that has ended since: the observation is out of date.
func readRetention(ctx context.Context, c API, p *Progress) (done bool, ended flinkapi.JobState) {
	if p.Stop.Unconfirmed {
		return confirmRetention(ctx, c, p)
	}
	retained := false
	cfg, err := c.CheckpointConfig(ctx, p.Replace.PreviousJobID)
	switch {
	case err == nil:
		retained = retains(cfg, p.Replace.Observed.State)
	case flinkapi.IsJobNotFound(err):
		p.LastError, p.Stop.Unconfirmed = notFound+errMessage(err), true
		return false, ""
	case !permanent(err):
		p.LastError = errMessage(err)
		return false, ""
	}
	if !retained {
		p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = "", time.Time{}
	}
	p.LastError = ""
	return true, ""
}

// confirmRetention asks Flink's job list about p's previous job after
// an answer about its checkpointing configuration said Flink did not know
// it: a job the list shows has its configuration read again; one it does
// not show has no retention to rely on.
func confirmRetention(ctx context.Context, c API, p *Progress) (bool, flinkapi.JobState) {
	known, st, err := listJob(ctx, c, p.Replace.PreviousJobID)
	switch {
	case err != nil:
		p.LastError = notFound + errMessage(err)
		return false, ""
	case known && st.IsGloballyTerminal() && !p.Replace.Observed.State.IsGloballyTerminal():
		p.Stop.Unconfirmed = false
		return false, st
	case known:
		p.Stop.Unconfirmed = false
		p.LastError = "Flink lists the job (" + string(st) + ") whose checkpointing configuration it said it did not know"
		return false, ""
	}
	p.Stop.Unconfirmed, p.LastError = false, ""
	p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = "", time.Time{}
	return true, ""
}

// retains reports whether Flink keeps the latest checkpoint of a job
// that ended in state (for a job still running: once it is cancelled):
// with externalized checkpoints, after a failure always, after a cancel
// unless they are deleted on cancellation, after finishing never.
func retains(cfg *flinkapi.CheckpointConfig, state flinkapi.JobState) bool {
	switch {
	case !cfg.ExternalizationEnabled, state == flinkapi.JobFinished:
		return false
	case state == flinkapi.JobFailed:
		return true
	}
	return !cfg.DeleteOnCancellation
}

// decide asks the policy and starts what it decided, without a request.
func (r *replacer) decide(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if id := r.toAdopt(p); id != "" {
		p.Phase, p.Replace.Observed.Adopt = PhaseAdopt, id
		return Result{}, nil
	}
	if cancelledFor(p) {
		if p.Replace.Observed.Checkpoint != "" {
			// The policy chose to restore from a retained checkpoint, and
			// the job was cancelled for it: the newest one is the restore
			// point, whatever its age now.
			p.Replace.RestoreFrom, p.Replace.RestoreKind = p.Replace.Observed.Checkpoint, policy.KindCheckpoint
			return r.startSubmit(ctx, p)
		}
		// The checkpoint recorded was discarded, and no newer one is
		// known: the policy decides on what is.
		p.Replace.RestoreFrom, p.Replace.RestoreKind = "", ""
	}
	d := r.evaluate(r.observations(p, now), now)
	p.Replace.Decision, p.Replace.Observed.Reread = d.Reason, false
	return r.act(ctx, p, d, now)
}

// toAdopt is the id of a new job an earlier operation may have started
// already, to be looked up in Flink's job list before deciding: once, for
// an old job that no longer runs (or never did). With a Deployer the new
// job would run in a cluster of its own: Deploy, idempotent for the job
// id, finds it instead. Empty: nothing to look up.
func (r *replacer) toAdopt(p *Progress) flinkapi.JobID {
	if p.Replace.Observed.Lookups != 0 || p.Submit.NewJobID != "" || r.deployer != nil || runsAgain(p.Replace.Observed.State) || p.Replace.Observed.State == flinkapi.JobCancelling {
		return ""
	}
	id, _ := r.firstJobID(p)
	return id
}

// observations is what the policy decides on: what p observed of the old
// job, its state and the savepoints tried.
func (r *replacer) observations(p *Progress, now time.Time) policy.Observations {
	obs := policy.Observations{
		JobManagerReachable: true, LastContact: now, SpecChanged: true, FirstDeploy: r.firstDeploy,
		SavepointAttempts: p.Replace.Attempts, LatestSavepoint: p.Replace.Observed.Latest,
		LatestCheckpoint: policy.Checkpoint{Path: p.Replace.Observed.Checkpoint, Time: p.Replace.Observed.CheckpointTime},
		Restore:          p.Replace.Request,
	}
	if p.Replace.Attempts > 0 {
		obs.Savepoint = p.Savepoint.Status
		if obs.Savepoint.Location == "" {
			obs.Savepoint.Location = p.Savepoint.Location
		}
	}
	if !p.Replace.Observed.Missing && p.Replace.PreviousJobID != "" {
		obs.Job = &policy.Job{ID: p.Replace.PreviousJobID, State: p.Replace.Observed.State, StateSince: p.Replace.Observed.Since, EndTime: p.Replace.Observed.End}
	}
	return obs
}

// act starts what the policy decided (d), without a request.
func (r *replacer) act(ctx context.Context, p *Progress, d policy.Decision, now time.Time) (Result, error) {
	switch d.Action {
	case policy.ActionProceed, policy.ActionRestart:
		if !setRestore(p, d.RestorePoint) {
			return finish(p, OutcomeBlocked, fmt.Sprintf("%s: the policy chose no restore point (%s)", d.Reason, d.Message())), nil
		}
		return r.startSubmit(ctx, p)
	case policy.ActionStopWithSavepoint:
		return r.stopWithSavepoint(ctx, p, d, now)
	case policy.ActionCancelFirst:
		if d.RestorePoint.Kind == policy.KindCheckpoint && stale(p, now) {
			return r.reobserve(p, now), nil
		}
		if !setRestore(p, d.RestorePoint) || p.Replace.RestoreFrom == "" && !r.allowEmpty || r.stop.Client == nil {
			return finish(p, OutcomeBlocked, fmt.Sprintf("%s: refusing to cancel the job without a restore point (%s)", d.Reason, d.Message())), nil
		}
		return r.startStop(ctx, p, CancelWithoutState, r.stop.Timing)
	case policy.ActionWait:
		p.Phase, p.LastError = PhaseObserve, "the policy waits: "+d.Message()
		if d.Deadline.After(now) {
			p.Deadline = d.Deadline.Add(orDefault(r.timing.Stop, defaultStopTimeout))
		}
		return Result{RequeueAfter: max(min(d.RequeueAfter, 16*r.timing.poll()), r.timing.poll())}, nil
	case policy.ActionNone:
		return finish(p, OutcomeNotNeeded, string(d.Reason)+": "+d.Message()), nil
	}
	return finish(p, OutcomeBlocked, string(d.Reason)+": "+d.Message()), nil
}

// stopWithSavepoint starts the stop of the old job with a savepoint, by
// the policy's deadline (d).
func (r *replacer) stopWithSavepoint(ctx context.Context, p *Progress, d policy.Decision, now time.Time) (Result, error) {
	if p.Replace.PreviousJobID == "" || r.stop.Client == nil {
		return finish(p, OutcomeBlocked, string(d.Reason)+": "+d.Message()), nil
	}
	strategy, err := ChooseStopStrategy(flinkapi.Version{}, r.stop.Mode, r.stop.Strategy)
	if err != nil {
		return Result{}, err
	}
	if strategy == CancelWithoutState {
		return Result{}, fmt.Errorf("%w: the policy asks for a savepoint", ErrStateRequired)
	}
	p.Replace.Attempts++
	timing := r.stop.Timing
	if d.Deadline.After(now) {
		timing.Savepoint = d.Deadline.Sub(now)
	}
	return r.startStop(ctx, p, strategy, timing)
}

// checkpointReadAge bounds the age of the checkpoint statistics a
// running job is cancelled on: Flink keeps only its latest checkpoints,
// and one read longer ago may have been discarded since; and the job
// checkpoints on, so that state chosen longer ago (a savepoint, while the
// job had no checkpoint yet) may be older than its newest by then.
const checkpointReadAge = 10 * time.Second

// stale reports whether the checkpoint statistics the decision of p took
// were read more than checkpointReadAge before now (the caller was away).
// A Progress of an older format does not know when they were read.
func stale(p *Progress, now time.Time) bool {
	return !p.Replace.Observed.CheckpointRead.IsZero() && now.Sub(p.Replace.Observed.CheckpointRead) > checkpointReadAge
}

// reobserve goes back to the observation of the old job, to decide on
// what Flink shows now.
func (r *replacer) reobserve(p *Progress, now time.Time) Result {
	resetPhase(p)
	p.Stop.Strategy, p.Replace.RestoreFrom, p.Replace.RestoreKind = "", "", ""
	p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime, p.Replace.Observed.CheckpointRead = "", time.Time{}, time.Time{}
	p.Phase = PhaseObserve
	p.Deadline = now.Add(orDefault(r.timing.Stop, defaultStopTimeout))
	return Result{}
}

// setRestore records the restore point; false if it names neither state
// nor an explicit start without state.
func setRestore(p *Progress, rp policy.RestorePoint) bool {
	switch {
	case rp.IsSet():
		p.Replace.RestoreFrom, p.Replace.RestoreKind = rp.Path, rp.Kind
	case rp.Kind == policy.KindNone:
		p.Replace.RestoreFrom, p.Replace.RestoreKind = "", policy.KindNone
	default:
		return false
	}
	return true
}

// resetPhase prepares p for the next sub-operation, keeping everything it
// recorded (location, restore point, job ids, reason).
func resetPhase(p *Progress) {
	p.Phase, p.Outcome, p.Requests, p.LastError, p.Deadline = "", "", 0, "", time.Time{}
	p.Stop.Unconfirmed = false
}

// startStop runs the first Step of a Stop (which sends nothing) on p.
func (r *replacer) startStop(ctx context.Context, p *Progress, strategy StopStrategy, timing Timing) (Result, error) {
	resetPhase(p)
	p.Stop.Strategy = ""
	op := r.stop
	op.Job, op.Strategy, op.Timing = p.Replace.PreviousJobID, strategy, timing
	if strategy == CancelWithoutState {
		// Chosen only once a restore point is recorded, or when the policy
		// allows starting without state.
		op.Mode = policy.UpgradeStateless
	}
	return op.step(ctx, p)
}

func (r *replacer) stopOp(p *Progress) *Stop {
	op := r.stop
	op.Job = p.Replace.PreviousJobID
	if p.Stop.Strategy == CancelWithoutState {
		op.Mode = policy.UpgradeStateless // see startStop
	}
	return &op
}

// afterStop goes on once the stop ended: to the submission after a
// success, else back to the policy.
func (r *replacer) afterStop(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	o := p.Outcome
	p.Replace.StopOutcome = o
	if o == OutcomeSucceeded {
		if p.Stop.Strategy == CancelWithoutState && p.Replace.RestoreKind == policy.KindCheckpoint && p.Replace.Request.IsZero() {
			// Flink keeps only the latest checkpoint: the one recorded
			// before the cancel may have been subsumed by a later one
			// since. Read the cancelled job's final retained checkpoint
			// and decide again.
			// The checkpoint recorded stays observed (cancelledFor): a
			// read that shows no newer one (a JobManager that failed over
			// answers an empty history) keeps it as the restore point.
			resetPhase(p)
			if p.Replace.Observed.Checkpoint != p.Replace.RestoreFrom {
				p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = p.Replace.RestoreFrom, time.Time{}
			}
			p.Phase = PhaseObserve
			p.Deadline = now.Add(orDefault(r.timing.Stop, defaultStopTimeout))
			return Result{}, nil
		}
		if p.Stop.Strategy == CancelWithoutState && p.Replace.RestoreKind == policy.KindSavepoint && p.Replace.Request.IsZero() &&
			ended(p) && p.Replace.Observed.State != flinkapi.JobCanceled {
			// The job to cancel for a savepoint, its newest state when
			// the policy chose it (it had no checkpoint of its own
			// yet), ended otherwise: FINISHED by a stop with a
			// savepoint from outside before the cancel took, or
			// FAILED. That stop's savepoint is newer state: the job's
			// statistics are read again, and the policy decides on
			// them.
			resetPhase(p)
			p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = "", time.Time{}
			p.Phase = PhaseObserve
			p.Deadline = now.Add(orDefault(r.timing.Stop, defaultStopTimeout))
			return Result{}, nil
		}
		if p.Stop.Strategy != CancelWithoutState {
			if p.Savepoint.Location == "" {
				return finish(p, OutcomeSavepointLost, "the stop succeeded without a savepoint location"), nil
			}
			p.Replace.RestoreFrom, p.Replace.RestoreKind = p.Savepoint.Location, policy.KindSavepoint
			if !p.Replace.Request.IsZero() {
				// The savepoint keeps the old state for the user (in
				// p.Location); the new job starts where they asked.
				p.Replace.RestoreFrom = p.Replace.Request.Path
			}
		}
		return r.startSubmit(ctx, p)
	}
	if p.Stop.Strategy == CancelWithoutState {
		return finish(p, o, "cancelling the old job: "+p.Reason), nil
	}
	// The savepoint failed, timed out, was lost, or the job ended or
	// failed while stopping: look at the job again and let the policy
	// decide (retry, fall back, or end). The checkpoint observed before
	// may have been subsumed since: it is read again.
	resetPhase(p)
	p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = "", time.Time{}
	p.Phase = PhaseObserve
	p.Deadline = now.Add(orDefault(r.timing.Stop, defaultStopTimeout))
	return Result{RequeueAfter: r.timing.poll()}, nil
}

// startSubmit runs the first Step of a Submit (which sends nothing) on p.
// A retained checkpoint chosen as the restore point that the storage
// shows gone is no restore point: the policy decides again without it.
func (r *replacer) startSubmit(ctx context.Context, p *Progress) (Result, error) {
	if r.submit.JobID != "" && r.submit.JobID == p.Replace.PreviousJobID {
		return finish(p, OutcomeSubmitFailed, "the new job's id is the old job's id "+string(p.Replace.PreviousJobID)), nil
	}
	if !r.checkpointOnStorage(ctx, p) || r.unreadCheckpoint(p) {
		if p.Replace.RestoreFrom == p.Replace.Observed.Latest.Location {
			p.Replace.Observed.Latest = savepoint.Record{} // a checkpoint recorded as the newest state
		}
		p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = "", time.Time{}
		p.Replace.RestoreFrom, p.Replace.RestoreKind = "", ""
		return r.decide(ctx, p, r.clock.Now())
	}
	resetPhase(p)
	return r.submitOp(p).step(ctx, p)
}

func (r *replacer) submitOp(p *Progress) *Submit {
	op := r.submit
	if op.JarID == "" && p.Replace.Preflight != nil {
		op.JarID = p.Submit.JarID // uploaded by the preflight
	}
	if op.JobID == "" {
		op.JobID = p.Replace.Observed.Adopt
		if op.JobID == "" {
			op.JobID, _ = r.firstJobID(p)
		}
		op.replaces, op.derive = r.job, r.deployer == nil
	}
	op.Run.SavepointPath = p.Replace.RestoreFrom
	if p.Replace.RestoreFrom != "" && p.Replace.RestoreFrom == p.Replace.Request.Path && p.Replace.Request.AllowNonRestoredState {
		op.Run.AllowNonRestoredState = true
	}
	return &op
}

// checkpointOnStorage checks a start from the retained checkpoint
// p.RestoreFrom (<dir>/<job>/chk-N; also one the status records as the
// newest state, unless a restore request names it) against r.storage,
// read in this call, where a checkpoint is complete once its _metadata is
// written: the newest complete checkpoint of that job directory numbered
// N or more becomes the restore point (Flink may have completed later
// ones since the reading that chose it, and discarded it); one whose
// _metadata the storage (StorageEntries) shows written before the chosen
// one's is an earlier run's of the same job id, numbered before the
// numbering started again, and is passed over. It reports false when the job's directory shows none, or shows nothing while the
// storage shows where it lies (checkpointDirSeen): the checkpoint is
// gone, as after a cancel that deletes checkpoints or a job that
// finished. A listing that fails is sent again (storageTries in all).
// A storage that is not set, cannot be read, shows nothing of the
// checkpoint directory nor of the directory above it (not mounted where
// the caller runs), or lists the chosen checkpoint's directory but
// nothing in it (a listing cut short) leaves the restore point as
// Flink's reading chose it:
// Flink refuses a start from a checkpoint that is not there.
func (r *replacer) checkpointOnStorage(ctx context.Context, p *Progress) bool {
	if r.storage == nil || p.Replace.RestoreFrom == "" || p.Replace.RestoreFrom == p.Replace.Request.Path || p.Replace.RestoreFrom == p.Savepoint.Location {
		return true
	}
	jobDir, n, ok := checkpointOf(p.Replace.RestoreFrom)
	if !ok {
		return true // a savepoint
	}
	entries, err := r.listTried(ctx, jobDir)
	if err == nil && len(entries) == 0 {
		// A listing cut short (a page lost) may show nothing: the
		// directory is read once more before it counts as empty.
		entries, err = r.listTried(ctx, jobDir)
	}
	switch {
	case err != nil:
		return true
	case len(entries) == 0:
		return !r.checkpointDirSeen(ctx, jobDir)
	}
	found := checkpointsFrom(entries, n)
	// The time the chosen checkpoint's _metadata was written, when the
	// storage tells it and a higher-numbered one is listed: a job
	// started again under the same job id without its state (a
	// JobManager that lost it without high availability, a fixed job
	// id) numbers its checkpoints from 1 again in the same directory,
	// so a higher number written before it is an earlier run's.
	var chosenAt time.Time
	var chosen []StorageEntry
	if len(found) > 0 && found[0].n > n {
		if _, ok := r.storage.(StorageEntries); ok {
			if chosen, err = r.entriesTried(ctx, strings.TrimSuffix(p.Replace.RestoreFrom, "/")); err == nil {
				chosenAt = metadataWritten(chosen)
			}
		}
	}
	for _, c := range found {
		files := chosen
		if c.n != n || chosen == nil {
			if files, err = r.entriesTried(ctx, c.path); err != nil {
				return true
			}
		}
		if i := slices.IndexFunc(files, func(f StorageEntry) bool { return path.Base(f.Path) == "_metadata" }); i >= 0 {
			if at := files[i].Modified; c.n > n && !chosenAt.IsZero() && !at.IsZero() && at.Before(chosenAt) {
				continue // an earlier run's checkpoint
			}
			restoreFromNewer(p, c.path)
			return true
		}
		if len(files) == 0 && c.n == n {
			// The chosen checkpoint's directory is listed above, yet
			// shows nothing of its own: a listing cut short (an object
			// store shows no directory without objects under it).
			// Nothing shows it gone: Flink's reading stands.
			return true
		}
	}
	return false
}

// listedCheckpoint is a chk-N directory a listing showed.
type listedCheckpoint struct {
	path string
	n    int64
}

// checkpointsFrom are the chk-N directories among entries whose N is n
// or more, the newest first.
func checkpointsFrom(entries []string, n int64) []listedCheckpoint {
	var found []listedCheckpoint
	for _, e := range entries {
		name := path.Base(strings.TrimSuffix(e, "/"))
		if m, err := strconv.ParseInt(strings.TrimPrefix(name, "chk-"), 10, 64); err == nil && isCheckpointName(name) && m >= n {
			found = append(found, listedCheckpoint{strings.TrimSuffix(e, "/"), m})
		}
	}
	slices.SortFunc(found, func(a, b listedCheckpoint) int { return cmp.Compare(b.n, a.n) })
	return found
}

// restoreFromNewer makes the complete checkpoint at loc, the newest on
// storage, the restore point of p when it is not already.
func restoreFromNewer(p *Progress, loc string) {
	if loc == p.Replace.RestoreFrom {
		return
	}
	// Its time is not known: the one chosen's is its lower bound.
	if p.Replace.Observed.Checkpoint != p.Replace.RestoreFrom {
		p.Replace.Observed.CheckpointTime = time.Time{}
	}
	p.Replace.RestoreFrom, p.Replace.Observed.Checkpoint = loc, loc
}

// storageTries is how many times a listing that checks a restore point
// is sent before its error counts (an object store fails some requests
// and throttles others).
const storageTries = 3

// listTried lists dir on r.storage, sending the request again after an
// error, up to storageTries in all.
func (r *replacer) listTried(ctx context.Context, dir string) ([]string, error) {
	var err error
	for range storageTries {
		var entries []string
		if entries, err = r.storage.List(ctx, dir); err == nil || ctx.Err() != nil {
			return entries, err
		}
	}
	return nil, err
}

// entriesTried lists dir on r.storage as listTried does, with the
// entries' modification times when the storage tells them
// (StorageEntries); without, they are zero.
func (r *replacer) entriesTried(ctx context.Context, dir string) ([]StorageEntry, error) {
	se, ok := r.storage.(StorageEntries)
	if !ok {
		paths, err := r.listTried(ctx, dir)
		if err != nil {
			return nil, err
		}
		es := make([]StorageEntry, 0, len(paths))
		for _, p := range paths {
			es = append(es, StorageEntry{Path: p})
		}
		return es, nil
	}
	var err error
	for range storageTries {
		var es []StorageEntry
		if es, err = se.Entries(ctx, dir); err == nil || ctx.Err() != nil {
			return es, err
		}
	}
	return nil, err
}

// metadataWritten is when the _metadata among a checkpoint directory's
// entries was written; zero when it is not there or its time is not
// known.
func metadataWritten(es []StorageEntry) time.Time {
	for _, e := range es {
		if path.Base(e.Path) == "_metadata" {
			return e.Modified
		}
	}
	return time.Time{}
}

// checkpointDirSeen reports whether r.storage shows where the job
// directory jobDir (<dir>/<job>, found empty) lies: <dir> lists other
// jobs' directories, or, <dir> being empty too, the directory above it
// lists entries (<dir> itself on a file system, which keeps an empty
// directory; the savepoints beside it on an object store, where a prefix
// with nothing under it does not exist). Flink has then discarded the
// job's checkpoints. A listing that fails, or a storage that shows
// nothing at either level, reports false: the storage may not see where
// Flink writes.
func (r *replacer) checkpointDirSeen(ctx context.Context, jobDir string) bool {
	dir := parentDir(jobDir)
	if dir == "" {
		return false
	}
	others, err := r.listTried(ctx, dir)
	switch {
	case err != nil:
		return false
	case len(others) > 0:
		return true
	}
	above := parentDir(dir)
	if above == "" {
		return false
	}
	entries, err := r.listTried(ctx, above)
	return err == nil && len(entries) > 0
}

// unreadCheckpoint reports a start from the checkpoint the status
// recorded as the newest state of the job it replaces while that job ran
// on (latestRanOn: an adoption records the latest checkpoint of a job
// that retains them), when neither a reading of this operation nor the
// storage shows it retained: Flink discards a checkpoint once the next
// one completes, and a job that ran on after the record (and that Flink
// may have forgotten since) may have completed others. Such a
// checkpoint is no restore point: the policy decides without it. With a
// Storage, checkpointOnStorage has checked it.
func (r *replacer) unreadCheckpoint(p *Progress) bool {
	if !r.latestRanOn || r.storage != nil || p.Replace.RestoreFrom == "" || p.Replace.RestoreFrom != p.Replace.Observed.Latest.Location ||
		p.Replace.RestoreFrom == p.Replace.Observed.Checkpoint || p.Replace.RestoreFrom == p.Replace.Request.Path || p.Replace.RestoreFrom == p.Savepoint.Location {
		return false
	}
	_, _, ok := checkpointOf(p.Replace.RestoreFrom)
	return ok
}

// checkpointOf splits loc, a checkpoint <dir>/<job>/chk-N, into the
// job's directory and N.
func checkpointOf(loc string) (jobDir string, n int64, ok bool) {
	loc = strings.TrimSuffix(loc, "/")
	i := strings.LastIndex(loc, "/")
	if i <= 0 || !isCheckpointName(loc[i+1:]) {
		return "", 0, false
	}
	n, err := strconv.ParseInt(loc[i+len("/chk-"):], 10, 64)
	return loc[:i], n, err == nil
}

// ReplaceProgress is the record, in a Progress, of an operation that
// replaces or stops a job: Upgrade, Restart, Teardown, a Rescale by
// upgrade, BlueGreen and Canary.
type ReplaceProgress struct {
	// PreviousJobID is the job Upgrade, Restart or Teardown replaces or
	// stops; Progress.JobID becomes the new job's id once it is chosen.
	PreviousJobID flinkapi.JobID `json:"previousJobID,omitempty"`
	// Ending is the outcome the operation ends with once the old job's
	// cluster is deleted (PhaseDeleteCluster).
	Ending Outcome `json:"ending,omitempty"`
	// Observed is what Upgrade and Restart saw of the previous job.
	Observed Observed `json:"observed,omitzero"`
	// Decision is the reason of the policy's latest decision.
	Decision policy.Reason `json:"decision,omitempty"`
	// RestoreFrom is the path the new job starts from, recorded before
	// the old job is cancelled or the new one submitted; empty: without
	// state. RestoreKind says what it is.
	RestoreFrom string `json:"restoreFrom,omitempty"`
	// RestoreKind is Savepoint, Checkpoint or None once chosen.
	RestoreKind policy.RestoreKind `json:"restoreKind,omitempty"`
	// Attempts counts the savepoints Upgrade or Teardown triggered.
	Attempts int `json:"attempts,omitempty"`
	// StopOutcome is how the stop of Upgrade or Teardown ended.
	StopOutcome Outcome `json:"stopOutcome,omitempty"`
	// Request is the restore request Upgrade carries out, recorded at its
	// first Step (see Upgrade.Restore and HandledRestore).
	Request policy.RestoreRequest `json:"request,omitzero"`
	// Preflight is what Upgrade's preflight read and found before the
	// old job was touched (format 4); nil when none was asked for.
	Preflight *Preflight `json:"preflight,omitempty"`
}

// detachedJobID is the first id of the jobs deployed beside the detached
// job id: of a seed of their own, never one of the ids an upgrade of id
// or of the deployment's name gives.
func detachedJobID(id flinkapi.JobID) flinkapi.JobID {
	return derivedJobID("detached\x00" + strings.ToLower(string(id)))
}
