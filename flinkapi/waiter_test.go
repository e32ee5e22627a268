package flinkapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

func fastWaiter(c *Client, polls *[]Poll) *Waiter {
	return NewWaiter(c, func(o *WaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Millisecond, 4*time.Millisecond
		o.OnPoll = func(p Poll) { *polls = append(*polls, p) }
	})
}

var spOp = Operation{Kind: OpSavepoint, JobID: testJob, TriggerID: testTrigger}

const statusPath = testBase + "/jobs/" + string(testJob) + "/savepoints/" + string(testTrigger)

// sequence answers with the given responders in turn, repeating the last.
func sequence(rs ...httpmock.Responder) httpmock.Responder {
	i := 0
	return func(req *http.Request) (*http.Response, error) {
		r := rs[min(i, len(rs)-1)]
		i++
		return r(req)
	}
}

func TestWaiterPollsUntilCompleted(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20.5", WithRetryPolicy(NoRetry))
	inProgress := httpmock.NewStringResponder(200, real(t, "1.20.5", "savepoint_in_progress.json"))
	mt.RegisterResponder("GET", statusPath, sequence(
		inProgress,
		httpmock.NewStringResponder(503, flinkError(leaderElection)), // transient: poll again
		httpmock.NewErrorResponder(syscall.ECONNREFUSED),             // transient: poll again
		inProgress,
		httpmock.NewStringResponder(200, real(t, "1.20.5", "savepoint_completed.json")),
	))
	var polls []Poll
	res, err := fastWaiter(c, &polls).Wait(context.Background(), spOp, time.Minute)
	if err != nil || !res.Succeeded() || res.Location == "" {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if len(polls) != 5 || polls[1].Err == nil || polls[2].Err == nil || polls[4].Result == nil || polls[4].Attempt != 5 {
		t.Fatalf("polls = %+v", polls)
	}
}

func TestWaiterReportsFailureCause(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", statusPath, httpmock.NewStringResponder(200, real(t, "1.20.5", "savepoint_failed.json")))
	var polls []Poll
	res, err := fastWaiter(c, &polls).Wait(context.Background(), spOp, time.Minute)
	if !errors.Is(err, ErrOperationFailed) || res == nil || res.Failure == nil || !strings.Contains(err.Error(), "Could not find Flink job") {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
}

func TestWaiterGivesUpAfterMaxWait(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", statusPath, httpmock.NewStringResponder(200, `{"status":{"id":"IN_PROGRESS"},"operation":null}`))
	var polls []Poll
	start := time.Now()
	res, err := fastWaiter(c, &polls).Wait(context.Background(), spOp, 30*time.Millisecond)
	if !errors.Is(err, ErrWaitTimeout) || res == nil || res.Completed() {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if d := time.Since(start); d > time.Second || len(polls) < 2 {
		t.Fatalf("waited %v with %d polls", d, len(polls))
	}
}

func TestWaiterStopsOnPermanentErrors(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", statusPath, httpmock.NewStringResponder(404, real(t, "1.20.5", "error_trigger_not_found.json")))
	var polls []Poll
	_, err := fastWaiter(c, &polls).Wait(context.Background(), spOp, time.Minute)
	if !IsTriggerNotFound(err) || len(polls) != 1 {
		t.Fatalf("err = %v after %d polls", err, len(polls))
	}
}

func TestWaiterHonoursContextAndValidates(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", statusPath, httpmock.NewStringResponder(200, `{"status":{"id":"IN_PROGRESS"}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	w := NewWaiter(c, func(o *WaiterOptions) { o.MinDelay, o.MaxDelay = 5*time.Millisecond, 10*time.Millisecond })
	if _, err := w.Wait(ctx, spOp, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	for name, call := range map[string]func() error{
		"maxWait": func() error { _, err := NewWaiter(c).Wait(context.Background(), spOp, 0); return err },
		"delays": func() error {
			_, err := NewWaiter(c, func(o *WaiterOptions) { o.MaxDelay = 0 }).Wait(context.Background(), spOp, time.Second)
			return err
		},
		"op": func() error {
			_, err := NewWaiter(c).Wait(context.Background(), Operation{Kind: OpSavepoint}, time.Second)
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestOperationStatusRejectsUnknownStatus(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", statusPath, httpmock.NewStringResponder(200, `{"status":{"id":"PAUSED"}}`))
	if _, err := c.OperationStatus(context.Background(), spOp); err == nil || !strings.Contains(err.Error(), "PAUSED") {
		t.Fatalf("err = %v", err)
	}
}

func TestUploadJarSendsMultipart(t *testing.T) {
	c, mt, _ := newTestClient(t, "2.3.0")
	var gotName, gotType, gotBody string
	mt.RegisterResponder("POST", testBase+"/jars/upload", func(req *http.Request) (*http.Response, error) {
		_, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if err != nil {
			return nil, err
		}
		part, err := multipart.NewReader(req.Body, params["boundary"]).NextPart()
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(part)
		gotName, gotType, gotBody = part.FormName()+"/"+part.FileName(), part.Header.Get("Content-Type"), string(b)
		return httpmock.NewStringResponse(200, real(t, "2.3.0", "jars_upload.json")), nil
	})
	dir := t.TempDir()
	file := dir + "/my-job.jar"
	if err := writeFile(file, "PK\x03\x04jar bytes"); err != nil {
		t.Fatal(err)
	}
	id, err := c.UploadJar(context.Background(), file)
	if err != nil || id.Validate() != nil {
		t.Fatalf("UploadJar = %q, %v", id, err)
	}
	if gotName != "jarfile/my-job.jar" || gotType != "application/x-java-archive" || gotBody != "PK\x03\x04jar bytes" {
		t.Fatalf("part %q %q %q", gotName, gotType, gotBody)
	}
	if _, err := c.UploadJar(context.Background(), dir); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("uploading a directory: %v", err)
	}

	// A FIFO is refused at once (its open does not wait for a writer),
	// and so is a symbolic link out of the named directory: nothing sent.
	calls := mt.GetCallCountInfo()["POST "+testBase+"/jars/upload"]
	if err := syscall.Mkfifo(dir+"/fifo.jar", 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("my-job.jar", dir+"/link.jar"); err != nil {
		t.Fatal(err)
	}
	sub := dir + "/sub"
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../my-job.jar", sub+"/out.jar"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{dir + "/fifo.jar", sub + "/out.jar"} {
		done := make(chan error, 1)
		go func() { _, err := c.UploadJar(context.Background(), bad); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("uploading %s: %v; want ErrInvalidInput", bad, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("uploading %s did not return", bad)
		}
	}
	if n := mt.GetCallCountInfo()["POST "+testBase+"/jars/upload"]; n != calls {
		t.Fatalf("%d uploads sent; want none more", n-calls)
	}
	if _, err := c.UploadJar(context.Background(), dir+"/link.jar"); err != nil {
		t.Fatalf("a link inside the directory: %v", err)
	}
}

// With an injected clock the waiter never sleeps: it asks for the delays it
// would wait, growing from MinDelay to MaxDelay, and stops at maxWait.
func TestWaiterUsesInjectedClock(t *testing.T) {
	c, mt, _ := newTestClient(t, "2.3.0")
	mt.RegisterResponder("GET", statusPath, httpmock.NewStringResponder(200, `{"status":{"id":"IN_PROGRESS"}}`))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var slept []time.Duration
	w := NewWaiter(c, func(o *WaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 4*time.Second
		o.Now = func() time.Time { return now }
		o.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); now = now.Add(d); return nil }
	})
	start := time.Now()
	_, err := w.Wait(context.Background(), spOp, 20*time.Second)
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, time.Second}
	if fmt.Sprint(slept) != fmt.Sprint(want) {
		t.Fatalf("slept %v, want %v", slept, want)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("the waiter slept on the wall clock")
	}
}
