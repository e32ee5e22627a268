package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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

// TestAuditKind: the rule of the audit, fact by fact.
func TestAuditKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    auditFacts
		want AuditKind
	}{
		{"recorded, complete", auditFacts{Recorded: true, Read: true, Complete: true, Ours: true}, AuditInHistory},
		{"recorded of a foreign job", auditFacts{Recorded: true, Read: true, Complete: true}, AuditInHistory},
		{"recorded restore point", auditFacts{Recorded: true, RestorePoint: true, Read: true, Complete: true}, AuditRestorePoint},
		{"restore point only", auditFacts{RestorePoint: true, Read: true, Complete: true}, AuditRestorePoint},
		{"recorded without _metadata", auditFacts{Recorded: true, Read: true}, AuditMissing},
		{"restore point without _metadata", auditFacts{RestorePoint: true, Read: true, Ours: true, Current: true}, AuditMissing},
		{"recorded, not read", auditFacts{Recorded: true, Complete: true}, AuditUnread},
		{"foreign savepoint", auditFacts{Snapshot: true, Savepoint: true, Read: true, Complete: true}, AuditForeign},
		{"foreign job directory", auditFacts{Job: "f"}, AuditForeign},
		{"our savepoint, complete", auditFacts{Ours: true, Snapshot: true, Savepoint: true, Read: true, Complete: true}, AuditUnrecorded},
		{"our savepoint, incomplete", auditFacts{Ours: true, Snapshot: true, Savepoint: true, Read: true}, AuditIncomplete},
		{"our savepoint, not read", auditFacts{Ours: true, Snapshot: true, Savepoint: true}, AuditUnread},
		{"current chk, complete", auditFacts{Ours: true, Current: true, Snapshot: true, Read: true, Complete: true}, AuditRetained},
		{"current chk, in progress", auditFacts{Ours: true, Current: true, Snapshot: true, Read: true}, AuditIncomplete},
		{"current shared/", auditFacts{Ours: true, Current: true}, AuditRetained},
		{"current shared/, sized", auditFacts{Ours: true, Current: true, Read: true}, AuditRetained},
		{"replaced chk", auditFacts{Ours: true, Snapshot: true, Read: true, Complete: true}, AuditReplaced},
		{"replaced chk, incomplete", auditFacts{Ours: true, Snapshot: true, Read: true}, AuditIncomplete},
		{"replaced taskowned/", auditFacts{Ours: true}, AuditReplaced},
		{"replaced job directory, not read", auditFacts{Ours: true, Snapshot: true}, AuditUnread},
	} {
		if got := auditKind(tc.f); got != tc.want {
			t.Errorf("%s: %+v: %s, want %s", tc.name, tc.f, got, tc.want)
		}
		if !tc.want.Valid() {
			t.Errorf("%s: %s is not Valid", tc.name, tc.want)
		}
	}
	if AuditKind("Leaked").Valid() {
		t.Error("an unknown kind is Valid")
	}
}

// countingStorage counts the requests to a Storage and fails every
// Delete: an audit changes nothing.
type countingStorage struct {
	Storage
	mu      sync.Mutex
	listed  []string
	deletes int
	fail    map[string]bool // directories whose listing fails
}

func (s *countingStorage) List(ctx context.Context, dir string) ([]string, error) {
	s.mu.Lock()
	s.listed = append(s.listed, dir)
	fail := s.fail[dir]
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected failure")
	}
	return s.Storage.List(ctx, dir)
}

func (s *countingStorage) Delete(context.Context, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes++
	return errors.New("an audit deletes nothing")
}

// entriesStorage is a countingStorage with sizes (StorageEntries).
type entriesStorage struct{ *countingStorage }

func (s entriesStorage) Entries(ctx context.Context, dir string) ([]StorageEntry, error) {
	s.mu.Lock()
	s.listed = append(s.listed, dir)
	fail := s.fail[dir]
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected failure")
	}
	return LocalStorage{}.Entries(ctx, dir)
}

// auditJob is a job id made of one hex digit.
func auditJob(c byte) flinkapi.JobID { return flinkapi.JobID(strings.Repeat(string(c), 32)) }

// writeFile writes n bytes at path, creating its directories.
func writeFile(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
}

// snapshotAt lays out a snapshot directory as Flink writes it: a data
// file of data bytes and, when complete, a _metadata of 10 bytes.
func snapshotAt(t *testing.T, dir string, complete bool, data int) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "0c4a1e7f-data"), data)
	if complete {
		writeFile(t, filepath.Join(dir, "_metadata"), 10)
	}
}

// tree is every path under root with its size.
func tree(t *testing.T, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// auditLayout lays out, under root, the savepoint and checkpoint
// directories of a deployment with an entry of every kind, and returns
// the spec and status and the kind each path should have.
func auditLayout(t *testing.T, root string) (JobSpec, JobStatus, map[string]AuditKind) {
	t.Helper()
	sp, ck := filepath.Join(root, "savepoints"), filepath.Join(root, "checkpoints")
	cur, old, hist, foreign := auditJob('a'), auditJob('b'), auditJob('c'), auditJob('f')
	canary := canaryJobID(cur)
	spName := func(job flinkapi.JobID, n int) string {
		return filepath.Join(sp, fmt.Sprintf("savepoint-%s-%012x", job[:6], n))
	}
	chk := func(job flinkapi.JobID, n int) string {
		return filepath.Join(ck, string(job), fmt.Sprintf("chk-%d", n))
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	want := map[string]AuditKind{}
	at := func(p string, k AuditKind) string { want[p] = k; return p }

	h1 := at(spName(cur, 1), AuditInHistory)
	latest := at(spName(cur, 2), AuditRestorePoint)
	upgradeFrom := at(spName(old, 3), AuditRestorePoint)
	unrecorded := at(spName(cur, 4), AuditUnrecorded)
	incomplete := at(spName(cur, 5), AuditIncomplete)
	foreignSp := at(spName(foreign, 6), AuditForeign)
	gone := at(spName(hist, 7), AuditMissing)
	partial := at(spName(hist, 8), AuditMissing)
	notes := at(filepath.Join(sp, "notes.txt"), AuditForeign)
	for _, p := range []string{h1, latest, upgradeFrom, unrecorded, foreignSp} {
		snapshotAt(t, p, true, 100)
	}
	snapshotAt(t, incomplete, false, 100)
	snapshotAt(t, partial, false, 100)
	writeFile(t, notes, 3)

	retained := at(chk(cur, 3), AuditRetained)
	inProgress := at(chk(cur, 4), AuditIncomplete)
	replaced := at(chk(old, 1), AuditReplaced)
	// The checkpoint the job started from: no longer a restore point
	// once the job has savepoints of its own (h1, latest), as the ledger
	// no longer keeps it; a checkpoint of the job it replaced.
	restoredFrom := at(chk(old, 2), AuditReplaced)
	histChk := at(chk(hist, 9), AuditReplaced)
	canaryChk := at(chk(canary, 2), AuditReplaced)
	for _, p := range []string{retained, replaced, restoredFrom, histChk, canaryChk} {
		snapshotAt(t, p, true, 1000)
	}
	snapshotAt(t, inProgress, false, 1000)
	for job, k := range map[flinkapi.JobID]AuditKind{cur: AuditRetained, old: AuditReplaced} {
		writeFile(t, filepath.Join(at(filepath.Join(ck, string(job), "shared"), k), "sst-1"), 500)
		if err := os.MkdirAll(at(filepath.Join(ck, string(job), "taskowned"), k), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	snapshotAt(t, filepath.Join(at(filepath.Join(ck, string(foreign)), AuditForeign), "chk-1"), true, 1000)

	spec := JobSpec{Job: JobTemplate{JarFile: "/jars/app.jar", FlinkConfiguration: map[string]string{
		"execution.checkpointing.dir": "file://" + ck, "state.savepoints.dir": sp}}}
	rec := func(loc string, job flinkapi.JobID, n int) savepoint.Record {
		return savepoint.Record{Location: loc, JobID: job, Time: t0.Add(time.Duration(n) * time.Hour), Reason: savepoint.ReasonScheduled}
	}
	st := JobStatus{Name: "app/audit", JobID: cur, Deployed: spec.Job, JobState: flinkapi.JobRunning,
		Latest: rec(latest, cur, 2), UpgradeFrom: rec(upgradeFrom, old, 3), RestoredFrom: restoredFrom,
		Replaced: []ReplacedJob{{JobID: old, CheckpointDir: "file://" + ck, NewJobID: cur}}}
	st.Savepoints = st.Savepoints.Add(rec(h1, cur, 1), rec(latest, cur, 2), rec(gone, hist, 7), rec(partial, hist, 8))
	return spec, st, want
}

// TestAudit: a deployment's directories laid out as Flink lays them out,
// with an entry of every kind: each is classified as it should be, the
// history record whose savepoint is gone is Missing, the foreign job's
// savepoint beside ours is Foreign and not read, sizes and counts add
// up, no directory is listed twice, and nothing on storage changes.
// With a Storage that lists only, the kinds are the same, sizes unknown.
func TestAudit(t *testing.T) {
	for _, sized := range []bool{true, false} {
		t.Run(fmt.Sprintf("sized=%v", sized), func(t *testing.T) {
			root := t.TempDir()
			spec, st, want := auditLayout(t, root)
			before := tree(t, root)
			cs := &countingStorage{Storage: LocalStorage{}}
			var storage Storage = cs
			if sized {
				storage = entriesStorage{cs}
			}
			ctrl := &Controller{Storage: storage, Name: "app/audit"}
			stBefore := *st.DeepCopy()
			a, err := ctrl.Audit(context.Background(), spec, st)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", a)
			got := map[string]AuditKind{}
			for _, e := range a.Entries {
				got[strings.TrimPrefix(e.Path, "file://")] = e.Kind
			}
			for p, k := range want {
				if got[p] != k {
					t.Errorf("%s: %q, want %s", p, got[p], k)
				}
			}
			for p, k := range got {
				if _, ok := want[p]; !ok {
					t.Errorf("unexpected entry %s (%s)", p, k)
				}
			}
			for _, k := range AuditKinds {
				n := 0
				for _, w := range want {
					if w == k {
						n++
					}
				}
				if a.Count(k) != n {
					t.Errorf("%s: count %d, want %d", k, a.Count(k), n)
				}
			}
			if cs.deletes != 0 || !equalTrees(before, tree(t, root)) {
				t.Errorf("the audit changed storage: %d deletes", cs.deletes)
			}
			if !reflectEqualStatus(stBefore, st) {
				t.Error("the audit changed the status")
			}
			if a.Requests != len(cs.listed) || a.Requests > MaxAuditRequests || a.Truncated || a.FlinkRequests != 0 {
				t.Errorf("%d requests, %d listings, truncated %v, %d Flink requests", a.Requests, len(cs.listed), a.Truncated, a.FlinkRequests)
			}
			seen := map[string]bool{}
			for _, d := range cs.listed {
				if seen[canonical(d)] {
					t.Errorf("%s listed twice", d)
				}
				seen[canonical(d)] = true
				if strings.Contains(d, string(auditJob('f'))) || strings.Contains(d, "savepoint-ffffff") {
					t.Errorf("a foreign entry was read: %s", d)
				}
			}
			// 2 directories, 3 job directories + the canary's, 4
			// savepoints of the ledger (the fifth is gone) and 2 of ours
			// it lacks, 6 checkpoints, and with sizes 2 shared/ and 2
			// taskowned/.
			wantRequests := 2 + 4 + 4 + 2 + 6
			if sized {
				wantRequests += 4
			}
			if a.Requests != wantRequests {
				t.Errorf("%d requests (%v), want %d", a.Requests, cs.listed, wantRequests)
			}
			tot := a.Totals[AuditRetained]
			switch {
			case sized && (tot.Bytes != 1010+500 || tot.Unsized != 0):
				t.Errorf("retained: %+v, want 1510 bytes: chk-3 and shared/", tot)
			case !sized && tot.Unsized != tot.Count:
				t.Errorf("retained: %+v, want no size without StorageEntries", tot)
			}
			for _, e := range a.Of(AuditInHistory) {
				if sized && (e.Size != 110 || e.Modified.IsZero() || e.JobID != auditJob('a')) {
					t.Errorf("in history: %+v, want 110 bytes, a time and job a", e)
				}
			}
			s := a.String()
			for _, w := range []string{"Missing", "Unrecorded", "Incomplete", "storage audit:"} {
				if !strings.Contains(s, w) {
					t.Errorf("String() lacks %q:\n%s", w, s)
				}
			}
			if strings.Contains(s, "savepoint-ffffff") {
				t.Errorf("String() lists a foreign entry:\n%s", s)
			}
		})
	}
}

// equalTrees reports whether two trees are equal.
func equalTrees(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// reflectEqualStatus compares two statuses through their JSON.
func reflectEqualStatus(a, b JobStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestAuditBudget: a history of 200 savepoints, all on storage: the
// audit stops at MaxAuditRequests, says so, and reports what it did not
// read Unread, never Missing; a listing that fails is noted, what lies
// under it Unread.
func TestAuditBudget(t *testing.T) {
	root := t.TempDir()
	sp := filepath.Join(root, "sp")
	job := auditJob('a')
	var st JobStatus
	st.JobID = job
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var recs []savepoint.Record
	for i := range 200 {
		loc := filepath.Join(sp, fmt.Sprintf("savepoint-aaaaaa-%012x", i))
		snapshotAt(t, loc, true, 1)
		recs = append(recs, savepoint.Record{Location: loc, JobID: job, Time: t0.Add(time.Duration(i) * time.Minute)})
	}
	st.Savepoints = st.Savepoints.Add(recs...)
	st.Latest = recs[len(recs)-1]
	spec := JobSpec{Job: JobTemplate{JarFile: "/app.jar", FlinkConfiguration: map[string]string{"execution.checkpointing.dir": filepath.Join(root, "ck")}}}
	cs := &countingStorage{Storage: LocalStorage{}}
	a, err := (&Controller{Storage: entriesStorage{cs}}).Audit(context.Background(), spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if a.Requests != MaxAuditRequests || len(cs.listed) != MaxAuditRequests || !a.Truncated {
		t.Fatalf("%d requests, %d listings, truncated %v; want %d and truncated", a.Requests, len(cs.listed), a.Truncated, MaxAuditRequests)
	}
	// The two directories, then 126 savepoints.
	read := a.Count(AuditInHistory) + a.Count(AuditRestorePoint)
	if read != MaxAuditRequests-2 || a.Count(AuditUnread) != 200-read || a.Count(AuditMissing) != 0 {
		t.Errorf("%d read, %d unread, %d missing; want %d, %d, 0", read, a.Count(AuditUnread), a.Count(AuditMissing), MaxAuditRequests-2, 200-read)
	}
	if !strings.Contains(a.String(), "partial") {
		t.Errorf("String() does not say the audit is partial:\n%s", a)
	}

	cs = &countingStorage{Storage: LocalStorage{}, fail: map[string]bool{sp: true}}
	a, err = (&Controller{Storage: entriesStorage{cs}}).Audit(context.Background(), spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if a.Count(AuditUnread) != 200 || len(a.Notes) == 0 || !strings.Contains(a.Notes[0], "could not be listed") || a.Requests != 2 {
		t.Errorf("with the savepoint directory's listing failing: %d unread, %d requests, notes %q", a.Count(AuditUnread), a.Requests, a.Notes)
	}
}

// TestAuditRefuses: without a Storage, and for another deployment's
// status, the audit refuses before any request.
func TestAuditRefuses(t *testing.T) {
	if _, err := (&Controller{}).Audit(context.Background(), JobSpec{}, JobStatus{}); !errors.Is(err, ErrNoStorage) {
		t.Errorf("without a Storage: %v, want ErrNoStorage", err)
	}
	cs := &countingStorage{Storage: LocalStorage{}}
	_, err := (&Controller{Storage: cs, Name: "app/b"}).Audit(context.Background(), JobSpec{}, JobStatus{Name: "app/a"})
	if !errors.Is(err, ErrForeignStatus) || len(cs.listed) != 0 {
		t.Errorf("another deployment's status: %v after %d listings, want ErrForeignStatus and none", err, len(cs.listed))
	}
}

// TestAuditFake: a deployment on the fake JobManager with periodic
// savepoints and an upgrade, its snapshots laid out on disk where the
// fake says they are (the fake keeps them in memory), beside a foreign
// job's savepoint: the audit finds every savepoint of the history and
// the restore points, the running job's retained checkpoints Retained,
// the replaced job's Replaced, the foreign savepoint Foreign, and
// nothing Missing or Unrecorded. The checkpoint directory is read from
// the running job's checkpoint statistics (one GET), as the spec sets
// none.
func TestAuditFake(t *testing.T) {
	root := t.TempDir()
	sp, ck := filepath.Join(root, "sp"), filepath.Join(root, "ck")
	k := newCluster(t, false, flinktest.WithSavepointDir(sp), flinktest.WithCheckpointDir(ck))
	k.storage = LocalStorage{}
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(time.Minute), MaxCount: 3}
	k.settle("create", spec)
	k.run(spec, 5*time.Minute)
	old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
	k.run(spec, 3*time.Minute)
	if len(k.st.Savepoints.Records) < 2 {
		t.Fatalf("history: %+v, want periodic savepoints", k.st.Savepoints.Records)
	}
	// Flink's layout of what the fake holds.
	for _, s := range k.srv.Snapshots() {
		if !s.Removed {
			snapshotAt(t, strings.TrimPrefix(s.Location, "file:"), true, 10)
		}
	}
	foreign := filepath.Join(sp, "savepoint-ffffff-0123456789ab")
	snapshotAt(t, foreign, true, 10)
	dispose := k.st.Disposing.Location
	ctrl := k.controller()
	before := len(k.srv.Requests())
	a, err := ctrl.Audit(context.Background(), spec, k.st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", a)
	if n := len(k.srv.Requests()) - before; n != 1 || a.FlinkRequests != 1 {
		t.Errorf("%d requests to Flink (%d counted), want 1: the checkpoint statistics", n, a.FlinkRequests)
	}
	kinds := map[string]AuditKind{}
	for _, e := range a.Entries {
		kinds[canonical(e.Path)] = e.Kind
	}
	missing := 0
	for _, r := range k.st.Savepoints.Records {
		switch k := kinds[canonical(r.Location)]; {
		case k == AuditMissing && r.Location == dispose:
			// Flink disposed of it; its record goes at the next call.
			missing++
		case k != AuditInHistory && k != AuditRestorePoint:
			t.Errorf("history record %s: %q, want it found", r.Location, k)
		}
	}
	if kinds[canonical(k.st.Latest.Location)] != AuditRestorePoint {
		t.Errorf("latest %s: %q, want RestorePoint", k.st.Latest.Location, kinds[canonical(k.st.Latest.Location)])
	}
	if kinds[foreign] != AuditForeign {
		t.Errorf("foreign savepoint: %q", kinds[foreign])
	}
	if a.Count(AuditMissing) != missing || a.Count(AuditUnrecorded)+a.Count(AuditUnread) != 0 || a.Count(AuditRetained) == 0 {
		t.Errorf("totals %+v: want no Missing, Unrecorded or Unread, and the running job's retained checkpoints", a.Totals)
	}
	for _, e := range a.Entries {
		switch {
		case strings.Contains(e.Path, string(k.st.JobID)) && e.Kind != AuditRetained && e.Kind != AuditIncomplete && e.Kind != AuditRestorePoint:
			t.Errorf("%s of the running job: %s", e.Path, e.Kind)
		case strings.Contains(e.Path, filepath.Join(ck, string(old))) && e.Kind != AuditReplaced && e.Kind != AuditRestorePoint:
			t.Errorf("%s of the replaced job: %s", e.Path, e.Kind)
		}
	}
	if !slices.ContainsFunc(a.Dirs, func(d string) bool { return canonical(d) == ck }) {
		t.Errorf("dirs %v: the checkpoint directory %s is not among them", a.Dirs, ck)
	}
}

// TestAuditRestorePointsAsTheLedgerKeepsThem: the state the job started
// from is a restore point while the job stands on it (no savepoint of
// its own), and the upgrade's restore point until the deployment is
// deleted; afterwards they are what they are on storage, as the ledger
// no longer keeps them.
func TestAuditRestorePointsAsTheLedgerKeepsThem(t *testing.T) {
	root := t.TempDir()
	spec, st, _ := auditLayout(t, root)
	kindOf := func(st JobStatus, loc string) AuditKind {
		t.Helper()
		a, err := (&Controller{Storage: LocalStorage{}, Name: "app/audit"}).Audit(context.Background(), spec, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range a.Entries {
			if strings.TrimPrefix(e.Path, "file://") == strings.TrimPrefix(loc, "file://") {
				return e.Kind
			}
		}
		t.Fatalf("%s is not in the audit:\n%s", loc, a)
		return ""
	}
	standing := *st.DeepCopy()
	standing.Savepoints = savepoint.History{}
	standing.Latest = savepoint.Record{}
	if k := kindOf(standing, st.RestoredFrom); k != AuditRestorePoint {
		t.Errorf("the state the job stands on: %s, want RestorePoint", k)
	}
	if k := kindOf(st, st.RestoredFrom); k != AuditReplaced {
		t.Errorf("the state the job started from, once it has savepoints of its own: %s, want Replaced", k)
	}
	if k := kindOf(st, st.UpgradeFrom.Location); k != AuditRestorePoint {
		t.Errorf("the upgrade's restore point: %s, want RestorePoint", k)
	}
	gone := *st.DeepCopy()
	gone.Deleted = true
	if k := kindOf(gone, st.UpgradeFrom.Location); k == AuditRestorePoint {
		t.Errorf("the upgrade's restore point after the deployment was deleted: %s", k)
	}
}
