package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// Deployer starts application clusters on this machine: for each job, a
// JobManager running Flink's StandaloneApplicationClusterEntryPoint and
// one TaskManager, two java processes on 127.0.0.1, under
// WorkDir/<ClusterName(job id)>. It implements lifecycle.Deployer. The
// processes outlive the calling process; a Deployer with the same WorkDir,
// in this process or a later one, finds them again. Its methods are safe
// for concurrent use, also by several processes sharing WorkDir.
//
// A Deployer is configured by its fields; LibDir and WorkDir are required.
type Deployer struct {
	// LibDir is the folder of Flink's jars: the lib/ folder of a Flink
	// distribution, or jars from Maven Central (flink-runtime,
	// flink-clients, flink-container, flink-streaming-java, the RPC
	// system, logging) as scripts/flink.sh collects them. It must hold
	// flink-container (or flink-dist), where the entry point is.
	LibDir string
	// WorkDir holds one folder per cluster (configuration, logs, pid
	// files, its state), and the clusters' checkpoints/ and savepoints/,
	// which Delete keeps.
	WorkDir string
	// Java is the java binary (Java 17 or later); default
	// $JAVA_HOME/bin/java, else java on PATH.
	Java string
	// Slots is the TaskManager's number of task slots; default the
	// request's Parallelism, at least 1.
	Slots int
	// Configuration holds Flink settings for every cluster. They override
	// the Deployer's defaults, and the request's FlinkConfiguration with
	// lifecycle.ApplicationConfiguration's settings overrides them.
	Configuration map[string]string
	// ClientOptions are the options of the clients Client returns;
	// default flinkapi.WithRetryPolicy(flinkapi.NoRetry), as a controller
	// uses them.
	ClientOptions []flinkapi.Option
	// StartTimeout bounds Deploy's wait for a new cluster's REST API when
	// the context has no earlier deadline; default 2 minutes.
	StartTimeout time.Duration
	// StopGrace is how long Delete waits after SIGTERM before SIGKILL;
	// default 10 seconds. Delete waits at most 10 seconds more.
	StopGrace time.Duration
}

var _ lifecycle.Deployer = (*Deployer)(nil)

// ClusterName is the name of the cluster of job id: "flinkkit-" and the
// id, which is also the name of its folder under WorkDir.
func ClusterName(id flinkapi.JobID) string { return "flinkkit-" + string(id) }

var namePattern = regexp.MustCompile(`^flinkkit-[0-9a-f]{32}$`)

// Dir is the folder of cluster c under WorkDir: conf/, logs/
// (jobmanager.log, jobmanager.out, taskmanager.log, taskmanager.out), the
// pid files and cluster.json. It is empty for a name this Deployer does
// not give.
func (d *Deployer) Dir(c lifecycle.Cluster) string {
	if !namePattern.MatchString(c.Name) || d.WorkDir == "" {
		return ""
	}
	return filepath.Join(d.WorkDir, c.Name)
}

// state is a cluster's cluster.json.
type state struct {
	Name  string         `json:"name"`
	JobID flinkapi.JobID `json:"jobID"`
	URL   string         `json:"url"`
	// Ready: the REST API answered once; from then on Deploy returns the
	// cluster whatever became of it.
	Ready bool `json:"ready"`
}

func (s state) cluster() lifecycle.Cluster {
	return lifecycle.Cluster{Name: s.Name, URL: s.URL, JobID: s.JobID}
}

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{lifecycle.ErrDeployRefused}, args...)...)
}

// check validates the Deployer and returns the java binary.
func (d *Deployer) check() (string, error) {
	if d.WorkDir == "" {
		return "", refused("localcluster: Deployer.WorkDir is not set")
	}
	if d.LibDir == "" {
		return "", refused("localcluster: Deployer.LibDir (the folder of Flink's jars) is not set")
	}
	jars, err := filepath.Glob(filepath.Join(d.LibDir, "*.jar"))
	if fi, serr := os.Stat(d.LibDir); serr != nil || !fi.IsDir() {
		return "", refused("localcluster: Flink lib folder %s: not a folder", d.LibDir)
	}
	if err != nil || len(jars) == 0 {
		return "", refused("localcluster: Flink lib folder %s has no jars", d.LibDir)
	}
	entry := false
	for _, j := range jars {
		b := filepath.Base(j)
		entry = entry || strings.HasPrefix(b, "flink-container") || strings.HasPrefix(b, "flink-dist")
	}
	if !entry {
		return "", refused("localcluster: Flink lib folder %s has no flink-container or flink-dist jar (StandaloneApplicationClusterEntryPoint)", d.LibDir)
	}
	return javaBinary(d.Java)
}

func javaBinary(java string) (string, error) {
	if java != "" {
		p, err := exec.LookPath(java)
		if err != nil {
			return "", refused("localcluster: java %s: %v", java, err)
		}
		return p, nil
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", refused("localcluster: no java found (set Deployer.Java, JAVA_HOME or PATH): %v", err)
	}
	return p, nil
}

func checkRequest(req lifecycle.DeployRequest) error {
	if err := req.JobID.Validate(); err != nil {
		return refused("localcluster: job id: %v", err)
	}
	if req.JarFile == "" {
		return refused("localcluster: the request names no jar (DeployRequest.JarFile)")
	}
	if fi, err := os.Stat(req.JarFile); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = errors.New("not a file")
		}
		return refused("localcluster: job jar %s: %v", req.JarFile, err)
	}
	if req.EntryClass == "" {
		return refused("localcluster: the request names no entry class (DeployRequest.EntryClass)")
	}
	return nil
}

// Deploy starts the cluster of req.JobID, or returns the one it started
// before (by this Deployer or another with the same WorkDir), whatever
// became of it since; only after Delete does it start a new one. A new
// cluster is returned once its REST API answers. Errors that a retry
// will not change (the Deployer's or the request's settings, a JobManager
// that exits during its start) wrap lifecycle.ErrDeployRefused.
func (d *Deployer) Deploy(ctx context.Context, req lifecycle.DeployRequest) (lifecycle.Cluster, error) {
	java, err := d.check()
	if err != nil {
		return lifecycle.Cluster{}, err
	}
	if err := checkRequest(req); err != nil {
		return lifecycle.Cluster{}, err
	}
	if req.JarFile, err = filepath.Abs(req.JarFile); err != nil {
		return lifecycle.Cluster{}, err
	}
	name := ClusterName(req.JobID)
	dir, err := d.clusterDir(name)
	if err != nil {
		return lifecycle.Cluster{}, err
	}
	unlock, err := d.lock(name)
	if err != nil {
		return lifecycle.Cluster{}, err
	}
	defer unlock()

	st, err := readState(dir)
	if err != nil {
		return lifecycle.Cluster{}, err
	}
	if st != nil && st.Ready {
		return st.cluster(), nil
	}
	// A start that did not finish (the caller stopped during it): go on
	// with it if its JobManager runs, else start afresh.
	if st != nil {
		if procs, err := findProcesses(dir); err == nil && len(procs[roleJobManager]) > 0 {
			if err := d.waitReady(ctx, dir, st.URL, nil, nil); err == nil {
				st.Ready = true
				return st.cluster(), writeState(dir, *st)
			}
		}
		if err := stopProcesses(dir, 0); err != nil {
			return lifecycle.Cluster{}, err
		}
	}
	return d.start(ctx, java, dir, req)
}

// maxStartAttempts bounds the starts on new ports after a port was taken.
const maxStartAttempts = 3

func (d *Deployer) start(ctx context.Context, java, dir string, req lifecycle.DeployRequest) (lifecycle.Cluster, error) {
	l := newLayout(dir)
	for _, sub := range append(l.dirs(), d.checkpointDir(), d.savepointDir()) {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return lifecycle.Cluster{}, fmt.Errorf("localcluster: %w", err)
		}
	}
	for attempt := 1; ; attempt++ {
		p, err := freePorts()
		if err != nil {
			return lifecycle.Cluster{}, err
		}
		st := state{Name: filepath.Base(dir), JobID: req.JobID, URL: "http://127.0.0.1:" + strconv.Itoa(p.REST)}
		if err := writeConf(l, d.flinkConfiguration(l, p, d.slots(req), req)); err != nil {
			return lifecycle.Cluster{}, err
		}
		if err := writeState(dir, st); err != nil {
			return lifecycle.Cluster{}, err
		}
		jm, err := startProcess(l, roleJobManager, d.jvmCommand(java, l, roleJobManager, req))
		var tm *started
		if err == nil {
			tm, err = startProcess(l, roleTaskManager, d.jvmCommand(java, l, roleTaskManager, req))
		}
		if err == nil {
			err = d.waitReady(ctx, dir, st.URL, jm, tm)
		}
		if err == nil {
			st.Ready = true
			return st.cluster(), writeState(dir, st)
		}
		// Leave nothing running, and no state: a retry starts afresh; the
		// logs stay for the user.
		serr := stopProcesses(dir, 0)
		_ = os.Remove(filepath.Join(dir, stateFile))
		if serr != nil {
			return lifecycle.Cluster{}, errors.Join(err, serr)
		}
		if attempt < maxStartAttempts && portTaken(l) && ctx.Err() == nil {
			continue
		}
		return lifecycle.Cluster{}, err
	}
}

// waitReady polls GET /overview until the JobManager answers with a
// TaskManager registered. It fails (with ErrDeployRefused and the cause
// from the log) when the JobManager or the TaskManager exits first. jm
// and tm are the processes this Deployer just started; nil: a start by
// an earlier caller, whose processes are looked up instead.
func (d *Deployer) waitReady(ctx context.Context, dir, url string, jm, tm *started) error {
	timeout := d.StartTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	l := newLayout(dir)
	var last string
	for {
		jmGone, tmGone := false, false
		if jm != nil {
			jmGone, tmGone = jm.exited(), tm.exited()
		} else if procs, err := findProcesses(dir); err == nil {
			jmGone, tmGone = len(procs[roleJobManager]) == 0, len(procs[roleTaskManager]) == 0
		}
		if jmGone {
			return refused("localcluster: the JobManager of %s exited during its start: %s (logs in %s)",
				filepath.Base(dir), logCause(l, roleJobManager), l.Logs)
		}
		if tmGone {
			return refused("localcluster: the TaskManager of %s exited during its start: %s (logs in %s)",
				filepath.Base(dir), logCause(l, roleTaskManager), l.Logs)
		}
		ok, desc := overviewOnce(ctx, client, url)
		if ok {
			return nil
		}
		last = desc
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: the cluster %s at %s is not ready: %w (last: %s)", filepath.Base(dir), url, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func overviewOnce(ctx context.Context, client *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/overview", nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	var ov struct {
		TaskManagers int `json:"taskmanagers"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return false, resp.Status
	}
	if err := json.Unmarshal(body, &ov); err != nil || ov.TaskManagers < 1 {
		return false, "no TaskManager registered yet"
	}
	return true, ""
}

// logCause is the last "Caused by:" line of a process's log, or its last
// line.
func logCause(l layout, role string) string {
	var last string
	for _, name := range []string{role + ".log", role + ".out"} {
		b, err := os.ReadFile(filepath.Join(l.Logs, name))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "Caused by:") {
				return strings.TrimSpace(lines[i])
			}
		}
		if len(lines) > 0 && lines[len(lines)-1] != "" {
			last = strings.TrimSpace(lines[len(lines)-1])
		}
	}
	if last == "" {
		return "no log"
	}
	return last
}

// portTaken reports whether a process failed to bind one of its ports.
func portTaken(l layout) bool {
	for _, name := range []string{"jobmanager.log", "jobmanager.out", "taskmanager.log", "taskmanager.out"} {
		b, err := os.ReadFile(filepath.Join(l.Logs, name))
		if err == nil && (bytes.Contains(b, []byte("BindException")) || bytes.Contains(b, []byte("Address already in use"))) {
			return true
		}
	}
	return false
}

// Delete stops the processes of c (SIGTERM, SIGKILL after StopGrace),
// waits until they have exited, and removes the cluster's folder; the
// checkpoints and savepoints under WorkDir stay. A cluster that is gone
// is success.
func (d *Deployer) Delete(ctx context.Context, c lifecycle.Cluster) error {
	dir, err := d.clusterDir(c.Name)
	if err != nil {
		return err
	}
	unlock, err := d.lock(c.Name)
	if err != nil {
		return err
	}
	defer unlock()
	grace := d.StopGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	if err := stopProcesses(dir, grace); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("localcluster: remove %s: %w", dir, err)
	}
	return nil
}

// Exists reports whether c was started and not deleted, and its
// JobManager process runs.
func (d *Deployer) Exists(ctx context.Context, c lifecycle.Cluster) (bool, error) {
	dir, err := d.clusterDir(c.Name)
	if err != nil {
		return false, err
	}
	st, err := readState(dir)
	if err != nil || st == nil {
		return false, err
	}
	procs, err := findProcesses(dir)
	if err != nil {
		return false, err
	}
	return len(procs[roleJobManager]) > 0, nil
}

// Client returns a client of c's REST API, with ClientOptions. c.URL is
// used if set, else the URL recorded in the cluster's folder.
func (d *Deployer) Client(c lifecycle.Cluster) (lifecycle.API, error) {
	url := c.URL
	if url == "" {
		dir, err := d.clusterDir(c.Name)
		if err != nil {
			return nil, err
		}
		st, err := readState(dir)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, fmt.Errorf("localcluster: no cluster %s in %s", c.Name, d.WorkDir)
		}
		url = st.URL
	}
	opts := d.ClientOptions
	if opts == nil {
		opts = []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)}
	}
	return flinkapi.NewClient(url, opts...)
}

func (d *Deployer) clusterDir(name string) (string, error) {
	if d.WorkDir == "" {
		return "", refused("localcluster: Deployer.WorkDir is not set")
	}
	if !namePattern.MatchString(name) {
		return "", refused("localcluster: %q is not the name of a cluster of this Deployer", name)
	}
	work, err := filepath.Abs(d.WorkDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(work, name), nil
}

func (d *Deployer) checkpointDir() string { return filepath.Join(d.absWorkDir(), "checkpoints") }
func (d *Deployer) savepointDir() string  { return filepath.Join(d.absWorkDir(), "savepoints") }

func (d *Deployer) absWorkDir() string {
	if w, err := filepath.Abs(d.WorkDir); err == nil {
		return w
	}
	return d.WorkDir
}

// lock takes the lock of cluster name (a file beside its folder, locked
// with flock), which serialises Deploy and Delete of one cluster across
// goroutines and processes.
func (d *Deployer) lock(name string) (func(), error) {
	if err := os.MkdirAll(d.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(d.WorkDir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("localcluster: lock %s: %w", f.Name(), err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

const stateFile = "cluster.json"

// readState reads dir's cluster.json; nil without one.
func readState(dir string) (*state, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("localcluster: %s: %w", filepath.Join(dir, stateFile), err)
	}
	return &st, nil
}

// writeState replaces dir's cluster.json atomically.
func writeState(dir string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// freePorts picks three distinct free ports on 127.0.0.1. Another process
// can take one before the JobManager binds it: Deploy then starts again
// on new ones.
func freePorts() (ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out [3]int
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports{}, fmt.Errorf("localcluster: pick a free port: %w", err)
		}
		ls = append(ls, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports{REST: out[0], RPC: out[1], Blob: out[2]}, nil
}
