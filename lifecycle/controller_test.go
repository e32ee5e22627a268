package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// cluster is a fake JobManager with a Controller for one job.
type cluster struct {
	t     *testing.T
	srv   *flinktest.Server
	c     *flinkapi.Client
	store *MemoryStore
	jar   string
	jars  *Jars // the directory of jar
	// resume sends the status through JSON after every call, as a
	// caller that stores it and restarts.
	resume bool
	st     JobStatus
	calls  int
	// maxRequests is the most requests one call sent.
	maxRequests int
	// deployer, if set, starts the jobs in application clusters; the
	// Controller then has no Env.Client.
	deployer *appDeployer
	// noStore builds the Controller without a restore-point store.
	noStore bool
	// poll, if set, is the Controller's PollInterval (default 5 s).
	poll time.Duration
	// name, if set, is the Controller's Name (default app/counter).
	name string
	// storage is the Controller's Storage, audited every auditInterval
	// (0: the default).
	storage       Storage
	auditInterval time.Duration
	// secrets and logger, if set, are the Controller's Secrets and Logger.
	secrets Secrets
	logger  *slog.Logger
}

func newCluster(t *testing.T, resume bool, opts ...flinktest.Option) *cluster {
	t.Helper()
	opts = append([]flinktest.Option{flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1), flinktest.WithSlots(4)}, opts...)
	srv := flinktest.NewServer(opts...)
	t.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, srv: srv, c: c, store: &MemoryStore{}, jar: jar, jars: jarsOf(t, jar), resume: resume}
}

func (k *cluster) controller() *Controller {
	c := &Controller{Env: Env{Client: k.c, Clock: k.srv.Clock(), Jars: k.jars}, Store: k.store, Name: "app/counter", PollInterval: 5 * time.Second,
		RetryInterval: 20 * time.Second}
	if k.deployer != nil {
		c.Client, c.Deployer = nil, k.deployer
	}
	if k.noStore {
		c.Store = nil
	}
	if k.poll > 0 {
		c.PollInterval = k.poll
	}
	if k.name != "" {
		c.Name = k.name
	}
	c.Storage, c.AuditInterval = k.storage, k.auditInterval
	c.Secrets = k.secrets
	if k.logger != nil {
		c.Logger = k.logger
	}
	return c
}

// spec is a job spec of the counter job writing to out.
func (k *cluster) spec(out string, extra ...string) JobSpec {
	return JobSpec{
		Job: JobTemplate{JarFile: k.jar, Args: append([]string{"--out", out, "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"}, extra...),
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
	}
}

// call runs one Reconcile (or Delete) and moves the clock by its
// RequeueAfter.
func (k *cluster) call(spec JobSpec, del bool) Result {
	k.t.Helper()
	ctrl := k.controller()
	before := k.srv.RequestCount()
	var res Result
	var err error
	if del {
		res, err = ctrl.Delete(context.Background(), spec, &k.st)
	} else {
		res, err = ctrl.Reconcile(context.Background(), spec, &k.st)
	}
	if err != nil {
		k.t.Fatalf("call %d: %v (status %+v)", k.calls, err, k.st)
	}
	k.calls++
	if testing.Verbose() && os.Getenv("CONTROLLER_TRACE") != "" {
		k.t.Logf("call %d: %s %s phase=%s outcome=%s job=%s state=%s reason=%s", k.calls, k.st.Action, k.st.Target.Fingerprint(), k.st.Progress.Phase,
			k.st.Progress.Outcome, k.st.JobID, k.st.State, k.st.Reason)
	}
	k.maxRequests = max(k.maxRequests, k.srv.RequestCount()-before)
	if k.resume {
		b, err := json.Marshal(k.st)
		if err != nil {
			k.t.Fatal(err)
		}
		k.st = JobStatus{}
		if err := json.Unmarshal(b, &k.st); err != nil {
			k.t.Fatal(err)
		}
	}
	k.srv.Clock().Advance(res.RequeueAfter)
	return res
}

// run calls Reconcile for d on the clock.
func (k *cluster) run(spec JobSpec, d time.Duration) {
	k.t.Helper()
	for end := k.srv.Clock().Now().Add(d); k.srv.Clock().Now().Before(end); {
		k.call(spec, false)
	}
}

// until calls Reconcile until done holds, at most calls times.
func (k *cluster) until(what string, spec JobSpec, calls int, done func(*JobStatus) bool) {
	k.t.Helper()
	for range calls {
		if done(&k.st) {
			return
		}
		k.call(spec, false)
	}
	if !done(&k.st) {
		k.t.Fatalf("%s: not reached within %d calls: status %+v", what, calls, k.st)
	}
}

// settle calls Reconcile until no action is in flight and the job runs
// the spec's template, then a few more times at rest.
func (k *cluster) settle(what string, spec JobSpec) {
	k.t.Helper()
	k.call(spec, false)
	k.until(what, spec, 300, func(st *JobStatus) bool {
		return !st.InFlight() && st.State == policy.Running && st.Deployed.equal(spec.Job) && st.Stable.equal(st.Deployed)
	})
}

func (k *cluster) job() flinktest.JobInfo {
	info, _ := k.srv.Job(k.st.JobID)
	return info
}

func (k *cluster) live() []string {
	var out []string
	for _, j := range k.srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			out = append(out, string(j.ID)+" "+string(j.State))
		}
	}
	return out
}

// TestControllerLifecycle drives one job through its whole life on the
// fake JobManager: create, update (counts continue), failure and
// restart, suspend and resume, a rescale, periodic savepoints with
// disposal, a restore request, an upgrade to a job that fails at start
// rolled back to the last stable one, delete with a final savepoint and
// create again by the same name. Uninterrupted and with the status sent
// through JSON after every call.
func TestControllerLifecycle(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.Rollback = RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}

			// Create.
			k.settle("create", spec)
			first := k.st.JobID
			if k.st.Action != ActionDeploy || len(k.live()) != 1 {
				t.Fatalf("create: action %s, live %v", k.st.Action, k.live())
			}

			// Update: stop with a savepoint, start from it.
			k.srv.Clock().Advance(5 * time.Second)
			before := k.job().Events
			spec.Job.Args = append(spec.Job.Args, "--name", "v2")
			k.settle("update", spec)
			if k.st.JobID == first || k.st.Action != ActionUpgrade || k.st.UpgradeFrom.Location == "" || k.job().RestoredFrom != k.st.UpgradeFrom.Location {
				t.Fatalf("update: job %s (first %s), action %s, upgrade from %+v, restored from %q", k.st.JobID, first, k.st.Action, k.st.UpgradeFrom, k.job().RestoredFrom)
			}
			if k.job().Events < before || len(k.live()) != 1 {
				t.Errorf("update: the counts did not continue (%d < %d) or %v run", k.job().Events, before, k.live())
			}

			// Failure: the restart policy starts it again.
			k.srv.Clock().Advance(5 * time.Second)
			failed := k.st.JobID
			if err := k.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
				t.Fatal(err)
			}
			k.srv.Clock().Advance(2 * time.Second)
			k.settle("restart", spec)
			if k.st.JobID == failed || k.st.Restarts != 1 || !strings.Contains(k.st.Failure, "boom") || len(k.live()) != 1 {
				t.Fatalf("restart: job %s, restarts %d, failure %q, live %v", k.st.JobID, k.st.Restarts, k.st.Failure, k.live())
			}

			// Suspend and resume.
			spec.State = DesiredSuspended
			k.until("suspend", spec, 100, func(st *JobStatus) bool { return st.Suspended && !st.InFlight() })
			suspended := k.st.JobID
			if info, _ := k.srv.Job(suspended); info.State != flinkapi.JobFinished || k.st.Latest.Location == "" || len(k.live()) != 0 {
				t.Fatalf("suspend: job %s, latest %+v, live %v", info.State, k.st.Latest, k.live())
			}
			k.call(spec, false)
			if k.st.State != policy.Suspended || k.st.InFlight() {
				t.Errorf("suspended at rest: %s %s", k.st.State, k.st.Reason)
			}
			spec.State = DesiredRunning
			k.settle("resume", spec)
			if k.job().RestoredFrom != k.st.Latest.Location && k.job().RestoredFrom == "" {
				t.Errorf("resume: restored from %q", k.job().RestoredFrom)
			}

			// Rescale (default scheduler: through an upgrade).
			spec.Job.Parallelism = 2
			k.settle("rescale", spec)
			if k.st.Action != ActionRescale || len(k.live()) != 1 {
				t.Errorf("rescale: action %s, live %v", k.st.Action, k.live())
			}

			// Periodic savepoints, the oldest disposed of.
			spec.Savepoints = SavepointPolicy{Interval: policy.Duration(10 * time.Second), MaxCount: 2}
			k.run(spec, time.Minute)
			// Kept: the newest, those taken for updates, and the one the
			// job was started from; the other scheduled ones went.
			scheduled, taken := 0, 0
			for _, r := range k.st.Savepoints.Records {
				if ok, _ := k.srv.SavepointExists(r.Location); !ok {
					t.Errorf("the history keeps %s, which is gone", r.Location)
				}
				if r.Reason == savepoint.ReasonScheduled {
					scheduled++
				}
			}
			for _, s := range k.srv.Snapshots() {
				if s.Savepoint && s.Job == k.st.JobID {
					taken++
				}
			}
			if scheduled != 1 || taken < 4 || k.st.Latest.Reason != savepoint.ReasonScheduled {
				t.Errorf("%d scheduled savepoints kept of %d taken; latest %+v; history %+v", scheduled, taken, k.st.Latest, k.st.Savepoints.Records)
			}
			spec.Savepoints = SavepointPolicy{}

			// A restore request: from the upgrade's savepoint, once.
			spec.Restore = policy.RestoreRequest{Path: k.st.UpgradeFrom.Location, Token: "r1"}
			k.until("restore request", spec, 200, func(st *JobStatus) bool { return st.RestoreHandled == "r1" && !st.InFlight() })
			k.settle("after the restore request", spec)
			if k.job().RestoredFrom != spec.Restore.Path {
				t.Errorf("restore request: restored from %q, want %q", k.job().RestoredFrom, spec.Restore.Path)
			}
			restored := k.st.JobID
			for range 10 {
				k.call(spec, false)
			}
			if k.st.JobID != restored {
				t.Errorf("the restore request was carried out again")
			}

			// An upgrade to a job that fails at start: rolled back to the
			// last stable template from the upgrade's savepoint.
			stable := k.st.Deployed
			bad := spec
			bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--fail-at", "1")
			k.until("rollback", bad, 300, func(st *JobStatus) bool {
				return st.Action == ActionRollback && st.Progress.Done()
			})
			if k.st.Progress.Outcome != OutcomeSucceeded || !k.st.Deployed.equal(stable) || k.st.FailedJob != bad.Job.Fingerprint() {
				t.Fatalf("rollback: %s (%s); deployed %+v", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Deployed)
			}
			if k.job().RestoredFrom != k.st.UpgradeFrom.Location || len(k.live()) != 1 {
				t.Errorf("rollback: restored from %q, want %q; live %v", k.job().RestoredFrom, k.st.UpgradeFrom.Location, k.live())
			}
			rolledBack := k.st.JobID
			for range 20 {
				k.call(bad, false)
			}
			if k.st.JobID != rolledBack || k.st.Reason != "RolledBack" {
				t.Errorf("the failed spec was tried again: job %s (%s)", k.st.JobID, k.st.Reason)
			}

			// Delete: a final savepoint recorded under the name.
			spec.Restore = policy.RestoreRequest{}
			var done bool
			for range 100 {
				if res := k.call(spec, true); res.Done {
					done = true
					break
				}
			}
			rec, ok, _ := k.store.Get(context.Background(), "app/counter")
			if !done || !ok || len(k.live()) != 0 || rec.Location != k.st.Progress.Savepoint.Location {
				t.Fatalf("delete: done %v, stored %+v (%v), live %v, progress %+v", done, rec, ok, k.live(), k.st.Progress)
			}

			// Created again under the same name: restored from it.
			k.st = JobStatus{}
			k.settle("create again", spec)
			if k.job().RestoredFrom != rec.Location {
				t.Errorf("create again: restored from %q, want %q", k.job().RestoredFrom, rec.Location)
			}
			if k.maxRequests > MaxRequestsPerCall {
				t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
			}
		})
	}
}

// TestControllerInvalidSpec: a spec the controller cannot act on is
// reported in the status and as Reconcile's error, and nothing is sent.
func TestControllerInvalidSpec(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Job.JarFile = ""
	spec.Update.Mode = "Sometimes"
	_, err := k.controller().Reconcile(context.Background(), spec, &k.st)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "jarFile") {
		t.Errorf("Reconcile = %v, want an error matching ErrInvalidSpec naming jarFile", err)
	}
	if k.st.Reason != "InvalidSpec" || !strings.Contains(k.st.Message, "jarFile") || !strings.Contains(k.st.Message, "update") {
		t.Errorf("status %s: %s", k.st.Reason, k.st.Message)
	}
	if n := len(k.srv.Requests()); n != 0 {
		t.Errorf("%d requests for an invalid spec", n)
	}
}

// TestControllerStatusFormat: a status of a newer format is refused.
func TestControllerStatusFormat(t *testing.T) {
	k := newCluster(t, false)
	k.st.FormatVersion = FormatVersion + 1
	_, err := k.controller().Reconcile(context.Background(), k.spec("/out"), &k.st)
	if err == nil || !strings.Contains(err.Error(), "lifecycle.JobStatus: format version") {
		t.Errorf("Reconcile = %v", err)
	}
	if n := len(k.srv.Requests()); n != 0 || k.st.FormatVersion != FormatVersion+1 {
		t.Errorf("%d requests; format version %d", n, k.st.FormatVersion)
	}
}

// TestControllerHealthRestart: a running job that Flink keeps restarting
// is judged unhealthy under Health RestartFromLatestState and restarted
// by the controller from its newest state: the old job is cancelled only
// after the restore point is recorded, and one job runs after.
func TestControllerHealthRestart(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out", "--restart-attempts", "20")
	spec.Health = policy.HealthPolicy{Action: policy.HealthRestartFromLatestState, MaxRestarts: 2, Window: policy.Duration(30 * time.Second)}
	k.settle("create", spec)
	old := k.st.JobID
	k.run(spec, 40*time.Second) // warm-up
	for range 4 {
		if err := k.srv.FailJob(old, "java.lang.RuntimeException: flaky"); err != nil {
			t.Fatal(err)
		}
		k.run(spec, 3*time.Second)
		if k.st.JobID != old {
			break
		}
	}
	k.until("health restart", spec, 300, func(st *JobStatus) bool { return st.Action == ActionHealthRestart && st.Progress.Done() })
	p := k.st.Progress
	if p.Outcome != OutcomeSucceeded || k.st.JobID == old || p.Replace.RestoreFrom == "" || p.Replace.Request.Path != p.Replace.RestoreFrom || !p.Replace.Request.CancelWithoutSavepoint {
		t.Fatalf("health restart: %s (%s), job %s, restore %q, request %+v", p.Outcome, p.Reason, k.st.JobID, p.Replace.RestoreFrom, p.Replace.Request)
	}
	if info, _ := k.srv.Job(old); info.State != flinkapi.JobCanceled || k.job().RestoredFrom != p.Replace.RestoreFrom || len(k.live()) != 1 {
		t.Errorf("old job %s, new job restored from %q (want %q), live %v", info.State, k.job().RestoredFrom, p.Replace.RestoreFrom, k.live())
	}
	if !strings.Contains(strings.ToLower(k.st.Failure), "flaky") {
		t.Errorf("failure %q", k.st.Failure)
	}
}

// TestControllerRequestsAtRest: a running job at rest costs one request
// per poll interval (its details), and with health judged three (details,
// checkpoint statistics, restart count); no call sends more than
// MaxRequestsPerCall.
func TestControllerRequestsAtRest(t *testing.T) {
	for _, health := range []bool{false, true} {
		k := newCluster(t, false)
		spec := k.spec("/out")
		if health {
			spec.Health = policy.HealthPolicy{Action: policy.HealthReport}
		}
		k.settle("create", spec)
		k.run(spec, 10*time.Second)
		k.srv.ClearRequests()
		calls := k.calls
		k.run(spec, 5*time.Minute)
		perCall := float64(len(k.srv.Requests())) / float64(k.calls-calls)
		want := 1.0
		if health {
			want = 3
		}
		if perCall != want || k.maxRequests > MaxRequestsPerCall || k.calls-calls != 60 {
			t.Errorf("health %v: %.2f requests per call over %d calls (want %.0f, one call per %v), at most %d in one", health, perCall, k.calls-calls, want,
				k.controller().poll(), k.maxRequests)
		}
	}
}

// TestControllerForeignStatus: a status another deployment wrote is
// refused before any request.
func TestControllerForeignStatus(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	k.srv.ClearRequests()
	other := k.controller()
	other.Name = "app/other"
	st := k.st
	for _, call := range []func() (Result, error){
		func() (Result, error) { return other.Reconcile(context.Background(), spec, &st) },
		func() (Result, error) { return other.Delete(context.Background(), spec, &st) },
	} {
		if _, err := call(); !errors.Is(err, ErrForeignStatus) || !strings.Contains(err.Error(), `"app/counter"`) {
			t.Errorf("err = %v, want ErrForeignStatus naming the owner", err)
		}
	}
	if n := len(k.srv.Requests()); n != 0 {
		t.Errorf("%d requests for a foreign status", n)
	}
}

// TestControllerRescaleInPlace: with the adaptive scheduler a change of
// the parallelism alone is carried out in place: the same job runs on.
func TestControllerRescaleInPlace(t *testing.T) {
	k := newCluster(t, true, flinktest.WithAdaptiveScheduler())
	spec := k.spec("/out")
	spec.Job.Parallelism = 1
	k.settle("create", spec)
	job := k.st.JobID
	spec.Job.Parallelism = 3
	k.settle("rescale", spec)
	if k.st.JobID != job || k.st.Action != ActionRescale || k.st.Progress.Rescale.Path != policy.RescaleInPlace || k.job().Parallelism != 3 {
		t.Errorf("rescale: job %s (was %s), action %s, path %s, parallelism %d", k.st.JobID, job, k.st.Action, k.st.Progress.Rescale.Path, k.job().Parallelism)
	}
}

// TestControllerRollbackNeverFromOldState: an upgraded job that does not
// become stable (it takes no checkpoint) before its readiness timeout,
// which is longer than the update policy's maximum state age, is not
// rolled back from the upgrade's savepoint, too old by then: the rollback
// is refused with the policy's reason, and no job starts from that state.
func TestControllerRollbackNeverFromOldState(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update = policy.UpdatePolicy{MaxStateAge: policy.Duration(2 * time.Minute)}
	spec.Rollback = RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(3 * time.Minute)}
	k.settle("create", spec)
	bad := spec
	// Its checkpoints never complete: it never becomes stable.
	bad.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000", "--snapshot-delay", "3600000"}
	k.until("rollback refused", bad, 2000, func(st *JobStatus) bool { return st.Action == ActionRollback && st.Progress.Done() })
	p, from := k.st.Progress, k.st.UpgradeFrom
	if p.Outcome != OutcomeBlocked || p.Replace.Decision != policy.ReasonRestoreRequestTooOld {
		t.Fatalf("rollback from a savepoint %v old: %s (%s): %s", k.srv.Clock().Now().Sub(from.Time), p.Outcome, p.Replace.Decision, p.Reason)
	}
	k.run(bad, time.Minute)
	for _, j := range k.srv.Jobs() {
		if j.RestoredFrom == from.Location && j.ID == k.st.JobID && !k.st.Deployed.equal(bad.Job) {
			t.Errorf("job %s runs the old template from the old savepoint", j.ID)
		}
	}
	if len(k.live()) != 1 || !k.st.Deployed.equal(bad.Job) {
		t.Errorf("live %v, deployed %v", k.live(), k.st.Deployed.Args)
	}
}

// TestControllerRestartsFromTheStateItDeployedFrom: a job deployed from
// the restore-point store's savepoint is lost (a JobManager restart
// without high availability) before it completes a checkpoint. Its
// newest state is the savepoint it started from: the controller restarts
// it from there, not "no recent state".
func TestControllerRestartsFromTheStateItDeployedFrom(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "3600000"}
			spec.Restart.MaxStateAge = policy.Duration(time.Hour)
			k.until("create", spec, 300, func(st *JobStatus) bool { return !st.InFlight() && st.State == policy.Running })
			for range 100 {
				if res := k.call(spec, true); res.Done {
					break
				}
			}
			rec, ok, _ := k.store.Get(context.Background(), "app/counter")
			if !ok || len(k.live()) != 0 {
				t.Fatalf("delete: stored %+v (%v), live %v", rec, ok, k.live())
			}
			k.st = JobStatus{}
			k.until("create again", spec, 300, func(st *JobStatus) bool { return !st.InFlight() && st.State == policy.Running })
			if k.job().RestoredFrom != rec.Location {
				t.Fatalf("create again: restored from %q, want %q", k.job().RestoredFrom, rec.Location)
			}
			lost := k.st.JobID
			k.srv.RestartJobManager(flinktest.RestartOptions{})
			k.until("restart", spec, 300, func(st *JobStatus) bool {
				return st.Action == ActionRestart && st.Progress.Done() && !st.InFlight()
			})
			if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == lost || k.job().RestoredFrom != rec.Location {
				t.Fatalf("restart: %s (%s); job %s restored from %q, want %q", k.st.Progress.Outcome, k.st.Progress.Reason,
					k.st.JobID, k.job().RestoredFrom, rec.Location)
			}
			if len(k.live()) != 1 {
				t.Errorf("live %v", k.live())
			}
		})
	}
}

// TestControllerDeployNeverSent: the jar upload of a deploy fails, the
// caller is away past the submission's deadline, and the deploy ends
// TimedOut before any jar run was sent. No job was started: the status
// names none, and the deploy is tried again after RetryInterval and runs.
func TestControllerDeployNeverSent(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "POST /jars/upload", Status: 503, Times: 1}); err != nil {
		t.Fatal(err)
	}
	k.until("the failed upload", spec, 10, func(st *JobStatus) bool {
		// The preflight uploads the jar before anything else.
		return (st.Progress.Phase == PhaseUpload || st.Progress.Phase == PhasePreflight) && st.Progress.LastError != ""
	})
	k.srv.Clock().Advance(time.Hour)
	k.call(spec, false)
	if k.st.Action != ActionDeploy || k.st.Progress.Outcome != OutcomeTimedOut {
		t.Fatalf("deploy: %s %s (%s)", k.st.Action, k.st.Progress.Outcome, k.st.Progress.Reason)
	}
	if k.st.JobID != "" || k.st.Progress.Submit.NewJobID != "" || len(k.srv.Jobs()) != 0 {
		t.Fatalf("a deploy that sent no jar run names job %q (new %q); jobs %v", k.st.JobID, k.st.Progress.Submit.NewJobID, k.srv.Jobs())
	}
	k.settle("deploy again", spec)
	if len(k.live()) != 1 || string(k.st.JobID) != k.live()[0][:32] {
		t.Errorf("live %v, status names %s", k.live(), k.st.JobID)
	}
}

// TestControllerBlueGreen: with BlueGreen enabled, a change of the job is
// carried out beside the running one: at most two live jobs at any call,
// the old one stopped only after the new one runs; a change to a job that
// fails at start is aborted, the old job runs on untouched, and the spec
// is not tried again until it changes. With a Deployer the spec is
// refused.
func TestControllerBlueGreen(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.BlueGreen = BlueGreenPolicy{Enabled: true, Window: policy.Duration(time.Minute)}
			k.settle("create", spec)
			old := k.st.JobID
			spec.Job.Args = append(spec.Job.Args, "--name", "v2")
			most := 0
			k.until("blue/green", spec, 300, func(st *JobStatus) bool {
				most = max(most, len(k.live()))
				if st.Action == ActionBlueGreen && st.InFlight() && st.Progress.BlueGreen.Healthy.IsZero() && !k.isLive(old) {
					t.Fatalf("the old job stopped before the new one %s was healthy: %v", st.Progress.Submit.NewJobID, k.live())
				}
				return st.Action == ActionBlueGreen && !st.InFlight() && st.State == policy.Running
			})
			if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old || most != 2 || len(k.live()) != 1 {
				t.Fatalf("blue/green: %s (%s), job %s (old %s), most live %d, live %v", k.st.Progress.Outcome, k.st.Progress.Reason,
					k.st.JobID, old, most, k.live())
			}
			if k.job().RestoredFrom == "" || k.job().RestoredFrom != k.st.UpgradeFrom.Location || !k.st.Stable.equal(spec.Job) {
				t.Errorf("new job restored from %q, upgrade from %+v, stable %v", k.job().RestoredFrom, k.st.UpgradeFrom, k.st.Stable.Args)
			}

			// A job that fails at start: aborted, the old one untouched.
			running := k.st.JobID
			bad := spec
			bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--fail-at", "1")
			k.call(bad, false) // starts it
			k.until("aborted", bad, 300, func(st *JobStatus) bool { return st.Action == ActionBlueGreen && st.Progress.Done() })
			if k.st.Progress.Outcome != OutcomeBlueGreenAborted || k.st.JobID != running || k.st.Progress.Submit.NewJobID != "" {
				t.Fatalf("aborted: %s (%s), job %s (running %s), new %q", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, running, k.st.Progress.Submit.NewJobID)
			}
			for range 20 {
				k.call(bad, false)
			}
			if k.st.JobID != running || k.st.Reason != string(OutcomeBlueGreenAborted) || len(k.live()) != 1 || !k.isLive(running) {
				t.Errorf("after the abort: job %s (%s: %s), live %v", k.st.JobID, k.st.Reason, k.st.Message, k.live())
			}
			if k.maxRequests > MaxRequestsPerCall {
				t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
			}
		})
	}
	t.Run("deployer", func(t *testing.T) {
		k := newCluster(t, true)
		k.deployer = newAppDeployer(t, k.srv)
		spec := k.spec("/out")
		k.settle("create", spec)
		old := k.st.Cluster
		spec.BlueGreen = BlueGreenPolicy{Enabled: true, Window: policy.Duration(time.Minute)}
		spec.Job.Args = append(spec.Job.Args, "--name", "v2")
		most := 0
		k.until("blue/green", spec, 300, func(st *JobStatus) bool {
			most = max(most, len(k.deployer.Running()))
			return st.Action == ActionBlueGreen && !st.InFlight() && st.State == policy.Running
		})
		if k.st.Progress.Outcome != OutcomeSucceeded || k.st.Cluster.Name == old.Name || most != 2 {
			t.Fatalf("blue/green with a Deployer: %s (%s), cluster %s (old %s), most clusters %d", k.st.Progress.Outcome, k.st.Progress.Reason,
				k.st.Cluster.Name, old.Name, most)
		}
		if got := k.deployer.Running(); len(got) != 1 || got[0] != k.st.Cluster.Name || len(k.live()) != 1 {
			t.Errorf("running clusters %v, status cluster %s, live jobs %v", got, k.st.Cluster.Name, k.live())
		}
	})
}

func (k *cluster) isLive(id flinkapi.JobID) bool {
	info, ok := k.srv.Job(id)
	return ok && !info.State.IsGloballyTerminal()
}
