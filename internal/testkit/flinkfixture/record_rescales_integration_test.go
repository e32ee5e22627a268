//go:build integration

package flinkfixture

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// rescaleHistoryExtra is the configuration of a cluster whose jobs keep a
// rescale history (Flink 2.3+): the adaptive scheduler, a history of 16
// rescales, and no cooldown between two rescales, so that a change of a
// job's resource requirements rescales it at once.
var rescaleHistoryExtra = map[string]string{
	"jobmanager.scheduler":                                             "adaptive",
	"web.adaptive-scheduler.rescale-history.size":                      "16",
	"jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0 ms",
}

// TestRecordRescales adds real answers of the rescale history routes
// (Flink 2.3+, /jobs/:jobid/rescales/...) to
// flinkapi/testdata/real/<flink version>/ (rescales_* files, statuses
// merged into statuses.txt): from a cluster with the adaptive scheduler and
// the history on, before and after an in-place rescale made by new
// resource requirements; then from one with the adaptive scheduler and the
// history off. Each cluster is started and stopped in turn. Run it on its
// own:
//
//	FLINK_VERSION=2.3.0 FLINKKIT_RECORD=1 go test -tags integration -run RecordRescales -count=1 -v ./internal/testkit/flinkfixture/
func TestRecordRescales(t *testing.T) {
	if os.Getenv("FLINKKIT_RECORD") != "1" {
		t.Skip("set FLINKKIT_RECORD=1 to record REST answers")
	}
	if os.Getenv("FLINK_URL") != "" {
		t.Skip("needs clusters started here with their own configuration, not FLINK_URL")
	}
	version := os.Getenv("FLINK_VERSION")
	if !strings.HasPrefix(version, "2.") || version < "2.3" {
		t.Skipf("Flink %s has no rescale history (2.3+)", version)
	}
	start := func(extra map[string]string) *Cluster {
		c, err := Start(ctxTimeout(t, 3*time.Minute), Config{Version: version, Slots: 2, Extra: extra})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	on := start(rescaleHistoryExtra)
	rec, _ := newRecorder(t, on, false)
	defer rec.writeStatuses()
	func() {
		defer on.Stop()
		defer func() {
			if t.Failed() {
				t.Log("cluster logs:\n" + on.Logs())
			}
		}()
		get := func(name, path string) answer {
			t.Helper()
			a := call(t, on, http.MethodGet, path, nil)
			rec.save(name, a)
			return a
		}
		jarID, _ := uploadJar(t, on, on.TestJobJar)
		jobID, _ := runJar(t, on, jarID, runRequest{ProgramArgsList: []string{"--out", on.OutDir("rescales"), "--keys", "1", "--rate", "20", "--name", "record-rescales"}})
		waitAllTasksRunning(t, on, jobID, time.Minute)
		get("rescales_overview_initial.json", "/jobs/"+jobID+"/rescales/overview")
		get("rescales_history_initial.json", "/jobs/"+jobID+"/rescales/history")
		get("rescales_config.json", "/jobs/"+jobID+"/rescales/config")

		var rr map[string]any
		mustCall(t, on, http.StatusOK, http.MethodGet, "/jobs/"+jobID+"/resource-requirements", nil).decode(t, &rr)
		next := map[string]any{}
		for v := range rr {
			next[v] = map[string]any{"parallelism": map[string]int{"lowerBound": 1, "upperBound": 2}}
		}
		t0 := time.Now()
		mustCall(t, on, http.StatusOK, http.MethodPut, "/jobs/"+jobID+"/resource-requirements", next)
		var hist []struct {
			RescaleUUID   string `json:"rescaleUuid"`
			TerminalState string `json:"terminalState"`
			TriggerCause  string `json:"triggerCause"`
		}
		waitFor(t, 2*time.Minute, "a completed UPDATE_REQUIREMENT rescale", func() (bool, string) {
			a := mustCall(t, on, http.StatusOK, http.MethodGet, "/jobs/"+jobID+"/rescales/history", nil)
			a.decode(t, &hist)
			for _, h := range hist {
				if h.TriggerCause == "UPDATE_REQUIREMENT" && h.TerminalState != "" {
					return true, ""
				}
			}
			return false, a.String()
		})
		t.Logf("rescaled in %v", time.Since(t0))
		waitAllTasksRunning(t, on, jobID, time.Minute)
		get("rescales_history.json", "/jobs/"+jobID+"/rescales/history")
		get("rescales_overview.json", "/jobs/"+jobID+"/rescales/overview")
		get("rescales_summary.json", "/jobs/"+jobID+"/rescales/summary")
		for _, h := range hist {
			if h.TriggerCause == "UPDATE_REQUIREMENT" {
				get("rescales_details.json", "/jobs/"+jobID+"/rescales/details/"+h.RescaleUUID)
				break
			}
		}
		get("rescales_details_unknown.json", "/jobs/"+jobID+"/rescales/details/"+newJobID(t))
		get("rescales_details_malformed.json", "/jobs/"+jobID+"/rescales/details/not-a-uuid")
		get("rescales_history_unknown_job.json", "/jobs/"+newJobID(t)+"/rescales/history")
		get("job_details_rescaled.json", "/jobs/"+jobID)
		cancelJob(t, on, jobID)
		waitJobState(t, on, jobID, time.Minute, "CANCELED")
		get("rescales_history_canceled.json", "/jobs/"+jobID+"/rescales/history")
	}()

	recordOff(t, rec, start(map[string]string{"jobmanager.scheduler": "adaptive"}), "off")
	recordOff(t, rec, start(nil), "default_scheduler")
}

// recordOff records the rescale routes of a running job on c, a cluster
// without the rescale history, as rescales_<what>_<route>.json, and stops
// c.
func recordOff(t *testing.T, rec *recorder, c *Cluster, what string) {
	defer c.Stop()
	defer func() {
		if t.Failed() {
			t.Log("cluster logs:\n" + c.Logs())
		}
	}()
	jarID, _ := uploadJar(t, c, c.TestJobJar)
	jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{"--out", c.OutDir("rescales-" + what), "--keys", "1", "--name", "record-rescales-" + what}})
	waitAllTasksRunning(t, c, jobID, time.Minute)
	for _, r := range []string{"overview", "history", "summary", "config", "details/" + newJobID(t)} {
		name := "rescales_" + what + "_" + strings.SplitN(r, "/", 2)[0] + ".json"
		rec.save(name, call(t, c, http.MethodGet, "/jobs/"+jobID+"/rescales/"+r, nil))
	}
	cancelJob(t, c, jobID)
	waitJobState(t, c, jobID, time.Minute, "CANCELED")
}
