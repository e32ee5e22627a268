package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// deleteUntilDone calls Delete until it is done, at most calls times.
func (k *cluster) deleteUntilDone(spec JobSpec, calls int) Result {
	k.t.Helper()
	for range calls {
		if res := k.call(spec, true); res.Done {
			return res
		}
	}
	k.t.Fatalf("delete did not end: %+v", k.st)
	return Result{}
}

// TestDeleteReadsStateSuspendLeftUnread: a suspend under the Stateless
// mode cancels the job and keeps no state, though Flink retains its
// checkpoints; the mode changes to LastState and the deployment is
// deleted. Delete records the suspended job's retained checkpoint, the
// newest state, rather than nothing.
func TestDeleteReadsStateSuspendLeftUnread(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeStateless}
	k.settle("create", spec)
	k.run(spec, 10*time.Second)
	spec.State = DesiredSuspended
	k.until("suspended", spec, 200, func(st *JobStatus) bool { return st.Suspended && !st.InFlight() })
	if k.st.Progress.Savepoint.Location != "" || k.st.Progress.Replace.RestoreFrom != "" {
		t.Fatalf("the stateless suspend recorded %q / %q", k.st.Progress.Savepoint.Location, k.st.Progress.Replace.RestoreFrom)
	}
	spec.Update.Mode = policy.UpgradeLastState
	k.deleteUntilDone(spec, 200)
	rec, ok, _ := k.storeGet()
	if !ok || rec.Location == "" {
		t.Fatalf("delete kept %+v (%v), want the suspended job's retained checkpoint (%s: %s)", rec, ok, k.st.Reason, k.st.Message)
	}
	if exists, _ := k.srv.SavepointExists(rec.Location); !exists {
		t.Fatalf("delete kept %s, which does not exist", rec.Location)
	}
}

// TestDeleteReadsStateSuspendTimedOut: a suspend finds the job ended;
// the caller is away past its deadline, and then every read of the job's
// retention fails until the deadline, counted again from the first read
// after the absence: it ends TimedOut, recording nothing. Delete then
// reads the ended job again and records its retained checkpoint, newer
// than the status's Latest.
func TestDeleteReadsStateSuspendTimedOut(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeLastState}
	k.settle("create", spec)
	k.run(spec, 10*time.Second)
	id := k.st.JobID
	if err := k.srv.FailJob(id, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	spec.State = DesiredSuspended
	spec.Restart = policy.RestartPolicy{Mode: policy.RestartNever}
	k.until("the suspend reads the retention", spec, 200, func(st *JobStatus) bool {
		return st.InFlight() && st.Progress.Phase == PhaseObserveRetention
	})
	k.srv.Clock().Advance(time.Hour)
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints/config"}); err != nil {
		t.Fatal(err)
	}
	k.until("the suspend ended", spec, 200, func(st *JobStatus) bool { return !st.InFlight() })
	k.srv.ClearFaults()
	if k.st.Progress.Outcome != OutcomeTimedOut || k.st.Progress.Replace.RestoreFrom != "" {
		t.Fatalf("suspend %s (%s) from %q, want TimedOut recording nothing", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Progress.Replace.RestoreFrom)
	}
	k.deleteUntilDone(spec, 200)
	rec, ok, _ := k.storeGet()
	if !ok || rec.Location == "" {
		t.Fatalf("delete kept %+v (%v), want the ended job's retained checkpoint (%s: %s)", rec, ok, k.st.Reason, k.st.Message)
	}
	if exists, _ := k.srv.SavepointExists(rec.Location); !exists {
		t.Fatalf("delete kept %s, which does not exist", rec.Location)
	}
}
