//go:build integration

package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestRealExternalStopRestart: a job of the deployment is stopped with a
// savepoint from outside the Controller (POST /jobs/<id>/stop, as a user
// would from Flink's UI), then the JobManager of its cluster, which runs
// without high availability, restarts: the job is forgotten. The
// Controller's next calls (restart policy FromLatestState) audit the
// storage and restart the job from that savepoint (the newest state on
// storage, newer than the status's Latest), and the restored counts
// continue from the stop's (the job ran on for 6 s after Latest with no
// call of the Controller; the first counts the restarted job writes are
// read as they appear). Before them the audit shows the external
// savepoint Unrecorded; after them the bucket's listing under the
// deployment's directories is what the ledger says. Then the job is
// cancelled from outside (as from Flink's UI): the Controller restarts it
// from its newest state, the cancelled job's last checkpoint where Flink
// retains it on cancellation, else the newest savepoint. The cluster is the
// test's own (one TaskManager of one slot, its state in an object
// store): restarting the shared cluster's JobManager would disturb the
// other tests. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run '^TestRealExternalStopRestart$' -v ./lifecycle/
func TestRealExternalStopRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cluster := flinkfixture.StartForTest(t, ctx, flinkfixture.Config{Slots: 1, ObjectStore: true})
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "extstop/counter",
		PollInterval: time.Second, RetryInterval: 5 * time.Second}
	sl := newStorageLedger(t, ctrl, cluster)
	out := cluster.OutDir("extstop")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args: []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "500"}},
		Update:     policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		Savepoints: lifecycle.SavepointPolicy{Interval: policy.Duration(3 * time.Second), MaxCount: 2},
		Restart:    policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
	}
	var st lifecycle.JobStatus
	realUntil(t, ctx, "deployed", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Converged(spec) })
	realUntil(t, ctx, "a periodic savepoint", ctrl, &spec, &st, time.Minute, func() bool {
		return st.Latest.Reason == savepoint.ReasonScheduled && st.Latest.Location != ""
	})
	atRest(t, ctx, "periodic savepoints", ctrl, &spec, &st)
	sl.check("periodic savepoints", spec, &st)
	old, latest := st.JobID, st.Latest.Location

	// The job runs on for a while with no call of the Controller (no
	// periodic savepoint): the state at the stop is well ahead of Latest's.
	time.Sleep(6 * time.Second)

	// Stopped with a savepoint from outside, into the cluster's default
	// savepoint directory.
	op, err := c.StopWithSavepoint(ctx, old, flinkapi.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var res *flinkapi.OperationResult
	for res == nil || !res.Completed() {
		if ctx.Err() != nil {
			t.Fatalf("the stop with savepoint of %s: %v", old, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
		if res, err = c.OperationStatus(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	if !res.Succeeded() || res.Location == "" {
		t.Fatalf("the stop with savepoint of %s: %+v", old, res)
	}
	external := strings.TrimSuffix(res.Location, "/")
	for {
		s, err := c.JobStatus(ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		if s == flinkapi.JobFinished {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s after its stop: %s", old, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The job ended: its counts are final. They are removed, so that the
	// first counts read are the restarted job's first.
	counts, err := flinkfixture.ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	for k := range counts {
		if err := os.Remove(filepath.Join(out, k+".count")); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("stopped from outside: %s; the status's latest %s; counts %s", external, latest, format(counts))
	// The restarted job's first counts, read as soon as it wrote them.
	firstc := make(chan map[string]int64, 1)
	go func() {
		defer close(firstc)
		for ctx.Err() == nil {
			if m, err := flinkfixture.ReadCounts(out); err == nil && len(m) >= len(counts) {
				firstc <- m
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	a := sl.audit("stopped from outside", spec, &st)
	if u := a.Of(lifecycle.AuditUnrecorded); len(u) != 1 || strings.TrimSuffix(u[0].Path, "/") != external {
		t.Errorf("the audit after the external stop: Unrecorded %+v, want %s alone\n%s", u, external, a)
	}

	// The JobManager restarts without HA: the job is forgotten.
	begin := time.Now()
	if err := cluster.RestartJobManager(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the JobManager restarted in %v", time.Since(begin).Round(time.Millisecond))
	if _, err := c.JobStatus(ctx, old); err == nil {
		t.Fatalf("job %s is still known after the JobManager's restart", old)
	}
	realUntil(t, ctx, "restarted", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.JobID != old && st.Converged(spec) })
	t.Logf("restarted as %s from %s (external stop's %s, latest before %s)", st.JobID, st.RestoredFrom, external, latest)
	if strings.TrimSuffix(st.RestoredFrom, "/") != external {
		t.Errorf("the job restarted from %q, want the external stop's savepoint %s (newer than the latest %s)", st.RestoredFrom, external, latest)
	}
	var first map[string]int64
	select {
	case first = <-firstc:
	case <-time.After(countsTimeout):
	}
	if first == nil {
		t.Fatalf("no counts in %s after the restart", out)
	}
	for k, n := range counts {
		if first[k] < n {
			t.Errorf("key %s: first count %d after the restart, %d at the external stop: the job restarted from older state", k, first[k], n)
		}
	}
	later := flinkfixture.WaitCounts(t, ctx, out, len(counts), countsTimeout, func(k string, n int64) bool { return n > counts[k]+20 })
	t.Logf("counts: at the stop %s, first %s, later %s", format(counts), format(first), format(later))
	atRest(t, ctx, "restarted", ctrl, &spec, &st)
	sl.check("restarted", spec, &st)

	// Cancelled from outside (the Flink UI's cancel): the restart policy
	// brings the job back from its newest state, the cancelled job's
	// newest checkpoint if Flink retains it on cancellation, else the
	// newest savepoint.
	cancelled, latestBefore := st.JobID, st.Latest.Location
	cfg, err := c.CheckpointConfig(ctx, cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CancelJob(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	sawRestart := false
	realUntil(t, ctx, "restarted after the cancel", ctrl, &spec, &st, 2*time.Minute, func() bool {
		sawRestart = sawRestart || st.Action == lifecycle.ActionRestart
		return st.JobID != cancelled && st.Converged(spec)
	})
	stats, err := c.Checkpoints(ctx, cancelled)
	if err != nil {
		t.Fatal(err)
	}
	want := latestBefore
	if cfg.ExternalizationEnabled && !cfg.DeleteOnCancellation && stats.LatestCompleted != nil && !stats.LatestCompleted.IsSavepoint {
		want = stats.LatestCompleted.ExternalPath
	}
	t.Logf("cancelled %s (retained on cancellation: %v); restarted as %s from %s", cancelled, cfg.ExternalizationEnabled && !cfg.DeleteOnCancellation, st.JobID, st.RestoredFrom)
	if !sawRestart || st.RestoredFrom == "" || strings.TrimSuffix(st.RestoredFrom, "/") != strings.TrimSuffix(want, "/") {
		t.Errorf("after the cancel: restarted %v, from %q; want a restart from the newest state %q", sawRestart, st.RestoredFrom, want)
	}
	atRest(t, ctx, "restarted after the cancel", ctrl, &spec, &st)
	sl.check("restarted after the cancel", spec, &st)
}
