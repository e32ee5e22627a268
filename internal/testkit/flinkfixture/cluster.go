package flinkfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/internal/flinkjvm"
)

// TestJobClass is the entry class of the test job jar.
const TestJobClass = "dev.flinkkit.testjob.CounterJob"

// Config describes the cluster to start.
type Config struct {
	// Version is the Flink release, e.g. "1.20.5" or "2.3.0"; required.
	Version string
	// CacheDir holds <Version>/lib and <Version>/flinkkit-testjob.jar.
	// Default: $FLINK_CACHE_DIR, else <repo root>/.cache/flink, the repo
	// root being the nearest folder with a go.mod, searched upwards from
	// the working directory.
	CacheDir string
	// WorkDir holds conf/, logs/, checkpoints/, savepoints/, out/, tmp/ and
	// upload/. Default: a new temporary folder, removed by Stop unless
	// KeepWorkDir is set or FLINKKIT_KEEP_WORKDIR=1.
	WorkDir string
	// Extra are Flink configuration entries that override the fixture's
	// (for example "jobmanager.scheduler": "adaptive"). Memory entries here
	// do not change the JVM flags the fixture derives from its own sizes.
	Extra map[string]string
	// Slots is the number of task slots of the one TaskManager; default 4.
	Slots int

	// Java is the java binary; default $JAVA_HOME/bin/java, else java on PATH.
	Java string
	// StartTimeout bounds each wait for the cluster to become ready when
	// the context has no deadline; default 2 minutes.
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL;
	// default 10 seconds.
	StopGrace time.Duration
	// KeepWorkDir keeps a temporary WorkDir after Stop.
	KeepWorkDir bool
	// SkipPrepare does not run scripts/flink.sh; the jars must be in place.
	SkipPrepare bool
	// Application, if not nil, starts an application cluster that runs
	// this job instead of a session cluster (see Application).
	Application *Application
	// RESTTLS, if not nil, serves the REST API with TLS (see RESTTLS);
	// the cluster's URL is then https://.
	RESTTLS *RESTTLS
	// NoTaskManager starts the JobManager alone, for tests of the REST
	// API that run no job: it is ready in about half the time.
	NoTaskManager bool
	// ObjectStore keeps the cluster's checkpoints and savepoints in an
	// S3-compatible object store (ObjectStore) instead of WorkDir:
	// Flink's S3 file system plugin (flink-s3-fs-hadoop, which
	// scripts/flink.sh fetches into <CacheDir>/<Version>/plugins) is
	// loaded, and the default checkpoint and savepoint folders are
	// s3://<bucket>/<cluster>/checkpoints and .../savepoints, <cluster>
	// being the base name of WorkDir. The store is the shared cluster's
	// when SharedEnv names one with a store (one server for all the
	// clusters of a run), and otherwise a server of the cluster's own,
	// started before the JobManager and stopped with the cluster.
	ObjectStore bool
}

// Cluster is a running (or, with FLINK_URL, an external) Flink session
// cluster. Its methods are safe for concurrent use.
type Cluster struct {
	URL           string // http://127.0.0.1:<rest port>, https:// with Config.RESTTLS
	Version       string // the version asked for
	FlinkVersion  string // the version the cluster reports in GET /config
	WorkDir       string
	SavepointDir  string // default savepoint folder (a local path); empty with Config.ObjectStore
	CheckpointDir string // checkpoint folder (a local path); empty with Config.ObjectStore
	// SavepointURI and CheckpointURI are the default savepoint folder and
	// the checkpoint folder as Flink names them: file:///... URIs of
	// SavepointDir and CheckpointDir, or s3:// URIs in Store.
	SavepointURI  string
	CheckpointURI string
	// Store is the object store that holds the cluster's state
	// (Config.ObjectStore); nil when the state is in WorkDir.
	Store        *ObjectStore
	ConfDir      string
	LogDir       string
	LibDir       string
	TestJobJar   string // the test job jar for this version
	TestJobClass string
	Slots        int
	Ports        Ports
	// External is true when the cluster was not started by this process
	// (StartFromEnv with FLINK_URL, or the shared cluster of SharedEnv):
	// process control methods then fail.
	External bool
	// Application is the job of an application cluster, with its defaults
	// filled in (its JobID in particular); nil for a session cluster.
	Application *Application

	cfg        Config
	layout     layout
	server     *ObjectStoreServer // the object store this cluster started, if any
	shared     bool               // the cluster of SharedEnv
	before     map[string]bool    // with shared: the jobs known when the test got it
	java       string
	regDir     string
	ownWorkDir bool
	http       *http.Client

	mu      sync.Mutex
	jm, tm  *proc
	tmSeq   int
	tmID    string // resource id of the current TaskManager
	stopped bool
}

// ErrExternal is returned by process control methods of an external cluster.
var ErrExternal = errors.New("flinkfixture: the cluster was not started by this process")

// Start prepares the jars, starts a JobManager and a TaskManager and waits
// until GET /overview shows the TaskManager with all its slots. On failure
// it stops whatever it started and returns an error that includes the
// processes' log tails. A start that failed because a port it chose was
// taken meanwhile (another process got it between the choice and Flink's
// bind) is tried again with new ports, up to three times in all.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, cfg)
		if err == nil || attempt == 3 || ctx.Err() != nil || !portTakenError(err) {
			return c, err
		}
	}
}

// portTakenError reports whether err, with the processes' log tails, says
// that a port was in use (Java's BindException, Go's "address already in
// use", or the object store's check of its ports before it binds them).
func portTakenError(err error) bool {
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "bindexception") || strings.Contains(m, "address already in use") ||
		strings.Contains(m, "is not available on") && strings.Contains(m, "cannot be used")
}

func start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Version == "" {
		return nil, errors.New("flinkfixture: Config.Version is required")
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if os.Getenv("FLINKKIT_KEEP_WORKDIR") == "1" {
		cfg.KeepWorkDir = true
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = os.Getenv("FLINK_CACHE_DIR") // as scripts/flink.sh takes it
	}
	if cfg.CacheDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		cfg.CacheDir = filepath.Join(root, ".cache", "flink")
	}
	if !cfg.SkipPrepare {
		if err := Prepare(ctx, cfg.Version, cfg.CacheDir); err != nil {
			return nil, err
		}
	}
	versionDir := filepath.Join(cfg.CacheDir, cfg.Version)
	lib := filepath.Join(versionDir, "lib")
	jar := filepath.Join(versionDir, "flinkkit-testjob.jar")
	if _, err := os.Stat(filepath.Join(lib, "flink-runtime-"+cfg.Version+".jar")); err != nil {
		return nil, fmt.Errorf("flinkfixture: no Flink %s runtime in %s (run scripts/flink.sh %s): %w", cfg.Version, lib, cfg.Version, err)
	}
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("flinkfixture: no test job jar for Flink %s (run scripts/flink.sh %s): %w", cfg.Version, cfg.Version, err)
	}
	java, err := javaBinary(cfg.Java)
	if err != nil {
		return nil, err
	}

	var app *Application
	if cfg.Application != nil {
		a, err := cfg.Application.withDefaults(jar)
		if err != nil {
			return nil, err
		}
		app = &a
	}

	regDir := filepath.Join(cfg.CacheDir, "run")
	reapLeftovers(regDir)

	c := &Cluster{
		Version:      cfg.Version,
		LibDir:       lib,
		TestJobJar:   jar,
		TestJobClass: TestJobClass,
		Slots:        cfg.Slots,
		Application:  app,
		cfg:          cfg,
		java:         java,
		regDir:       regDir,
		http:         &http.Client{Timeout: 10 * time.Second},
	}
	scheme := "http"
	if cfg.RESTTLS != nil {
		scheme = "https"
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg.RESTTLS.Client.Clone()
		c.http.Transport = t
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "flinkkit-"+cfg.Version+"-")
		if err != nil {
			return nil, err
		}
		cfg.WorkDir = dir
		c.ownWorkDir = true
	}
	workDir, err := filepath.Abs(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	c.layout = newLayout(workDir)
	c.WorkDir = workDir
	c.ConfDir = c.layout.Conf
	c.LogDir = c.layout.Logs
	c.SavepointDir = c.layout.Savepoints
	c.CheckpointDir = c.layout.Checkpoints
	c.SavepointURI = fileURI(c.SavepointDir)
	c.CheckpointURI = fileURI(c.CheckpointDir)
	for _, d := range c.layout.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.cleanupWorkDir()
			return nil, err
		}
	}
	if cfg.ObjectStore {
		if err := c.useObjectStore(ctx, versionDir); err != nil {
			c.Stop()
			return nil, err
		}
	}

	if err := os.WriteFile(filepath.Join(c.layout.Conf, "log4j.properties"), []byte(flinkjvm.Log4jConfig), 0o644); err != nil {
		c.cleanupWorkDir()
		return nil, err
	}
	fail := func(err error) (*Cluster, error) {
		logs := c.Logs()
		c.Stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	// The ports are free when chosen, but another process (such as a
	// second cluster starting at the same time) can take one before the
	// JobManager binds it: then the start is tried again on new ports.
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(3)
		if err != nil {
			c.cleanupWorkDir()
			return nil, err
		}
		c.Ports = Ports{REST: ports[0], JobManagerRPC: ports[1], Blob: ports[2]}
		c.URL = scheme + "://127.0.0.1:" + strconv.Itoa(c.Ports.REST)
		extra := map[string]string{}
		if app != nil {
			extra = applicationConfig()
		}
		if cfg.RESTTLS != nil {
			for k, v := range cfg.RESTTLS.config() {
				extra[k] = v
			}
		}
		if c.Store != nil {
			for k, v := range c.Store.flinkConfig(c.layout.Tmp) {
				extra[k] = v
			}
			extra["execution.checkpointing.dir"] = c.CheckpointURI
			extra["execution.checkpointing.savepoint-dir"] = c.SavepointURI
		}
		for k, v := range cfg.Extra {
			extra[k] = v
		}
		conf := flinkConfig(c.layout, c.Ports, cfg.Slots, extra)
		if err := os.WriteFile(filepath.Join(c.layout.Conf, "config.yaml"), renderYAML(conf), 0o644); err != nil {
			c.cleanupWorkDir()
			return nil, err
		}
		c.mu.Lock()
		err = c.startJobManagerLocked()
		if err == nil && !cfg.NoTaskManager {
			err = c.startTaskManagerLocked()
		}
		c.mu.Unlock()
		if err == nil {
			err = c.waitReady(ctx)
		}
		if err == nil {
			break
		}
		if attempt >= maxStartAttempts || !c.portTaken() || ctx.Err() != nil {
			return fail(err)
		}
		c.stopProcesses()
	}
	if c.server != nil {
		if err := c.waitObjectStore(ctx); err != nil {
			return fail(err)
		}
	}
	var fc struct {
		FlinkVersion string `json:"flink-version"`
	}
	if err := c.getJSON(ctx, "/config", &fc); err != nil {
		return fail(c.stoppedDuringStart(err))
	}
	c.FlinkVersion = fc.FlinkVersion
	return c, nil
}

// stoppedDuringStart is err, a request's failure right after the
// JobManager answered, or, when the JobManager exits within a few
// seconds of it (an application that failed at once, which Flink ends
// by stopping the JobManager), the error saying so with its cause.
func (c *Cluster) stoppedDuringStart(err error) error {
	c.mu.Lock()
	jm := c.jm
	c.mu.Unlock()
	if jm == nil {
		return err
	}
	select {
	case <-jm.done:
		return fmt.Errorf("flinkfixture: the JobManager stopped during start (%s)", jm.exitDescription())
	case <-time.After(5 * time.Second):
		return err
	}
}

func javaBinary(java string) (string, error) {
	if java != "" {
		return java, nil
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("flinkfixture: no java found (set JAVA_HOME or PATH): %w", err)
	}
	return p, nil
}

// classpath is the JVMs' classpath: Flink's jars, and an application's jar.
func (c *Cluster) classpath() []string {
	cp := []string{filepath.Join(c.LibDir, "*")}
	if c.Application != nil {
		cp = append(cp, c.Application.JobJar)
	}
	return cp
}

func (c *Cluster) startJobManagerLocked() error {
	mainClass, args := jobManagerMainClass, []string(nil)
	if c.Application != nil {
		mainClass, args = applicationMainClass, c.Application.programArgs()
	}
	argv := jvmCommandClasspath(c.java, c.classpath(), c.layout, "jobmanager",
		defaultJobManagerMemory.jvmArgs(), mainClass, args)
	p, err := startProc("jobmanager", argv, c.layout, c.regDir)
	if err != nil {
		return err
	}
	c.jm = p
	return nil
}

func (c *Cluster) startTaskManagerLocked() error {
	c.tmSeq++
	id := fmt.Sprintf("flinkkit-tm-%d", c.tmSeq)
	argv := jvmCommandClasspath(c.java, c.classpath(), c.layout, "taskmanager",
		defaultTaskManagerMemory.jvmArgs(), taskManagerMainClass,
		[]string{"-D", "taskmanager.resource-id=" + id})
	p, err := startProc("taskmanager", argv, c.layout, c.regDir)
	if err != nil {
		return err
	}
	c.tm = p
	c.tmID = id
	return nil
}

// waitReady polls GET /overview until the JobManager answers and, when a
// TaskManager runs, until that TaskManager is registered with all its
// slots. It fails early when a process exits.
func (c *Cluster) waitReady(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.StartTimeout)
		defer cancel()
	}
	var last string
	for {
		c.mu.Lock()
		jm, tm, tmID := c.jm, c.tm, c.tmID
		c.mu.Unlock()
		if jm == nil || jm.exited() {
			desc := "not running"
			if jm != nil {
				desc = jm.exitDescription()
			}
			return fmt.Errorf("flinkfixture: the JobManager stopped during start (%s)", desc)
		}
		if tm != nil && tm.exited() {
			return fmt.Errorf("flinkfixture: the TaskManager stopped during start (%s)", tm.exitDescription())
		}
		ready, state, err := c.readyOnce(ctx, tm != nil, tmID)
		if err == nil && ready {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = state
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("flinkfixture: cluster at %s not ready: %w (last: %s)", c.URL, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) readyOnce(ctx context.Context, needTM bool, tmID string) (bool, string, error) {
	var ov struct {
		TaskManagers int `json:"taskmanagers"`
		SlotsTotal   int `json:"slots-total"`
	}
	if err := c.getJSON(ctx, "/overview", &ov); err != nil {
		return false, "", err
	}
	if !needTM {
		return true, "", nil
	}
	if ov.TaskManagers < 1 || ov.SlotsTotal < c.Slots {
		return false, fmt.Sprintf("overview: %d taskmanagers, %d slots", ov.TaskManagers, ov.SlotsTotal), nil
	}
	var tms struct {
		TaskManagers []struct {
			ID         string `json:"id"`
			SlotsTotal int    `json:"slotsNumber"`
		} `json:"taskmanagers"`
	}
	if err := c.getJSON(ctx, "/taskmanagers", &tms); err != nil {
		return false, "", err
	}
	for _, tm := range tms.TaskManagers {
		if tm.ID == tmID && tm.SlotsTotal >= c.Slots {
			return true, "", nil
		}
	}
	return false, fmt.Sprintf("taskmanager %s not registered yet", tmID), nil
}

func (c *Cluster) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return json.Unmarshal(body, v)
}

// Stop stops the TaskManager and the JobManager (SIGTERM to each process
// group, SIGKILL after Config.StopGrace) and removes a temporary WorkDir.
// It is safe to call more than once; later calls do nothing.
func (c *Cluster) Stop() error {
	if c == nil || c.External {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	err := c.stopProcessesLocked()
	if c.server != nil {
		err = errors.Join(err, c.server.stop())
	}
	c.cleanupWorkDir()
	return err
}

// maxStartAttempts bounds the starts on new ports after a port was taken.
const maxStartAttempts = 3

// portTaken reports whether a JVM of the cluster failed to bind one of
// its ports.
func (c *Cluster) portTaken() bool {
	for _, name := range []string{"jobmanager.log", "jobmanager.out", "taskmanager.log", "taskmanager.out"} {
		b, err := os.ReadFile(filepath.Join(c.layout.Logs, name))
		if err == nil && (bytes.Contains(b, []byte("BindException")) || bytes.Contains(b, []byte("Address already in use"))) {
			return true
		}
	}
	return false
}

// stopProcesses stops the JVMs and keeps the work folder, for another
// start.
func (c *Cluster) stopProcesses() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.stopProcessesLocked()
}

func (c *Cluster) stopProcessesLocked() error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []*proc{c.tm, c.jm} {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stop(c.cfg.StopGrace)
		}()
	}
	wg.Wait()
	c.tm, c.jm = nil, nil
	return errors.Join(errs...)
}

func (c *Cluster) cleanupWorkDir() {
	if c.ownWorkDir && !c.cfg.KeepWorkDir && c.WorkDir != "" {
		_ = os.RemoveAll(c.WorkDir)
	}
}

// KillTaskManager kills the TaskManager with SIGKILL, like a crash. The
// JobManager notices it after a few missed heartbeats.
func (c *Cluster) KillTaskManager() error {
	if c.External {
		return ErrExternal
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("flinkfixture: cluster stopped")
	}
	if c.tm == nil {
		return errors.New("flinkfixture: no TaskManager running")
	}
	err := c.tm.stop(0)
	c.tm = nil
	return err
}

// StartTaskManager starts a new TaskManager (with a new resource id) and
// waits until it is registered with all its slots.
func (c *Cluster) StartTaskManager(ctx context.Context) error {
	if c.External {
		return ErrExternal
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("flinkfixture: cluster stopped")
	}
	if c.tm != nil && !c.tm.exited() {
		c.mu.Unlock()
		return errors.New("flinkfixture: a TaskManager is already running")
	}
	if c.tm != nil {
		c.tm.forget()
	}
	err := c.startTaskManagerLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// RestartJobManager kills the JobManager with SIGKILL and starts it again
// with the same configuration and ports, then waits until the REST API
// answers and the TaskManager (if one runs) has registered again. Without
// high availability the new JobManager knows nothing of earlier jobs,
// savepoint triggers or uploaded jars' runs: GET /jobs/<old id> answers 404.
func (c *Cluster) RestartJobManager(ctx context.Context) error {
	if c.External {
		return ErrExternal
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("flinkfixture: cluster stopped")
	}
	if c.jm != nil {
		if err := c.jm.stop(0); err != nil {
			c.mu.Unlock()
			return err
		}
	}
	c.jm = nil
	err := c.startJobManagerLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// TaskManagerID is the resource id of the current (or last started)
// TaskManager, as listed by GET /taskmanagers: flinkkit-tm-1, -2, ...
func (c *Cluster) TaskManagerID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tmID
}

// ProcessInfo describes one running process of the cluster.
type ProcessInfo struct {
	Role string // "jobmanager", "taskmanager" or "objectstore"
	PID  int
	RSS  int64 // resident set size in bytes
}

// Processes lists the running JVMs, and the object store the cluster
// started (not a shared one), with their resident memory.
func (c *Cluster) Processes() []ProcessInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ProcessInfo
	procs := []*proc{c.jm, c.tm}
	if c.server != nil {
		procs = append(procs, c.server.proc)
	}
	for _, p := range procs {
		if p == nil || p.exited() {
			continue
		}
		rss, _ := rssBytes(p.pid)
		out = append(out, ProcessInfo{Role: p.role, PID: p.pid, RSS: rss})
	}
	return out
}

// Logs returns the last 200 lines of each process's log and console output,
// each under a labelled header, for printing when a test fails (nothing for
// a cluster at FLINK_URL, whose logs are elsewhere).
func (c *Cluster) Logs() string {
	if c == nil || c.External && !c.shared || c.LogDir == "" {
		return ""
	}
	var b strings.Builder
	for _, name := range []string{"jobmanager.log", "jobmanager.out", "taskmanager.log", "taskmanager.out", "objectstore.out"} {
		path := filepath.Join(c.LogDir, name)
		lines, err := tailLines(path, 200)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "===== %s (last %d lines) =====\n", path, len(lines))
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// tailLines returns up to n last lines of a file, reading at most its last 1 MiB.
func tailLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const maxRead = 1 << 20
	off := max(st.Size()-maxRead, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	text := strings.TrimRight(string(buf), "\n")
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // first line is probably cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// OutDir creates and returns a new, empty folder under WorkDir/out for the
// test job's --out argument.
func (c *Cluster) OutDir(name string) string {
	base := filepath.Join(c.WorkDir, "out")
	if c.WorkDir == "" {
		base = os.TempDir()
	}
	_ = os.MkdirAll(base, 0o755)
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, name)
	dir, err := os.MkdirTemp(base, safe+"-")
	if err != nil {
		panic(fmt.Sprintf("flinkfixture: create out folder: %v", err))
	}
	return dir
}
