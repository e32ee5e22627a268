package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// rescaleArgs are the counter job's arguments with parallelism n, as the
// new job of the restart path needs them: the job sets its parallelism in
// its code.
func rescaleArgs(n int) []string {
	return append(counterArgs(), "--parallelism", string(rune('0'+n)))
}

// driveRescale runs a Rescale to its end with resume after every step,
// checking that every step sent at most one request and that a savepoint
// location once seen is kept.
func driveRescale(t *testing.T, e *env, mk func() *Rescale) (Progress, Result) {
	t.Helper()
	seen, location := len(e.srv.Requests()), ""
	return driveChecking(t, e, func() Stepper { return mk() }, true, func(p Progress) {
		n := len(e.srv.Requests())
		if n-seen > 1 {
			t.Fatalf("one step sent %d requests: %v", n-seen, routes(e.srv)[seen:])
		}
		seen = n
		if location != "" && p.Savepoint.Location != location {
			t.Fatalf("location %q dropped: %+v", location, p)
		}
		location = p.Savepoint.Location
		if p.Phase == PhaseSetRequirements && p.Rescale.Vertices == "" {
			t.Fatalf("SetRequirements without recorded vertices: %+v", p)
		}
	})
}

func jobParallelism(t *testing.T, e *env, id flinkapi.JobID) (flinkapi.JobState, int) {
	t.Helper()
	j, ok := e.srv.Job(id)
	if !ok {
		t.Fatalf("job %s unknown to the fake", id)
	}
	return j.State, j.Parallelism
}

func TestRescaleInPlace(t *testing.T) {
	for _, version := range []string{"1.18.1", "1.20.5", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, flinktest.WithVersion(version), flinktest.WithAdaptiveScheduler())
			var phases []string
			p, res := driveRescale(t, e, func() *Rescale {
				return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock(), OnTransition: func(tr Transition) { phases = append(phases, string(tr.To)) }}, Job: e.job, Parallelism: 3}
			})
			if res.Outcome != OutcomeSucceeded || p.Rescale.Path != policy.RescaleInPlace || p.Rescale.Scheduler != policy.SchedulerAdaptive ||
				p.Replace.Decision != policy.ReasonRescaleInPlace || p.JobID != e.job || !contains(p.Reason, "runs at parallelism 3, rescaled in place") {
				t.Fatalf("progress %+v", p)
			}
			if st, n := jobParallelism(t, e, e.job); st != flinkapi.JobRunning || n != 3 {
				t.Errorf("the job is %s at parallelism %d, want RUNNING at 3", st, n)
			}
			if got := count(e.srv, "PUT /jobs/:jobid/resource-requirements"); got != 1 {
				t.Errorf("%d PUTs of the requirements, want 1", got)
			}
			for _, r := range []string{"POST /jobs/:jobid/stop", "POST /jobs/:jobid/savepoints", "PATCH /jobs/:jobid", "POST /jars/:jarid/run"} {
				if count(e.srv, r) != 0 {
					t.Errorf("in place sent %s: %v", r, routes(e.srv))
				}
			}
			req, err := e.c.ResourceRequirements(context.Background(), e.job)
			if err != nil || len(req) != 2 {
				t.Fatalf("requirements %v, %v", req, err)
			}
			for id, b := range req {
				if b != (flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: 3}) || !strings.Contains(p.Rescale.Vertices, id) {
					t.Errorf("vertex %s bounds %+v (recorded %q)", id, b, p.Rescale.Vertices)
				}
			}
			want := "ObserveScheduler ObserveParallelism SetRequirements ConfirmParallelism Done"
			if got := strings.Join(phases, " "); got != want {
				t.Errorf("phases %q, want %q", got, want)
			}
		})
	}
}

// TestRescaleNotReached: a cluster without the slots for the new
// parallelism keeps the job as it is; the operation ends at its timeout
// with a named outcome instead of waiting for ever.
func TestRescaleNotReached(t *testing.T) {
	e := newEnv(t, flinktest.WithAdaptiveScheduler(), flinktest.WithSlots(1))
	start := e.srv.Clock().Now()
	p, res := driveRescale(t, e, func() *Rescale {
		return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Parallelism: 2, Timeout: 30 * time.Second}
	})
	if res.Outcome != OutcomeParallelismNotReached || !contains(p.Reason, "is RUNNING at parallelism 1, not 2") {
		t.Fatalf("progress %+v", p)
	}
	if took := e.srv.Clock().Now().Sub(start); took < 30*time.Second || took > 40*time.Second {
		t.Errorf("ended after %v, want just past the 30s timeout", took)
	}
	if st, n := jobParallelism(t, e, e.job); st != flinkapi.JobRunning || n != 1 {
		t.Errorf("the job is %s at %d", st, n)
	}
}

func TestRescaleByUpgrade(t *testing.T) {
	e := newEnv(t) // default scheduler
	var phases []string
	p, res := driveRescale(t, e, func() *Rescale {
		return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock(), OnTransition: func(tr Transition) { phases = append(phases, string(tr.To)) }}, Job: e.job, Parallelism: 2, Upgrade: Upgrade{JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: rescaleArgs(2)}}}
	})
	if res.Outcome != OutcomeSucceeded || p.Rescale.Path != policy.RescaleByUpgrade || p.Rescale.Scheduler != policy.SchedulerDefault ||
		p.JobID == e.job || p.Replace.RestoreKind != policy.KindSavepoint || p.Replace.RestoreFrom == "" || p.Replace.RestoreFrom != p.Savepoint.Location ||
		!contains(p.Reason, "runs at parallelism 2, rescaled through an upgrade") {
		t.Fatalf("progress %+v", p)
	}
	if st, _ := jobParallelism(t, e, e.job); st != flinkapi.JobFinished {
		t.Errorf("the old job is %s, want FINISHED (stopped with a savepoint)", st)
	}
	nj, _ := e.srv.Job(p.JobID)
	if nj.State != flinkapi.JobRunning || nj.Parallelism != 2 || nj.RestoredFrom != p.Savepoint.Location {
		t.Errorf("new job %+v", nj)
	}
	if count(e.srv, "PUT /jobs/:jobid/resource-requirements") != 0 {
		t.Error("the restart path set resource requirements")
	}
	if got := strings.Join(phases, " "); !strings.HasPrefix(got, "ObserveScheduler ObserveParallelism Observe") ||
		!strings.HasSuffix(got, "WaitRunning ConfirmParallelism Done") {
		t.Errorf("phases %q", got)
	}
}

func TestRescaleDecisions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []flinktest.Option
		job     func(e *env) flinkapi.JobID
		target  int
		pol     policy.RescalePolicy
		outcome Outcome
		reason  policy.Reason
		routes  []string // routes that must not be sent
		probe   bool     // GET resource-requirements sent
	}{
		{name: "in place only, default scheduler", target: 2, pol: policy.RescalePolicy{InPlaceOnly: true},
			outcome: OutcomeBlocked, reason: policy.ReasonRescaleRestartForbidden, probe: true,
			routes: []string{"POST /jobs/:jobid/stop", "PUT /jobs/:jobid/resource-requirements", "PATCH /jobs/:jobid"}},
		{name: "1.17 adaptive: no probe, restart path forbidden", opts: []flinktest.Option{flinktest.WithVersion("1.17.2"), flinktest.WithAdaptiveScheduler()},
			target: 2, pol: policy.RescalePolicy{InPlaceOnly: true}, outcome: OutcomeBlocked, reason: policy.ReasonRescaleRestartForbidden,
			routes: []string{"GET /jobs/:jobid/resource-requirements", "POST /jobs/:jobid/stop"}},
		{name: "already at the parallelism", opts: []flinktest.Option{flinktest.WithAdaptiveScheduler()}, target: 1,
			outcome: OutcomeNotNeeded, reason: policy.ReasonParallelismUnchanged, probe: true, routes: []string{"PUT /jobs/:jobid/resource-requirements"}},
		{name: "above the maximum parallelism", opts: []flinktest.Option{flinktest.WithAdaptiveScheduler()}, target: 129,
			outcome: OutcomeBlocked, reason: policy.ReasonAboveMaxParallelism, probe: true, routes: []string{"PUT /jobs/:jobid/resource-requirements"}},
		{name: "unknown job, in place only", opts: []flinktest.Option{flinktest.WithAdaptiveScheduler()},
			job:    func(*env) flinkapi.JobID { return "00000000000000000000000000000001" },
			target: 2, pol: policy.RescalePolicy{InPlaceOnly: true}, outcome: OutcomeBlocked, reason: policy.ReasonRescaleRestartForbidden, probe: true},
		{name: "unknown job, no state: the update blocks", job: func(*env) flinkapi.JobID { return "00000000000000000000000000000001" },
			target: 2, outcome: OutcomeBlocked, reason: policy.ReasonNoRecentState, probe: true, routes: []string{"POST /jars/:jarid/run"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts...)
			job := e.job
			if tc.job != nil {
				job = tc.job(e)
			}
			p, res := driveRescale(t, e, func() *Rescale {
				return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Parallelism: tc.target, Policy: tc.pol, Upgrade: Upgrade{JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: rescaleArgs(2)}}}
			})
			if res.Outcome != tc.outcome || p.Replace.Decision != tc.reason {
				t.Fatalf("%s/%s, want %s/%s: %+v", res.Outcome, p.Replace.Decision, tc.outcome, tc.reason, p)
			}
			for _, r := range tc.routes {
				if count(e.srv, r) != 0 {
					t.Errorf("sent %s: %v", r, routes(e.srv))
				}
			}
			if got := count(e.srv, "GET /jobs/:jobid/resource-requirements") > 0; got != tc.probe {
				t.Errorf("scheduler probe sent %v, want %v: %v", got, tc.probe, routes(e.srv))
			}
			if st, n := jobParallelism(t, e, e.job); st != flinkapi.JobRunning || n != 1 {
				t.Errorf("the job is %s at %d, want RUNNING at 1", st, n)
			}
		})
	}
}

// TestRescaleFaults: transient errors on every request of the in-place
// path are retried (the PUT is idempotent); a PUT Flink refuses ends the
// operation RescaleRejected; a JobManager that keeps answering 503 ends it
// at the deadline.
func TestRescaleFaults(t *testing.T) {
	t.Run("transient", func(t *testing.T) {
		e := newEnv(t, flinktest.WithAdaptiveScheduler())
		for _, f := range []flinktest.Fault{
			{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/resource-requirements", Times: 2},
			{Kind: flinktest.FaultReset, Route: "PUT /jobs/:jobid/resource-requirements", Times: 1, After: true},
			{Kind: flinktest.FaultStatus, Status: 503, Route: "PUT /jobs/:jobid/resource-requirements", Times: 1},
			{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid", Times: 3},
		} {
			e.inject(t, f)
		}
		p, res := driveRescale(t, e, func() *Rescale {
			return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Parallelism: 2}
		})
		if res.Outcome != OutcomeSucceeded || p.LastError != "" {
			t.Fatalf("progress %+v\n%v", p, routes(e.srv))
		}
		if got := count(e.srv, "PUT /jobs/:jobid/resource-requirements"); got != 3 {
			t.Errorf("%d PUTs, want 3 (two failed)", got)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		e := newEnv(t, flinktest.WithAdaptiveScheduler())
		e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 500, Route: "PUT /jobs/:jobid/resource-requirements"})
		p, res := driveRescale(t, e, func() *Rescale {
			return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Parallelism: 2}
		})
		if res.Outcome != OutcomeRescaleRejected || !contains(p.Reason, "refused the resource requirements: 500") {
			t.Fatalf("progress %+v", p)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		e := newEnv(t, flinktest.WithAdaptiveScheduler())
		e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/resource-requirements"})
		p, res := driveRescale(t, e, func() *Rescale {
			return &Rescale{Env: Env{Client: e.c, Timing: Timing{Stop: time.Minute}, Clock: e.srv.Clock()}, Job: e.job, Parallelism: 2}
		})
		if res.Outcome != OutcomeTimedOut || !contains(p.Reason, "ObserveScheduler: 503") {
			t.Fatalf("progress %+v", p)
		}
	})
}

func TestRescaleBadInput(t *testing.T) {
	e := newEnv(t)
	for _, r := range []*Rescale{{Env: Env{Client: e.c}, Job: e.job}, {Env: Env{Client: e.c}, Job: e.job, Parallelism: -1}, {Env: Env{Client: e.c}, Parallelism: 2}} {
		var p Progress
		if _, err := r.Step(context.Background(), &p); err == nil || p.Phase != "" {
			t.Errorf("%+v: %v, progress %+v", r, err, p)
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("bad input sent %d requests", n)
	}
}
