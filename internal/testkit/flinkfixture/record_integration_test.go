//go:build integration

package flinkfixture

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestRecord saves real answers of the running Flink version as test data
// for the REST client, into flinkapi/testdata/real/<flink version>/, with
// each file's HTTP status in statuses.txt. Bodies are kept byte for byte as
// Flink sent them (temporary paths included). Run it on its own:
//
//	FLINK_VERSION=2.3.0 FLINKKIT_RECORD=1 go test -tags integration -run Record -count=1 -v ./internal/testkit/flinkfixture/
func TestRecord(t *testing.T) {
	if os.Getenv("FLINKKIT_RECORD") != "1" {
		t.Skip("set FLINKKIT_RECORD=1 to record REST answers")
	}
	c := use(t)
	rec, get := newRecorder(t, c, true)
	defer rec.writeStatuses()

	get("config.json", "/config")

	// Upload and list the test job jar.
	jarID, up := uploadJar(t, c, c.TestJobJar)
	rec.save("jars_upload.json", up)
	get("jars.json", "/jars")

	// Job A: a running, checkpointed counter.
	outA := c.OutDir("record-a")
	reqA := runRequest{
		EntryClass:      c.TestJobClass,
		ProgramArgsList: []string{"--out", outA, "--keys", "2", "--rate", "40", "--checkpoint-interval", "500", "--name", "record-running"},
		JobID:           newJobID(t),
	}
	jobA, run := runJar(t, c, jarID, reqA)
	rec.save("jar_run.json", run)
	cancelAtEnd(t, c, jobA)
	waitAllTasksRunning(t, c, jobA, time.Minute)
	waitCounts(t, outA, 2, time.Minute, func(string, int64) bool { return true })

	get("overview.json", "/overview")
	get("jobs_overview.json", "/jobs/overview")
	get("job_details.json", "/jobs/"+jobA)
	get("job_status.json", "/jobs/"+jobA+"/status")
	get("taskmanagers.json", "/taskmanagers")
	// The default scheduler answers 500 here; see recordAdaptive for a 200.
	get("resource_requirements_default_scheduler.json", "/jobs/"+jobA+"/resource-requirements")
	get("checkpoints_config.json", "/jobs/"+jobA+"/checkpoints/config")
	get("job_config.json", "/jobs/"+jobA+"/config")

	// A few completed checkpoints, then their statistics.
	var cps struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
		Latest struct {
			Completed *struct {
				ID int64 `json:"id"`
			} `json:"completed"`
		} `json:"latest"`
	}
	waitFor(t, time.Minute, "3 completed checkpoints", func() (bool, string) {
		a := mustCall(t, c, http.StatusOK, http.MethodGet, "/jobs/"+jobA+"/checkpoints", nil)
		a.decode(t, &cps)
		return cps.Counts.Completed >= 3 && cps.Latest.Completed != nil, a.String()
	})
	get("checkpoints.json", "/jobs/"+jobA+"/checkpoints")
	get("checkpoint_details.json", fmt.Sprintf("/jobs/%s/checkpoints/details/%d", jobA, cps.Latest.Completed.ID))

	// Manual checkpoint (POST /jobs/:id/checkpoints, Flink 1.17+).
	ct := mustCall(t, c, http.StatusAccepted, http.MethodPost, "/jobs/"+jobA+"/checkpoints", map[string]any{})
	rec.save("checkpoint_trigger.json", ct)
	var trig struct {
		RequestID string `json:"request-id"`
	}
	ct.decode(t, &trig)
	final, _ := pollAsync(t, c, "/jobs/"+jobA+"/checkpoints/"+trig.RequestID, time.Minute)
	rec.save("checkpoint_status_completed.json", final)

	// Savepoint: trigger, an in-progress answer (polled at once, retried
	// with new savepoints until one is caught), the completed answer.
	var savepoint string
	for attempt := 1; ; attempt++ {
		body := map[string]any{"target-directory": fileURI(c.SavepointDir), "cancel-job": false}
		id, trigA := triggerSavepoint(t, c, jobA, body)
		final, inProgress := pollAsync(t, c, "/jobs/"+jobA+"/savepoints/"+id, time.Minute)
		var r asyncResult
		final.decode(t, &r)
		if r.Operation == nil || r.Operation.Location == "" {
			t.Fatalf("savepoint failed: %s", final)
		}
		savepoint = r.Operation.Location
		if len(inProgress) > 0 || attempt == 5 {
			rec.save("savepoint_trigger.json", trigA)
			rec.save("savepoint_completed.json", final)
			if len(inProgress) > 0 {
				rec.save("savepoint_in_progress.json", inProgress[0])
			} else {
				t.Log("no IN_PROGRESS savepoint answer caught in 5 tries")
			}
			break
		}
	}
	get("error_trigger_not_found.json", "/jobs/"+jobA+"/savepoints/"+newJobID(t))

	// Stop with savepoint: job A ends FINISHED.
	st := mustCall(t, c, http.StatusAccepted, http.MethodPost, "/jobs/"+jobA+"/stop",
		map[string]any{"drain": false, "targetDirectory": fileURI(c.SavepointDir)})
	rec.save("stop_trigger.json", st)
	st.decode(t, &trig)
	final, _ = pollAsync(t, c, "/jobs/"+jobA+"/savepoints/"+trig.RequestID, time.Minute)
	rec.save("stop_completed.json", final)
	waitJobState(t, c, jobA, time.Minute, "FINISHED")
	get("job_details_finished.json", "/jobs/"+jobA)
	rec.save("error_cancel_terminal.json", cancelJob(t, c, jobA))

	// Job B fails: --fail-at with one restart, so the history has two entries.
	outB := c.OutDir("record-b")
	jobB, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{
		"--out", outB, "--keys", "2", "--rate", "40", "--fail-at", "10",
		"--restart-attempts", "1", "--restart-delay", "200", "--checkpoint-interval", "300", "--name", "record-failing"}})
	waitJobState(t, c, jobB, time.Minute, "FAILED")
	exceptionEntries(t, c, jobB)
	get("exceptions.json", "/jobs/"+jobB+"/exceptions")
	get("job_details_failed.json", "/jobs/"+jobB)
	// A savepoint of a failed job: acknowledged, then failed in the status.
	a := call(t, c, http.MethodPost, "/jobs/"+jobB+"/savepoints",
		map[string]any{"target-directory": fileURI(c.SavepointDir), "cancel-job": false})
	rec.save("savepoint_failed_trigger.json", a)
	if a.Status == http.StatusAccepted {
		a.decode(t, &trig)
		final, _ = pollAsync(t, c, "/jobs/"+jobB+"/savepoints/"+trig.RequestID, time.Minute)
		rec.save("savepoint_failed.json", final)
	}

	// Job C is canceled, then canceled again.
	jobC, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{"--out", c.OutDir("record-c"), "--keys", "1", "--name", "record-canceled"}})
	waitJobState(t, c, jobC, time.Minute, "RUNNING")
	rec.save("cancel.json", cancelJob(t, c, jobC))
	waitJobState(t, c, jobC, time.Minute, "CANCELED")
	again := cancelJob(t, c, jobC)
	rec.saveText("cancel_again.txt", again)

	get("error_job_not_found.json", "/jobs/"+newJobID(t))
	// With flink-runtime-web on the classpath an unknown GET reaches the web
	// UI's file handler; other methods reach the REST router's own 404.
	get("error_unknown_route.json", "/flinkkit/no-such-route")
	rec.save("error_unknown_route_post.json", call(t, c, http.MethodPost, "/flinkkit/no-such-route", map[string]any{}))
	get("error_unknown_route_v1.json", "/v1/flinkkit/no-such-route")

	// Dispose of the savepoint taken above.
	// (Flink answers 200 here, not 202 as for the other triggers.)
	d := call(t, c, http.MethodPost, "/savepoint-disposal", map[string]any{"savepoint-path": savepoint})
	rec.save("disposal_trigger.json", d)
	if d.Status != http.StatusOK && d.Status != http.StatusAccepted {
		t.Fatalf("savepoint disposal: %s", d)
	}
	d.decode(t, &trig)
	final, _ = pollAsync(t, c, "/savepoint-disposal/"+trig.RequestID, time.Minute)
	rec.save("disposal_completed.json", final)

	get("jobs_overview_end.json", "/jobs/overview")

	recordAdaptive(t, c, rec)
}

// recordAdaptive starts a second cluster with the adaptive scheduler, whose
// jobs answer GET /jobs/:id/resource-requirements.
func recordAdaptive(t *testing.T, c *Cluster, rec *recorder) {
	if c.External {
		t.Log("external cluster: resource_requirements.json not recorded")
		return
	}
	ac, err := Start(ctxTimeout(t, 3*time.Minute), Config{
		Version: c.Version,
		Slots:   2,
		Extra:   map[string]string{"jobmanager.scheduler": "adaptive"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Stop()
	defer func() {
		if t.Failed() {
			t.Log("adaptive cluster logs:\n" + ac.Logs())
		}
	}()
	jarID, _ := uploadJar(t, ac, ac.TestJobJar)
	jobID, _ := runJar(t, ac, jarID, runRequest{ProgramArgsList: []string{"--out", ac.OutDir("adaptive"), "--keys", "1", "--name", "record-adaptive"}})
	waitAllTasksRunning(t, ac, jobID, time.Minute)
	rec.save("resource_requirements.json", mustCall(t, ac, http.StatusOK, http.MethodGet, "/jobs/"+jobID+"/resource-requirements", nil))
	rec.save("job_details_adaptive.json", mustCall(t, ac, http.StatusOK, http.MethodGet, "/jobs/"+jobID, nil))
	cancelJob(t, ac, jobID)
	waitJobState(t, ac, jobID, time.Minute, "CANCELED")
}

type recorder struct {
	t        *testing.T
	dir      string
	statuses map[string]int
}

func (r *recorder) save(name string, a answer) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), a.Body, 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.statuses[name] = a.Status
	r.t.Logf("%s: %d %.200s", name, a.Status, a.Body)
}

// saveText writes "<status>\n<body>\n".
func (r *recorder) saveText(name string, a answer) {
	r.t.Helper()
	text := fmt.Sprintf("%d\n%s\n", a.Status, a.Body)
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.statuses[name] = a.Status
	r.t.Logf("%s: %s", name, strings.ReplaceAll(text, "\n", " "))
}

func (r *recorder) writeStatuses() {
	names := make([]string, 0, len(r.statuses))
	for n := range r.statuses {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d\n", n, r.statuses[n])
	}
	if err := os.WriteFile(filepath.Join(r.dir, "statuses.txt"), []byte(b.String()), 0o644); err != nil {
		r.t.Error(err)
	}
}
