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

// onStorage reports whether the fake holds the savepoint loc.
func (k *cluster) onStorage(loc string) bool {
	k.t.Helper()
	ok, err := k.srv.SavepointExists(loc)
	if err != nil {
		k.t.Fatal(err)
	}
	return ok
}

// TestDisposalRecordedBeforeARestoreIsDropped: the retention chooses the
// oldest periodic savepoint and records its disposal; Flink answers 503.
// The user then asks to restore that savepoint: the new job starts from
// it and it becomes Latest. The recorded disposal is not sent any more:
// the savepoint is the running job's restore point and its newest state.
// Its record stays in the history and the disposal is dropped.
func TestDisposalRecordedBeforeARestoreIsDropped(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute)}
	k.settle("deploy", spec)
	k.run(spec, 4*time.Minute)
	if len(k.st.Savepoints.Records) < 3 {
		t.Fatalf("%d savepoints", len(k.st.Savepoints.Records))
	}
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "POST /savepoint-disposal", Status: 503}); err != nil {
		t.Fatal(err)
	}
	spec.Savepoints = SavepointPolicy{MaxCount: 2, DisposeUpdate: true}
	k.until("disposal recorded", spec, 20, func(st *JobStatus) bool { return st.Disposing.Location != "" })
	x := k.st.Disposing.Location
	if k.st.Disposing.TriggerID != "" || count(k.srv, "POST /savepoint-disposal") == 0 {
		t.Fatalf("the disposal of %s was not refused: %+v", x, k.st.Disposing)
	}
	k.srv.ClearFaults()
	var xTime time.Time
	for _, r := range k.st.Savepoints.Records {
		if r.Location == x {
			xTime = r.Time
		}
	}
	spec.Restore = policy.RestoreRequest{Path: x, Token: "back-to-x", Time: xTime}
	k.until("restored", spec, 300, func(st *JobStatus) bool {
		return st.RestoreHandled == "back-to-x" && !st.InFlight() && st.State == policy.Running
	})
	if got := k.job().RestoredFrom; got != x {
		t.Fatalf("the job restored from %q, want %s", got, x)
	}
	if k.st.Latest.Location != x {
		t.Fatalf("latest %s after the restore of %s", k.st.Latest.Location, x)
	}
	k.run(spec, 5*time.Minute)
	if !k.onStorage(x) {
		t.Errorf("%s, the running job's restore point and latest savepoint, was disposed of", x)
	}
	if !hasLocation(k.st.Savepoints.Records, x) {
		t.Errorf("%s left the history", x)
	}
	if k.st.Disposing.Location == x {
		t.Errorf("the disposal of %s is still recorded: %+v", x, k.st.Disposing)
	}
	if k.st.Latest.Location != x {
		t.Errorf("latest %s, want %s", k.st.Latest.Location, x)
	}
}

// TestDeleteKeepsItsFinalSavepointOverAnImport: a savepoint is imported
// between the teardown's recorded trigger and its stop, with a time
// after the trigger's. The teardown's savepoint is the job's newest state
// and the Delete's final savepoint: DisposeOnDelete does not dispose of
// it, and the restore-point store keeps it.
func TestDeleteKeepsItsFinalSavepointOverAnImport(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{DisposeOnDelete: true}
	k.settle("deploy", spec)
	k.run(spec, 30*time.Second)
	// A savepoint taken by hand, imported later as if taken elsewhere.
	ctx := context.Background()
	op, err := k.c.TriggerSavepoint(ctx, k.st.JobID, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var imported string
	for range 100 {
		k.srv.Clock().Advance(time.Second)
		if r, err := k.c.OperationStatus(ctx, op); err == nil && r.Completed() {
			imported = r.Location
			break
		}
	}
	if imported == "" {
		t.Fatal("the savepoint to import did not complete")
	}
	k.call(spec, true)
	if k.st.Action != ActionTeardown || k.st.Progress.Savepoint.Status.TriggerID == "" || k.st.Progress.Savepoint.Location != "" {
		t.Fatalf("the teardown did not record its trigger: %s %+v", k.st.Action, k.st.Progress)
	}
	k.srv.Clock().Advance(time.Second)
	if err := k.st.ImportSavepoint(savepoint.Record{Location: imported, Time: k.srv.Clock().Now()}); err != nil {
		t.Fatal(err)
	}
	k.deleteUntilDone(spec, 300)
	final := k.st.Progress.Savepoint.Location
	if final == "" || final == imported {
		t.Fatalf("the teardown took no savepoint of its own: %+v", k.st.Progress)
	}
	if !k.onStorage(final) {
		t.Errorf("the Delete disposed of its final savepoint %s", final)
	}
	if !hasLocation(k.st.Savepoints.Records, final) {
		t.Errorf("the final savepoint %s left the history", final)
	}
	if k.st.Latest.Location != final {
		t.Errorf("latest %s, want the final savepoint %s", k.st.Latest.Location, final)
	}
	if rec, ok, _ := k.store.Get(ctx, "app/counter"); !ok || rec.Location != final {
		t.Errorf("the store keeps %+v, want the final savepoint %s", rec, final)
	}
}

// TestResentTriggerRecordsTheFirstSavepoint: the trigger of a periodic
// savepoint is recorded and sent, and the caller does not learn that it
// took effect: the status write after it is lost, or Flink's answer is a
// 503 sent after the savepoint started. The caller comes back after Flink
// forgot the trigger id (its result store expired). The savepoint the
// first request took is in the job's checkpoint history: it is recorded,
// not taken a second time, and every savepoint of the job on storage is
// in the history.
func TestResentTriggerRecordsTheFirstSavepoint(t *testing.T) {
	for _, lost := range []string{"status write", "answer"} {
		t.Run(lost, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			spec.Savepoints = SavepointPolicy{Interval: policy.Duration(10 * time.Minute)}
			k.settle("deploy", spec)
			k.until("trigger recorded", spec, 500, func(st *JobStatus) bool {
				return st.Action == ActionSavepoint && st.InFlight() && unsent(&st.Progress)
			})
			stored := *k.st.DeepCopy()
			triggers := count(k.srv, "POST /jobs/:jobid/savepoints")
			if lost == "answer" {
				if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "POST /jobs/:jobid/savepoints", Status: 503, After: true, Times: 1}); err != nil {
					t.Fatal(err)
				}
			}
			k.call(spec, false)
			if count(k.srv, "POST /jobs/:jobid/savepoints") != triggers+1 {
				t.Fatalf("the trigger was not sent: %+v", k.st.Progress.Savepoint.Status)
			}
			if lost == "status write" {
				k.st = stored
			} else if k.st.Progress.Savepoint.Status.Attempts != 1 {
				t.Fatalf("the 503 was not counted: %+v", k.st.Progress.Savepoint.Status)
			}
			k.srv.Clock().Advance(7 * time.Minute) // the caller is away
			k.until("savepoint recorded", spec, 200, func(st *JobStatus) bool { return !st.InFlight() })
			k.run(spec, time.Minute)
			var taken []string
			for _, s := range k.srv.Snapshots() {
				if s.Job != k.st.JobID || !s.Savepoint {
					continue
				}
				taken = append(taken, s.Location)
				if !s.Removed && !hasLocation(k.st.Savepoints.Records, s.Location) {
					t.Errorf("savepoint %s (trigger %s, taken %v) is on storage and not in the history", s.Location, s.TriggerID, s.Taken)
				}
			}
			if len(taken) != 1 {
				t.Fatalf("%d savepoints taken for one trigger: %v", len(taken), taken)
			}
			if k.st.Progress.Outcome != OutcomeSucceeded || k.st.Latest.Location != taken[0] {
				t.Errorf("savepoint %s: %s; latest %s", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Latest.Location)
			}
		})
	}
}

// TestDisposalKeepsTheStoresRestorePoint: the restore-point store keeps
// an old savepoint of the history under the deployment's name (a later
// deploy under the name starts from it). The retention, which cannot
// see the store when it chooses, picks it; the act reads the store and
// disposes of the others instead.
func TestDisposalKeepsTheStoresRestorePoint(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute)}
	k.settle("deploy", spec)
	k.run(spec, 4*time.Minute)
	if len(k.st.Savepoints.Records) < 3 {
		t.Fatalf("%d savepoints", len(k.st.Savepoints.Records))
	}
	kept := k.st.Savepoints.Records[0]
	if err := k.store.Put(context.Background(), "app/counter", kept); err != nil {
		t.Fatal(err)
	}
	spec.Savepoints = SavepointPolicy{MaxCount: 1}
	k.run(spec, 5*time.Minute)
	if !k.onStorage(kept.Location) || !hasLocation(k.st.Savepoints.Records, kept.Location) {
		t.Errorf("the store's restore point %s was disposed of", kept.Location)
	}
	if n := len(k.st.Savepoints.Records); n != 2 {
		t.Errorf("%d savepoints in the history, want the store's and the newest", n)
	}
}
