//go:build integration

package flinkfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests start one real Flink cluster for the package (FLINK_VERSION,
// e.g. 1.20.5 or 2.3.0) and exercise it over REST with the test job:
//
//	FLINK_VERSION=2.3.0 go test -tags integration -count=1 -v ./internal/testkit/flinkfixture/
//
// With FLINK_URL they use an already running cluster instead and skip the
// tests that kill or restart processes.

const testSlots = 4

var (
	cluster    *Cluster
	clusterErr error
	clusterOne sync.Once
	testJarID  string // the test job jar, uploaded once
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain runs the tests; the package's session cluster is started by the
// first test that uses it (so that the application cluster tests, which
// start clusters of their own, never run beside it) and stopped at the end.
func runMain(m *testing.M) int {
	if os.Getenv("FLINK_VERSION") == "" && os.Getenv("FLINK_URL") == "" {
		// Under the integration tag a missing cluster is a failure, never a
		// quiet pass: `make integration` always sets FLINK_VERSION.
		fmt.Fprintln(os.Stderr, "flinkfixture: the integration tests need a cluster:", ErrNotConfigured)
		return 1
	}
	code := m.Run()
	c := cluster
	if c == nil {
		return code
	}
	for _, p := range c.Processes() {
		fmt.Printf("flinkfixture: %s pid %d RSS %d MiB at the end\n", p.Role, p.PID, p.RSS>>20)
	}
	if code != 0 && os.Getenv("FLINKKIT_KEEP_WORKDIR") != "1" {
		fmt.Printf("flinkfixture: set FLINKKIT_KEEP_WORKDIR=1 to keep %s\n", c.WorkDir)
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop:", err)
		code = 1
	}
	if err := c.Stop(); err != nil { // a second Stop is a no-op
		fmt.Fprintln(os.Stderr, "second stop:", err)
		code = 1
	}
	return code
}

// sessionCluster starts the package's session cluster once.
func sessionCluster() (*Cluster, error) {
	clusterOne.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		t0 := time.Now()
		c, err := StartFromEnv(ctx, Config{Slots: testSlots})
		if err != nil {
			clusterErr = err
			return
		}
		fmt.Printf("flinkfixture: Flink %s at %s ready in %v (workdir %s)\n",
			c.FlinkVersion, c.URL, time.Since(t0).Round(time.Millisecond), c.WorkDir)
		for _, p := range c.Processes() {
			fmt.Printf("flinkfixture: %s pid %d RSS %d MiB after start\n", p.Role, p.PID, p.RSS>>20)
		}
		cluster = c
	})
	return cluster, clusterErr
}

// use returns the shared cluster and prints its logs if the test fails.
func use(t *testing.T) *Cluster {
	t.Helper()
	c, err := sessionCluster()
	if err != nil {
		t.Fatalf("the session cluster did not start: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("cluster logs:\n" + c.Logs())
		}
	})
	return c
}

func ownProcesses(t *testing.T, c *Cluster) {
	t.Helper()
	if c.External {
		t.Skip("external cluster (FLINK_URL): processes are not ours")
	}
}

// jar uploads the test job jar once per package run.
func jar(t *testing.T, c *Cluster) string {
	t.Helper()
	if c.TestJobJar == "" {
		t.Skip("no test job jar for this cluster")
	}
	if testJarID == "" {
		testJarID, _ = uploadJar(t, c, c.TestJobJar)
	}
	return testJarID
}

func TestOverview(t *testing.T) {
	c := use(t)
	var ov struct {
		TaskManagers   int    `json:"taskmanagers"`
		SlotsTotal     int    `json:"slots-total"`
		SlotsAvailable int    `json:"slots-available"`
		FlinkVersion   string `json:"flink-version"`
	}
	mustCall(t, c, http.StatusOK, http.MethodGet, "/overview", nil).decode(t, &ov)
	if ov.TaskManagers != 1 || ov.SlotsTotal != testSlots {
		t.Fatalf("overview: %+v, want 1 taskmanager with %d slots", ov, testSlots)
	}
	if c.Version != "" && !c.External && ov.FlinkVersion != c.Version {
		t.Errorf("overview reports Flink %q, want %q", ov.FlinkVersion, c.Version)
	}
	// The jar handlers exist only with flink-runtime-web and web.submit.enable.
	mustCall(t, c, http.StatusOK, http.MethodGet, "/jars", nil)

	var cfg struct {
		Features struct {
			WebSubmit bool `json:"web-submit"`
			WebCancel bool `json:"web-cancel"`
		} `json:"features"`
	}
	mustCall(t, c, http.StatusOK, http.MethodGet, "/config", nil).decode(t, &cfg)
	if !cfg.Features.WebSubmit || !cfg.Features.WebCancel {
		t.Errorf("/config features: %+v, want web-submit and web-cancel", cfg.Features)
	}
	if !c.External {
		var jmConf []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		}
		mustCall(t, c, http.StatusOK, http.MethodGet, "/jobmanager/config", nil).decode(t, &jmConf)
		got := map[string]string{}
		for _, kv := range jmConf {
			got[kv.Key] = kv.Value
		}
		for k, want := range map[string]string{
			"execution.checkpointing.savepoint-dir": fileURI(c.SavepointDir),
			"execution.checkpointing.dir":           fileURI(c.CheckpointDir),
			"rest.port":                             strconv.Itoa(c.Ports.REST),
		} {
			if got[k] != want {
				t.Errorf("jobmanager config %s = %q, want %q", k, got[k], want)
			}
		}
	}
}

func TestStartFromEnvExternal(t *testing.T) {
	c := use(t)
	ownProcesses(t, c)
	t.Setenv("FLINK_URL", c.URL+"/")
	ext, err := StartFromEnv(ctxTimeout(t, 30*time.Second), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !ext.External || ext.URL != c.URL || ext.FlinkVersion != c.FlinkVersion || ext.TestJobJar != c.TestJobJar {
		t.Fatalf("external cluster: %+v", ext)
	}
	if err := ext.KillTaskManager(); err != ErrExternal {
		t.Errorf("KillTaskManager on an external cluster: %v", err)
	}
	if err := ext.Stop(); err != nil {
		t.Errorf("Stop on an external cluster: %v", err)
	}
	mustCall(t, c, http.StatusOK, http.MethodGet, "/overview", nil) // still running
}

func TestSavepointAndRestore(t *testing.T) {
	c := use(t)
	jarID := jar(t, c)
	out := c.OutDir("savepoint")
	// Two source and counter subtasks; the restored job runs with one, so
	// the savepoint's keyed state and source splits are redistributed.
	args := []string{"--out", out, "--keys", "3", "--rate", "60", "--parallelism", "2", "--checkpoint-interval", "500", "--name", "fixture-savepoint"}
	jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args})
	cancelAtEnd(t, c, jobID)
	waitAllTasksRunning(t, c, jobID, time.Minute)

	// Counts appear and grow.
	first := waitCounts(t, out, 3, time.Minute, func(string, int64) bool { return true })
	waitCounts(t, out, 3, time.Minute, func(k string, n int64) bool { return n > first[k]+5 })

	// Savepoint while running; every count read before the trigger is at
	// most the count in the savepoint.
	before, err := ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	trigger, _ := triggerSavepoint(t, c, jobID, map[string]any{"target-directory": fileURI(c.SavepointDir), "cancel-job": false})
	final, _ := pollAsync(t, c, "/jobs/"+jobID+"/savepoints/"+trigger, time.Minute)
	var sp asyncResult
	final.decode(t, &sp)
	if sp.Operation == nil || sp.Operation.Location == "" {
		t.Fatalf("savepoint: no location: %s", final)
	}
	location := sp.Operation.Location
	t.Logf("savepoint at %s, counts before the trigger %v", location, before)
	if !strings.Contains(location, c.SavepointDir) {
		t.Errorf("savepoint location %s is not under %s", location, c.SavepointDir)
	}

	// Cancel; the job ends CANCELED.
	if a := cancelJob(t, c, jobID); a.Status != http.StatusAccepted {
		t.Fatalf("cancel: %s", a)
	}
	waitJobState(t, c, jobID, time.Minute, "CANCELED")

	// Restore into a fresh folder: the counts continue from the savepoint.
	out2 := c.OutDir("restored")
	args2 := []string{"--out", out2, "--keys", "3", "--rate", "60", "--parallelism", "1", "--checkpoint-interval", "500", "--name", "fixture-restored"}
	jobID2, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args2, SavepointPath: location})
	cancelAtEnd(t, c, jobID2)
	restored := waitCounts(t, out2, 3, time.Minute, func(string, int64) bool { return true })
	for k, n := range restored {
		if n <= before[k] {
			t.Errorf("restored count of %s is %d, want more than %d (the count before the savepoint)", k, n, before[k])
		}
	}
	t.Logf("counts after restore %v", restored)
	waitCounts(t, out2, 3, time.Minute, func(k string, n int64) bool { return n > restored[k] })
	if a := cancelJob(t, c, jobID2); a.Status != http.StatusAccepted {
		t.Fatalf("cancel: %s", a)
	}
	waitJobState(t, c, jobID2, time.Minute, "CANCELED")
}

func TestFailAt(t *testing.T) {
	c := use(t)
	jarID := jar(t, c)

	t.Run("no restarts", func(t *testing.T) {
		out := c.OutDir("fail")
		args := []string{"--out", out, "--keys", "2", "--rate", "40", "--fail-at", "10", "--name", "fixture-fail"}
		jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args})
		waitJobState(t, c, jobID, time.Minute, "FAILED")
		entries := exceptionEntries(t, c, jobID)
		if len(entries) != 1 {
			t.Errorf("want 1 exception history entry, got %d", len(entries))
		}
	})

	t.Run("two restarts", func(t *testing.T) {
		out := c.OutDir("fail-restart")
		args := []string{"--out", out, "--keys", "2", "--rate", "40", "--fail-at", "15",
			"--restart-attempts", "2", "--restart-delay", "200", "--checkpoint-interval", "300", "--name", "fixture-fail-restart"}
		jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args})
		waitJobState(t, c, jobID, 2*time.Minute, "FAILED")
		entries := exceptionEntries(t, c, jobID)
		if len(entries) < 3 {
			t.Errorf("want 3 exception history entries (first run + 2 restarts), got %d", len(entries))
		}
		for _, e := range entries {
			if !strings.Contains(e, "--fail-at 15") {
				t.Errorf("exception does not name the failure: %.300s", e)
			}
		}
	})
}

// exceptionEntries returns the stack traces of GET /jobs/:id/exceptions's
// exceptionHistory entries.
func exceptionEntries(t *testing.T, c *Cluster, jobID string) []string {
	t.Helper()
	var ex struct {
		ExceptionHistory struct {
			Entries []struct {
				ExceptionName string `json:"exceptionName"`
				Stacktrace    string `json:"stacktrace"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	// The history is filled asynchronously after the job reaches FAILED.
	var a answer
	waitFor(t, 30*time.Second, "exception history of "+jobID, func() (bool, string) {
		a = mustCall(t, c, http.StatusOK, http.MethodGet, "/jobs/"+jobID+"/exceptions", nil)
		a.decode(t, &ex)
		return len(ex.ExceptionHistory.Entries) > 0, a.String()
	})
	var out []string
	for _, e := range ex.ExceptionHistory.Entries {
		out = append(out, e.ExceptionName+": "+e.Stacktrace)
	}
	return out
}

func TestTaskManagerKillAndStart(t *testing.T) {
	c := use(t)
	ownProcesses(t, c)
	jarID := jar(t, c)
	out := c.OutDir("tm-kill")
	args := []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "300",
		"--restart-attempts", "1000", "--restart-delay", "500", "--name", "fixture-tm-kill"}
	jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args})
	cancelAtEnd(t, c, jobID)
	waitAllTasksRunning(t, c, jobID, time.Minute)
	first := waitCounts(t, out, 2, time.Minute, func(string, int64) bool { return true })
	waitCounts(t, out, 2, time.Minute, func(k string, n int64) bool { return n > first[k]+10 })

	t0 := time.Now()
	if err := c.KillTaskManager(); err != nil {
		t.Fatal(err)
	}
	if err := c.KillTaskManager(); err == nil {
		t.Error("a second KillTaskManager should fail: no TaskManager runs")
	}
	// The JobManager notices the lost TaskManager and restarts the job.
	waitFor(t, time.Minute, "the TaskManager to be unregistered", func() (bool, string) {
		var ov struct {
			TaskManagers int `json:"taskmanagers"`
		}
		mustCall(t, c, http.StatusOK, http.MethodGet, "/overview", nil).decode(t, &ov)
		return ov.TaskManagers == 0, fmt.Sprint(ov.TaskManagers)
	})
	t.Logf("the JobManager unregistered the killed TaskManager after %v", time.Since(t0).Round(time.Millisecond))
	afterKill, err := ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}

	t0 = time.Now()
	if err := c.StartTaskManager(ctxTimeout(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Logf("new TaskManager registered in %v", time.Since(t0).Round(time.Millisecond))
	var ov struct {
		TaskManagers int `json:"taskmanagers"`
		SlotsTotal   int `json:"slots-total"`
	}
	mustCall(t, c, http.StatusOK, http.MethodGet, "/overview", nil).decode(t, &ov)
	if ov.TaskManagers != 1 || ov.SlotsTotal != testSlots {
		t.Fatalf("overview after restart: %+v", ov)
	}
	// The job recovers from its last checkpoint on the new TaskManager and
	// counts on past what it had written before the kill.
	waitAllTasksRunning(t, c, jobID, 2*time.Minute)
	waitCounts(t, out, 2, time.Minute, func(k string, n int64) bool { return n > afterKill[k]+5 })
}

// TestRestartJobManager runs last: it replaces the JobManager, which loses
// all jobs (no high availability).
func TestRestartJobManager(t *testing.T) {
	c := use(t)
	ownProcesses(t, c)
	jarID := jar(t, c)
	out := c.OutDir("jm-restart")
	jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{"--out", out, "--keys", "1", "--name", "fixture-jm-restart"}})
	waitJobState(t, c, jobID, time.Minute, "RUNNING")

	t0 := time.Now()
	if err := c.RestartJobManager(ctxTimeout(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Logf("JobManager restarted and TaskManager re-registered in %v", time.Since(t0).Round(time.Millisecond))

	a := call(t, c, http.MethodGet, "/jobs/"+jobID, nil)
	if a.Status != http.StatusNotFound {
		t.Fatalf("GET /jobs/%s after the JobManager restart: want 404, got %s", jobID, a)
	}
	var errs struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(a.Body, &errs); err != nil || len(errs.Errors) == 0 {
		t.Errorf("404 body is not {\"errors\": [...]}: %s", a)
	}
	var ov struct {
		TaskManagers int `json:"taskmanagers"`
		SlotsTotal   int `json:"slots-total"`
		JobsRunning  int `json:"jobs-running"`
	}
	mustCall(t, c, http.StatusOK, http.MethodGet, "/overview", nil).decode(t, &ov)
	if ov.TaskManagers != 1 || ov.SlotsTotal != testSlots || ov.JobsRunning != 0 {
		t.Fatalf("overview after the JobManager restart: %+v", ov)
	}
	// The new JobManager still runs jobs.
	testJarID = "" // uploads are kept (web.upload.dir), but do not rely on it
	jobID2, _ := runJar(t, c, jar(t, c), runRequest{ProgramArgsList: []string{"--out", c.OutDir("after-jm-restart"), "--keys", "1"}})
	cancelAtEnd(t, c, jobID2)
	waitJobState(t, c, jobID2, time.Minute, "RUNNING")
}
