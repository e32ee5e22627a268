package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/filelock"
	"github.com/flinkkit/flinkkit/internal/testkit/formattest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/google/go-cmp/cmp"
)

func newStore(t *testing.T) *DirStore {
	t.Helper()
	s, err := NewDirStore(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(name string, parallelism int) *Record {
	return &Record{Name: name, Spec: lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarFile: "/jobs/" + name + ".jar", Parallelism: parallelism}}}
}

// golden reads the newest fixture of a lifecycle stored type: every
// field set.
func golden[T any](t *testing.T, kind string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(filepath.Join("..", "lifecycle", "testdata", "golden", kind+"-v"+itoa(lifecycle.FormatVersion)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestDirStoreRoundTripsAFullRecord saves a record whose spec, applied
// spec and status have every field set, and reads it back equal through
// Load and List.
func TestDirStoreRoundTripsAFullRecord(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	spec := golden[lifecycle.JobSpec](t, "jobspec")
	applied := golden[lifecycle.JobSpec](t, "jobspec")
	applied.Job.Parallelism++
	adoptSpec := golden[lifecycle.JobSpec](t, "jobspec")
	adoptSpec.Job.Parallelism += 2
	rec := Record{FormatVersion: FormatVersion, Name: "orders", Cluster: "east", Application: "shop", Spec: spec, Applied: &applied,
		AdoptName: "orders-by-hand", Adopting: "a1b2c3d4e5f60718293a4b5c6d7e8f90", AdoptSpec: &adoptSpec,
		Status: golden[lifecycle.JobStatus](t, "jobstatus"), Removed: true}
	// A trigger in flight as older formats recorded it: the fixture of
	// the newest format has none.
	rec.Status.Checkpoint.TriggerID, rec.Status.Checkpoint.Sent = "trigger-1", true
	if unset := formattest.Unset(rec); len(unset) != 0 {
		t.Fatalf("the record leaves fields unset, which the round trip would not cover: %v", unset)
	}
	if err := s.Save(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.FormatVersion != FormatVersion {
		t.Errorf("Save set FormatVersion %d; want %d", rec.FormatVersion, FormatVersion)
	}
	got, ok, err := s.Load(ctx, "orders")
	if err != nil || !ok {
		t.Fatalf("Load: %v, %v", ok, err)
	}
	if d := cmp.Diff(rec, got); d != "" {
		t.Errorf("Load after Save (-saved +loaded):\n%s", d)
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("List: %d records, %v", len(all), err)
	}
	if d := cmp.Diff(rec, all[0]); d != "" {
		t.Errorf("List after Save (-saved +listed):\n%s", d)
	}
}

func TestDirStoreLoadListDelete(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, ok, err := s.Load(ctx, "none"); ok || err != nil {
		t.Fatalf("Load of a missing record: %v, %v; want false, nil", ok, err)
	}
	for _, n := range []string{"b", "a", "c.v2"} {
		if err := s.Save(ctx, record(n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	all, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range all {
		names = append(names, r.Name)
	}
	if d := cmp.Diff([]string{"a", "c.v2"}, names); d != "" {
		t.Errorf("List after deleting b (-want +got):\n%s", d)
	}
}

func TestDirStoreRefusesUnsafeNames(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for _, n := range []string{"", ".", "..", "../x", "a//b", "a/", "/a", "a/../b", "a~b", ".hidden", "-a", "a b", "é", strings.Repeat("a", 254)} {
		err := s.Save(ctx, record(n, 1))
		if err == nil || (n != "" && !strings.Contains(err.Error(), `"`+n+`"`)) {
			t.Errorf("Save of %q: %v; want an error naming it", n, err)
		}
		if n == "" {
			continue
		}
		if _, _, err := s.Load(ctx, n); err == nil || !strings.Contains(err.Error(), "not a safe file name") {
			t.Errorf("Load of %q: %v; want the name refused", n, err)
		}
		if err := s.Delete(ctx, n); err == nil {
			t.Errorf("Delete of %q: no error", n)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(s.dir))
	if len(entries) != 1 {
		t.Errorf("refused names left files beside the store: %v", entries)
	}
}

// TestDirStoreRefusesNewerFormats checks that a record of a newer format
// is refused by Load and List and never written over by Save.
func TestDirStoreRefusesNewerFormats(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	newer := []byte(`{"formatVersion": 2, "name": "orders", "spec": {"job": {"jarFile": 7}}, "future": true}`)
	if err := os.WriteFile(s.path("orders"), newer, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Load(ctx, "orders")
	if !errors.Is(err, lifecycle.ErrUnknownFormat) || !strings.Contains(err.Error(), "fleet.Record: format version 2") {
		t.Errorf("Load: %v; want ErrUnknownFormat naming fleet.Record and version 2", err)
	}
	if _, err := s.List(ctx); !errors.Is(err, lifecycle.ErrUnknownFormat) {
		t.Errorf("List: %v; want ErrUnknownFormat", err)
	}
	if err := s.Save(ctx, record("orders", 1)); !errors.Is(err, lifecycle.ErrUnknownFormat) {
		t.Errorf("Save over a newer record: %v; want ErrUnknownFormat", err)
	}
	if b, _ := os.ReadFile(s.path("orders")); string(b) != string(newer) {
		t.Errorf("Save wrote over a newer record: %s", b)
	}
}

func TestDirStoreRefusesAnotherDeploymentsRecord(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Save(ctx, record("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.path("a"), s.path("b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(ctx, "b"); err == nil || !strings.Contains(err.Error(), `the record of "b" holds the deployment "a"`) {
		t.Errorf("Load of a record renamed by hand: %v", err)
	}
}

// TestDirStoreCrashBeforeRename saves a record in a child process that
// exits (as in a crash: no deferred cleanup runs) between the written
// temporary file and the rename. The old record stays whole, the
// temporary file left behind does not trouble List, and the next Save
// takes the lock the dead process held.
func TestDirStoreCrashBeforeRename(t *testing.T) {
	if dir := os.Getenv("FLEET_CRASH_DIR"); dir != "" {
		s, err := NewDirStore(dir)
		if err != nil {
			os.Exit(2)
		}
		s.beforeRename = func(string) { os.Exit(3) }
		s.Save(context.Background(), record("orders", 2))
		os.Exit(4) // the hook did not run
	}
	ctx := context.Background()
	s := newStore(t)
	if err := s.Save(ctx, record("orders", 1)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDirStoreCrashBeforeRename$")
	cmd.Env = append(os.Environ(), "FLEET_CRASH_DIR="+s.dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child: %v; want exit status 3 from the hook\n%s", err, out)
	}
	tmps, _ := filepath.Glob(filepath.Join(s.dir, ".orders.json-*.tmp"))
	if len(tmps) != 1 {
		t.Fatalf("temporary files after the crash: %v; want the one the child wrote", tmps)
	}
	got, ok, err := s.Load(ctx, "orders")
	if err != nil || !ok || got.Spec.Job.Parallelism != 1 {
		t.Fatalf("Load after the crash: parallelism %d, %v, %v; want the old record (1)", got.Spec.Job.Parallelism, ok, err)
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 1 || all[0].Spec.Job.Parallelism != 1 {
		t.Fatalf("List after the crash: %+v, %v; want the old record alone", all, err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Save(ctx2, record("orders", 3)); err != nil {
		t.Fatalf("Save after the crash: %v", err)
	}
	if got, _, _ := s.Load(ctx, "orders"); got.Spec.Job.Parallelism != 3 {
		t.Errorf("Load after the next Save: parallelism %d; want 3", got.Spec.Job.Parallelism)
	}
}

// TestDirStoreWritersWaitAndReadersDoNot holds a deployment's lock as
// another process would (the same flock on the same file, through a
// second open file): a Save waits for it, Load and List return at once
// with the record as it was, and the Save completes once the lock is
// released.
func TestDirStoreWritersWaitAndReadersDoNot(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Save(ctx, record("orders", 1)); err != nil {
		t.Fatal(err)
	}
	held, err := filelock.TryLock(s.lockPath("orders"))
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := s.Save(short, record("orders", 9)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Save while another holds the lock, with a 30ms deadline: %v; want DeadlineExceeded", err)
	}
	if err := s.Delete(short, "orders"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Delete while another holds the lock: %v; want DeadlineExceeded", err)
	}
	saved := make(chan error, 1)
	go func() { saved <- s.Save(ctx, record("orders", 2)) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-saved:
		t.Fatalf("Save returned while the lock was held: %v", err)
	default:
	}
	read := make(chan []Record, 1)
	go func() {
		all, err := s.List(ctx)
		if err != nil {
			t.Error(err)
		}
		read <- all
	}()
	select {
	case all := <-read:
		if len(all) != 1 || all[0].Spec.Job.Parallelism != 1 {
			t.Errorf("List while a writer waits: %+v; want the record as it was", all)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("List waited for the lock")
	}
	if got, _, err := s.Load(ctx, "orders"); err != nil || got.Spec.Job.Parallelism != 1 {
		t.Errorf("Load while the lock is held: %d, %v; want 1", got.Spec.Job.Parallelism, err)
	}
	held.Unlock()
	select {
	case err := <-saved:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Save did not take the released lock")
	}
	if got, _, _ := s.Load(ctx, "orders"); got.Spec.Job.Parallelism != 2 {
		t.Errorf("after the wait: parallelism %d; want 2", got.Spec.Job.Parallelism)
	}
}

// TestDirStoreConcurrentSavesStayWhole has writers and readers of one
// deployment run at once: every record read is one a writer saved
// whole.
func TestDirStoreConcurrentSavesStayWhole(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Save(ctx, record("orders", 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 4)
	for w := range 4 {
		go func() {
			for i := range 20 {
				if err := s.Save(ctx, record("orders", 100*w+i+1)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for finished := 0; finished < 4; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished++
		default:
			got, ok, err := s.Load(ctx, "orders")
			if err != nil || !ok || got.Spec.Job.JarFile != "/jobs/orders.jar" || got.Spec.Job.Parallelism == 0 {
				t.Fatalf("Load during the writes: %+v, %v, %v", got, ok, err)
			}
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(s.dir, "*.tmp")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	if tmps, _ := filepath.Glob(filepath.Join(s.dir, ".*.tmp")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

// TestDirStoreSavesOfTwoProcessesFollowEachOther has a child process
// stop its Save between the written temporary file and the rename,
// holding the deployment's lock: this process's Save waits for it, its
// Load and List read the record as it was meanwhile, and the two Saves
// land one after the other, the child's first.
func TestDirStoreSavesOfTwoProcessesFollowEachOther(t *testing.T) {
	if dir := os.Getenv("FLEET_WRITER_DIR"); dir != "" {
		s, err := NewDirStore(dir)
		if err != nil {
			os.Exit(2)
		}
		s.beforeRename = func(string) {
			os.Stdout.WriteString("renaming\n")
			var b [1]byte
			os.Stdin.Read(b[:]) // until the parent closes stdin
		}
		if err := s.Save(context.Background(), record("orders", 2)); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	ctx := context.Background()
	s := newStore(t)
	if err := s.Save(ctx, record("orders", 1)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDirStoreSavesOfTwoProcessesFollowEachOther$")
	cmd.Env = append(os.Environ(), "FLEET_WRITER_DIR="+s.dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, len("renaming\n"))
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "renaming\n" {
		t.Fatalf("child: %q, %v", buf, err)
	}
	saved := make(chan error, 1)
	go func() { saved <- s.Save(ctx, record("orders", 3)) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-saved:
		t.Fatalf("Save returned while the other process was saving: %v", err)
	default:
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 1 || all[0].Spec.Job.Parallelism != 1 {
		t.Fatalf("List while the other process saves: %+v, %v; want the record as it was", all, err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	select {
	case err := <-saved:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Save did not follow the other process's")
	}
	if got, _, _ := s.Load(ctx, "orders"); got.Spec.Job.Parallelism != 3 {
		t.Errorf("after both Saves: parallelism %d; want 3, the later one", got.Spec.Job.Parallelism)
	}
}

// TestDirStoreCorruptRecord checks that a record file that is not JSON
// (cut short by a file system that lost the rename's order) is an error
// naming the file, and that Save replaces it.
func TestDirStoreCorruptRecord(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := os.WriteFile(s.path("orders"), []byte(`{"formatVersion": 1, "name": "ord`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(ctx, "orders"); err == nil || !strings.Contains(err.Error(), s.path("orders")) {
		t.Errorf("Load of a cut record: %v; want an error naming the file", err)
	}
	if _, err := s.List(ctx); err == nil {
		t.Error("List with a cut record: no error")
	}
	if err := s.Save(ctx, record("orders", 2)); err != nil {
		t.Fatalf("Save over a cut record: %v", err)
	}
	if got, ok, err := s.Load(ctx, "orders"); err != nil || !ok || got.Spec.Job.Parallelism != 2 {
		t.Errorf("Load after: %+v, %v, %v", got, ok, err)
	}
}
