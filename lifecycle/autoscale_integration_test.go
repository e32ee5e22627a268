//go:build integration

package lifecycle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealClusterAutoscale runs the test job made slow per record
// (--record-delay 40: one counter subtask counts at most 25 events per
// second) at 40 events per second and parallelism 1 on a real Flink
// session cluster of FLINK_VERSION, through the job controller with
// Autoscale enabled and the status stored as JSON after every call: the
// controller reads the vertices' busy time, the recommendation raises the
// parallelism (to 2 when the counter runs at its capacity, 1/0.7 of it),
// the job is rescaled (through an upgrade: the session cluster runs the
// default scheduler) and the counts continue from the savepoint; there
// the job stays.
//
//	FLINK_VERSION=2.3.0 go test -tags integration -count=1 -run TestRealClusterAutoscale -v ./lifecycle/
func TestRealClusterAutoscale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cluster, c := realSession(t, ctx, 4)
	ctrl := &lifecycle.Controller{Env: realEnv(c),
		Name: "app/autoscaled", PollInterval: time.Second, RetryInterval: 5 * time.Second}
	const keys = 16
	out := cluster.OutDir("autoscale")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Parallelism: 1,
			Args: []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--record-delay", "40", "--checkpoint-interval", "500", "--name", "autoscale"}},
		// Flink's per-second rates are averages over the last 60 s
		// (MeterView): the stabilisation waits until they hold only
		// time the job ran.
		Autoscale: policy.AutoscalePolicy{Enabled: true, Window: policy.Duration(30 * time.Second), Stabilization: policy.Duration(65 * time.Second),
			CoolDown: policy.Duration(10 * time.Minute)},
	}
	var st lifecycle.JobStatus
	var busiest int
	call := func() {
		t.Helper()
		res, err := ctrl.Reconcile(ctx, spec, &st)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		st = lifecycle.JobStatus{}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		for _, v := range st.Autoscale.Vertices {
			for _, s := range v.Samples {
				busiest = max(busiest, s.BusyMicrosPerSecond)
			}
		}
		time.Sleep(min(res.RequeueAfter, time.Second))
	}
	until := func(what string, limit time.Duration, done func() bool) {
		t.Helper()
		begin := time.Now()
		for call(); !done(); call() {
			if time.Since(begin) > limit || ctx.Err() != nil {
				t.Fatalf("%s: not reached: status %s %s: %s (action %s %s: %s); autoscale %s: %s", what, st.State, st.Reason, st.Message,
					st.Action, st.Progress.Outcome, st.Progress.Reason, st.Autoscale.Reason, st.Autoscale.Message)
			}
		}
		t.Logf("%s after %v: job %s, %s: %s; autoscale %s: %s", what, time.Since(begin).Round(time.Millisecond), st.JobID, st.Reason, st.Message,
			st.Autoscale.Reason, st.Autoscale.Message)
	}

	until("create", 3*time.Minute, func() bool { return !st.InFlight() && st.State == policy.Running && st.JobID != "" })
	first := st.JobID
	flinkfixture.WaitCounts(t, ctx, out, keys, 90*time.Second, func(_ string, n int64) bool { return n >= 1 })
	begin := time.Now()
	until("recommendation", 4*time.Minute, func() bool { return st.Action == lifecycle.ActionAutoscale })
	t.Logf("AUTOSCALE TIMING (Flink %s): rescale started %v after the job ran; busiest sample %d µs/s", cluster.FlinkVersion,
		time.Since(begin).Round(time.Millisecond), busiest)
	if busiest < 800_000 {
		t.Errorf("the counter's busiest sample is %d µs/s; the slow job should keep it busy", busiest)
	}
	// Saturated at 1, it needs at least 1/0.7 subtasks; the cluster has 4
	// slots.
	target := st.Target.Parallelism
	if target < 2 || target > 4 || st.Autoscale.Reason != string(policy.ReasonScaleUp) {
		t.Fatalf("autoscale to %d (%s); want ScaleUp to 2..4", target, st.Autoscale.Message)
	}
	until("rescaled", 4*time.Minute, func() bool { return !st.InFlight() })
	if st.Progress.Outcome != lifecycle.OutcomeSucceeded || st.JobID == first || st.Progress.Rescale.Path != policy.RescaleByUpgrade {
		t.Fatalf("rescale: outcome %s (%s), job %s (was %s), path %s", st.Progress.Outcome, st.Progress.Reason, st.JobID, first, st.Progress.Rescale.Path)
	}
	d, err := c.Job(ctx, st.JobID)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Vertices {
		if v.Parallelism != target {
			t.Errorf("vertex %s runs at %d, want %d", v.Name, v.Parallelism, target)
		}
	}
	stopped, err := flinkfixture.ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	countsContinue(t, ctx, out, keys, stopped, 3)
	// At rest at the new parallelism: the spec's parallelism 1 does not
	// bring it back, and the job converges.
	second := st.JobID
	until("converged", 2*time.Minute, func() bool { return st.Converged(spec) })
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		call()
	}
	if st.JobID != second || st.InFlight() || !st.Converged(spec) {
		t.Errorf("at rest: job %s (was %s), action %s in flight %v, converged %v", st.JobID, second, st.Action, st.InFlight(), st.Converged(spec))
	}
}
