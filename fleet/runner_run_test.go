package fleet

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRunnerRunWakesOnChange: Run watches the cluster's shared overview,
// and a deployment whose job fails is called at once, not at its next
// resync; its metrics count its calls.
func TestRunnerRunWakesOnChange(t *testing.T) {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithRealTime(), flinktest.WithSlots(8), flinktest.WithCheckpointInterval(300*time.Millisecond))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jar, err := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []Result
	r := &Runner{Store: newMemStore(), Clusters: map[string]lifecycle.Env{"main": {Client: c, Clock: srv.Clock()}},
		Controller: lifecycle.Controller{PollInterval: time.Second, RetryInterval: time.Second},
		OnResult: func(res Result) {
			mu.Lock()
			calls = append(calls, res)
			mu.Unlock()
		}}
	var desired []Deployment
	for _, name := range []string{"a", "b"} {
		desired = append(desired, Deployment{Name: name, Cluster: "main", Spec: lifecycle.JobSpec{
			Job: lifecycle.JobTemplate{JarID: jar, Args: []string{"--out", "/out/" + name},
				FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
			Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)}}})
	}
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		end := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(end) {
				t.Fatalf("%s: not within %v; results: %s", what, limit, describeResults(r.Results()))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("both running", 30*time.Second, func() bool { return allDone(r.Results()) && len(r.Results()) == 2 })
	// At rest and watched, the Controllers ask to be called back at the
	// resync only. A call that finds the watch late (its last read more
	// than three MaxAge ago, as on a loaded machine under -race) asks
	// for the poll instead, and the next call for the resync again: the
	// bound is for a runner that never rests, not for a slow one.
	waitFor("at rest", time.Minute, func() bool {
		for _, res := range r.Results() {
			if time.Until(res.Next) < time.Minute {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Second) // a checkpoint to restart from
	rec, _, _ := r.Store.Load(ctx, "a")
	mu.Lock()
	before := len(calls)
	mu.Unlock()
	if err := srv.FailJob(rec.Status.JobID, "a task failed"); err != nil {
		t.Fatal(err)
	}
	failedAt := time.Now()
	waitFor("a called after its job failed", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, res := range calls[before:] {
			if res.Name == "a" {
				return true
			}
		}
		return false
	})
	t.Logf("a called %v after its job failed", time.Since(failedAt).Round(time.Millisecond))
	waitFor("a restarted", 30*time.Second, func() bool {
		if rec, _, _ := r.Store.Load(ctx, "a"); rec.Status.Verdict == lifecycle.VerdictBlocked {
			t.Fatalf("a blocked: %s: %s", rec.Status.Reason, rec.Status.Message)
		}
		rec, _, _ := r.Store.Load(ctx, "a")
		j, ok := srv.Job(rec.Status.JobID)
		return ok && j.State == flinkapi.JobRunning && rec.Status.Verdict == lifecycle.VerdictDone && rec.Status.Restarts > 0
	})

	var m strings.Builder
	if err := r.WriteMetrics(&m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`flinkkit_fleet_deployments{cluster="main",verdict="Done"} 2`,
		`flinkkit_fleet_deployments_failing{cluster="main"} 0`,
		`# TYPE flinkkit_fleet_calls_total counter`,
		`flinkkit_fleet_overview_reads_total{cluster="main"} `,
	} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, m.String())
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}

	// A second Run of the same Runner watches the clusters again: b is
	// called soon after its job failed, not at its resync.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- r.Run(ctx) }()
	time.Sleep(time.Second) // Run's first pass, and its watch started
	rec, _, _ = r.Store.Load(ctx, "b")
	mu.Lock()
	before = len(calls)
	mu.Unlock()
	if err := srv.FailJob(rec.Status.JobID, "a task failed"); err != nil {
		t.Fatal(err)
	}
	failedAt = time.Now()
	waitFor("b called by the second Run after its job failed", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, res := range calls[before:] {
			if res.Name == "b" {
				return true
			}
		}
		return false
	})
	t.Logf("b called %v after its job failed, in the second Run", time.Since(failedAt).Round(time.Millisecond))
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("the second Run returned %v, want context.Canceled", err)
	}
}
