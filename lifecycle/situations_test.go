package lifecycle

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// stopExternally stops the deployment's job with a savepoint through the
// REST API, as `flink stop` or the Flink UI does, and returns the
// savepoint's location once the job FINISHED.
func (k *cluster) stopExternally() string {
	k.t.Helper()
	ctx := context.Background()
	op, err := k.c.StopWithSavepoint(ctx, k.st.JobID, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		k.t.Fatal(err)
	}
	for range 100 {
		k.srv.Clock().Advance(time.Second)
		res, err := k.c.OperationStatus(ctx, op)
		if err == nil && res.Completed() {
			if !res.Succeeded() {
				k.t.Fatalf("the stop failed: %+v", res)
			}
			k.srv.Clock().Advance(5 * time.Second)
			return res.Location
		}
	}
	k.t.Fatal("the stop did not complete")
	return ""
}

// TestControllerExternalStop: a streaming job stopped with a savepoint by
// someone else is a stopped job whose savepoint is its newest state: the
// Controller records the savepoint, never reports the spec converged
// while nothing runs, starts the job again from that savepoint, and a
// Delete keeps it.
func TestControllerExternalStop(t *testing.T) {
	t.Run("redeploy", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out")
		k.settle("create", spec)
		stopped := k.st.JobID
		loc := k.stopExternally()
		k.call(spec, false)
		if k.st.Converged(spec) {
			t.Fatalf("converged while nothing runs: %s %s", k.st.Reason, k.st.Message)
		}
		if !k.st.Result.IsZero() {
			t.Fatalf("the stopped job was taken for a finished bounded job: %+v", k.st.Result)
		}
		k.settle("redeploy", spec)
		if k.st.JobID == stopped || k.job().RestoredFrom != loc || k.st.Latest.Location == "" {
			t.Fatalf("job %s restored from %q, want a new job from the stop's savepoint %q", k.st.JobID, k.job().RestoredFrom, loc)
		}
	})
	t.Run("delete", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out")
		k.settle("create", spec)
		loc := k.stopExternally()
		for range 50 {
			if res := k.call(spec, true); res.Done {
				break
			}
		}
		rec, ok, _ := k.store.Get(context.Background(), "app/counter")
		if !ok || rec.Location != loc || k.st.Latest.Location != loc {
			t.Fatalf("delete kept %+v (%v), latest %q, want the external stop's savepoint %s", rec, ok, k.st.Latest.Location, loc)
		}
	})
	t.Run("suspend", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out")
		k.settle("create", spec)
		loc := k.stopExternally()
		before := len(k.srv.Requests())
		spec.State = DesiredSuspended
		k.call(spec, false)
		k.call(spec, false)
		if !k.st.Converged(spec) || k.st.Latest.Location != loc {
			t.Fatalf("suspended: converged %v, latest %q, want %q (%s)", k.st.Converged(spec), k.st.Latest.Location, loc, k.st.Message)
		}
		for _, r := range k.srv.Requests()[before:] {
			if r.Method == "POST" || r.Method == "PATCH" {
				t.Errorf("%s %s to a job already stopped with a savepoint", r.Method, r.Path)
			}
		}
	})
}

// TestControllerRefusedRestorePath: a restore request names a path Flink
// cannot restore; the answer to the jar run that started the job is
// lost, and the job is found FAILED. The path never becomes the job's
// newest state, and a restart does not use it.
func TestControllerRefusedRestorePath(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", After: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	before := k.st.Latest
	// A savepoint taken elsewhere a minute ago; the running job is
	// cancelled for it.
	spec.Restore = policy.RestoreRequest{Path: "file:/nowhere/savepoint-404", Token: "r1", Time: k.srv.Clock().Now().Add(-time.Minute),
		CancelWithoutSavepoint: true}
	k.until("the restore ended", spec, 300, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Done()
	})
	for range 60 {
		k.call(spec, false)
		if k.st.Latest.Location == spec.Restore.Path {
			t.Fatalf("the refused path became the latest state (was %q)", before.Location)
		}
	}
	runs := 0
	for _, r := range k.srv.Requests() {
		if r.Method == "POST" && len(r.Path) > 5 && r.Path[len(r.Path)-4:] == "/run" {
			runs++
		}
	}
	if runs > 4 {
		t.Errorf("%d jar runs after a refused restore path", runs)
	}
}

// TestControllerPolicyChangeMidAction: an upgrade under LastState
// cancelled the old job; the spec's update mode then changes to
// Savepoint. The upgrade in flight keeps LastState and starts the new job
// from the checkpoint it recorded, not blocked with the job cancelled.
func TestControllerPolicyChangeMidAction(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeLastState}
	k.settle("create", spec)
	k.run(spec, 10*time.Second)
	next := spec
	next.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v2")
	k.until("the old job cancelled", next, 200, func(st *JobStatus) bool {
		info, _ := k.srv.Job(st.Progress.Replace.PreviousJobID)
		return st.InFlight() && st.Progress.Replace.PreviousJobID != "" && info.State.IsGloballyTerminal()
	})
	next.Update = policy.UpdatePolicy{Mode: policy.UpgradeSavepoint}
	k.until("the upgrade ended", next, 300, func(st *JobStatus) bool { return !st.InFlight() })
	if k.st.Progress.Outcome != OutcomeSucceeded || k.job().RestoredFrom == "" {
		t.Fatalf("upgrade: %s (%s); restored from %q", k.st.Progress.Outcome, k.st.Progress.Reason, k.job().RestoredFrom)
	}
}

// TestControllerDeleteKeepsLatest: the job is lost (its JobManager
// restarted without it) and Flink keeps no state of it; a Delete records
// the status's latest savepoint, never nothing. Without a store, the
// status says that nothing keeps it.
func TestControllerDeleteKeepsLatest(t *testing.T) {
	for _, withStore := range []bool{true, false} {
		t.Run(map[bool]string{true: "store", false: "no-store"}[withStore], func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			spec.Savepoints.Interval = policy.Duration(time.Minute)
			spec.Restart = policy.RestartPolicy{Mode: policy.RestartNever}
			k.settle("create", spec)
			k.until("a savepoint", spec, 300, func(st *JobStatus) bool { return st.Latest.Location != "" && !st.InFlight() })
			latest := k.st.Latest
			// The JobManager restarts without high availability: the job
			// and its checkpoints are gone.
			if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid", Times: 1}); err != nil {
				t.Fatal(err)
			}
			k.call(spec, false)
			k.call(spec, false)
			k.noStore = !withStore
			var res Result
			for range 100 {
				if res = k.call(spec, true); res.Done {
					break
				}
			}
			if !res.Done {
				t.Fatalf("delete did not end: %+v", k.st)
			}
			if withStore {
				rec, ok, _ := k.storeGet()
				if !ok || rec.Location != latest.Location {
					t.Fatalf("delete kept %+v (%v), want the latest savepoint %s", rec, ok, latest.Location)
				}
				return
			}
			if k.st.Reason != ReasonDeletedStateNotKept {
				t.Fatalf("reason %q (%s), want %s", k.st.Reason, k.st.Message, ReasonDeletedStateNotKept)
			}
		})
	}
}

// TestControllerBlueGreenJobDown: blue/green is enabled and the job fails
// while a new Job is pending: nothing is left to run beside, so the new
// job is started by an upgrade from the newest state instead of a
// blue/green upgrade blocked for ever.
func TestControllerBlueGreenJobDown(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.BlueGreen = BlueGreenPolicy{Enabled: true}
	spec.Update = policy.UpdatePolicy{FallbackToLastState: true}
	k.settle("create", spec)
	if err := k.srv.FailJob(k.st.JobID, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(5 * time.Second)
	next := spec
	next.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v2")
	k.settle("the new job runs", next)
	if len(k.live()) != 1 {
		t.Fatalf("live jobs %v", k.live())
	}
}

// TestControllerRestoreOlderThenFail: the user restores the job from an
// older savepoint; the job fails before its first checkpoint. The
// restart restores the savepoint the user chose, not the newer one it
// replaced.
func TestControllerRestoreOlderThenFail(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints.Interval = policy.Duration(time.Minute)
	k.settle("create", spec)
	k.until("two savepoints", spec, 600, func(st *JobStatus) bool { return len(st.Savepoints.Records) >= 2 && !st.InFlight() })
	old := k.st.Savepoints.Records[0]
	spec.Savepoints.Interval = 0
	spec.Job.Args = append(slices.Clone(spec.Job.Args[:len(spec.Job.Args)-1]), "60000") // no checkpoint for a minute
	spec.Restore = policy.RestoreRequest{Path: old.Location, Token: "back", Time: old.Time}
	k.until("restored", spec, 300, func(st *JobStatus) bool { return st.RestoreHandled == "back" && !st.InFlight() })
	if k.job().RestoredFrom != old.Location {
		t.Fatalf("restored from %q, want %q", k.job().RestoredFrom, old.Location)
	}
	k.srv.Clock().Advance(5 * time.Second)
	if err := k.srv.FailJob(k.st.JobID, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	failed := k.st.JobID
	k.until("restarted", spec, 300, func(st *JobStatus) bool { return st.JobID != failed && !st.InFlight() })
	if k.job().RestoredFrom != old.Location {
		t.Fatalf("the restart restored %q, want the chosen savepoint %q", k.job().RestoredFrom, old.Location)
	}
}

// TestControllerStatusReusedAfterDelete: a status stored after a Delete
// finished says the job is deleted, and reconciled again it deploys the
// job anew from the state the Delete kept.
func TestControllerStatusReusedAfterDelete(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	old := k.st.JobID
	for range 100 {
		if res := k.call(spec, true); res.Done {
			break
		}
	}
	if k.st.State != policy.Deleted || k.st.Converged(spec) {
		t.Fatalf("after delete: state %s, converged %v", k.st.State, k.st.Converged(spec))
	}
	kept := k.st.Latest.Location
	k.settle("deployed again", spec)
	if k.st.JobID == old || k.job().RestoredFrom != kept || len(k.live()) != 1 {
		t.Fatalf("job %s from %q, want a new job from %q; live %v", k.st.JobID, k.job().RestoredFrom, kept, k.live())
	}
}

// TestControllerSubmitFailedState: a deploy whose submission Flink
// refuses reports DeployFailed, not Deploying.
func TestControllerSubmitFailedState(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.EntryClass = "com.example.Missing"
	k.until("the deploy ended", spec, 2000, func(st *JobStatus) bool { return st.Action == ActionDeploy && st.Progress.Done() })
	if k.st.State != policy.DeployFailed {
		t.Fatalf("state %s (%s: %s), want DeployFailed", k.st.State, k.st.Progress.Outcome, k.st.Reason)
	}
}

// TestControllerNoCheckpointing: a job that runs with checkpointing off
// is stable once all its tasks run: the spec converges.
func TestControllerNoCheckpointing(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "0"}
	spec.Update.Mode = policy.UpgradeStateless
	k.until("converged", spec, 300, func(st *JobStatus) bool { return st.Converged(spec) })
	if k.maxRequests > MaxRequestsPerCall {
		t.Errorf("a call sent %d requests", k.maxRequests)
	}
}

// TestControllerNotEnoughSlots: a job that needs more task slots than
// the cluster has is reported as such, naming both numbers.
func TestControllerNotEnoughSlots(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Parallelism = 8
	// A cluster that starts TaskManagers on demand: the preflight does not
	// refuse the job for the slots it sees, and the job waits for more.
	spec.Preflight.ElasticSlots = true
	k.until("blocked", spec, 400, func(st *JobStatus) bool { return st.Reason == ReasonNotEnoughSlots })
	if want := "needs 8 task slots, 4 free"; !contains(k.st.Message, want) {
		t.Fatalf("message %q, want it to say %q", k.st.Message, want)
	}
	// A job that cannot run holds no state of its own: the delete
	// cancels it at once instead of waiting for a savepoint it cannot
	// take.
	begin := k.srv.Clock().Now()
	for range 100 {
		if res := k.call(spec, true); res.Done {
			break
		}
	}
	if took := k.srv.Clock().Now().Sub(begin); !k.st.Deleted || len(k.live()) != 0 || took > time.Minute {
		t.Fatalf("delete: deleted %v after %v, live %v (%s)", k.st.Deleted, took, k.live(), k.st.Message)
	}
}

// TestControllerSameJarPathRebuilt: a new build of the jar written to
// the same path is a new job: uploaded again and upgraded to.
func TestControllerSameJarPathRebuilt(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	first := k.st.JarID
	jar := append(flinktest.MinimalJar(flinktest.CounterJobClass), []byte("rebuilt")...)
	if err := os.WriteFile(k.jar, jar, 0o600); err != nil {
		t.Fatal(err)
	}
	// A later modification time: the digest is read again.
	if err := os.Chtimes(k.jar, time.Now(), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	old := k.st.JobID
	k.settle("upgraded", spec)
	if k.st.JobID == old || k.st.JarID == first || k.job().JarID == first {
		t.Fatalf("job %s runs jar %s; want a new job of a new upload (was %s)", k.st.JobID, k.job().JarID, first)
	}
}

// TestControllerBadStoredStatus: stored statuses no Controller wrote are
// refused with a typed error and left as they were; times far ahead of
// the clock are not waited for.
func TestControllerBadStoredStatus(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	good := *k.st.DeepCopy()
	cases := map[string]func(st *JobStatus){
		"unknown action": func(st *JobStatus) {
			st.Action, st.Progress = "Frobnicate", Progress{Phase: PhaseSavepoint, Operation: opUpgrade, Target: st.JobID}
		},
		"unknown outcome": func(st *JobStatus) { st.Progress.Outcome = "Exploded" },
		"forged record": func(st *JobStatus) {
			st.Action = ActionTeardown
			st.Progress = Progress{Operation: opTeardown, Target: st.JobID, Phase: PhaseRecord, Savepoint: SavepointProgress{Location: "file:/elsewhere/sp"}}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			st := *good.DeepCopy()
			st.FormatVersion = 2
			mutate(&st)
			before := *st.DeepCopy()
			_, err := k.controller().Reconcile(context.Background(), spec, &st)
			if !errors.Is(err, ErrInvalidStatus) {
				t.Fatalf("err %v, want ErrInvalidStatus", err)
			}
			if st.FormatVersion != before.FormatVersion || st.Name != before.Name {
				t.Errorf("the refused status was changed: format %d, name %q", st.FormatVersion, st.Name)
			}
		})
	}
	t.Run("far future", func(t *testing.T) {
		st := *good.DeepCopy()
		st.Action, st.Progress = ActionUpgrade, Progress{Operation: opUpgrade, Target: st.JobID, Phase: PhaseDone, Outcome: OutcomeTimedOut}
		st.RetryAt = k.srv.Clock().Now().Add(60 * 24 * time.Hour)
		next := spec
		next.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v2")
		st.Target = next.Job
		res, err := k.controller().Reconcile(context.Background(), next, &st)
		if err != nil {
			t.Fatal(err)
		}
		if limit := 20 * time.Second; res.RequeueAfter > limit {
			t.Fatalf("requeue after %v, want at most %v", res.RequeueAfter, limit)
		}
	})
}

// storeGet reads the deployment's record from the cluster's store.
func (k *cluster) storeGet() (savepoint.Record, bool, error) {
	return k.store.Get(context.Background(), "app/counter")
}

// TestControllerStatelessRollback: under stateless updates an upgraded
// job that fails at start goes back to the last stable job, without
// state: a rollback needs no restore point then.
func TestControllerStatelessRollback(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeStateless}
	spec.Rollback = RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}
	k.settle("create", spec)
	stable := k.st.Deployed
	bad := spec
	bad.Job.Args = append(slices.Clone(spec.Job.Args), "--fail-at", "1")
	k.until("rolled back", bad, 500, func(st *JobStatus) bool { return st.Action == ActionRollback && st.Progress.Done() })
	if k.st.Progress.Outcome != OutcomeSucceeded || !k.st.Deployed.equal(stable) || len(k.live()) != 1 {
		t.Fatalf("rollback: %s (%s); deployed %v; live %v", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Deployed.Args, k.live())
	}
}
