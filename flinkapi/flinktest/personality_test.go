package flinktest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestStrictMapper: Flink 1.15 to 1.19 reject request fields they do not
// know with 400; 1.20 and later ignore them.
func TestStrictMapper(t *testing.T) {
	const bad = "org.apache.flink.runtime.rest.handler.RestHandlerException: Request did not match expected format JarRunRequestBody."
	for _, tc := range []struct {
		version string
		body    string
		status  int
	}{
		{"1.19.1", `{"claimMode":"CLAIM"}`, 400},
		{"1.19.1", `{"restoreMode":"CLAIM"}`, 200},
		{"1.20.5", `{"claimMode":"CLAIM"}`, 200},
		{"1.16.3", `{"flinkConfiguration":{"a":"b"}}`, 400},
		{"1.17.2", `{"flinkConfiguration":{"a":"b"}}`, 200},
		{"1.18.1", `{"bogus":1}`, 400},
		{"1.20.5", `{"bogus":1}`, 200},
		{"2.3.0", `{"bogus":1}`, 200},
		{"2.3.0", `{"claimMode":"LEGACY"}`, 400}, // LEGACY is gone in 2.x
		{"1.20.5", `{"claimMode":"LEGACY"}`, 200},
		{"1.20.5", `{not json`, 400},
	} {
		t.Run(tc.version+" "+tc.body, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion(tc.version))
			jar := f.upload()
			body := strings.Replace(tc.body, "{", `{"programArgsList":["--out","/o"],`, 1)
			if !strings.HasPrefix(tc.body, "{\"") {
				body = tc.body
			}
			status, b := f.raw(http.MethodPost, "/jars/"+string(jar)+"/run", body)
			if status != tc.status {
				t.Fatalf("%d %s, want %d", status, b, tc.status)
			}
			if status == 400 && firstError(t, b) != bad {
				t.Errorf("message %q, want %q", firstError(t, b), bad)
			}
		})
	}

	// The savepoint, stop and checkpoint bodies are strict as well.
	f := newFake(t, flinktest.WithVersion("1.19.1"))
	const job = "/jobs/0123456789abcdef0123456789abcdef"
	for path, want := range map[string]string{
		job + "/savepoints":   "SavepointTriggerRequestBody",
		job + "/stop":         "StopWithSavepointRequestBody",
		job + "/checkpoints":  "CheckpointTriggerRequestBody",
		"/savepoint-disposal": "SavepointDisposalRequest",
	} {
		status, b := f.raw(http.MethodPost, path, `{"extra":true}`)
		if status != 400 || !strings.HasSuffix(firstError(t, b), "expected format "+want+".") {
			t.Errorf("POST %s with an unknown field: %d %q", path, status, firstError(t, b))
		}
	}
}

// TestClientAndStrictMapper: the client never sends a field the version
// does not know, so its calls pass the strict mapper.
func TestClientAndStrictMapper(t *testing.T) {
	f := newFake(t, flinktest.WithVersion("1.19.1"))
	f.run(flinkapi.RunJarRequest{ClaimMode: flinkapi.ClaimModeNoClaim})
	var body map[string]any
	for _, r := range f.srv.Requests() {
		if r.Route == "POST /jars/:jarid/run" {
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if body["restoreMode"] != "NO_CLAIM" || body["claimMode"] != nil {
		t.Errorf("jar run body %v: want restoreMode, no claimMode", body)
	}
	if _, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{ProgramArgs: testArgs("/o", 0), FlinkConfiguration: map[string]string{"a": "b"}}); err != nil {
		t.Errorf("flinkConfiguration on 1.19: %v", err)
	}
	g := newFake(t, flinktest.WithVersion("1.16.3"))
	_, err := g.c.RunJar(g.ctx, g.upload(), flinkapi.RunJarRequest{FlinkConfiguration: map[string]string{"a": "b"}})
	if !errorsIsUnsupported(err) {
		t.Errorf("flinkConfiguration on 1.16: %v, want ErrUnsupported before any request", err)
	}
}

// TestVersionRoutes: endpoints exist from their release on; older
// versions answer as for an unknown route.
func TestVersionRoutes(t *testing.T) {
	const job = "/jobs/0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		version, method, path string
		status                int
		first                 string
	}{
		{"1.15.4", "GET", job + "/status", 404, "Unable to load requested file " + job + "/status."},
		{"1.16.3", "GET", job + "/status", 500, "Internal server error."},
		{"1.16.3", "POST", job + "/checkpoints", 404, "Not found: " + job + "/checkpoints"},
		{"1.17.2", "GET", job + "/resource-requirements", 404, "Unable to load requested file " + job + "/resource-requirements."},
		{"1.18.1", "GET", job + "/resource-requirements", 500, "Internal server error."},
		{"1.20.5", "GET", "/flinkkit/no-such-route", 404, "Unable to load requested file /flinkkit/no-such-route."},
		{"1.20.5", "GET", "/v1/flinkkit/no-such-route", 404, "Unable to load requested file /v1/flinkkit/no-such-route."},
		{"1.20.5", "POST", "/flinkkit/no-such-route", 404, "Not found: /flinkkit/no-such-route"},
		{"1.20.5", "PATCH", job + "/rescaling?parallelism=2", 503, "org.apache.flink.runtime.rest.handler.RestHandlerException: Rescaling is temporarily disabled. See FLINK-12312."},
		{"2.3.0", "PATCH", job + "/rescaling?parallelism=2", 503, "org.apache.flink.runtime.rest.handler.RestHandlerException: Rescaling is temporarily disabled. See FLINK-12312."},
		{"1.20.5", "GET", "/v1/config", 200, ""},
	} {
		t.Run(tc.version+" "+tc.method+" "+tc.path, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion(tc.version))
			body := ""
			if tc.method == "POST" {
				body = "{}"
			}
			status, b := f.raw(tc.method, tc.path, body)
			if status != tc.status || tc.first != "" && firstError(t, b) != tc.first {
				t.Errorf("%d %s", status, b)
			}
		})
	}
	f := newFake(t, flinktest.WithVersion("1.15.4"))
	_, err := f.c.JobStatus(f.ctx, "0123456789abcdef0123456789abcdef")
	if ae := apiError(t, err); ae.Path != "/jobs/0123456789abcdef0123456789abcdef" || !flinkapi.IsJobNotFound(err) {
		t.Errorf("client JobStatus on 1.15 reads the details: %v", err)
	}
}

// TestVersionFields: fields that come and go with the version.
func TestVersionFields(t *testing.T) {
	type fields struct {
		JobType, ApplicationID, Location, Endpoint, Legacy, SavepointFormat, AssignedTasks bool
	}
	for _, tc := range []struct {
		version string
		want    fields
	}{
		{"1.15.4", fields{Location: true, Legacy: true}},
		{"1.19.1", fields{JobType: true, Location: true, Endpoint: true, Legacy: true, SavepointFormat: true}},
		{"2.3.0", fields{JobType: true, ApplicationID: true, Endpoint: true, SavepointFormat: true, AssignedTasks: true}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion(tc.version), flinktest.WithRefreshInterval(0))
			id := f.running(flinkapi.RunJarRequest{})
			f.advance(time.Second) // a first checkpoint
			if err := f.srv.FailJob(id, "x"); err != nil {
				t.Fatal(err)
			}
			_, d := f.rawJSON("GET", "/jobs/"+string(id), "")
			_, ex := f.rawJSON("GET", "/jobs/"+string(id)+"/exceptions", "")
			_, cp := f.rawJSON("GET", "/jobs/"+string(id)+"/checkpoints", "")
			_, tms := f.rawJSON("GET", "/taskmanagers", "")
			var got fields
			_, got.JobType = d["job-type"]
			_, got.ApplicationID = d["application-id"]
			_, got.Legacy = ex["root-exception"]
			entries := ex["exceptionHistory"].(map[string]any)["entries"].([]any)
			task := entries[0].(map[string]any)["concurrentExceptions"].([]any)[0].(map[string]any)
			_, got.Location = task["location"]
			_, got.Endpoint = task["endpoint"]
			_, got.SavepointFormat = cp["latest"].(map[string]any)["completed"].(map[string]any)["savepointFormat"]
			_, got.AssignedTasks = tms["taskmanagers"].([]any)[0].(map[string]any)["assignedTasks"]
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields present (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProgramArgsString: 1.x takes the programArgs string; 2.x ignores
// it, so the test job misses its --out.
func TestProgramArgsString(t *testing.T) {
	for version, want := range map[string]int{"1.20.5": 200, "2.3.0": 400} {
		f := newFake(t, flinktest.WithVersion(version))
		status, b := f.raw("POST", "/jars/"+string(f.upload())+"/run", `{"programArgs":"--out /o --keys 1"}`)
		if status != want {
			t.Errorf("Flink %s: %d %s, want %d", version, status, b, want)
		}
	}
}

// TestBodyTypes: fields of the wrong JSON type or enum value are rejected
// by every version's mapper with 400.
func TestBodyTypes(t *testing.T) {
	f := newFake(t, flinktest.WithVersion("2.3.0"))
	jar := string(f.upload())
	const job = "/jobs/0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ path, body, class string }{
		{"/jars/" + jar + "/run", `{"parallelism":"two"}`, "JarRunRequestBody"},
		{"/jars/" + jar + "/run", `{"programArgsList":"--out /o"}`, "JarRunRequestBody"},
		{"/jars/" + jar + "/run", `{"flinkConfiguration":["a"]}`, "JarRunRequestBody"},
		{"/jars/" + jar + "/run", `{"allowNonRestoredState":1}`, "JarRunRequestBody"},
		{job + "/savepoints", `{"formatType":"ZIP"}`, "SavepointTriggerRequestBody"},
		{job + "/savepoints", `{"triggerId":"nope"}`, "SavepointTriggerRequestBody"},
		{job + "/stop", `{"drain":"yes"}`, "StopWithSavepointRequestBody"},
		{job + "/checkpoints", `{"checkpointType":"SOMETIMES"}`, "CheckpointTriggerRequestBody"},
		{"/savepoint-disposal", `{"savepoint-path":{}}`, "SavepointDisposalRequest"},
		{"/savepoint-disposal", `[1]`, "SavepointDisposalRequest"},
	} {
		status, b := f.raw(http.MethodPost, tc.path, tc.body)
		if want := "org.apache.flink.runtime.rest.handler.RestHandlerException: Request did not match expected format " + tc.class + "."; status != 400 || firstError(t, b) != want {
			t.Errorf("POST %s %s: %d %q", tc.path, tc.body, status, firstError(t, b))
		}
	}
	// Faults go away with ClearFaults.
	f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 500})
	f.srv.ClearFaults()
	if status, _ := f.raw(http.MethodGet, "/config", ""); status != 200 {
		t.Errorf("after ClearFaults: %d", status)
	}
}
