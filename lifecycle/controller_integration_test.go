//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealClusterController runs one job's whole life through the job
// controller on a real Flink session cluster of FLINK_VERSION, the
// status stored as JSON after every call: create; update (the counts
// continue); the TaskManager killed, the job FAILED and restarted by the
// restart policy from its newest state; suspend and resume from the
// suspend's savepoint; an update to a job that fails at start, rolled
// back to the last stable one from the upgrade's savepoint (the counts
// continue); delete with a final savepoint; created again by the same
// name, restored from it.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealClusterController -v ./lifecycle/
func TestRealClusterController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// A cluster of its own: the test kills its TaskManager.
	cluster, c := ownSession(t, ctx, 2)
	store := &lifecycle.MemoryStore{}
	ctrl := &lifecycle.Controller{Env: realEnv(c),
		Store: store, Name: "app/counter", PollInterval: time.Second, RetryInterval: 5 * time.Second}
	const keys = 2
	args := func(out string, extra ...string) []string {
		return append([]string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--checkpoint-interval", "300", "--name", "controller"}, extra...)
	}
	out1, out2, outBad := cluster.OutDir("controller-1"), cluster.OutDir("controller-2"), cluster.OutDir("controller-bad")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args(out1),
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Restart:  policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
		Rollback: lifecycle.RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)},
	}
	var st lifecycle.JobStatus
	calls := 0
	call := func(del bool) lifecycle.Result {
		t.Helper()
		calls++
		return realCall(t, ctx, ctrl, spec, &st, del)
	}
	until := func(what string, done func() bool) {
		t.Helper()
		realUntil(t, ctx, what, ctrl, &spec, &st, 3*time.Minute, func() bool { calls++; return done() })
	}
	settled := func() bool {
		return !st.InFlight() && st.State == policy.Running && st.Reason == string(policy.Running)
	}
	live := func() int {
		jobs, err := c.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, j := range jobs {
			if !j.Status.IsGloballyTerminal() {
				n++
			}
		}
		return n
	}
	countsOf := func(dir string) map[string]int64 {
		counts, err := flinkfixture.ReadCounts(dir)
		if err != nil {
			t.Fatal(err)
		}
		return counts
	}
	continues := func(before map[string]int64, dir string) {
		t.Helper()
		flinkfixture.WaitCounts(t, ctx, dir, keys, 90*time.Second, func(k string, n int64) bool { return n > before[k] })
	}

	// Create.
	until("create", settled)
	out := out1
	flinkfixture.WaitCounts(t, ctx, out, keys, 90*time.Second, func(_ string, n int64) bool { return n >= 20 })

	// Update: the counts continue in the new job.
	spec.Job.Args = args(out2)
	before := countsOf(out)
	until("update", func() bool { return settled() && st.Action == lifecycle.ActionUpgrade })
	out = out2
	continues(before, out)

	// The TaskManager dies; the job fails; the restart policy starts it
	// again from its newest state once slots are back.
	failed := st.JobID
	if err := cluster.KillTaskManager(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if s, err := c.JobStatus(ctx, failed); err == nil && s == flinkapi.JobFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not fail after its TaskManager was killed")
		}
	}
	before = countsOf(out)
	if err := cluster.StartTaskManager(ctx); err != nil {
		t.Fatal(err)
	}
	until("restart", func() bool { return settled() && st.JobID != failed })
	if st.Restarts != 1 || live() != 1 {
		t.Errorf("restart: %d restarts, %d live jobs", st.Restarts, live())
	}
	continues(before, out)

	// Suspend, then resume from the suspend's savepoint.
	spec.State = lifecycle.DesiredSuspended
	until("suspend", func() bool { return st.Suspended && !st.InFlight() })
	if live() != 0 || st.Latest.Location == "" || !flinkfixture.LocationExists(st.Latest.Location) {
		t.Fatalf("suspend: %d live jobs, savepoint %+v", live(), st.Latest)
	}
	before = countsOf(out)
	spec.State = lifecycle.DesiredRunning
	until("resume", settled)
	continues(before, out)

	// An update to a job that fails at start is rolled back to the last
	// stable job from the upgrade's savepoint.
	good := spec.Job
	spec.Job.Args = args(outBad, "--fail-at", "1")
	before = countsOf(out)
	until("rollback", func() bool {
		return !st.InFlight() && st.Action == lifecycle.ActionRollback && st.Progress.Outcome == lifecycle.OutcomeSucceeded && st.State == policy.Running
	})
	if st.Deployed.Fingerprint() != good.Fingerprint() || st.FailedJob != spec.Job.Fingerprint() || live() != 1 {
		t.Fatalf("rollback: deployed %v, failed %s, %d live jobs", st.Deployed.Args, st.FailedJob, live())
	}
	continues(before, out)
	for range 5 {
		call(false)
	}
	if st.Reason != "RolledBack" || st.Action != lifecycle.ActionRollback {
		t.Errorf("the failed spec was tried again: %s %s (%s)", st.Reason, st.Message, st.Action)
	}
	spec.Job = good

	// Delete: a final savepoint under the name; created again, restored
	// from it.
	begin := time.Now()
	for !call(true).Done {
		if ctx.Err() != nil {
			t.Fatalf("delete: %s %s", st.Progress.Outcome, st.Progress.Reason)
		}
	}
	rec, ok, _ := store.Get(ctx, "app/counter")
	t.Logf("delete: %s after %v: %s", st.Progress.Outcome, time.Since(begin).Round(time.Millisecond), st.Progress.Reason)
	if !ok || !flinkfixture.LocationExists(rec.Location) || live() != 0 {
		t.Fatalf("delete: stored %+v (%v), %d live jobs", rec, ok, live())
	}
	before = countsOf(out)
	st = lifecycle.JobStatus{}
	until("create again", settled)
	continues(before, out)
	t.Logf("%d calls in all", calls)
}
