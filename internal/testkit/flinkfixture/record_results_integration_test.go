//go:build integration

package flinkfixture

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRecordResults adds real answers of the execution result and
// accumulator routes to flinkapi/testdata/real/<flink version>/ (results_*
// files, with their statuses merged into statuses.txt), leaving the other
// recordings as they are. Run it on its own:
//
//	FLINK_VERSION=2.3.0 FLINKKIT_RECORD=1 go test -tags integration -run RecordResults -count=1 -v ./internal/testkit/flinkfixture/
func TestRecordResults(t *testing.T) {
	if os.Getenv("FLINKKIT_RECORD") != "1" {
		t.Skip("set FLINKKIT_RECORD=1 to record REST answers")
	}
	c := use(t)
	rec, get := newRecorder(t, c, false)
	defer rec.writeStatuses()
	jarID, _ := uploadJar(t, c, c.TestJobJar)

	// A running job: its result is IN_PROGRESS, its accumulators count.
	outA := c.OutDir("results-running")
	jobA, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{"--out", outA, "--keys", "2", "--rate", "40", "--name", "results-running"}})
	cancelAtEnd(t, c, jobA)
	waitAllTasksRunning(t, c, jobA, time.Minute)
	waitCounts(t, outA, 2, time.Minute, func(string, int64) bool { return true })
	get("results_execution_running.json", "/jobs/"+jobA+"/execution-result")
	get("results_accumulators_running.json", "/jobs/"+jobA+"/accumulators")
	cancelJob(t, c, jobA)
	waitJobState(t, c, jobA, time.Minute, "CANCELED")
	get("results_execution_canceled.json", "/jobs/"+jobA+"/execution-result")

	// A bounded job: 30 events, then FINISHED.
	jobB, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{"--out", c.OutDir("results-bounded"), "--keys", "3", "--rate", "100",
		"--records", "30", "--name", "results-bounded"}})
	waitJobState(t, c, jobB, time.Minute, "FINISHED")
	get("results_execution_finished.json", "/jobs/"+jobB+"/execution-result")
	get("results_accumulators_finished.json", "/jobs/"+jobB+"/accumulators")
	get("results_accumulators_serialized.json", "/jobs/"+jobB+"/accumulators?includeSerializedValue=true")

	// A failing job.
	jobC, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: []string{"--out", c.OutDir("results-failed"), "--keys", "1", "--rate", "40",
		"--fail-at", "5", "--name", "results-failed"}})
	waitJobState(t, c, jobC, time.Minute, "FAILED")
	get("results_execution_failed.json", "/jobs/"+jobC+"/execution-result")

	get("results_execution_not_found.json", "/jobs/"+newJobID(t)+"/execution-result")
	get("results_accumulators_not_found.json", "/jobs/"+newJobID(t)+"/accumulators")
}

// newRecorder returns the recorder of c's version, which writes into
// flinkapi/testdata/real/<version>/ (emptied first if fresh; otherwise
// the statuses recorded before are kept), and a GET that records its
// answer under a name.
func newRecorder(t *testing.T, c *Cluster, fresh bool) (*recorder, func(name, path string) answer) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "flinkapi", "testdata", "real", c.FlinkVersion)
	if fresh {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{t: t, dir: dir, statuses: readStatuses(t, filepath.Join(dir, "statuses.txt"))}
	return rec, func(name, path string) answer {
		t.Helper()
		a := call(t, c, http.MethodGet, path, nil)
		rec.save(name, a)
		return a
	}
}

// readStatuses reads a statuses.txt that TestRecord wrote.
func readStatuses(t *testing.T, file string) map[string]int {
	m := map[string]int{}
	f, err := os.Open(file)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, code, ok := strings.Cut(sc.Text(), " ")
		if n, err := strconv.Atoi(code); ok && err == nil {
			m[name] = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}
