package lifecycle

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
)

// jarUploads lists the names srv was sent jar uploads under.
func jarUploads(srv *flinktest.Server) []string {
	var out []string
	for _, id := range srv.JarIDs() {
		_, name, _ := strings.Cut(string(id), "_")
		out = append(out, name)
	}
	return out
}

// Two Controllers of jobs of one jar file's content upload it once,
// under a name that says its content; the file rebuilt under the same
// name is a new upload; Jars.Upload's upload, the caller's own, is never
// run by a Controller.
func TestControllersShareJarUploads(t *testing.T) {
	k := newCluster(t, false)
	ctx := context.Background()
	d, err := k.jars.digest(ctx, k.jar)
	if err != nil {
		t.Fatal(err)
	}
	// A Plan's upload of the same content: the caller's own.
	own, err := k.jars.Upload(ctx, k.c, k.jar)
	if err != nil {
		t.Fatal(err)
	}
	if want := ownJarName(d, "job.jar"); !strings.HasSuffix(string(own), "_"+want) {
		t.Fatalf("own upload %s, want named %s", own, want)
	}
	if dg, shared := JarNameDigest(uploadName(own)); dg != d[:32] || shared {
		t.Fatalf("JarNameDigest(%s) = %s, %v", own, dg, shared)
	}
	k.srv.ClearRequests()
	k.settle("a deployed", k.spec("/out/a"))
	other := &Controller{Env: Env{Client: k.c, Clock: k.srv.Clock(), Jars: k.jars}, Store: k.store, Name: "app/other", PollInterval: 5 * time.Second}
	var st JobStatus
	spec := k.spec("/out/b")
	for range 100 {
		if !st.InFlight() && st.State == "Running" {
			break
		}
		k.reconcileOther(other, spec, &st)
	}
	if st.State != "Running" || st.JarID != k.st.JarID || st.JarID == own {
		t.Fatalf("second job %s %s of jar %s; want running the first job's jar %s", st.JobID, st.State, st.JarID, k.st.JarID)
	}
	if n := reqlog.JarUploads(k.srv.Requests()); n != 1 {
		t.Errorf("%d uploads for two jobs of one content, want 1", n)
	}
	if name := sharedJarName(d, "job.jar"); !strings.HasSuffix(string(st.JarID), "_"+name) {
		t.Errorf("upload %s, want named %s", st.JarID, name)
	}
	if dg, shared := jarIDDigest(st.JarID); dg != d[:32] || !shared {
		t.Errorf("jarIDDigest(%s) = %s, %v", st.JarID, dg, shared)
	}

	// Rebuilt under the same name: a new upload, named by the new content.
	first := k.st.JarID
	k.rebuildJar(2)
	k.settle("a upgraded", k.spec("/out/a"))
	d2, err := k.jars.digest(ctx, k.jar)
	if err != nil {
		t.Fatal(err)
	}
	if k.st.JarID == first || !strings.HasSuffix(string(k.st.JarID), "_"+sharedJarName(d2, "job.jar")) || d2 == d {
		t.Fatalf("after the rebuild the job runs %s (digest %.12s, was %.12s)", k.st.JarID, d2, d)
	}
	if n := reqlog.JarUploads(k.srv.Requests()); n != 2 {
		t.Errorf("%d uploads after the rebuild, want 2: %v", n, jarUploads(k.srv))
	}
}

// uploadName is the name Flink gave upload id.
func uploadName(id flinkapi.JarID) string {
	_, name, _ := strings.Cut(string(id), "_")
	return name
}

// A Submit given an upload of its jar file made earlier (as a preflight
// hands it on) looks it up before it runs it: gone, the file is uploaded
// again and run; gone while the file holds another build, nothing runs.
func TestSubmitChecksTheUploadAtTheRun(t *testing.T) {
	for _, rebuilt := range []bool{false, true} {
		t.Run(map[bool]string{false: "same build", true: "rebuilt"}[rebuilt], func(t *testing.T) {
			k := newCluster(t, false)
			ctx := context.Background()
			jar, err := k.jars.upload(ctx, k.c, k.jar)
			if err != nil {
				t.Fatal(err)
			}
			// Still listed: it is run as it is.
			e := &env{srv: k.srv, c: k.c}
			mk := func() Stepper {
				return &Submit{Env: Env{Client: k.c, Clock: k.srv.Clock(), Jars: k.jars}, JarID: jar, JarFile: k.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()}}
			}
			k.srv.ClearRequests()
			if _, res := drive(t, e, mk, false); res.Outcome != OutcomeSucceeded || reqlog.JarUploads(k.srv.Requests()) != 0 || count(k.srv, "GET /jars") != 1 {
				t.Fatalf("with the upload listed: %s, %d uploads, %v", res.Outcome, reqlog.JarUploads(k.srv.Requests()), routes(k.srv))
			}
			if err := k.c.DeleteJar(ctx, jar); err != nil {
				t.Fatal(err)
			}
			if rebuilt {
				if err := os.WriteFile(k.jar, counterBuild(2), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			k.srv.ClearRequests()
			p, res := drive(t, e, mk, true)
			if rebuilt {
				if res.Outcome != OutcomeSubmitFailed || count(k.srv, "POST /jars/:jarid/run") != 0 || reqlog.JarUploads(k.srv.Requests()) != 0 || !strings.Contains(p.Reason, "another build") {
					t.Fatalf("gone and rebuilt: %s (%s), %v; want a failure before any run or upload", res.Outcome, p.Reason, routes(k.srv))
				}
				return
			}
			if res.Outcome != OutcomeSucceeded || reqlog.JarUploads(k.srv.Requests()) != 1 || p.Submit.JarID == jar || uploadName(p.Submit.JarID) != uploadName(jar) {
				t.Fatalf("gone: %s (%s), ran %s, %v; want a new upload of %s run", res.Outcome, p.Reason, p.Submit.JarID, routes(k.srv), uploadName(jar))
			}
			reqs := routes(k.srv)
			if i, j := slices.Index(reqs, "GET /jars"), slices.Index(reqs, "POST /jars/:jarid/run"); i < 0 || j < i {
				t.Errorf("requests %v: the jars were not listed before the run", reqs)
			}
		})
	}
}
