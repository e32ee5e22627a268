package flinktest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// answer is one recorded or fake answer.
type answer struct {
	status int
	body   []byte
}

// recordFake plays the recording of internal/testkit/flinkfixture
// (record_integration_test.go) against the fake and returns its answers
// under the names of the recorded files.
func recordFake(t *testing.T, version string) map[string]answer {
	t.Helper()
	f := newFake(t, flinktest.WithVersion(version), flinktest.WithRefreshInterval(0))
	out := map[string]answer{}
	call := func(name, method, path, body string) answer {
		t.Helper()
		status, b := f.raw(method, path, body)
		a := answer{status, b}
		if name != "" {
			out[name] = a
		}
		return a
	}
	get := func(name, path string) answer { return call(name, http.MethodGet, path, "") }
	field := func(a answer, name string) string {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(a.body, &m); err != nil {
			t.Fatalf("%s: %v", a.body, err)
		}
		return fmt.Sprint(m[name])
	}
	newID := func() string { return strings.Repeat("0", 31) + strconv.Itoa(len(out)%10) }

	get("config.json", "/config")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("jarfile", "flinkkit-testjob.jar")
	fw.Write(flinktest.MinimalJar(flinktest.CounterJobClass))
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/jars/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up bytes.Buffer
	up.ReadFrom(resp.Body)
	resp.Body.Close()
	out["jars_upload.json"] = answer{resp.StatusCode, up.Bytes()}
	jar := filepath.Base(field(out["jars_upload.json"], "filename"))
	get("jars.json", "/jars")

	run := func(name string, args ...string) string {
		body, _ := json.Marshal(map[string]any{"entryClass": flinktest.CounterJobClass, "programArgsList": args})
		return field(call(name, http.MethodPost, "/jars/"+jar+"/run", string(body)), "jobid")
	}
	jobA := run("jar_run.json", "--out", "/out/a", "--keys", "2", "--rate", "40", "--checkpoint-interval", "500", "--name", "record-running")
	f.advance(3 * time.Second)
	get("overview.json", "/overview")
	get("jobs_overview.json", "/jobs/overview")
	get("job_details.json", "/jobs/"+jobA)
	get("job_status.json", "/jobs/"+jobA+"/status")
	get("taskmanagers.json", "/taskmanagers")
	get("resource_requirements_default_scheduler.json", "/jobs/"+jobA+"/resource-requirements")
	get("checkpoints_config.json", "/jobs/"+jobA+"/checkpoints/config")
	get("job_config.json", "/jobs/"+jobA+"/config")
	get("checkpoints.json", "/jobs/"+jobA+"/checkpoints")
	get("checkpoint_details.json", "/jobs/"+jobA+"/checkpoints/details/3")
	trig := field(call("checkpoint_trigger.json", http.MethodPost, "/jobs/"+jobA+"/checkpoints", "{}"), "request-id")
	f.advance(time.Second)
	get("checkpoint_status_completed.json", "/jobs/"+jobA+"/checkpoints/"+trig)
	trig = field(call("savepoint_trigger.json", http.MethodPost, "/jobs/"+jobA+"/savepoints", `{"target-directory":"file:/tmp/sp","cancel-job":false}`), "request-id")
	get("savepoint_in_progress.json", "/jobs/"+jobA+"/savepoints/"+trig)
	f.advance(time.Second)
	savepoint := get("savepoint_completed.json", "/jobs/"+jobA+"/savepoints/"+trig)
	get("error_trigger_not_found.json", "/jobs/"+jobA+"/savepoints/"+newID())
	trig = field(call("stop_trigger.json", http.MethodPost, "/jobs/"+jobA+"/stop", `{"drain":false,"targetDirectory":"file:/tmp/sp"}`), "request-id")
	f.advance(time.Second)
	get("stop_completed.json", "/jobs/"+jobA+"/savepoints/"+trig)
	get("job_details_finished.json", "/jobs/"+jobA)
	call("error_cancel_terminal.json", http.MethodPatch, "/jobs/"+jobA+"?mode=cancel", "")

	jobB := run("", "--out", "/out/b", "--keys", "2", "--rate", "40", "--fail-at", "10", "--restart-attempts", "1", "--restart-delay", "200", "--checkpoint-interval", "300", "--name", "record-failing")
	f.advance(5 * time.Second)
	get("exceptions.json", "/jobs/"+jobB+"/exceptions")
	get("job_details_failed.json", "/jobs/"+jobB)
	trig = field(call("savepoint_failed_trigger.json", http.MethodPost, "/jobs/"+jobB+"/savepoints", `{"cancel-job":false}`), "request-id")
	get("savepoint_failed.json", "/jobs/"+jobB+"/savepoints/"+trig)

	jobC := run("", "--out", "/out/c", "--keys", "1", "--name", "record-canceled")
	f.advance(time.Second)
	call("cancel.json", http.MethodPatch, "/jobs/"+jobC+"?mode=cancel", "")
	f.advance(time.Second)

	get("error_job_not_found.json", "/jobs/"+newID())
	get("error_unknown_route.json", "/flinkkit/no-such-route")
	call("error_unknown_route_post.json", http.MethodPost, "/flinkkit/no-such-route", "{}")
	get("error_unknown_route_v1.json", "/v1/flinkkit/no-such-route")
	var sp struct {
		Operation struct{ Location string }
	}
	json.Unmarshal(savepoint.body, &sp)
	trig = field(call("disposal_trigger.json", http.MethodPost, "/savepoint-disposal", `{"savepoint-path":"`+sp.Operation.Location+`"}`), "request-id")
	f.advance(time.Second)
	get("disposal_completed.json", "/savepoint-disposal/"+trig)
	get("jobs_overview_end.json", "/jobs/overview")
	recordFakeResults(t, f, run, get)

	g := newFake(t, flinktest.WithVersion(version), flinktest.WithAdaptiveScheduler())
	jar = string(g.upload())
	body, _ := json.Marshal(map[string]any{"programArgsList": []string{"--out", "/out/adaptive", "--keys", "1", "--name", "record-adaptive"}})
	_, b := g.raw(http.MethodPost, "/jars/"+jar+"/run", string(body))
	var r struct{ Jobid string }
	json.Unmarshal(b, &r)
	g.advance(time.Second)
	status, b := g.raw(http.MethodGet, "/jobs/"+r.Jobid+"/resource-requirements", "")
	out["resource_requirements.json"] = answer{status, b}
	status, b = g.raw(http.MethodGet, "/jobs/"+r.Jobid, "")
	out["job_details_adaptive.json"] = answer{status, b}
	recordFakeRescales(t, version, out)
	return out
}

// recordFakeRescales records what TestRecordRescales records of real
// clusters (internal/testkit/flinkfixture): the rescale history of a job
// on the adaptive scheduler with the history on, before and after new
// resource requirements rescale it, then with the history off and on the
// default scheduler.
func recordFakeRescales(t *testing.T, version string, out map[string]answer) {
	t.Helper()
	if !strings.HasPrefix(version, "2.") || version < "2.3" {
		return // no rescale history before 2.3
	}
	run := func(f *fake, name string) string {
		jar := string(f.upload())
		body, _ := json.Marshal(map[string]any{"programArgsList": []string{"--out", "/out/" + name, "--keys", "1", "--name", name}})
		_, b := f.raw(http.MethodPost, "/jars/"+jar+"/run", string(body))
		var r struct{ Jobid string }
		json.Unmarshal(b, &r)
		f.advance(time.Second)
		return r.Jobid
	}
	get := func(f *fake, name, path string) answer {
		status, b := f.raw(http.MethodGet, path, "")
		out[name] = answer{status, b}
		return out[name]
	}
	f := newFake(t, flinktest.WithVersion(version), flinktest.WithAdaptiveScheduler(), flinktest.WithRescaleHistory(16))
	job := run(f, "record-rescales")
	jp := "/jobs/" + job
	get(f, "rescales_history_initial.json", jp+"/rescales/history")
	_, rr := f.rawJSON(http.MethodGet, jp+"/resource-requirements", "")
	next := map[string]any{}
	for v := range rr {
		next[v] = map[string]any{"parallelism": map[string]int{"lowerBound": 1, "upperBound": 2}}
	}
	body, _ := json.Marshal(next)
	f.raw(http.MethodPut, jp+"/resource-requirements", string(body))
	f.advance(time.Second)
	h := get(f, "rescales_history.json", jp+"/rescales/history")
	var hist []struct{ RescaleUUID string }
	json.Unmarshal(h.body, &hist)
	if len(hist) == 0 {
		t.Fatalf("no rescale history: %s", h.body)
	}
	get(f, "rescales_details.json", jp+"/rescales/details/"+hist[0].RescaleUUID)
	get(f, "rescales_details_unknown.json", jp+"/rescales/details/"+strings.Repeat("2", 32))
	get(f, "rescales_details_malformed.json", jp+"/rescales/details/not-a-uuid")
	get(f, "rescales_history_unknown_job.json", "/jobs/"+strings.Repeat("3", 32)+"/rescales/history")
	get(f, "job_details_rescaled.json", jp)
	f.raw(http.MethodPatch, jp+"?mode=cancel", "")
	f.advance(time.Second)
	get(f, "rescales_history_canceled.json", jp+"/rescales/history")

	for what, opts := range map[string][]flinktest.Option{
		"off":               {flinktest.WithAdaptiveScheduler()},
		"default_scheduler": nil,
	} {
		f := newFake(t, append(opts, flinktest.WithVersion(version))...)
		jp := "/jobs/" + run(f, "record-rescales-"+what)
		get(f, "rescales_"+what+"_history.json", jp+"/rescales/history")
		get(f, "rescales_"+what+"_details.json", jp+"/rescales/details/"+strings.Repeat("4", 32))
	}
}

// notServed names recordings of routes the fake does not serve: Flink
// 2.3's rescale overview, summary and configuration (the history and the
// details are served).
func notServed(name string) bool {
	if !strings.HasPrefix(name, "rescales_") {
		return false
	}
	for _, route := range []string{"_overview", "_summary", "_config"} {
		if strings.Contains(name, route) {
			return true
		}
	}
	return false
}

// recordFakeResults records what TestRecordResults records of a real
// cluster (internal/testkit/flinkfixture): execution results and accumulators.
func recordFakeResults(t *testing.T, f *fake, run func(name string, args ...string) string, get func(name, path string) answer) {
	t.Helper()
	newID := strings.Repeat("1", 32)
	jobA := run("", "--out", "/out/results-running", "--keys", "2", "--rate", "40", "--name", "results-running")
	f.advance(3 * time.Second)
	get("results_execution_running.json", "/jobs/"+jobA+"/execution-result")
	get("results_accumulators_running.json", "/jobs/"+jobA+"/accumulators")
	f.raw(http.MethodPatch, "/jobs/"+jobA+"?mode=cancel", "")
	f.advance(time.Second)
	get("results_execution_canceled.json", "/jobs/"+jobA+"/execution-result")
	jobB := run("", "--out", "/out/results-bounded", "--keys", "3", "--rate", "100", "--records", "30", "--name", "results-bounded")
	f.advance(3 * time.Second)
	get("results_execution_finished.json", "/jobs/"+jobB+"/execution-result")
	get("results_accumulators_finished.json", "/jobs/"+jobB+"/accumulators")
	get("results_accumulators_serialized.json", "/jobs/"+jobB+"/accumulators?includeSerializedValue=true")
	jobC := run("", "--out", "/out/results-failed", "--keys", "1", "--rate", "40", "--fail-at", "5", "--name", "results-failed")
	f.advance(3 * time.Second)
	get("results_execution_failed.json", "/jobs/"+jobC+"/execution-result")
	get("results_execution_not_found.json", "/jobs/"+newID+"/execution-result")
	get("results_accumulators_not_found.json", "/jobs/"+newID+"/accumulators")
}

// TestShapesMatchRealFlink compares the fake's answers with the answers
// recorded from real Flink (flinkapi/testdata/real): the same status codes,
// the same fields with the same JSON types, and for errors the same first
// line up to ids and paths.
func TestShapesMatchRealFlink(t *testing.T) {
	for _, version := range []string{"1.20.5", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			dir := filepath.Join("..", "testdata", "real", version)
			statuses, err := os.ReadFile(filepath.Join(dir, "statuses.txt"))
			if err != nil {
				t.Fatal(err)
			}
			fake := recordFake(t, version)
			for _, line := range strings.Split(strings.TrimSpace(string(statuses)), "\n") {
				name, code, _ := strings.Cut(line, " ")
				if !strings.HasSuffix(name, ".json") {
					continue
				}
				if notServed(name) {
					continue
				}
				t.Run(name, func(t *testing.T) {
					real, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					got, ok := fake[name]
					if !ok {
						t.Fatalf("the fake recording has no %s", name)
					}
					if want, _ := strconv.Atoi(code); got.status != want {
						t.Errorf("status %d, real Flink %d: %s", got.status, want, got.body)
					}
					if strings.HasPrefix(name, "error_") || got.status >= 400 && strings.HasPrefix(name, "rescales_") || got.status >= 500 {
						if g, w := normalize(firstErrorLine(got.body)), normalize(firstErrorLine(real)); g != w {
							t.Errorf("first error line\n fake: %s\n real: %s", g, w)
						}
						return
					}
					if diff := compareShapes(real, got.body); diff != "" {
						t.Errorf("fields differ from real Flink (-real +fake):\n%s", diff)
					}
				})
			}
		})
	}
}

func firstErrorLine(b []byte) string {
	var eb struct{ Errors []string }
	if json.Unmarshal(b, &eb) != nil || len(eb.Errors) == 0 {
		return string(b)
	}
	var lines []string
	for _, e := range eb.Errors {
		first, _, _ := strings.Cut(strings.TrimPrefix(e, "<Exception on server side:\n"), "\n")
		lines = append(lines, first)
	}
	return strings.Join(lines, " | ")
}

var (
	reHex  = regexp.MustCompile(`[0-9a-f]{32}`)
	rePath = regexp.MustCompile(`/tmp/[^ ']*`)
)

func normalize(s string) string {
	return rePath.ReplaceAllString(reHex.ReplaceAllString(s, "ID"), "PATH")
}

// shape maps each path of a JSON document ("a.b[].c") to the JSON types
// found there. Paths under empty arrays and objects are marked, so that a
// list that happens to be empty on one side hides nothing.
func shape(v any, path string, out map[string]map[string]bool) {
	add := func(kind string) {
		if out[path] == nil {
			out[path] = map[string]bool{}
		}
		out[path][kind] = true
	}
	switch x := v.(type) {
	case map[string]any:
		add("object")
		if len(x) == 0 {
			add("empty")
		}
		for k, e := range x {
			shape(e, path+"."+k, out)
		}
	case []any:
		add("array")
		if len(x) == 0 {
			add("empty")
		}
		for _, e := range x {
			shape(e, path+"[]", out)
		}
	case string:
		add("string")
	case float64:
		add("number")
	case bool:
		add("bool")
	case nil:
		add("null")
	}
}

// compareShapes lists the fields only one of two JSON documents has, and
// those whose types differ (null matches any type).
func compareShapes(real, fake []byte) string {
	var rv, fv any
	if err := json.Unmarshal(real, &rv); err != nil {
		return "real: " + err.Error()
	}
	if err := json.Unmarshal(fake, &fv); err != nil {
		return "fake: " + err.Error() + ": " + string(fake)
	}
	rs, fs := map[string]map[string]bool{}, map[string]map[string]bool{}
	shape(rv, "", rs)
	shape(fv, "", fs)
	hidden := func(p string, other map[string]map[string]bool) bool {
		for q, kinds := range other {
			if kinds["empty"] && strings.HasPrefix(p, q+".") || kinds["empty"] && strings.HasPrefix(p, q+"[]") {
				return true
			}
		}
		return false
	}
	var diffs []string
	for p, kinds := range rs {
		fk, ok := fs[p]
		switch {
		case !ok && !hidden(p, fs):
			diffs = append(diffs, "- "+p)
		case ok && !compatible(kinds, fk):
			diffs = append(diffs, fmt.Sprintf("~ %s: real %v, fake %v", p, keys(kinds), keys(fk)))
		}
	}
	for p := range fs {
		if _, ok := rs[p]; !ok && !hidden(p, rs) {
			diffs = append(diffs, "+ "+p)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "\n")
}

func compatible(a, b map[string]bool) bool {
	if a["null"] || b["null"] {
		return true
	}
	for k := range a {
		if k != "empty" && b[k] {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestShapeComparison checks the comparison itself.
func TestShapeComparison(t *testing.T) {
	for _, tc := range []struct {
		real, fake, want string
	}{
		{`{"a":1,"b":{"c":"x"}}`, `{"a":2,"b":{"c":"y"}}`, ""},
		{`{"a":1}`, `{"a":1,"b":2}`, "+ .b"},
		{`{"a":1,"b":2}`, `{"a":1}`, "- .b"},
		{`{"a":"x"}`, `{"a":1}`, "~ .a: real [string], fake [number]"},
		{`{"a":null}`, `{"a":1}`, ""},
		{`{"l":[{"x":1}]}`, `{"l":[]}`, ""},
	} {
		if got := compareShapes([]byte(tc.real), []byte(tc.fake)); !cmp.Equal(got, tc.want) {
			t.Errorf("compareShapes(%s, %s) = %q, want %q", tc.real, tc.fake, got, tc.want)
		}
	}
}
