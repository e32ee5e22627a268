package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// makeCheckpoints writes fake retained checkpoints of job under dir:
// chk-N directories with a _metadata file, shared/ with a file, and an
// empty taskowned/.
func makeCheckpoints(t *testing.T, dir string, job flinkapi.JobID, ids ...int64) {
	t.Helper()
	base := filepath.Join(dir, string(job))
	for _, sub := range []string{"shared", "taskowned"} {
		if err := os.MkdirAll(filepath.Join(base, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "shared", "state-1"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		chk := filepath.Join(base, fmt.Sprintf("chk-%d", id))
		if err := os.MkdirAll(chk, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chk, "_metadata"), []byte("m"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// entries are the names in dir/job, sorted; nil when it does not exist.
func entries(t *testing.T, dir string, job flinkapi.JobID) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, string(job)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// checkpointID is the N of a location .../chk-N.
func checkpointID(t *testing.T, loc string) int64 {
	t.Helper()
	_, n, ok := strings.Cut(filepath.Base(loc), "chk-")
	id, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%q is no checkpoint location", loc)
	}
	return id
}

// recordingStorage is a Storage that records its calls and fails the
// Deletes while fail says so.
type recordingStorage struct {
	Storage
	mu      sync.Mutex
	lists   int
	deletes []string
	fail    func(n int) bool // by the number of the Delete, from 1
	// before, if set, runs before each List.
	before func()
}

func (s *recordingStorage) List(ctx context.Context, dir string) ([]string, error) {
	s.mu.Lock()
	s.lists++
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before()
	}
	return s.Storage.List(ctx, dir)
}

// mirrorCheckpoints writes, as makeCheckpoints does, the checkpoints the
// fake holds (not discarded) under dir to the local disk, where a
// LocalStorage reads them as it would Flink's.
func mirrorCheckpoints(t *testing.T, srv *flinktest.Server, dir string) {
	t.Helper()
	for _, sn := range srv.Snapshots() {
		loc := strings.TrimPrefix(strings.TrimPrefix(sn.Location, "file://"), "file:")
		if sn.Savepoint || sn.Removed || !within(loc, dir) {
			continue
		}
		if _, err := os.Stat(filepath.Join(loc, "_metadata")); err != nil {
			makeCheckpoints(t, dir, sn.Job, sn.CheckpointID)
		}
	}
}

func (s *recordingStorage) Delete(ctx context.Context, path string) error {
	s.mu.Lock()
	s.deletes = append(s.deletes, path)
	n := len(s.deletes)
	s.mu.Unlock()
	if s.fail != nil && s.fail(n) {
		return errors.New("injected: storage unavailable")
	}
	return s.Storage.Delete(ctx, path)
}

func (s *recordingStorage) calls() (lists, deletes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, len(s.deletes)
}

// retainedCluster is a fake cluster whose checkpoints lie under a
// temporary directory, the Controller's Storage a LocalStorage of it
// (nil: none) wrapped in a recordingStorage.
func retainedCluster(t *testing.T, resume, withStorage bool) (*cluster, string, *recordingStorage) {
	t.Helper()
	dir := t.TempDir()
	k := newCluster(t, resume, flinktest.WithCheckpointDir(dir))
	var rs *recordingStorage
	if withStorage {
		rs = &recordingStorage{Storage: LocalStorage{}}
		k.storage = rs
	}
	return k, dir, rs
}

// upgradeTo changes the spec's output (and so its template) and calls
// until the upgrade ended; it returns the replaced job.
func upgradeTo(t *testing.T, k *cluster, spec *JobSpec, out string, mode policy.UpgradeMode) flinkapi.JobID {
	t.Helper()
	old := k.st.JobID
	spec.Update.Mode = mode
	spec.Job.Args = slices.Clone(spec.Job.Args)
	spec.Job.Args[1] = out
	k.until("upgrade to "+out, *spec, 300, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Done() && !st.InFlight() && st.Target.equal(spec.Job)
	})
	if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old || k.st.Progress.Replace.PreviousJobID != old {
		t.Fatalf("upgrade: %s (%s), job %s, replaced %s", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, k.st.Progress.Replace.PreviousJobID)
	}
	return old
}

// rest settles the deployment and calls on at rest for 20 s.
func rest(k *cluster, spec JobSpec) {
	k.t.Helper()
	k.settle("settle", spec)
	k.run(spec, 20*time.Second)
}

// TestRetainedCheckpointsRemoved: after an upgrade from a savepoint the
// replaced job's retained checkpoints are removed once the new job
// completed a checkpoint of its own: its chk-N directories, shared/,
// taskowned/ and its directory; the new job's own checkpoints stay.
// Uninterrupted and with the status sent through JSON after every call.
func TestRetainedCheckpointsRemoved(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k, dir, rs := retainedCluster(t, resume, true)
			spec := k.spec("/out")
			k.settle("create", spec)
			old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
			if len(k.st.Replaced) != 1 || k.st.Replaced[0].JobID != old || k.st.Replaced[0].NewJobID != k.st.JobID || k.st.Replaced[0].Checkpointed {
				t.Fatalf("replaced: %+v", k.st.Replaced)
			}
			makeCheckpoints(t, dir, old, 4, 5, 6)
			makeCheckpoints(t, dir, k.st.JobID, 1)
			rest(k, spec)
			if e := entries(t, dir, old); e != nil {
				t.Errorf("the replaced job's directory holds %v, want it removed", e)
			}
			if e := entries(t, dir, k.st.JobID); !slices.Contains(e, "chk-1") {
				t.Errorf("the new job's directory holds %v, want its chk-1", e)
			}
			if len(k.st.Replaced) != 0 {
				t.Errorf("replaced: %+v, want none left", k.st.Replaced)
			}
			if _, deletes := rs.calls(); deletes != 4 {
				t.Errorf("%d deletes (%v), want 4: chk-4, chk-5, chk-6 and the directory", deletes, rs.deletes)
			}
		})
	}
}

// TestRetainedNothingBeforeNewCheckpoint: while the new job has not
// completed a checkpoint, nothing of the replaced job is removed, and
// the Storage is listed only by the audit after the upgrade ended.
func TestRetainedNothingBeforeNewCheckpoint(t *testing.T) {
	k, dir, rs := retainedCluster(t, false, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "3600000"}
	old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
	makeCheckpoints(t, dir, old, 1, 2)
	k.run(spec, time.Minute)
	if e := entries(t, dir, old); len(e) != 4 {
		t.Errorf("the replaced job's directory holds %v, want all of it", e)
	}
	if len(k.st.Replaced) != 1 || k.st.Replaced[0].Checkpointed {
		t.Errorf("replaced: %+v", k.st.Replaced)
	}
	if lists, deletes := rs.calls(); deletes != 0 || k.st.Audit == nil || lists != k.st.Audit.Requests || lists == 0 {
		t.Errorf("%d lists and %d deletes, want none but the lists of the audit after the upgrade (%+v)", lists, deletes, k.st.Audit)
	}
}

// TestRetainedStorageNil: without a Storage nothing is recorded nor
// removed.
func TestRetainedStorageNil(t *testing.T) {
	k, dir, _ := retainedCluster(t, false, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
	makeCheckpoints(t, dir, old, 1, 2)
	rest(k, spec)
	if e := entries(t, dir, old); len(e) != 4 {
		t.Errorf("the replaced job's directory holds %v, want all of it", e)
	}
	if k.st.Replaced != nil {
		t.Errorf("replaced: %+v, want none", k.st.Replaced)
	}
}

// TestRetainedClaimModes: an upgrade from the replaced job's newest
// retained checkpoint (LastState) under each claim mode, then an upgrade
// from a savepoint. While the status names the restored checkpoint
// (UpgradeFrom, Latest), it stays with shared/ in every mode; the
// replaced job's other checkpoints go. Once the status names it no more,
// NO_CLAIM (also as Flink's default, unset) removes it and the
// directory; CLAIM and LEGACY keep it and shared/ for good. The local
// disk mirrors the fake's checkpoints until the first upgrade ends, so
// that the storage shows the restore point where Flink wrote it.
func TestRetainedClaimModes(t *testing.T) {
	for _, mode := range []flinkapi.ClaimMode{"", flinkapi.ClaimModeNoClaim, flinkapi.ClaimModeClaim, flinkapi.ClaimModeLegacy} {
		t.Run("mode="+string(mode), func(t *testing.T) {
			k, dir, rs := retainedCluster(t, true, true)
			rs.before = func() { mirrorCheckpoints(t, k.srv, dir) } // the restore point is read on storage
			spec := k.spec("/out")
			k.settle("create", spec)
			k.run(spec, 10*time.Second)
			if mode != "" {
				spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
					"execution.state-recovery.claim-mode": string(mode)}
			}
			first := upgradeTo(t, k, &spec, "/out2", policy.UpgradeLastState)
			rs.mu.Lock()
			rs.before = nil // the removals are read on the local disk from now on
			rs.mu.Unlock()
			restored := k.st.Progress.Replace.RestoreFrom
			if !within(restored, filepath.Join(dir, string(first))) || k.st.UpgradeFrom.Location != restored {
				t.Fatalf("restored from %q, upgrade from %q: want a checkpoint of %s", restored, k.st.UpgradeFrom.Location, first)
			}
			x := checkpointID(t, restored)
			makeCheckpoints(t, dir, first, x-2, x-1, x)
			if r := k.st.Replaced; len(r) != 1 || r[0].ClaimMode != mode || r[0].Restored != restored || r[0].CheckpointDir == "" {
				t.Fatalf("replaced: %+v", r)
			}
			rest(k, spec)
			kept := []string{fmt.Sprintf("chk-%d", x), "shared", "taskowned"}
			if e := entries(t, dir, first); !slices.Equal(e, kept) {
				t.Errorf("after the first upgrade: %v, want %v", e, kept)
			}
			if r := k.st.Replaced; len(r) != 1 || !r[0].Checkpointed || !r[0].Waiting {
				t.Errorf("after the first upgrade: replaced %+v, want the first job's record waiting", r)
			}

			upgradeTo(t, k, &spec, "/out3", policy.UpgradeSavepoint)
			rest(k, spec)
			e := entries(t, dir, first)
			switch mode {
			case flinkapi.ClaimModeClaim, flinkapi.ClaimModeLegacy:
				if !slices.Equal(e, kept) {
					t.Errorf("after the second upgrade: %v, want %v", e, kept)
				}
			default:
				if e != nil {
					t.Errorf("after the second upgrade: %v, want the directory removed", e)
				}
			}
			if len(k.st.Replaced) != 0 {
				t.Errorf("after the second upgrade: replaced %+v, want none", k.st.Replaced)
			}
		})
	}
}

// TestRetainedDeleteRetried: failed deletes are kept in the status as a
// typed error, tried again at later calls, and never hold the job up;
// a storage that always fails is given up after MaxCleanupAttempts.
func TestRetainedDeleteRetried(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		k, dir, rs := retainedCluster(t, true, true)
		rs.fail = func(n int) bool { return n <= 2 }
		spec := k.spec("/out")
		k.settle("create", spec)
		old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
		makeCheckpoints(t, dir, old, 1, 2)
		k.settle("settle", spec)
		seen := false
		k.until("cleaned", spec, 100, func(st *JobStatus) bool {
			if len(st.Replaced) == 1 && st.Replaced[0].Error == CleanupDeleteFailed {
				seen = true
				if st.State != policy.Running || st.InFlight() {
					t.Errorf("state %s, in flight %v: the failed delete holds the job up", st.State, st.InFlight())
				}
			}
			return len(st.Replaced) == 0
		})
		if !seen {
			t.Error("the failed delete was not recorded")
		}
		if e := entries(t, dir, old); e != nil {
			t.Errorf("the replaced job's directory holds %v", e)
		}
		if !k.st.Converged(spec) {
			t.Errorf("not converged: %s %s", k.st.State, k.st.Reason)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		k, dir, rs := retainedCluster(t, false, true)
		rs.fail = func(int) bool { return true }
		spec := k.spec("/out")
		k.settle("create", spec)
		old := upgradeTo(t, k, &spec, "/out2", policy.UpgradeSavepoint)
		makeCheckpoints(t, dir, old, 1)
		rest(k, spec)
		k.run(spec, time.Duration(MaxCleanupAttempts)*10*time.Second)
		_, deletes := rs.calls()
		if r := k.st.Replaced; len(r) != 1 || r[0].Attempts != MaxCleanupAttempts || r[0].Error != CleanupDeleteFailed || deletes != MaxCleanupAttempts {
			t.Errorf("replaced %+v after %d deletes", r, deletes)
		}
		if !k.st.Converged(spec) {
			t.Errorf("not converged: %s %s", k.st.State, k.st.Reason)
		}
		if e := entries(t, dir, old); len(e) != 3 {
			t.Errorf("the replaced job's directory holds %v", e)
		}
	})
}

// TestRetainedReferencesKept: every location the status, the spec and
// the restore-point store name is kept, with the shared files of its
// job's directory, and the record waits for it; in flight nothing is
// touched; a status whose write was lost after the deletes does them
// again without harm.
func TestRetainedReferencesKept(t *testing.T) {
	dir := t.TempDir()
	old := flinkapi.JobID("0123456789abcdef0123456789abcdef")
	chk := func(n int) string { return fmt.Sprintf("file:%s/%s/chk-%d", dir, old, n) }
	base := func() JobStatus {
		return JobStatus{JobID: "fedcba9876543210fedcba9876543210", Replaced: []ReplacedJob{{JobID: old, CheckpointDir: "file://" + dir,
			NewJobID: "fedcba9876543210fedcba9876543210", Checkpointed: true}}}
	}
	store := &MemoryStore{}
	cases := map[string]func(spec *JobSpec, st *JobStatus){
		"Latest":      func(_ *JobSpec, st *JobStatus) { st.Latest = savepoint.Record{Location: chk(3)} },
		"UpgradeFrom": func(_ *JobSpec, st *JobStatus) { st.UpgradeFrom = savepoint.Record{Location: chk(3) + "/"} },
		"Savepoints": func(_ *JobSpec, st *JobStatus) {
			st.Savepoints = st.Savepoints.Add(savepoint.Record{Location: strings.Replace(chk(3), "file:", "file://", 1)})
		},
		"Restore.Path": func(spec *JobSpec, _ *JobStatus) {
			spec.Restore = policy.RestoreRequest{Path: chk(3) + "/_metadata", Token: "t"}
		},
		"Store": func(_ *JobSpec, _ *JobStatus) {
			if err := store.Put(context.Background(), "app/counter", savepoint.Record{Location: chk(3)}); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			store.Delete(context.Background(), "app/counter")
			makeCheckpoints(t, dir, old, 1, 2, 3)
			defer os.RemoveAll(filepath.Join(dir, string(old)))
			c := &Controller{Storage: LocalStorage{}, Store: store, Name: "app/counter"}
			spec, st := JobSpec{}, base()
			setup(&spec, &st)
			c.cleanupRetained(context.Background(), spec, &st, Observation{}, Plan{Settled: true})
			if e := entries(t, dir, old); !slices.Equal(e, []string{"chk-3", "shared", "taskowned"}) {
				t.Errorf("left %v, want chk-3, shared and taskowned", e)
			}
			if len(st.Replaced) != 1 || !st.Replaced[0].Waiting || st.Replaced[0].Error != "" {
				t.Errorf("replaced %+v, want it waiting", st.Replaced)
			}
		})
	}
	t.Run("in flight", func(t *testing.T) {
		makeCheckpoints(t, dir, old, 1)
		defer os.RemoveAll(filepath.Join(dir, string(old)))
		rs := &recordingStorage{Storage: LocalStorage{}}
		st := base()
		st.Action, st.Progress = ActionSavepoint, Progress{Phase: PhaseSavepoint}
		(&Controller{Storage: rs}).cleanupRetained(context.Background(), JobSpec{}, &st, Observation{}, Plan{Settled: true})
		if lists, deletes := rs.calls(); lists+deletes != 0 || len(entries(t, dir, old)) != 3 {
			t.Errorf("%d lists, %d deletes in flight", lists, deletes)
		}
	})
	t.Run("lost status write", func(t *testing.T) {
		makeCheckpoints(t, dir, old, 1, 2)
		c := &Controller{Storage: LocalStorage{}}
		stored := base()
		for i := range 2 {
			st := *stored.DeepCopy() // the write after the first call is lost
			c.cleanupRetained(context.Background(), JobSpec{}, &st, Observation{}, Plan{Settled: true})
			if len(st.Replaced) != 0 || entries(t, dir, old) != nil {
				t.Errorf("call %d: replaced %+v, left %v", i, st.Replaced, entries(t, dir, old))
			}
		}
	})
}

// TestRetainedRemovals is the rule over the entries of a replaced job's
// directory.
func TestRetainedRemovals(t *testing.T) {
	const dir = "s3://bucket/ckpt/j1"
	ents := []string{dir + "/chk-1", dir + "/chk-2/", dir + "/chk-3", dir + "/shared", dir + "/taskowned"}
	cases := []struct {
		name     string
		mode     flinkapi.ClaimMode
		restored string
		refs     []string
		extra    []string
		want     []string
		wait     bool
	}{
		{name: "no claim", restored: dir + "/chk-3", want: []string{"chk-1", "chk-2", "chk-3", "j1"}},
		{name: "NO_CLAIM", mode: flinkapi.ClaimModeNoClaim, restored: dir + "/chk-3", want: []string{"chk-1", "chk-2", "chk-3", "j1"}},
		{name: "CLAIM", mode: flinkapi.ClaimModeClaim, restored: dir + "/chk-3", want: []string{"chk-1", "chk-2"}},
		{name: "LEGACY", mode: flinkapi.ClaimModeLegacy, restored: dir + "/chk-3/_metadata", want: []string{"chk-1", "chk-2"}},
		{name: "unknown mode", mode: "claim-all", restored: dir + "/chk-3", want: []string{"chk-1", "chk-2"}},
		{name: "CLAIM of a savepoint", mode: flinkapi.ClaimModeClaim, restored: "s3://bucket/sp/savepoint-1", want: []string{"chk-1", "chk-2", "chk-3", "j1"}},
		{name: "referenced", restored: "s3://bucket/sp/savepoint-1", refs: []string{dir + "/chk-2"}, want: []string{"chk-1", "chk-3"}, wait: true},
		{name: "referenced dir", refs: []string{"s3://bucket/ckpt"}, want: nil, wait: true},
		{name: "other entry", extra: []string{dir + "/README"}, want: []string{"chk-1", "chk-2", "chk-3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &ReplacedJob{JobID: "j1", CheckpointDir: "s3://bucket/ckpt", ClaimMode: tc.mode, Restored: tc.restored}
			got := retainedRemovals(dir, append(slices.Clone(ents), tc.extra...), r, tc.refs)
			var names []string
			for _, p := range got.delete {
				names = append(names, filepath.Base(strings.TrimSuffix(p, "/")))
			}
			if !slices.Equal(names, tc.want) || got.wait != tc.wait {
				t.Errorf("deletes %v (wait %v), want %v (wait %v)", names, got.wait, tc.want, tc.wait)
			}
		})
	}
}

// TestNoteReplaced: a replaced job is recorded once with its checkpoint
// directory and the new job's claim mode; a record of a job replaced by
// one that is replaced in turn before it completed a checkpoint waits
// for the newer job; the records are bounded.
func TestNoteReplaced(t *testing.T) {
	c := &Controller{Storage: LocalStorage{}}
	st := JobStatus{JobID: "a", Target: JobTemplate{FlinkConfiguration: map[string]string{"execution.savepoint-restore-mode": "claim"}}}
	st.Progress = Progress{Operation: opUpgrade, Outcome: OutcomeSucceeded, Replace: ReplaceProgress{PreviousJobID: "a", RestoreFrom: "file:/ck/a/chk-7"}, Submit: SubmitProgress{NewJobID: "b"}}
	c.noteReplaced(&st)
	c.noteReplaced(&st) // a call replayed after a lost status write
	want := ReplacedJob{JobID: "a", CheckpointDir: "file:/ck", NewJobID: "b", Restored: "file:/ck/a/chk-7", ClaimMode: flinkapi.ClaimModeClaim}
	if len(st.Replaced) != 1 || st.Replaced[0] != want {
		t.Fatalf("replaced %+v, want %+v", st.Replaced, want)
	}
	// b is replaced before it completed a checkpoint, by c from a's
	// checkpoint: a's record keeps its claim (b may share a's files).
	st.JobID, st.Target = "b", JobTemplate{}
	st.Progress = Progress{Operation: opUpgrade, Outcome: OutcomeSucceeded, Replace: ReplaceProgress{PreviousJobID: "b", RestoreFrom: "file:/sp/savepoint-1"}, Submit: SubmitProgress{NewJobID: "c"}}
	c.noteReplaced(&st)
	if r := st.Replaced; len(r) != 2 || r[0].NewJobID != "c" || r[0].ClaimMode != flinkapi.ClaimModeClaim || r[1].JobID != "b" || r[1].CheckpointDir != "" {
		t.Fatalf("replaced %+v", r)
	}
	for i := range MaxReplacedJobs + 2 {
		prev, next := st.JobID, flinkapi.JobID(fmt.Sprint("j", i))
		st.JobID, st.Progress = prev, Progress{Operation: opUpgrade, Outcome: OutcomeSucceeded, Replace: ReplaceProgress{PreviousJobID: prev}, Submit: SubmitProgress{NewJobID: next}}
		c.noteReplaced(&st)
		st.JobID = next
	}
	if len(st.Replaced) != MaxReplacedJobs {
		t.Errorf("%d records, want %d", len(st.Replaced), MaxReplacedJobs)
	}
	// Not for an action that failed with the old job running, nor
	// without a Storage.
	st2 := JobStatus{JobID: "x", Progress: Progress{Operation: opUpgrade, Outcome: OutcomeTimedOut, Replace: ReplaceProgress{PreviousJobID: "x"}, Submit: SubmitProgress{NewJobID: "y"}}}
	c.noteReplaced(&st2)
	st3 := JobStatus{JobID: "x", Progress: Progress{Operation: opUpgrade, Outcome: OutcomeSucceeded, Replace: ReplaceProgress{PreviousJobID: "x"}, Submit: SubmitProgress{NewJobID: "y"}}}
	(&Controller{}).noteReplaced(&st3)
	if st2.Replaced != nil || st3.Replaced != nil {
		t.Errorf("recorded %+v, %+v", st2.Replaced, st3.Replaced)
	}
}

// TestLocalStorage: file: URIs and absolute paths; a missing directory
// lists empty and deletes without error; relative paths, "..", other
// schemes, other hosts and the root are refused.
func TestLocalStorage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	makeCheckpoints(t, dir, "j", 1)
	var s LocalStorage
	for _, form := range []string{"file:" + dir + "/j", "file://" + dir + "/j", "file://localhost" + dir + "/j/", dir + "/j"} {
		got, err := s.List(ctx, form)
		prefix := strings.TrimSuffix(form, "/") + "/"
		want := []string{prefix + "chk-1", prefix + "shared", prefix + "taskowned"}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("List(%q) = %v, %v; want %v", form, got, err, want)
		}
	}
	if got, err := s.List(ctx, "file:"+dir+"/missing"); err != nil || len(got) != 0 {
		t.Errorf("List of a missing directory: %v, %v", got, err)
	}
	if err := s.Delete(ctx, "file://"+dir+"/j/chk-1"); err != nil || slices.Contains(entries(t, dir, "j"), "chk-1") {
		t.Errorf("Delete: %v, left %v", err, entries(t, dir, "j"))
	}
	if err := s.Delete(ctx, "file:"+dir+"/j/chk-1"); err != nil {
		t.Errorf("Delete of a missing path: %v", err)
	}
	for _, bad := range []string{"ckpt/j", "file:ckpt/j", dir + "/j/../j", "file:" + dir + "/../x", "s3://bucket/j", "file://host/x", "/", "file:///"} {
		if _, err := s.List(ctx, bad); !errors.Is(err, ErrStoragePath) {
			t.Errorf("List(%q): %v, want ErrStoragePath", bad, err)
		}
		if err := s.Delete(ctx, bad); !errors.Is(err, ErrStoragePath) {
			t.Errorf("Delete(%q): %v, want ErrStoragePath", bad, err)
		}
	}
	if e := entries(t, dir, "j"); !slices.Equal(e, []string{"shared", "taskowned"}) {
		t.Errorf("left %v", e)
	}
}

// TestRetainedWaitsForOwnCheckpoint: at rest, with the checkpoint
// directory known, nothing is removed while the running job's
// statistics show no completed checkpoint of its own (none, the one it
// restored, a savepoint); one triggered after its start frees the
// replaced job's checkpoints in the same call.
func TestRetainedWaitsForOwnCheckpoint(t *testing.T) {
	dir := t.TempDir()
	old, nw := flinkapi.JobID("0123456789abcdef0123456789abcdef"), flinkapi.JobID("fedcba9876543210fedcba9876543210")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	restored := flinkapi.CheckpointStats{ID: 7, Status: flinkapi.CheckpointCompleted, TriggerTime: start.Add(-time.Minute),
		ExternalPath: fmt.Sprintf("file:%s/%s/chk-7", dir, old)}
	sp := flinkapi.CheckpointStats{ID: 8, Status: flinkapi.CheckpointCompleted, IsSavepoint: true, TriggerTime: start.Add(time.Second),
		ExternalPath: "file:/sp/savepoint-1"}
	own := flinkapi.CheckpointStats{ID: 9, Status: flinkapi.CheckpointCompleted, TriggerTime: start.Add(2 * time.Second),
		ExternalPath: fmt.Sprintf("file:%s/%s/chk-9", dir, nw)}
	makeCheckpoints(t, dir, old, 5, 6, 7)
	c := &Controller{Storage: LocalStorage{}}
	st := JobStatus{JobID: nw, Replaced: []ReplacedJob{{JobID: old, NewJobID: nw, CheckpointDir: "file:" + dir}}}
	job := &flinkapi.JobDetails{State: flinkapi.JobRunning, StartTime: start}
	if !c.awaitsCheckpoint(&st, job) {
		t.Error("the observation does not read the new job's checkpoints")
	}
	for _, stats := range []*flinkapi.CheckpointStatistics{nil, {}, {LatestCompleted: &restored}, {LatestCompleted: &sp, History: []flinkapi.CheckpointStats{sp, restored}}} {
		c.cleanupRetained(context.Background(), JobSpec{}, &st, Observation{Job: job, Checkpoints: stats}, Plan{Settled: true})
		if len(entries(t, dir, old)) != 5 || len(st.Replaced) != 1 || st.Replaced[0].Checkpointed {
			t.Fatalf("statistics %+v: left %v, replaced %+v", stats, entries(t, dir, old), st.Replaced)
		}
	}
	stats := &flinkapi.CheckpointStatistics{LatestCompleted: &sp, History: []flinkapi.CheckpointStats{sp, own, restored}}
	c.cleanupRetained(context.Background(), JobSpec{}, &st, Observation{Job: job, Checkpoints: stats}, Plan{Settled: true})
	if e := entries(t, dir, old); e != nil || len(st.Replaced) != 0 {
		t.Errorf("left %v, replaced %+v", e, st.Replaced)
	}
	if c.awaitsCheckpoint(&st, job) {
		t.Error("the checkpoints are still read")
	}
}

// TestRetainedCanaryAndAbortedRemoved: the retained checkpoints of a
// canary (cancelled once healthy, then the upgrade) and of a blue/green
// upgrade's new job that was aborted (cancelled, the old job running on)
// are removed like a replaced job's, once the deployment's job completed
// a checkpoint of its own; the deployment's jobs' own stay.
func TestRetainedCanaryAndAbortedRemoved(t *testing.T) {
	k, dir, _ := retainedCluster(t, true, true)
	spec := k.spec("/out")
	spec.BlueGreen = BlueGreenPolicy{Enabled: true, Canary: true, Window: policy.Duration(time.Minute)}
	k.settle("create", spec)
	old := k.st.JobID
	canary := canaryJobID(old)
	makeCheckpoints(t, dir, canary, 3)
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.until("canary and upgrade", spec, 400, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && !st.InFlight() && st.State == policy.Running && st.Deployed.equal(spec.Job)
	})
	if !slices.ContainsFunc(k.st.Replaced, func(r ReplacedJob) bool { return r.JobID == canary }) {
		t.Fatalf("the canary %s is not recorded: %+v", canary, k.st.Replaced)
	}
	makeCheckpoints(t, dir, k.st.JobID, 1)
	rest(k, spec)
	if e := entries(t, dir, canary); e != nil {
		t.Errorf("the canary's directory holds %v, want it removed", e)
	}

	// A blue/green upgrade whose new job fails: aborted, the job runs on.
	spec.BlueGreen = BlueGreenPolicy{Enabled: true, Window: policy.Duration(time.Minute)}
	running := k.st.JobID
	bg := blueGreenJobID(running)
	makeCheckpoints(t, dir, bg, 2)
	bad := spec
	bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--fail-at", "1")
	k.until("aborted", bad, 400, func(st *JobStatus) bool { return st.Action == ActionBlueGreen && st.Progress.Done() && !st.InFlight() })
	if k.st.Progress.Outcome != OutcomeBlueGreenAborted || k.st.JobID != running {
		t.Fatalf("blue/green: %s (%s), job %s (running %s)", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, running)
	}
	if !slices.ContainsFunc(k.st.Replaced, func(r ReplacedJob) bool { return r.JobID == bg }) {
		t.Fatalf("the aborted job %s is not recorded: %+v", bg, k.st.Replaced)
	}
	makeCheckpoints(t, dir, running, 7)
	rest(k, spec) // the spec back to the job that runs: at rest

	if e := entries(t, dir, bg); e != nil {
		t.Errorf("the aborted job's directory holds %v, want it removed", e)
	}
	if e := entries(t, dir, running); !slices.Contains(e, "chk-7") {
		t.Errorf("the running job's directory holds %v, want its chk-7", e)
	}
}

// TestRetainedNeverTheDeploymentsJob: a record of the retained
// checkpoints of a job that is the deployment's job now (the id of a
// job a canary or blue/green upgrade cancelled, run again) is dropped
// at the cleanup, its checkpoints never removed.
func TestRetainedNeverTheDeploymentsJob(t *testing.T) {
	dir := t.TempDir()
	const job = flinkapi.JobID("0123456789abcdef0123456789abcdef")
	makeCheckpoints(t, dir, job, 1, 2)
	rs := &recordingStorage{Storage: LocalStorage{}}
	c := &Controller{Storage: rs}
	st := JobStatus{JobID: job, Replaced: []ReplacedJob{{JobID: job, CheckpointDir: dir, NewJobID: job, Checkpointed: true}}}
	c.cleanupRetained(context.Background(), JobSpec{}, &st, Observation{}, Plan{Settled: true})
	if _, deletes := rs.calls(); deletes != 0 || len(st.Replaced) != 0 || len(entries(t, dir, job)) == 0 {
		t.Errorf("%d deletes, replaced %+v, left %v", deletes, st.Replaced, entries(t, dir, job))
	}
}
