package flinkfixture

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRenderYAMLQuotesAndSorts(t *testing.T) {
	got := string(renderYAML(map[string]string{
		"b.key":  `C:\dir "x"`,
		"a.key":  "plain",
		"c.list": "a;b",
		"d.tab":  "x\ty\nz",
	}))
	want := `# Written by flinkkit's test fixture (internal/testkit/flinkfixture).
a.key: "plain"
b.key: "C:\\dir \"x\""
c.list: "a;b"
d.tab: "x\ty\nz"
`
	if got != want {
		t.Fatalf("renderYAML:\n%s\nwant:\n%s", got, want)
	}
}

func TestFlinkConfig(t *testing.T) {
	l := newLayout("/w")
	p := Ports{REST: 8081, JobManagerRPC: 6123, Blob: 6124}
	c := flinkConfig(l, p, 3, map[string]string{"jobmanager.scheduler": "adaptive", "heartbeat.timeout": "20s"})
	for k, want := range map[string]string{
		"rest.port":                             "8081",
		"rest.address":                          "127.0.0.1",
		"rest.bind-address":                     "127.0.0.1",
		"jobmanager.rpc.port":                   "6123",
		"jobmanager.rpc.address":                "127.0.0.1",
		"blob.server.port":                      "6124",
		"taskmanager.numberOfTaskSlots":         "3",
		"taskmanager.host":                      "127.0.0.1",
		"web.submit.enable":                     "true",
		"web.cancel.enable":                     "true",
		"execution.checkpointing.dir":           "file:///w/checkpoints",
		"execution.checkpointing.savepoint-dir": "file:///w/savepoints",
		"jobmanager.scheduler":                  "adaptive", // extra entry
		"heartbeat.timeout":                     "20s",      // extra overrides the default
	} {
		if c[k] != want {
			t.Errorf("%s = %q, want %q", k, c[k], want)
		}
	}
	// Keys that Flink 2.x no longer reads must not be used.
	for _, old := range []string{"state.checkpoints.dir", "state.savepoints.dir", "env.java.opts", "akka.ask.timeout"} {
		if _, ok := c[old]; ok {
			t.Errorf("config uses the removed or deprecated key %s", old)
		}
	}
}

func TestTaskManagerMemoryIsConsistent(t *testing.T) {
	m := defaultTaskManagerMemory
	c := m.config()
	sum := 0
	for _, k := range []string{
		"taskmanager.memory.framework.heap.size", "taskmanager.memory.task.heap.size",
		"taskmanager.memory.framework.off-heap.size", "taskmanager.memory.task.off-heap.size",
		"taskmanager.memory.network.min", "taskmanager.memory.managed.size",
	} {
		sum += parseMiB(t, c[k])
	}
	if got := parseMiB(t, c["taskmanager.memory.flink.size"]); got != sum {
		t.Errorf("flink.size %d MiB, components add up to %d MiB", got, sum)
	}
	process := sum + parseMiB(t, c["taskmanager.memory.jvm-metaspace.size"]) + parseMiB(t, c["taskmanager.memory.jvm-overhead.min"])
	if got := parseMiB(t, c["taskmanager.memory.process.size"]); got != process {
		t.Errorf("process.size %d MiB, want %d", got, process)
	}
	if c["taskmanager.memory.network.min"] != c["taskmanager.memory.network.max"] ||
		c["taskmanager.memory.jvm-overhead.min"] != c["taskmanager.memory.jvm-overhead.max"] {
		t.Error("network and overhead sizes must be fixed (min == max)")
	}
	if process < 900 || process > 1300 {
		t.Errorf("TaskManager process size %d MiB is outside the planned 0.9-1.3 GiB", process)
	}
	jvm := strings.Join(m.jvmArgs(), " ")
	heap := parseMiB(t, c["taskmanager.memory.framework.heap.size"]) + parseMiB(t, c["taskmanager.memory.task.heap.size"])
	direct := parseMiB(t, c["taskmanager.memory.framework.off-heap.size"]) + parseMiB(t, c["taskmanager.memory.task.off-heap.size"]) + parseMiB(t, c["taskmanager.memory.network.min"])
	for _, want := range []string{
		fmt.Sprintf("-Xmx%dm", heap), fmt.Sprintf("-Xms%dm", heap),
		fmt.Sprintf("-XX:MaxDirectMemorySize=%dm", direct),
		"-XX:MaxMetaspaceSize=" + c["taskmanager.memory.jvm-metaspace.size"],
	} {
		if !strings.Contains(jvm, want) {
			t.Errorf("TaskManager JVM flags %q lack %s", jvm, want)
		}
	}
}

func TestJobManagerMemoryIsConsistent(t *testing.T) {
	m := defaultJobManagerMemory
	c := m.config()
	heap := parseMiB(t, c["jobmanager.memory.heap.size"])
	off := parseMiB(t, c["jobmanager.memory.off-heap.size"])
	meta := parseMiB(t, c["jobmanager.memory.jvm-metaspace.size"])
	over := parseMiB(t, c["jobmanager.memory.jvm-overhead.min"])
	if got := parseMiB(t, c["jobmanager.memory.process.size"]); got != heap+off+meta+over {
		t.Errorf("process.size %d MiB, want %d", got, heap+off+meta+over)
	}
	if p := m.processMiB(); p < 512 || p > 800 {
		t.Errorf("JobManager process size %d MiB is outside the planned 512-800 MiB", p)
	}
	jvm := m.jvmArgs()
	for _, want := range []string{fmt.Sprintf("-Xmx%dm", heap), fmt.Sprintf("-XX:MaxDirectMemorySize=%dm", off), fmt.Sprintf("-XX:MaxMetaspaceSize=%dm", meta)} {
		if !slices.Contains(jvm, want) {
			t.Errorf("JobManager JVM flags %v lack %s", jvm, want)
		}
	}
}

func parseMiB(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSuffix(s, "m"))
	if err != nil || !strings.HasSuffix(s, "m") {
		t.Fatalf("not a MiB size: %q", s)
	}
	return n
}

func TestJVMCommand(t *testing.T) {
	l := newLayout("/w")
	argv := jvmCommand("/usr/bin/java", "/lib", l, "taskmanager", []string{"-Xmx1m"}, taskManagerMainClass, []string{"-D", "a=b"})
	joined := strings.Join(argv, " ")
	for _, want := range []string{
		"--add-opens=java.base/java.util=ALL-UNNAMED",
		"--add-exports=java.base/sun.net.util=ALL-UNNAMED",
		"-Dlog.file=/w/logs/taskmanager.log",
		"-Dlog4j.configurationFile=file:/w/conf/log4j.properties",
		"-Dflinkkit.workdir=/w",
		"-classpath /lib/*",
		taskManagerMainClass + " --configDir /w/conf -D a=b",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("command line lacks %q:\n%s", want, joined)
		}
	}
	if argv[0] != "/usr/bin/java" {
		t.Errorf("argv[0] = %q", argv[0])
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := freePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("bad or repeated port in %v", ports)
		}
		seen[p] = true
	}
}

func TestReadCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("key-0.count", "12")
	write("key-1.count", "7\n")
	write(".key-0.123.tmp", "13")
	write("notes.txt", "x")
	got, err := ReadCounts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["key-0"] != 12 || got["key-1"] != 7 {
		t.Fatalf("ReadCounts = %v", got)
	}
	write("key-2.count", "twelve")
	if _, err := ReadCounts(dir); err == nil {
		t.Error("a malformed count should be an error")
	}
	empty, err := ReadCounts(filepath.Join(dir, "missing"))
	if err != nil || len(empty) != 0 {
		t.Errorf("missing folder: %v, %v", empty, err)
	}
}

func TestTailLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := tailLines(path, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 200 || lines[0] != "line 100" || lines[199] != "line 299" {
		t.Fatalf("tail: %d lines, first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testkit", "flinkfixture")); err != nil {
		t.Fatalf("%s is not this repository's root: %v", root, err)
	}
}

// TestProcessGroupStop checks the process handling on a plain shell: the
// whole group (including a grandchild) ends on stop, and pid files go away.
func TestProcessGroupStop(t *testing.T) {
	work := t.TempDir()
	l := newLayout(work)
	for _, d := range l.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reg := filepath.Join(work, "reg")
	// The shell ignores SIGTERM, so stop must fall back to SIGKILL.
	argv := []string{"sh", "-c", `trap "" TERM; sleep 300 & echo $! > child; wait`}
	p, err := startProc("jobmanager", argv, l, reg)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(5 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(work, "child"))
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatal("the shell did not start its child")
	}
	if _, err := os.Stat(p.pidFile); err != nil {
		t.Errorf("pid file: %v", err)
	}
	if _, err := os.Stat(p.regFile); err != nil {
		t.Errorf("registry file: %v", err)
	}
	start := time.Now()
	if err := p.stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("stop took %v", time.Since(start))
	}
	waitGone(t, child)
	for _, f := range []string{p.pidFile, p.regFile} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s still exists after stop", f)
		}
	}
}

// TestReapLeftovers checks that a recorded process whose owner is gone is
// killed only when its command line names the recorded WorkDir.
func TestReapLeftovers(t *testing.T) {
	reg := t.TempDir()
	work := "/nonexistent/flinkkit-reap-" + strconv.Itoa(os.Getpid())

	// A finished process stands in for the dead owner.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := dead.Process.Pid

	start := func(marker string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "sleep 300; :", "sh", marker)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		return cmd
	}
	leftover := start("-Dflinkkit.workdir=" + work)
	stranger := start("-Dsomething.else=1")
	record := func(pid int) {
		rec := fmt.Sprintf("pid=%d\nowner=%d\nrole=jobmanager\nworkdir=%s\n", pid, deadOwner, work)
		if err := os.WriteFile(filepath.Join(reg, strconv.Itoa(pid)+".pid"), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	record(leftover.Process.Pid)
	record(stranger.Process.Pid)
	// Wait until both shells run with their final command lines.
	time.Sleep(200 * time.Millisecond)

	reapLeftovers(reg)

	waitGone(t, leftover.Process.Pid)
	if !processAlive(stranger.Process.Pid) {
		t.Error("a process that does not match its record was killed")
	}
	if entries, _ := os.ReadDir(reg); len(entries) != 0 {
		t.Errorf("registry not emptied: %v", entries)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// A zombie (state Z) is dead too; it only waits for its parent.
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d still runs", pid)
}

// TestPortTaken checks that a JobManager that could not bind its port is
// told apart from other start failures, so that only it is started again
// on new ports.
func TestPortTaken(t *testing.T) {
	c := &Cluster{layout: newLayout(t.TempDir())}
	if err := os.MkdirAll(c.layout.Logs, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(c.layout.Logs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("jobmanager.log", "INFO Starting rest endpoint.\nERROR Could not create the DispatcherResourceManagerComponent.\n")
	if c.portTaken() {
		t.Error("a failure without a bind error counts as a taken port")
	}
	write("jobmanager.log", "Caused by: java.net.BindException: Could not start rest endpoint on any port in port range 45149\n")
	if !c.portTaken() {
		t.Error("a BindException is not recognised")
	}
}

func TestApplicationProgramArgs(t *testing.T) {
	a := Application{JobClass: "C", JobID: "0123456789abcdef0123456789abcdef", Args: []string{"--out", "/o"},
		RestorePath: "file:/sp", AllowNonRestoredState: true}
	got := strings.Join(a.programArgs(), " ")
	want := "--job-classname C --job-id 0123456789abcdef0123456789abcdef --fromSavepoint file:/sp --allowNonRestoredState -- --out /o"
	if got != want {
		t.Errorf("program args:\n got %s\nwant %s", got, want)
	}
	a.RestorePath, a.Args = "", nil
	if got := strings.Join(a.programArgs(), " "); got != "--job-classname C --job-id 0123456789abcdef0123456789abcdef" {
		t.Errorf("program args without restore path and arguments: %s", got)
	}
	jar := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Application{}.withDefaults(jar)
	if err != nil || d.JobClass != TestJobClass || d.JobJar != jar || !jobIDPattern.MatchString(d.JobID) {
		t.Errorf("defaults: %+v, %v", d, err)
	}
	if _, err := (Application{JobID: "nope"}).withDefaults(jar); err == nil {
		t.Error("a malformed job id was accepted")
	}
	if _, err := (Application{}).withDefaults(jar + ".missing"); err == nil {
		t.Error("a missing jar was accepted")
	}
	argv := jvmCommandClasspath("java", []string{"/lib/*", jar}, newLayout("/w"), "jobmanager", nil, applicationMainClass, nil)
	if j := strings.Join(argv, " "); !strings.Contains(j, "-classpath /lib/*:"+jar+" "+applicationMainClass) {
		t.Errorf("command line: %s", j)
	}
}

// A shared cluster's description, written by the process that started it,
// gives the tests of another process its URL, folders, jar and slots; the
// cluster is External there, so that no test stops or kills it.
func TestSharedDescription(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.json")
	store := &ObjectStore{Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", AccessKey: "ak", SecretKey: "sk", Bucket: "shared-description-test"}
	c := &Cluster{URL: "http://127.0.0.1:8081", Version: "1.20.5", FlinkVersion: "1.20.5", WorkDir: "/w",
		SavepointURI: store.URI("w/savepoints"), CheckpointURI: store.URI("w/checkpoints"), Store: store,
		ConfDir: "/w/conf", LogDir: "/w/logs", LibDir: "/l",
		TestJobJar: "/j.jar", TestJobClass: TestJobClass, Slots: 8, Ports: Ports{REST: 8081, JobManagerRPC: 6123, Blob: 6124}}
	if err := c.WriteDescription(path); err != nil {
		t.Fatal(err)
	}
	t.Setenv(SharedEnv, "")
	if got, err := Shared(); got != nil || err != nil {
		t.Fatalf("Shared() without %s = %v, %v", SharedEnv, got, err)
	}
	t.Setenv(SharedEnv, path)
	got, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	if !got.External || got.URL != c.URL || got.WorkDir != c.WorkDir || got.SavepointDir != "" || got.TestJobJar != c.TestJobJar ||
		got.Slots != 8 || got.Ports != c.Ports || got.LogDir != c.LogDir || got.FlinkVersion != c.FlinkVersion ||
		got.SavepointURI != "s3://shared-description-test/w/savepoints" || got.CheckpointURI != c.CheckpointURI ||
		got.Store == nil || *got.Store != *store {
		t.Errorf("Shared() = %+v, want %+v as External", got, c)
	}
	// The store is known to this process from then on, for the S3 locations.
	if stores := storesFor(store.Bucket); len(stores) != 1 || *stores[0] != *store {
		t.Errorf("stores of bucket %s: %v", store.Bucket, stores)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the description, with the store's secret key, is readable by others: %v %v", fi.Mode(), err)
	}
	if err := got.Stop(); err != nil {
		t.Errorf("Stop of the shared cluster: %v", err)
	}
	if err := got.KillTaskManager(); err != ErrExternal {
		t.Errorf("KillTaskManager of the shared cluster: %v, want ErrExternal", err)
	}
	if got.ExistedBefore("any") {
		t.Error("a job existed before the test got the cluster")
	}
	if err := os.WriteFile(path, []byte(`{"url": ""}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Shared(); err == nil {
		t.Error("a description without a URL was taken")
	}
}

// A start is tried again on new ports when a JVM or the object store
// found a port it was given taken.
func TestPortTakenError(t *testing.T) {
	for msg, want := range map[string]bool{
		"java.net.BindException: Address already in use":                                                        true,
		"listen tcp 127.0.0.1:9333: bind: address already in use":                                               true,
		"port 9333 for Master (specified by flag master.port) is not available on 127.0.0.1 and cannot be used": true,
		"flinkfixture: the JobManager stopped during start (exit status 1)":                                     false,
	} {
		if got := portTakenError(errors.New(msg)); got != want {
			t.Errorf("portTakenError(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestShareable(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want bool
	}{
		{Config{Slots: 2}, true},
		{Config{}, true},
		{Config{Slots: 8, CacheDir: "/c"}, true},
		{Config{Slots: 9}, false},
		{Config{Slots: 2, Extra: map[string]string{"jobmanager.scheduler": "adaptive"}}, false},
		{Config{Slots: 1, Application: &Application{}}, false},
		{Config{Slots: 1, WorkDir: "/w"}, false},
		{Config{Slots: 1, RESTTLS: &RESTTLS{}}, false},
		{Config{NoTaskManager: true}, false},
		{Config{Slots: 2, ObjectStore: true}, true},
	} {
		if got := Shareable(tc.cfg, 8); got != tc.want {
			t.Errorf("Shareable(%+v, 8) = %v, want %v", tc.cfg, got, tc.want)
		}
	}
}

// A RESTTLS's configuration turns on the REST API's TLS with its stores,
// client authentication as asked, and cipher suites Go's TLS offers.
func TestRESTTLSConfig(t *testing.T) {
	for _, auth := range []bool{false, true} {
		c := (&RESTTLS{KeyStore: "/k.p12", TrustStore: "/t.p12", Password: "pw", ClientAuth: auth}).config()
		want := map[string]string{
			"security.ssl.rest.enabled": "true", "security.ssl.rest.keystore": "/k.p12", "security.ssl.rest.truststore": "/t.p12",
			"security.ssl.rest.keystore-password": "pw", "security.ssl.rest.key-password": "pw", "security.ssl.rest.truststore-password": "pw",
			"security.ssl.rest.authentication-enabled": fmt.Sprint(auth),
		}
		for k, v := range want {
			if c[k] != v {
				t.Errorf("auth %v: %s = %q, want %q", auth, k, c[k], v)
			}
		}
		supported := map[string]bool{}
		for _, cs := range tls.CipherSuites() {
			supported[cs.Name] = true
		}
		for _, cs := range strings.Split(c["security.ssl.algorithms"], ",") {
			if !supported[cs] {
				t.Errorf("security.ssl.algorithms has %s, which Go's TLS does not offer", cs)
			}
		}
	}
}
