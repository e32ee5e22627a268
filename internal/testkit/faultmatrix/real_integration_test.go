//go:build integration

package faultmatrix

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealClusterFindings replays on a real Flink session cluster of
// FLINK_VERSION the situations the fault matrix found lifecycle mishandling
// on the fake, where real Flink produces them without injected faults:
//
//   - a LastState upgrade whose observed checkpoint is subsumed before
//     the cancel (checkpoints every 5s, a caller that waits 6s between
//     the decision and the cancel): the new job must start from the
//     cancelled job's final retained checkpoint, which exists, and
//     continue its counts;
//   - a job Flink does not know: Stop and Upgrade confirm the 404 with
//     Flink's job list before they count the job as gone, and then go on.
//
// Run it with:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealClusterFindings -v ./internal/testkit/faultmatrix/
func TestRealClusterFindings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, c, _, jar := startCluster(t, ctx, flinkfixture.Config{Slots: 2})
	timing := lifecycle.Timing{Poll: time.Second, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}
	args := func(out string) []string {
		return []string{"--out", out, "--keys", "2", "--rate", "40", "--parallelism", "1", "--checkpoint-interval", "200", "--name", "faultmatrix-real"}
	}
	run := func(what string, op lifecycle.Stepper) lifecycle.Progress {
		t.Helper()
		var p lifecycle.Progress
		res, err := lifecycle.Run(ctx, op, &p, nil)
		t.Logf("%s: %s after %d steps (%s): %s", what, res.Outcome, p.Steps, p.Replace.Decision, p.Reason)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return p
	}

	// LastState across a subsumed checkpoint: checkpoints every 5s; the
	// caller waits 6s between the decision and the cancel (a slow
	// reconcile), so the observed checkpoint is subsumed before the
	// cancel.
	out1, out2 := cluster.OutDir("faultmatrix-old"), cluster.OutDir("faultmatrix-new")
	old := flinkapi.NewJobID()
	slow := func(out string) []string {
		a := args(out)
		a[len(a)-3] = "5000" // --checkpoint-interval
		return a
	}
	if _, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: old, EntryClass: cluster.TestJobClass, ProgramArgs: slow(out1),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	waitRunningWithCounts(t, ctx, out1)
	for wait := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// Flink caches the statistics for a few seconds: start when
		// they show a checkpoint taken within the last second, which
		// the next one subsumes only seconds later.
		stats, err := c.Checkpoints(ctx, old)
		if err == nil && stats.LatestCompleted != nil && !stats.LatestCompleted.Discarded && time.Since(stats.LatestCompleted.TriggerTime) < time.Second {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("no fresh checkpoint: %+v, %v", stats, err)
		}
	}
	op := &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Job: old, JarID: jar, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2)}}
	var up lifecycle.Progress
	observed := ""
	for range 200 {
		res, err := op.Step(ctx, &up)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
		if up.Phase == lifecycle.PhaseCancel && observed == "" {
			observed = up.Replace.RestoreFrom
			time.Sleep(6 * time.Second)
		}
		time.Sleep(res.RequeueAfter)
	}
	t.Logf("Upgrade (LastState): %s after %d steps (%s): %s; observed checkpoint %s", up.Outcome, up.Steps, up.Replace.Decision, up.Reason, observed)
	if up.Outcome != lifecycle.OutcomeSucceeded || up.Replace.RestoreKind != policy.KindCheckpoint || observed == "" {
		t.Fatalf("LastState upgrade: %s (%s) restore %s %q; checkpoint recorded before the cancel %q", up.Outcome, up.Reason, up.Replace.RestoreKind, up.Replace.RestoreFrom, observed)
	}
	if !flinkfixture.LocationExists(up.Replace.RestoreFrom) {
		t.Errorf("the restore point %s does not exist", up.Replace.RestoreFrom)
	}
	if flinkfixture.LocationExists(observed) {
		t.Logf("the checkpoint observed before the cancel, %s, was not subsumed", observed)
	}
	countsCarriedOver(t, ctx, out1, out2)

	// A job Flink does not know.
	unknown := flinkapi.NewJobID()
	st := run("Stop (unknown job)", &lifecycle.Stop{Env: lifecycle.Env{Client: c, Timing: timing}, Job: unknown, Mode: policy.UpgradeStateless})
	if st.Outcome != lifecycle.OutcomeSucceeded || !strings.Contains(st.Reason, "no longer knows") || st.Steps < 3 {
		t.Errorf("stop of an unknown job: %s after %d steps (%s)", st.Outcome, st.Steps, st.Reason)
	}
	dep := run("Upgrade (unknown old job)", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Job: unknown, JarID: jar, Policy: policy.UpdatePolicy{Mode: policy.UpgradeStateless},
		Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(cluster.OutDir("faultmatrix-third"))}})
	if dep.Outcome != lifecycle.OutcomeSucceeded || !dep.Replace.Observed.Missing {
		t.Errorf("upgrade of an unknown job: %s (%s), observed %+v", dep.Outcome, dep.Reason, dep.Replace.Observed)
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, j := range jobs {
		if !j.Status.IsGloballyTerminal() && !cluster.ExistedBefore(string(j.ID)) {
			running++
		}
	}
	if running != 2 { // the upgraded job and the deployed one
		t.Errorf("%d jobs run, want 2: %+v", running, jobs)
	}
}

// startCluster gets a cluster for t, the shared one of `make integration`
// when cfg is a plain session cluster (TestRealClusterNothingLost needs a
// configuration of its own), and returns it with a client, the cluster's
// version and the test job's jar uploaded to it.
func startCluster(t *testing.T, ctx context.Context, cfg flinkfixture.Config) (*flinkfixture.Cluster, *flinkapi.Client, flinkapi.Version, flinkapi.JarID) {
	t.Helper()
	cluster := flinkfixture.SharedForTest(t, ctx, cfg)
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	jar, err := c.UploadJar(ctx, cluster.TestJobJar)
	if err != nil {
		t.Fatal(err)
	}
	return cluster, c, v, jar
}

// countsCarriedOver checks that the job writing to to started from the
// state of the one that wrote to from: its first counts are close to the
// old job's last ones (at least half of them), not zero.
func countsCarriedOver(t *testing.T, ctx context.Context, from, to string) {
	t.Helper()
	before, err := flinkfixture.ReadCounts(from)
	if err != nil {
		t.Fatal(err)
	}
	after := waitRunningWithCounts(t, ctx, to)
	for k, n := range after {
		if n < before[k]/2 {
			t.Errorf("key %s: the new job counts %d, the old one %d: the state was not carried over", k, n, before[k])
		}
	}
}

// waitRunningWithCounts waits until the job writing to dir has counted
// both keys, and returns the counts.
func waitRunningWithCounts(t *testing.T, ctx context.Context, dir string) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		counts, err := flinkfixture.ReadCounts(dir)
		if err == nil && len(counts) >= 2 && counts["key-0"] > 20 && counts["key-1"] > 20 {
			return counts
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("counts in %s: %v, %v", dir, counts, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
