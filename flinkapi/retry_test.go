package flinkapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

const leaderElection = "Service temporarily unavailable due to an ongoing leader election. Please refresh."

func TestGETIsRetriedOnTransientAnswers(t *testing.T) {
	for name, first := range map[string]httpmock.Responder{
		"503":     httpmock.NewStringResponder(503, flinkError(leaderElection)),
		"429":     httpmock.NewStringResponder(429, ""),
		"refused": httpmock.NewErrorResponder(syscall.ECONNREFUSED),
		"reset":   httpmock.NewErrorResponder(syscall.ECONNRESET),
	} {
		t.Run(name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "1.20")
			calls := 0
			mt.RegisterResponder("GET", testBase+"/overview", func(req *http.Request) (*http.Response, error) {
				calls++
				if calls <= 2 {
					return first(req)
				}
				return httpmock.NewStringResponse(200, `{"taskmanagers":1,"slots-total":4}`), nil
			})
			ov, err := c.Overview(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ov.SlotsTotal != 4 {
				t.Errorf("slots = %d", ov.SlotsTotal)
			}
			if n := mt.GetTotalCallCount(); n != 3 {
				t.Errorf("%d calls, want 3", n)
			}
		})
	}
}

func TestRetriesAreBounded(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20")
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(503, flinkError(leaderElection)))
	_, err := c.Overview(context.Background())
	if !errors.Is(err, ErrUnavailable) || !IsRetryable(err) {
		t.Fatalf("err = %v", err)
	}
	if n := mt.GetTotalCallCount(); n != fastRetry.MaxAttempts {
		t.Fatalf("%d calls, want %d", n, fastRetry.MaxAttempts)
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 404, 409, 500} {
		c, mt, _ := newTestClient(t, "1.20")
		mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(status, flinkError("no")))
		if _, err := c.Overview(context.Background()); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if n := mt.GetTotalCallCount(); n != 1 {
			t.Errorf("%d was tried %d times", status, n)
		}
	}
}

func TestRetryStopsWithContext(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20", WithRetryPolicy(RetryPolicy{MaxAttempts: 50, InitialInterval: 50 * time.Millisecond, MaxInterval: time.Second, MaxElapsed: time.Minute}))
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(503, flinkError(leaderElection)))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Overview(ctx)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if n := mt.GetTotalCallCount(); n >= 50 {
		t.Fatalf("retried %d times past the context", n)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20", WithRetryPolicy(RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond, MaxInterval: 1100 * time.Millisecond, MaxElapsed: time.Minute}))
	mt.RegisterResponder("GET", testBase+"/overview",
		httpmock.NewStringResponder(429, "").HeaderSet(http.Header{"Retry-After": {"1"}}).Once().
			Then(httpmock.NewStringResponder(200, `{}`)))
	start := time.Now()
	if _, err := c.Overview(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("retried after %v, want about 1 s (Retry-After)", d)
	}
}

// A savepoint trigger carries a client trigger id and is retried with the
// same id, so Flink starts one savepoint however often the request is sent.
func TestTriggerRetriesKeepTheTriggerID(t *testing.T) {
	c, mt, rec := newTestClient(t, "1.20")
	path := testBase + "/jobs/" + string(testJob) + "/savepoints"
	var ids []string
	mt.RegisterResponder("POST", path, func(req *http.Request) (*http.Response, error) {
		var body map[string]any
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		id, _ := body["triggerId"].(string)
		ids = append(ids, id)
		if len(ids) < 3 {
			return nil, syscall.ECONNRESET
		}
		return httpmock.NewStringResponse(202, `{"request-id":"`+id+`"}`), nil
	})
	op, err := c.TriggerSavepoint(context.Background(), testJob, SavepointRequest{TargetDirectory: "s3://bucket/sp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] || string(op.TriggerID) != ids[0] {
		t.Fatalf("trigger ids sent %v, operation %v", ids, op)
	}
	if got := rec.all()[0].Body; got != `{"target-directory":"s3://bucket/sp","cancel-job":false,"triggerId":"`+ids[0]+`"}` {
		t.Errorf("body = %s", got)
	}
}

// Without a trigger id (Flink before 1.15) a trigger is not idempotent and
// must not be retried.
func TestTriggerWithoutTriggerIDIsNotRetried(t *testing.T) {
	c, mt, rec := newTestClient(t, "1.14.6")
	mt.RegisterResponder("POST", testBase+"/jobs/"+string(testJob)+"/stop", httpmock.NewStringResponder(503, flinkError(leaderElection)))
	if _, err := c.StopWithSavepoint(context.Background(), testJob, StopRequest{Drain: true}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := mt.GetTotalCallCount(); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
	if got := rec.all()[0].Body; got != `{"drain":true}` {
		t.Errorf("body sent to 1.14 = %s", got)
	}
}

func TestUnsafeCallsAreNeverRetried(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20")
	reset := httpmock.NewErrorResponder(syscall.ECONNRESET)
	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run", reset)
	mt.RegisterResponder("POST", testBase+"/jars/upload", reset)
	mt.RegisterResponder("PATCH", testBase+"/jobs/"+string(testJob), reset)
	mt.RegisterResponder("POST", testBase+"/savepoint-disposal", reset)
	mt.RegisterResponder("DELETE", testBase+"/jars/"+string(testJar), reset)
	mt.RegisterResponder("DELETE", testBase+"/cluster", reset)
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["run"] = c.RunJar(ctx, testJar, RunJarRequest{JobID: testJob})
	_, errs["upload"] = c.UploadJarReader(ctx, "job.jar", bytesReader([]byte("PK")))
	errs["cancel"] = c.CancelJob(ctx, testJob)
	_, errs["dispose"] = c.DisposeSavepoint(ctx, "file:/sp/savepoint-1")
	errs["delete jar"] = c.DeleteJar(ctx, testJar)
	errs["shutdown"] = c.ShutdownCluster(ctx)
	for name, err := range errs {
		var te *TransportError
		if !errors.As(err, &te) || !IsRetryable(err) {
			t.Errorf("%s: err = %v, want a retryable TransportError", name, err)
		}
	}
	for k, n := range mt.GetCallCountInfo() {
		if n > 1 {
			t.Errorf("%s was sent %d times", k, n)
		}
	}
}

func TestVersionGatedFields(t *testing.T) {
	ctx := context.Background()
	run := func(version string, req RunJarRequest) (string, error) {
		c, mt, rec := newTestClient(t, version)
		mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run", httpmock.NewStringResponder(200, `{"jobid":"`+string(testJob)+`"}`))
		_, err := c.RunJar(ctx, testJar, req)
		if r := rec.all(); len(r) > 0 {
			return r[0].Body, err
		}
		return "", err
	}
	full := RunJarRequest{EntryClass: "com.example.Job", ProgramArgs: []string{"--a", "b c"}, Parallelism: 2, JobID: testJob,
		SavepointPath: "file:/sp/1", AllowNonRestoredState: true, ClaimMode: ClaimModeNoClaim}
	tests := []struct {
		version string
		req     RunJarRequest
		body    string // "" when nothing may be sent
		err     error
	}{
		{"1.15.4", full, `{"entryClass":"com.example.Job","programArgsList":["--a","b c"],"parallelism":2,"jobId":"` + string(testJob) + `","savepointPath":"file:/sp/1","allowNonRestoredState":true,"restoreMode":"NO_CLAIM"}`, nil},
		{"1.19.1", full, `{"entryClass":"com.example.Job","programArgsList":["--a","b c"],"parallelism":2,"jobId":"` + string(testJob) + `","savepointPath":"file:/sp/1","allowNonRestoredState":true,"restoreMode":"NO_CLAIM"}`, nil},
		{"1.20.0", full, `{"entryClass":"com.example.Job","programArgsList":["--a","b c"],"parallelism":2,"jobId":"` + string(testJob) + `","savepointPath":"file:/sp/1","allowNonRestoredState":true,"claimMode":"NO_CLAIM"}`, nil},
		{"2.2.0", RunJarRequest{JobID: testJob}, `{"jobId":"` + string(testJob) + `"}`, nil},
		{"1.14.6", RunJarRequest{ClaimMode: ClaimModeClaim}, "", ErrUnsupported},
		{"2.0.0", RunJarRequest{ClaimMode: ClaimModeLegacy}, "", ErrUnsupported},
		{"1.16.3", RunJarRequest{FlinkConfiguration: map[string]string{"a": "b"}}, "", ErrUnsupported},
		{"1.17.0", RunJarRequest{FlinkConfiguration: map[string]string{"pipeline.name": "x"}}, `{"flinkConfiguration":{"pipeline.name":"x"}}`, nil},
	}
	for _, tt := range tests {
		body, err := run(tt.version, tt.req)
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: err = %v, want %v", tt.version, err, tt.err)
		}
		if body != tt.body {
			t.Errorf("%s: body\n got %s\nwant %s", tt.version, body, tt.body)
		}
	}

	// Savepoint fields.
	c, mt, _ := newTestClient(t, "1.14.6")
	_, err := c.TriggerSavepoint(ctx, testJob, SavepointRequest{FormatType: FormatNative})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("format type on 1.14: %v", err)
	}
	_, err = c.TriggerSavepoint(ctx, testJob, SavepointRequest{TriggerID: testTrigger})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("trigger id on 1.14: %v", err)
	}
	_, err = c.TriggerCheckpoint(ctx, testJob, CheckpointRequest{})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("checkpoint trigger on 1.14: %v", err)
	}
	_, err = c.ResourceRequirements(ctx, testJob)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("resource requirements on 1.14: %v", err)
	}
	if n := mt.GetTotalCallCount(); n != 0 {
		t.Fatalf("%d requests sent for unsupported features", n)
	}
	c, _, _ = newTestClient(t, "1.8")
	if _, err := c.StopWithSavepoint(ctx, testJob, StopRequest{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("stop on 1.8: %v", err)
	}
}

// Before 1.16 the status endpoint does not exist; the client reads the job.
func TestJobStatusFallsBackToDetails(t *testing.T) {
	c, mt, rec := newTestClient(t, "1.15.4")
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob), httpmock.NewStringResponder(200, `{"jid":"`+string(testJob)+`","state":"CANCELLING"}`))
	st, err := c.JobStatus(context.Background(), testJob)
	if err != nil || st != JobCancelling {
		t.Fatalf("JobStatus = %q, %v", st, err)
	}
	if p := rec.all()[0].Path; p != "/jobs/"+string(testJob) {
		t.Fatalf("asked %s", p)
	}
}

// Issue 16: a server that sent one byte a second held one call for 41.8 s,
// as every attempt had its own 10 s timeout and MaxElapsed was checked only
// between attempts. MaxElapsed now bounds the whole call, body reads
// included: the attempt is cut off, and the server sees its request end
// before it has sent the whole body.
func TestRetriesEndByMaxElapsed(t *testing.T) {
	const maxElapsed = 300 * time.Millisecond
	body := `{"taskmanagers":1,"slots-total":4` + strings.Repeat(" ", 200) + `}`
	sent := make(chan int, 16) // bytes of the body sent when the request ended
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		tick := time.NewTicker(20 * time.Millisecond) // the whole body takes 4.7 s
		defer tick.Stop()
		for i := range len(body) {
			select {
			case <-r.Context().Done():
				sent <- i
				return
			case <-tick.C:
			}
			_, _ = w.Write([]byte{body[i]})
			w.(http.Flusher).Flush()
		}
		sent <- len(body)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithRetryPolicy(RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond, MaxElapsed: maxElapsed}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Overview(context.Background())
	elapsed := time.Since(start)
	var te *TransportError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a TransportError matching ErrTimeout and context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "MaxElapsed") {
		t.Errorf("message %q does not name MaxElapsed", err)
	}
	select {
	case n := <-sent:
		if n >= len(body) {
			t.Fatalf("the server sent the whole body (%d bytes) before the call ended", n)
		}
	case <-time.After(10 * maxElapsed):
		t.Fatal("the server did not see the request end")
	}
	if elapsed > 10*maxElapsed { // a hang guard, not a timing assertion
		t.Fatalf("the call took %v; MaxElapsed is %v", elapsed, maxElapsed)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d attempts; none may start once MaxElapsed has passed", n)
	}
}

// TestWithoutRetries: the derived client sends a failed GET once, the
// original still retries it, and both share the version either learnt.
func TestWithoutRetries(t *testing.T) {
	var configs, overviews atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/config":
			configs.Add(1)
			w.Write([]byte(`{"flink-version":"1.20.1"}`))
		default:
			overviews.Add(1)
			w.WriteHeader(503)
			w.Write([]byte(flinkError(leaderElection)))
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithRetryPolicy(RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	once := c.WithoutRetries()
	if once == c || once.WithoutRetries() != once {
		t.Fatal("WithoutRetries returned the retrying client, or derived again from a client without retries")
	}
	ctx := context.Background()
	if _, err := once.Overview(ctx); err == nil || overviews.Load() != 1 {
		t.Errorf("without retries: %v after %d requests; want an error after 1", err, overviews.Load())
	}
	if _, err := c.Overview(ctx); err == nil || overviews.Load() != 4 {
		t.Errorf("with retries: %v after %d requests in all; want 3 more", err, overviews.Load())
	}
	v1, err1 := once.Version(ctx)
	v2, err2 := c.Version(ctx)
	if err1 != nil || err2 != nil || v1 != v2 || configs.Load() != 1 {
		t.Errorf("versions %v (%v), %v (%v) after %d GET /config; want one shared answer", v1, err1, v2, err2, configs.Load())
	}
}
