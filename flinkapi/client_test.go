package flinkapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

func TestNewClientRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		url  string
		opts []Option
		want string // part of the error message
	}{
		{"empty url", "", nil, "base URL is empty"},
		{"no scheme", "localhost:8081", nil, "http:// or https://"},
		{"ftp", "ftp://host", nil, `scheme "ftp"`},
		{"credentials", "http://admin:secret@host:8081", nil, "must not contain credentials"},
		{"no host", "http://", nil, "has no host"},
		{"query", "http://host:8081/?x=1", nil, "query or fragment"},
		{"nil option", testBase, []Option{nil}, "option 0 is nil"},
		{"nil http client", testBase, []Option{WithHTTPClient(nil)}, "client is nil"},
		{"zero timeout", testBase, []Option{WithTimeout(0)}, "timeout must be positive"},
		{"nil tls", testBase, []Option{WithTLSConfig(nil)}, "config is nil"},
		{"empty user", testBase, []Option{WithBasicAuth("", "pw")}, "user is empty"},
		{"colon user", testBase, []Option{WithBasicAuth("a:b", "pw")}, "must not contain ':'"},
		{"two auths", testBase, []Option{WithBasicAuth("u", "p"), WithBearerToken("t")}, "one kind of authentication"},
		{"empty token", testBase, []Option{WithBearerToken("")}, "token is empty"},
		{"bad user agent", testBase, []Option{WithUserAgent(" ")}, "not a valid user agent"},
		{"zero attempts", testBase, []Option{WithRetryPolicy(RetryPolicy{})}, "MaxAttempts must be at least 1"},
		{"no interval", testBase, []Option{WithRetryPolicy(RetryPolicy{MaxAttempts: 3})}, "InitialInterval must be positive"},
		{"max below initial", testBase, []Option{WithRetryPolicy(RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: time.Millisecond})}, "MaxInterval"},
		{"nil logger", testBase, []Option{WithLogger(nil)}, "logger is nil"},
		{"tiny max size", testBase, []Option{WithMaxResponseSize(10)}, "at least 1024"},
		{"bad version", testBase, []Option{WithFlinkVersion("latest")}, `"latest"`},
		{"tls on custom transport", testBase, []Option{WithHTTPClient(&http.Client{Transport: roundTripFunc(nil)}), WithTLSConfig(testTLSConfigForValidation())}, "*http.Transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.url, tt.opts...)
			if err == nil {
				t.Fatalf("NewClient(%q) = %v, want an error containing %q", tt.url, c, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q leaks the password", err)
			}
		})
	}
}

func TestNewClientNormalisesBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://host:8081":        "http://host:8081",
		"http://host:8081/":       "http://host:8081",
		"https://gw/flink/jm/":    "https://gw/flink/jm",
		"http://[::1]:8081/proxy": "http://[::1]:8081/proxy",
	} {
		c, err := NewClient(in)
		if err != nil {
			t.Fatalf("NewClient(%q): %v", in, err)
		}
		if got := c.BaseURL(); got != want {
			t.Errorf("BaseURL of %q = %q, want %q", in, got, want)
		}
	}
}

func TestClientDoesNotModifyCallersHTTPClient(t *testing.T) {
	hc := &http.Client{}
	if _, err := NewClient(testBase, WithHTTPClient(hc), WithTLSConfig(testTLSConfigForValidation())); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != nil {
		t.Fatalf("the caller's http.Client got a transport: %T", hc.Transport)
	}
}

func TestIDValidation(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"job ok", JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90").Validate()},
		{"trigger ok upper", TriggerID("0123456789ABCDEF0123456789ABCDEF").Validate()},
		{"jar ok", JarID("5c7a9d1e-2f44_job-1.0.jar").Validate()},
	}
	for _, tt := range tests {
		if tt.err != nil {
			t.Errorf("%s: %v", tt.name, tt.err)
		}
	}
	bad := []struct {
		name string
		err  error
	}{
		{"job short", JobID("abc").Validate()},
		{"job empty", JobID("").Validate()},
		{"job non-hex", JobID("g1b2c3d4e5f60718293a4b5c6d7e8f90").Validate()},
		{"job path", JobID("../../../../cluster/aaaaaaaaaaaaa").Validate()}, // a REST id, not a file path
		{"job 33", JobID("a1b2c3d4e5f60718293a4b5c6d7e8f901").Validate()},
		{"trigger slash", TriggerID("0123456789abcdef/123456789abcdef").Validate()},
		{"jar empty", JarID("").Validate()},
		{"jar no suffix", JarID("job.zip").Validate()},
		{"jar only suffix", JarID(".jar").Validate()},
		{"jar slash", JarID("a/b.jar").Validate()},
		{"jar backslash", JarID(`a\b.jar`).Validate()},
		{"jar dotdot", JarID("..jar").Validate()},
		{"jar traversal", JarID("../../cluster.jar").Validate()}, // a REST id, not a file path
		{"jar query", JarID("x.jar?mode=cancel").Validate()},
		{"jar percent", JarID("%2e%2e.jar").Validate()},
		{"jar control", JarID("a\nb.jar").Validate()},
		{"jar long", JarID(strings.Repeat("a", 300) + ".jar").Validate()},
	}
	for _, tt := range bad {
		if tt.err == nil {
			t.Errorf("%s: accepted", tt.name)
		} else if !errors.Is(tt.err, ErrInvalidInput) {
			t.Errorf("%s: %v does not match ErrInvalidInput", tt.name, tt.err)
		}
	}
	if id, err := ParseJobID("A1B2C3D4E5F60718293A4B5C6D7E8F90"); err != nil || id != testJob {
		t.Errorf("ParseJobID upper case = %q, %v", id, err)
	}
	if a, b := NewJobID(), NewJobID(); a == b || a.Validate() != nil {
		t.Errorf("NewJobID gave %q and %q", a, b)
	}
	if tr := NewTriggerID(); tr.Validate() != nil {
		t.Errorf("NewTriggerID gave %q", tr)
	}
}

// Malformed ids never reach the network.
func TestBadInputSendsNothing(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20")
	ctx := context.Background()
	bad := JobID("../cluster")
	calls := map[string]error{}
	_, calls["Job"] = c.Job(ctx, bad)
	_, calls["JobStatus"] = c.JobStatus(ctx, bad)
	calls["CancelJob"] = c.CancelJob(ctx, bad)
	_, calls["JobExceptions"] = c.JobExceptions(ctx, bad, 5)
	_, calls["JobExceptions negative"] = c.JobExceptions(ctx, testJob, -1)
	_, calls["Checkpoints"] = c.Checkpoints(ctx, bad)
	_, calls["CheckpointDetails"] = c.CheckpointDetails(ctx, testJob, -3)
	_, calls["CheckpointConfig"] = c.CheckpointConfig(ctx, bad)
	_, calls["TriggerSavepoint"] = c.TriggerSavepoint(ctx, bad, SavepointRequest{})
	_, calls["TriggerSavepoint format"] = c.TriggerSavepoint(ctx, testJob, SavepointRequest{FormatType: "ZIP"})
	_, calls["TriggerSavepoint blank dir"] = c.TriggerSavepoint(ctx, testJob, SavepointRequest{TargetDirectory: "  "})
	_, calls["TriggerSavepoint bad trigger"] = c.TriggerSavepoint(ctx, testJob, SavepointRequest{TriggerID: "nope"})
	_, calls["StopWithSavepoint"] = c.StopWithSavepoint(ctx, bad, StopRequest{})
	_, calls["TriggerCheckpoint type"] = c.TriggerCheckpoint(ctx, testJob, CheckpointRequest{Type: "DELTA"})
	_, calls["OperationStatus"] = c.OperationStatus(ctx, Operation{Kind: OpSavepoint, JobID: testJob, TriggerID: "x/y"})
	_, calls["OperationStatus kind"] = c.OperationStatus(ctx, Operation{Kind: "rescale", JobID: testJob, TriggerID: testTrigger})
	_, calls["DisposeSavepoint"] = c.DisposeSavepoint(ctx, " ")
	_, calls["RunJar jar"] = c.RunJar(ctx, "../x.jar", RunJarRequest{})
	_, calls["RunJar parallelism"] = c.RunJar(ctx, testJar, RunJarRequest{Parallelism: -1})
	_, calls["RunJar parallelism above Flink's limit"] = c.RunJar(ctx, testJar, RunJarRequest{Parallelism: 32769})
	_, calls["RunJar job id"] = c.RunJar(ctx, testJar, RunJarRequest{JobID: "123"})
	_, calls["RunJar class"] = c.RunJar(ctx, testJar, RunJarRequest{EntryClass: "a b"})
	_, calls["RunJar claim"] = c.RunJar(ctx, testJar, RunJarRequest{ClaimMode: "MINE"})
	_, calls["RunJar savepoint"] = c.RunJar(ctx, testJar, RunJarRequest{SavepointPath: " "})
	calls["DeleteJar"] = c.DeleteJar(ctx, "x.jar/../../cluster")
	_, calls["UploadJar"] = c.UploadJar(ctx, "/no/such/file.jar")
	_, calls["UploadJar suffix"] = c.UploadJar(ctx, "/etc/passwd")
	_, calls["UploadJarReader"] = c.UploadJarReader(ctx, "../a.jar", strings.NewReader("x"))
	calls["SetResourceRequirements"] = c.SetResourceRequirements(ctx, testJob, ResourceRequirements{"v": {LowerBound: 3, UpperBound: 2}})
	calls["SetResourceRequirements empty"] = c.SetResourceRequirements(ctx, testJob, nil)
	calls["SetResourceRequirements upper above Flink's limit"] = c.SetResourceRequirements(ctx, testJob, ResourceRequirements{"v": {LowerBound: 1, UpperBound: 32769}})
	calls["SetResourceRequirements both above Flink's limit"] = c.SetResourceRequirements(ctx, testJob, ResourceRequirements{"v": {LowerBound: 40000, UpperBound: 40000}})
	calls["SetResourceRequirements negative"] = c.SetResourceRequirements(ctx, testJob, ResourceRequirements{"v": {LowerBound: -1, UpperBound: 4}})
	calls["SetResourceRequirements zero lower"] = c.SetResourceRequirements(ctx, testJob, ResourceRequirements{"v": {LowerBound: 0, UpperBound: 4}})
	for name, err := range calls {
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
		if strings.Contains(name, "Flink's limit") && (!strings.Contains(err.Error(), "32768") || !strings.Contains(err.Error(), "Bound") && !strings.Contains(err.Error(), "Parallelism")) {
			t.Errorf("%s: message %q does not name the field and the limit 32768", name, err)
		}
	}
	if n := mt.GetTotalCallCount(); n != 0 {
		t.Fatalf("%d requests were sent for bad input", n)
	}
}

func TestParseVersion(t *testing.T) {
	good := map[string]Version{
		"1.20.1":         {1, 20, 1},
		"2.1-SNAPSHOT":   {2, 1, 0},
		"1.15":           {1, 15, 0},
		" v2.0.0 ":       {2, 0, 0},
		"1.19.3-rc1":     {1, 19, 3},
		"2.2.0+build.17": {2, 2, 0},
	}
	for in, want := range good {
		got, err := ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2", "x.y", "1.2.3.4", "0.9", "-1.2", "1.-2", "1.2.x"} {
		if v, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", in, v)
		}
	}
}

func TestVersionSupports(t *testing.T) {
	v := func(s string) Version { x, _ := ParseVersion(s); return x }
	tests := []struct {
		version string
		feature Feature
		want    bool
	}{
		{"1.8", FeatureStopWithSavepoint, false},
		{"1.9", FeatureStopWithSavepoint, true},
		{"1.14.6", FeatureClientTriggerID, false},
		{"1.15.0", FeatureClientTriggerID, true},
		{"1.15.0", FeatureSavepointFormatType, true},
		{"1.15.4", FeatureJobStatusEndpoint, false},
		{"1.16.0", FeatureJobStatusEndpoint, true},
		{"1.16.3", FeatureCheckpointTrigger, false},
		{"1.17.0", FeatureCheckpointTrigger, true},
		{"1.16.3", FeatureJarRunConfiguration, false},
		{"1.17.2", FeatureJarRunConfiguration, true},
		{"1.17.2", FeatureResourceRequirements, false},
		{"1.18.0", FeatureResourceRequirements, true},
		{"1.19.1", FeatureClaimMode, false},
		{"1.20.0", FeatureClaimMode, true},
		{"1.20.0", FeatureLegacyClaimMode, true},
		{"2.0.0", FeatureLegacyClaimMode, false},
		{"2.2.0", FeatureResourceRequirements, true},
	}
	for _, tt := range tests {
		if got := v(tt.version).Supports(tt.feature); got != tt.want {
			t.Errorf("%s supports %s = %v, want %v", tt.version, tt.feature, got, tt.want)
		}
	}
	if (Version{}).Supports(FeatureStopWithSavepoint) {
		t.Error("the unknown version supports a gated feature")
	}
	err := v("1.17.1").require(FeatureResourceRequirements)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "1.18") || !strings.Contains(err.Error(), "1.17.1") {
		t.Errorf("require = %v; want ErrUnsupported naming 1.18 and 1.17.1", err)
	}
	err = v("2.0.0").require(FeatureLegacyClaimMode)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "2.0") {
		t.Errorf("require LEGACY on 2.0 = %v", err)
	}
}

func TestVersionIsDetectedOnceAndCached(t *testing.T) {
	c, mt, _ := newTestClient(t, "")
	mt.RegisterResponder("GET", testBase+"/config", httpmock.NewStringResponder(200, `{"flink-version":"1.16.3","refresh-interval":3000}`))
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/status", httpmock.NewStringResponder(200, `{"status":"RUNNING"}`))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		st, err := c.JobStatus(ctx, testJob)
		if err != nil || st != JobRunning {
			t.Fatalf("JobStatus = %q, %v", st, err)
		}
	}
	if n := mt.GetCallCountInfo()["GET "+testBase+"/config"]; n != 1 {
		t.Fatalf("GET /config was called %d times, want 1", n)
	}
	mt.RegisterResponder("GET", testBase+"/config", httpmock.NewStringResponder(200, `{"flink-version":"2.2.0"}`))
	v, err := c.RefreshVersion(ctx)
	if err != nil || v != (Version{2, 2, 0}) {
		t.Fatalf("RefreshVersion = %v, %v", v, err)
	}
	if v, _ := c.Version(ctx); v != (Version{2, 2, 0}) {
		t.Fatalf("Version after refresh = %v", v)
	}
}

func TestVersionDetectionFailsClearly(t *testing.T) {
	c, mt, _ := newTestClient(t, "")
	mt.RegisterResponder("GET", testBase+"/config", httpmock.NewStringResponder(200, `{"flink-version":"<unknown>"}`))
	_, err := c.TriggerSavepoint(context.Background(), testJob, SavepointRequest{})
	if err == nil || !strings.Contains(err.Error(), "flink-version") {
		t.Fatalf("err = %v, want one naming flink-version", err)
	}
	if n := mt.GetTotalCallCount(); n != 1 {
		t.Fatalf("%d requests sent, want only GET /config", n)
	}
}

func TestAuthHeadersAndUserAgent(t *testing.T) {
	c, mt, rec := newTestClient(t, "1.20", WithBasicAuth("ops", "s3cret"), WithUserAgent("my-operator/1.2"))
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(503, flinkError("Service temporarily unavailable due to an ongoing leader election. Please refresh.")))
	_, err := c.Overview(context.Background())
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "ops") {
		t.Fatalf("err = %v; want an error without credentials", err)
	}
	r := rec.all()[0]
	if u, p, ok := (&http.Request{Header: r.Header}).BasicAuth(); !ok || u != "ops" || p != "s3cret" {
		t.Errorf("basic auth header = %q", r.Header.Get("Authorization"))
	}
	if ua := r.Header.Get("User-Agent"); ua != "my-operator/1.2" {
		t.Errorf("User-Agent = %q", ua)
	}

	c, mt, rec = newTestClient(t, "1.20", WithBearerToken("tok123"))
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(200, `{}`))
	if _, err := c.Overview(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := rec.all()[0].Header.Get("Authorization"); h != "Bearer tok123" {
		t.Errorf("Authorization = %q", h)
	}
}

func TestResponseSizeIsCapped(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20", WithMaxResponseSize(4096))
	big := `{"jobs":[` + strings.Repeat(`{"id":"a1b2c3d4e5f60718293a4b5c6d7e8f90","status":"RUNNING"},`, 200) + `{}]}`
	mt.RegisterResponder("GET", testBase+"/jobs", httpmock.NewStringResponder(200, big))
	_, err := c.ListJobs(context.Background())
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("err = %v, want ErrResponseTooLarge", err)
	}
	// An error body is capped as well.
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(500, big))
	if _, err := c.Overview(context.Background()); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("err = %v, want ErrResponseTooLarge", err)
	}
}

func TestDecodeErrorNamesTheCall(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20")
	mt.RegisterResponder("GET", testBase+"/jobs/overview", httpmock.NewStringResponder(200, `{"jobs": {"not": "a list"}}`))
	_, err := c.JobsOverview(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GET /jobs/overview: decoding answer") {
		t.Fatalf("err = %v", err)
	}
}

// An answer that is not what Flink sends is a *DecodeError matching
// ErrDecode, unwrapping to its cause; it is not retried, and it is not a
// misconfiguration (a caller that polls may poll again).
func TestDecodeErrorIsTyped(t *testing.T) {
	ctx := context.Background()
	jobPathExc := "/jobs/" + string(testJob) + "/exceptions"
	tests := []struct {
		name  string
		route string // METHOD path
		body  string
		call  func(c *Client) error
		path  string
		cause any // a pointer to the type the error must unwrap to, or nil
	}{
		{"wrong shape", "GET /jobs/overview", `{"jobs": {"not": "a list"}}`,
			func(c *Client) error { _, err := c.JobsOverview(ctx); return err }, "/jobs/overview", new(*json.UnmarshalTypeError)},
		{"proxy page with 200", "GET " + jobPathExc, "<html>Sign in</html>",
			func(c *Client) error { _, err := c.JobExceptions(ctx, testJob, 5); return err }, jobPathExc, new(*json.SyntaxError)},
		{"cut short", "GET /overview", `{"taskmanagers":1,"slo`,
			func(c *Client) error { _, err := c.Overview(ctx); return err }, "/overview", new(*json.SyntaxError)},
		{"no request-id", "POST /jobs/" + string(testJob) + "/savepoints", `{"request-id":"../x"}`,
			func(c *Client) error { _, err := c.TriggerSavepoint(ctx, testJob, SavepointRequest{}); return err }, "/jobs/" + string(testJob) + "/savepoints", nil},
		{"no job id", "POST /jars/" + string(testJar) + "/run", `{"jobid":""}`,
			func(c *Client) error { _, err := c.RunJar(ctx, testJar, RunJarRequest{}); return err }, "/jars/" + string(testJar) + "/run", nil},
		{"unknown operation status", "GET /jobs/" + string(testJob) + "/savepoints/" + string(testTrigger), `{"status":{"id":"WEIRD"}}`,
			func(c *Client) error {
				_, err := c.OperationStatus(ctx, Operation{Kind: OpSavepoint, JobID: testJob, TriggerID: testTrigger})
				return err
			}, "/jobs/" + string(testJob) + "/savepoints/" + string(testTrigger), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "1.20")
			method, path, _ := strings.Cut(tt.route, " ")
			mt.RegisterResponder(method, testBase+path, httpmock.NewStringResponder(200, tt.body))
			err := tt.call(c)
			var de *DecodeError
			if !errors.Is(err, ErrDecode) || !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError matching ErrDecode", err)
			}
			if de.Method != method || de.Path != tt.path {
				t.Errorf("DecodeError names %s %s, want %s %s", de.Method, de.Path, method, tt.path)
			}
			if tt.cause != nil && !errors.As(err, tt.cause) {
				t.Errorf("%v does not unwrap to %T", err, tt.cause)
			}
			if IsRetryable(err) || errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrInvalidInput) {
				t.Errorf("%v: retryable %v, misconfigured %v, invalid input %v; want none",
					err, IsRetryable(err), errors.Is(err, ErrMisconfigured), errors.Is(err, ErrInvalidInput))
			}
			if n := mt.GetTotalCallCount(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

func TestContextIsAttached(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20")
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(200, `{}`).Delay(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Overview(ctx)
	var te *TransportError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a TransportError carrying the context's deadline", err)
	}
	if IsRetryable(context.Canceled) {
		t.Error("a cancelled context is retryable")
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Fatal("the request outlived its context")
	}
	var nilCtx context.Context
	if _, err := c.Overview(nilCtx); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("nil context: %v", err)
	}
}

func TestPerRequestTimeout(t *testing.T) {
	c, mt, _ := newTestClient(t, "1.20", WithTimeout(20*time.Millisecond), WithRetryPolicy(NoRetry))
	mt.RegisterResponder("GET", testBase+"/overview", httpmock.NewStringResponder(200, `{}`).Delay(time.Second))
	_, err := c.Overview(context.Background())
	if !errors.Is(err, ErrTimeout) || !IsRetryable(err) {
		t.Fatalf("err = %v; want a retryable timeout", err)
	}
}

func TestStatusCodesMapToSentinels(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{
		{400, ErrBadRequest}, {404, ErrNotFound}, {408, ErrTimeout}, {409, ErrConflict},
		{429, ErrUnavailable}, {502, ErrUnavailable}, {503, ErrUnavailable}, {504, ErrUnavailable},
		{401, ErrUnauthorized}, {403, ErrForbidden}, {301, ErrRedirect}, {302, ErrRedirect}, {304, ErrRedirect}, {308, ErrRedirect},
	}
	all := []error{ErrBadRequest, ErrNotFound, ErrTimeout, ErrConflict, ErrUnavailable, ErrUnauthorized, ErrForbidden, ErrRedirect, ErrTLS}
	for _, tt := range tests {
		e := &APIError{StatusCode: tt.status}
		for _, s := range all {
			if got := errors.Is(e, s); got != (s == tt.want) {
				t.Errorf("errors.Is(%d, %v) = %v", tt.status, s, got)
			}
		}
		misconfigured := tt.want == ErrUnauthorized || tt.want == ErrForbidden || tt.want == ErrRedirect
		if got := errors.Is(e, ErrMisconfigured); got != misconfigured {
			t.Errorf("errors.Is(%d, ErrMisconfigured) = %v", tt.status, got)
		}
	}
	if errors.Is(&APIError{StatusCode: 500}, ErrUnavailable) {
		t.Error("500 matches ErrUnavailable")
	}
}

func TestParseErrorBody(t *testing.T) {
	trace := "org.apache.flink.runtime.rest.handler.RestHandlerException: Job a1b2 not found\n\tat org.apache.flink.X.y(X.java:1)\n\tat org.apache.flink.Z.w(Z.java:2)"
	tests := []struct {
		name      string
		body      string
		wantMsgs  []string
		wantTrace bool
	}{
		{"plain", flinkError("Job a1b2 not found"), []string{"Job a1b2 not found"}, false},
		{"with trace", flinkError(trace), []string{"Job a1b2 not found"}, true},
		{"server side", flinkError("Internal server error.", "<Exception on server side:\njava.lang.IllegalStateException: boom\n\tat a.B.c(B.java:1)\n\nEnd of exception on server side>"),
			[]string{"Internal server error.", "boom"}, true},
		{"unknown route", flinkError("Not found: /jobs/x/status"), []string{"Not found: /jobs/x/status"}, false},
		{"class only", flinkError("java.util.concurrent.TimeoutException"), []string{"java.util.concurrent.TimeoutException"}, false},
		{"nested classes", flinkError("java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (ab12)"), []string{"Could not find Flink job (ab12)"}, false},
		{"message with colon", flinkError("Request did not match expected format JarRunRequestBody: unknown field"), []string{"Request did not match expected format JarRunRequestBody: unknown field"}, false},
		{"proxy html", "<html><body>502 Bad Gateway</body></html>", []string{"<html><body>502 Bad Gateway</body></html>"}, false},
		{"empty", "", nil, false},
		{"empty object", "{}", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, tr := parseErrorBody([]byte(tt.body))
			if diff := cmp.Diff(tt.wantMsgs, msgs); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if (tr != "") != tt.wantTrace {
				t.Errorf("trace = %q, want one: %v", tr, tt.wantTrace)
			}
		})
	}
}

func TestRootCause(t *testing.T) {
	tests := map[string]string{
		"": "",
		"java.util.concurrent.CompletionException: java.lang.Exception: outer\n\tat x.Y.z(Y.java:1)\nCaused by: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.\n\tat a.B.c(B.java:2)\nCaused by: java.io.IOException: No space left on device\n\t... 3 more": "No space left on device",
		"java.lang.IllegalStateException: no cause here\n\tat a.B.c(B.java:1)": "no cause here",
		"Caused by: java.lang.NullPointerException\n":                          "java.lang.NullPointerException",
	}
	for in, want := range tests {
		if got := RootCause(in); got != want {
			t.Errorf("RootCause(%q) = %q, want %q", truncate(in, 40), got, want)
		}
	}
	var nilCause *FailureCause
	if nilCause.Message() != "" {
		t.Error("nil FailureCause has a message")
	}
	if m := (&FailureCause{Class: "a.B"}).Message(); m != "a.B" {
		t.Errorf("Message without trace = %q", m)
	}
}

func TestFromMillis(t *testing.T) {
	if !FromMillis(-1).IsZero() || !FromMillis(0).IsZero() {
		t.Error("Flink's unset timestamps are not the zero time")
	}
	if got := FromMillis(1700000000123); !got.Equal(time.UnixMilli(1700000000123)) || got.Location() != time.UTC {
		t.Errorf("FromMillis = %v", got)
	}
	if DurationFromMillis(-1) != 0 || DurationFromMillis(1500) != 1500*time.Millisecond {
		t.Error("DurationFromMillis")
	}
	if DurationFromMillis(1<<62) <= 0 {
		t.Error("DurationFromMillis overflows")
	}
}

// Issue 16: the password of a base URL was printed twice in NewClient's
// error. Nothing before the last '@' of a base URL is ever repeated.
func TestNewClientKeepsCredentialsOutOfErrors(t *testing.T) {
	_, err := NewClient("http://admin:S3CRET@host:bad/")
	if !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("err = %v, want ErrInvalidInput", err)
	}
	want := `flinkapi: invalid input: base URL "http://xxxxx@host:bad/" must not contain credentials; use WithBasicAuth or WithBearerToken`
	if err.Error() != want {
		t.Fatalf("error\n got %s\nwant %s", err, want)
	}
	for _, raw := range []string{
		"http://admin:S3CRET@host:8081",
		"http://S3CRET@host",
		"http://admin:pa/S3CRET@host:bad",   // '/' ends the authority for url.Parse
		"http://admin:S3CRET#x@host",        // '#' too
		"http://admin:%zzS3CRET@host",       // a bad escape, which url.Parse quotes
		"http://admin:S3CRET@host@other",    // several '@'
		"admin:S3CRET@host:8081",            // no scheme
		"http://admin:S3 CRET@host",         // a space
		"http://host/path?token=S3CRET@x",   // an '@' in the query
		"https://ops:S3CRET@jm:8081/flink/", // a valid URL
	} {
		_, err := NewClient(raw)
		if err == nil || !strings.Contains(err.Error(), "must not contain credentials") {
			t.Errorf("NewClient(%q) = %v, want a refusal of the credentials", raw, err)
		} else if strings.Contains(err.Error(), "S3") || strings.Contains(err.Error(), "CRET") {
			t.Errorf("NewClient(%q): error leaks the password: %s", raw, err)
		}
	}
}

// Text the client turns into a message loses the client's credentials and
// every URL's user info: a server echoing the Authorization header, a
// transport of the caller's quoting the URL with a password.
func TestEchoedCredentialsAreRedacted(t *testing.T) {
	for name, tt := range map[string]struct {
		auth   Option
		secret string
	}{"basic": {WithBasicAuth("ops", "S3CRET/pw"), "S3CRET/pw"}, "bearer": {WithBearerToken("S3CRET.tok"), "S3CRET.tok"}} {
		t.Run(name, func(t *testing.T) {
			auth := tt.auth
			c, mt, _ := newTestClient(t, "1.20", auth, WithRetryPolicy(NoRetry))
			mt.RegisterResponder("GET", testBase+"/overview", func(req *http.Request) (*http.Response, error) {
				ah := req.Header.Get("Authorization")
				return httpmock.NewStringResponse(500, flinkError("refused "+ah+" for http://ops:S3CRET@backend:8081/x", "the secret is "+tt.secret)), nil
			})
			mt.RegisterResponder("GET", testBase+"/jobs", func(req *http.Request) (*http.Response, error) {
				return nil, errors.New("proxy http://ops:S3CRET%2Fpw@proxy:3128 refused " + req.Header.Get("Authorization"))
			})
			_, err1 := c.Overview(context.Background())
			_, err2 := c.ListJobs(context.Background())
			for _, err := range []error{err1, err2} {
				if err == nil {
					t.Fatal("no error")
				}
				if msg := err.Error(); strings.Contains(msg, "S3CRET") || strings.Contains(msg, "UzNDUkVU") || !strings.Contains(msg, "xxxxx") {
					t.Errorf("error not redacted: %s", msg)
				}
			}
			var te *TransportError
			if !errors.As(err2, &te) || !IsRetryable(err2) {
				t.Errorf("the redacted transport error lost its type: %#v", err2)
			}
		})
	}
}

func TestRedactUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"no url here":                   "no url here",
		"a@b.c wrote":                   "a@b.c wrote",
		`Get "http://host:8081/x": EOF`: `Get "http://host:8081/x": EOF`,
		`Get "http://u:p@host/x": EOF`:  `Get "http://xxxxx@host/x": EOF`,
		"https://p/w@h and http://x@y":  "https://xxxxx@h and http://xxxxx@y",
		"ws://a@b@c/d?e=f@g":            "ws://xxxxx@g",
	} {
		if got := redactUserinfo(in); got != want {
			t.Errorf("redactUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// Flink's own limit, 32768, is accepted.
func TestParallelismAtFlinksLimitIsSent(t *testing.T) {
	c, mt, rec := newTestClient(t, "1.20")
	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run", httpmock.NewStringResponder(200, `{"jobid":"`+string(testJob)+`"}`))
	mt.RegisterResponder("PUT", testBase+"/jobs/"+string(testJob)+"/resource-requirements", httpmock.NewStringResponder(200, `{}`))
	ctx := context.Background()
	if _, err := c.RunJar(ctx, testJar, RunJarRequest{Parallelism: 32768}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetResourceRequirements(ctx, testJob, ResourceRequirements{"v": {LowerBound: 32768, UpperBound: 32768}}); err != nil {
		t.Fatal(err)
	}
	r := rec.all()
	if len(r) != 2 || !strings.Contains(r[0].Body, `"parallelism":32768`) || !strings.Contains(r[1].Body, `"upperBound":32768`) {
		t.Fatalf("sent %+v", r)
	}
}
