package flinkapi

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// The tests in this file decode answers recorded from real Flink clusters
// (testdata/real/<version>, written by the real-cluster suite in
// internal/testkit/flinkfixture) instead of hand-written JSON.

// realStatus returns the HTTP status the cluster answered for a recording.
func realStatus(t *testing.T, version, name string) int {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "real", version, "statuses.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		file, code, ok := strings.Cut(sc.Text(), " ")
		if ok && file == name {
			n, err := strconv.Atoi(strings.TrimSpace(code))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("%s/statuses.txt has no status for %s", version, name)
	return 0
}

// replay answers method+path with a recorded answer of version.
func replay(t *testing.T, mt *httpmock.MockTransport, version, method, path, name string) {
	t.Helper()
	body := real(t, version, name)
	status := realStatus(t, version, name)
	if strings.HasSuffix(name, ".txt") { // "<status>\n<body>"
		_, body, _ = strings.Cut(body, "\n")
	}
	mt.RegisterResponder(method, testBase+path, httpmock.NewStringResponder(status, body))
}

var since2020 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func recent(tm time.Time) bool {
	return tm.After(since2020) && tm.Before(time.Now().Add(24*time.Hour*365*5))
}

func TestRealAnswersDecode(t *testing.T) {
	for _, version := range realVersions(t) {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			c, mt, _ := newTestClient(t, version)
			job := testJob
			jp := "/jobs/" + string(job)

			replay(t, mt, version, "GET", "/config", "config.json")
			cfg, err := c.Config(ctx)
			if err != nil || cfg.FlinkVersion != version || !cfg.Features.WebSubmit {
				t.Errorf("Config = %+v, %v", cfg, err)
			}

			replay(t, mt, version, "GET", "/overview", "overview.json")
			ov, err := c.Overview(ctx)
			if err != nil || ov.TaskManagers != 1 || ov.SlotsTotal < 1 || ov.FlinkVersion != version {
				t.Errorf("Overview = %+v, %v", ov, err)
			}

			replay(t, mt, version, "GET", "/taskmanagers", "taskmanagers.json")
			tms, err := c.TaskManagers(ctx)
			if err != nil || len(tms) != 1 || tms[0].SlotsNumber < 1 || tms[0].ID == "" || !recent(tms[0].LastHeartbeat) {
				t.Errorf("TaskManagers = %+v, %v", tms, err)
			}

			replay(t, mt, version, "GET", "/jobs/overview", "jobs_overview.json")
			jobs, err := c.JobsOverview(ctx)
			if err != nil || len(jobs) == 0 {
				t.Fatalf("JobsOverview = %+v, %v", jobs, err)
			}
			if j := jobs[0]; j.ID.Validate() != nil || j.State != JobRunning || !recent(j.StartTime) || !j.EndTime.IsZero() || j.Tasks.Total < 1 || j.Name == "" {
				t.Errorf("JobsOverview[0] = %+v", j)
			}

			replay(t, mt, version, "GET", jp, "job_details.json")
			d, err := c.Job(ctx, job)
			if err != nil || d.ID.Validate() != nil || d.State != JobRunning || len(d.Vertices) == 0 || d.Vertices[0].Parallelism < 1 ||
				!recent(d.Timestamps[JobRunning]) || !recent(d.Now) || d.JobType != "STREAMING" {
				t.Errorf("Job = %+v, %v", d, err)
			}

			replay(t, mt, version, "GET", jp+"/status", "job_status.json")
			if st, err := c.JobStatus(ctx, job); err != nil || st != JobRunning {
				t.Errorf("JobStatus = %q, %v", st, err)
			}

			replay(t, mt, version, "GET", jp+"/exceptions", "exceptions.json")
			ex, err := c.JobExceptions(ctx, job, 0)
			if err != nil || len(ex.Entries) == 0 {
				t.Fatalf("JobExceptions = %+v, %v", ex, err)
			}
			var sawJobFailure bool
			for _, e := range ex.Entries {
				if e.ExceptionName == "" || e.Message == "" || !recent(e.Timestamp) || e.StackTrace == "" {
					t.Errorf("exception entry %+v", e)
				}
				sawJobFailure = sawJobFailure || strings.Contains(e.Message, "count") || strings.Contains(e.StackTrace, "flinkkit")
			}
			if !sawJobFailure {
				t.Errorf("no entry carries the test job's own failure: %+v", ex.Entries)
			}

			replay(t, mt, version, "GET", jp+"/checkpoints", "checkpoints.json")
			cs, err := c.Checkpoints(ctx, job)
			if err != nil || cs.Counts.Completed < 1 || cs.LatestCompleted == nil || cs.LatestCompleted.ExternalPath == "" ||
				cs.LatestCompleted.Status != CheckpointCompleted || !recent(cs.LatestCompleted.TriggerTime) || len(cs.History) == 0 {
				t.Errorf("Checkpoints = %+v, %v", cs, err)
			}

			replay(t, mt, version, "GET", jp+"/checkpoints/config", "checkpoints_config.json")
			cc, err := c.CheckpointConfig(ctx, job)
			if err != nil || cc.Interval <= 0 || cc.Timeout <= 0 || cc.Mode == "" {
				t.Errorf("CheckpointConfig = %+v, %v", cc, err)
			}

			replay(t, mt, version, "GET", jp+"/config", "job_config.json")
			jc, err := c.JobConfig(ctx, job)
			if err != nil || jc.ID.Validate() != nil || jc.Name == "" || jc.Parallelism < 1 || jc.Parameters["out"] == "" || jc.Parameters["keys"] != "2" {
				t.Errorf("JobConfig = %+v, %v", jc, err)
			}

			replay(t, mt, version, "GET", jp+"/checkpoints/details/1", "checkpoint_details.json")
			cd, err := c.CheckpointDetails(ctx, job, 1)
			if err != nil || cd.ID < 1 || cd.NumSubtasks < 1 || !recent(cd.TriggerTime) {
				t.Errorf("CheckpointDetails = %+v, %v", cd, err)
			}
			// The test job's two vertices, each with state: the source's
			// offsets and the counter's counts; together the checkpoint's.
			if cd != nil {
				var sum int64
				for id, v := range cd.Vertices {
					if v.StateSize <= 0 || v.Status != CheckpointCompleted || v.NumSubtasks < 1 {
						t.Errorf("CheckpointDetails: vertex %s: %+v", id, v)
					}
					sum += v.StateSize
				}
				if len(cd.Vertices) != 2 || sum != cd.StateSize {
					t.Errorf("CheckpointDetails: vertices %+v, summing to %d of %d", cd.Vertices, sum, cd.StateSize)
				}
			}

			replay(t, mt, version, "POST", jp+"/checkpoints", "checkpoint_trigger.json")
			op, err := c.TriggerCheckpoint(ctx, job, CheckpointRequest{})
			if err != nil || op.Kind != OpCheckpoint || op.TriggerID.Validate() != nil {
				t.Errorf("TriggerCheckpoint = %+v, %v", op, err)
			}
			op.TriggerID = testTrigger
			replay(t, mt, version, "GET", jp+"/checkpoints/"+string(testTrigger), "checkpoint_status_completed.json")
			res, err := c.OperationStatus(ctx, op)
			if err != nil || !res.Succeeded() || res.CheckpointID < 1 {
				t.Errorf("checkpoint status = %+v, %v", res, err)
			}

			replay(t, mt, version, "POST", jp+"/savepoints", "savepoint_trigger.json")
			op, err = c.TriggerSavepoint(ctx, job, SavepointRequest{})
			if err != nil || op.Kind != OpSavepoint || op.TriggerID.Validate() != nil || op.JobID != job {
				t.Errorf("TriggerSavepoint = %+v, %v", op, err)
			}
			spOp := Operation{Kind: OpSavepoint, JobID: job, TriggerID: testTrigger}
			statusPath := jp + "/savepoints/" + string(testTrigger)
			for file, check := range map[string]func(*OperationResult) bool{
				"savepoint_in_progress.json": func(r *OperationResult) bool { return !r.Completed() && r.Location == "" },
				"savepoint_completed.json":   func(r *OperationResult) bool { return r.Succeeded() && strings.Contains(r.Location, "savepoint-") },
				"stop_completed.json":        func(r *OperationResult) bool { return r.Succeeded() && strings.Contains(r.Location, "savepoint-") },
				"savepoint_failed.json": func(r *OperationResult) bool {
					return r.Completed() && r.Failure != nil && strings.Contains(r.Failure.Message(), "Could not find Flink job") && !strings.Contains(r.Failure.Message(), "\tat ")
				},
			} {
				replay(t, mt, version, "GET", statusPath, file)
				res, err := c.OperationStatus(ctx, spOp)
				if err != nil || !check(res) {
					t.Errorf("%s: %+v, %v", file, res, err)
				}
			}

			replay(t, mt, version, "POST", jp+"/stop", "stop_trigger.json")
			if op, err := c.StopWithSavepoint(ctx, job, StopRequest{}); err != nil || op.Kind != OpStopWithSavepoint || op.TriggerID.Validate() != nil {
				t.Errorf("StopWithSavepoint = %+v, %v", op, err)
			}

			replay(t, mt, version, "POST", "/savepoint-disposal", "disposal_trigger.json")
			op, err = c.DisposeSavepoint(ctx, "file:/tmp/sp/savepoint-1")
			if err != nil || op.Kind != OpSavepointDisposal || op.TriggerID.Validate() != nil {
				t.Errorf("DisposeSavepoint = %+v, %v", op, err)
			}
			op.TriggerID = testTrigger
			replay(t, mt, version, "GET", "/savepoint-disposal/"+string(testTrigger), "disposal_completed.json")
			if res, err := c.OperationStatus(ctx, op); err != nil || !res.Succeeded() {
				t.Errorf("disposal status = %+v, %v", res, err)
			}

			replay(t, mt, version, "POST", "/jars/upload", "jars_upload.json")
			jar, err := c.UploadJarReader(ctx, "flinkkit-testjob.jar", strings.NewReader("PK"))
			if err != nil || !strings.HasSuffix(string(jar), "_flinkkit-testjob.jar") {
				t.Errorf("UploadJarReader = %q, %v", jar, err)
			}

			replay(t, mt, version, "GET", "/jars", "jars.json")
			jars, err := c.ListJars(ctx)
			if err != nil || len(jars) == 0 || jars[0].ID.Validate() != nil || !recent(jars[0].Uploaded) || len(jars[0].Entries) == 0 {
				t.Errorf("ListJars = %+v, %v", jars, err)
			}

			replay(t, mt, version, "POST", "/jars/"+string(testJar)+"/run", "jar_run.json")
			if id, err := c.RunJar(ctx, testJar, RunJarRequest{JobID: job}); err != nil || id.Validate() != nil {
				t.Errorf("RunJar = %q, %v", id, err)
			}

			replay(t, mt, version, "GET", jp+"/resource-requirements", "resource_requirements.json")
			rr, err := c.ResourceRequirements(ctx, job)
			if err != nil || len(rr) == 0 {
				t.Errorf("ResourceRequirements = %+v, %v", rr, err)
			}
			for v, b := range rr {
				if v == "" || b.LowerBound < 1 || b.UpperBound < b.LowerBound {
					t.Errorf("vertex %q bounds %+v", v, b)
				}
			}

			replay(t, mt, version, "PATCH", jp, "cancel_again.txt")
			if err := c.CancelJob(ctx, job); err != nil {
				t.Errorf("cancelling a cancelled job: %v", err)
			}
		})
	}
}

// Every recorded error answer is classified the way callers rely on.
func TestRealErrorAnswers(t *testing.T) {
	for _, version := range realVersions(t) {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			c, mt, _ := newTestClient(t, version)
			jp := "/jobs/" + string(testJob)

			replay(t, mt, version, "GET", jp, "error_job_not_found.json")
			_, err := c.Job(ctx, testJob)
			var ae *APIError
			if !errors.As(err, &ae) || !IsJobNotFound(err) || IsTriggerNotFound(err) || IsUnknownRoute(err) || !errors.Is(err, ErrNotFound) ||
				!strings.HasSuffix(ae.Message(), "not found") || strings.Contains(ae.Message(), "\tat") || ae.StackTrace == "" {
				t.Errorf("job not found: %v (%+v)", err, ae)
			}

			replay(t, mt, version, "GET", jp+"/savepoints/"+string(testTrigger), "error_trigger_not_found.json")
			_, err = c.OperationStatus(ctx, Operation{Kind: OpSavepoint, JobID: testJob, TriggerID: testTrigger})
			if !IsTriggerNotFound(err) || IsJobNotFound(err) {
				t.Errorf("trigger not found: %v", err)
			}

			replay(t, mt, version, "GET", jp+"/status", "error_unknown_route.json")
			_, err = c.JobStatus(ctx, testJob)
			if !IsUnknownRoute(err) || IsJobNotFound(err) {
				t.Errorf("unknown GET route: %v", err)
			}
			replay(t, mt, version, "POST", jp+"/checkpoints", "error_unknown_route_post.json")
			_, err = c.TriggerCheckpoint(ctx, testJob, CheckpointRequest{})
			if !IsUnknownRoute(err) || IsJobNotFound(err) {
				t.Errorf("unknown POST route: %v", err)
			}

			replay(t, mt, version, "PATCH", jp, "error_cancel_terminal.json")
			err = c.CancelJob(ctx, testJob)
			if !IsTerminal(err) || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "FINISHED") || strings.Contains(err.Error(), "\tat") {
				t.Errorf("cancel of a finished job: %v", err)
			}

			replay(t, mt, version, "GET", jp+"/resource-requirements", "resource_requirements_default_scheduler.json")
			_, err = c.ResourceRequirements(ctx, testJob)
			if !errors.As(err, &ae) || ae.StatusCode != 500 || IsRetryable(err) || !strings.Contains(err.Error(), "DefaultScheduler") {
				t.Errorf("resource requirements on the default scheduler: %v", err)
			}
			if n := mt.GetCallCountInfo()["GET "+testBase+jp+"/resource-requirements"]; n != 1 {
				t.Errorf("a 500 was tried %d times", n)
			}
		})
	}
}

// Answers of the README's table that a healthy test cluster does not give.
func TestDocumentedErrorAnswers(t *testing.T) {
	ctx := context.Background()
	jp := "/jobs/" + string(testJob)
	tests := []struct {
		name   string
		method string
		path   string
		status int
		body   string
		call   func(*Client) error
		check  func(error) bool
	}{
		{"cancel unknown job", "PATCH", jp, 404, flinkError("Job " + string(testJob) + " not found"),
			func(c *Client) error { return c.CancelJob(ctx, testJob) }, IsJobNotFound},
		{"cancel timed out", "PATCH", jp, 408, flinkError("Job cancellation timed out."),
			func(c *Client) error { return c.CancelJob(ctx, testJob) }, func(err error) bool { return errors.Is(err, ErrTimeout) && !IsRetryable(err) }},
		{"leader election", "GET", jp, 503, flinkError(leaderElection),
			func(c *Client) error { _, err := c.Job(ctx, testJob); return err }, func(err error) bool { return errors.Is(err, ErrUnavailable) && IsRetryable(err) }},
		{"no target directory", "POST", jp + "/savepoints", 400, flinkError("Config key [state.savepoints.dir] is not set. Property [target-directory] must be provided."),
			func(c *Client) error { _, err := c.TriggerSavepoint(ctx, testJob, SavepointRequest{}); return err },
			func(err error) bool {
				return errors.Is(err, ErrBadRequest) && strings.Contains(err.Error(), "target-directory")
			}},
		{"unknown field", "POST", "/jars/" + string(testJar) + "/run", 400, flinkError("Request did not match expected format JarRunRequestBody."),
			func(c *Client) error { _, err := c.RunJar(ctx, testJar, RunJarRequest{}); return err },
			func(err error) bool { return errors.Is(err, ErrBadRequest) && !IsRetryable(err) }},
		{"delete unknown jar", "DELETE", "/jars/" + string(testJar), 400, flinkError("File " + string(testJar) + " does not exist in /tmp/flink-web/flink-web-upload."),
			func(c *Client) error { return c.DeleteJar(ctx, testJar) }, func(err error) bool { return errors.Is(err, ErrBadRequest) }},
		{"checkpointing disabled", "GET", jp + "/checkpoints", 404, flinkError("Checkpointing has not been enabled."),
			func(c *Client) error { _, err := c.Checkpoints(ctx, testJob); return err },
			func(err error) bool {
				return errors.Is(err, ErrNotFound) && !IsJobNotFound(err) && !IsTriggerNotFound(err)
			}},
		{"old trigger not found", "GET", jp + "/savepoints/" + string(testTrigger), 404, flinkError("Operation not found under key: org.apache.flink.runtime.rest.handler.job.AsynchronousJobOperationKey@1a2b"),
			func(c *Client) error {
				_, err := c.OperationStatus(ctx, Operation{Kind: OpSavepoint, JobID: testJob, TriggerID: testTrigger})
				return err
			}, func(err error) bool { return IsTriggerNotFound(err) && !IsJobNotFound(err) }},
		{"proxy 404 page", "GET", jp, 404, "<html><body><h1>404 Not Found</h1>nginx</body></html>",
			func(c *Client) error { _, err := c.Job(ctx, testJob); return err },
			func(err error) bool {
				return errors.Is(err, ErrNotFound) && !IsJobNotFound(err) && !IsTriggerNotFound(err)
			}},
		{"proxy 502", "GET", "/overview", 502, "<html>Bad Gateway</html>",
			func(c *Client) error { _, err := c.Overview(ctx); return err }, func(err error) bool { return errors.Is(err, ErrUnavailable) && IsRetryable(err) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "1.20.5")
			mt.RegisterResponder(tt.method, testBase+tt.path, httpmock.NewStringResponder(tt.status, tt.body))
			if err := tt.call(c); !tt.check(err) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// Answers the contract suite saw from real Flink 1.20.5 and 2.3.0, kept
// here so the classification is unit-tested too.
func TestJobNotFoundAndDuplicateJobAnswers(t *testing.T) {
	ctx := context.Background()
	jp := "/jobs/" + string(testJob)
	statusNotFound := flinkError("Internal server error.",
		"<Exception on server side:\njava.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job ("+string(testJob)+")\n\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)\n\nEnd of exception on server side>")
	duplicate := flinkError("org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n\tat org.apache.flink.runtime.webmonitor.handlers.JarRunHandler.lambda$handleRequest$1(JarRunHandler.java:114)\nCaused by: java.util.concurrent.CompletionException: org.apache.flink.util.FlinkRuntimeException: Could not execute application.\n\t... 5 more\nCaused by: org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted.\n\tat org.apache.flink.runtime.client.DuplicateJobSubmissionException.of(DuplicateJobSubmissionException.java:43)")
	failing := flinkError("org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n\tat x.Y.z(Y.java:1)\nCaused by: java.lang.IllegalArgumentException: --out is required")
	tests := []struct {
		name         string
		method, path string
		status       int
		body         string
		call         func(*Client) error
		notFound     bool
		duplicate    bool
	}{
		{"status of unknown job", "GET", jp + "/status", 500, statusNotFound,
			func(c *Client) error { _, err := c.JobStatus(ctx, testJob); return err }, true, false},
		{"cancel unknown job", "PATCH", jp, 404, flinkError("Job could not be found."),
			func(c *Client) error { return c.CancelJob(ctx, testJob) }, true, false},
		{"other 500", "GET", jp, 500, flinkError("Internal server error.", "<Exception on server side:\njava.lang.NullPointerException\nEnd of exception on server side>"),
			func(c *Client) error { _, err := c.Job(ctx, testJob); return err }, false, false},
		{"duplicate job id", "POST", "/jars/" + string(testJar) + "/run", 400, duplicate,
			func(c *Client) error { _, err := c.RunJar(ctx, testJar, RunJarRequest{JobID: testJob}); return err }, false, true},
		{"failing program", "POST", "/jars/" + string(testJar) + "/run", 400, failing,
			func(c *Client) error { _, err := c.RunJar(ctx, testJar, RunJarRequest{JobID: testJob}); return err }, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "2.3.0")
			mt.RegisterResponder(tt.method, testBase+tt.path, httpmock.NewStringResponder(tt.status, tt.body))
			err := tt.call(c)
			if err == nil || IsJobNotFound(err) != tt.notFound || IsDuplicateJob(err) != tt.duplicate {
				t.Fatalf("err = %v: IsJobNotFound %v, IsDuplicateJob %v", err, IsJobNotFound(err), IsDuplicateJob(err))
			}
		})
	}
}
