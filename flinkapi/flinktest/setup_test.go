package flinktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// testArgs are the program arguments of a test job writing to out with
// the given checkpoint interval in milliseconds.
func testArgs(out string, checkpointMs int, extra ...string) []string {
	a := []string{"--out", out, "--keys", "2", "--rate", "20", "--checkpoint-interval", itoa(checkpointMs), "--name", "test-job"}
	return append(a, extra...)
}

func itoa(n int) string { return strconv.Itoa(n) }

// fake is a server with a client that talks to it without retries.
type fake struct {
	t   *testing.T
	srv *flinktest.Server
	c   *flinkapi.Client
	ctx context.Context
}

func newFake(t *testing.T, opts ...flinktest.Option) *fake {
	t.Helper()
	srv := flinktest.NewServer(opts...)
	t.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	return &fake{t: t, srv: srv, c: c, ctx: t.Context()}
}

func (f *fake) advance(d time.Duration) { f.srv.Clock().Advance(d) }

// upload uploads the test job's jar.
func (f *fake) upload() flinkapi.JarID {
	f.t.Helper()
	id, err := f.c.UploadJarReader(f.ctx, "flinkkit-testjob.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		f.t.Fatalf("UploadJarReader: %v", err)
	}
	return id
}

// run uploads the jar (once per call) and runs a job with req's fields,
// filling in the job id; it returns the id.
func (f *fake) run(req flinkapi.RunJarRequest) flinkapi.JobID {
	f.t.Helper()
	if req.JobID == "" {
		req.JobID = flinkapi.NewJobID()
	}
	if req.EntryClass == "" {
		req.EntryClass = flinktest.CounterJobClass
	}
	if req.ProgramArgs == nil {
		req.ProgramArgs = testArgs("/out/"+string(req.JobID), 1000)
	}
	got, err := f.c.RunJar(f.ctx, f.upload(), req)
	if err != nil {
		f.t.Fatalf("RunJar: %v", err)
	}
	if got != req.JobID {
		f.t.Fatalf("RunJar answered %s, want %s", got, req.JobID)
	}
	return got
}

// running runs a job and advances the clock until its tasks run.
func (f *fake) running(req flinkapi.RunJarRequest) flinkapi.JobID {
	f.t.Helper()
	id := f.run(req)
	f.advance(time.Second)
	if st := f.state(id); st != flinkapi.JobRunning {
		f.t.Fatalf("job %s is %s one second after submission, want RUNNING", id, st)
	}
	return id
}

func (f *fake) state(id flinkapi.JobID) flinkapi.JobState {
	f.t.Helper()
	st, err := f.c.JobStatus(f.ctx, id)
	if err != nil {
		f.t.Fatalf("JobStatus: %v", err)
	}
	return st
}

func (f *fake) info(id flinkapi.JobID) flinktest.JobInfo {
	f.t.Helper()
	info, ok := f.srv.Job(id)
	if !ok {
		f.t.Fatalf("the server does not know job %s", id)
	}
	return info
}

// result polls an operation once.
func (f *fake) result(op flinkapi.Operation) *flinkapi.OperationResult {
	f.t.Helper()
	res, err := f.c.OperationStatus(f.ctx, op)
	if err != nil {
		f.t.Fatalf("OperationStatus(%v): %v", op, err)
	}
	return res
}

// raw sends a request without the client and returns the status and body.
func (f *fake) raw(method, path, body string) (int, []byte) {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(f.ctx, method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// rawJSON sends a request and decodes the answer.
func (f *fake) rawJSON(method, path, body string) (int, map[string]any) {
	f.t.Helper()
	status, b := f.raw(method, path, body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		f.t.Fatalf("%s %s: answer %q is not a JSON object: %v", method, path, b, err)
	}
	return status, v
}

// firstError returns the first line of the first message of an error body.
func firstError(t *testing.T, b []byte) string {
	t.Helper()
	var eb struct{ Errors []string }
	if err := json.Unmarshal(b, &eb); err != nil || len(eb.Errors) == 0 {
		t.Fatalf("not an error body: %q", b)
	}
	first, _, _ := strings.Cut(eb.Errors[0], "\n")
	return first
}

// apiError returns err as an *APIError or fails.
func apiError(t *testing.T, err error) *flinkapi.APIError {
	t.Helper()
	var ae *flinkapi.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want an *flinkapi.APIError", err, err)
	}
	return ae
}

func errorsIsUnsupported(err error) bool { return errors.Is(err, flinkapi.ErrUnsupported) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }
