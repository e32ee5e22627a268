//go:build integration

package faultmatrix

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// realStoreDuration is the rest.async.store-duration of the cluster of
// TestRealClusterNothingLost: short, so that Flink forgets a trigger id
// within the test, as it does after 5 minutes by default.
const realStoreDuration = 8 * time.Second

// cancelClient is a real client whose first cancel reaches Flink but
// loses its answer (lose), or answers late (delay): the transient answer
// to a cancel of the fault matrix's row "one transient answer to the
// cancel", on real Flink.
type cancelClient struct {
	*flinkapi.Client
	lose    bool
	delay   time.Duration
	cancels atomic.Int32
}

func (c *cancelClient) CancelJob(ctx context.Context, id flinkapi.JobID) error {
	err := c.Client.CancelJob(ctx, id)
	if c.cancels.Add(1) > 1 || err != nil {
		return err
	}
	if c.lose {
		return &flinkapi.TransportError{Method: "PATCH", Path: "/jobs/" + string(id), Err: errors.New("connection reset by peer")}
	}
	time.Sleep(c.delay)
	return nil
}

// TestRealClusterNothingLost replays on a real Flink session cluster of
// FLINK_VERSION what issue "nothing lost" found broken:
//
//   - a Teardown whose stop's answer is lost with the caller, who comes
//     back after Flink forgot the trigger id: the stop sent again fails
//     with FlinkJobNotFoundException (the job FINISHED with the first
//     stop's savepoint), Flink's job list shows the job FINISHED, and the
//     savepoint is found in its checkpoint history and recorded;
//   - a LastState upgrade whose cancel reaches Flink but whose answer is
//     lost, or comes 1.5 s late: the final retained checkpoint is read
//     from statistics Flink computed after the job ended, and the new
//     job's counts continue from it;
//   - a Teardown of a job that had FAILED: named FAILED, its latest
//     retained checkpoint recorded, and a redeploy of the name continues
//     its counts;
//   - an Upgrade whose caller lost the Progress after the new job was
//     submitted: the Upgrade started again on the old job adopts that
//     job instead of starting a third.
//
// Run it with:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealClusterNothingLost -v ./internal/testkit/faultmatrix/
func TestRealClusterNothingLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cluster, c, _, jar := startCluster(t, ctx, flinkfixture.Config{Slots: 2,
		Extra: map[string]string{"rest.async.store-duration": realStoreDuration.String()}})
	timing := lifecycle.Timing{Poll: 200 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}
	args := func(out string, extra ...string) []string {
		return append([]string{"--out", out, "--keys", "2", "--rate", "40", "--parallelism", "1", "--checkpoint-interval", "300",
			"--name", "nothing-lost"}, extra...)
	}
	retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	start := func(out string, extra ...string) flinkapi.JobID {
		t.Helper()
		id := flinkapi.NewJobID()
		if _, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: id, EntryClass: cluster.TestJobClass, ProgramArgs: args(out, extra...),
			FlinkConfiguration: retain}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	drive := func(what string, op lifecycle.Stepper, p *lifecycle.Progress) lifecycle.Result {
		t.Helper()
		res, err := lifecycle.Run(ctx, op, p, nil)
		t.Logf("%s: %s after %d steps (%s): %s", what, res.Outcome, p.Steps, p.Replace.Decision, p.Reason)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res
	}
	store := &lifecycle.MemoryStore{}

	t.Run("stop answer lost, trigger forgotten", func(t *testing.T) {
		out := cluster.OutDir("lost-answer")
		job := start(out)
		waitRunningWithCounts(t, ctx, out)
		op := &lifecycle.Teardown{Env: lifecycle.Env{Client: c, Timing: timing}, Job: job, Store: store, Name: "app/lost-answer"}
		var p lifecycle.Progress
		if _, err := op.Step(ctx, &p); err != nil || p.Savepoint.Status.TriggerID == "" {
			t.Fatalf("first step: %v %+v", err, p)
		}
		stored := p
		if _, err := op.Step(ctx, &p); err != nil { // sends the stop; the answer is lost with the caller
			t.Fatal(err)
		}
		first := p.Savepoint.Status.Operation()
		p = stored
		// Flink finishes the job with the savepoint, then forgets the
		// trigger id.
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
			_, err := c.OperationStatus(ctx, first)
			if flinkapi.IsTriggerNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Flink still knows the trigger %s: %v", first.TriggerID, err)
			}
		}
		if st, err := c.JobStatus(ctx, job); err != nil || st != flinkapi.JobFinished {
			t.Fatalf("the job is %s, %v; want FINISHED by the first stop", st, err)
		}
		stats, err := c.Checkpoints(ctx, job)
		if err != nil || stats.LatestSavepoint == nil {
			t.Fatalf("checkpoint statistics %+v, %v", stats, err)
		}
		res := drive("Teardown resumed", op, &p)
		rec, ok, _ := store.Get(ctx, "app/lost-answer")
		if res.Outcome != lifecycle.OutcomeSucceeded || !p.Savepoint.Status.Recovered || p.Savepoint.Location != stats.LatestSavepoint.ExternalPath ||
			!ok || rec.Location != p.Savepoint.Location || !flinkfixture.LocationExists(p.Savepoint.Location) {
			t.Errorf("%s (%s): location %q (recovered %v), the stop's savepoint %q, recorded %+v",
				res.Outcome, p.Reason, p.Savepoint.Location, p.Savepoint.Status.Recovered, stats.LatestSavepoint.ExternalPath, rec)
		}
	})

	for _, variant := range []struct {
		name string
		c    *cancelClient
	}{
		{"cancel answer lost", &cancelClient{Client: c, lose: true}},
		{"cancel answer 1.5s late", &cancelClient{Client: c, delay: 1500 * time.Millisecond}},
	} {
		t.Run("last-state, "+variant.name, func(t *testing.T) {
			out1, out2 := cluster.OutDir("last-state-old-"+variant.name), cluster.OutDir("last-state-new-"+variant.name)
			old := start(out1)
			waitRunningWithCounts(t, ctx, out1)
			var p lifecycle.Progress
			res := drive("Upgrade (LastState)", &lifecycle.Upgrade{Env: lifecycle.Env{Client: variant.c, Timing: timing}, Job: old, JarID: jar, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
				Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2)}}, &p)
			if res.Outcome != lifecycle.OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint || variant.c.cancels.Load() == 0 {
				t.Fatalf("%s (%s): restore %s %q, %d cancels", res.Outcome, p.Reason, p.Replace.RestoreKind, p.Replace.RestoreFrom, variant.c.cancels.Load())
			}
			if !flinkfixture.LocationExists(p.Replace.RestoreFrom) {
				t.Errorf("the restore point %s does not exist", p.Replace.RestoreFrom)
			}
			stats, err := c.Checkpoints(ctx, old)
			if err != nil || stats.LatestCompleted == nil || stats.LatestCompleted.ExternalPath != p.Replace.RestoreFrom {
				t.Errorf("restored from %q; the cancelled job's final checkpoint is %+v (%v)", p.Replace.RestoreFrom, stats.LatestCompleted, err)
			}
			countsCarriedOver(t, ctx, out1, out2)
			cancelJob(t, ctx, c, p.Submit.NewJobID) // the cluster has two slots
		})
	}

	t.Run("teardown of a failed job", func(t *testing.T) {
		out := cluster.OutDir("failed")
		job := start(out, "--fail-at", "60")
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
			if st, err := c.JobStatus(ctx, job); err == nil && st == flinkapi.JobFailed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the job did not fail")
			}
		}
		var p lifecycle.Progress
		res := drive("Teardown (failed job)", &lifecycle.Teardown{Env: lifecycle.Env{Client: c, Timing: timing}, Job: job, Store: store, Name: "app/failed"}, &p)
		rec, ok, _ := store.Get(ctx, "app/failed")
		if res.Outcome != lifecycle.OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint || !strings.Contains(p.Reason, "FAILED") ||
			strings.Contains(p.Reason, "does not know") || !ok || rec.Location != p.Replace.RestoreFrom || !flinkfixture.LocationExists(p.Replace.RestoreFrom) {
			t.Fatalf("%s (%s): restore %s %q, recorded %+v", res.Outcome, p.Reason, p.Replace.RestoreKind, p.Replace.RestoreFrom, rec)
		}
		// A redeploy of the name starts from the failed job's checkpoint.
		out2 := cluster.OutDir("failed-redeployed")
		var d lifecycle.Progress
		res = drive("Upgrade (redeploy)", &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Store: store, Name: "app/failed", JarID: jar, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2)}}, &d)
		if res.Outcome != lifecycle.OutcomeSucceeded || d.Replace.RestoreFrom != p.Replace.RestoreFrom {
			t.Fatalf("redeploy: %s (%s) from %q", res.Outcome, d.Reason, d.Replace.RestoreFrom)
		}
		countsCarriedOver(t, ctx, out, out2)
		cancelJob(t, ctx, c, d.Submit.NewJobID)
	})

	t.Run("lost progress after the submission", func(t *testing.T) {
		out1, out2 := cluster.OutDir("adopt-old"), cluster.OutDir("adopt-new")
		old := start(out1)
		waitRunningWithCounts(t, ctx, out1)
		mk := func(latest savepoint.Record) *lifecycle.Upgrade {
			return &lifecycle.Upgrade{Env: lifecycle.Env{Client: c, Timing: timing}, Job: old, JarID: jar, Latest: latest,
				Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2)}}
		}
		var p lifecycle.Progress
		for p.Phase != lifecycle.PhaseWaitRunning {
			res, err := mk(savepoint.Record{}).Step(ctx, &p)
			if err != nil || res.Done {
				t.Fatalf("before the submission: %+v, %v (%s)", res, err, p.Reason)
			}
			time.Sleep(res.RequeueAfter)
		}
		first := p.Submit.NewJobID
		jobs, err := c.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The caller loses the Progress and starts the Upgrade again on
		// the old job's id, knowing the savepoint (a status of its own).
		latest, _ := p.Record()
		var again lifecycle.Progress
		res := drive("Upgrade again", mk(latest), &again)
		after, err := c.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != lifecycle.OutcomeSucceeded || !again.Submit.Adopted || again.Submit.NewJobID != first || len(after) != len(jobs) {
			t.Errorf("%s (%s): adopted %v, new job %s, first %s; %d jobs before, %d after", res.Outcome, again.Reason, again.Submit.Adopted,
				again.Submit.NewJobID, first, len(jobs), len(after))
		}
		if st, err := c.JobStatus(ctx, first); err != nil || st != flinkapi.JobRunning {
			t.Errorf("the adopted job is %s, %v", st, err)
		}
		cancelJob(t, ctx, c, first)
	})
}

// cancelJob cancels a job the test started and waits until it is
// CANCELED, so that its slot is free for the next one.
func cancelJob(t *testing.T, ctx context.Context, c *flinkapi.Client, id flinkapi.JobID) {
	t.Helper()
	if err := c.CancelJob(ctx, id); err != nil {
		t.Errorf("cancel %s: %v", id, err)
		return
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if st, err := c.JobStatus(ctx, id); err == nil && st.IsGloballyTerminal() {
			return
		}
	}
	t.Errorf("%s was not cancelled within a minute", id)
}
