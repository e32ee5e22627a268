package flinktest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestFaultStatus: injected statuses come with Flink's bodies and match
// the client's sentinels.
func TestFaultStatus(t *testing.T) {
	const job = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		status   int
		route    string
		path     string
		first    string
		sentinel error
	}{
		{503, "", "/overview", "Service temporarily unavailable due to an ongoing leader election. Please refresh.", flinkapi.ErrUnavailable},
		{404, "GET /jobs/:jobid", "/jobs/" + job, "org.apache.flink.runtime.rest.NotFoundException: Job " + job + " not found", flinkapi.ErrNotFound},
		{404, "/config", "/config", "Unable to load requested file /config.", flinkapi.ErrNotFound},
		{409, "", "/overview", "org.apache.flink.runtime.rest.handler.RestHandlerException: Job cancellation failed because the job has already reached another terminal state (FAILED).", flinkapi.ErrConflict},
		{500, "", "/overview", "Internal server error.", nil},
		{429, "", "/overview", "org.apache.flink.runtime.rest.handler.RestHandlerException: Too Many Requests", flinkapi.ErrUnavailable},
	} {
		t.Run(tc.path+" "+http.StatusText(tc.status), func(t *testing.T) {
			f := newFake(t)
			if err := f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: tc.status, Route: tc.route, Times: 1}); err != nil {
				t.Fatal(err)
			}
			status, body := f.raw(http.MethodGet, tc.path, "")
			if status != tc.status || firstError(t, body) != tc.first {
				t.Errorf("%d %q", status, firstError(t, body))
			}
			if status, _ := f.raw(http.MethodGet, "/config", ""); status != 200 {
				t.Errorf("second request: %d, want 200 (Times: 1)", status)
			}
			if tc.sentinel != nil {
				f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: tc.status, Times: 1})
				if _, err := f.c.Overview(f.ctx); !errors.Is(err, tc.sentinel) {
					t.Errorf("client: %v, want %v", err, tc.sentinel)
				}
			}
		})
	}
}

// TestFaultRouteAndJob: faults apply only to their route and job.
func TestFaultRouteAndJob(t *testing.T) {
	f := newFake(t)
	a := f.running(flinkapi.RunJarRequest{})
	b := f.running(flinkapi.RunJarRequest{})
	if err := f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/status", Job: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.JobStatus(f.ctx, a); !errors.Is(err, flinkapi.ErrUnavailable) {
		t.Errorf("status of a: %v", err)
	}
	if _, err := f.c.JobStatus(f.ctx, b); err != nil {
		t.Errorf("status of b: %v", err)
	}
	if _, err := f.c.Job(f.ctx, a); err != nil {
		t.Errorf("details of a: %v", err)
	}
	var faults []string
	for _, r := range f.srv.Requests() {
		if r.Fault != "" {
			faults = append(faults, r.Method+" "+r.Path+" "+r.Fault)
		}
	}
	if want := []string{"GET /jobs/" + string(a) + "/status status 503"}; !cmp.Equal(faults, want) {
		t.Errorf("faults in the log %v, want %v", faults, want)
	}
	for _, bad := range []flinktest.Fault{
		{Kind: flinktest.FaultStatus, Status: 200},
		{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /no/such/route"},
		{Kind: flinktest.FaultLatency},
		{Kind: flinktest.FaultSavepointFails, Route: "/config"},
		{Kind: flinktest.FaultReset, Probability: 2},
		{Kind: 99},
	} {
		if err := f.srv.Inject(bad); err == nil {
			t.Errorf("Inject(%+v): no error", bad)
		}
	}
}

// TestFaultRetried: the client retries GETs through transient faults.
func TestFaultRetried(t *testing.T) {
	srv := flinktest.NewServer()
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 1})
	srv.Inject(flinktest.Fault{Kind: flinktest.FaultReset, Times: 1})
	if _, err := c.Overview(t.Context()); err != nil {
		t.Fatalf("Overview through a 503 and a reset: %v", err)
	}
	var statuses []int
	for _, r := range srv.Requests() {
		statuses = append(statuses, r.Status)
	}
	if want := []int{503, 0, 200}; !cmp.Equal(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
}

// TestFaultReset: the connection closes without an answer.
func TestFaultReset(t *testing.T) {
	f := newFake(t)
	f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", After: true, Times: 1})
	jar := f.upload()
	id := flinkapi.NewJobID()
	_, err := f.c.RunJar(f.ctx, jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: testArgs("/o", 0)})
	var te *flinkapi.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("RunJar: %v, want a transport error", err)
	}
	// After: the job was submitted although the client got no answer.
	if _, ok := f.srv.Job(id); !ok {
		t.Error("the job was not submitted")
	}
}

// TestFaultLatency: on a manual clock the request moves the clock.
func TestFaultLatency(t *testing.T) {
	f := newFake(t)
	f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultLatency, Delay: 10 * time.Second, Route: "GET /overview"})
	before := f.srv.Clock().Now()
	if _, err := f.c.Overview(f.ctx); err != nil {
		t.Fatal(err)
	}
	if d := f.srv.Clock().Now().Sub(before); d != 10*time.Second {
		t.Errorf("clock moved %v, want 10s", d)
	}
	if r := f.srv.Requests()[0]; r.Status != 200 || r.Fault != "latency 10s" {
		t.Errorf("log %+v", r)
	}
}

// TestRestartJobManager: without HA jobs and trigger ids are gone; with HA
// running jobs come back from their latest checkpoint; lost jobs do not.
func TestRestartJobManager(t *testing.T) {
	t.Run("NoHA", func(t *testing.T) {
		f := newFake(t)
		id := f.running(flinkapi.RunJarRequest{})
		op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{})
		if err != nil {
			t.Fatal(err)
		}
		f.advance(time.Second)
		loc := f.result(op).Location
		f.srv.RestartJobManager(flinktest.RestartOptions{})
		if _, err := f.c.Job(f.ctx, id); !flinkapi.IsJobNotFound(err) {
			t.Errorf("Job after the restart: %v", err)
		}
		if _, err := f.c.OperationStatus(f.ctx, op); !flinkapi.IsTriggerNotFound(err) {
			t.Errorf("OperationStatus after the restart: %v", err)
		}
		if ok, _ := f.srv.SavepointExists(loc); !ok {
			t.Error("the savepoint is gone after the restart")
		}
		if jars, err := f.c.ListJars(f.ctx); err != nil || len(jars) == 0 {
			t.Errorf("jars after the restart: %v, %v", jars, err)
		}
		// The savepoint still restores.
		again := f.running(flinkapi.RunJarRequest{SavepointPath: loc})
		if info := f.info(again); info.RestoredFrom != loc {
			t.Errorf("%+v", info)
		}
	})
	t.Run("HA", func(t *testing.T) {
		f := newFake(t, flinktest.WithRefreshInterval(0))
		kept := f.running(flinkapi.RunJarRequest{})
		lost := f.running(flinkapi.RunJarRequest{})
		f.advance(time.Second) // checkpoints
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true, Lose: []flinkapi.JobID{lost}, Downtime: 2 * time.Second})
		if _, err := f.c.Overview(f.ctx); err == nil {
			t.Error("Overview during the downtime: no error")
		}
		f.advance(2 * time.Second)
		if _, err := f.c.Job(f.ctx, lost); !flinkapi.IsJobNotFound(err) {
			t.Errorf("lost job: %v", err)
		}
		if st := f.state(kept); st != flinkapi.JobInitializing {
			t.Errorf("kept job right after the restart: %s", st)
		}
		f.advance(time.Second)
		st, err := f.c.Checkpoints(f.ctx, kept)
		if err != nil {
			t.Fatal(err)
		}
		if r := st.LatestRestored; r == nil || r.IsSavepoint || r.ID < 1 {
			t.Errorf("kept job restored from %+v, want its latest checkpoint", r)
		}
		if st := f.state(kept); st != flinkapi.JobRunning {
			t.Errorf("kept job: %s", st)
		}
	})
	t.Run("Fault", func(t *testing.T) {
		// The JobManager dies right after accepting a savepoint trigger.
		f := newFake(t)
		id := f.running(flinkapi.RunJarRequest{})
		f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultRestart, Route: "POST /jobs/:jobid/savepoints", After: true, Restart: flinktest.RestartOptions{HA: true}})
		trigger := flinkapi.NewTriggerID()
		_, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: trigger})
		var te *flinkapi.TransportError
		if !errors.As(err, &te) {
			t.Fatalf("trigger: %v, want a transport error", err)
		}
		_, err = f.c.OperationStatus(f.ctx, flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: id, TriggerID: trigger})
		if !flinkapi.IsTriggerNotFound(err) {
			t.Errorf("status after the restart: %v", err)
		}
		if _, ok := f.srv.Job(id); !ok {
			t.Error("the job is gone despite HA")
		}
	})
}

// TestSavepointFaults: savepoints that fail, jobs that fail during a
// savepoint or while stopping.
func TestSavepointFaults(t *testing.T) {
	t.Run("SavepointFails", func(t *testing.T) {
		f := newFake(t, flinktest.WithRefreshInterval(0))
		id := f.running(flinkapi.RunJarRequest{})
		f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: id, Times: 1})
		op, err := f.c.StopWithSavepoint(f.ctx, id, flinkapi.StopRequest{})
		if err != nil {
			t.Fatal(err)
		}
		f.advance(time.Second)
		res := f.result(op)
		if res.Failure == nil || res.Failure.Message() != "Checkpoint expired before completing." {
			t.Errorf("stop: %+v", res)
		}
		if st := f.state(id); st != flinkapi.JobRunning {
			t.Errorf("job after the failed stop: %s, want RUNNING", st)
		}
		st, _ := f.c.Checkpoints(f.ctx, id)
		if l := st.LatestFailed; l == nil || l.FailureMessage != "Checkpoint expired before completing." || !l.IsSavepoint {
			t.Errorf("latest failed %+v", l)
		}
		// Times: 1 — the next stop works.
		op2, _ := f.c.StopWithSavepoint(f.ctx, id, flinkapi.StopRequest{})
		f.advance(time.Second)
		if res := f.result(op2); !res.Succeeded() {
			t.Errorf("second stop: %+v", res)
		}
	})
	t.Run("JobFailsDuringSavepoint", func(t *testing.T) {
		f := newFake(t)
		id := f.running(flinkapi.RunJarRequest{})
		f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultJobFailsDuringSavepoint, Cause: "org.apache.flink.runtime.jobmaster.JobMasterException: TaskManager lost"})
		op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{})
		if err != nil {
			t.Fatal(err)
		}
		f.advance(time.Second)
		res := f.result(op)
		if res.Failure == nil || res.Failure.Message() != "Checkpoint Coordinator is suspending." {
			t.Errorf("savepoint: %+v", res)
		}
		if st := f.state(id); st != flinkapi.JobFailed {
			t.Errorf("job %s, want FAILED", st)
		}
		ex, _ := f.c.JobExceptions(f.ctx, id, 0)
		if len(ex.Entries) != 1 || ex.Entries[0].Concurrent[0].Message != "TaskManager lost" {
			t.Errorf("exceptions %+v", ex)
		}
	})
	t.Run("JobFailsWhileStopping", func(t *testing.T) {
		f := newFake(t)
		id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/o", 1000, "--restart-attempts", "1")})
		f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping})
		op, err := f.c.StopWithSavepoint(f.ctx, id, flinkapi.StopRequest{})
		if err != nil {
			t.Fatal(err)
		}
		f.advance(300 * time.Millisecond)
		res := f.result(op)
		if res.Failure == nil || res.Location != "" {
			t.Fatalf("stop: %+v", res)
		}
		var msg string
		for c := range flinkapi.CauseChain(res.Failure.StackTrace) {
			if strings.HasSuffix(c.Class, "StopWithSavepointStoppingException") {
				msg = c.Message
			}
		}
		loc, _, _ := strings.Cut(strings.TrimPrefix(msg, "A savepoint has been created at: "), ",")
		if !strings.HasPrefix(loc, "file:/tmp/flinktest/savepoints/savepoint-") ||
			!strings.Contains(msg, "but the corresponding job "+string(id)+" failed during stopping.") {
			t.Errorf("failure %q", res.Failure.StackTrace)
		}
		if ok, _ := f.srv.SavepointExists(loc); !ok {
			t.Errorf("the savepoint %s of the failed stop does not exist", loc)
		}
		// Package savepoint finds the location in the failure.
		now := f.srv.Clock().Now()
		if st := savepoint.AfterPoll(savepoint.Begin(op.Kind, id, op.TriggerID, "", now, time.Time{}), res, nil, now); st.Location != loc {
			t.Errorf("savepoint.AfterPoll: location %q, want %q", st.Location, loc)
		}
		if st := f.state(id); st != flinkapi.JobRestarting {
			t.Errorf("job %s, want RESTARTING (one restart attempt)", st)
		}
	})
}

// TestFaultProbabilityDeterministic: the same seed hits the same requests.
func TestFaultProbabilityDeterministic(t *testing.T) {
	hits := func(seed int64) []int {
		srv := flinktest.NewServer(flinktest.WithSeed(seed))
		defer srv.Close()
		srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Probability: 0.3})
		var out []int
		for i := range 40 {
			resp, err := http.Get(srv.URL + "/config")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 503 {
				out = append(out, i)
			}
		}
		return out
	}
	a, b, c := hits(7), hits(7), hits(8)
	if !cmp.Equal(a, b) {
		t.Errorf("seed 7 hit %v, then %v", a, b)
	}
	if cmp.Equal(a, c) {
		t.Errorf("seeds 7 and 8 hit the same requests %v", a)
	}
	if len(a) < 4 || len(a) > 20 {
		t.Errorf("%d of 40 hit with probability 0.3", len(a))
	}
}

// TestFaultAfterRetriedTrigger: the trigger takes effect, its answer is
// lost; the client retries with the same trigger id and Flink's
// deduplication makes it one savepoint.
func TestFaultAfterRetriedTrigger(t *testing.T) {
	srv := flinktest.NewServer(flinktest.WithRefreshInterval(0))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, srv: srv, c: c, ctx: t.Context()}
	id := f.running(flinkapi.RunJarRequest{})
	srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/savepoints", After: true, Times: 1})
	op, err := c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatalf("TriggerSavepoint through a lost answer: %v", err)
	}
	f.advance(time.Second)
	if res := f.result(op); !res.Succeeded() {
		t.Fatalf("%+v", res)
	}
	st, err := c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var savepoints int
	for _, h := range st.History {
		if h.IsSavepoint {
			savepoints++
		}
	}
	var statuses []int
	for _, r := range srv.Requests() {
		if r.Route == "POST /jobs/:jobid/savepoints" {
			statuses = append(statuses, r.Status)
		}
	}
	if savepoints != 1 || !cmp.Equal(statuses, []int{503, 202}) {
		t.Errorf("%d savepoints, trigger answers %v; want 1 savepoint, [503 202]", savepoints, statuses)
	}
}
