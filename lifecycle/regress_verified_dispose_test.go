package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestDisposalKeepsTheRunningJobsRestorePoint: a restart request stops
// the job with a savepoint and starts a new one from it. A later action
// (a checkpoint request) replaces the restart's progress, and a savepoint
// imported with a later time becomes Latest and the newest of the
// history. The new job has taken no savepoint of its own: the one it
// started from is its state on storage, and the retention (one kept)
// does not dispose of it. Once the job has a savepoint of its own in the
// history, the one it started from is an older state like any other, and
// the retention disposes of it.
func TestDisposalKeepsTheRunningJobsRestorePoint(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute)}
	k.settle("deploy", spec)
	k.run(spec, 3*time.Minute)
	spec.Savepoints = SavepointPolicy{} // no more periodic savepoints
	spec.Requests.Restart = "restart-1"
	k.until("restart request", spec, 300, func(st *JobStatus) bool {
		return st.RequestsHandled.Restart == "restart-1" && st.Action == ActionRestartRequest && !st.InFlight()
	})
	from := k.job().RestoredFrom
	if k.st.Progress.Outcome != OutcomeSucceeded || from == "" || k.st.Progress.Replace.RestoreFrom != from {
		t.Fatalf("restart request: %s (%s), the job restored from %q", k.st.Progress.Outcome, k.st.Progress.Reason, from)
	}
	k.settle("running", spec)
	spec.Requests.Checkpoint = "cp-1"
	k.until("checkpoint request", spec, 300, func(st *JobStatus) bool {
		return st.RequestsHandled.Checkpoint == "cp-1" && st.Action == ActionCheckpointRequest && !st.InFlight()
	})
	if k.st.Progress.Replace.RestoreFrom != "" {
		t.Fatalf("the checkpoint request records the restore point %q", k.st.Progress.Replace.RestoreFrom)
	}
	running := k.st.JobID
	imported := k.savepointByHand(running)
	k.srv.Clock().Advance(time.Second)
	if err := k.st.ImportSavepoint(savepoint.Record{Location: imported, Time: k.srv.Clock().Now()}); err != nil {
		t.Fatal(err)
	}
	if k.st.Latest.Location != imported {
		t.Fatalf("latest %s after the import of %s", k.st.Latest.Location, imported)
	}
	spec.Savepoints = SavepointPolicy{MaxCount: 1, DisposeUpdate: true}
	k.run(spec, 5*time.Minute)
	if k.st.JobID != running || k.job().RestoredFrom != from {
		t.Fatalf("job %s restored from %q, want %s from %s", k.st.JobID, k.job().RestoredFrom, running, from)
	}
	if !k.onStorage(from) {
		t.Errorf("%s, the savepoint the running job started from (it has taken none since), was disposed of", from)
	}
	if !hasLocation(k.st.Savepoints.Records, from) {
		t.Errorf("%s left the history", from)
	}
	if n := len(k.st.Savepoints.Records); n > 2 {
		t.Errorf("%d savepoints kept, want the imported and the restore point: %+v", n, k.st.Savepoints.Records)
	}

	// A savepoint of the running job: the state it started from may go.
	spec.Requests.Savepoint = "sp-1"
	k.until("savepoint request", spec, 300, func(st *JobStatus) bool {
		return st.RequestsHandled.Savepoint == "sp-1" && st.Action == ActionSavepointRequest && !st.InFlight()
	})
	if k.st.Latest.JobID != running || k.st.Latest.Location == imported {
		t.Fatalf("latest %+v after a savepoint of %s", k.st.Latest, running)
	}
	k.run(spec, 5*time.Minute)
	if k.onStorage(from) || hasLocation(k.st.Savepoints.Records, from) {
		t.Errorf("%s, older than the savepoint %s of the job that started from it, was kept beyond the retention", from, k.st.Latest.Location)
	}
	if !k.onStorage(k.st.Latest.Location) {
		t.Errorf("latest %s was disposed of", k.st.Latest.Location)
	}
}
