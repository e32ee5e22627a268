package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
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
	r := startRanOn(t, e, ranOnRun(job, "/ranon"), "app/ranon")
	// Flink forgets the trigger id while the caller is away; the restarted job checkpoints.
	r.drive(t, func(p *Progress) bool { return p.Savepoint.Status.State == savepoint.InFlight }, 10*time.Minute)
	p := &r.p
	if p.Outcome != OutcomeSucceeded || !r.away || p.Savepoint.Location == "" {
		t.Fatalf("teardown %s after stop %s (away %v, savepoint %q): %s", p.Outcome, p.Replace.StopOutcome, r.away, p.Savepoint.Location, p.Reason)
	}
	rec, ok := r.recorded(t)
	newest := newestOnStorage(e.srv, job)
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
	run := ranOnRun(job, "/from")
	run.SavepointPath = from.Location
	run.ProgramArgs = []string{"--out", "/from", "--keys", "2", "--rate", "10", "--checkpoint-interval", "3600000", "--restart-attempts", "1"}
	r := startRanOn(t, e, run, "app/from")
	// Flink restores the job while the caller is away after the stop.
	r.drive(t, func(p *Progress) bool { return p.Replace.StopOutcome != "" }, 10*time.Second)
	p := &r.p
	if p.Outcome != OutcomeSucceeded || p.Replace.StopOutcome != OutcomeJobFailedWhileStopping || p.Savepoint.Location == "" || !r.away {
		t.Fatalf("teardown %s after stop %s (savepoint %q): %s", p.Outcome, p.Replace.StopOutcome, p.Savepoint.Location, p.Reason)
	}
	if rec, ok := r.recorded(t); !ok || rec.Location != p.Savepoint.Location {
		t.Errorf("recorded %q (%v), want the stop's savepoint %q, not the checkpoint %s the job was started from", rec.Location, ok, p.Savepoint.Location, from.Location)
	}
}
