package lifecycle

import (
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/savepoint"
)

func TestTakeSavepoint(t *testing.T) {
	tests := []struct {
		name    string
		opts    []flinktest.Option
		faults  func(e *env) []flinktest.Fault
		outcome Outcome
		state   savepoint.State
		// triggers is the number of trigger requests expected, all with
		// one trigger id.
		triggers  int
		location  bool
		recovered bool
	}{
		{name: "plain", outcome: OutcomeSucceeded, state: savepoint.Succeeded, triggers: 1, location: true},
		{
			name: "503 burst on trigger",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/savepoints", Times: 3}}
			},
			outcome: OutcomeSucceeded, state: savepoint.Succeeded, triggers: 4, location: true,
		},
		{
			name: "connection reset after the trigger took effect",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultReset, Route: "POST /jobs/:jobid/savepoints", Times: 2, After: true}}
			},
			outcome: OutcomeSucceeded, state: savepoint.Succeeded, triggers: 3, location: true,
		},
		{
			name: "503 burst on polls",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 4}}
			},
			outcome: OutcomeSucceeded, state: savepoint.Succeeded, triggers: 1, location: true,
		},
		{
			name: "result expired: recovered from the checkpoint history",
			opts: []flinktest.Option{flinktest.WithStoreDuration(time.Millisecond)},
			faults: func(e *env) []flinktest.Fault {
				// The first polls fail until the result has expired.
				return []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 3}}
			},
			outcome: OutcomeSucceeded, state: savepoint.Succeeded, triggers: 1, location: true, recovered: true,
		},
		{
			// The recovered job was restored after the trigger, which
			// aborted the savepoint: a named outcome at once, not a wait
			// for the deadline.
			name: "JobManager restart forgets the trigger id",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}}}
			},
			outcome: OutcomeSavepointLost, state: savepoint.LostForGood, triggers: 1,
		},
		{
			name: "JobManager restart without HA forgets the job",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1, After: true}}
			},
			outcome: OutcomeJobGone, state: savepoint.JobGone, triggers: 1,
		},
		{
			name: "savepoint fails",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job, Times: 1, Cause: "Checkpoint was declined."}}
			},
			outcome: OutcomeSavepointFailed, state: savepoint.Failed, triggers: 1,
		},
		{
			name: "trigger never answers: deadline",
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/savepoints"}}
			},
			outcome: OutcomeTimedOut, state: savepoint.TimedOut, triggers: -1,
		},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			name := tt.name
			if resume {
				name += "/resumed"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, tt.opts...)
				if tt.faults != nil {
					for _, f := range tt.faults(e) {
						e.inject(t, f)
					}
				}
				mk := func() Stepper {
					return &TakeSavepoint{Env: Env{Client: e.c, Timing: Timing{Savepoint: 2 * time.Minute}, Clock: e.srv.Clock()}, Job: e.job}
				}
				p, res := drive(t, e, mk, resume)
				t.Logf("%s after %d steps: %s", res.Outcome, p.Steps, p.Reason)
				if res.Outcome != tt.outcome || p.Savepoint.Status.State != tt.state {
					t.Fatalf("outcome %s, state %s; want %s, %s (reason %q)", res.Outcome, p.Savepoint.Status.State, tt.outcome, tt.state, p.Reason)
				}
				ids, n := triggerIDs(t, e.srv)
				if len(ids) != 1 || ids[0] != string(p.Savepoint.Status.TriggerID) {
					t.Errorf("trigger ids %v, want only %s", ids, p.Savepoint.Status.TriggerID)
				}
				if tt.triggers >= 0 && n != tt.triggers {
					t.Errorf("%d trigger requests, want %d: %v", n, tt.triggers, routes(e.srv))
				}
				if (p.Savepoint.Location != "") != tt.location || p.Savepoint.Location != p.Savepoint.Status.Location {
					t.Errorf("location %q (status %q), want one: %v", p.Savepoint.Location, p.Savepoint.Status.Location, tt.location)
				}
				if tt.location {
					if ok, err := e.srv.SavepointExists(p.Savepoint.Location); err != nil || !ok {
						t.Errorf("savepoint %s does not exist: %v", p.Savepoint.Location, err)
					}
					if _, ok := p.Record(); !ok {
						t.Error("Record: none")
					}
				}
				if p.Savepoint.Status.Recovered != tt.recovered {
					t.Errorf("Recovered = %v, want %v", p.Savepoint.Status.Recovered, tt.recovered)
				}
				if p.Reason == "" {
					t.Error("no reason")
				}
			})
		}
	}
}

// TestTakeSavepointResumeEqualsRun checks that a caller restarted after
// every step sends the same requests and ends the same way as one that
// was never interrupted.
func TestTakeSavepointResumeEqualsRun(t *testing.T) {
	faults := []flinktest.Fault{
		{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/savepoints", Times: 2},
		{Kind: flinktest.FaultReset, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1},
	}
	var got [2][]string
	var prog [2]Progress
	for i, resume := range []bool{false, true} {
		e := newEnv(t)
		for _, f := range faults {
			e.inject(t, f)
		}
		mk := func() Stepper { return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job} }
		prog[i], _ = drive(t, e, mk, resume)
		got[i] = routes(e.srv)
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("requests differ:\nrun:     %v\nresumed: %v", got[0], got[1])
	}
	a, b := prog[0], prog[1]
	if a.Outcome != b.Outcome || a.Steps != b.Steps || a.Savepoint.Status.State != b.Savepoint.Status.State || (a.Savepoint.Location == "") != (b.Savepoint.Location == "") {
		t.Errorf("progress differs:\nrun:     %+v\nresumed: %+v", a, b)
	}
}

// TestSavepointRightAfterSubmit takes a savepoint (and stops with one) of a
// job that is RUNNING before its tasks are: Flink refuses the first
// trigger, and the operation triggers again with a new trigger id until
// the tasks run.
func TestSavepointRightAfterSubmit(t *testing.T) {
	for _, stop := range []bool{false, true} {
		e := newEnv(t)
		sub, _ := drive(t, e, func() Stepper {
			return &Submit{Env: Env{Client: e.c, Timing: Timing{Poll: 50 * time.Millisecond}, Clock: e.srv.Clock()}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs()}}
		}, false)
		if sub.Outcome != OutcomeSucceeded {
			t.Fatalf("submit: %+v", sub)
		}
		e.srv.ClearRequests()
		mk := func() Stepper {
			if stop {
				return &Stop{Env: Env{Client: e.c, Timing: Timing{Poll: 50 * time.Millisecond}, Clock: e.srv.Clock()}, Job: sub.JobID}
			}
			return &TakeSavepoint{Env: Env{Client: e.c, Timing: Timing{Poll: 50 * time.Millisecond}, Clock: e.srv.Clock()}, Job: sub.JobID}
		}
		p, res := drive(t, e, mk, true)
		if res.Outcome != OutcomeSucceeded || p.Savepoint.Location == "" {
			t.Fatalf("stop %v: outcome %s: %s", stop, res.Outcome, p.Reason)
		}
		ids, n := triggerIDs(t, e.srv)
		if len(ids) < 2 || n != len(ids) {
			t.Errorf("stop %v: %d trigger ids in %d triggers; want a new id for each trigger after the refused first", stop, len(ids), n)
		}
		if p.Requests != 0 {
			t.Errorf("requests %d after the savepoint", p.Requests)
		}
	}
}

// TestTakeSavepointTransitions checks that TakeSavepoint reports its
// changes of phase, ending with the savepoint's location.
func TestTakeSavepointTransitions(t *testing.T) {
	e := newEnv(t)
	var got []Transition
	p, _ := drive(t, e, func() Stepper {
		return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock(), OnTransition: func(tr Transition) { got = append(got, tr) }}, Job: e.job}
	}, false)
	if len(got) != 2 || got[0].To != PhaseSavepoint || got[1].To != PhaseDone || got[1].Location != p.Savepoint.Location || got[1].Operation != "TakeSavepoint" {
		t.Errorf("transitions %+v", got)
	}
}
