package flinkapi

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

const testSourceVertex = "b93d204074064b03a853367828fb3dfe"

// testPlanNodes are the test job's vertices at parallelism 1.
var testPlanNodes = []PlanNode{
	{ID: testSourceVertex, Parallelism: 1, Description: "Source: key-source<br/>"},
	{ID: testVertex, Parallelism: 1, Description: "counter<br/>+- discard: Writer<br/>", Inputs: []string{testSourceVertex},
		InputEdges: []PlanInput{{ID: testSourceVertex, ShipStrategy: "HASH", Exchange: "pipelined_bounded"}}},
}

// realPlanAnswer returns the plan of a real cluster's job details as the
// JobPlanInfo answer of the plan routes.
func realPlanAnswer(t *testing.T, version string) string {
	t.Helper()
	var d struct {
		Plan json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal([]byte(real(t, version, "job_details.json")), &d); err != nil || len(d.Plan) == 0 {
		t.Fatalf("%s job_details.json: no plan (%v)", version, err)
	}
	return `{"plan":` + string(d.Plan) + `}`
}

func planFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plan", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// byID orders nodes as testPlanNodes for comparison.
func sortedNodes(ns []PlanNode) []PlanNode {
	out := append([]PlanNode(nil), ns...)
	if len(out) == 2 && out[0].ID != testSourceVertex {
		out[0], out[1] = out[1], out[0]
	}
	return out
}

func TestPlanDecodesEveryForm(t *testing.T) {
	answers := map[string]string{
		"1.15 (RawJson)": planFile(t, "plan-1.15.json"),
	}
	for _, v := range realVersions(t) {
		answers[v+" (real)"] = realPlanAnswer(t, v)
	}
	for name, body := range answers {
		t.Run(name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "1.20.5")
			mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/plan", httpmock.NewStringResponder(200, body))
			p, err := c.JobPlanDetails(context.Background(), testJob)
			if err != nil {
				t.Fatal(err)
			}
			if p.Type != "STREAMING" || p.Name != "record-running" || len(p.JobID) != 32 {
				t.Errorf("plan %q %q %q", p.JobID, p.Name, p.Type)
			}
			if d := cmp.Diff(testPlanNodes, sortedNodes(p.Nodes)); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
			if n, ok := p.Node(testVertex); !ok || n.Name() != "counter -> discard: Writer" {
				t.Errorf("Node(%s) = %+v, %v; Name %q", testVertex, n, ok, n.Name())
			}
		})
	}
	t.Run("plan as a string", func(t *testing.T) {
		var w planWire
		if err := json.Unmarshal([]byte(planFile(t, "plan-2.x-string.json")), &w); err != nil {
			t.Fatal(err)
		}
		p, err := w.convert()
		if err != nil || len(p.Nodes) != 1 || p.Nodes[0].ID != testSourceVertex {
			t.Errorf("convert = %+v, %v", p, err)
		}
	})
}

func TestPlanNodeName(t *testing.T) {
	for desc, want := range map[string]string{
		"counter<br/>+- discard: Writer<br/>": "counter -> discard: Writer",
		"Source: key-source<br/>":             "Source: key-source",
		"Map &amp; filter<br/>":               "Map & filter",
		"":                                    "",
	} {
		if got := (PlanNode{Description: desc}).Name(); got != want {
			t.Errorf("Name of %q = %q, want %q", desc, got, want)
		}
	}
}

func TestJobPlanDetailsErrors(t *testing.T) {
	c, mt, _ := newTestClient(t, "2.3.0")
	p := testBase + "/jobs/" + string(testJob) + "/plan"
	for body, wantDecode := range map[string]bool{`{}`: true, `{"plan":null}`: true, `{"plan":[]}`: true, `{"plan":{"nodes":[{"parallelism":1}]}}`: true, `{"plan":{"nodes":[]}}`: false} {
		mt.RegisterResponder("GET", p, httpmock.NewStringResponder(200, body))
		_, err := c.JobPlanDetails(context.Background(), testJob)
		if got := errors.Is(err, ErrDecode); got != wantDecode {
			t.Errorf("%s: %v, want ErrDecode %v", body, err, wantDecode)
		}
	}
	// JobPlan keeps answering no nodes for a job without a plan.
	mt.RegisterResponder("GET", p, httpmock.NewStringResponder(200, `{}`))
	if nodes, err := c.JobPlan(context.Background(), testJob); err != nil || nodes != nil {
		t.Errorf("JobPlan without a plan = %v, %v", nodes, err)
	}
	mt.RegisterResponder("GET", p, httpmock.NewStringResponder(404, real(t, "2.3.0", "error_job_not_found.json")))
	if _, err := c.JobPlanDetails(context.Background(), testJob); !IsJobNotFound(err) {
		t.Errorf("unknown job: %v, want IsJobNotFound", err)
	}
	if _, err := c.JobPlanDetails(context.Background(), "nope"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad job id: %v", err)
	}
}

// TestJarPlanRequest: the body carries the fields that jar run and jar plan
// share, gated by version as for RunJar, and never the restore fields.
func TestJarPlanRequest(t *testing.T) {
	run := RunJarRequest{
		EntryClass: "dev.flinkkit.testjob.CounterJob", ProgramArgs: []string{"--out", "/o", "--name", "a b"}, Parallelism: 2,
		JobID: testJob, SavepointPath: "/sp/1", AllowNonRestoredState: true, ClaimMode: ClaimModeClaim,
		FlinkConfiguration: map[string]string{"pipeline.max-parallelism": "64"},
	}
	for _, tc := range []struct {
		version string
		req     JarPlanRequest
		want    string // the body; "" for an error before sending
		err     error
	}{
		{"1.20.5", run.PlanRequest(), `{"entryClass":"dev.flinkkit.testjob.CounterJob","programArgsList":["--out","/o","--name","a b"],"parallelism":2,"jobId":"` + string(testJob) + `","flinkConfiguration":{"pipeline.max-parallelism":"64"}}`, nil},
		{"1.16.3", run.PlanRequest(), "", ErrUnsupported},
		{"1.16.3", JarPlanRequest{ProgramArgs: []string{"--out", "/o"}}, `{"programArgsList":["--out","/o"]}`, nil},
		{"2.3.0", JarPlanRequest{}, `{}`, nil},
		{"2.3.0", JarPlanRequest{Parallelism: 32769}, "", ErrInvalidInput},
		{"2.3.0", JarPlanRequest{JobID: "x"}, "", ErrInvalidInput},
		{"2.3.0", JarPlanRequest{EntryClass: "not a class"}, "", ErrInvalidInput},
	} {
		c, mt, rec := newTestClient(t, tc.version)
		mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/plan", httpmock.NewStringResponder(200, realPlanAnswer(t, "1.20.5")))
		p, err := c.JarPlan(context.Background(), testJar, tc.req)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || len(rec.all()) != 0 {
				t.Errorf("%s %+v: %v after %d requests, want %v before any", tc.version, tc.req, err, len(rec.all()), tc.err)
			}
			continue
		}
		if err != nil || len(p.Nodes) != 2 {
			t.Errorf("%s %+v: %+v, %v", tc.version, tc.req, p, err)
			continue
		}
		if reqs := rec.all(); len(reqs) != 1 || reqs[0].Body != tc.want {
			t.Errorf("%s %+v: sent %+v, want body %s", tc.version, tc.req, reqs, tc.want)
		}
	}
	c, _, _ := newTestClient(t, "2.3.0")
	if _, err := c.JarPlan(context.Background(), "../x.jar", JarPlanRequest{}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad jar id: %v", err)
	}
}

// TestJarPlanErrors: the answers a real 1.20.5 cluster gave for a missing
// jar and for a program that throws are told apart.
func TestJarPlanErrors(t *testing.T) {
	const dir = "/tmp/flink-web-upload"
	missing := flinkError("Internal server error.", "<Exception on server side:\n"+
		"java.util.concurrent.CompletionException: org.apache.flink.runtime.rest.handler.RestHandlerException: Jar file "+dir+"/"+string(testJar)+" does not exist\n"+
		"\tat org.apache.flink.runtime.webmonitor.handlers.utils.JarHandlerUtils$JarHandlerContext.toPackagedProgram(JarHandlerUtils.java:196)\n"+
		"Caused by: org.apache.flink.runtime.rest.handler.RestHandlerException: Jar file "+dir+"/"+string(testJar)+" does not exist\n\t... 4 more\n"+
		"\nEnd of exception on server side>")
	throws := flinkError("Internal server error.", "<Exception on server side:\n"+
		"java.util.concurrent.CompletionException: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: unknown argument: --bogus\n"+
		"\tat org.apache.flink.runtime.webmonitor.handlers.utils.JarHandlerUtils$JarHandlerContext.toJobGraph(JarHandlerUtils.java:213)\n"+
		"Caused by: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: unknown argument: --bogus\n"+
		"\tat org.apache.flink.client.program.PackagedProgram.callMainMethod(PackagedProgram.java:373)\n"+
		"Caused by: java.lang.IllegalArgumentException: unknown argument: --bogus\n"+
		"\tat dev.flinkkit.testjob.CounterJob$Options.parse(CounterJob.java:300)\n"+
		"\nEnd of exception on server side>")
	c, mt, _ := newTestClient(t, "1.20.5")
	p := testBase + "/jars/" + string(testJar) + "/plan"

	mt.RegisterResponder("POST", p, httpmock.NewStringResponder(500, missing))
	_, err := c.JarPlan(context.Background(), testJar, JarPlanRequest{})
	if !IsJarNotFound(err) || IsProgramError(err) || IsRetryable(err) {
		t.Errorf("missing jar: %v: IsJarNotFound %v, IsProgramError %v", err, IsJarNotFound(err), IsProgramError(err))
	}

	mt.RegisterResponder("POST", p, httpmock.NewStringResponder(500, throws))
	_, err = c.JarPlan(context.Background(), testJar, JarPlanRequest{})
	var ae *APIError
	if !IsProgramError(err) || IsJarNotFound(err) || !errors.As(err, &ae) || RootCause(ae.StackTrace) != "unknown argument: --bogus" {
		t.Errorf("program error: %v: IsProgramError %v, IsJarNotFound %v", err, IsProgramError(err), IsJarNotFound(err))
	}

	// A jar run's program error (400 "Could not execute application.") is
	// one too; a duplicate job id is not.
	runErr := newAPIError("POST", "/jars/"+string(testJar)+"/run", 400, []byte(flinkError(
		"org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n\tat x.Y.z(Y.java:1)\n"+
			"Caused by: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: --out DIR is required\n\tat a.B.c(B.java:2)")))
	if !IsProgramError(runErr) {
		t.Errorf("jar run program error: IsProgramError false for %v", runErr)
	}
	dup := newAPIError("POST", "/jars/"+string(testJar)+"/run", 400, []byte(flinkError(
		"org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n"+
			"Caused by: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: Failed to execute job 'x'.\n"+
			"Caused by: org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted.")))
	if IsProgramError(dup) || !IsDuplicateJob(dup) {
		t.Errorf("duplicate job: IsProgramError %v, IsDuplicateJob %v", IsProgramError(dup), IsDuplicateJob(dup))
	}
	if IsProgramError(newAPIError("GET", "/jobs/x", 500, []byte(throws))) {
		t.Error("IsProgramError true for a job route")
	}
}

// FuzzPlanDecoder: the plan decoder never panics, and a plan it accepts
// has a non-empty id for every node, with as many input edges as inputs.
func FuzzPlanDecoder(f *testing.F) {
	addRealSeeds(f)
	for _, name := range []string{"plan-1.15.json", "plan-2.x-string.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "plan", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"plan":{"nodes":[{"id":"a","inputs":[{"id":"b","num":1e99}]}]}}`))
	f.Add([]byte(`{"plan":"{\"nodes\":null}"}`))
	f.Add([]byte(`{"plan":"\"{}\""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var w planWire
		if json.Unmarshal(b, &w) != nil {
			return
		}
		p, err := w.convert()
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty decode error")
			}
			return
		}
		for _, n := range p.Nodes {
			if n.ID == "" || len(n.Inputs) != len(n.InputEdges) {
				t.Fatalf("node %+v", n)
			}
			_ = n.Name()
		}
	})
}
