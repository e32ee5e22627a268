package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// fakeStorage is the Storage of the fake JobManager's simulated disk
// (flinktest.Server.ListStorage, RemoveStorage), counting its requests.
// With faults set, a share of its requests fail as an object store's
// do: 5xx errors, throttling, and listings that lose a page (cut short
// without an error).
type fakeStorage struct {
	srv      *flinktest.Server
	mu       sync.Mutex
	requests int
	deletes  []string
	fail     func(dir string) bool // listings that fail
	// faults draws the faults of the requests, one in faultEvery on
	// average; nil: none.
	faults     *rand.Rand
	faultEvery int
	faulted    int
}

// Errors of fakeStorage's drawn faults.
var (
	errFake5xx      = errors.New("injected: 503 Service Unavailable")
	errFakeThrottle = errors.New("injected: 503 SlowDown: please reduce your request rate")
)

// count counts a request to dir and draws its fault: an error, or a
// listing cut short (cut).
func (s *fakeStorage) count(dir string) (cut bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.fail != nil && s.fail(dir) {
		return false, errors.New("injected: 503 Slow Down")
	}
	if s.faults == nil || s.faults.IntN(s.faultEvery) != 0 {
		return false, nil
	}
	s.faulted++
	switch s.faults.IntN(3) {
	case 0:
		return false, errFake5xx
	case 1:
		return false, errFakeThrottle
	}
	return true, nil
}

func (s *fakeStorage) List(ctx context.Context, dir string) ([]string, error) {
	es, err := s.Entries(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out, nil
}

func (s *fakeStorage) Entries(_ context.Context, dir string) ([]StorageEntry, error) {
	cut, err := s.count(dir)
	if err != nil {
		return nil, err
	}
	es := s.srv.ListStorage(dir)
	if cut && len(es) > 0 {
		s.mu.Lock()
		es = es[:s.faults.IntN(len(es))] // a page lost
		s.mu.Unlock()
	}
	var out []StorageEntry
	for _, e := range es {
		out = append(out, StorageEntry{Path: e.Path, Dir: e.Dir, Size: e.Size, Modified: e.Modified})
	}
	return out, nil
}

func (s *fakeStorage) Delete(_ context.Context, path string) error {
	if cut, err := s.count(path); err != nil || cut {
		if err == nil {
			err = errFake5xx // a delete has no page to lose: it fails
		}
		return err
	}
	s.mu.Lock()
	s.deletes = append(s.deletes, path)
	s.mu.Unlock()
	s.srv.RemoveStorage(path)
	return nil
}

func (s *fakeStorage) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// auditCluster is a fake cluster whose savepoints and checkpoints lie in
// directories of their own, with a fakeStorage of them.
func auditCluster(t *testing.T) (*cluster, *fakeStorage, string) {
	t.Helper()
	root := t.TempDir()
	sp := filepath.Join(root, "sp")
	k := newCluster(t, false, flinktest.WithSavepointDir(sp), flinktest.WithCheckpointDir(filepath.Join(root, "ck")))
	fs := &fakeStorage{srv: k.srv}
	k.storage = fs
	return k, fs, sp
}

// TestAuditExternalStopForgotten: a job stopped with a savepoint from
// outside (the Flink UI), then forgotten by a JobManager restart without
// high availability before the Controller saw the stop: the Controller
// audits the storage before it starts the job again, records the stop's
// savepoint (Found) and starts the job from it, not from its own older
// periodic savepoint.
func TestAuditExternalStopForgotten(t *testing.T) {
	k, _, _ := auditCluster(t)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(2 * time.Minute), MaxCount: 5}
	k.settle("create", spec)
	k.run(spec, 5*time.Minute)
	older := k.st.Latest
	if older.Location == "" {
		t.Fatal("no periodic savepoint")
	}
	old := k.st.JobID
	stop := k.stopExternally()
	k.srv.RestartJobManager(flinktest.RestartOptions{})
	k.until("restart", spec, 300, func(st *JobStatus) bool {
		return st.JobID != old && !st.InFlight() && st.State == policy.Running
	})
	if got := k.job().RestoredFrom; !within(got, stop) {
		t.Errorf("the new job restored %s, want the stop's savepoint %s (the Controller's latest was %s)", got, stop, older.Location)
	}
	if !slices.ContainsFunc(k.st.Savepoints.Records, func(r savepoint.Record) bool {
		return within(r.Location, stop) && r.Reason == savepoint.ReasonFound && r.JobID == old
	}) {
		t.Errorf("history %+v: the stop's savepoint is not recorded as Found", k.st.Savepoints.Records)
	}
}

// TestAuditRecordsAndMovesOnlyNewer: an audit records the Unrecorded
// savepoints of the deployment's job with the reason Found and the time
// of their _metadata, makes the newest the restore point only when it is
// newer than what the status knows, and leaves a foreign savepoint
// alone; the retention then disposes of a found one like the
// deployment's own.
func TestAuditRecordsAndMovesOnlyNewer(t *testing.T) {
	k, fs, _ := auditCluster(t)
	k.auditInterval = 10 * time.Minute // a periodic savepoint's end owes none
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(10 * time.Minute), MaxCount: 2}
	k.settle("create", spec)
	k.run(spec, 11*time.Minute)
	if k.st.Latest.Location == "" {
		t.Fatal("no periodic savepoint")
	}
	// A savepoint from outside, older than none: the newest state.
	outside := k.savepointByHand(k.st.JobID)
	ctrl := k.controller()
	a, err := ctrl.ApplyAudit(context.Background(), spec, &k.st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", a)
	if a.Applied == nil || len(a.Applied.Recorded) != 1 || !within(a.Applied.Recorded[0], outside) || !within(a.Applied.RestorePoint, outside) {
		t.Fatalf("applied %+v, want %s recorded and the restore point", a.Applied, outside)
	}
	if !within(k.st.Latest.Location, outside) || k.st.Latest.Reason != savepoint.ReasonFound || k.st.Audit == nil || k.st.Audit.Recorded != 1 {
		t.Errorf("latest %+v, audit %+v", k.st.Latest, k.st.Audit)
	}
	// Another one, then a savepoint the Controller takes: the found one
	// is older than the Controller's and is recorded without moving the
	// restore point.
	second := k.savepointByHand(k.st.JobID)
	k.run(spec, 11*time.Minute) // a periodic savepoint; the interval's audit
	if k.st.Latest.Reason != savepoint.ReasonScheduled || k.st.Audit == nil || k.st.Audit.RestorePoint != "" {
		t.Errorf("latest %+v, audit %+v: a found savepoint older than the Controller's became the restore point", k.st.Latest, k.st.Audit)
	}
	if !slices.ContainsFunc(k.st.Savepoints.Records, func(r savepoint.Record) bool { return within(r.Location, second) }) &&
		k.onStorage(second) {
		t.Errorf("%s: on storage and not recorded", second)
	}
	k.run(spec, 40*time.Minute)
	for _, s := range k.srv.Snapshots() {
		if s.Savepoint && !s.Removed && !slices.ContainsFunc(k.st.Savepoints.Records, func(r savepoint.Record) bool { return within(r.Location, s.Location) }) {
			t.Errorf("savepoint %s of job %s is on storage and not in the history", s.Location, s.Job)
		}
	}
	if n := len(k.st.Savepoints.Records); n > 2 {
		t.Errorf("%d savepoints in the history, want the retention's 2: found ones count", n)
	}
	fs.mu.Lock()
	deletes := slices.Clone(fs.deletes)
	fs.mu.Unlock()
	if len(deletes) != 0 {
		t.Errorf("deletes %v: the session cluster's JobManager disposes of savepoints", deletes)
	}
}

// TestAuditForeignUntouched: a foreign job's savepoint and checkpoints
// beside the deployment's are Foreign: never recorded, never deleted.
func TestAuditForeignUntouched(t *testing.T) {
	k, fs, sp := auditCluster(t)
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute), MaxCount: 1}
	// A foreign job in the same cluster, with savepoints of its own.
	foreign := k.spec("/foreign")
	fk := *k
	fk.st, fk.name = JobStatus{}, "other/job"
	fk.settle("create the foreign job", foreign)
	fsp := fk.savepointByHand(fk.st.JobID)
	k.settle("create", spec)
	k.run(spec, 10*time.Minute)
	a, err := k.controller().ApplyAudit(context.Background(), spec, &k.st)
	if err != nil {
		t.Fatal(err)
	}
	if hasLocation(k.st.Savepoints.Records, fsp) || slices.ContainsFunc(a.Applied.Recorded, func(l string) bool { return within(l, fsp) }) {
		t.Errorf("the foreign savepoint %s was recorded", fsp)
	}
	if !k.onStorage(fsp) {
		t.Errorf("the foreign savepoint %s is gone", fsp)
	}
	if slices.ContainsFunc(a.Applied.Replaced, func(id flinkapi.JobID) bool { return id == fk.st.JobID }) {
		t.Errorf("the foreign job's checkpoints were added to Replaced")
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, d := range fs.deletes {
		if within(d, fsp) || within(d, filepath.Join(sp, string(fk.st.JobID))) {
			t.Errorf("deleted %s", d)
		}
	}
}

// TestApplyAuditLayout: the layout of every kind (auditLayout), applied:
// the Unrecorded savepoint of the current job enters the history (Found,
// its _metadata's time) and becomes the restore point, being newer than
// what the status knows; the Replaced checkpoint directories that
// JobStatus.Replaced lacks are added; Foreign, Incomplete and Missing
// entries change nothing; nothing is deleted. With its _metadata older
// than Latest, it is recorded and the restore point stays.
func TestApplyAuditLayout(t *testing.T) {
	for _, older := range []bool{false, true} {
		t.Run(fmt.Sprintf("older=%v", older), func(t *testing.T) {
			root := t.TempDir()
			spec, st, want := auditLayout(t, root)
			var unrec string
			for p, k := range want {
				if k == AuditUnrecorded {
					unrec = p
				}
			}
			if older {
				old := st.Latest.Time.Add(-time.Hour)
				if err := os.Chtimes(filepath.Join(unrec, "_metadata"), old, old); err != nil {
					t.Fatal(err)
				}
			}
			latest := st.Latest
			before := tree(t, root)
			cs := &countingStorage{Storage: LocalStorage{}}
			ctrl := &Controller{Storage: entriesStorage{cs}, Name: "app/audit"}
			a, err := ctrl.ApplyAudit(context.Background(), spec, &st)
			if err != nil {
				t.Fatal(err)
			}
			if a.Applied == nil || len(a.Applied.Recorded) != 1 || a.Applied.Recorded[0] != unrec {
				t.Fatalf("applied %+v, want %s recorded", a.Applied, unrec)
			}
			i := slices.IndexFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return r.Location == unrec })
			if i < 0 || st.Savepoints.Records[i].Reason != savepoint.ReasonFound || st.Savepoints.Records[i].JobID != st.JobID {
				t.Fatalf("history %+v: %s not recorded as Found of job %s", st.Savepoints.Records, unrec, st.JobID)
			}
			fi, err := os.Stat(filepath.Join(unrec, "_metadata"))
			if err != nil || !st.Savepoints.Records[i].Time.Equal(fi.ModTime()) {
				t.Errorf("recorded at %v, want its _metadata's time %v", st.Savepoints.Records[i].Time, fi.ModTime())
			}
			switch {
			case older && (st.Latest != latest || a.Applied.RestorePoint != ""):
				t.Errorf("latest %+v (applied %q): an older found savepoint moved the restore point", st.Latest, a.Applied.RestorePoint)
			case !older && (st.Latest.Location != unrec || a.Applied.RestorePoint != unrec || st.Audit.RestorePoint != unrec):
				t.Errorf("latest %+v, applied %q: want the newer found savepoint the restore point", st.Latest, a.Applied.RestorePoint)
			}
			var added []flinkapi.JobID
			for _, r := range st.Replaced[1:] {
				added = append(added, r.JobID)
				if r.NewJobID != st.JobID || r.Checkpointed || canonical(r.CheckpointDir) != filepath.Join(root, "checkpoints") {
					t.Errorf("replaced record %+v", r)
				}
			}
			slices.Sort(added)
			wantAdded := []flinkapi.JobID{auditJob('c'), canaryJobID(auditJob('a'))}
			slices.Sort(wantAdded)
			if !slices.Equal(added, wantAdded) || !slices.Equal(a.Applied.Replaced, st.Audit.Replaced) {
				t.Errorf("replaced added %v (applied %v, summary %v), want %v", added, a.Applied.Replaced, st.Audit.Replaced, wantAdded)
			}
			if st.Audit.Counts[AuditForeign] != 0 || st.Audit.Counts[AuditUnrecorded] != 1 || st.Audit.Requests != a.Requests || st.Audit.Due {
				t.Errorf("summary %+v", st.Audit)
			}
			if cs.deletes != 0 || !maps.Equal(before, tree(t, root)) {
				t.Errorf("%d deletes; storage changed", cs.deletes)
			}
			if !strings.Contains(a.String(), "recorded") {
				t.Errorf("String() does not say what was done:\n%s", a)
			}
		})
	}
}

// TestApplyAuditBudget: 200 Unrecorded savepoints of the job: one audit
// sends MaxAuditRequests requests, records those it read, and says it is
// truncated; the next reads the rest first, before the history's.
func TestApplyAuditBudget(t *testing.T) {
	root := t.TempDir()
	sp := filepath.Join(root, "sp")
	job := auditJob('a')
	st := JobStatus{JobID: job, Name: "app/b"}
	for i := range 200 {
		snapshotAt(t, filepath.Join(sp, fmt.Sprintf("savepoint-aaaaaa-%012x", i)), true, 1)
	}
	spec := JobSpec{Job: JobTemplate{JarFile: "/app.jar", FlinkConfiguration: map[string]string{"state.savepoints.dir": sp}}}
	cs := &countingStorage{Storage: LocalStorage{}}
	ctrl := &Controller{Storage: entriesStorage{cs}, Name: "app/b"}
	a, err := ctrl.ApplyAudit(context.Background(), spec, &st)
	if err != nil {
		t.Fatal(err)
	}
	n := len(st.Savepoints.Records)
	if len(cs.listed) != MaxAuditRequests || !st.Audit.Truncated || st.Audit.Requests != MaxAuditRequests || n != MaxAuditRequests-1 || st.Audit.Recorded != n {
		t.Errorf("%d listings, summary %+v, %d recorded; want %d, truncated, %d", len(cs.listed), st.Audit, n, MaxAuditRequests, MaxAuditRequests-1)
	}
	if a.Count(AuditUnread) != 200-n {
		t.Errorf("%d unread, want %d", a.Count(AuditUnread), 200-n)
	}
	if _, err := ctrl.ApplyAudit(context.Background(), spec, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Savepoints.Records) != 200 || st.Audit.Recorded != 200-n {
		t.Errorf("after a second audit: %d recorded, summary %+v; want 200: the savepoints the history lacks are read first", len(st.Savepoints.Records), st.Audit)
	}
}

// TestAuditSchedule: Reconcile audits once an action ended (at the next
// call) and every AuditInterval, and sends no Storage request at rest in
// between.
func TestAuditSchedule(t *testing.T) {
	k, fs, _ := auditCluster(t)
	spec := k.spec("/out")
	k.settle("create", spec)
	k.run(spec, time.Minute)
	if k.st.Audit == nil || k.st.Audit.Due || k.st.Audit.Time.IsZero() {
		t.Fatalf("after the deploy: audit %+v, want one done", k.st.Audit)
	}
	first := k.st.Audit.Time
	calls, polls := fs.calls(), k.calls
	k.run(spec, 30*time.Minute)
	if n := fs.calls() - calls; n != 0 || !k.st.Audit.Time.Equal(first) {
		t.Errorf("%d storage requests in %d polls at rest (audit at %v, first %v), want none", n, k.calls-polls, k.st.Audit.Time, first)
	}
	k.run(spec, 40*time.Minute)
	t.Logf("the audit an interval later: %d storage requests, %v", fs.calls()-calls, k.st.Audit.Counts)
	if n := fs.calls() - calls; k.st.Audit.Time.Equal(first) || n != k.st.Audit.Requests || n == 0 ||
		k.st.Audit.Time.Sub(first) < DefaultAuditInterval {
		t.Errorf("%d storage requests, audit %+v; want one audit an interval after %v", n, k.st.Audit, first)
	}
	// An upgrade: the call after it ended audits.
	spec.Job.Args = slices.Clone(spec.Job.Args)
	spec.Job.Args[1] = "/out2"
	k.until("upgrade", spec, 300, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
	if k.st.Audit == nil || !k.st.Audit.Due {
		t.Fatalf("the call that ended the upgrade: audit %+v, want it due", k.st.Audit)
	}
	ended := k.srv.Clock().Now()
	calls = fs.calls()
	k.call(spec, false)
	if k.st.Audit.Due || k.st.Audit.Time.Before(ended) || fs.calls()-calls != k.st.Audit.Requests {
		t.Errorf("the call after the upgrade: audit %+v, %d requests", k.st.Audit, fs.calls()-calls)
	}
}

// TestAuditReplacedLeak: the record of a replaced job is lost (its
// retained checkpoints leak); the audit after the next action finds its
// directory Replaced, adds it to JobStatus.Replaced, and the cleanup
// removes it once the running job completed a checkpoint of its own.
func TestAuditReplacedLeak(t *testing.T) {
	k, dir, _ := retainedCluster(t, false, true)
	spec := k.spec("/out")
	spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.dir": "file://" + dir}
	k.settle("create", spec)
	old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
	k.st.Replaced = nil // lost
	makeCheckpoints(t, dir, old, 4, 5)
	makeCheckpoints(t, dir, k.st.JobID, 1)
	rest(k, spec)
	if k.st.Audit == nil || !slices.Contains(k.st.Audit.Replaced, old) {
		t.Errorf("audit %+v: the replaced job %s not added", k.st.Audit, old)
	}
	if e := entries(t, dir, old); e != nil {
		t.Errorf("the replaced job's directory holds %v, want it removed", e)
	}
	if e := entries(t, dir, k.st.JobID); !slices.Contains(e, "chk-1") {
		t.Errorf("the running job's directory holds %v, want its chk-1", e)
	}
}

// TestAuditRetryBacksOff: an audit whose listing failed is tried again
// after RetryInterval, twice that after a second failure in a row, and
// so on up to AuditInterval; the routine actions beside the running job
// owe an audit at their end only when they did not succeed.
func TestAuditRetryBacksOff(t *testing.T) {
	c := &Controller{RetryInterval: 20 * time.Second, AuditInterval: time.Hour}
	for _, tc := range []struct {
		inARow int
		want   time.Duration
	}{{1, 20 * time.Second}, {2, 40 * time.Second}, {3, 80 * time.Second}, {8, 2560 * time.Second}, {9, time.Hour}, {40, time.Hour}} {
		if got := c.auditRetry(&AuditSummary{ListFailures: 1, FailedInARow: tc.inARow}); got != tc.want {
			t.Errorf("after %d failed audits in a row: %v, want %v", tc.inARow, got, tc.want)
		}
	}
	c.AuditInterval = -1
	if got := c.auditRetry(&AuditSummary{ListFailures: 1, FailedInARow: 5}); got != 20*time.Second {
		t.Errorf("without an interval: %v, want RetryInterval", got)
	}
	for _, a := range []JobAction{ActionSavepoint, ActionSavepointRequest, ActionCheckpoint, ActionCheckpointRequest, ActionDispose} {
		if auditAfter(a, OutcomeSucceeded) {
			t.Errorf("%s owes an audit at its end when it succeeded", a)
		}
		for _, o := range []Outcome{OutcomeTimedOut, OutcomeSavepointFailed, OutcomeSavepointLost, OutcomeCheckpointFailed, OutcomeDisposeFailed} {
			// A savepoint past its deadline is looked up as late instead.
			late := o == OutcomeTimedOut && (a == ActionSavepoint || a == ActionSavepointRequest)
			if auditAfter(a, o) == late {
				t.Errorf("%s at its end %s: audit owed %v, want %v", a, o, auditAfter(a, o), !late)
			}
		}
	}
	for _, a := range []JobAction{ActionDeploy, ActionUpgrade, ActionRestart, ActionCanary, ActionBlueGreen, ActionSuspend, ActionTeardown, ActionRescale} {
		if !auditAfter(a, OutcomeSucceeded) {
			t.Errorf("%s owes no audit at its end", a)
		}
	}
}

// TestDeleteAuditsAgainAfterFailedListing: a savepoint of the
// deployment's job taken from outside lies on storage, and the listings
// of the savepoint directory fail at the audit before the teardown:
// Delete audits again once the job is torn down, until a listing reads
// it, and is not done while the savepoint lies on storage unrecorded.
func TestDeleteAuditsAgainAfterFailedListing(t *testing.T) {
	ctx := context.Background()
	k, fs, sp := auditCluster(t)
	spec := k.spec("/out")
	spec.Job.FlinkConfiguration["state.savepoints.dir"] = "file://" + sp
	k.settle("create", spec)
	op, err := k.c.TriggerSavepoint(ctx, k.st.JobID, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(5 * time.Second)
	res, err := k.c.OperationStatus(ctx, op)
	if err != nil || res.Location == "" {
		t.Fatalf("savepoint: %+v %v", res, err)
	}
	var mu sync.Mutex
	failed := 0
	fs.fail = func(dir string) bool {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(dir, sp) && failed < 2 {
			failed++
			return true
		}
		return false
	}
	var done Result
	for range 500 {
		if done = k.call(spec, true); done.Done {
			break
		}
	}
	if !done.Done || failed == 0 {
		t.Fatalf("delete done %v, %d listings failed", done.Done, failed)
	}
	recorded := slices.ContainsFunc(k.st.Savepoints.Records, func(r savepoint.Record) bool { return within(r.Location, res.Location) })
	removed := slices.ContainsFunc(k.srv.Snapshots(), func(s flinktest.Snapshot) bool { return s.Location == res.Location && s.Removed })
	if !recorded && !removed {
		t.Errorf("the savepoint %s taken from outside is on storage, neither recorded nor disposed of (history %+v)", res.Location, k.st.Savepoints.Records)
	}
}
