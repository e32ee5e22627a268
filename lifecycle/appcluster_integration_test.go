//go:build integration

package lifecycle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/localcluster"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestRealClusterApplication runs one job's life through the job
// controller on real application clusters of FLINK_VERSION, each job in
// a cluster of its own started by localcluster, the status stored as
// JSON after every call and no session cluster at all: create; a
// scheduled savepoint; update (a new cluster from the update's savepoint,
// the counts continue, the old cluster deleted); the TaskManager killed,
// the job FAILED and restarted in a new cluster from its newest state;
// delete with a final savepoint, the cluster deleted; created again by
// the same name, restored from it; an update whose new cluster does not
// start ends SubmitFailed, naming the cause, with the old job's savepoint
// recorded and its cluster kept.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealClusterApplication -v ./lifecycle/
func TestRealClusterApplication(t *testing.T) {
	version := os.Getenv("FLINK_VERSION")
	if version == "" {
		t.Fatal("set FLINK_VERSION (e.g. 1.20.5 or 2.3.0)")
	}
	root, err := flinkfixture.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(root, ".cache", "flink")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	if err := flinkfixture.Prepare(ctx, version, cache); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	d := &localcluster.Deployer{LibDir: filepath.Join(cache, version, "lib"), WorkDir: work, StartTimeout: 2 * time.Minute,
		Configuration: map[string]string{"heartbeat.interval": "1s", "heartbeat.timeout": "10s"}}
	var clusters []lifecycle.Cluster // every cluster the test saw, deleted at the end
	t.Cleanup(func() {
		for _, c := range clusters {
			if t.Failed() {
				if b, err := os.ReadFile(filepath.Join(d.Dir(c), "logs", "jobmanager.out")); err == nil {
					t.Logf("%s jobmanager.out:\n%s", c.Name, lastLines(string(b), 40))
				}
			}
			_ = d.Delete(context.Background(), c)
		}
	})
	jar := filepath.Join(cache, version, "flinkkit-testjob.jar")
	store := &lifecycle.MemoryStore{}
	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Timing: lifecycle.Timing{Poll: 200 * time.Millisecond}}, Deployer: d,
		Store: store, Name: "app/counter", PollInterval: time.Second, RetryInterval: 5 * time.Second}
	const keys = 2
	outDir := func(name string) string { return filepath.Join(work, "out", name) }
	args := func(out string, extra ...string) []string {
		return append([]string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--checkpoint-interval", "300",
			"--restart-attempts", "0", "--name", "application"}, extra...)
	}
	out1, out2 := outDir("app-1"), outDir("app-2")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: jar, EntryClass: flinkfixture.TestJobClass, Args: args(out1), Parallelism: 1,
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
	}
	var st lifecycle.JobStatus
	calls := 0
	call := func(del bool) lifecycle.Result {
		t.Helper()
		var res lifecycle.Result
		var err error
		if del {
			res, err = ctrl.Delete(ctx, spec, &st)
		} else {
			res, err = ctrl.Reconcile(ctx, spec, &st)
		}
		if err != nil {
			t.Fatalf("call %d: %v", calls, err)
		}
		calls++
		if !st.Cluster.IsZero() && (len(clusters) == 0 || clusters[len(clusters)-1].Name != st.Cluster.Name) {
			clusters = append(clusters, st.Cluster)
		}
		if st.Action != "" && !st.Progress.Submit.Cluster.IsZero() && (len(clusters) == 0 || clusters[len(clusters)-1].Name != st.Progress.Submit.Cluster.Name) {
			clusters = append(clusters, st.Progress.Submit.Cluster)
		}
		b, err := json.Marshal(st) // stored, and read back, after every call
		if err != nil {
			t.Fatal(err)
		}
		st = lifecycle.JobStatus{}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		time.Sleep(min(res.RequeueAfter, time.Second))
		return res
	}
	until := func(what string, done func() bool) {
		t.Helper()
		begin := time.Now()
		for call(false); !done(); call(false) {
			if time.Since(begin) > 4*time.Minute || ctx.Err() != nil {
				t.Fatalf("%s: not reached: status %s %s: %s (action %s %s: %s)", what, st.State, st.Reason, st.Message, st.Action, st.Progress.Outcome, st.Progress.Reason)
			}
		}
		t.Logf("%s: %s %s after %v (job %s in %s): %s", what, st.State, st.Reason, time.Since(begin).Round(time.Millisecond), st.JobID, st.Cluster.Name, st.Message)
	}
	settled := func() bool {
		return !st.InFlight() && st.State == policy.Running && st.Reason == string(policy.Running)
	}
	exists := func(c lifecycle.Cluster) bool {
		ok, err := d.Exists(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// only checks that of the clusters seen, exactly the status's runs.
	only := func(what string) {
		t.Helper()
		for _, c := range clusters {
			if running := exists(c); running != (c.Name == st.Cluster.Name) {
				t.Errorf("%s: cluster %s exists %v; the status names %q", what, c.Name, running, st.Cluster.Name)
			}
		}
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

	// Create, and a scheduled savepoint.
	until("create", settled)
	only("create")
	out := out1
	flinkfixture.WaitCounts(t, ctx, out, keys, 90*time.Second, func(_ string, n int64) bool { return n >= 20 })
	spec.Savepoints = lifecycle.SavepointPolicy{Interval: policy.Duration(2 * time.Second)}
	until("scheduled savepoint", func() bool { return settled() && st.Latest.Reason == savepoint.ReasonScheduled })
	if !flinkfixture.LocationExists(st.Latest.Location) {
		t.Fatalf("scheduled savepoint %+v is not on disk", st.Latest)
	}
	spec.Savepoints = lifecycle.SavepointPolicy{}

	// Update: a new cluster from the update's savepoint; the old one goes.
	first := st.Cluster
	spec.Job.Args = args(out2)
	before := countsOf(out)
	until("update", func() bool { return settled() && st.Action == lifecycle.ActionUpgrade })
	out = out2
	continues(before, out)
	if st.Cluster.Name == first.Name || exists(first) || st.UpgradeFrom.Location == "" {
		t.Errorf("update: cluster %s (first %s, exists %v), upgrade from %+v", st.Cluster.Name, first.Name, exists(first), st.UpgradeFrom)
	}
	only("update")

	// The TaskManager dies; the job FAILS in its cluster, whose JobManager
	// stays; it is restarted from its newest state in a new cluster.
	failed, failedCluster := st.JobID, st.Cluster
	b, err := os.ReadFile(filepath.Join(d.Dir(failedCluster), "taskmanager.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	before = countsOf(out)
	until("restart", func() bool { return settled() && st.JobID != failed })
	if st.Restarts != 1 || st.Cluster.Name == failedCluster.Name || exists(failedCluster) {
		t.Errorf("restart: %d restarts, cluster %s (failed %s, exists %v)", st.Restarts, st.Cluster.Name, failedCluster.Name, exists(failedCluster))
	}
	continues(before, out)
	only("restart")

	// Retention while suspended: the suspension takes a savepoint and
	// deletes the cluster; the savepoints a lowered MaxCount lets go are
	// then deleted through the Storage (no JobManager is up to dispose of
	// them), the newest kept; the job resumes from it.
	onDisk := func() []string {
		var locs []string
		for _, r := range st.Savepoints.Records {
			if flinkfixture.LocationExists(r.Location) {
				locs = append(locs, r.Location)
			}
		}
		return locs
	}
	spec.Savepoints = lifecycle.SavepointPolicy{Interval: policy.Duration(time.Second)}
	until("savepoints to let go", func() bool { return settled() && len(onDisk()) >= 4 })
	spec.Savepoints, spec.State = lifecycle.SavepointPolicy{}, lifecycle.DesiredSuspended
	running := st.Cluster
	until("suspend", func() bool { return st.Suspended && !st.InFlight() })
	kept := onDisk()
	if exists(running) || !st.Cluster.IsZero() || len(kept) < 5 {
		t.Fatalf("suspend: cluster %s exists %v, status cluster %+v, %d savepoints on disk", running.Name, exists(running), st.Cluster, len(kept))
	}
	spec.Savepoints.MaxCount = 2
	ctrl.Storage = lifecycle.LocalStorage{}
	until("retention while suspended", func() bool { return len(st.Savepoints.Records) <= 2 })
	for _, loc := range kept {
		inHistory := slices.ContainsFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return r.Location == loc })
		if inHistory != flinkfixture.LocationExists(loc) {
			t.Errorf("retention while suspended: %s in the history %v, on disk %v", loc, inHistory, !inHistory)
		}
	}
	if !flinkfixture.LocationExists(st.Latest.Location) || st.Latest.Reason != savepoint.ReasonStop {
		t.Errorf("retention while suspended: latest %+v (on disk %v), want the suspension's savepoint", st.Latest, flinkfixture.LocationExists(st.Latest.Location))
	}
	t.Logf("retention while suspended: %d savepoints on disk before, %d after (MaxCount 2)", len(kept), len(onDisk()))
	spec.Savepoints, spec.State, ctrl.Storage = lifecycle.SavepointPolicy{}, lifecycle.DesiredRunning, nil
	before = countsOf(out)
	until("resume", settled)
	continues(before, out)
	only("resume")

	// Delete with DisposeOnDelete: a final savepoint under the name, the
	// cluster deleted, and the other savepoints of the history deleted
	// from storage (no JobManager is up to dispose of them).
	last := st.Cluster
	older := map[string]bool{}
	for _, r := range st.Savepoints.Records {
		older[r.Location] = flinkfixture.LocationExists(r.Location)
	}
	spec.Savepoints.DisposeOnDelete = true
	ctrl.Storage = lifecycle.LocalStorage{}
	begin := time.Now()
	for !call(true).Done {
		if ctx.Err() != nil {
			t.Fatalf("delete: %s %s", st.Progress.Outcome, st.Progress.Reason)
		}
	}
	rec, ok, _ := store.Get(ctx, "app/counter")
	t.Logf("delete: %s after %v: %s", st.Progress.Outcome, time.Since(begin).Round(time.Millisecond), st.Progress.Reason)
	if !ok || !flinkfixture.LocationExists(rec.Location) || exists(last) || !st.Cluster.IsZero() {
		t.Fatalf("delete: stored %+v (%v), cluster %s exists %v, status cluster %+v", rec, ok, last.Name, exists(last), st.Cluster)
	}
	gone := 0
	for loc, was := range older {
		switch {
		case loc == rec.Location || loc == st.Latest.Location:
		case flinkfixture.LocationExists(loc):
			t.Errorf("delete with DisposeOnDelete: savepoint %s is still on storage", loc)
		case was:
			gone++
		}
	}
	if len(st.Savepoints.Records) != 1 || gone == 0 {
		t.Errorf("delete with DisposeOnDelete: %d savepoints deleted from storage, history %+v", gone, st.Savepoints.Records)
	}
	t.Logf("delete with DisposeOnDelete: %d savepoints deleted from storage, %d left in the history", gone, len(st.Savepoints.Records))
	spec.Savepoints.DisposeOnDelete, ctrl.Storage = false, nil

	// Created again by the name: restored from the final savepoint.
	before = countsOf(out)
	st = lifecycle.JobStatus{}
	until("create again", settled)
	continues(before, out)
	only("create again")

	// An update whose new cluster does not start: SubmitFailed, naming
	// it; the old job's savepoint stays recorded.
	old := st.Cluster
	spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		"rest.bind-port": "not-a-port"}
	spec.Job.Args = args(out)
	until("update to a cluster that does not start", func() bool {
		return !st.InFlight() && st.Action == lifecycle.ActionUpgrade && st.Progress.Done()
	})
	p := st.Progress
	t.Logf("failed update: %s: %s", p.Outcome, p.Reason)
	if p.Outcome != lifecycle.OutcomeSubmitFailed || p.Savepoint.Location == "" || st.Latest.Location != p.Savepoint.Location || !flinkfixture.LocationExists(p.Savepoint.Location) {
		t.Errorf("failed update: %s (%s); savepoint %q, latest %+v", p.Outcome, p.Reason, p.Savepoint.Location, st.Latest)
	}
	// Nothing was started: the status still names the old job and its
	// cluster, whose JobManager keeps the stopped job, to restart from
	// the savepoint once the spec is fixed.
	if st.Cluster.Name != old.Name || !exists(old) || p.Submit.NewJobID != "" {
		t.Errorf("after the refused deploy: status cluster %q (old %s, exists %v), new job %q", st.Cluster.Name, old.Name, exists(old), p.Submit.NewJobID)
	}
	t.Logf("%d calls, %d clusters in all", calls, len(clusters))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
