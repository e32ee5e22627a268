package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// The test binary is also the fake java of these tests: started with
// fakeJavaEnv=1, it plays the JobManager (serving GET /overview on the
// configuration's rest.port) or the TaskManager (it waits), so that
// Deploy, Exists and Delete are tested without Java.
const (
	fakeJavaEnv = "LOCALCLUSTER_FAKE_JAVA"
	fakeFailEnv = "LOCALCLUSTER_FAKE_FAIL"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeJavaEnv) == "1" {
		fakeJava(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

func fakeJava(args []string) {
	var conf, role string
	for i, a := range args {
		if a == "--configDir" && i+1 < len(args) {
			conf = args[i+1]
		}
		if r, ok := strings.CutPrefix(a, roleProperty); ok {
			role = r
		}
	}
	if role == roleTaskManager {
		select {}
	}
	if os.Getenv(fakeFailEnv) == "1" {
		fmt.Fprintln(os.Stderr, "Caused by: java.lang.RuntimeException: the fake JobManager fails")
		os.Exit(2)
	}
	b, err := os.ReadFile(filepath.Join(conf, "config.yaml"))
	if err != nil {
		os.Exit(3)
	}
	var port string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rest.port: "); ok {
			port = strings.Trim(v, `"`)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, "java.net.BindException:", err)
		os.Exit(4)
	}
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"taskmanagers":1}`)
	}))
}

// fakeDeployer is a Deployer whose java is the fake, with a lib folder
// holding an empty flink-container jar, and a jar for the job.
func fakeDeployer(t *testing.T) (*Deployer, lifecycle.DeployRequest) {
	t.Helper()
	t.Setenv(fakeJavaEnv, "1")
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	jar := filepath.Join(dir, "job.jar")
	for _, f := range []string{filepath.Join(lib, "flink-container-2.3.0.jar"), jar} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &Deployer{LibDir: lib, WorkDir: filepath.Join(dir, "work"), Java: exe, StopGrace: 2 * time.Second, StartTimeout: 20 * time.Second}
	req := lifecycle.DeployRequest{JobID: flinkapi.NewJobID(), JarFile: jar, EntryClass: "com.example.Job", Args: []string{"--out", "x"}}
	t.Cleanup(func() {
		if err := stopProcesses(filepath.Join(d.WorkDir, ClusterName(req.JobID)), 0); err != nil {
			t.Error(err)
		}
	})
	return d, req
}

func processes(t *testing.T, d *Deployer, c lifecycle.Cluster) map[string][]int {
	t.Helper()
	found, err := findProcesses(d.Dir(c))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestDeployIsIdempotentAndDeleteStops(t *testing.T) {
	d, req := fakeDeployer(t)
	ctx := context.Background()
	c, err := d.Deploy(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != ClusterName(req.JobID) || c.JobID != req.JobID || !strings.HasPrefix(c.URL, "http://127.0.0.1:") {
		t.Fatalf("cluster: %+v", c)
	}
	if p := processes(t, d, c); len(p[roleJobManager]) != 1 || len(p[roleTaskManager]) != 1 {
		t.Fatalf("processes: %v, want one JobManager and one TaskManager", p)
	}

	// Again, and from another Deployer as after a restart of the caller.
	again, err := d.Deploy(ctx, req)
	if err != nil || again != c {
		t.Fatalf("second deploy: %+v, %v; want %+v", again, err, c)
	}
	restarted := &Deployer{LibDir: d.LibDir, WorkDir: d.WorkDir, Java: d.Java}
	if again, err := restarted.Deploy(ctx, req); err != nil || again != c {
		t.Fatalf("deploy after a restart: %+v, %v; want %+v", again, err, c)
	}
	if p := processes(t, d, c); len(p[roleJobManager]) != 1 {
		t.Fatalf("processes after three deploys: %v, want one JobManager", p)
	}
	if ok, err := restarted.Exists(ctx, lifecycle.Cluster{Name: c.Name}); !ok || err != nil {
		t.Fatalf("Exists: %v, %v", ok, err)
	}
	api, err := restarted.Client(lifecycle.Cluster{Name: c.Name})
	if err != nil {
		t.Fatal(err)
	}
	if got := api.(*flinkapi.Client).BaseURL(); got != c.URL {
		t.Errorf("client URL %s, want %s", got, c.URL)
	}

	if err := restarted.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	if p := processes(t, d, c); len(p) != 0 {
		t.Fatalf("processes after Delete: %v", p)
	}
	if ok, err := d.Exists(ctx, c); ok || err != nil {
		t.Fatalf("Exists after Delete: %v, %v", ok, err)
	}
	if _, err := os.Stat(d.Dir(c)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster's folder after Delete: %v", err)
	}
	if err := d.Delete(ctx, c); err != nil {
		t.Errorf("Delete of a cluster that is gone: %v", err)
	}
	// After Delete, a Deploy of the same job id starts a new cluster.
	fresh, err := d.Deploy(ctx, req)
	if err != nil || fresh.Name != c.Name {
		t.Fatalf("deploy after Delete: %+v, %v", fresh, err)
	}
	if err := d.Delete(ctx, fresh); err != nil {
		t.Fatal(err)
	}
}

// A cluster whose JobManager exited is still the job's cluster: Deploy
// returns it instead of starting the job a second time; Exists is false.
func TestDeployReturnsAClusterWhoseJobManagerExited(t *testing.T) {
	d, req := fakeDeployer(t)
	ctx := context.Background()
	c, err := d.Deploy(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range processes(t, d, c)[roleJobManager] {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(processes(t, d, c)[roleJobManager]) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := d.Exists(ctx, c); ok || err != nil {
		t.Fatalf("Exists after the JobManager exited: %v, %v", ok, err)
	}
	again, err := d.Deploy(ctx, req)
	if err != nil || again != c {
		t.Fatalf("deploy: %+v, %v; want %+v", again, err, c)
	}
	if p := processes(t, d, c); len(p[roleJobManager]) != 0 {
		t.Fatalf("a second JobManager was started: %v", p)
	}
	if err := d.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	if p := processes(t, d, c); len(p) != 0 {
		t.Fatalf("processes after Delete: %v", p)
	}
}

func TestDeployJobManagerExitsDuringStart(t *testing.T) {
	d, req := fakeDeployer(t)
	t.Setenv(fakeFailEnv, "1")
	_, err := d.Deploy(context.Background(), req)
	if !errors.Is(err, lifecycle.ErrDeployRefused) || !strings.Contains(err.Error(), "the fake JobManager fails") {
		t.Fatalf("deploy: %v, want a refusal naming the JobManager's cause", err)
	}
	c := lifecycle.Cluster{Name: ClusterName(req.JobID)}
	if p := processes(t, d, c); len(p) != 0 {
		t.Fatalf("processes after a failed start: %v", p)
	}
	if ok, err := d.Exists(context.Background(), c); ok || err != nil {
		t.Fatalf("Exists after a failed start: %v, %v", ok, err)
	}
	// The logs stay; a retry starts afresh.
	if _, err := os.Stat(filepath.Join(d.Dir(c), "logs", "jobmanager.out")); err != nil {
		t.Errorf("logs of the failed start: %v", err)
	}
	t.Setenv(fakeFailEnv, "0")
	if _, err := d.Deploy(context.Background(), req); err != nil {
		t.Fatalf("retry: %v", err)
	}
}

func TestDeployRefusesBadInput(t *testing.T) {
	d, req := fakeDeployer(t)
	ctx := context.Background()
	emptyLib := t.TempDir()
	noEntry := t.TempDir()
	if err := os.WriteFile(filepath.Join(noEntry, "flink-runtime-2.3.0.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		d    Deployer
		req  func(r *lifecycle.DeployRequest)
		want string
	}{
		{"no work dir", Deployer{LibDir: d.LibDir, Java: d.Java}, nil, "WorkDir is not set"},
		{"no lib dir", Deployer{WorkDir: d.WorkDir, Java: d.Java}, nil, "LibDir (the folder of Flink's jars) is not set"},
		{"missing lib dir", Deployer{LibDir: "/nonexistent/lib", WorkDir: d.WorkDir, Java: d.Java}, nil, "Flink lib folder /nonexistent/lib: not a folder"},
		{"lib dir without jars", Deployer{LibDir: emptyLib, WorkDir: d.WorkDir, Java: d.Java}, nil, "has no jars"},
		{"lib dir without the entry point", Deployer{LibDir: noEntry, WorkDir: d.WorkDir, Java: d.Java}, nil, "no flink-container or flink-dist jar"},
		{"missing java", Deployer{LibDir: d.LibDir, WorkDir: d.WorkDir, Java: "/nonexistent/java"}, nil, "java /nonexistent/java"},
		{"missing jar", *d, func(r *lifecycle.DeployRequest) { r.JarFile = "/nonexistent/job.jar" }, "job jar /nonexistent/job.jar"},
		{"no jar", *d, func(r *lifecycle.DeployRequest) { r.JarFile = "" }, "names no jar"},
		{"no entry class", *d, func(r *lifecycle.DeployRequest) { r.EntryClass = "" }, "names no entry class"},
		{"bad job id", *d, func(r *lifecycle.DeployRequest) { r.JobID = "../x" }, "job id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := req
			if tc.req != nil {
				tc.req(&r)
			}
			_, err := tc.d.Deploy(ctx, r)
			if !errors.Is(err, lifecycle.ErrDeployRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("deploy: %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(d.WorkDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused deploy left %s: %v", d.WorkDir, err)
	}
	for _, name := range []string{"../etc", "flinkkit-xyz", ""} {
		if err := d.Delete(ctx, lifecycle.Cluster{Name: name}); !errors.Is(err, lifecycle.ErrDeployRefused) {
			t.Errorf("Delete(%q): %v", name, err)
		}
		if _, err := d.Exists(ctx, lifecycle.Cluster{Name: name}); err == nil {
			t.Errorf("Exists(%q) without an error", name)
		}
	}
}

func TestCommandLineAndConfiguration(t *testing.T) {
	d := &Deployer{LibDir: "/flink/lib", WorkDir: "/wd", Configuration: map[string]string{"state.backend.type": "rocksdb", "parallelism.default": "7"}}
	req := lifecycle.DeployRequest{
		JobID: "0123456789abcdef0123456789abcdef", JarFile: "/jobs/job.jar", EntryClass: "com.example.Job",
		Args: []string{"--out", "/o"}, Parallelism: 2, RestorePath: "file:/sp/savepoint-1", AllowNonRestoredState: true,
		FlinkConfiguration: map[string]string{"pipeline.name": "counter", lifecycle.ShutdownOnFinish: "true"},
	}
	l := newLayout("/wd/" + ClusterName(req.JobID))
	jm := strings.Join(d.jvmCommand("/usr/bin/java", l, roleJobManager, req), " ")
	for _, want := range []string{
		"/usr/bin/java -Xms384m -Xmx384m",
		"--add-opens=java.base/java.util=ALL-UNNAMED",
		"-Dlog.file=" + l.Logs + "/jobmanager.log",
		markerProperty + l.Dir + " " + roleProperty + "jobmanager",
		"-classpath /flink/lib/*:/jobs/job.jar " + jobManagerClass + " --configDir " + l.Conf,
		"--job-classname com.example.Job --job-id 0123456789abcdef0123456789abcdef --fromSavepoint file:/sp/savepoint-1 --allowNonRestoredState -- --out /o",
	} {
		if !strings.Contains(jm, want) {
			t.Errorf("JobManager command lacks %q:\n%s", want, jm)
		}
	}
	tm := strings.Join(d.jvmCommand("/usr/bin/java", l, roleTaskManager, req), " ")
	if !strings.Contains(tm, "-classpath /flink/lib/*:/jobs/job.jar "+taskManagerClass+" --configDir "+l.Conf+" -D taskmanager.resource-id="+ClusterName(req.JobID)+"-tm") ||
		strings.Contains(tm, "--job-id") {
		t.Errorf("TaskManager command:\n%s", tm)
	}

	conf := d.flinkConfiguration(l, ports{REST: 1, RPC: 2, Blob: 3}, d.slots(req), req)
	for k, want := range map[string]string{
		"rest.port":                             "1",
		"rest.bind-address":                     "127.0.0.1",
		"jobmanager.rpc.port":                   "2",
		"blob.server.port":                      "3",
		"taskmanager.numberOfTaskSlots":         "2",
		"parallelism.default":                   "7", // the Deployer's Configuration over the request's Parallelism
		"state.backend.type":                    "rocksdb",
		"pipeline.name":                         "counter",
		"$internal.pipeline.job-id":             string(req.JobID),
		lifecycle.ShutdownOnFinish:              "false", // ApplicationConfiguration wins
		"execution.savepoint.path":              req.RestorePath,
		SubmitFailedJob:                         "true",
		"execution.checkpointing.savepoint-dir": "file:///wd/savepoints",
		"execution.checkpointing.dir":           "file:///wd/checkpoints",
		"io.tmp.dirs":                           l.Tmp,
	} {
		if conf[k] != want {
			t.Errorf("%s = %q, want %q", k, conf[k], want)
		}
	}
	if s := (&Deployer{}).slots(lifecycle.DeployRequest{}); s != 1 {
		t.Errorf("slots without parallelism: %d", s)
	}
}
