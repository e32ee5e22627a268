package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/appfake"
	"github.com/flinkkit/flinkkit/policy"
)

// appDeployer is the Deployer of application clusters of package
// appfake: each Deploy runs the job on the shared fake with its job id
// and restore path, and serves it from an Application endpoint of its
// own, which exits with its job unless the request's configuration keeps
// it (execution.shutdown-on-application-finish: false, as
// ApplicationConfiguration sets).
type appDeployer struct {
	*appfake.Deployer
	// noSlots makes every cluster's overview report no task slots at
	// all, as an application cluster whose TaskManager died does.
	noSlots bool
}

// slotlessAPI reports a cluster without task slots.
type slotlessAPI struct{ API }

func (a slotlessAPI) Overview(ctx context.Context) (*flinkapi.ClusterOverview, error) {
	ov, err := a.API.Overview(ctx)
	if err == nil {
		cp := *ov
		cp.SlotsAvailable, cp.SlotsTotal, cp.TaskManagers = 0, 0, 0
		ov = &cp
	}
	return ov, err
}

func newAppDeployer(t *testing.T, srv *flinktest.Server) *appDeployer {
	t.Helper()
	d, err := appfake.New(context.Background(), srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	srv.ClearRequests()
	return &appDeployer{Deployer: d}
}

func (d *appDeployer) Deploy(ctx context.Context, req DeployRequest) (Cluster, error) {
	c, err := d.Deployer.Deploy(ctx, appfake.Request{JobID: req.JobID, Args: req.Args, Parallelism: req.Parallelism, Configuration: req.FlinkConfiguration})
	return Cluster(c), err
}

func (d *appDeployer) Delete(ctx context.Context, c Cluster) error {
	return d.Deployer.Delete(ctx, appfake.Cluster(c))
}

func (d *appDeployer) Exists(_ context.Context, c Cluster) (bool, error) {
	return d.Deployer.Exists(appfake.Cluster(c)), nil
}

func (d *appDeployer) Client(c Cluster) (API, error) {
	api, err := d.Deployer.Client(appfake.Cluster(c))
	if err != nil || !d.noSlots {
		return api, err
	}
	return slotlessAPI{api}, nil
}

// TestUpgradeOnApplicationClusters: a job deployed in an application
// cluster is upgraded: stopped with a savepoint in its cluster (whose
// JobManager stays), started from it in a new one, and the old cluster
// deleted once the new job runs. Uninterrupted and resumed after every
// step.
func TestUpgradeOnApplicationClusters(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			e := newEnv(t)
			d := newAppDeployer(t, e.srv)
			env := Env{Clock: e.srv.Clock()}
			first, res := drive(t, e, func() Stepper {
				return &Upgrade{Env: env, FirstDeploy: true, Name: "app/counter", Deployer: d, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}, resume)
			if res.Outcome != OutcomeSucceeded || first.Submit.Cluster.IsZero() || first.Submit.Cluster.URL == e.srv.URL {
				t.Fatalf("deploy: %s (%s), cluster %+v", res.Outcome, first.Reason, first.Submit.Cluster)
			}
			e.srv.Clock().Advance(5 * time.Second)
			second, res := drive(t, e, func() Stepper {
				return &Upgrade{Env: env, Job: first.Submit.NewJobID, Cluster: first.Submit.Cluster, Deployer: d, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}, resume)
			if res.Outcome != OutcomeSucceeded || second.Savepoint.Location == "" || second.Submit.Cluster.Name == first.Submit.Cluster.Name {
				t.Fatalf("upgrade: %s (%s), cluster %+v", res.Outcome, second.Reason, second.Submit.Cluster)
			}
			if !strings.Contains(second.Reason, "cluster "+first.Submit.Cluster.Name+" is deleted") || !d.Deleted(first.Submit.Cluster.Name) {
				t.Errorf("the old cluster was not deleted: %s", second.Reason)
			}
			if got := d.Running(); len(got) != 1 || got[0] != second.Submit.Cluster.Name {
				t.Errorf("running clusters %v, want only %s", got, second.Submit.Cluster.Name)
			}
			if j, _ := e.srv.Job(second.Submit.NewJobID); j.RestoredFrom != second.Savepoint.Location || j.State != flinkapi.JobRunning {
				t.Errorf("new job %+v, want RUNNING from %s", j, second.Savepoint.Location)
			}
			for _, r := range d.Requests() {
				if r.Configuration[ShutdownOnFinish] != "false" || r.Configuration["$internal.pipeline.job-id"] != string(r.JobID) {
					t.Errorf("deploy request configuration %v", r.Configuration)
				}
			}
		})
	}
}

// TestTeardownOnApplicationCluster: the teardown's savepoint is recorded,
// then the job's cluster is deleted.
func TestTeardownOnApplicationCluster(t *testing.T) {
	e := newEnv(t)
	d := newAppDeployer(t, e.srv)
	env := Env{Clock: e.srv.Clock()}
	first, _ := drive(t, e, func() Stepper {
		return &Upgrade{Env: env, FirstDeploy: true, Name: "app/counter", Deployer: d, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}, true)
	e.srv.Clock().Advance(5 * time.Second)
	store := &MemoryStore{}
	p, res := drive(t, e, func() Stepper {
		return &Teardown{Env: env, Job: first.Submit.NewJobID, Store: store, Name: "app/counter", Deployer: d, Cluster: first.Submit.Cluster}
	}, true)
	rec, ok, _ := store.Get(context.Background(), "app/counter")
	if res.Outcome != OutcomeSucceeded || !ok || rec.Location != p.Savepoint.Location || !d.Deleted(first.Submit.Cluster.Name) || len(d.Running()) != 0 {
		t.Fatalf("teardown: %s (%s); stored %+v; running %v", res.Outcome, p.Reason, rec, d.Running())
	}
}

// TestRestartAfterTheClusterExited: a job whose application cluster
// exited with it (the JobManager of a cluster without
// shutdown-on-application-finish: false stops answering once its job
// ended) counts as ended, not as an outage: the controller restarts it
// from its latest savepoint in a new cluster at once.
func TestRestartAfterTheClusterExited(t *testing.T) {
	k := newCluster(t, true)
	k.deployer = newAppDeployer(t, k.srv)
	spec := k.spec("/out")
	spec.Job.Args = append(spec.Job.Args, "--restart-attempts", "0")
	k.settle("create", spec)
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.settle("update", spec) // a savepoint to restart from
	lost, cl := k.st.JobID, k.st.Cluster
	// The job's cluster exits with it.
	if !k.deployer.ExitWithJob(lost) {
		t.Fatalf("no cluster runs job %s", lost)
	}
	if err := k.srv.FailJob(lost, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(2 * time.Second)
	k.until("restart", spec, 100, func(st *JobStatus) bool { return st.Action == ActionRestart && !st.InFlight() })
	if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == lost || k.st.Cluster.Name == cl.Name {
		t.Fatalf("restart: %s (%s), job %s, cluster %+v", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, k.st.Cluster)
	}
	if k.job().RestoredFrom != k.st.Latest.Location {
		t.Errorf("restarted from %q, want the latest savepoint %q", k.job().RestoredFrom, k.st.Latest.Location)
	}
	if got := k.deployer.Running(); len(got) != 1 || got[0] != k.st.Cluster.Name {
		t.Errorf("running clusters %v, want only %s", got, k.st.Cluster.Name)
	}
}

// TestRestartInAClusterWithoutSlots: the job of an application cluster
// fails and its JobManager stays, reporting no task slots (its
// TaskManager died). The job is restarted in a new cluster, which brings
// its own slots: the Controller never holds it back for want of a
// session's free slots (NotEnoughSlots).
func TestRestartInAClusterWithoutSlots(t *testing.T) {
	k := newCluster(t, true)
	k.deployer = newAppDeployer(t, k.srv)
	spec := k.spec("/out")
	spec.Job.Args = append(spec.Job.Args, "--restart-attempts", "0")
	k.settle("create", spec)
	lost, cl := k.st.JobID, k.st.Cluster
	k.deployer.noSlots = true
	if err := k.srv.FailJob(lost, "java.lang.RuntimeException: no TaskManager"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(2 * time.Second)
	k.until("restart", spec, 100, func(st *JobStatus) bool {
		return st.Reason == ReasonNotEnoughSlots || st.Action == ActionRestart && !st.InFlight()
	})
	if k.st.Reason == ReasonNotEnoughSlots || k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == lost || k.st.Cluster.Name == cl.Name {
		t.Fatalf("restart: reason %s, %s (%s), job %s, cluster %+v", k.st.Reason, k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, k.st.Cluster)
	}
}

// TestControllerApplicationClusters drives one job through its life in
// application clusters, with no session cluster client at all: create,
// update, failure and restart, suspend (its cluster deleted) and resume,
// an update to a job that fails at start rolled back, delete with a final
// savepoint and create again by the name. After each, exactly the
// status's cluster runs, and one live job.
func TestControllerApplicationClusters(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			k.deployer = newAppDeployer(t, k.srv)
			spec := k.spec("/out")
			spec.Rollback = RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}
			one := func(what string) {
				t.Helper()
				if got := k.deployer.Running(); len(got) != 1 || got[0] != k.st.Cluster.Name || len(k.live()) != 1 {
					t.Fatalf("%s: running clusters %v, status cluster %q, live jobs %v", what, got, k.st.Cluster.Name, k.live())
				}
				if info, _ := k.srv.Job(k.st.JobID); info.State != flinkapi.JobRunning {
					t.Fatalf("%s: job %s is %s", what, k.st.JobID, info.State)
				}
			}
			k.settle("create", spec)
			one("create")

			k.srv.Clock().Advance(5 * time.Second)
			spec.Job.Args = append(spec.Job.Args, "--name", "v2")
			k.settle("update", spec)
			one("update")
			if k.job().RestoredFrom == "" || k.job().RestoredFrom != k.st.UpgradeFrom.Location {
				t.Errorf("update: restored from %q, upgrade from %q", k.job().RestoredFrom, k.st.UpgradeFrom.Location)
			}

			k.srv.Clock().Advance(5 * time.Second)
			failed := k.st.JobID
			if err := k.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
				t.Fatal(err)
			}
			k.srv.Clock().Advance(2 * time.Second)
			k.settle("restart", spec)
			one("restart")
			if k.st.JobID == failed || k.st.Restarts != 1 || !strings.Contains(k.st.Failure, "boom") {
				t.Errorf("restart: job %s, restarts %d, failure %q", k.st.JobID, k.st.Restarts, k.st.Failure)
			}

			spec.State = DesiredSuspended
			k.until("suspend", spec, 100, func(st *JobStatus) bool { return st.Suspended && !st.InFlight() })
			if len(k.deployer.Running()) != 0 || !k.st.Cluster.IsZero() || k.st.Latest.Location == "" {
				t.Fatalf("suspend: running clusters %v, status cluster %+v, latest %+v", k.deployer.Running(), k.st.Cluster, k.st.Latest)
			}
			spec.State = DesiredRunning
			k.settle("resume", spec)
			one("resume")
			if k.job().RestoredFrom != k.st.Latest.Location {
				t.Errorf("resume: restored from %q, want %q", k.job().RestoredFrom, k.st.Latest.Location)
			}

			stable := k.st.Deployed
			bad := spec
			bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--fail-at", "1")
			k.until("rollback", bad, 300, func(st *JobStatus) bool { return st.Action == ActionRollback && st.Progress.Done() })
			if k.st.Progress.Outcome != OutcomeSucceeded || !k.st.Deployed.equal(stable) {
				t.Fatalf("rollback: %s (%s)", k.st.Progress.Outcome, k.st.Progress.Reason)
			}
			k.call(bad, false)
			one("rollback")

			var done bool
			for range 100 {
				if res := k.call(spec, true); res.Done {
					done = true
					break
				}
			}
			rec, ok, _ := k.store.Get(context.Background(), "app/counter")
			if !done || !ok || len(k.deployer.Running()) != 0 || len(k.live()) != 0 {
				t.Fatalf("delete: done %v, stored %+v (%v), running clusters %v, live %v", done, rec, ok, k.deployer.Running(), k.live())
			}
			k.st = JobStatus{}
			k.settle("create again", spec)
			one("create again")
			if k.job().RestoredFrom != rec.Location {
				t.Errorf("create again: restored from %q, want %q", k.job().RestoredFrom, rec.Location)
			}
			if k.maxRequests > MaxRequestsPerCall {
				t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
			}
		})
	}
}

// TestUpgradeToAClusterThatDoesNotStart: the new cluster of an upgrade
// never starts. The upgrade ends SubmitFailed naming it, at once (not at
// its deadline), with the savepoint of the stopped job in the Progress,
// and the controller keeps that savepoint as the latest restore point.
func TestUpgradeToAClusterThatDoesNotStart(t *testing.T) {
	k := newCluster(t, true)
	k.deployer = newAppDeployer(t, k.srv)
	spec := k.spec("/out")
	k.settle("create", spec)
	old := k.st.JobID
	k.deployer.SetNeverStart(true)
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	start := k.srv.Clock().Now()
	k.until("upgrade", spec, 100, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
	p := k.st.Progress
	if p.Outcome != OutcomeSubmitFailed || !strings.Contains(p.Reason, "cluster "+p.Submit.Cluster.Name+" no longer exists") {
		t.Fatalf("upgrade: %s (%s)", p.Outcome, p.Reason)
	}
	if took := k.srv.Clock().Now().Sub(start); took > time.Minute {
		t.Errorf("the upgrade took %v on the clock to see its cluster gone", took)
	}
	if info, _ := k.srv.Job(old); info.State != flinkapi.JobFinished || p.Savepoint.Location == "" || k.st.Latest.Location != p.Savepoint.Location {
		t.Errorf("old job %s; savepoint %q; latest %+v", info.State, p.Savepoint.Location, k.st.Latest)
	}
	if k.st.Reason != "UpgradeSubmitFailed" {
		t.Errorf("reason %q", k.st.Reason)
	}
}

// TestBlueGreenOnApplicationClusters: a blue/green upgrade through a
// Deployer runs the new job in a second cluster beside the old one, and
// deletes the old cluster once the old job is stopped; an aborted one
// deletes the new cluster and leaves the old one running. Uninterrupted
// and resumed after every step; never more than two clusters.
func TestBlueGreenOnApplicationClusters(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			e := newEnv(t)
			d := newAppDeployer(t, e.srv)
			env := Env{Clock: e.srv.Clock()}
			first, res := drive(t, e, func() Stepper {
				return &Upgrade{Env: env, FirstDeploy: true, Name: "app/counter", Deployer: d, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}, resume)
			if res.Outcome != OutcomeSucceeded {
				t.Fatalf("deploy: %s (%s)", res.Outcome, first.Reason)
			}
			e.srv.Clock().Advance(5 * time.Second)
			most := 0
			check := func(p Progress) {
				most = max(most, len(d.Running()))
				if info, _ := e.srv.Job(first.Submit.NewJobID); info.State.IsGloballyTerminal() && p.BlueGreen.Healthy.IsZero() {
					t.Fatalf("the old job is %s before the new one was healthy (phase %s)", info.State, p.Phase)
				}
			}
			p, res := driveChecking(t, e, func() Stepper {
				return &BlueGreen{Env: env, Job: first.Submit.NewJobID, Deployer: d, Cluster: first.Submit.Cluster, Run: blueGreenArgs(), Window: time.Minute}
			}, resume, check)
			if res.Outcome != OutcomeSucceeded || p.Submit.Cluster.IsZero() || p.Submit.Cluster.Name == first.Submit.Cluster.Name || most != 2 {
				t.Fatalf("blue/green: %s (%s); cluster %+v, most clusters %d", res.Outcome, p.Reason, p.Submit.Cluster, most)
			}
			if got := d.Running(); len(got) != 1 || got[0] != p.Submit.Cluster.Name || !d.Deleted(first.Submit.Cluster.Name) {
				t.Errorf("running clusters %v, want only %s; old deleted %v", got, p.Submit.Cluster.Name, d.Deleted(first.Submit.Cluster.Name))
			}
			if j, _ := e.srv.Job(p.Submit.NewJobID); j.State != flinkapi.JobRunning || j.RestoredFrom != p.Replace.RestoreFrom {
				t.Errorf("new job %+v, want RUNNING from %s", j, p.Replace.RestoreFrom)
			}

			// Aborted: the new cluster goes, the old one runs on.
			e.srv.Clock().Advance(5 * time.Second)
			q, res := driveChecking(t, e, func() Stepper {
				return &BlueGreen{Env: env, Job: p.Submit.NewJobID, Deployer: d, Cluster: p.Submit.Cluster, Run: blueGreenArgs("--fail-at", "1"), Window: time.Minute}
			}, resume, func(Progress) { most = max(most, len(d.Running())) })
			if res.Outcome != OutcomeBlueGreenAborted || q.Submit.NewJobID != "" || q.Submit.Cluster.IsZero() || !d.Deleted(q.Submit.Cluster.Name) || most != 2 {
				t.Fatalf("aborted: %s (%s); new job %q, cluster %+v deleted %v, most %d", res.Outcome, q.Reason, q.Submit.NewJobID, q.Submit.Cluster, d.Deleted(q.Submit.Cluster.Name), most)
			}
			if got := d.Running(); len(got) != 1 || got[0] != p.Submit.Cluster.Name {
				t.Errorf("after the abort: running clusters %v, want only %s", got, p.Submit.Cluster.Name)
			}
			if j, _ := e.srv.Job(p.Submit.NewJobID); j.State != flinkapi.JobRunning {
				t.Errorf("the old job is %s after the abort", j.State)
			}
		})
	}
}

// deleteLog is a Storage that deletes nothing and records the paths it
// was asked to delete.
type deleteLog struct{ deleted []string }

func (l *deleteLog) List(context.Context, string) ([]string, error) { return nil, nil }
func (l *deleteLog) Delete(_ context.Context, p string) error {
	l.deleted = append(l.deleted, p)
	return nil
}

// TestApplicationClusterDisposalsOnStorage: on application clusters,
// with a Storage, the savepoints a Delete with DisposeOnDelete disposes
// of once the job's cluster is gone, and those the retention disposes
// of while the job is suspended (no cluster runs), are deleted from
// storage: the history keeps only the final savepoint. Without a
// Storage they stay.
func TestApplicationClusterDisposalsOnStorage(t *testing.T) {
	for _, withStorage := range []bool{true, false} {
		t.Run(fmt.Sprintf("storage=%v", withStorage), func(t *testing.T) {
			k := newCluster(t, true)
			k.deployer = newAppDeployer(t, k.srv)
			log := &deleteLog{}
			if withStorage {
				k.storage = log
			}
			spec := k.spec("/out")
			spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute), DisposeOnDelete: true}
			k.settle("create", spec)
			k.until("savepoints", spec, 2000, func(st *JobStatus) bool { return len(st.Savepoints.Records) >= 4 && !st.InFlight() })

			// Suspended, with the retention lowered: no cluster runs.
			spec.State = DesiredSuspended
			k.until("suspend", spec, 200, func(st *JobStatus) bool { return st.Suspended && !st.InFlight() })
			spec.Savepoints.MaxCount = 2
			before := len(k.st.Savepoints.Records)
			for range 50 {
				k.call(spec, false)
			}
			if got := len(k.st.Savepoints.Records); withStorage && got > 2 || !withStorage && got != before {
				t.Fatalf("suspended, maxCount 2: %d savepoints in the history (was %d), deleted %v", got, before, log.deleted)
			}

			var done bool
			for range 100 {
				if res := k.call(spec, true); res.Done {
					done = true
					break
				}
			}
			if !done {
				t.Fatal("delete not done")
			}
			switch {
			case withStorage && (len(k.st.Savepoints.Records) != 1 || k.st.Savepoints.Records[0].Location != k.st.Latest.Location):
				t.Errorf("after delete: history %+v, latest %s, deleted %v", k.st.Savepoints.Records, k.st.Latest.Location, log.deleted)
			case withStorage && slices.Contains(log.deleted, k.st.Latest.Location):
				t.Errorf("the final savepoint %s was deleted", k.st.Latest.Location)
			case !withStorage && len(k.st.Savepoints.Records) < before:
				t.Errorf("without a Storage: %d savepoints left of %d", len(k.st.Savepoints.Records), before)
			}
		})
	}
}
