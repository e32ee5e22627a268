package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// reconcileOnce runs one Reconcile of spec without moving the clock,
// sending the status through JSON as a caller that stores it, and
// returns its result.
func (k *cluster) reconcileOnce(spec JobSpec) Result {
	k.t.Helper()
	res, err := k.controller().Reconcile(context.Background(), spec, &k.st)
	if err != nil {
		k.t.Fatalf("call %d: %v", k.calls, err)
	}
	k.calls++
	b, err := json.Marshal(k.st)
	if err != nil {
		k.t.Fatal(err)
	}
	k.st = JobStatus{}
	if err := json.Unmarshal(b, &k.st); err != nil {
		k.t.Fatal(err)
	}
	return res
}

// earned reports whether job id, read at this instant, has all its tasks
// running and (with checkpointing) a checkpoint completed after its
// start, and says what it saw.
func (k *cluster) earned(id flinkapi.JobID, checkpointing bool) (bool, string) {
	k.t.Helper()
	ctx := context.Background()
	d, err := k.c.Job(ctx, id)
	if err != nil {
		k.t.Fatal(err)
	}
	if !tasksRunning(d) {
		tasks := map[string]string{}
		for _, v := range d.Vertices {
			tasks[v.Name] = v.Status
		}
		return false, "job " + string(d.State) + ", tasks " + jsonOf(k.t, tasks)
	}
	if !checkpointing {
		return true, ""
	}
	stats, err := k.c.Checkpoints(ctx, id)
	if err != nil {
		k.t.Fatal(err)
	}
	if stats.LatestCompleted == nil || stats.LatestCompleted.TriggerTime.Before(d.StartTime) {
		return false, "no checkpoint completed since the job started at " + d.StartTime.UTC().Format(time.RFC3339Nano)
	}
	return true, ""
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// convergesOnceEarned calls Reconcile of spec until the status converges
// on a job other than old (the old one may still be read from Flink's
// cache after it failed), and fails the test at any call after which
// the status says Converged while its job has not earned it: its tasks
// not all running, or no checkpoint completed after its start.
func (k *cluster) convergesOnceEarned(what string, spec JobSpec, old flinkapi.JobID, checkpointing bool) {
	k.t.Helper()
	for range 600 {
		res := k.reconcileOnce(spec)
		if k.st.Converged(spec) && k.st.JobID != old { // the old job may be read from Flink's cache for a while
			if ok, saw := k.earned(k.st.JobID, checkpointing); !ok {
				k.t.Fatalf("%s: Converged after call %d although the new job %s has not earned it: %s (state %s, reason %s: %s)",
					what, k.calls, k.st.JobID, saw, k.st.State, k.st.Reason, k.st.Message)
			}
			if k.st.StableJobID != k.st.JobID {
				k.t.Fatalf("%s: Converged with StableJobID %s, the job is %s", what, k.st.StableJobID, k.st.JobID)
			}
			return
		}
		k.srv.Clock().Advance(res.RequeueAfter)
	}
	k.t.Fatalf("%s: not converged on a new job: %+v", what, k.st)
}

// TestStableIsEarnedByEachJob: stability belongs to the job that earned
// it. A new job that runs the last stable template (a restart, a
// redeploy after a stop from the Flink UI, a delete and re-add, a revert
// of an upgrade that had not become stable yet) is not Converged while
// its tasks are not all running or before it completed a checkpoint of
// its own; it is once it did. Without checkpointing, its tasks running
// stand in.
func TestStableIsEarnedByEachJob(t *testing.T) {
	for _, tc := range []struct {
		name          string
		checkpointing bool
		act           func(k *cluster, spec JobSpec) JobSpec
	}{
		{name: "restart after a failure", checkpointing: true, act: func(k *cluster, spec JobSpec) JobSpec {
			if err := k.srv.FailJob(k.st.JobID, "java.lang.RuntimeException: boom"); err != nil {
				k.t.Fatal(err)
			}
			return spec
		}},
		{name: "redeploy after a stop from the Flink UI", checkpointing: true, act: stopFromUI},
		{name: "redeploy after a stop from the Flink UI, no checkpointing", act: stopFromUI},
		{name: "delete and re-add", checkpointing: true, act: func(k *cluster, spec JobSpec) JobSpec {
			for range 300 {
				if k.call(spec, true).Done {
					return spec
				}
			}
			k.t.Fatalf("not deleted: %+v", k.st)
			return spec
		}},
		{name: "revert of an upgrade not stable yet", checkpointing: true, act: func(k *cluster, spec JobSpec) JobSpec {
			v2 := spec
			v2.Job.Args = append(append([]string(nil), spec.Job.Args...), "--name", "v2")
			k.call(v2, false)
			k.until("the upgrade to v2", v2, 300, func(st *JobStatus) bool {
				return st.Action == ActionUpgrade && st.Progress.Done() && st.Deployed.equal(v2.Job)
			})
			if !k.st.Stable.equal(spec.Job) {
				k.t.Fatalf("v2 became stable before the revert; the test needs v1 as the stable template")
			}
			return spec
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			if !tc.checkpointing {
				spec = k.spec("/out", "--checkpoint-interval", "0")
			}
			k.settle("create", spec)
			k.run(spec, 3*time.Second)
			if !k.st.Converged(spec) {
				t.Fatalf("not converged at rest: %+v", k.st)
			}
			old := k.st.JobID
			spec = tc.act(k, spec)
			k.convergesOnceEarned(tc.name, spec, old, tc.checkpointing)
		})
	}
}

// stopFromUI stops the job with a savepoint as the Flink UI does, behind
// the Controller's back, and waits until it ended.
func stopFromUI(k *cluster, spec JobSpec) JobSpec {
	k.t.Helper()
	if _, err := k.c.StopWithSavepoint(context.Background(), k.st.JobID, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()}); err != nil {
		k.t.Fatal(err)
	}
	for range 100 {
		if k.job().State == flinkapi.JobFinished {
			return spec
		}
		k.srv.Clock().Advance(100 * time.Millisecond)
	}
	k.t.Fatalf("the job did not stop: %+v", k.job())
	return spec
}

// TestStableOfAnEarlierRelease: a status an earlier release wrote (Stable
// without StableJobID) keeps its running job converged, the stability
// counted as that job's; a restart's new job earns it again.
func TestStableOfAnEarlierRelease(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	k.run(spec, 3*time.Second)
	old := k.st.JobID
	k.st.StableJobID = "" // as an earlier release wrote it
	if !k.st.Converged(spec) {
		t.Fatalf("a status of an earlier release is not converged: %+v", k.st)
	}
	for range 3 {
		k.srv.Clock().Advance(k.reconcileOnce(spec).RequeueAfter)
		if !k.st.Converged(spec) || k.st.JobID != old {
			t.Fatalf("a status of an earlier release, after a call: converged %v, job %s (was %s): %s: %s", k.st.Converged(spec), k.st.JobID, old,
				k.st.Reason, k.st.Message)
		}
	}
	if err := k.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.convergesOnceEarned("restart of a status of an earlier release", spec, old, true)
}

// TestBlockedEndLeavesNothingInFlight: an action that ends Blocked (here
// refused by its preflight: Flink cannot build the new job's plan)
// leaves a status that says what is true: no action in flight, not the
// action's own state (Updating, Deploying), the job as it was; and a
// first deploy's message does not speak of an old job left running.
func TestBlockedEndLeavesNothingInFlight(t *testing.T) {
	t.Run("upgrade", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out")
		k.settle("create", spec)
		old := k.st.JobID
		spec.Job.Args = append(spec.Job.Args, "--bogus", "1")
		k.until("the upgrade refused", spec, 100, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
		st := &k.st
		if st.Progress.Outcome != OutcomeBlocked {
			t.Fatalf("the upgrade ended %s (%s); the test needs Blocked", st.Progress.Outcome, st.Progress.Reason)
		}
		if st.InFlight() || st.Situation == SituationInFlight || st.State != policy.Running || st.JobID != old ||
			k.job().State != flinkapi.JobRunning {
			t.Errorf("after the blocked upgrade: in flight %v, situation %s, state %s (%s: %s), job %s (was %s) %s; want the old job Running",
				st.InFlight(), st.Situation, st.State, st.Reason, st.Message, st.JobID, old, k.job().State)
		}
		if st.Situation != SituationRunning {
			t.Errorf("situation %q after the blocked upgrade, want Running", st.Situation)
		}
	})
	t.Run("first deploy", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out", "--bogus", "1")
		k.until("the deploy refused", spec, 100, func(st *JobStatus) bool { return st.Action == ActionDeploy && st.Progress.Done() })
		st := &k.st
		if st.Progress.Outcome != OutcomeBlocked {
			t.Fatalf("the deploy ended %s (%s); the test needs Blocked", st.Progress.Outcome, st.Progress.Reason)
		}
		if st.InFlight() || st.Situation == SituationInFlight || st.State == policy.Deploying || len(k.live()) != 0 {
			t.Errorf("after the blocked deploy: in flight %v, situation %s, state %s, live jobs %v", st.InFlight(), st.Situation, st.State, k.live())
		}
		for _, msg := range []string{st.Message, st.Progress.Reason} {
			if strings.Contains(msg, "old job") || strings.Contains(msg, "left running") {
				t.Errorf("a first deploy's status speaks of an old job: %q", msg)
			}
		}
	})
}
