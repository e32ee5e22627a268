package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestTeardownRanOnTriggerForgotten: the teardown's stop with savepoint
// completes and the job fails while stopping, Flink restarts it, and the
// caller is away until Flink forgot the trigger id (with the failure
// that named the savepoint). The savepoint is found in the checkpoint
// history and the job runs: it ran on past the savepoint, and its
// newest state is its retained checkpoint, which the teardown records
// after the cancel, as when the failure is seen.
func TestTeardownRanOnTriggerForgotten(t *testing.T) {
	e := newEnv(t)
	job := flinkapi.JobID("00000000000000000000000000000f13")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: job,
		ProgramArgs:        []string{"--out", "/ranon", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000", "--restart-attempts", "1"},
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(10 * time.Second)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping, Job: job, Times: 1})
	store := &MemoryStore{}
	td := &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Mode: policy.UpgradeSavepoint, Store: store, Name: "app/ranon"}
	var p Progress
	away := false
	for range 500 {
		res, err := td.Step(context.Background(), &p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
		if p.Savepoint.Status.State == savepoint.InFlight && !away {
			away = true
			e.srv.Clock().Advance(10 * time.Minute) // Flink forgets the trigger id; the restarted job checkpoints
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	if p.Outcome != OutcomeSucceeded || !away || p.Savepoint.Location == "" {
		t.Fatalf("teardown %s after stop %s (away %v, savepoint %q): %s", p.Outcome, p.Replace.StopOutcome, away, p.Savepoint.Location, p.Reason)
	}
	rec, ok, _ := store.Get(context.Background(), "app/ranon")
	var newest flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		if s.Job == job && !s.Removed && s.Completed.After(newest.Completed) {
			newest = s
		}
	}
	if !ok || rec.Location != newest.Location || newest.Savepoint {
		t.Errorf("recorded %q (%v); the job's newest state is %q (savepoint %v, taken %v); the stop's savepoint was %q",
			rec.Location, ok, newest.Location, newest.Savepoint, newest.Completed, p.Savepoint.Location)
	}
}

// TestTeardownRanOnFromItsStartCheckpoint: a job started from another
// job's retained checkpoint completes its teardown's savepoint, fails
// while stopping before it completed a checkpoint of its own, and Flink
// restores it from the checkpoint it was started from. That checkpoint
// shows as restored, timed at the restore, after the savepoint: it is
// older state all the same, and the savepoint is recorded.
func TestTeardownRanOnFromItsStartCheckpoint(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	first := flinkapi.JobID("00000000000000000000000000000f14")
	if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: first, FlinkConfiguration: retain,
		ProgramArgs: []string{"--out", "/from", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(10 * time.Second)
	if err := e.c.CancelJob(ctx, first); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	var from flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		if s.Job == first && !s.Savepoint && !s.Removed && s.Completed.After(from.Completed) {
			from = s
		}
	}
	if from.Location == "" {
		t.Fatal("the first job retained no checkpoint")
	}
	job := flinkapi.JobID("00000000000000000000000000000f15")
	if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: job, FlinkConfiguration: retain, SavepointPath: from.Location,
		ProgramArgs: []string{"--out", "/from", "--keys", "2", "--rate", "10", "--checkpoint-interval", "3600000", "--restart-attempts", "1"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(10 * time.Second)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping, Job: job, Times: 1})
	store := &MemoryStore{}
	td := &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Mode: policy.UpgradeSavepoint, Store: store, Name: "app/from"}
	var p Progress
	away := false
	for range 500 {
		res, err := td.Step(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
		if p.Replace.StopOutcome != "" && !away {
			away = true
			e.srv.Clock().Advance(10 * time.Second) // Flink restores the job meanwhile
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	if p.Outcome != OutcomeSucceeded || p.Replace.StopOutcome != OutcomeJobFailedWhileStopping || p.Savepoint.Location == "" || !away {
		t.Fatalf("teardown %s after stop %s (savepoint %q): %s", p.Outcome, p.Replace.StopOutcome, p.Savepoint.Location, p.Reason)
	}
	if rec, ok, _ := store.Get(ctx, "app/from"); !ok || rec.Location != p.Savepoint.Location {
		t.Errorf("recorded %q (%v), want the stop's savepoint %q, not the checkpoint %s the job was started from", rec.Location, ok, p.Savepoint.Location, from.Location)
	}
}
