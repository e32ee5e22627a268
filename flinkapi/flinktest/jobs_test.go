package flinktest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestJobLifecycle follows a job through its states as the clock moves.
func TestJobLifecycle(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	id := f.run(flinkapi.RunJarRequest{})
	type step struct {
		after        time.Duration // since the previous step
		state        flinkapi.JobState
		vertexStatus string
	}
	for i, st := range []step{
		{0, flinkapi.JobInitializing, ""},
		{150 * time.Millisecond, flinkapi.JobCreated, "CREATED"},
		{200 * time.Millisecond, flinkapi.JobRunning, "CREATED"}, // tasks scheduled, not deployed
		{400 * time.Millisecond, flinkapi.JobRunning, "RUNNING"},
	} {
		f.advance(st.after)
		d, err := f.c.Job(f.ctx, id)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var statuses []string
		for _, v := range d.Vertices {
			statuses = append(statuses, v.Status)
		}
		want := []string{}
		if st.vertexStatus != "" {
			want = []string{st.vertexStatus, st.vertexStatus}
		}
		if d.State != st.state || strings.Join(statuses, ",") != strings.Join(want, ",") {
			t.Errorf("step %d: state %s, vertices %v; want %s, %v", i, d.State, statuses, st.state, want)
		}
	}
	d, err := f.c.Job(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	start := d.StartTime
	want := map[flinkapi.JobState]time.Time{
		flinkapi.JobInitializing: start,
		flinkapi.JobCreated:      start.Add(150 * time.Millisecond),
		flinkapi.JobRunning:      start.Add(350 * time.Millisecond),
	}
	if diff := cmp.Diff(want, d.Timestamps); diff != "" {
		t.Errorf("timestamps (-want +got):\n%s", diff)
	}
	if d.Name != "test-job" || d.JobType != "STREAMING" || !d.EndTime.IsZero() || d.Duration != 750*time.Millisecond {
		t.Errorf("details %+v", d)
	}

	// Cancel: CANCELLING, then CANCELED; cancelling again is accepted.
	if err := f.c.CancelJob(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	if st := f.state(id); st != flinkapi.JobCancelling {
		t.Errorf("right after the cancel: %s, want CANCELLING", st)
	}
	f.advance(100 * time.Millisecond)
	if st := f.state(id); st != flinkapi.JobCanceled {
		t.Errorf("100ms after the cancel: %s, want CANCELED", st)
	}
	if err := f.c.CancelJob(f.ctx, id); err != nil {
		t.Errorf("second cancel: %v, want 202", err)
	}
	ov, err := f.c.Overview(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ov.JobsCancelled != 1 || ov.JobsRunning != 0 || ov.SlotsAvailable != ov.SlotsTotal {
		t.Errorf("overview after the cancel: %+v", ov)
	}
}

// TestCancelAnswers pins the answers of PATCH /jobs/:jobid per job state.
func TestCancelAnswers(t *testing.T) {
	f := newFake(t)
	finished := f.running(flinkapi.RunJarRequest{})
	op, err := f.c.StopWithSavepoint(f.ctx, finished, flinkapi.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	failed := f.running(flinkapi.RunJarRequest{})
	if err := f.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if res := f.result(op); !res.Succeeded() {
		t.Fatalf("stop: %+v", res)
	}
	for _, tc := range []struct {
		name   string
		id     flinkapi.JobID
		status int
		msg    string
	}{
		{"finished", finished, http.StatusConflict, "org.apache.flink.runtime.rest.handler.RestHandlerException: Job cancellation failed because the job has already reached another terminal state (FINISHED)."},
		{"failed", failed, http.StatusConflict, "org.apache.flink.runtime.rest.handler.RestHandlerException: Job cancellation failed because the job has already reached another terminal state (FAILED)."},
		{"unknown", "0123456789abcdef0123456789abcdef", http.StatusNotFound, "org.apache.flink.runtime.rest.handler.RestHandlerException: Job could not be found."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.raw(http.MethodPatch, "/jobs/"+string(tc.id)+"?mode=cancel", "")
			if status != tc.status || firstError(t, body) != tc.msg {
				t.Errorf("%d %q, want %d %q", status, firstError(t, body), tc.status, tc.msg)
			}
		})
	}
	err = f.c.CancelJob(f.ctx, finished)
	if !flinkapi.IsTerminal(err) {
		t.Errorf("client: %v, want IsTerminal", err)
	}
	if err := f.c.CancelJob(f.ctx, "0123456789abcdef0123456789abcdef"); !flinkapi.IsJobNotFound(err) {
		t.Errorf("client: %v, want IsJobNotFound", err)
	}
	status, body := f.raw(http.MethodPatch, "/jobs/"+string(finished)+"?mode=stop", "")
	if status != http.StatusPermanentRedirect || !strings.Contains(firstError(t, body), `termination mode "stop" has been removed`) {
		t.Errorf("mode=stop: %d %q", status, body)
	}
}

// TestUnknownJob pins the answers of the job routes for a job the cluster
// does not know: most say 404 "Job <id> not found", the status route 500.
func TestUnknownJob(t *testing.T) {
	f := newFake(t)
	const id = "0123456789abcdef0123456789abcdef"
	notFound := "org.apache.flink.runtime.rest.NotFoundException: Job " + id + " not found"
	for _, tc := range []struct {
		path   string
		status int
		first  string
	}{
		{"/jobs/" + id, 404, notFound},
		{"/jobs/" + id + "/exceptions", 404, notFound},
		{"/jobs/" + id + "/checkpoints", 404, notFound},
		{"/jobs/" + id + "/checkpoints/config", 404, notFound},
		{"/jobs/" + id + "/checkpoints/details/1", 404, notFound},
		{"/jobs/" + id + "/status", 500, "Internal server error."},
		{"/jobs/" + id + "/resource-requirements", 500, "Internal server error."},
		{"/jobs/not-a-job-id", 400, `org.apache.flink.runtime.rest.handler.RestHandlerException: Bad request, could not parse parameters: Cannot resolve path parameter (jobid) from value "not-a-job-id".`},
	} {
		status, body := f.raw(http.MethodGet, tc.path, "")
		if status != tc.status || firstError(t, body) != tc.first {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, status, firstError(t, body), tc.status, tc.first)
		}
	}
	_, err := f.c.JobStatus(f.ctx, id)
	if ae := apiError(t, err); ae.StatusCode != 500 || !flinkapi.IsJobNotFound(err) {
		t.Errorf("JobStatus: %v, want 500 for which IsJobNotFound is true", err)
	}
}

// TestFailOnce: a job with --fail-once fails at --fail-at once: its
// restart (Flink's, from a checkpoint) and a later job of the same --out
// folder count on past it; a job of another folder fails again, and a bad
// value is refused as the test job refuses it.
func TestFailOnce(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	args := func(out string) []string {
		return []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "0", "--fail-at", "10", "--fail-once", "true"}
	}
	id := f.run(flinkapi.RunJarRequest{ProgramArgs: append(args("/out/once"), "--restart-attempts", "1")})
	f.advance(1300 * time.Millisecond) // key-0 reaches 10 at 1225ms
	if st := f.state(id); st != flinkapi.JobRestarting {
		t.Fatalf("after 1.3s: %s, want RESTARTING", st)
	}
	f.advance(3 * time.Second)
	if info := f.info(id); info.State != flinkapi.JobRunning || info.Restarts != 1 || info.Counts["key-0"] <= 10 {
		t.Errorf("restarted job %+v: want RUNNING past 10 after one restart", info)
	}
	again := f.run(flinkapi.RunJarRequest{ProgramArgs: args("/out/once")})
	other := f.run(flinkapi.RunJarRequest{ProgramArgs: args("/out/other")})
	f.advance(2 * time.Second)
	if st := f.state(again); st != flinkapi.JobRunning {
		t.Errorf("a second job of the same folder: %s, want RUNNING", st)
	}
	if st := f.state(other); st != flinkapi.JobFailed {
		t.Errorf("a job of another folder: %s, want FAILED", st)
	}
	_, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{EntryClass: flinktest.CounterJobClass, ProgramArgs: []string{"--out", "/out/x", "--fail-once", "yes"}})
	if err == nil {
		t.Errorf("--fail-once yes: %v", err)
	}
}

// TestJobExceptions: a job that reaches --fail-at restarts once and then
// fails; the exception history has both failures, newest first.
func TestJobExceptions(t *testing.T) {
	for _, version := range []string{"1.20.5", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion(version), flinktest.WithRefreshInterval(0))
			id := f.run(flinkapi.RunJarRequest{ProgramArgs: []string{"--out", "/out/x", "--keys", "2", "--rate", "40", "--checkpoint-interval", "0", "--fail-at", "10", "--restart-attempts", "1"}})
			f.advance(1300 * time.Millisecond) // tasks run from 750ms; key-0 reaches 10 at event 19, 475ms later
			if st := f.state(id); st != flinkapi.JobRestarting {
				t.Fatalf("after 1.3s: %s, want RESTARTING", st)
			}
			f.advance(1700 * time.Millisecond)
			if st := f.state(id); st != flinkapi.JobFailed {
				t.Fatalf("after 3s: %s, want FAILED", st)
			}
			ex, err := f.c.JobExceptions(f.ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			type entry struct{ Name, Message, Task string }
			var got []entry
			for _, e := range ex.Entries {
				got = append(got, entry{e.ExceptionName, e.Message, e.TaskName})
				for _, c := range e.Concurrent {
					got = append(got, entry{"  " + c.ExceptionName, c.Message, c.TaskName})
				}
			}
			own := "flinkkit test job: key-0 reached count 10 (--fail-at 10)"
			want := []entry{
				{"org.apache.flink.runtime.JobException", "Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=1, backoffTimeMS=200)", ""},
				{"  java.lang.IllegalStateException", own, "counter -> discard: Writer (1/1) - execution #1"},
				{"java.lang.IllegalStateException", own, "counter -> discard: Writer (1/1) - execution #0"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("exception history (-want +got):\n%s", diff)
			}
			if !ex.Entries[0].Timestamp.After(ex.Entries[1].Timestamp) || ex.Truncated {
				t.Errorf("entries not newest first or truncated: %+v", ex)
			}
			one, err := f.c.JobExceptions(f.ctx, id, 1)
			if err != nil || len(one.Entries) != 1 || !one.Truncated {
				t.Errorf("maxExceptions 1: %+v, %v", one, err)
			}
			_, raw := f.rawJSON(http.MethodGet, "/jobs/"+string(id)+"/exceptions", "")
			_, legacy := raw["root-exception"]
			if legacy != (version == "1.20.5") {
				t.Errorf("Flink %s: root-exception present %v", version, legacy)
			}
			if info := f.info(id); info.Restarts != 1 || info.Counts["key-0"] != 10 {
				t.Errorf("job info %+v: want one restart, key-0 at 10", info)
			}
		})
	}
}

// TestSlots: a job needs free slots; it waits in CREATED and fails after
// the slot request timeout.
func TestSlots(t *testing.T) {
	f := newFake(t, flinktest.WithSlots(2))
	a := f.running(flinkapi.RunJarRequest{ProgramArgs: append(testArgs("/out/a", 0), "--parallelism", "2")})
	b := f.run(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/b", 0)})
	f.advance(time.Second)
	if st := f.state(b); st != flinkapi.JobCreated {
		t.Fatalf("second job: %s, want CREATED while the first holds both slots", st)
	}
	ov, err := f.c.Overview(f.ctx)
	if err != nil || ov.SlotsAvailable != 0 || ov.SlotsTotal != 2 {
		t.Errorf("overview %+v, %v", ov, err)
	}
	if err := f.c.CancelJob(f.ctx, a); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if st := f.state(b); st != flinkapi.JobRunning {
		t.Errorf("second job after the first's cancel: %s, want RUNNING", st)
	}

	c := f.run(flinkapi.RunJarRequest{ProgramArgs: append(testArgs("/out/c", 0), "--parallelism", "3")})
	f.advance(5*time.Minute + time.Second)
	if st := f.state(c); st != flinkapi.JobFailed {
		t.Errorf("job needing 3 of 2 slots after 5 minutes: %s, want FAILED", st)
	}
}

// TestJobsLists: /jobs and /jobs/overview list every job, newest first.
func TestJobsLists(t *testing.T) {
	f := newFake(t)
	a := f.running(flinkapi.RunJarRequest{})
	b := f.run(flinkapi.RunJarRequest{})
	jobs, err := f.c.ListJobs(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []flinkapi.JobIDStatus{{ID: b, Status: flinkapi.JobInitializing}, {ID: a, Status: flinkapi.JobRunning}}
	if diff := cmp.Diff(want, jobs); diff != "" {
		t.Errorf("ListJobs (-want +got):\n%s", diff)
	}
	ov, err := f.c.JobsOverview(f.ctx)
	if err != nil || len(ov) != 2 || ov[1].ID != a || ov[1].Tasks.Running != 2 || ov[1].Tasks.Total != 2 {
		t.Errorf("JobsOverview %+v, %v", ov, err)
	}
}

// TestRefreshCache: job details and checkpoint statistics may be as old as
// web.refresh-interval; the status route is never cached.
func TestRefreshCache(t *testing.T) {
	f := newFake(t)
	id := f.run(flinkapi.RunJarRequest{})
	if d, err := f.c.Job(f.ctx, id); err != nil || d.State != flinkapi.JobInitializing {
		t.Fatalf("Job: %+v, %v", d, err)
	}
	f.advance(2 * time.Second)
	if d, _ := f.c.Job(f.ctx, id); d.State != flinkapi.JobInitializing {
		t.Errorf("details 2s later: %s, want the cached INITIALIZING", d.State)
	}
	if st := f.state(id); st != flinkapi.JobRunning {
		t.Errorf("status 2s later: %s, want RUNNING", st)
	}
	f.advance(time.Second)
	if d, _ := f.c.Job(f.ctx, id); d.State != flinkapi.JobRunning {
		t.Errorf("details 3s later: %s, want RUNNING", d.State)
	}
}

// TestAdaptiveScheduler: with the adaptive scheduler the resource
// requirements answer the vertices' bounds and take new ones.
func TestAdaptiveScheduler(t *testing.T) {
	f := newFake(t, flinktest.WithAdaptiveScheduler(), flinktest.WithVersion("1.18.1"))
	id := f.running(flinkapi.RunJarRequest{})
	got, err := f.c.ResourceRequirements(f.ctx, id)
	want := flinkapi.ResourceRequirements{
		"b93d204074064b03a853367828fb3dfe": {LowerBound: 1, UpperBound: 1},
		"0e3160945c69999b81da5f032a648b30": {LowerBound: 1, UpperBound: 1},
	}
	if err != nil || !cmp.Equal(got, want) {
		t.Fatalf("ResourceRequirements %v, %v; want %v", got, err, want)
	}
	next := flinkapi.ResourceRequirements{}
	for k := range want {
		next[k] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: 3}
	}
	if err := f.c.SetResourceRequirements(f.ctx, id, next); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.c.ResourceRequirements(f.ctx, id); !cmp.Equal(got, next) {
		t.Errorf("after the PUT: %v, want %v", got, next)
	}
	delete(next, "b93d204074064b03a853367828fb3dfe")
	next["0123456789abcdef0123456789abcdef"] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: 1}
	if err := f.c.SetResourceRequirements(f.ctx, id, next); err == nil {
		t.Error("PUT without every vertex: no error")
	}
}
