package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// TestTeardownRanOnAfterItsSavepoint: the teardown's stop with savepoint
// completes, the job fails while stopping, Flink restarts it, and it
// completes checkpoints while the caller is away before the cancel that
// follows. The newest state is then the job's retained checkpoint, not
// the savepoint: the teardown reads it after the cancel and records the
// newer of the two.
func TestTeardownRanOnAfterItsSavepoint(t *testing.T) {
	e := newEnv(t)
	job := flinkapi.JobID("00000000000000000000000000000f11")
	r := startRanOn(t, e, ranOnRun(job, "/ranon"), "app/ranon")
	// The restarted job checkpoints while the caller is away before the cancel.
	r.drive(t, func(p *Progress) bool { return p.Phase == PhaseCancel }, 20*time.Second)
	p := &r.p
	if p.Outcome != OutcomeSucceeded || p.Replace.StopOutcome != OutcomeJobFailedWhileStopping || !r.away {
		t.Fatalf("teardown %s after stop %s (away %v): %s", p.Outcome, p.Replace.StopOutcome, r.away, p.Reason)
	}
	rec, ok := r.recorded(t)
	newest := newestOnStorage(e.srv, job)
	if !ok || rec.Location != newest.Location {
		t.Errorf("recorded %q (%v); the job's newest state is %q (savepoint %v, taken %v); the stop's savepoint was %q",
			rec.Location, ok, newest.Location, newest.Savepoint, newest.Completed, p.Savepoint.Location)
	}
}

// TestTeardownNotFoundOnceIsConfirmed: the teardown of a job that had
// failed reads its checkpoint statistics, and the first answer says Flink
// does not know the job (a JobManager failing over answers so). Flink's
// job list shows the job: the statistics are read again, and the job's
// retained checkpoint is recorded instead of nothing.
func TestTeardownNotFoundOnceIsConfirmed(t *testing.T) {
	e := newEnv(t)
	job := flinkapi.JobID("00000000000000000000000000000f12")
	e.failedRetainingJob(t, job, "/nf")
	store := &MemoryStore{}
	td := &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Mode: policy.UpgradeLastState, Store: store, Name: "app/nf"}
	var p Progress
	injected := false
	for range 200 {
		if p.Phase == PhaseObserveCheckpoints && !injected {
			injected = true
			e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints", Times: 1})
		}
		res, err := td.Step(context.Background(), &p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	rec, ok, _ := store.Get(context.Background(), "app/nf")
	if !injected || p.Outcome != OutcomeSucceeded || !ok || !strings.Contains(rec.Location, "/chk-") {
		t.Errorf("teardown %s (%s); recorded %q (%v), want the failed job's retained checkpoint", p.Outcome, p.Reason, rec.Location, ok)
	}
}
