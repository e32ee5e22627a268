package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// ledgerCase is a long run of periodic savepoints with a retention.
type ledgerCase struct {
	name      string
	retention SavepointPolicy
	// bound is how many of the job's savepoints may be on storage at
	// rest: the retention's, with the newest.
	bound int
	// faults are injected on the disposal routes; lostWrites is the
	// share of calls whose status write is lost (the caller crashed
	// after the call: it goes on from the status stored before).
	faults     []flinktest.Fault
	lostWrites float64
	// storage gives the Controller a Storage of the fake's disk whose
	// requests fail one in storageFaultEvery (0: never): the audits after
	// each action and every hour read it, and hold it to the ledger.
	storage           bool
	storageFaultEvery int
}

// ledgerFaults are 503s, 404s and lost answers on Flink's disposal
// requests, and JobManager restarts that forget the disposals' trigger
// ids.
var ledgerFaults = []flinktest.Fault{
	{Kind: flinktest.FaultStatus, Route: "POST /savepoint-disposal", Status: 503, Probability: 0.25},
	{Kind: flinktest.FaultStatus, Route: "POST /savepoint-disposal", Status: 404, Probability: 0.1},
	{Kind: flinktest.FaultReset, Route: "POST /savepoint-disposal", After: true, Probability: 0.2},
	{Kind: flinktest.FaultStatus, Route: "GET /savepoint-disposal/:triggerid", Status: 503, Probability: 0.2},
	{Kind: flinktest.FaultReset, Route: "GET /savepoint-disposal/:triggerid", Probability: 0.1},
}

// TestLedger48Hours runs a job for 48 hours on the fake clock with a
// savepoint every 10 minutes and a retention, and checks, after every
// call, that every savepoint the job ever took is either on storage and
// in the status, or disposed of and out of it, and that what is on
// storage stays within the retention. The same with 503s, 404s and lost
// answers on the disposals, and with status writes lost between a
// disposal and the write that removes its record; and with a Storage of
// the fake's disk that fails a share of its requests (5xx, throttling,
// listings cut short): at rest, the audit finds storage and the ledger
// alike.
func TestLedger48Hours(t *testing.T) {
	tenMin := policy.Duration(10 * time.Minute)
	day := policy.Duration(24 * time.Hour)
	cases := []ledgerCase{
		{name: "maxAge 24h", retention: SavepointPolicy{Interval: tenMin, MaxAge: day}, bound: 145},
		{name: "maxCount 5", retention: SavepointPolicy{Interval: tenMin, MaxCount: 5}, bound: 5},
		{name: "maxCount 40", retention: SavepointPolicy{Interval: tenMin, MaxCount: 40}, bound: 40},
		{name: "maxCount 200", retention: SavepointPolicy{Interval: tenMin, MaxCount: 200}, bound: 200},
		{name: "maxAge 24h, faults", retention: SavepointPolicy{Interval: tenMin, MaxAge: day}, bound: 145, faults: ledgerFaults, lostWrites: 0.1},
		{name: "maxCount 5, faults", retention: SavepointPolicy{Interval: tenMin, MaxCount: 5}, bound: 5, faults: ledgerFaults, lostWrites: 0.1},
		{name: "maxCount 40, faults", retention: SavepointPolicy{Interval: tenMin, MaxCount: 40}, bound: 40, faults: ledgerFaults, lostWrites: 0.1},
		{name: "maxCount 5, storage", retention: SavepointPolicy{Interval: tenMin, MaxCount: 5}, bound: 5, storage: true},
		{name: "maxAge 24h, faults, storage faults", retention: SavepointPolicy{Interval: tenMin, MaxAge: day}, bound: 145,
			faults: ledgerFaults, lostWrites: 0.1, storage: true, storageFaultEvery: 5},
		{name: "maxCount 5, faults, storage faults", retention: SavepointPolicy{Interval: tenMin, MaxCount: 5}, bound: 5,
			faults: ledgerFaults, lostWrites: 0.1, storage: true, storageFaultEvery: 5},
		{name: "maxCount 40, faults, storage faults", retention: SavepointPolicy{Interval: tenMin, MaxCount: 40}, bound: 40,
			faults: ledgerFaults, lostWrites: 0.1, storage: true, storageFaultEvery: 3},
	}
	// By default three runs, two of them with faults on Flink and on the
	// storage, both retentions; all of them with FLINKKIT_FULL=1.
	full := os.Getenv("FLINKKIT_FULL") == "1"
	for i, tc := range cases {
		if !full && tc.name != "maxCount 5" && tc.name != "maxAge 24h, faults, storage faults" && tc.name != "maxCount 5, faults, storage faults" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runLedger(t, tc, uint64(i+1))
		})
	}
}

func runLedger(t *testing.T, tc ledgerCase, seed uint64) {
	// The status goes through JSON after each call where writes are lost
	// (a caller that stores it); elsewhere it is kept as it is, which
	// saves most of the run's time.
	k := newCluster(t, tc.lostWrites > 0, flinktest.WithSeed(int64(seed)))
	k.poll = time.Minute
	var fs *fakeStorage
	if tc.storage {
		fs = &fakeStorage{srv: k.srv}
		if tc.storageFaultEvery > 0 {
			fs.faults, fs.faultEvery = rand.New(rand.NewPCG(seed, 0x73746f72)), tc.storageFaultEvery
		}
		k.storage = fs
	}
	spec := k.spec("/out", "--checkpoint-interval", "600000")
	spec.Savepoints = tc.retention
	k.settle("deploy", spec)
	for _, f := range tc.faults {
		if err := k.srv.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 48))
	end := k.srv.Clock().Now().Add(48 * time.Hour)
	maxOnStorage, lost := 0, 0
	for k.srv.Clock().Now().Before(end) {
		stored := *k.st.DeepCopy()
		k.call(spec, false)
		if rng.Float64() < tc.lostWrites {
			k.st, lost = stored, lost+1 // the write of this call was lost
		}
		on := k.checkLedger(tc.bound + 2) // a savepoint just taken, one waiting for its disposal
		maxOnStorage = max(maxOnStorage, on)
		if k.calls%200 == 0 {
			k.srv.ClearRequests() // the log grows with every call; none of it is read here
		}
	}
	// At rest, without faults: within the retention.
	k.srv.ClearFaults()
	k.run(spec, 5*time.Minute)
	on := k.checkLedger(tc.bound)
	for _, r := range k.st.Savepoints.Records {
		if ok, _ := k.srv.SavepointExists(r.Location); !ok {
			t.Errorf("at rest, the history keeps %s, which is gone", r.Location)
		}
	}
	audits := 0
	if fs != nil {
		audits = k.checkStorageLedger(spec)
	}
	taken, disposed := 0, 0
	for _, s := range k.srv.Snapshots() {
		if s.Savepoint {
			taken++
			if s.Removed {
				disposed++
			}
		}
	}
	size, _ := json.Marshal(k.st)
	t.Logf("%s: %d savepoints taken in 48 h, %d disposed of, %d on storage at the end (at most %d during the run), %d in the history, "+
		"%d disposals given up, %d status writes lost, status %d bytes, %d calls",
		tc.name, taken, disposed, on, maxOnStorage, len(k.st.Savepoints.Records), givenUp(&k.st), lost, len(size), k.calls)
	if fs != nil {
		t.Logf("%s: %d storage requests in 48 h (%d failed or cut short), %d entries at rest", tc.name, fs.calls(), fs.faulted, audits)
		if fs.calls() == 0 {
			t.Error("no storage request in 48 hours: nothing audited the storage")
		}
	}
	if taken < 280 {
		t.Errorf("%d savepoints taken in 48 hours, want about 288", taken)
	}
}

// checkLedger checks that every savepoint the fake ever completed is on
// storage and in the history, or removed and not in it, and that at most
// bound (plus those given up) are on storage; it returns how many are.
func (k *cluster) checkLedger(bound int) int {
	k.t.Helper()
	inHistory := map[string]savepoint.Record{}
	for _, r := range k.st.Savepoints.Records {
		inHistory[r.Location] = r
	}
	on := 0
	exists := map[string]bool{}
	for _, s := range k.srv.Snapshots() {
		if !s.Savepoint {
			continue
		}
		exists[s.Location] = !s.Removed
		_, in := inHistory[s.Location]
		if p := k.st.Progress.Savepoint.Status; s.TriggerID != "" && s.TriggerID == p.TriggerID && k.st.Action == ActionSavepoint {
			in = true // the savepoint in flight: recorded by trigger id, its location next
		}
		switch {
		case !s.Removed && !in:
			k.t.Fatalf("call %d: savepoint %s is on storage but forgotten by the status", k.calls, s.Location)
		case s.Removed && in:
			// Disposed of, its record not yet removed: the next call
			// removes it (a disposal whose answer or write was lost).
		case !s.Removed:
			on++
		}
	}
	for loc := range inHistory {
		// A record may outlive its files while a disposal, or one whose
		// answer or status write was lost, is confirmed; never the state
		// a restore would start from.
		if !exists[loc] && (loc == k.st.Latest.Location || loc == k.st.UpgradeFrom.Location) {
			k.t.Fatalf("call %d: the history's restore point %s is gone", k.calls, loc)
		}
	}
	if n := givenUp(&k.st); on > bound+n {
		k.t.Fatalf("call %d: %d savepoints on storage, more than %d and %d given up", k.calls, on, bound, n)
	}
	return on
}

// checkStorageLedger audits the storage at rest, its faults off, and
// fails on anything the ledger and the storage disagree on: a savepoint
// on storage that no record names (Unrecorded), a record whose
// savepoint is gone (Missing), a replaced job's checkpoints that
// nothing will remove, or a listing not read (but recorded savepoints
// and the running job's checkpoints past the audit's budget). It returns the count of the audit's
// entries.
func (k *cluster) checkStorageLedger(spec JobSpec) int {
	k.t.Helper()
	fs := k.storage.(*fakeStorage)
	fs.mu.Lock()
	fs.faults = nil
	fs.mu.Unlock()
	a, err := k.controller().Audit(context.Background(), spec, k.st)
	if err != nil {
		k.t.Fatal(err)
	}
	listed := map[flinkapi.JobID]bool{}
	for _, r := range k.st.Replaced {
		listed[r.JobID] = true
	}
	recorded := map[string]bool{}
	for _, r := range k.st.Savepoints.Records {
		recorded[r.Location] = true
	}
	unread := 0
	for _, e := range a.Entries {
		switch {
		case e.Kind == AuditUnread && a.Truncated && (recorded[e.Path] || e.JobID == k.st.JobID && strings.Contains(e.Path, "/chk-")):
			// A recorded savepoint, or a checkpoint of the running job,
			// past the audit's budget (MaxAuditRequests): not read, and
			// neither lost nor leaked.
			unread++
		case e.Kind == AuditUnrecorded, e.Kind == AuditMissing, e.Kind == AuditUnread,
			e.Kind == AuditReplaced && !listed[e.JobID]:
			k.t.Errorf("at rest, storage and the ledger differ: %s %s (job %s)\n%s", e.Kind, e.Path, e.JobID, a)
		}
	}
	if unread > 0 {
		k.t.Logf("at rest: %d recorded savepoints and running job's checkpoints past the audit's budget of %d requests, not read", unread, MaxAuditRequests)
	}
	if k.st.Audit == nil || k.st.Audit.Time.IsZero() {
		k.t.Errorf("no audit recorded in the status: %+v", k.st.Audit)
	}
	return len(a.Entries)
}

// TestLedgerRetentionWhileDown: retention runs while the job is
// suspended and while it failed for good, and never disposes of the
// newest savepoint, the one a restore request names, nor the upgrade's.
func TestLedgerRetentionWhileDown(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute)}
	k.settle("deploy", spec)
	k.run(spec, 10*time.Minute)
	n := len(k.st.Savepoints.Records)
	if n < 8 {
		t.Fatalf("%d savepoints after 10 minutes", n)
	}
	spec.State = DesiredSuspended
	k.until("suspend", spec, 100, func(st *JobStatus) bool { return st.Suspended && !st.InFlight() })
	restore := k.st.Savepoints.Records[0].Location
	spec.Savepoints.MaxCount = 2
	spec.Restore = policy.RestoreRequest{Path: restore, Token: "later"}
	k.run(spec, 5*time.Minute)
	if k.st.State != policy.Suspended {
		t.Fatalf("state %s (%s)", k.st.State, k.st.Reason)
	}
	var kept []string
	for _, r := range k.st.Savepoints.Records {
		kept = append(kept, r.Location)
		if ok, _ := k.srv.SavepointExists(r.Location); !ok {
			t.Errorf("the history keeps %s, which is gone", r.Location)
		}
	}
	// The restore request's savepoint may not go, and counts among the
	// two kept.
	if len(kept) != 2 || kept[0] != restore || kept[1] != k.st.Latest.Location {
		t.Errorf("suspended with maxCount 2: kept %v; want the restore request's %s and the newest %s", kept, restore, k.st.Latest.Location)
	}
	for _, s := range k.srv.Snapshots() {
		if s.Savepoint && !s.Removed && !strings.Contains(strings.Join(kept, " "), s.Location) {
			t.Errorf("savepoint %s left on storage, not in the history", s.Location)
		}
	}
}

// TestLedgerDisposalFailuresAreTyped: a disposal Flink refuses stays a
// record with its typed error, is tried again later (backing off) and
// given up after MaxDisposeAttempts; nothing else is disposed of in its
// place, and a disposal that succeeds later removes it.
func TestLedgerDisposalFailuresAreTyped(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute)}
	k.settle("deploy", spec)
	k.run(spec, 4*time.Minute)
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "POST /savepoint-disposal", Status: 400, Times: 1,
		Message: "Bad request: savepoint path refused"}); err != nil {
		t.Fatal(err)
	}
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultDisposalFails, Cause: "Permission denied"}); err != nil {
		t.Fatal(err)
	}
	spec.Savepoints.MaxCount = 1
	spec.Savepoints.Interval = 0
	oldest := k.st.Savepoints.Records[0].Location
	k.until("first failure", spec, 50, func(st *JobStatus) bool {
		return len(st.Savepoints.Records) > 0 && st.Savepoints.Records[0].Disposal().Failed()
	})
	r := k.st.Savepoints.Records[0]
	if r.Location != oldest || r.Disposal().Error != savepoint.DisposalRefused || r.Disposal().Attempts != 1 ||
		!strings.Contains(r.Disposal().Message, "savepoint path refused") || !r.Disposal().RetryAt.After(k.srv.Clock().Now()) {
		t.Fatalf("after the first refusal: %+v", r)
	}
	// Every savepoint chosen is tried once before the first is retried.
	k.until("all given up", spec, 2000, func(st *JobStatus) bool {
		for _, r := range st.Savepoints.Records[:len(st.Savepoints.Records)-1] {
			if !r.Disposal().GaveUp {
				return false
			}
		}
		return true
	})
	for _, r := range k.st.Savepoints.Records[:len(k.st.Savepoints.Records)-1] {
		if r.Disposal().Attempts != MaxDisposeAttempts || r.Disposal().Error != savepoint.DisposalFailed || !strings.Contains(r.Disposal().Message, "Permission denied") {
			t.Errorf("given up: %+v", r)
		}
		if ok, _ := k.srv.SavepointExists(r.Location); !ok {
			t.Errorf("%s given up but gone from storage", r.Location)
		}
	}
	if k.st.State != policy.Running || k.st.InFlight() || !strings.Contains(k.st.Message, "could not be disposed of after 5 attempts") {
		t.Errorf("the job's state: %s %s: %s", k.st.State, k.st.Reason, k.st.Message)
	}
	before := count(k.srv, "POST /savepoint-disposal")
	k.run(spec, time.Hour)
	if n := count(k.srv, "POST /savepoint-disposal") - before; n != 0 {
		t.Errorf("%d disposals sent for savepoints given up", n)
	}
	// A caller that clears the records' disposals has them tried again.
	k.srv.ClearFaults()
	for i := range k.st.Savepoints.Records {
		k.st.Savepoints.Records[i].SetDisposal(savepoint.Disposal{})
	}
	k.run(spec, 5*time.Minute)
	if len(k.st.Savepoints.Records) != 1 || k.st.Savepoints.Records[0].Location != k.st.Latest.Location {
		t.Errorf("after the storage was fixed: history %+v", k.st.Savepoints.Records)
	}
}

// TestLedgerDisposalLostAfterJobManagerRestart: a JobManager restart that
// forgets the disposal's trigger id has it sent again; the savepoint is
// removed from the history only once Flink confirms it gone.
func TestLedgerDisposalLostAfterJobManagerRestart(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute)}
	k.settle("deploy", spec)
	k.run(spec, 3*time.Minute)
	spec.Savepoints = SavepointPolicy{MaxCount: 1}
	k.until("disposal sent", spec, 20, func(st *JobStatus) bool { return st.Disposing.TriggerID != "" })
	loc := k.st.Disposing.Location
	k.srv.RestartJobManager(flinktest.RestartOptions{})
	k.until("disposed", spec, 200, func(st *JobStatus) bool { return !hasLocation(st.Savepoints.Records, loc) })
	if ok, _ := k.srv.SavepointExists(loc); ok {
		t.Errorf("%s left the history but is on storage", loc)
	}
}

// TestLedgerValidate: a retention the status cannot hold is refused with
// the bound in the message.
func TestLedgerValidate(t *testing.T) {
	base := JobSpec{Job: JobTemplate{JarID: "x.jar"}}
	for _, tc := range []struct {
		p    SavepointPolicy
		want string
	}{
		{SavepointPolicy{MaxCount: MaxStoredSavepoints + 1}, "savepoints.maxCount: 257 is more than the 256 savepoints a status holds"},
		{SavepointPolicy{Interval: policy.Duration(10 * time.Minute), MaxAge: policy.Duration(72 * time.Hour)}, "savepoints.maxAge: 72h0m0s keeps about 257 periodic savepoints"},
		{SavepointPolicy{Schedule: "*/5 * * * *", MaxAge: policy.Duration(24 * time.Hour)}, "more than the 256 a status holds"},
	} {
		s := base
		s.Savepoints = tc.p
		err := s.Validate()
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	for _, p := range []SavepointPolicy{
		{MaxCount: MaxStoredSavepoints},
		{Interval: policy.Duration(10 * time.Minute), MaxAge: policy.Duration(24 * time.Hour)},
		{Interval: policy.Duration(10 * time.Minute), MaxAge: policy.Duration(72 * time.Hour), MaxCount: 100},
		{Schedule: "@hourly", MaxAge: policy.Duration(7 * 24 * time.Hour)},
	} {
		s := base
		s.Savepoints = p
		if err := s.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", p, err)
		}
	}
}

// TestImportSavepoint: a savepoint taken elsewhere joins the history,
// becomes the state a deploy starts from, and bad records are refused
// with what is wrong.
func TestImportSavepoint(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("deploy", spec)
	// A savepoint of another job, as another operator took it.
	k2 := &cluster{t: t, srv: k.srv, c: k.c, store: &MemoryStore{}, jar: k.jar, jars: k.jars, resume: true, name: "elsewhere/counter"}
	k2.settle("the other job", k2.spec("/other"))
	otherJob := k2.st.JobID
	op, err := k.c.TriggerSavepoint(context.Background(), otherJob, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var loc string
	for range 100 {
		k.srv.Clock().Advance(time.Second)
		r, err := k.c.OperationStatus(context.Background(), op)
		if err == nil && r.Completed() {
			loc = r.Location
			break
		}
	}
	if loc == "" {
		t.Fatal("the other job's savepoint did not complete")
	}
	if err := k.c.CancelJob(context.Background(), otherJob); err != nil {
		t.Fatal(err)
	}

	var st JobStatus
	if err := st.ImportSavepoint(savepoint.Record{Location: loc, Time: k.srv.Clock().Now().Add(-time.Second), RecordExtra: &savepoint.RecordExtra{OnDelete: savepoint.OnDeleteKeep}}); err != nil {
		t.Fatal(err)
	}
	if st.Latest.Location != loc || st.Latest.Reason != savepoint.ReasonImported || len(st.Savepoints.Records) != 1 {
		t.Fatalf("imported: latest %+v, history %+v", st.Latest, st.Savepoints.Records)
	}
	k3 := &cluster{t: t, srv: k.srv, c: k.c, store: &MemoryStore{}, jar: k.jar, jars: k.jars, resume: true, st: st, name: "imported/counter"}
	k3.settle("deploy from the imported savepoint", k3.spec("/imported"))
	if got := k3.job().RestoredFrom; got != loc {
		t.Errorf("the deploy restored from %q, want the imported %s", got, loc)
	}

	for _, tc := range []struct {
		rec  savepoint.Record
		want string
	}{
		{savepoint.Record{Time: time.Now()}, "location: empty"},
		{savepoint.Record{Location: "s3://b/sp-1"}, "time: the time the savepoint was taken is needed"},
		{savepoint.Record{Location: "s3://b/../sp-1", Time: time.Now()}, `".." segment`},
		{savepoint.Record{Location: "s3://b/sp\n1", Time: time.Now()}, "control character"},
		{savepoint.Record{Location: loc, Time: time.Now()}, "already in the history"},
		{savepoint.Record{Location: "s3://b/sp-2", Time: time.Now(), Reason: "Manual"}, `reason "Manual"`},
		{savepoint.Record{Location: "s3://b/sp-3", Time: time.Now(), RecordExtra: &savepoint.RecordExtra{OnDelete: "Never"}}, `onDelete "Never"`},
	} {
		err := st.ImportSavepoint(tc.rec)
		if !errors.Is(err, ErrInvalidSavepoint) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ImportSavepoint(%+v) = %v, want %q", tc.rec, err, tc.want)
		}
	}
}

// TestDeleteDisposesAsThePolicySays: Delete keeps the final savepoint,
// disposes of the rest when the policy says so, keeps a record that says
// Keep and disposes of one that says Dispose whatever the policy.
func TestDeleteDisposesAsThePolicySays(t *testing.T) {
	for _, disposeOnDelete := range []bool{false, true} {
		t.Run(fmt.Sprintf("disposeOnDelete=%v", disposeOnDelete), func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute), DisposeOnDelete: disposeOnDelete}
			k.settle("deploy", spec)
			k.run(spec, 5*time.Minute)
			recs := k.st.Savepoints.Records
			if len(recs) < 4 {
				t.Fatalf("%d savepoints", len(recs))
			}
			keep, dispose := recs[0].Location, recs[1].Location
			recs[0].SetOnDelete(savepoint.OnDeleteKeep)
			recs[1].SetOnDelete(savepoint.OnDeleteDispose)
			var res Result
			for range 200 {
				if res = k.call(spec, true); res.Done {
					break
				}
			}
			if !res.Done || !k.st.Deleted {
				t.Fatalf("delete not done: %+v %s", k.st.Progress, k.st.Message)
			}
			final := k.st.Latest.Location
			on := map[string]bool{}
			for _, s := range k.srv.Snapshots() {
				if s.Savepoint && !s.Removed {
					on[s.Location] = true
				}
			}
			if !on[final] || !on[keep] || on[dispose] {
				t.Errorf("final %s on storage %v, kept %s %v, disposed %s %v", final, on[final], keep, on[keep], dispose, on[dispose])
			}
			want := 2
			if !disposeOnDelete {
				want = len(recs) // the Dispose one goes, the final one joined
			}
			if len(on) != want || len(k.st.Savepoints.Records) != want {
				t.Errorf("%d savepoints on storage, %d in the history, want %d: %v", len(on), len(k.st.Savepoints.Records), want, on)
			}
			if stored, ok, _ := k.store.Get(context.Background(), "app/counter"); !ok || stored.Location != final {
				t.Errorf("restore point %+v, want the final savepoint %s", stored, final)
			}
		})
	}
}
