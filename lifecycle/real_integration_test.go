//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// TestRealCluster takes a savepoint, stops the test job with a savepoint
// and submits it again from there on a real Flink session cluster of
// FLINK_VERSION (or the one at FLINK_URL), and checks that each key's
// count continues:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v ./lifecycle/
func TestRealCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cluster, err := flinkfixture.StartFromEnv(ctx, flinkfixture.Config{Slots: 2})
	if err != nil {
		t.Fatalf("the lifecycle integration test needs a real Flink cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("cluster logs:\n" + cluster.Logs())
		}
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	t.Logf("Flink %s at %s ready in %v", cluster.FlinkVersion, cluster.URL, time.Since(start).Round(time.Millisecond))
	if cluster.TestJobJar == "" {
		t.Fatalf("no test job jar for Flink %q (run scripts/flink.sh VERSION)", cluster.Version)
	}
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	timing := lifecycle.Timing{Poll: 200 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}
	const keys, minCount = 3, 40
	args := func(out string) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", "1",
			"--checkpoint-interval", "1000", "--name", "lifecycle-test"}
	}
	run := func(t *testing.T, what string, op lifecycle.Stepper) lifecycle.Progress {
		t.Helper()
		var p lifecycle.Progress
		begin := time.Now()
		res, err := lifecycle.Run(ctx, op, &p, nil)
		t.Logf("%s: %s in %v after %d steps: %s", what, res.Outcome, time.Since(begin).Round(time.Millisecond), p.Steps, p.Reason)
		if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("%s: %+v, %v; progress %+v", what, res, err, p)
		}
		return p
	}

	// Submit uploads the jar and starts the job with a recorded job id.
	out1 := cluster.OutDir("lifecycle-first")
	sub := run(t, "Submit", &lifecycle.Submit{Client: c, JarFile: cluster.TestJobJar, Timing: timing,
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out1)}})
	job := sub.JobID
	waitCounts(t, ctx, out1, keys, func(_ string, n int64) bool { return n >= minCount })

	sp := run(t, "TakeSavepoint", &lifecycle.TakeSavepoint{Client: c, Job: job, Version: v, Timing: timing})
	if !exists(sp.Location) {
		t.Errorf("savepoint %s does not exist", sp.Location)
	}
	if st, err := c.JobStatus(ctx, job); err != nil || st != flinkapi.JobRunning {
		t.Errorf("after TakeSavepoint the job is %s, %v", st, err)
	}

	strategy, err := lifecycle.ChooseStopStrategy(v, "", "")
	if err != nil || strategy != lifecycle.StopWithSavepoint {
		t.Fatalf("ChooseStopStrategy(%s) = %s, %v", v, strategy, err)
	}
	stop := run(t, "Stop", &lifecycle.Stop{Client: c, Job: job, Version: v, Timing: timing})
	if !exists(stop.Location) || stop.Location == sp.Location {
		t.Errorf("stop savepoint %s does not exist or is the first one", stop.Location)
	}
	if st, err := c.JobStatus(ctx, job); err != nil || st != flinkapi.JobFinished {
		t.Errorf("after Stop the job is %s, %v", st, err)
	}
	c1, err := flinkfixture.ReadCounts(out1)
	if err != nil || len(c1) != keys {
		t.Fatalf("counts at the stop %v, %v", c1, err)
	}
	t.Logf("counts at the stop: %s", format(c1))

	// Submitting from the stop's savepoint reuses the uploaded jar; the
	// counts continue.
	out2 := cluster.OutDir("lifecycle-restored")
	again := run(t, "Submit from savepoint", &lifecycle.Submit{Client: c, JarID: sub.JarID, Timing: timing,
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2), SavepointPath: stop.Location}})
	if again.JobID == job {
		t.Errorf("the restored job has the first job's id")
	}
	first := map[string]int64{}
	waitCounts(t, ctx, out2, keys, func(k string, n int64) bool {
		if _, ok := first[k]; !ok {
			first[k] = n
		}
		return true
	})
	for k, n := range c1 {
		if first[k] < n {
			t.Errorf("key %s: first count after the restore %d, want >= %d: the state was not restored", k, first[k], n)
		}
	}
	later := waitCounts(t, ctx, out2, keys, func(k string, n int64) bool { return n > c1[k]+5 })
	t.Logf("counts after the restore: first %s, later %s", format(first), format(later))

	// A retried Submit with the same progress does not start a second job.
	p := again
	p.Phase, p.Outcome, p.Requests = lifecycle.PhaseSubmit, "", 1
	res, err := (&lifecycle.Submit{Client: c, JarID: sub.JarID, Timing: timing}).Step(ctx, &p)
	if err != nil || p.Phase != lifecycle.PhaseWaitRunning {
		t.Errorf("resubmit look-up: %+v, %v; progress %+v", res, err, p)
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Errorf("jobs %+v, want the stopped one and the restored one", jobs)
	}

	// Savepoint then cancel, and cancel with savepoint of a job restored
	// from that savepoint.
	stc := run(t, "Stop (savepoint then cancel)", &lifecycle.Stop{Client: c, Job: again.JobID, Version: v, Timing: timing, Strategy: lifecycle.SavepointThenCancel})
	if st, err := c.JobStatus(ctx, again.JobID); err != nil || st != flinkapi.JobCanceled || !exists(stc.Location) {
		t.Errorf("after savepoint then cancel the job is %s, %v; savepoint %s", st, err, stc.Location)
	}
	third := run(t, "Submit from savepoint", &lifecycle.Submit{Client: c, JarID: sub.JarID, Timing: timing,
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(cluster.OutDir("lifecycle-third")), SavepointPath: stc.Location}})
	cws := run(t, "Stop (cancel with savepoint)", &lifecycle.Stop{Client: c, Job: third.JobID, Version: v, Timing: timing, Strategy: lifecycle.CancelWithSavepoint})
	if st, err := c.JobStatus(ctx, third.JobID); err != nil || st != flinkapi.JobCanceled || !exists(cws.Location) {
		t.Errorf("after cancel with savepoint the job is %s, %v; savepoint %s", st, err, cws.Location)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

func exists(location string) bool {
	if location == "" {
		return false
	}
	_, err := os.Stat(strings.TrimPrefix(location, "file:"))
	return err == nil
}

// waitCounts polls dir until keys keys have counts for which ok holds.
func waitCounts(t *testing.T, ctx context.Context, dir string, keys int, ok func(string, int64) bool) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		counts, err := flinkfixture.ReadCounts(dir)
		good := 0
		for k, n := range counts {
			if ok(k, n) {
				good++
			}
		}
		if err == nil && good >= keys {
			return counts
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("counts in %s: %s, %v", dir, format(counts), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func format(m map[string]int64) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
