package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// CounterJobClass is the entry class of flinkkit's test job, a keyed counter
// that writes each key's count to <out>/<key>.count.
const CounterJobClass = flinktest.CounterJobClass

// Keys and Rate are the test job's number of keys and events per second
// (all keys together) in the demos: each key counts Rate/Keys a second.
const (
	Keys = 3
	Rate = 30
)

// retainCheckpoints keeps a job's latest checkpoint when it is cancelled
// or fails, so that it can be restored from (Flink's default deletes it).
var retainCheckpoints = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}

// Config says which cluster a demo runs against.
type Config struct {
	// FlinkURL is the JobManager's REST URL; empty: a fake JobManager
	// (package flinktest) in real time.
	FlinkURL string
	// Jar is the test job's jar file; required with FlinkURL.
	Jar string
	// EntryClass is the jar's entry class; empty: CounterJobClass.
	EntryClass string
	// Out is the folder the jobs write their counts under, one subfolder
	// per job; empty: a new temporary folder (a virtual one on the fake).
	Out string
	// SavepointDir is where savepoints are written; empty: the cluster's
	// default.
	SavepointDir string
}

// Cluster is a Flink session cluster a demo runs against, with the job's
// jar uploaded.
type Cluster struct {
	// Client talks to the JobManager.
	Client *flinkapi.Client
	// Version is the cluster's Flink version.
	Version flinkapi.Version
	// URL is the JobManager's REST URL.
	URL string
	// Fake is the fake JobManager, nil on a real cluster.
	Fake *flinktest.Server
	// JarID is the uploaded jar.
	JarID flinkapi.JarID
	// EntryClass is the jar's entry class.
	EntryClass string
	// Out is the folder the jobs write their counts under.
	Out string
	// SavepointDir is the savepoints' target directory; empty: the
	// cluster's default.
	SavepointDir string
	// Timing is the deadlines and poll interval of the demo's operations.
	Timing lifecycle.Timing
}

// shownURL is raw as the demo's messages show it: whatever stands before
// an '@' of the address (user info, a password) is replaced by xxxxx.
func shownURL(raw string) string {
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	from := strings.Index(raw, "://")
	if from < 0 || from > at {
		return "xxxxx" + raw[at:]
	}
	return raw[:from+3] + "xxxxx" + raw[at:]
}

// Open checks cfg, starts the fake JobManager or reaches the real one, and
// uploads the jar. Its errors are one line each, naming the flag at fault.
func Open(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.FlinkURL == "" {
		if cfg.Jar != "" {
			return nil, errors.New("--jar needs --flink-url: without it the demo runs on a fake JobManager that needs no jar")
		}
		return openFake(ctx, cfg)
	}
	if cfg.Jar == "" {
		return nil, errors.New("--flink-url needs --jar PATH, the job's jar file (flinkkit's test job: .cache/flink/<version>/flinkkit-testjob.jar)")
	}
	c, err := flinkapi.NewClient(cfg.FlinkURL, flinkapi.WithTimeout(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("--flink-url %q: %v", shownURL(cfg.FlinkURL), unwrapInput(err))
	}
	if fi, err := os.Stat(cfg.Jar); err != nil {
		return nil, fmt.Errorf("--jar %s: %v", cfg.Jar, errors.Unwrap(err))
	} else if fi.IsDir() {
		return nil, fmt.Errorf("--jar %s: is a directory, not a jar file", cfg.Jar)
	}
	// One quick look first, so that a wrong address fails in seconds
	// rather than after the client's retries.
	probe, err := flinkapi.NewClient(cfg.FlinkURL, flinkapi.WithTimeout(5*time.Second),
		flinkapi.WithRetryPolicy(flinkapi.RetryPolicy{MaxAttempts: 2, InitialInterval: 500 * time.Millisecond, MaxInterval: time.Second, MaxElapsed: 5 * time.Second}))
	if err != nil {
		return nil, fmt.Errorf("--flink-url %q: %v", shownURL(cfg.FlinkURL), unwrapInput(err))
	}
	v, err := probe.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("no Flink JobManager answers at %s: %v", shownURL(cfg.FlinkURL), err)
	}
	out := cfg.Out
	if out == "" {
		if out, err = os.MkdirTemp("", "flinkkit-demo-"); err != nil {
			return nil, err
		}
	} else if out, err = filepath.Abs(out); err != nil {
		return nil, fmt.Errorf("--out %s: %v", cfg.Out, err)
	}
	jar, err := c.UploadJar(ctx, cfg.Jar)
	if err != nil {
		return nil, fmt.Errorf("uploading --jar %s to %s: %v", cfg.Jar, cfg.FlinkURL, err)
	}
	return &Cluster{Client: c, Version: v, URL: c.BaseURL(), JarID: jar, EntryClass: orDefault(cfg.EntryClass, CounterJobClass),
		Out: out, SavepointDir: cfg.SavepointDir,
		Timing: lifecycle.Timing{Poll: 250 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}}, nil
}

func openFake(ctx context.Context, cfg Config) (*Cluster, error) {
	srv := flinktest.NewServer(
		flinktest.WithRealTime(),
		flinktest.WithSavepointDuration(time.Second),
		flinktest.WithCheckpointInterval(500*time.Millisecond),
		flinktest.WithRefreshInterval(200*time.Millisecond),
	)
	c, err := flinkapi.NewClient(srv.URL)
	if err != nil {
		srv.Close()
		return nil, err
	}
	v, err := c.Version(ctx)
	if err != nil {
		srv.Close()
		return nil, err
	}
	entry := orDefault(cfg.EntryClass, CounterJobClass)
	jar, err := c.UploadJarReader(ctx, "flinkkit-counter.jar", bytes.NewReader(flinktest.MinimalJar(entry)))
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &Cluster{Client: c, Version: v, URL: srv.URL, Fake: srv, JarID: jar, EntryClass: entry,
		Out: orDefault(cfg.Out, "/flinkkit-demo/out"), SavepointDir: cfg.SavepointDir,
		Timing: lifecycle.Timing{Poll: 100 * time.Millisecond, Savepoint: time.Minute, Stop: time.Minute, Submit: time.Minute}}, nil
}

// Close stops the fake JobManager; a real cluster is left as it is.
func (c *Cluster) Close() {
	if c.Fake != nil {
		c.Fake.Close()
	}
}

// String describes the cluster in a few words.
func (c *Cluster) String() string {
	if c.Fake != nil {
		return fmt.Sprintf("fake JobManager (flinktest) playing Flink %s at %s", c.Version, c.URL)
	}
	return fmt.Sprintf("Flink %s at %s, counts under %s", c.Version, c.URL, c.Out)
}

// OutDir is the folder the job called name writes its counts to.
func (c *Cluster) OutDir(name string) string { return filepath.Join(c.Out, name) }

// Run is the jar run request of the test job called name, counting Rate
// events a second over Keys keys and writing the counts to OutDir(name),
// checkpointing every half second and keeping its latest checkpoint when it
// is cancelled or fails. extra are more program arguments, such as
// "--fail-at", "200".
func (c *Cluster) Run(name string, extra ...string) flinkapi.RunJarRequest {
	return flinkapi.RunJarRequest{EntryClass: c.EntryClass, ProgramArgs: append(c.args(name, Rate), extra...), FlinkConfiguration: maps.Clone(retainCheckpoints)}
}

// Job is the test job called name as the lifecycle.JobTemplate of a
// lifecycle.JobSpec: the uploaded jar run as Run runs it, counting rate
// events a second (0: Rate).
func (c *Cluster) Job(name string, rate int) lifecycle.JobTemplate {
	return lifecycle.JobTemplate{JarID: c.JarID, EntryClass: c.EntryClass, Args: c.args(name, rate), FlinkConfiguration: maps.Clone(retainCheckpoints)}
}

// args are the test job's program arguments.
func (c *Cluster) args(name string, rate int) []string {
	if rate <= 0 {
		rate = Rate
	}
	return []string{"--out", c.OutDir(name), "--keys", strconv.Itoa(Keys), "--rate", strconv.Itoa(rate),
		"--parallelism", "1", "--checkpoint-interval", "500", "--name", name}
}

// Events returns how many events the job called name counted, as its
// count files show (the sum over its keys), and whether they could be read:
// once the job counted every key, and on a real cluster only when its
// TaskManager writes to this machine.
func (c *Cluster) Events(name string) (int64, bool) {
	var counts map[string]int64
	var err error
	if c.Fake != nil {
		counts, err = c.Fake.ReadCounts(c.OutDir(name))
	} else {
		counts, err = readCounts(c.OutDir(name))
	}
	if err != nil || len(counts) < Keys {
		return 0, false
	}
	var n int64
	for _, v := range counts {
		n += v
	}
	return n, true
}

// readCounts reads the test job's <dir>/<key>.count files.
func readCounts(dir string) (map[string]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".count")
		if !ok || e.IsDir() || strings.HasPrefix(key, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", e.Name(), err)
		}
		counts[key] = n
	}
	return counts, nil
}

// WaitRestored asks Flink's checkpoint statistics of job which checkpoint
// or savepoint it was restored from, until they say so (Flink caches the
// statistics for a few seconds) or timeout passes.
func (c *Cluster) WaitRestored(ctx context.Context, job flinkapi.JobID, timeout time.Duration) (*flinkapi.RestoredCheckpoint, error) {
	deadline := time.Now().Add(timeout)
	for {
		stats, err := c.Client.Checkpoints(ctx, job)
		if err == nil && stats.LatestRestored != nil && stats.LatestRestored.ExternalPath != "" {
			return stats.LatestRestored, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("the checkpoint statistics name no restored checkpoint")
			}
			return nil, fmt.Errorf("job %s: %w", job, err)
		}
		if err := sleep(ctx, c.Timing.Poll); err != nil {
			return nil, err
		}
	}
}

// WaitState polls the job's state until it is want, calling progress (if
// set) with the state seen and the time waited; it fails once the job ends
// in another state or after timeout.
func (c *Cluster) WaitState(ctx context.Context, job flinkapi.JobID, want flinkapi.JobState, timeout time.Duration, progress func(flinkapi.JobState, time.Duration)) error {
	start := time.Now()
	for {
		st, err := c.Client.JobStatus(ctx, job)
		if err == nil {
			if st == want {
				return nil
			}
			if st.IsGloballyTerminal() {
				return fmt.Errorf("job %s is %s, not %s", job, st, want)
			}
		}
		if progress != nil {
			progress(st, time.Since(start))
		}
		if time.Since(start) > timeout {
			if err == nil {
				err = fmt.Errorf("still %s", st)
			}
			return fmt.Errorf("job %s did not become %s within %v: %w", job, want, timeout, err)
		}
		if err := sleep(ctx, c.Timing.Poll); err != nil {
			return err
		}
	}
}

// TasksRunning reports whether every task of the job runs: a job is
// RUNNING before its tasks are, and a savepoint fails until they run.
func (c *Cluster) TasksRunning(ctx context.Context, job flinkapi.JobID) (bool, error) {
	d, err := c.Client.Job(ctx, job)
	if err != nil {
		return false, err
	}
	if d.State != flinkapi.JobRunning || len(d.Vertices) == 0 {
		return false, nil
	}
	for _, v := range d.Vertices {
		if v.Status != "RUNNING" {
			return false, nil
		}
	}
	return true, nil
}

// WaitTasks polls the job until all its tasks run, calling progress (if
// set) with the time waited; it fails after timeout.
func (c *Cluster) WaitTasks(ctx context.Context, job flinkapi.JobID, timeout time.Duration, progress func(time.Duration)) error {
	start := time.Now()
	for {
		ok, err := c.TasksRunning(ctx, job)
		if err == nil && ok {
			return nil
		}
		if time.Since(start) > timeout {
			if err == nil {
				err = errors.New("they do not run")
			}
			return fmt.Errorf("the tasks of job %s within %v: %w", job, timeout, err)
		}
		if progress != nil {
			progress(time.Since(start))
		}
		if err := sleep(ctx, c.Timing.Poll); err != nil {
			return err
		}
	}
}

// FailureCause returns the root cause of the newest failure in the job's
// exception history, in one line, and false if there is none (yet: Flink
// caches the history for a few seconds).
func (c *Cluster) FailureCause(ctx context.Context, job flinkapi.JobID) (string, bool) {
	ex, err := c.Client.JobExceptions(ctx, job, 1)
	if err != nil || len(ex.Entries) == 0 {
		return "no exception recorded", false
	}
	e := ex.Entries[0]
	if cause := flinkapi.RootCause(e.StackTrace); cause != "" {
		return cause, true
	}
	if e.Message != "" {
		return e.Message, true
	}
	return e.ExceptionName, true
}

// WaitCheckpoint polls the job's checkpoint statistics until they show a
// completed checkpoint, calling progress (if set) with the time waited; it
// fails after timeout.
func (c *Cluster) WaitCheckpoint(ctx context.Context, job flinkapi.JobID, timeout time.Duration, progress func(time.Duration)) error {
	start := time.Now()
	for {
		stats, err := c.Client.Checkpoints(ctx, job)
		if err == nil && stats.LatestCompleted != nil {
			return nil
		}
		if time.Since(start) > timeout {
			if err == nil {
				err = errors.New("none completed")
			}
			return fmt.Errorf("the checkpoints of job %s within %v: %w", job, timeout, err)
		}
		if progress != nil {
			progress(time.Since(start))
		}
		if err := sleep(ctx, c.Timing.Poll); err != nil {
			return err
		}
	}
}

// Short shortens a job id for display.
func Short(id flinkapi.JobID) string {
	if len(id) > 8 {
		return string(id[:8])
	}
	return string(id)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unwrapInput drops the "flinkapi: invalid input: " prefix of a URL error.
func unwrapInput(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "flinkapi: ")
	return strings.TrimPrefix(msg, "invalid input: ")
}

// WaitFailureCause waits up to 10 s for the job's exception history
// (Flink caches it for a few seconds) and returns its newest failure.
func (c *Cluster) WaitFailureCause(ctx context.Context, job flinkapi.JobID) string {
	for deadline := time.Now().Add(10 * time.Second); ; {
		cause, ok := c.FailureCause(ctx, job)
		if ok || time.Now().After(deadline) || ctx.Err() != nil {
			return cause
		}
		time.Sleep(c.Timing.Poll)
	}
}

// SameLocation compares savepoint locations written as file:/p or
// file:///p, with or without a trailing slash.
func SameLocation(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimSuffix(s, "/")
		if rest, ok := strings.CutPrefix(s, "file://"); ok {
			return "file:" + rest
		}
		return s
	}
	return norm(a) == norm(b)
}
