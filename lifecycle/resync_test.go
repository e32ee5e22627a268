package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// TestResyncAtRestCompares: a watched job at rest whose overview entry,
// spec and status are those of its last full call is resynced by a
// comparison (its memo stays as that call left it, and the status is
// not touched); a changed spec, a changed status, a changed overview
// entry and a savepoint of the schedule coming due each make the call
// a full one, and the savepoint is taken.
func TestResyncAtRestCompares(t *testing.T) {
	const poll = 30 * time.Second
	f := newFleet(t, 3, poll)
	f.converge(t)
	ctx := context.Background()
	watch := func() {
		t.Helper()
		if _, err := f.shared.Changes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	watch()
	f.poll(t)
	f.poll(t) // the second call at rest finds the status as the first left it
	memo := func(i int) *restMemo { return f.shared.restMemo(f.sts[i].JobID) }
	call := func(i int) (Result, bool) {
		t.Helper()
		m := memo(i)
		res, err := f.ctrls[i].Reconcile(ctx, f.specs[i], &f.sts[i])
		if err != nil {
			t.Fatal(err)
		}
		return res, m != nil && memo(i) == m
	}
	for i := range f.sts {
		if memo(i) == nil {
			t.Fatalf("job %d at rest: no memo of its last full call (%s %s)", i, f.sts[i].Reason, f.sts[i].Message)
		}
	}

	// At rest, at its resync: a comparison.
	before := *f.sts[0].DeepCopy()
	f.srv.Clock().Advance(DefaultResync)
	watch()
	res, cheap := call(0)
	if !cheap {
		t.Fatal("a resync at rest ran the full call")
	}
	if got := res.RequeueAfter; got < DefaultResync/2 || got > DefaultResync*3/2 {
		t.Errorf("a resync at rest: RequeueAfter %v, want within half and one and a half DefaultResync", got)
	}
	if !f.sts[0].Converged(f.specs[0]) || f.sts[0].Message != before.Message || f.sts[0].Verdict != before.Verdict {
		t.Errorf("a resync at rest changed the status: %+v", f.sts[0])
	}

	// A status the caller changed: in full.
	f.sts[0].Message = "changed"
	if _, cheap := call(0); cheap {
		t.Error("a changed status was compared, not called in full")
	}
	if f.sts[0].Message == "changed" {
		t.Error("the full call did not set the message")
	}
	call(0) // finds the status as the call before left it
	if _, cheap := call(0); !cheap {
		t.Error("the status as the full calls left it: not compared")
	}

	// Without a watch, every call is in full.
	f.srv.Clock().Advance(4 * DefaultSharedMaxAge)
	if _, cheap := call(0); cheap {
		t.Error("unwatched, a call was compared")
	}
	watch()
	call(0)

	// A changed overview entry (the job fails over: its tasks restart):
	// in full.
	if err := f.srv.FailJob(f.sts[1].JobID, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	f.srv.Clock().Advance(poll)
	watch()
	if _, cheap := call(1); cheap {
		t.Error("a changed overview entry was compared, not called in full")
	}
	if f.sts[1].Situation == SituationRunning && f.sts[1].Settled {
		t.Errorf("the failed job at rest: %s %s", f.sts[1].Reason, f.sts[1].Message)
	}

	// A changed spec: in full, and a savepoint of its schedule is taken
	// when it comes due, though nothing else changed.
	f.specs[2].Savepoints.Interval = policy.Duration(2 * time.Minute)
	if _, cheap := call(2); cheap {
		t.Error("a changed spec was compared, not called in full")
	}
	for range 20 {
		if f.sts[2].Action == ActionSavepoint {
			break
		}
		res, _ := call(2)
		f.srv.Clock().Advance(min(res.RequeueAfter, poll))
		watch()
	}
	if f.sts[2].Action != ActionSavepoint {
		t.Fatalf("the savepoint schedule came due and no savepoint was taken: %s %s", f.sts[2].Reason, f.sts[2].Message)
	}
}

// TestResyncAtRestNotOnReplacedEntry: a memo is kept only for the
// overview entry its full call observed.
func TestResyncAtRestNotOnReplacedEntry(t *testing.T) {
	s := &SharedObservation{}
	id := flinkapi.JobID("0123456789abcdef0123456789abcdef")
	ov := flinkapi.JobOverview{ID: id, State: flinkapi.JobRunning, Tasks: flinkapi.TaskCounts{Running: 1, Total: 1}}
	d := s.details(ov)
	s.setRestMemo(id, d, &restMemo{})
	if m := s.restMemo(id); m == nil || m.ov != ov {
		t.Fatalf("memo of the observed entry: %+v", m)
	}
	ov.LastModification = time.Unix(1700000000, 0)
	s.details(ov)
	s.setRestMemo(id, d, &restMemo{})
	if m := s.restMemo(id); m != nil {
		t.Errorf("memo kept for an entry built since: %+v", m)
	}
}
