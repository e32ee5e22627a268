package flinkapi

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

const testApp = ApplicationID("fbbb12a173e08dec99f4407a78b8837e")

// Answers of a Flink 2.3.0 session cluster (abridged error traces).
const (
	realAppsOverview = `{"applications":[{"id":"fbbb12a173e08dec99f4407a78b8837e","name":"dev.flinkkit.testjob.CounterJob","start-time":1796669951152,"end-time":1796669959442,"duration":8290,"status":"CANCELED","jobs":{"CANCELED":1}},{"id":"469c058bbf3bde64df39ab888c7dd290","name":"SingleJobApplication(flinkkit-counter)","start-time":1796669955227,"end-time":-1,"duration":2130,"status":"RUNNING","jobs":{"RUNNING":1}}]}`
	realAppDetails   = `{"id":"fbbb12a173e08dec99f4407a78b8837e","name":"dev.flinkkit.testjob.CounterJob","status":"CANCELED","start-time":1796669951175,"end-time":1796669959442,"duration":8267,"timestamps":{"CREATED":1796669951152,"FAILING":0,"FAILED":0,"RUNNING":1796669951175,"CANCELED":1796669959442,"CANCELING":1796669957398,"FINISHED":0},"jobs":[{"jid":"579d67a88b716c95f41e0c0301d53bed","name":"flinkkit-counter","jobType":"STREAMING","schedulerType":"Default","start-time":1796669951620,"end-time":1796669957528,"duration":5908,"state":"CANCELED","last-modification":1796669957528,"tasks":{"running":0,"canceling":0,"canceled":2,"total":2,"created":0,"scheduled":0,"deploying":0,"reconciling":0,"finished":0,"initializing":0,"failed":0},"pending-operators":0}]}`
	realAppCancel404 = `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Application could not be found.\n\tat org.apache.flink.runtime.rest.handler.application.ApplicationCancellationHandler.handleRequest(ApplicationCancellationHandler.java:80)\nCaused by: org.apache.flink.runtime.messages.FlinkApplicationNotFoundException: Could not find Flink application (fbbb12a173e08dec99f4407a78b8837e)\n\t... 5 more\n"]}`
	realAppGet500    = `{"errors":["Internal server error.","<Exception on server side:\norg.apache.flink.runtime.messages.FlinkApplicationNotFoundException: Could not find Flink application (00000000000000000000000000000000)\n\tat org.apache.flink.runtime.dispatcher.Dispatcher.requestApplication(Dispatcher.java:1)\n\nEnd of exception on server side>"]}`
	realAppDuplicate = `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Could not submit application.\n\tat org.apache.flink.runtime.webmonitor.handlers.JarRunApplicationHandler.lambda$handleRequest$0(JarRunApplicationHandler.java:1)\nCaused by: java.util.concurrent.CompletionException: org.apache.flink.runtime.client.DuplicateApplicationSubmissionException: Application has already been submitted.\n\t... 43 more\nCaused by: org.apache.flink.runtime.client.DuplicateApplicationSubmissionException: Application has already been submitted.\n\t... 5 more\n"]}`
)

func TestApplicationsDecode(t *testing.T) {
	ctx := context.Background()
	c, mt, _ := newTestClient(t, "2.3.0")
	mt.RegisterResponder("GET", testBase+"/applications/overview", httpmock.NewStringResponder(200, realAppsOverview))
	mt.RegisterResponder("GET", testBase+"/applications/"+string(testApp), httpmock.NewStringResponder(200, realAppDetails))

	apps, err := c.Applications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 {
		t.Fatalf("%d applications, want 2: %+v", len(apps), apps)
	}
	a, b := apps[0], apps[1]
	if a.ID != testApp || a.Status != ApplicationCanceled || !a.Status.IsTerminal() || a.Jobs[JobCanceled] != 1 || len(a.Jobs) != 1 ||
		a.EndTime != time.UnixMilli(1796669959442).UTC() || a.Duration != 8290*time.Millisecond {
		t.Errorf("first application %+v", a)
	}
	if b.Name != "SingleJobApplication(flinkkit-counter)" || b.Status != ApplicationRunning || b.Status.IsTerminal() || !b.EndTime.IsZero() {
		t.Errorf("second application %+v", b)
	}

	d, err := c.Application(ctx, testApp)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != ApplicationCanceled || d.StartTime != time.UnixMilli(1796669951175).UTC() {
		t.Errorf("details %+v", d)
	}
	if len(d.Timestamps) != 4 || d.Timestamps[ApplicationCanceling] != time.UnixMilli(1796669957398).UTC() {
		t.Errorf("timestamps %v: want CREATED, RUNNING, CANCELING and CANCELED (the zero ones left out)", d.Timestamps)
	}
	if _, ok := d.Timestamps[ApplicationFailed]; ok {
		t.Errorf("timestamps %v hold FAILED, sent as 0", d.Timestamps)
	}
	if len(d.Jobs) != 1 {
		t.Fatalf("jobs %+v", d.Jobs)
	}
	if j := d.Jobs[0]; j.ID != "579d67a88b716c95f41e0c0301d53bed" || j.State != JobCanceled || j.JobType != "STREAMING" ||
		j.SchedulerType != "Default" || j.Tasks.Canceled != 2 || j.Tasks.Total != 2 {
		t.Errorf("job %+v", j)
	}
}

func TestJobsOverviewTypes(t *testing.T) {
	raw := []byte(`{"jobs":[{"jid":"579d67a88b716c95f41e0c0301d53bed","name":"n","jobType":"BATCH","schedulerType":"AdaptiveBatch","state":"RUNNING"}]}`)
	var fast, slow jobsOverviewOut
	if err := fast.decodeBody(raw); err != nil {
		t.Fatal(err)
	}
	var w jobsOverviewWire
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	slow.jobs = []JobOverview{w.Jobs[0].convert()}
	for name, o := range map[string]jobsOverviewOut{"fast": fast, "encoding/json": slow} {
		if len(o.jobs) != 1 || o.jobs[0].JobType != "BATCH" || o.jobs[0].SchedulerType != "AdaptiveBatch" {
			t.Errorf("%s: %+v", name, o.jobs)
		}
	}
}

func TestApplicationErrors(t *testing.T) {
	ctx := context.Background()
	c, mt, _ := newTestClient(t, "2.3.0")
	mt.RegisterResponder("POST", testBase+"/applications/"+string(testApp)+"/cancel", httpmock.NewStringResponder(404, realAppCancel404))
	mt.RegisterResponder("GET", testBase+"/applications/00000000000000000000000000000000", httpmock.NewStringResponder(500, realAppGet500))
	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run-application", httpmock.NewStringResponder(400, realAppDuplicate))
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob), httpmock.NewStringResponder(500, realAppGet500))

	err := c.CancelApplication(ctx, testApp)
	if !IsApplicationNotFound(err) || IsJobNotFound(err) {
		t.Errorf("cancel 404: %v; want IsApplicationNotFound only", err)
	}
	_, err = c.Application(ctx, "00000000000000000000000000000000")
	if !IsApplicationNotFound(err) {
		t.Errorf("details 500: %v; want IsApplicationNotFound", err)
	}
	_, err = c.RunJarApplication(ctx, testJar, RunApplicationRequest{ApplicationID: testApp})
	if !IsDuplicateJob(err) || IsApplicationNotFound(err) {
		t.Errorf("duplicate: %v; want IsDuplicateJob only", err)
	}
	// The same message on a job route is not about an application.
	_, err = c.Job(ctx, testJob)
	if IsApplicationNotFound(err) {
		t.Errorf("a job route's error %v taken for an unknown application", err)
	}
	if _, err := c.Application(ctx, "xyz"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("malformed id: %v, want ErrInvalidInput", err)
	}
	if _, err := c.RunJarApplication(ctx, testJar, RunApplicationRequest{ApplicationID: "xyz"}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("malformed application id in the request: %v, want ErrInvalidInput", err)
	}
}

func TestRunJarApplicationBody(t *testing.T) {
	ctx := context.Background()
	c, mt, rec := newTestClient(t, "2.3.0")
	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run-application",
		httpmock.NewStringResponder(202, `{"applicationid":"0123456789abcdef0123456789abcdef"}`))
	got, err := c.RunJarApplication(ctx, testJar, RunApplicationRequest{
		RunJarRequest: RunJarRequest{EntryClass: "a.B", ProgramArgs: []string{"--x", "1"}, JobID: testJob, ClaimMode: ClaimModeNoClaim, SavepointPath: "s3://b/sp"},
		ApplicationID: "0123456789ABCDEF0123456789ABCDEF",
	})
	if err != nil || got != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("RunJarApplication = %q, %v", got, err)
	}
	reqs := rec.all()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(reqs[0].Body), &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"entryClass": "a.B", "programArgsList": []any{"--x", "1"}, "jobId": string(testJob), "claimMode": "NO_CLAIM",
		"savepointPath": "s3://b/sp", "applicationId": "0123456789abcdef0123456789abcdef",
	}
	if len(body) != len(want) {
		t.Errorf("body %v, want %v", body, want)
	}
	for k, v := range want {
		if b, _ := json.Marshal(body[k]); string(b) != mustJSON(t, v) {
			t.Errorf("body[%s] = %v, want %v", k, body[k], v)
		}
	}

	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run-application", httpmock.NewStringResponder(202, `{}`))
	if _, err := c.RunJarApplication(ctx, testJar, RunApplicationRequest{}); !errors.Is(err, ErrDecode) {
		t.Errorf("answer without an id: %v, want ErrDecode", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Before 2.3 every application call fails with ErrUnsupported, sending
// nothing.
func TestApplicationsUnsupported(t *testing.T) {
	ctx := context.Background()
	for _, version := range []string{"1.20.5", "2.2.0"} {
		c, _, rec := newTestClient(t, version)
		errs := map[string]error{}
		_, errs["Applications"] = c.Applications(ctx)
		_, errs["Application"] = c.Application(ctx, testApp)
		errs["CancelApplication"] = c.CancelApplication(ctx, testApp)
		_, errs["RunJarApplication"] = c.RunJarApplication(ctx, testJar, RunApplicationRequest{})
		for name, err := range errs {
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Feature != FeatureApplications || !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s: %s: %v, want an UnsupportedError for FeatureApplications", version, name, err)
			}
		}
		if n := len(rec.all()); n != 0 {
			t.Errorf("%s: %d requests sent, want none", version, n)
		}
	}
	if !(Version{2, 3, 0}).Supports(FeatureApplications) || (Version{2, 2, 9}).Supports(FeatureApplications) {
		t.Error("FeatureApplications: want 2.3.0 and later only")
	}
}
