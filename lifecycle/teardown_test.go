package lifecycle

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

func TestRestart(t *testing.T) {
	tests := []struct {
		name    string
		fail    bool // fail the job before the restart
		pol     policy.RestartPolicy
		faults  []flinktest.Fault
		outcome Outcome
	}{
		{name: "failed job restarted from its latest checkpoint", fail: true, pol: policy.RestartPolicy{Mode: policy.RestartFromLatestState}, outcome: OutcomeSucceeded},
		{
			name: "with 503s and a lost run answer", fail: true, pol: policy.RestartPolicy{Mode: policy.RestartFromLatestState}, outcome: OutcomeSucceeded,
			faults: []flinktest.Fault{
				{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid", Times: 2},
				{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", Times: 1, After: true},
			},
		},
		{name: "restart disabled", fail: true, outcome: OutcomeBlocked},
		{name: "running job: nothing to do", pol: policy.RestartPolicy{Mode: policy.RestartFromLatestState}, outcome: OutcomeNotNeeded},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			name := tt.name
			if resume {
				name += "/resumed"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				ctx := context.Background()
				old := flinkapi.JobID("00000000000000000000000000000abc")
				if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
					FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
					t.Fatal(err)
				}
				e.srv.Clock().Advance(5 * time.Second)
				if tt.fail {
					if err := e.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
						t.Fatal(err)
					}
					e.srv.Clock().Advance(time.Minute) // past the backoff
				}
				before, _ := e.srv.Job(old)
				if tt.fail && before.State != flinkapi.JobFailed {
					t.Fatalf("old job %s", before.State)
				}
				e.srv.ClearRequests()
				for _, f := range tt.faults {
					e.inject(t, f)
				}
				mk := func() Stepper {
					return &Restart{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Policy: tt.pol, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
				}
				p, res := checkedDrive(t, e, mk, resume, false)
				t.Logf("%s after %d steps (%s): %s", res.Outcome, p.Steps, p.Replace.Decision, p.Reason)
				if res.Outcome != tt.outcome {
					t.Fatalf("outcome %s (%s), want %s", res.Outcome, p.Reason, tt.outcome)
				}
				if res.Outcome != OutcomeSucceeded {
					if len(e.srv.Jobs()) != 2 || count(e.srv, "POST /jars/:jarid/run") != 0 {
						t.Errorf("a job was started: %v", routes(e.srv))
					}
					return
				}
				if p.JobID == old || jobsWithID(e, p.JobID) != 1 || len(e.srv.Jobs()) != 3 {
					t.Errorf("jobs %+v", e.srv.Jobs())
				}
				info, _ := e.srv.Job(p.JobID)
				if p.Replace.RestoreKind != policy.KindCheckpoint || info.RestoredFrom != p.Replace.RestoreFrom || info.State != flinkapi.JobRunning {
					t.Errorf("new job %+v, progress %+v", info, p)
				}
				e.srv.Clock().Advance(3 * time.Second)
				info, _ = e.srv.Job(p.JobID)
				if info.Events <= before.Events/2 {
					t.Errorf("new job has %d events, old %d: state not restored", info.Events, before.Events)
				}
			})
		}
	}
}

func TestTeardown(t *testing.T) {
	tests := []struct {
		name     string
		mode     policy.UpgradeMode
		allow    bool
		faults   func(e *env) []flinktest.Fault
		outcome  Outcome
		recorded bool
		jobState flinkapi.JobState
		cancels  int
		retried  bool // more than one savepoint triggered
	}{
		{name: "stop with savepoint, recorded", outcome: OutcomeSucceeded, recorded: true, jobState: flinkapi.JobFinished},
		{
			// Tried again until Timing.Savepoint has passed.
			name: "savepoint fails: left running", outcome: OutcomeLeftRunning, jobState: flinkapi.JobRunning, retried: true,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job}}
			},
		},
		{
			name: "savepoint fails: cancelled as the policy allows", allow: true, outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, cancels: 1, retried: true,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job}}
			},
		},
		{
			// Flink's answers about the stop never come: the job is not
			// cancelled (the stop itself ends it here).
			name: "savepoint times out: not cancelled, bounded time", outcome: OutcomeLeftRunning,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{
					{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/savepoints/:triggerid"},
					{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/checkpoints"},
				}
			},
		},
		{
			// The stop completed but its status never answers: at the
			// deadline the savepoint is found in the checkpoint history.
			name: "savepoint status never answers: found at the deadline", outcome: OutcomeSucceeded, recorded: true, jobState: flinkapi.JobFinished,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/savepoints/:triggerid"}}
			},
		},
		{
			name: "job fails while stopping: recorded, then cancelled", outcome: OutcomeSucceeded, recorded: true, cancels: 1,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultJobFailsWhileStopping, Job: e.job, Times: 1}}
			},
		},
		{
			name: "503 burst and JobManager restart", outcome: OutcomeSucceeded, recorded: true, jobState: flinkapi.JobFinished,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{
					{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/stop", Times: 3},
					{Kind: flinktest.FaultRestart, Route: "POST /jobs/:jobid/stop", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}},
				}
			},
		},
		{name: "stateless: cancelled", mode: policy.UpgradeStateless, outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, cancels: 1},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			name := tt.name
			if resume {
				name += "/resumed"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				if tt.faults != nil {
					for _, f := range tt.faults(e) {
						e.inject(t, f)
					}
				}
				store, err := NewFileStore(filepath.Join(t.TempDir(), "store"))
				if err != nil {
					t.Fatal(err)
				}
				start := e.srv.Clock().Now()
				mk := func() Stepper {
					return &Teardown{Env: Env{Client: e.c, Timing: Timing{Savepoint: 2 * time.Minute, Stop: time.Minute}, Clock: e.srv.Clock()}, Job: e.job, Mode: tt.mode, AllowCancelWithoutState: tt.allow, Store: store, Name: "app/counter"}
				}
				p, res := checkedDrive(t, e, mk, resume, tt.mode == policy.UpgradeStateless || tt.allow)
				t.Logf("%s after %d steps: %s", res.Outcome, p.Steps, p.Reason)
				if res.Outcome != tt.outcome {
					t.Fatalf("outcome %s (%s), want %s", res.Outcome, p.Reason, tt.outcome)
				}
				if took := e.srv.Clock().Now().Sub(start); took > 5*time.Minute {
					t.Errorf("teardown took %v", took)
				}
				rec, ok, err := store.Get(context.Background(), "app/counter")
				if err != nil || ok != tt.recorded || tt.recorded && (rec.Location != p.Savepoint.Location || rec.Time.IsZero()) {
					t.Errorf("stored %+v, %v, %v; progress location %q", rec, ok, err, p.Savepoint.Location)
				}
				if tt.recorded {
					if ok, _ := e.srv.SavepointExists(p.Savepoint.Location); !ok {
						t.Errorf("savepoint %s does not exist", p.Savepoint.Location)
					}
				}
				if tt.jobState != "" {
					if info, _ := e.srv.Job(e.job); info.State != tt.jobState {
						t.Errorf("job is %s, want %s", info.State, tt.jobState)
					}
				}
				if n := count(e.srv, "PATCH /jobs/:jobid"); n != tt.cancels {
					t.Errorf("%d cancels, want %d", n, tt.cancels)
				}
				if ids, _ := triggerIDs(t, e.srv); tt.mode != policy.UpgradeStateless && ((len(ids) > 1) != tt.retried || len(ids) == 0) {
					t.Errorf("trigger ids %v", ids)
				}
			})
		}
	}
}

// TestRedeploy tears a job down into a store and deploys it again by
// name: the new job continues from the stored savepoint; a stored
// savepoint older than the maximum age is not used.
func TestRedeploy(t *testing.T) {
	for _, resume := range []bool{false, true} {
		e := newEnv(t)
		store := &MemoryStore{}
		td, _ := checkedDrive(t, e, func() Stepper {
			return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Store: store, Name: "app/counter"}
		}, resume, false)
		if td.Outcome != OutcomeSucceeded || !td.Teardown.Recorded {
			t.Fatalf("teardown %+v", td)
		}
		before, _ := e.srv.Job(e.job)
		e.srv.Clock().Advance(time.Hour)
		deploy := func(maxAge time.Duration, allowEmpty bool, id flinkapi.JobID) Progress {
			p, _ := checkedDrive(t, e, func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Store: store, Name: "app/counter", JarID: e.jar, JobID: id,
					Policy: policy.UpdatePolicy{MaxStateAge: policy.Duration(maxAge), AllowStartWithoutState: allowEmpty},
					Run:    flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}, resume, false)
			return p
		}
		p := deploy(2*time.Hour, false, "")
		if p.Outcome != OutcomeSucceeded || p.Replace.RestoreFrom != td.Savepoint.Location {
			t.Fatalf("redeploy %s (%s): restore from %q, want %q", p.Outcome, p.Reason, p.Replace.RestoreFrom, td.Savepoint.Location)
		}
		e.srv.Clock().Advance(2 * time.Second)
		if info, _ := e.srv.Job(p.JobID); info.RestoredFrom != td.Savepoint.Location || info.Events <= before.Events {
			t.Errorf("redeployed job %+v; old had %d events", info, before.Events)
		}
		// A second deploy of the name, with a Progress of its own, finds
		// the job the first started under the name's id: nothing shows it
		// started it (another deployment of the name may have), so it
		// names the job and starts nothing.
		if again := deploy(2*time.Hour, false, ""); again.Outcome != OutcomeForeignJob || again.Submit.Adopted || again.Submit.NewJobID != "" ||
			again.Replace.Observed.Adopt != p.Submit.NewJobID || jobsWithID(e, p.Submit.NewJobID) != 1 || len(e.srv.Jobs()) != 2 {
			t.Errorf("second redeploy: %s (%s), adopted %v, new job %s, named %s, first %s", again.Outcome, again.Reason, again.Submit.Adopted, again.Submit.NewJobID,
				again.Replace.Observed.Adopt, p.Submit.NewJobID)
		}
		// Too old (as another deployment, with its own job id): blocked,
		// or started empty where the policy allows it.
		if p := deploy(30*time.Minute, false, "00000000000000000000000000000001"); p.Outcome != OutcomeBlocked || p.Replace.Decision != policy.ReasonNoRecentState {
			t.Errorf("stale redeploy: %s (%s) %s", p.Outcome, p.Replace.Decision, p.Reason)
		}
		if p := deploy(30*time.Minute, true, "00000000000000000000000000000002"); p.Outcome != OutcomeSucceeded || p.Replace.RestoreFrom != "" || p.Replace.Decision != policy.ReasonStartWithoutState {
			t.Errorf("stale redeploy allowed empty: %s (%s) %s", p.Outcome, p.Replace.Decision, p.Reason)
		}
	}
}

func TestDisposeSavepoints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []flinktest.Fault
	}{
		{name: "plain"},
		{name: "503, reset and JobManager restart", faults: []flinktest.Fault{
			{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /savepoint-disposal", Times: 1},
			{Kind: flinktest.FaultReset, Route: "POST /savepoint-disposal", Times: 1, After: true},
			{Kind: flinktest.FaultRestart, Route: "GET /savepoint-disposal/:triggerid", Times: 1, Restart: flinktest.RestartOptions{HA: true}},
		}},
	} {
		for _, resume := range []bool{false, true} {
			name := tc.name
			if resume {
				name += "/resumed"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				var h savepoint.History
				for range 4 {
					p, _ := drive(t, e, func() Stepper {
						return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Reason: savepoint.ReasonScheduled}
					}, false)
					rec, _ := p.Record()
					h = h.Add(rec)
					e.srv.Clock().Advance(10 * time.Second)
				}
				for _, f := range tc.faults {
					e.inject(t, f)
				}
				op := func() *DisposeSavepoints {
					return &DisposeSavepoints{Env: Env{Client: e.c, Timing: Timing{Stop: time.Minute}, Clock: e.srv.Clock()}, History: h, Retention: savepoint.RetentionOptions{MaxCount: 2}}
				}
				p, res := drive(t, e, func() Stepper { return op() }, resume)
				t.Logf("%s after %d steps: %s", res.Outcome, p.Steps, p.Reason)
				chosen := op().Chosen(&p)
				if res.Outcome != OutcomeSucceeded || len(chosen) != 2 || p.Dispose.Disposed != 2 {
					t.Fatalf("%s (%s): chosen %v, disposed %d", res.Outcome, p.Reason, chosen, p.Dispose.Disposed)
				}
				for i, r := range h.Records {
					ok, err := e.srv.SavepointExists(r.Location)
					if err != nil || ok != (i >= 2) {
						t.Errorf("savepoint %d %s exists: %v, %v", i, r.Location, ok, err)
					}
				}
			})
		}
	}
}

// TestDisposeSavepointsFailure checks that a savepoint Flink cannot
// dispose of ends the operation DisposeFailed, naming it, after the others
// were disposed of.
func TestDisposeSavepointsFailure(t *testing.T) {
	e := newEnv(t)
	start := e.srv.Clock().Now()
	// A record of a savepoint whose files are gone counts as disposed of,
	// named in the reason; one Flink refuses to dispose of fails.
	refused := savepoint.Record{Location: "file:/tmp/flinktest/savepoints/savepoint-000000-000000000001", Time: start.Add(-2 * time.Hour), Reason: savepoint.ReasonScheduled}
	gone := savepoint.Record{Location: "file:/tmp/flinktest/savepoints/savepoint-000000-000000000000", Time: start.Add(-time.Hour), Reason: savepoint.ReasonScheduled}
	h := savepoint.History{}.Add(refused).Add(gone)
	for range 3 {
		p, _ := drive(t, e, func() Stepper {
			return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Reason: savepoint.ReasonScheduled}
		}, false)
		rec, _ := p.Record()
		h = h.Add(rec)
	}
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 400, Times: 1, Route: "POST /savepoint-disposal", Message: "refused by the test"})
	var transitions []Transition
	op := &DisposeSavepoints{Env: Env{Client: e.c, Clock: e.srv.Clock(), OnTransition: func(tr Transition) { transitions = append(transitions, tr) }}, History: h, Retention: savepoint.RetentionOptions{MaxCount: 1}}
	p, res := drive(t, e, func() Stepper { return op }, false)
	if res.Outcome != OutcomeDisposeFailed || p.Dispose.Disposed != 4 || p.Dispose.Failed != 1 || !contains(p.Reason, gone.Location+": already gone") ||
		!contains(p.Reason, refused.Location+": 400: refused by the test") {
		t.Fatalf("%s: %+v", res.Outcome, p)
	}
	for _, r := range h.Records[2:4] {
		if ok, _ := e.srv.SavepointExists(r.Location); ok {
			t.Errorf("%s not disposed of", r.Location)
		}
	}
	if ok, _ := e.srv.SavepointExists(h.Records[4].Location); !ok {
		t.Errorf("the newest savepoint %s was disposed of", h.Records[4].Location)
	}
	if len(transitions) == 0 || transitions[len(transitions)-1].Outcome != OutcomeDisposeFailed {
		t.Errorf("transitions %+v", transitions)
	}
}
