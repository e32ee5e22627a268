//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealRetainedCheckpointsRemoved: a job that retains its checkpoints
// on cancellation, upgraded twice by a Controller with a Storage of the
// cluster's checkpoint directory (LocalStorage, or the fixture's
// StateStorage when the checkpoints are in an object store). The first upgrade (LastState)
// cancels job A and starts B from A's newest retained checkpoint: once B
// completed a checkpoint of its own, A's other checkpoints are removed,
// the restored one stays (the status names it: the rollback's restore
// point). The second upgrade (Savepoint) starts C from a savepoint: once
// C completed a checkpoint, A's directory and B's are gone, C's own
// checkpoints stay, and the counts continue across both upgrades.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run 'TestRealRetainedCheckpointsRemoved$' -v ./lifecycle/
func TestRealRetainedCheckpointsRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, c := sessionClient(t, flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2}))
	var storage lifecycle.Storage = lifecycle.LocalStorage{}
	if cluster.Store != nil {
		storage = flinkfixture.StateStorage{}
	}
	ctrl := &lifecycle.Controller{Env: realEnv(c), Name: "app/retained", PollInterval: 300 * time.Millisecond, RetryInterval: 5 * time.Second,
		Storage: storage}
	const keys = 2
	args := func(out string) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", "1", "--checkpoint-interval", "6000", "--name", "retained"}
	}
	out1, out2, out3, out4 := cluster.OutDir("retained-1"), cluster.OutDir("retained-2"), cluster.OutDir("retained-3"), cluster.OutDir("retained-4")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args(out1),
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Update: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
	}
	var st lifecycle.JobStatus
	until := func(what string, done func() bool) {
		t.Helper()
		realUntil(t, ctx, what, ctrl, &spec, &st, time.Minute, done)
	}
	settled := func() bool {
		return !st.InFlight() && st.State == policy.Running && st.Reason == string(policy.Running)
	}
	upgradedBy := func(a lifecycle.JobAction) func() bool {
		return func() bool {
			return st.Action == a && st.Progress.Done() && !st.InFlight() && st.Deployed.Fingerprint() == spec.Job.Fingerprint()
		}
	}
	upgraded := upgradedBy(lifecycle.ActionUpgrade)
	chk := func(job flinkapi.JobID) []string { return checkpointDirs(t, cluster.CheckpointURI, job) }
	counts := func(dir string) map[string]int64 {
		m, err := flinkfixture.ReadCounts(dir)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	record := func(job flinkapi.JobID) (lifecycle.ReplacedJob, bool) {
		i := slices.IndexFunc(st.Replaced, func(r lifecycle.ReplacedJob) bool { return r.JobID == job })
		if i < 0 {
			return lifecycle.ReplacedJob{}, false
		}
		return st.Replaced[i], true
	}

	until("create", settled)
	a := st.JobID
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 20 })

	// Upgrade 1, LastState: B from A's newest retained checkpoint, sent
	// when Flink's cached statistics show it (they are cached for 3 s)
	// and it is not yet subsumed by the next one (6 s).
	// The counts read before it are no higher than its state.
	before := counts(out1)
	freshCheckpoint(t, ctx, c, a, time.Now())
	spec.Job.Args = args(out2)
	until("upgrade from a checkpoint", upgraded)
	b, restored := st.JobID, st.Progress.Replace.RestoreFrom
	aBefore := chk(a)
	if st.Progress.Replace.RestoreKind != policy.KindCheckpoint || !strings.Contains(restored, string(a)+"/chk-") {
		t.Fatalf("upgrade 1 restored from %s %q, want a checkpoint of %s; decision %s, observed %+v", st.Progress.Replace.RestoreKind, restored, a, st.Progress.Replace.Decision, st.Progress.Replace.Observed)
	}
	until("B's own checkpoint", func() bool {
		r, ok := record(a)
		return settled() && ok && r.Checkpointed && r.Waiting
	})
	aAfter, bOwn := chk(a), chk(b)
	t.Logf("%s, upgrade 1 (LastState from %s): job A %s: %d chk dirs %v -> %d %v; job B %s: %v", cluster.FlinkVersion, restored,
		a, len(aBefore), aBefore, len(aAfter), aAfter, b, bOwn)
	if want := []string{filepath.Base(restored)}; !slices.Equal(aAfter, want) {
		t.Errorf("after upgrade 1, A's chk dirs %v, want only the restored %v", aAfter, want)
	}
	if len(bOwn) == 0 {
		t.Error("B has no checkpoint of its own")
	}
	countsContinue(t, ctx, out2, keys, before, 3)

	// Upgrade 2, Savepoint: C from a savepoint. Nothing names A's
	// checkpoint any more.
	spec.Job.Args = args(out3)
	spec.Update.Mode = policy.UpgradeSavepoint
	before = counts(out2)
	until("upgrade from a savepoint", upgraded)
	cJob := st.JobID
	aBefore2, bBefore := chk(a), chk(b)
	until("C's own checkpoint", func() bool { return settled() && len(st.Replaced) == 0 })
	aAfter2, bAfter, cOwn := chk(a), chk(b), chk(cJob)
	t.Logf("%s, upgrade 2 (Savepoint from %s): job A: %d chk dirs %v -> %d; job B: %d %v -> %d; job C %s: %v", cluster.FlinkVersion,
		st.UpgradeFrom.Location, len(aBefore2), aBefore2, len(aAfter2), len(bBefore), bBefore, len(bAfter), cJob, cOwn)
	for job, name := range map[flinkapi.JobID]string{a: "A", b: "B"} {
		if left := jobCheckpoints(t, cluster.CheckpointURI, job); len(left) != 0 {
			t.Errorf("after upgrade 2, %s's checkpoint directory is still there: %q", name, left)
		}
	}
	if len(cOwn) == 0 {
		t.Error("C has no checkpoint of its own")
	}
	countsContinue(t, ctx, out3, keys, before, 3)
	if later := chk(cJob); len(later) == 0 {
		t.Error("C's checkpoints are gone")
	}

	// Blue/green: D from a savepoint beside C, then C is cancelled and
	// retains its newest checkpoint, which nothing names: it goes once D
	// completed a checkpoint.
	spec.Job.Args = args(out4)
	spec.BlueGreen = lifecycle.BlueGreenPolicy{Enabled: true, Window: policy.Duration(time.Minute)}
	before = counts(out3)
	until("blue/green", upgradedBy(lifecycle.ActionBlueGreen))
	d := st.JobID
	cBefore := chk(cJob)
	until("D's own checkpoint", func() bool { return settled() && len(st.Replaced) == 0 })
	cAfter, dOwn := chk(cJob), chk(d)
	t.Logf("%s, blue/green (from %s): job C: %d chk dirs %v -> %d; job D %s: %v", cluster.FlinkVersion, st.UpgradeFrom.Location,
		len(cBefore), cBefore, len(cAfter), d, dOwn)
	if len(cBefore) == 0 {
		t.Error("C retained no checkpoint when it was cancelled")
	}
	if left := jobCheckpoints(t, cluster.CheckpointURI, cJob); len(left) != 0 {
		t.Errorf("after the blue/green upgrade, C's checkpoint directory is still there: %q", left)
	}
	if len(dOwn) == 0 {
		t.Error("D has no checkpoint of its own")
	}
	countsContinue(t, ctx, out4, keys, before, 3)

	// Cleanup: the job goes.
	for res := realCall(t, ctx, ctrl, spec, &st, true); !res.Done; res = realCall(t, ctx, ctrl, spec, &st, true) {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
}

// freshCheckpoint waits until job's newest completed checkpoint,
// triggered after after, is a little over 3 s old: Flink's statistics,
// cached for 3 s, then show it, and the next one (6 s apart) has not
// subsumed it yet.
func freshCheckpoint(t *testing.T, ctx context.Context, c *flinkapi.Client, job flinkapi.JobID, after time.Time) {
	t.Helper()
	for ctx.Err() == nil {
		stats, err := c.Checkpoints(ctx, job)
		if err == nil && stats.LatestCompleted != nil && !stats.LatestCompleted.Discarded && stats.LatestCompleted.TriggerTime.After(after) {
			if wait := time.Until(stats.LatestCompleted.LatestAck.Add(3200 * time.Millisecond)); wait > -time.Second {
				time.Sleep(wait)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal(ctx.Err())
}

// checkpointDirs are the names of the chk-N directories of job under
// the checkpoint folder dir (a file: or s3:// URI), sorted; none when
// its directory does not exist.
func checkpointDirs(t *testing.T, dir string, job flinkapi.JobID) []string {
	t.Helper()
	names, err := flinkfixture.ListChildren(t.Context(), dir+"/"+string(job))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "chk-") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// jobCheckpoints are the entries of job's directory under the checkpoint
// folder dir (a file: or s3:// URI): none when the directory is gone (in
// an object store: holds no object); on disk an empty directory is
// reported as "." .
func jobCheckpoints(t *testing.T, dir string, job flinkapi.JobID) []string {
	t.Helper()
	names, err := flinkfixture.ListChildren(t.Context(), dir+"/"+string(job))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 && !strings.HasPrefix(dir, "s3://") && flinkfixture.LocationExists(dir+"/"+string(job)) {
		return []string{"."}
	}
	return names
}
