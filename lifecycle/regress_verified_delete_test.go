package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// newestOnStorage is the newest snapshot of job on the fake's storage
// that Flink has not discarded.
func newestOnStorage(srv *flinktest.Server, job flinkapi.JobID) flinktest.Snapshot {
	var newest flinktest.Snapshot
	for _, s := range srv.Snapshots() {
		if s.Job == job && !s.Removed && s.Completed.After(newest.Completed) {
			newest = s
		}
	}
	return newest
}

// TestDeleteReadsRetentionPastDeadline: the job is cancelled by hand
// while the Delete's stop with savepoint is in flight, so the teardown
// reads the ended job's checkpoints. The read of its retention is
// answered once that Flink does not know the job, and the caller is then
// away past the phase's deadline. Flink still knows the job and keeps
// its checkpoint: the Delete reads it when the caller is back and keeps
// it in the store, the job's newest state, rather than end TimedOut with
// an empty store.
func TestDeleteReadsRetentionPastDeadline(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeSavepoint}
	k.settle("create", spec)
	k.run(spec, 10*time.Second)
	id := k.st.JobID
	for range 50 {
		if k.st.Progress.Phase == PhaseSavepoint && k.st.Progress.Savepoint.Status.State == savepoint.InFlight {
			break
		}
		k.call(spec, true)
	}
	if k.st.Progress.Savepoint.Status.State != savepoint.InFlight {
		t.Fatalf("the Delete's stop with savepoint is not in flight: %+v", k.st.Progress)
	}
	if err := k.c.CancelJob(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	injected := false
	for range 100 {
		if k.st.Progress.Phase == PhaseObserveRetention && !injected {
			injected = true
			if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints/config", Times: 1}); err != nil {
				t.Fatal(err)
			}
			k.call(spec, true)
			if !k.st.Progress.Stop.Unconfirmed {
				t.Fatalf("the retention read was not refused: %+v", k.st.Progress)
			}
			k.srv.Clock().Advance(2*defaultStopTimeout + 5*time.Minute) // the caller is away
			continue
		}
		if res := k.call(spec, true); res.Done {
			break
		}
	}
	if !injected || !deleted(&k.st) || k.st.InFlight() {
		t.Fatalf("the Delete did not end after reading the retention (injected %v): %s %s: %s", injected, k.st.Progress.Outcome, k.st.Reason, k.st.Progress.Reason)
	}
	newest := newestOnStorage(k.srv, id)
	if newest.Location == "" || newest.Savepoint {
		t.Fatalf("the cancelled job keeps no checkpoint on storage (newest %+v)", newest)
	}
	if known, ok := k.srv.Job(id); !ok || known.State != flinkapi.JobCanceled {
		t.Fatalf("Flink does not show the cancelled job: %+v %v", known, ok)
	}
	rec, ok, _ := k.storeGet()
	if !ok || rec.Location != newest.Location {
		t.Errorf("the Delete ended %s (%s) and the store holds %q (%v); the ended job's newest state is %s",
			k.st.Progress.Outcome, k.st.Progress.Reason, rec.Location, ok, newest.Location)
	}
	if k.maxRequests > MaxRequestsPerCall {
		t.Errorf("a call sent %d requests, more than %d", k.maxRequests, MaxRequestsPerCall)
	}
	if !strings.Contains(k.st.Progress.Reason, newest.Location) {
		t.Errorf("the teardown's reason does not name the recorded checkpoint %s: %s", newest.Location, k.st.Progress.Reason)
	}
}

// TestTeardownReadsPastDeadlineBounded: the teardown of a failed job
// reads its retention, every answer says Flink does not know the job
// while its job list shows it, and the caller was away past the phase's
// deadline. The reads past the deadline are bounded: the teardown ends
// TimedOut after lateObserveReads of them, one request a step, and is
// never stuck.
func TestTeardownReadsPastDeadlineBounded(t *testing.T) {
	e := newEnv(t)
	job := flinkapi.JobID("00000000000000000000000000000f13")
	e.failedRetainingJob(t, job, "/late")
	store := &MemoryStore{}
	td := &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Mode: policy.UpgradeLastState, Store: store, Name: "app/late"}
	var p Progress
	away, late, maxSent := false, 0, 0
	for range 200 {
		if p.Phase == PhaseObserveRetention && !away {
			away = true
			e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints/config"})
		}
		if away && !e.srv.Clock().Now().Before(p.Deadline) {
			late++
		}
		before := len(e.srv.Requests())
		res, err := td.Step(context.Background(), &p)
		if err != nil {
			t.Fatal(err)
		}
		maxSent = max(maxSent, len(e.srv.Requests())-before)
		if res.Done {
			break
		}
		if away && late == 0 && p.Stop.Unconfirmed {
			e.srv.Clock().Advance(defaultStopTimeout + time.Hour) // away after the first refused read
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	if !away || p.Outcome != OutcomeTimedOut {
		t.Fatalf("teardown %s (%s) (away %v), want TimedOut", p.Outcome, p.Reason, away)
	}
	t.Logf("%d steps past the deadline: %s", late, p.Reason)
	if late < 2 || late > lateObserveReads+1 || maxSent > 1 {
		t.Errorf("the teardown made %d steps past its deadline (want 2 to %d) and sent up to %d requests a step", late, lateObserveReads+1, maxSent)
	}
	if rec, ok, _ := store.Get(context.Background(), "app/late"); ok {
		t.Errorf("recorded %q, though Flink never answered the retention", rec.Location)
	}
}
