package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// TestDeleteCancelsWithoutStateOnlyWhenItStillMay: a teardown that chose
// to cancel its job without state (a job that had never run, whose state
// is the one it started from; or a spec of the Stateless mode) and was
// interrupted before the cancel went out re-checks that choice in the
// call that sends the cancel: a job that runs and checkpointed since,
// under a spec that keeps state, is torn down keeping it, recorded under
// the name.
func TestDeleteCancelsWithoutStateOnlyWhenItStillMay(t *testing.T) {
	k := newCluster(t, true)
	ctx := context.Background()
	spec := k.spec("/out")
	spec.Update.Mode = policy.UpgradeLastState
	k.settle("deployed", spec)
	job := k.st.JobID

	// The teardown is planned as a cancel without state, and the caller
	// goes away before the cancel is sent.
	stateless := spec
	stateless.Update.Mode = policy.UpgradeStateless
	if _, err := k.controller().Delete(ctx, stateless, &k.st); err != nil {
		t.Fatal(err)
	}
	if k.st.Action != ActionTeardown || k.st.Progress.Phase != PhaseCancel || k.st.Progress.Stop.Strategy != CancelWithoutState {
		t.Fatalf("the teardown: action %s phase %s strategy %s; want a cancel without state, not sent yet",
			k.st.Action, k.st.Progress.Phase, k.st.Progress.Stop.Strategy)
	}
	k.srv.Clock().Advance(30 * time.Second) // the job runs on and checkpoints
	if j, _ := k.srv.Job(job); j.State != flinkapi.JobRunning {
		t.Fatalf("the job is %s; want it running on", j.State)
	}
	for range 200 {
		res, err := k.controller().Delete(ctx, spec, &k.st)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			break
		}
		k.srv.Clock().Advance(max(res.RequeueAfter, 10*time.Millisecond))
	}
	if !k.st.Deleted {
		t.Fatalf("not deleted: %s %s", k.st.Progress.Outcome, k.st.Progress.Reason)
	}
	rec, ok, err := k.store.Get(ctx, "app/counter")
	if err != nil || !ok || rec.JobID != job || rec.Location == "" || rec.Time.Before(k.srv.Clock().Now().Add(-time.Minute)) {
		t.Fatalf("stored under the name: %+v (%v, %v); want the newest state of job %s (teardown: %s)", rec, ok, err, job, k.st.Progress.Reason)
	}
}
