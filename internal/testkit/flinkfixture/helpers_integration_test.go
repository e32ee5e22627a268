//go:build integration

package flinkfixture

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The REST calls below use plain net/http on purpose: the fixture is tested
// independently of the flinkapi client.

var httpClient = &http.Client{Timeout: 60 * time.Second}

// answer is one raw HTTP answer.
type answer struct {
	Status int
	Body   []byte
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s", a.Status, strings.TrimSpace(string(a.Body)))
}

func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Body, v); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
}

// call sends method path with an optional JSON body and returns the answer.
func call(t testing.TB, c *Cluster, method, path string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return answer{Status: resp.StatusCode, Body: b}
}

// mustCall is call that fails the test unless the status is want.
func mustCall(t testing.TB, c *Cluster, want int, method, path string, body any) answer {
	t.Helper()
	a := call(t, c, method, path, body)
	if a.Status != want {
		t.Fatalf("%s %s: want %d, got %s", method, path, want, a)
	}
	return a
}

// uploadJar posts a jar as the multipart field "jarfile".
func uploadJar(t testing.TB, c *Cluster, jarPath string) (jarID string, a answer) {
	t.Helper()
	f, err := os.Open(jarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, err := mw.CreateFormFile("jarfile", filepath.Base(jarPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(part, f); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.URL+"/jars/upload", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("upload jar: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a = answer{Status: resp.StatusCode, Body: b}
	if a.Status != http.StatusOK {
		t.Fatalf("upload jar: %s", a)
	}
	var up struct {
		Filename string `json:"filename"`
		Status   string `json:"status"`
	}
	a.decode(t, &up)
	if up.Status != "success" || up.Filename == "" {
		t.Fatalf("upload jar: %s", a)
	}
	return filepath.Base(up.Filename), a
}

func newJobID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// runRequest is the body of POST /jars/:id/run.
type runRequest struct {
	EntryClass            string   `json:"entryClass,omitempty"`
	ProgramArgsList       []string `json:"programArgsList"`
	JobID                 string   `json:"jobId,omitempty"`
	SavepointPath         string   `json:"savepointPath,omitempty"`
	AllowNonRestoredState bool     `json:"allowNonRestoredState,omitempty"`
}

// runJar starts the test job with args and returns its job id.
func runJar(t testing.TB, c *Cluster, jarID string, req runRequest) (string, answer) {
	t.Helper()
	if req.JobID == "" {
		req.JobID = newJobID(t)
	}
	if req.EntryClass == "" {
		req.EntryClass = c.TestJobClass
	}
	a := mustCall(t, c, http.StatusOK, http.MethodPost, "/jars/"+jarID+"/run", req)
	var r struct {
		JobID string `json:"jobid"`
	}
	a.decode(t, &r)
	if r.JobID != req.JobID {
		t.Fatalf("run jar: asked for job id %s, got %s", req.JobID, a)
	}
	return r.JobID, a
}

// jobState is GET /jobs/:id's state, or "" with the answer when not 200.
func jobState(t testing.TB, c *Cluster, jobID string) (string, answer) {
	t.Helper()
	a := call(t, c, http.MethodGet, "/jobs/"+jobID, nil)
	if a.Status != http.StatusOK {
		return "", a
	}
	var j struct {
		State string `json:"state"`
	}
	a.decode(t, &j)
	return j.State, a
}

// waitFor polls cond every 200ms until it returns true or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last: %s)", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitJobState(t testing.TB, c *Cluster, jobID string, timeout time.Duration, states ...string) string {
	t.Helper()
	var got string
	waitFor(t, timeout, fmt.Sprintf("job %s in %v", jobID, states), func() (bool, string) {
		s, a := jobState(t, c, jobID)
		got = s
		for _, want := range states {
			if s == want {
				return true, s
			}
		}
		if s == "" {
			return false, a.String()
		}
		return false, s
	})
	return got
}

// waitAllTasksRunning waits until the job is RUNNING with every vertex RUNNING,
// which is when checkpoints and savepoints can be taken.
func waitAllTasksRunning(t testing.TB, c *Cluster, jobID string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "all tasks of "+jobID+" running", func() (bool, string) {
		a := call(t, c, http.MethodGet, "/jobs/"+jobID, nil)
		if a.Status != http.StatusOK {
			return false, a.String()
		}
		var j struct {
			State    string `json:"state"`
			Vertices []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"vertices"`
		}
		a.decode(t, &j)
		if j.State != "RUNNING" || len(j.Vertices) == 0 {
			return false, j.State
		}
		for _, v := range j.Vertices {
			if v.Status != "RUNNING" {
				return false, v.Name + " " + v.Status
			}
		}
		return true, ""
	})
}

// waitCounts waits until every key of keys has a count file with a value
// accepted by ok, and returns the counts read.
func waitCounts(t testing.TB, dir string, keys int, timeout time.Duration, ok func(key string, n int64) bool) map[string]int64 {
	t.Helper()
	var counts map[string]int64
	waitFor(t, timeout, "counts in "+dir, func() (bool, string) {
		var err error
		counts, err = ReadCounts(dir)
		if err != nil {
			return false, err.Error()
		}
		if len(counts) < keys {
			return false, fmt.Sprint(counts)
		}
		for k, n := range counts {
			if !ok(k, n) {
				return false, fmt.Sprint(counts)
			}
		}
		return true, ""
	})
	return counts
}

// asyncResult is the status answer of an asynchronous operation.
type asyncResult struct {
	Status struct {
		ID string `json:"id"`
	} `json:"status"`
	Operation *struct {
		Location     string          `json:"location"`
		FailureCause json.RawMessage `json:"failure-cause"`
	} `json:"operation"`
}

// pollAsync polls path until the operation is COMPLETED and returns the
// final answer and the answers seen while it was in progress.
func pollAsync(t testing.TB, c *Cluster, path string, timeout time.Duration) (final answer, inProgress []answer) {
	t.Helper()
	waitFor(t, timeout, path, func() (bool, string) {
		a := mustCall(t, c, http.StatusOK, http.MethodGet, path, nil)
		var r asyncResult
		a.decode(t, &r)
		if r.Status.ID == "COMPLETED" {
			final = a
			return true, ""
		}
		inProgress = append(inProgress, a)
		return false, a.String()
	})
	return final, inProgress
}

// triggerSavepoint triggers a savepoint and returns the trigger id.
func triggerSavepoint(t testing.TB, c *Cluster, jobID string, body map[string]any) (string, answer) {
	t.Helper()
	a := mustCall(t, c, http.StatusAccepted, http.MethodPost, "/jobs/"+jobID+"/savepoints", body)
	var r struct {
		RequestID string `json:"request-id"`
	}
	a.decode(t, &r)
	if r.RequestID == "" {
		t.Fatalf("savepoint trigger: %s", a)
	}
	return r.RequestID, a
}

func cancelJob(t testing.TB, c *Cluster, jobID string) answer {
	t.Helper()
	return call(t, c, http.MethodPatch, "/jobs/"+jobID+"?mode=cancel", nil)
}

// cancelAtEnd cancels the job when the test ends, whatever its outcome.
func cancelAtEnd(t testing.TB, c *Cluster, jobID string) {
	t.Cleanup(func() {
		if s, _ := jobState(t, c, jobID); s == "RUNNING" || s == "RESTARTING" || s == "CREATED" || s == "INITIALIZING" {
			cancelJob(t, c, jobID)
		}
	})
}

// ctxTimeout is a context for a fixture call that fails the test if it hangs.
func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
