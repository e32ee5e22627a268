package lifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// planThenDelete asks PlanDelete, then calls Delete, and checks that the
// call did what the plan said: the action it steps or starts, or the
// state and reason it reports, and the savepoint it disposes of.
func (k *cluster) planThenDelete(spec JobSpec) (Plan, Result) {
	k.t.Helper()
	ctrl := k.controller()
	before := k.st
	p, err := ctrl.PlanDelete(context.Background(), spec, before)
	if err != nil {
		k.t.Fatalf("PlanDelete: %v", err)
	}
	if !before.Progress.Started.Equal(k.st.Progress.Started) || before.Action != k.st.Action || before.State != k.st.State {
		k.t.Fatalf("PlanDelete changed the status")
	}
	res, err := ctrl.Delete(context.Background(), spec, &k.st)
	switch {
	case p.Blocked != "":
		if !errors.Is(err, ErrInvalidSpec) || k.st.Reason != p.Reason {
			k.t.Errorf("plan blocked (%s); Delete: %v, reason %s", p.Blocked, err, k.st.Reason)
		}
		return p, res
	case err != nil:
		k.t.Fatalf("Delete: %v", err)
	case p.Action != "" && k.st.Action != p.Action:
		k.t.Errorf("plan %s; Delete left action %s", p, k.st.Action)
	case p.Action == ActionTeardown && !p.InFlight && k.st.ActionSpec != nil && k.st.ActionSpec.Update.Mode != p.Mode:
		k.t.Errorf("plan a teardown in mode %s; Delete started one in mode %s", p.Mode, k.st.ActionSpec.Update.Mode)
	case p.Action == "" && p.Dispose == "" && (k.st.State != p.State || k.st.Reason != p.Reason):
		k.t.Errorf("plan %s %s/%s; Delete reports %s/%s", p, p.State, p.Reason, k.st.State, k.st.Reason)
	case p.Dispose != "" && k.st.Disposing.Location != p.Dispose && inHistory(k.st, p.Dispose):
		k.t.Errorf("plan disposes of %s; Delete disposes of %q", p.Dispose, k.st.Disposing.Location)
	}
	k.calls++
	k.srv.Clock().Advance(res.RequeueAfter)
	return p, res
}

// TestPlanDelete: at every call of a Delete of a running job with
// savepoints to dispose of, PlanDelete says what the call then does: the
// teardown it starts and steps, the state it reports once the job is
// deleted, and the savepoints it disposes of; and for a status that
// deployed nothing, a detached job and an unknown OnDelete, the same.
func TestPlanDelete(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute), DisposeOnDelete: true}
	k.until("savepoints", spec, 500, func(st *JobStatus) bool { return len(st.Savepoints.Records) >= 3 && !st.InFlight() })
	var started, stepped, disposals int
	for range 300 {
		p, res := k.planThenDelete(spec)
		switch {
		case p.Action == ActionTeardown && !p.InFlight:
			started++
		case p.InFlight:
			stepped++
		case p.Dispose != "":
			disposals++
		}
		if res.Done {
			break
		}
	}
	if started != 1 || stepped == 0 || disposals < 2 || !deleted(&k.st) {
		t.Fatalf("teardowns planned %d, steps planned %d, disposals planned %d, deleted %v", started, stepped, disposals, deleted(&k.st))
	}
	if p, _ := k.planThenDelete(spec); p.Action != "" || p.State != k.st.State || p.Dispose != "" {
		t.Errorf("after the delete: %s", p)
	}

	t.Run("never deployed", func(t *testing.T) {
		k := newCluster(t, false)
		if p, res := k.planThenDelete(k.spec("/out")); p.Reason != ReasonNotDeployed || p.State != policy.Deleted || res.Outcome != OutcomeNotNeeded {
			t.Errorf("plan %s %s/%s, outcome %s", p, p.State, p.Reason, res.Outcome)
		}
	})
	t.Run("detach and an unknown policy", func(t *testing.T) {
		k := newCluster(t, false)
		spec := k.spec("/out")
		k.until("running", spec, 300, func(st *JobStatus) bool { return !st.InFlight() && st.State == policy.Running })
		spec.OnDelete = "Orphan"
		if p, _ := k.planThenDelete(spec); p.Blocked == "" || p.Reason != ReasonInvalidSpec {
			t.Errorf("unknown OnDelete: %s", p)
		}
		spec.OnDelete = DeleteDetach
		if p, res := k.planThenDelete(spec); p.Reason != ReasonDetached || !res.Done || k.st.Detached != k.st.JobID {
			t.Errorf("detach: plan %s, done %v, detached %q", p, res.Done, k.st.Detached)
		}
	})
}

// inHistory reports whether st's savepoint history holds loc.
func inHistory(st JobStatus, loc string) bool {
	return slices.ContainsFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return r.Location == loc })
}
