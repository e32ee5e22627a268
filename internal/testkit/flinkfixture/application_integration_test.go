//go:build integration

package flinkfixture

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startApplication starts an application cluster of the package's version
// for t, one at a time (the session cluster of the package is not started
// by these tests), and stops it when t ends.
func startApplication(t *testing.T, workDir string, app Application) *Cluster {
	t.Helper()
	start := time.Now()
	c := StartForTest(t, ctxTimeout(t, 3*time.Minute), Config{Slots: 1, WorkDir: workDir, Application: &app})
	if c.External {
		t.Skip("external cluster (FLINK_URL): no application clusters")
	}
	t.Logf("application cluster of job %s ready in %v", c.Application.JobID, time.Since(start).Round(time.Millisecond))
	return c
}

func counterArgs(out, name string, extra ...string) []string {
	return append([]string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "300", "--name", name}, extra...)
}

// TestApplicationCluster runs the test job in an application cluster,
// stops it with a savepoint, checks that the JobManager stays and answers
// for the finished job, and starts a second application cluster from the
// savepoint whose counts continue.
func TestApplicationCluster(t *testing.T) {
	if os.Getenv("FLINK_URL") != "" {
		t.Skip("FLINK_URL: application clusters are started by the fixture only")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "counts")
	c := startApplication(t, filepath.Join(dir, "first"), Application{Args: counterArgs(out, "app-first")})
	jobID := c.Application.JobID
	waitJobState(t, c, jobID, time.Minute, "RUNNING")
	waitAllTasksRunning(t, c, jobID, time.Minute)
	before := waitCounts(t, out, 2, time.Minute, func(_ string, n int64) bool { return n >= 5 })

	// Stop with a savepoint.
	a := mustCall(t, c, http.StatusAccepted, http.MethodPost, "/jobs/"+jobID+"/stop",
		map[string]any{"targetDirectory": fileURI(c.SavepointDir), "drain": false})
	var trig struct {
		RequestID string `json:"request-id"`
	}
	a.decode(t, &trig)
	final, _ := pollAsync(t, c, "/jobs/"+jobID+"/savepoints/"+trig.RequestID, time.Minute)
	var sp asyncResult
	final.decode(t, &sp)
	if sp.Operation == nil || sp.Operation.Location == "" {
		t.Fatalf("stop with savepoint: no location: %s", final)
	}
	location := sp.Operation.Location
	waitJobState(t, c, jobID, time.Minute, "FINISHED")

	// The JobManager stays: a while after the job finished, the stop's
	// result, the job and its checkpoint history are still there.
	time.Sleep(2 * time.Second)
	if p := c.Processes(); len(p) != 2 {
		t.Fatalf("processes after the job finished: %+v, want the JobManager and the TaskManager", p)
	}
	again := mustCall(t, c, http.StatusOK, http.MethodGet, "/jobs/"+jobID+"/savepoints/"+trig.RequestID, nil)
	if !strings.Contains(string(again.Body), location) {
		t.Errorf("the stop's result after the job finished: %s, want %s", again, location)
	}
	if s, a := jobState(t, c, jobID); s != "FINISHED" {
		t.Errorf("job state after the stop: %s (%s)", s, a)
	}
	cp := mustCall(t, c, http.StatusOK, http.MethodGet, "/jobs/"+jobID+"/checkpoints", nil)
	if !strings.Contains(string(cp.Body), location) && !strings.Contains(string(cp.Body), strings.TrimPrefix(location, "file:")) {
		t.Errorf("checkpoint history after the stop does not name %s: %.500s", location, cp)
	}
	t.Logf("stopped with savepoint %s; counts before the stop %v", location, before)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	// A second application cluster from the savepoint: the counts continue.
	out2 := filepath.Join(dir, "counts-restored")
	c2 := startApplication(t, filepath.Join(dir, "restored"), Application{Args: counterArgs(out2, "app-restored"), RestorePath: location})
	waitJobState(t, c2, c2.Application.JobID, time.Minute, "RUNNING")
	restored := waitCounts(t, out2, 2, time.Minute, func(string, int64) bool { return true })
	for k, n := range restored {
		if n <= before[k] {
			t.Errorf("restored count of %s is %d, want more than %d (the count before the savepoint)", k, n, before[k])
		}
	}
	ck := mustCall(t, c2, http.StatusOK, http.MethodGet, "/jobs/"+c2.Application.JobID+"/checkpoints", nil)
	if !strings.Contains(string(ck.Body), strings.TrimPrefix(location, "file:")) {
		t.Errorf("the restored job's checkpoint statistics do not name %s: %.500s", location, ck)
	}
}

// TestApplicationFailsAtStart runs a job that fails as soon as it counts
// (--fail-at 1, no restarts): the JobManager stays and shows the job FAILED
// with its exception.
func TestApplicationFailsAtStart(t *testing.T) {
	if os.Getenv("FLINK_URL") != "" {
		t.Skip("FLINK_URL: application clusters are started by the fixture only")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "counts")
	c := startApplication(t, filepath.Join(dir, "work"), Application{Args: counterArgs(out, "app-fail", "--fail-at", "1")})
	jobID := c.Application.JobID
	waitJobState(t, c, jobID, time.Minute, "FAILED")
	entries := exceptionEntries(t, c, jobID)
	if len(entries) == 0 || !strings.Contains(entries[0], "--fail-at 1") {
		t.Errorf("exceptions of the failed job: %v", entries)
	}
	time.Sleep(2 * time.Second)
	if p := c.Processes(); len(p) != 2 {
		t.Fatalf("processes after the job failed: %+v, want the JobManager and the TaskManager", p)
	}
	if s, a := jobState(t, c, jobID); s != "FAILED" {
		t.Errorf("job state: %s (%s)", s, a)
	}
}

// TestApplicationRestoreFromMissingPath documents what Flink does with an
// application whose restore path does not exist. Flink 1.20: the JobMaster
// does not start and the JobManager exits with status 2 ("Fatal error
// occurred in the cluster entrypoint"), whatever
// execution.shutdown-on-application-finish and
// execution.submit-failed-job-on-application-error say. Flink 2.3: the
// JobManager stays and shows the job FAILED, its exception naming the
// missing savepoint.
func TestApplicationRestoreFromMissingPath(t *testing.T) {
	if os.Getenv("FLINK_URL") != "" {
		t.Skip("FLINK_URL: application clusters are started by the fixture only")
	}
	dir := t.TempDir()
	missing := fileURI(filepath.Join(dir, "no-such-savepoint"))
	app := &Application{Args: counterArgs(filepath.Join(dir, "counts"), "app-missing"), RestorePath: missing}
	c, err := StartFromEnv(ctxTimeout(t, 3*time.Minute), Config{Slots: 1, WorkDir: filepath.Join(dir, "work"), Application: app})
	const why = "Cannot find checkpoint or savepoint"
	if err != nil {
		if !strings.Contains(err.Error(), "JobManager stopped during start") || !strings.Contains(err.Error(), why) {
			t.Fatalf("start: %v", err)
		}
		t.Logf("Flink %s: the JobManager exited during the start", os.Getenv("FLINK_VERSION"))
		return
	}
	defer c.Stop()
	jobID := c.Application.JobID
	var state string
	waitFor(t, time.Minute, "the JobManager to exit or the job to fail", func() (bool, string) {
		alive := false
		for _, p := range c.Processes() {
			alive = alive || p.Role == "jobmanager"
		}
		if !alive {
			state = "JobManager exited"
			return true, ""
		}
		// The JobManager may exit between the look at the processes and
		// this request: a refused connection is looked at again.
		resp, err := httpClient.Get(c.URL + "/jobs/" + jobID)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var st struct {
			State string `json:"state"`
		}
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil && st.State == "FAILED" {
			state = st.State
			return true, ""
		}
		return false, fmt.Sprintf("%d %s", resp.StatusCode, st.State)
	})
	t.Logf("Flink %s: %s", c.FlinkVersion, state)
	if state == "FAILED" {
		// On 1.20 the JobManager exits soon after the job failed: while it
		// answers, the job's exceptions name the cause; once it is gone,
		// its log must.
		if entries, ok := exceptionsIfServed(c, jobID); ok {
			if len(entries) == 0 || !strings.Contains(entries[0], why) {
				t.Errorf("exceptions of the job: %.1000v", entries)
			}
			return
		}
		t.Logf("Flink %s: the JobManager exited after the job failed; its log is checked", c.FlinkVersion)
	}
	if logs := c.Logs(); !strings.Contains(logs, why) {
		t.Errorf("the JobManager's log does not name the missing savepoint:\n%s", logs)
	}
}

// exceptionsIfServed reads the job's exception history for up to 30
// seconds (Flink fills it asynchronously after FAILED) and reports false
// when the JobManager stopped answering meanwhile.
func exceptionsIfServed(c *Cluster, jobID string) ([]string, bool) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := httpClient.Get(c.URL + "/jobs/" + jobID + "/exceptions")
		if err != nil {
			return nil, false
		}
		var ex struct {
			ExceptionHistory struct {
				Entries []struct {
					ExceptionName string `json:"exceptionName"`
					Stacktrace    string `json:"stacktrace"`
				} `json:"entries"`
			} `json:"exceptionHistory"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ex)
		resp.Body.Close()
		if err == nil && len(ex.ExceptionHistory.Entries) > 0 {
			var out []string
			for _, e := range ex.ExceptionHistory.Entries {
				out = append(out, e.ExceptionName+": "+e.Stacktrace)
			}
			return out, true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, true
}
