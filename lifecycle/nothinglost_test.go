package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// retainedJob starts a second counter job that retains its checkpoints
// on cancellation and failure, lets it checkpoint, and returns its id.
func retainedJob(t *testing.T, e *env) flinkapi.JobID {
	t.Helper()
	id := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: newArgs(),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	e.srv.ClearRequests()
	return id
}

// loseAnswer steps op once on p, sending the request the stored Progress
// prepared, and throws the answer away: p stays as it was stored.
func loseAnswer(t *testing.T, op Stepper, p *Progress) {
	t.Helper()
	lost := *p
	if _, err := op.Step(context.Background(), &lost); err != nil {
		t.Fatal(err)
	}
}

// resume drives op from the stored p to its end.
func resume(t *testing.T, e *env, mk func() Stepper, p *Progress) Result {
	t.Helper()
	for range maxTestSteps {
		res, err := mk().Step(context.Background(), p)
		if err != nil {
			t.Fatalf("Step: %v (progress %+v)", err, p)
		}
		if res.Done {
			return res
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	t.Fatalf("operation did not end within %d steps: %+v", maxTestSteps, p)
	return Result{}
}

// savepointOf returns the savepoint the fake completed for trigger.
func savepointOf(e *env, trigger flinkapi.TriggerID) (flinktest.Snapshot, bool) {
	for _, s := range e.srv.Snapshots() {
		if s.Savepoint && s.TriggerID == trigger {
			return s, true
		}
	}
	return flinktest.Snapshot{}, false
}

// TestStopAnswerLostPastStoreDuration: a stop with savepoint is sent, its
// answer is lost with the caller, and the caller comes back after Flink's
// asynchronous result store forgot the trigger id (5 minutes), within the
// savepoint's deadline (10 minutes). The stop sent again starts a new
// operation, which fails with FlinkJobNotFoundException because the job
// FINISHED with the savepoint of the first one: the job list shows the job
// FINISHED, and its checkpoint history gives the savepoint, which is
// recorded.
func TestStopAnswerLostPastStoreDuration(t *testing.T) {
	ops := map[string]func(e *env, store RestorePointStore) Stepper{
		"Teardown": func(e *env, store RestorePointStore) Stepper {
			return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Store: store, Name: "app/counter"}
		},
		"Stop": func(e *env, _ RestorePointStore) Stepper {
			return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}
		},
		"Upgrade": func(e *env, _ RestorePointStore) Stepper {
			return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		},
	}
	for name, mk := range ops {
		for _, away := range []time.Duration{6 * time.Minute, 9 * time.Minute} {
			t.Run(name+"/"+away.String(), func(t *testing.T) {
				e := newEnv(t)
				store := &MemoryStore{}
				op := func() Stepper { return mk(e, store) }
				var p Progress
				// Up to the step that sends the stop.
				for p.Savepoint.Status.State != savepoint.Pending {
					res, err := op().Step(context.Background(), &p)
					if err != nil || res.Done {
						t.Fatalf("before the stop: %v %+v", err, p)
					}
				}
				trigger := p.Savepoint.Status.TriggerID
				loseAnswer(t, op(), &p)
				e.srv.Clock().Advance(away)
				if _, ok := savepointOf(e, trigger); !ok {
					t.Fatal("the first stop took no savepoint")
				}
				res := resume(t, e, op, &p)
				sp, _ := savepointOf(e, trigger)
				if res.Outcome != OutcomeSucceeded || p.Savepoint.Location != sp.Location {
					t.Fatalf("%s (%s): location %q, want the first stop's savepoint %q", res.Outcome, p.Reason, p.Savepoint.Location, sp.Location)
				}
				switch name {
				case "Teardown":
					if rec, ok, _ := store.Get(context.Background(), "app/counter"); !ok || rec.Location != sp.Location || !p.Teardown.Recorded {
						t.Errorf("recorded %+v (%v), want %s", rec, ok, sp.Location)
					}
				case "Upgrade":
					if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != sp.Location || info.State != flinkapi.JobRunning {
						t.Errorf("new job %+v, want RUNNING from %s", info, sp.Location)
					}
				}
			})
		}
	}
}

// TestStopAnswerLostNothingFound: as above, but Flink shows no checkpoint
// statistics of the job (checkpointing off): nothing can find the
// savepoint. The outcome is never Succeeded for a policy that keeps state,
// and its reason names the trigger time and where the savepoint went.
func TestStopAnswerLostNothingFound(t *testing.T) {
	for _, dir := range []string{"", "s3://bucket/savepoints"} {
		e := newEnv(t)
		e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints", Message: "Checkpointing has not been enabled."})
		op := func() Stepper {
			return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock(), TargetDirectory: dir}, Job: e.job, Store: &MemoryStore{}, Name: "app/counter"}
		}
		var p Progress
		if _, err := op().Step(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
		loseAnswer(t, op(), &p)
		e.srv.Clock().Advance(6 * time.Minute)
		res := resume(t, e, op, &p)
		wantDir := dir
		if dir == "" {
			wantDir = "state.savepoints.dir"
		}
		if res.Outcome != OutcomeSavepointLost || p.Teardown.Recorded || !p.Stopped() ||
			!strings.Contains(p.Reason, stamp(p.Savepoint.Status.TriggerTime)) || !strings.Contains(p.Reason, wantDir) {
			t.Errorf("dir %q: %s (%s), recorded %v, stopped %v", dir, res.Outcome, p.Reason, p.Teardown.Recorded, p.Stopped())
		}
	}
}

// TestUpgradeLastStateTransientCancel: one transient answer to the cancel
// of a last-state upgrade (a 404, or 1.5 s of latency) moves the re-read
// of the checkpoint statistics into Flink's cache of them, which still
// shows the checkpoint observed before the cancel, discarded since. The
// statistics are read only once the cache holds none from before the job
// ended: the final retained checkpoint is the restore point, never a
// discarded one.
func TestUpgradeLastStateTransientCancel(t *testing.T) {
	faults := map[string]flinktest.Fault{
		"404":        {Kind: flinktest.FaultStatus, Status: 404, Times: 1, Route: "PATCH /jobs/:jobid"},
		"latency":    {Kind: flinktest.FaultLatency, Delay: 1500 * time.Millisecond, Times: 1, Route: "PATCH /jobs/:jobid"},
		"reset":      {Kind: flinktest.FaultReset, After: true, Times: 1, Route: "PATCH /jobs/:jobid"},
		"500 after":  {Kind: flinktest.FaultStatus, Status: 500, After: true, Times: 1, Route: "PATCH /jobs/:jobid"},
		"no fault":   {},
		"slow cache": {},
	}
	for name, f := range faults {
		for _, resumed := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				var opts []flinktest.Option
				cache := time.Duration(0)
				if name == "slow cache" {
					opts, cache = append(opts, flinktest.WithRefreshInterval(10*time.Second)), 10*time.Second
				}
				e := newEnv(t, opts...)
				old := retainedJob(t, e)
				if f.Kind != 0 || f.Status != 0 {
					e.inject(t, f)
				}
				mk := func() Stepper {
					return &Upgrade{Env: Env{Client: e.c, Timing: Timing{Cache: cache}, Clock: e.srv.Clock()}, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
				}
				p, res := checkedDrive(t, e, mk, resumed, false)
				if res.Outcome != OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint {
					t.Fatalf("%s (%s): %+v", res.Outcome, p.Reason, p)
				}
				var final flinktest.Snapshot
				for _, s := range e.srv.Snapshots() {
					if s.Job == old && !s.Savepoint && !s.Removed {
						final = s
					}
				}
				if p.Replace.RestoreFrom != final.Location || final.Location == "" {
					t.Errorf("restored from %q, want the retained final checkpoint %q", p.Replace.RestoreFrom, final.Location)
				}
				if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != final.Location || info.State != flinkapi.JobRunning {
					t.Errorf("new job %+v", info)
				}
			})
		}
	}
}

// TestStepRefusesForeignProgress: a Progress of another job or another
// operation, or one with a phase, outcome or format this release does not
// know, is refused with an error before any request, and left as it was.
func TestStepRefusesForeignProgress(t *testing.T) {
	e := newEnv(t)
	other := flinkapi.JobID("ffffffffffffffffffffffffffffffff")
	ops := map[string]func(job flinkapi.JobID) Stepper{
		opTakeSavepoint: func(job flinkapi.JobID) Stepper {
			return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job}
		},
		opStop: func(job flinkapi.JobID) Stepper { return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job} },
		opTeardown: func(job flinkapi.JobID) Stepper {
			return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job}
		},
		opUpgrade: func(job flinkapi.JobID) Stepper {
			return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, JarID: e.jar}
		},
		opRestart: func(job flinkapi.JobID) Stepper {
			return &Restart{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, JarID: e.jar}
		},
		opRescale: func(job flinkapi.JobID) Stepper {
			return &Rescale{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Parallelism: 2}
		},
		opSubmit: func(job flinkapi.JobID) Stepper {
			return &Submit{Env: Env{Client: e.c, Clock: e.srv.Clock()}, JarID: e.jar, JobID: job}
		},
	}
	// A started Progress of each operation, for job e.job.
	started := map[string]Progress{}
	for name, mk := range ops {
		var p Progress
		if _, err := mk(e.job).Step(context.Background(), &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Operation != name || !strings.EqualFold(string(p.Target), string(e.job)) || p.FormatVersion != FormatVersion {
			t.Fatalf("%s: progress not bound: operation %q, target %q, format %d", name, p.Operation, p.Target, p.FormatVersion)
		}
		started[name] = p
	}
	e.srv.ClearRequests()
	type tc struct {
		name string
		p    Progress
		want error
	}
	for name, mk := range ops {
		cases := []tc{
			{"another job", started[name], ErrForeignProgress},
			{"done, naming no operation", Progress{Phase: PhaseDone, Outcome: OutcomeSucceeded}, ErrInvalidProgress},
			{"started, naming no operation", Progress{Phase: PhaseSavepoint, JobID: other}, ErrInvalidProgress},
			{"unknown phase", withPhase(started[name], "Teleport"), ErrInvalidProgress},
			{"unknown outcome", withOutcome(started[name], "Vanished"), ErrInvalidProgress},
			{"outcome without Done", withPhase(withOutcome(started[name], OutcomeSucceeded), PhaseSavepoint), ErrInvalidProgress},
			{"newer format", withFormat(started[name], FormatVersion+1), ErrUnknownFormat},
		}
		for other, q := range started {
			if other != name {
				cases = append(cases, tc{"of " + other, q, ErrForeignProgress})
			}
		}
		for _, c := range cases {
			job := e.job
			if c.name == "another job" {
				job = other
			}
			if name == opSubmit && c.name == "another job" {
				job = other
			}
			before := c.p
			res, err := mk(job).Step(context.Background(), &c.p)
			if !errors.Is(err, c.want) || res.Done {
				t.Errorf("%s, %s: Step = %+v, %v; want %v", name, c.name, res, err, c.want)
			}
			if c.p != before {
				t.Errorf("%s, %s: the refused Progress changed", name, c.name)
			}
		}
	}
	if reqs := e.srv.Requests(); len(reqs) != 0 {
		t.Errorf("refused steps sent %d requests: %v", len(reqs), routes(e.srv))
	}
	// The error of a newer format names the type and the version.
	q := withFormat(started[opTeardown], FormatVersion+1)
	if _, err := ops[opTeardown](e.job).Step(context.Background(), &q); !errors.Is(err, ErrUnknownFormat) ||
		!strings.Contains(err.Error(), fmt.Sprintf("lifecycle.Progress: format version %d", FormatVersion+1)) {
		t.Errorf("Step of a newer format = %v", err)
	}
}

func withPhase(p Progress, ph Phase) Progress    { p.Phase = ph; return p }
func withOutcome(p Progress, o Outcome) Progress { p.Outcome = o; return p }
func withFormat(p Progress, v int) Progress      { p.FormatVersion = v; return p }

// TestTeardownOfEndedJob: a job that had FAILED is named so, and its
// latest retained checkpoint becomes its restore point; without one, a
// policy that keeps state gets no Succeeded; a job stopped by hand with
// a savepoint has that savepoint recorded.
func TestTeardownOfEndedJob(t *testing.T) {
	t.Run("failed, retained checkpoint", func(t *testing.T) {
		for _, resumed := range []bool{false, true} {
			e := newEnv(t)
			old := retainedJob(t, e)
			if err := e.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(time.Minute)
			store := &MemoryStore{}
			p, res := drive(t, e, func() Stepper {
				return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Store: store, Name: "app/failed"}
			}, resumed)
			var final flinktest.Snapshot
			for _, s := range e.srv.Snapshots() {
				if s.Job == old && !s.Removed {
					final = s
				}
			}
			rec, ok, _ := store.Get(context.Background(), "app/failed")
			if res.Outcome != OutcomeSucceeded || p.Replace.RestoreFrom != final.Location || !p.Teardown.Recorded || !ok || rec.Location != final.Location ||
				!rec.Time.Equal(final.Taken) || !strings.Contains(p.Reason, "FAILED") || strings.Contains(p.Reason, "does not know") {
				t.Errorf("%s (%s): restore from %q, want %q; recorded %+v", res.Outcome, p.Reason, p.Replace.RestoreFrom, final.Location, rec)
			}
		}
	})
	t.Run("failed, nothing retained", func(t *testing.T) {
		e := newEnv(t)
		if err := e.srv.FailJob(e.job, "java.lang.RuntimeException: boom"); err != nil {
			t.Fatal(err)
		}
		e.srv.Clock().Advance(time.Minute)
		p, res := drive(t, e, func() Stepper { return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job} }, false)
		if res.Outcome != OutcomeJobTerminal || !p.Stopped() || !strings.Contains(p.Reason, "FAILED") || p.Replace.RestoreFrom != "" {
			t.Errorf("%s (%s), stopped %v", res.Outcome, p.Reason, p.Stopped())
		}
		p, res = drive(t, e, func() Stepper {
			return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Mode: policy.UpgradeStateless}
		}, false)
		if res.Outcome != OutcomeSucceeded || !strings.Contains(p.Reason, "FAILED") {
			t.Errorf("stateless: %s (%s)", res.Outcome, p.Reason)
		}
	})
	t.Run("stopped by hand", func(t *testing.T) {
		e := newEnv(t)
		var hand Progress
		if _, err := Run(context.Background(), &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}, &hand, nil); err != nil || hand.Savepoint.Location == "" {
			t.Fatalf("stop by hand: %v %+v", err, hand)
		}
		e.srv.Clock().Advance(time.Minute)
		store := &MemoryStore{}
		p, res := drive(t, e, func() Stepper {
			return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Store: store, Name: "app/x"}
		}, false)
		if rec, _, _ := store.Get(context.Background(), "app/x"); res.Outcome != OutcomeSucceeded || p.Replace.RestoreFrom != hand.Savepoint.Location || rec.Location != hand.Savepoint.Location {
			t.Errorf("%s (%s): restore from %q, want %q", res.Outcome, p.Reason, p.Replace.RestoreFrom, hand.Savepoint.Location)
		}
	})
}

// TestRetryAdoptsTheNewJob: an Upgrade or Restart that submitted a new
// job and then timed out names it in Progress.Submit.NewJobID; an operation
// started again on the old job with a fresh Progress finds that job and
// adopts it instead of starting a third. One whose new job ended starts
// the next one under the next derived id.
func TestRetryAdoptsTheNewJob(t *testing.T) {
	restartPolicy := policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)}
	ops := map[string]func(e *env, job flinkapi.JobID, tm Timing, latest savepoint.Record) Stepper{
		"Upgrade": func(e *env, job flinkapi.JobID, tm Timing, latest savepoint.Record) Stepper {
			return &Upgrade{Env: Env{Client: e.c, Timing: tm, Clock: e.srv.Clock()}, Job: job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}, Latest: latest}
		},
		"Restart": func(e *env, job flinkapi.JobID, tm Timing, latest savepoint.Record) Stepper {
			return &Restart{Env: Env{Client: e.c, Timing: tm, Clock: e.srv.Clock()}, Job: job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}, Policy: restartPolicy,
				Latest: latest}
		},
	}
	for name, mk := range ops {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			old := retainedJob(t, e)
			if name == "Restart" {
				if err := e.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
					t.Fatal(err)
				}
				e.srv.Clock().Advance(time.Minute)
			}
			// The submission's deadline passes before the new job runs.
			first, res := drive(t, e, func() Stepper { return mk(e, old, Timing{Submit: time.Millisecond}, savepoint.Record{}) }, false)
			if res.Outcome != OutcomeTimedOut || first.Submit.NewJobID == "" || jobsWithID(e, first.Submit.NewJobID) != 1 {
				t.Fatalf("first: %s (%s), new job %q", res.Outcome, first.Reason, first.Submit.NewJobID)
			}
			e.srv.Clock().Advance(10 * time.Second)
			e.srv.ClearRequests()
			// Started again on the old job's id, the Progress lost.
			again, res := drive(t, e, func() Stepper { return mk(e, old, Timing{}, savepoint.Record{}) }, true)
			if res.Outcome != OutcomeSucceeded || !again.Submit.Adopted || again.Submit.NewJobID != first.Submit.NewJobID {
				t.Fatalf("again: %s (%s), adopted %v, new job %q, want %q", res.Outcome, again.Reason, again.Submit.Adopted, again.Submit.NewJobID, first.Submit.NewJobID)
			}
			if n := len(e.srv.Jobs()); n != 3 || count(e.srv, "POST /jars/:jarid/run") != 0 {
				t.Errorf("%d jobs on the cluster (want the main one, the old one and one new), %d jar runs by the retry", n, count(e.srv, "POST /jars/:jarid/run"))
			}
			// The adopted job fails for good: the next operation on the
			// old id passes over it and starts the next derived job.
			if err := e.srv.FailJob(first.Submit.NewJobID, "java.lang.RuntimeException: again"); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(time.Minute)
			if info, _ := e.srv.Job(first.Submit.NewJobID); info.State != flinkapi.JobFailed {
				t.Fatalf("adopted job %s", info.State)
			}
			latest, _ := first.Record() // the upgrade's savepoint, as its caller recorded it
			third, res := drive(t, e, func() Stepper { return mk(e, old, Timing{}, latest) }, false)
			if res.Outcome != OutcomeSucceeded || third.Submit.Adopted || third.Submit.NewJobID == first.Submit.NewJobID || third.Submit.NewJobID != derivedJobID(string(first.Submit.NewJobID)) {
				t.Errorf("third: %s (%s), adopted %v, new job %q", res.Outcome, third.Reason, third.Submit.Adopted, third.Submit.NewJobID)
			}
		})
	}
}

// TestMisconfiguredClientEndsTheStep: an answer that says the client is
// set up wrong for the cluster (401, 403, a redirect to a login page) is
// returned by Step at once, without credentials, instead of being polled
// until the deadline; the Progress keeps what was recorded, so the
// operation resumes once the client is fixed.
func TestMisconfiguredClientEndsTheStep(t *testing.T) {
	answers := map[string]func(w http.ResponseWriter, r *http.Request){
		"401": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) },
		"403": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) },
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://sso.example.com/login?next=flink", http.StatusFound)
		},
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests++
				answer(w, r)
			}))
			defer srv.Close()
			c, err := flinkapi.NewClient(srv.URL, flinkapi.WithBasicAuth("admin", "S3CRET-PASSWORD"))
			if err != nil {
				t.Fatal(err)
			}
			job := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
			clock := flinktest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var p Progress
			res, err := Run(context.Background(), &Teardown{Env: Env{Client: c, Clock: clock}, Job: job}, &p, nil)
			if !errors.Is(err, flinkapi.ErrMisconfigured) || res.Done || p.Done() {
				t.Fatalf("Run = %+v, %v; want an error matching ErrMisconfigured and the operation still open (%+v)", res, err, p)
			}
			if strings.Contains(err.Error(), "S3CRET") || !strings.Contains(err.Error(), "Teardown") {
				t.Errorf("error %q", err)
			}
			if requests != 1 || p.Savepoint.Status.TriggerID == "" || p.Phase != PhaseSavepoint {
				t.Errorf("%d requests, progress %+v", requests, p)
			}
		})
	}
}

// TestSavepointPastDeadlineAfterAbsence: a savepoint is in flight when
// the caller goes away past its deadline, though not past Flink's store
// duration, and the savepoint completes meanwhile. The reads that find out
// what became of it fail now and then: the trigger id is polled first,
// the checkpoint history read after a failed read, up to three reads in
// all. Only when all three fail is the savepoint called timed out.
func TestSavepointPastDeadlineAfterAbsence(t *testing.T) {
	const status, history = "GET /jobs/:jobid/savepoints/:triggerid", "GET /jobs/:jobid/checkpoints"
	cases := []struct {
		name   string
		faults map[string]int // 503s per route after the absence
		want   Outcome
		reads  int // requests after the absence, before the outcome
	}{
		{"poll answers", map[string]int{history: 2}, OutcomeSucceeded, 1},
		{"poll fails, history answers", map[string]int{status: 1}, OutcomeSucceeded, 2},
		{"poll and history fail once", map[string]int{status: 1, history: 1}, OutcomeSucceeded, 3},
		{"every read fails", map[string]int{status: 5, history: 5}, OutcomeTimedOut, 3},
	}
	ops := map[string]func(e *env) Stepper{
		"TakeSavepoint": func(e *env) Stepper {
			return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock(), Timing: Timing{Savepoint: 2 * time.Minute}}, Job: e.job}
		},
		"Stop": func(e *env) Stepper {
			return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock(), Timing: Timing{Savepoint: 2 * time.Minute}}, Job: e.job}
		},
	}
	for name, mk := range ops {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				e := newEnv(t, flinktest.WithSavepointDuration(30*time.Second))
				op := func() Stepper { return mk(e) }
				var p Progress
				for p.Savepoint.Status.State != savepoint.InFlight {
					res, err := op().Step(context.Background(), &p)
					if err != nil || res.Done {
						t.Fatalf("before the absence: %v %+v", err, p)
					}
				}
				e.srv.Clock().Advance(3 * time.Minute) // past the deadline, within the 5-minute store duration
				trigger := p.Savepoint.Status.TriggerID
				sp, ok := savepointOf(e, trigger)
				if !ok {
					t.Fatal("the savepoint did not complete during the absence")
				}
				for route, n := range c.faults {
					e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Route: route, Status: http.StatusServiceUnavailable, Times: n})
				}
				e.srv.ClearRequests()
				for range maxTestSteps {
					res, err := op().Step(context.Background(), &p)
					if err != nil {
						t.Fatal(err)
					}
					if p.Savepoint.Status.Final() || res.Done {
						break
					}
					e.srv.Clock().Advance(res.RequeueAfter)
				}
				if got := len(e.srv.Requests()); got != c.reads {
					t.Errorf("%d requests until the savepoint's end, want %d: %v", got, c.reads, e.srv.Requests())
				}
				res := resume(t, e, op, &p)
				if c.want == OutcomeSucceeded && (p.Savepoint.Location != sp.Location || p.Savepoint.Status.State != savepoint.Succeeded) {
					t.Fatalf("%s (%s): savepoint %s at %q, want Succeeded at %q", res.Outcome, p.Reason, p.Savepoint.Status.State, p.Savepoint.Location, sp.Location)
				}
				if c.want == OutcomeTimedOut && p.Savepoint.Status.State != savepoint.TimedOut {
					t.Fatalf("%s (%s): savepoint %s, want TimedOut", res.Outcome, p.Reason, p.Savepoint.Status.State)
				}
			})
		}
	}
}

// TestUpgradeLastStateStoppedFromOutsideAtCancel: a last-state upgrade
// of a job that has no checkpoint cancels it for its newest savepoint;
// the cancel fails (503) while a stop with a savepoint from outside
// finishes the job. The new job starts from that stop's savepoint, the
// newer state, not from the savepoint chosen before the cancel.
func TestUpgradeLastStateStoppedFromOutsideAtCancel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	old := flinkapi.JobID("00000000000000000000000000000abc")
	args := []string{"--out", "/out2", "--keys", "2", "--rate", "10", "--checkpoint-interval", "0"}
	if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: args}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	taken := func(op flinkapi.Operation) string {
		t.Helper()
		e.srv.Clock().Advance(5 * time.Second)
		res, err := e.c.OperationStatus(ctx, op)
		if err != nil || res.Location == "" {
			t.Fatalf("savepoint: %+v %v", res, err)
		}
		return res.Location
	}
	sp, err := e.c.TriggerSavepoint(ctx, old, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	latest := savepoint.Record{Location: taken(sp), Time: e.srv.Clock().Now().Add(-4 * time.Second), Reason: savepoint.ReasonUser, JobID: old}
	e.srv.Clock().Advance(time.Minute)
	mk := func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Latest: latest, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
			JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}
	var p Progress
	for p.Phase != PhaseCancel {
		if res, err := mk().Step(ctx, &p); err != nil || res.Done {
			t.Fatalf("before the cancel: %v %+v", err, p)
		}
	}
	if p.Replace.RestoreKind != policy.KindSavepoint || p.Replace.RestoreFrom != latest.Location {
		t.Fatalf("cancelling for %s %q, want the savepoint %q", p.Replace.RestoreKind, p.Replace.RestoreFrom, latest.Location)
	}
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 1, Route: "PATCH /jobs/:jobid"})
	stop, err := e.c.StopWithSavepoint(ctx, old, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	stopped := taken(stop)
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != stopped {
		t.Fatalf("the new job started from %q, want the savepoint %q of the stop from outside", info.RestoredFrom, stopped)
	}
}
