package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// jarTree is a jar root with one good jar, and beside it a directory the
// root must not reach.
type jarTree struct {
	root, outside string
	good          string // root/job.jar
	secret        string // outside/secret.jar
	jars          *Jars
}

func newJarTree(t *testing.T) *jarTree {
	t.Helper()
	dir := t.TempDir()
	tr := &jarTree{root: filepath.Join(dir, "root"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{tr.root, tr.outside, filepath.Join(tr.root, "dir.jar")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr.good = filepath.Join(tr.root, "job.jar")
	tr.secret = filepath.Join(tr.outside, "secret.jar")
	write := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tr.good, flinktest.MinimalJar(flinktest.CounterJobClass))
	write(tr.secret, append(flinktest.MinimalJar(flinktest.CounterJobClass), []byte("SECRET-CONTENT")...))
	for name, target := range map[string]string{"out.jar": tr.secret, "passwd.jar": "/etc/passwd", "zero.jar": "/dev/zero", "rel-out.jar": "../outside/secret.jar"} {
		if err := os.Symlink(target, filepath.Join(tr.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(tr.root, "fifo.jar"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr.jars = jarsOf(t, tr.good)
	return tr
}

// reconcileOnce runs one Reconcile of spec under a deadline, failing the
// test if it does not return in time (a read that never ends).
func reconcileOnce(t *testing.T, ctrl *Controller, ctx context.Context, spec JobSpec, st *JobStatus) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := ctrl.Reconcile(ctx, spec, st)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Reconcile did not return within 10 s")
		return nil
	}
}

// noRequests fails the test if the fake received a jar upload or any
// request at all.
func noRequests(t *testing.T, srv *flinktest.Server) {
	t.Helper()
	for _, r := range srv.Requests() {
		t.Errorf("request sent: %s %s", r.Method, r.Path)
	}
}

// A jar file outside the root, or anything but a regular file, or a jar
// larger than the limit is refused as an invalid spec naming the file and
// the root, before anything is read or sent: no digest in the status, no
// request.
func TestControllerRefusesJarsOutsideTheirRoot(t *testing.T) {
	tr := newJarTree(t)
	big := filepath.Join(tr.root, "big.jar")
	if err := os.WriteFile(big, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, why string }{
		{"dot-dot", "../outside/secret.jar", "is outside"},
		{"dot-dot inside an absolute path", tr.root + "/../outside/secret.jar", "is outside"},
		{"absolute elsewhere", tr.secret, "is outside"},
		{"etc passwd", "/etc/passwd", "is outside"},
		{"dev zero", "/dev/zero", "is outside"},
		{"symlink out", "out.jar", "cannot be opened"},
		{"relative symlink out", "rel-out.jar", "cannot be opened"},
		{"symlink to etc passwd", "passwd.jar", "cannot be opened"},
		{"symlink to dev zero", "zero.jar", "cannot be opened"},
		{"fifo", "fifo.jar", "is not a regular file"},
		{"fifo by absolute path", filepath.Join(tr.root, "fifo.jar"), "is not a regular file"},
		{"directory", "dir.jar", "is not a regular file"},
		{"oversize", "big.jar", "more than the 1024 bytes"},
		{"not a jar", "job.jar/..", "does not end in .jar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, false)
			k.jars = &Jars{MaxSize: 1024, dir: tr.jars.dir, name: tr.jars.name}
			spec := k.spec("/out/a")
			spec.Job.JarFile = tc.file
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := reconcileOnce(t, k.controller(), ctx, spec, &k.st)
			if !errors.Is(err, ErrInvalidSpec) || !errors.Is(err, ErrJarRefused) || !strings.Contains(err.Error(), tc.why) ||
				!strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tr.root) {
				t.Fatalf("Reconcile = %v; want ErrInvalidSpec saying %q and naming %q and %q", err, tc.why, tc.file, tr.root)
			}
			if k.st.Reason != ReasonInvalidSpec || k.st.Target.JarDigest != "" || k.st.JarDigest != "" || k.st.JarID != "" {
				t.Fatalf("status: reason %s, target digest %q, digest %q, jar %q; want InvalidSpec and nothing of the jar",
					k.st.Reason, k.st.Target.JarDigest, k.st.JarDigest, k.st.JarID)
			}
			dirDigests.Range(func(key, _ any) bool {
				if key.(jarKey).dir == tr.root {
					t.Errorf("a digest was recorded: %+v", key)
				}
				return true
			})
			noRequests(t, k.srv)
			// Plan says the same, sending nothing either.
			plan, err := k.controller().Plan(ctx, spec, k.st)
			if err != nil || plan.Reason != ReasonInvalidSpec || !strings.Contains(plan.Blocked, tc.why) {
				t.Fatalf("Plan = %+v, %v; want blocked by the invalid spec", plan, err)
			}
			noRequests(t, k.srv)
		})
	}
}

// Without a jar source, no jar file is read: the spec is invalid.
func TestControllerWithoutJarsReadsNoJar(t *testing.T) {
	k := newCluster(t, false)
	k.jars = nil
	err := reconcileOnce(t, k.controller(), context.Background(), k.spec("/out/a"), &k.st)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "no jar source") || k.st.Target.JarDigest != "" {
		t.Fatalf("Reconcile = %v, digest %q; want ErrInvalidSpec naming the missing jar source", err, k.st.Target.JarDigest)
	}
	noRequests(t, k.srv)
}

// A jar inside its root is read by a relative or an absolute name and
// deployed.
func TestControllerReadsJarsInsideTheirRoot(t *testing.T) {
	tr := newJarTree(t)
	for _, file := range []string{"job.jar", tr.good, "./job.jar"} {
		k := newCluster(t, false)
		k.jars = tr.jars
		spec := k.spec("/out/a")
		spec.Job.JarFile = file
		k.settle("deploy", spec)
		want := sha256.Sum256(flinktest.MinimalJar(flinktest.CounterJobClass))
		if k.st.JarDigest != hex.EncodeToString(want[:]) || k.st.JarID == "" {
			t.Fatalf("%s: digest %q, jar %q; want the jar's", file, k.st.JarDigest, k.st.JarID)
		}
	}
}

// A jar replaced by a symbolic link out of the root between its open and
// its read is not read: the digest and the upload read the file that was
// opened, and the next call refuses the link.
func TestJarReplacedBetweenCheckAndRead(t *testing.T) {
	tr := newJarTree(t)
	orig := flinktest.MinimalJar(flinktest.CounterJobClass)
	swap := func(string) {
		if err := os.Remove(tr.good); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tr.secret, tr.good); err != nil {
			t.Fatal(err)
		}
	}
	restore := func() {
		os.Remove(tr.good)
		if err := os.WriteFile(tr.good, orig, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { testHookJarOpened = func(string) {} }()

	testHookJarOpened = swap
	d, err := tr.jars.digest(context.Background(), "job.jar")
	testHookJarOpened = func(string) {}
	want := sha256.Sum256(orig)
	if err != nil || d != hex.EncodeToString(want[:]) {
		t.Fatalf("digest = %.12s, %v; want the opened file's %.12s", d, err, hex.EncodeToString(want[:]))
	}
	if _, err := tr.jars.digest(context.Background(), "job.jar"); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("digest of the link = %v; want ErrInvalidSpec", err)
	}

	restore()
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	testHookJarOpened = swap
	id, err := tr.jars.upload(context.Background(), c, "job.jar")
	testHookJarOpened = func(string) {}
	if err != nil || id == "" {
		t.Fatalf("upload = %q, %v", id, err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Body, "SECRET-CONTENT") {
			t.Fatal("the file outside the root was uploaded")
		}
	}
	if _, err := tr.jars.upload(context.Background(), c, "job.jar"); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("upload of the link = %v; want ErrInvalidSpec", err)
	}
	var sent []string
	for _, r := range srv.Requests() {
		sent = append(sent, r.Method+" "+r.Path)
	}
	if want := []string{"GET /jars", "POST /jars/upload"}; !slices.Equal(sent, want) {
		t.Fatalf("requests %v; want %v: the look-up of an upload of the content and the one upload of the opened file", sent, want)
	}
}

// Submit uploads nothing the root does not give, and fails at once.
func TestSubmitRefusesJarsOutsideTheirRoot(t *testing.T) {
	tr := newJarTree(t)
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"out.jar", "/etc/passwd", "../outside/secret.jar", "fifo.jar", tr.secret} {
		s := &Submit{Env: Env{Client: c, Clock: srv.Clock(), Jars: tr.jars}, JarFile: file}
		var p Progress
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := Run(ctx, s, &p, nil)
		cancel()
		if err != nil || res.Outcome != OutcomeSubmitFailed || !strings.Contains(p.Reason, "invalid job spec") || p.Submit.JarID != "" {
			t.Fatalf("%s: %v, %+v, %s; want a failed submission saying the spec is invalid", file, err, res, p.Reason)
		}
	}
	noRequests(t, srv)
}

// endlessFile is a file that says it is a regular file of size bytes and
// never ends; its first read calls onRead.
type endlessFile struct {
	size   int64
	onRead func()
}

func (f *endlessFile) Stat() (fs.FileInfo, error) {
	return fstest.MapFS{"x.jar": &fstest.MapFile{Data: make([]byte, f.size)}}.Stat("x.jar")
}

func (f *endlessFile) Read(p []byte) (int, error) {
	if f.onRead != nil {
		f.onRead()
		f.onRead = nil
	}
	return len(p), nil
}

func (f *endlessFile) Close() error { return nil }

type endlessFS struct{ f *endlessFile }

func (e endlessFS) Open(name string) (fs.File, error) {
	if name != "x.jar" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return e.f, nil
}

// A context that ends during a read ends it: no digest, no request.
func TestJarReadEndsWithItsContext(t *testing.T) {
	k := newCluster(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k.jars = JarFS(endlessFS{&endlessFile{size: 1 << 20, onRead: cancel}}, "endless")
	k.jars.MaxSize = 1 << 40
	spec := k.spec("/out/a")
	spec.Job.JarFile = "x.jar"
	err := reconcileOnce(t, k.controller(), ctx, spec, &k.st)
	if !errors.Is(err, context.Canceled) || k.st.Target.JarDigest != "" {
		t.Fatalf("Reconcile = %v, digest %q; want the context's error and no digest", err, k.st.Target.JarDigest)
	}
	noRequests(t, k.srv)
}

// A jar that grows past the limit while read is refused, whatever its
// size said when opened.
func TestJarGrowingPastTheLimitIsRefused(t *testing.T) {
	k := newCluster(t, false)
	k.jars = JarFS(endlessFS{&endlessFile{size: 10}}, "endless")
	k.jars.MaxSize = 1 << 20
	spec := k.spec("/out/a")
	spec.Job.JarFile = "/x.jar"
	err := reconcileOnce(t, k.controller(), context.Background(), spec, &k.st)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "grew past") || k.st.Target.JarDigest != "" {
		t.Fatalf("Reconcile = %v, digest %q; want ErrInvalidSpec and no digest", err, k.st.Target.JarDigest)
	}
	noRequests(t, k.srv)
}

// JarFS reads only valid paths of its file system.
func TestJarFS(t *testing.T) {
	jar := flinktest.MinimalJar(flinktest.CounterJobClass)
	j := JarFS(fstest.MapFS{"apps/job.jar": {Data: jar}}, "the image")
	for _, bad := range []string{"../job.jar", "apps/../../job.jar", "apps//job.jar", "apps/job"} {
		if _, err := j.digest(context.Background(), bad); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "the image") {
			t.Errorf("%s: %v; want ErrInvalidSpec naming the file system", bad, err)
		}
	}
	want := sha256.Sum256(jar)
	for _, good := range []string{"apps/job.jar", "/apps/job.jar"} {
		if d, err := j.digest(context.Background(), good); err != nil || d != hex.EncodeToString(want[:]) {
			t.Errorf("%s: %.12s, %v", good, d, err)
		}
	}
	if _, err := j.digest(context.Background(), "apps/none.jar"); err == nil || errors.Is(err, ErrInvalidSpec) {
		t.Errorf("missing file: %v; want an error that is not an invalid spec", err)
	}
}
