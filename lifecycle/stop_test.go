package lifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

func TestChooseStopStrategy(t *testing.T) {
	v := func(s string) flinkapi.Version {
		x, err := flinkapi.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	tests := []struct {
		v     flinkapi.Version
		mode  policy.UpgradeMode
		force StopStrategy
		want  StopStrategy
		err   error
	}{
		{v: v("1.20.5"), mode: policy.UpgradeSavepoint, want: StopWithSavepoint},
		{v: flinkapi.Version{}, mode: "", want: StopWithSavepoint},
		{v: v("1.8.3"), mode: policy.UpgradeLastState, want: CancelWithSavepoint},
		{v: v("2.3.0"), mode: policy.UpgradeStateless, want: CancelWithoutState},
		{v: v("2.3.0"), mode: policy.UpgradeStateless, force: StopWithSavepoint, want: StopWithSavepoint},
		{v: v("1.20.5"), mode: policy.UpgradeSavepoint, force: SavepointThenCancel, want: SavepointThenCancel},
		{v: v("1.20.5"), mode: policy.UpgradeSavepoint, force: CancelWithSavepoint, want: CancelWithSavepoint},
		{v: v("1.20.5"), mode: policy.UpgradeSavepoint, force: CancelWithoutState, err: ErrStateRequired},
		{v: v("1.20.5"), mode: policy.UpgradeLastState, force: CancelWithoutState, err: ErrStateRequired},
		{v: v("1.20.5"), mode: "", force: CancelWithoutState, err: ErrStateRequired},
		{v: v("1.20.5"), mode: policy.UpgradeStateless, force: CancelWithoutState, want: CancelWithoutState},
		{v: v("1.20.5"), mode: policy.UpgradeSavepoint, force: "Kill", err: ErrUnknownStrategy},
	}
	for _, tt := range tests {
		got, err := ChooseStopStrategy(tt.v, tt.mode, tt.force)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ChooseStopStrategy(%s, %q, %q) = %q, %v; want %q, %v", tt.v, tt.mode, tt.force, got, err, tt.want, tt.err)
		}
	}
}

// TestStopRefusesWithoutState checks invariant 1: a job whose policy keeps
// state is never cancelled without a savepoint, and nothing is sent.
func TestStopRefusesWithoutState(t *testing.T) {
	e := newEnv(t)
	for _, mode := range []policy.UpgradeMode{"", policy.UpgradeSavepoint, policy.UpgradeLastState} {
		var p Progress
		op := &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Mode: mode, Strategy: CancelWithoutState}
		if _, err := op.Step(context.Background(), &p); !errors.Is(err, ErrStateRequired) {
			t.Errorf("mode %q: err = %v, want ErrStateRequired", mode, err)
		}
		if p != (Progress{}) {
			t.Errorf("mode %q: progress changed: %+v", mode, p)
		}
	}
	// A Stateless stop resumed under a policy that now keeps state refuses too.
	var p Progress
	op := &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Mode: policy.UpgradeStateless}
	if _, err := op.Step(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	op.Mode = policy.UpgradeSavepoint
	if _, err := op.Step(context.Background(), &p); !errors.Is(err, ErrStateRequired) {
		t.Errorf("resumed with Savepoint mode: err = %v, want ErrStateRequired", err)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d requests sent: %v", n, routes(e.srv))
	}
	if info, _ := e.srv.Job(e.job); info.State != flinkapi.JobRunning {
		t.Errorf("job is %s", info.State)
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		name     string
		strategy StopStrategy
		mode     policy.UpgradeMode
		drain    bool
		faults   func(e *env) []flinktest.Fault
		opts     []flinktest.Option
		outcome  Outcome
		jobState flinkapi.JobState // the fake's job state at the end
		location bool
		cancels  int           // cancel requests expected; -1: any
		poll     time.Duration // Timing.Poll, if set
	}{
		{name: "stop with savepoint", strategy: StopWithSavepoint, outcome: OutcomeSucceeded, jobState: flinkapi.JobFinished, location: true},
		{name: "stop with savepoint, drain", strategy: StopWithSavepoint, drain: true, outcome: OutcomeSucceeded, jobState: flinkapi.JobFinished, location: true},
		{name: "chosen by version and policy", outcome: OutcomeSucceeded, jobState: flinkapi.JobFinished, location: true},
		{
			name: "stop: 503 burst and reset on the trigger", strategy: StopWithSavepoint,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{
					{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/stop", Times: 2},
					{Kind: flinktest.FaultReset, Route: "POST /jobs/:jobid/stop", Times: 1, After: true},
				}
			},
			outcome: OutcomeSucceeded, jobState: flinkapi.JobFinished, location: true,
		},
		{
			name: "job fails while stopping: location kept", strategy: StopWithSavepoint,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultJobFailsWhileStopping, Job: e.job, Times: 1, Cause: "java.lang.RuntimeException: boom"}}
			},
			outcome: OutcomeJobFailedWhileStopping, jobState: "", location: true,
		},
		{
			name: "stop's savepoint fails: the job keeps running", strategy: StopWithSavepoint,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job, Times: 1}}
			},
			outcome: OutcomeSavepointFailed, jobState: flinkapi.JobRunning,
		},
		{
			// The stop completed and the job FINISHED before the restart;
			// the new JobManager knows neither the trigger nor the job, so
			// the location cannot be learnt: a named outcome, no cancel.
			// The stop completes at once, so the first poll is answered
			// COMPLETED before the restart.
			name: "stop: JobManager restart after the stop completed", strategy: StopWithSavepoint,
			opts: []flinktest.Option{flinktest.WithSavepointDuration(0)},
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}}}
			},
			outcome: OutcomeJobGone, cancels: 0,
		},
		{
			// The restart aborts the stop's savepoint and recovers the job;
			// the trigger is re-sent with the same id.
			name: "stop: JobManager restart on the trigger", strategy: StopWithSavepoint,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "POST /jobs/:jobid/stop", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}}}
			},
			outcome: OutcomeSucceeded, jobState: flinkapi.JobFinished, location: true, cancels: 0,
		},
		{
			name: "savepoint then cancel: JobManager restart, no cancel", strategy: SavepointThenCancel,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}}}
			},
			// The recovered job was restored after the trigger: the
			// savepoint was aborted, which the checkpoint statistics
			// show, and the job is not cancelled without one.
			outcome: OutcomeSavepointLost, jobState: flinkapi.JobRunning, cancels: 0,
		},
		{name: "cancel with savepoint", strategy: CancelWithSavepoint, outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, location: true},
		{name: "savepoint then cancel", strategy: SavepointThenCancel, outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, location: true, cancels: 1},
		{
			name: "savepoint then cancel: savepoint fails, no cancel", strategy: SavepointThenCancel,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job, Times: 1}}
			},
			outcome: OutcomeSavepointFailed, jobState: flinkapi.JobRunning, cancels: 0,
		},
		{
			name: "savepoint then cancel: cancel answer lost", strategy: SavepointThenCancel,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultReset, Route: "PATCH /jobs/:jobid", Times: 1, After: true}}
			},
			outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, location: true, cancels: 1,
		},
		{
			name: "savepoint then cancel: cancel refused with 503", strategy: SavepointThenCancel,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 503, Route: "PATCH /jobs/:jobid", Times: 2}}
			},
			outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, location: true, cancels: 3,
		},
		{name: "stateless cancel", mode: policy.UpgradeStateless, outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, cancels: 1},
		{
			// The JobManager restarts while the job is CANCELLING and
			// recovers it: the job runs again and is cancelled again.
			// (A Poll of 50 ms reads the state before the fake's cancel
			// of 100 ms completes.)
			name: "stateless cancel: JobManager restart recovers the job", mode: policy.UpgradeStateless, poll: 50 * time.Millisecond,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/status", Times: 1, Restart: flinktest.RestartOptions{HA: true}}}
			},
			outcome: OutcomeSucceeded, jobState: flinkapi.JobCanceled, cancels: 2,
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
					return &Stop{Env: Env{Client: e.c, Timing: Timing{Savepoint: 2 * time.Minute, Stop: time.Minute, Poll: tt.poll}, Clock: e.srv.Clock()}, Job: e.job, Mode: tt.mode, Strategy: tt.strategy, Drain: tt.drain}
				}
				p, res := drive(t, e, mk, resume)
				t.Logf("%s after %d steps: %s", res.Outcome, p.Steps, p.Reason)
				if res.Outcome != tt.outcome {
					t.Fatalf("outcome %s (%s), want %s", res.Outcome, p.Reason, tt.outcome)
				}
				if (p.Savepoint.Location != "") != tt.location {
					t.Fatalf("location %q, want one: %v", p.Savepoint.Location, tt.location)
				}
				if tt.location {
					if ok, err := e.srv.SavepointExists(p.Savepoint.Location); err != nil || !ok {
						t.Errorf("savepoint %s does not exist: %v", p.Savepoint.Location, err)
					}
					if rec, ok := p.Record(); !ok || rec.Location != p.Savepoint.Location {
						t.Errorf("Record = %+v, %v", rec, ok)
					}
				}
				if p.Stop.Strategy != CancelWithoutState {
					if ids, _ := triggerIDs(t, e.srv); len(ids) != 1 {
						t.Errorf("trigger ids %v, want one", ids)
					}
				}
				if tt.jobState != "" {
					if info, _ := e.srv.Job(e.job); info.State != tt.jobState {
						t.Errorf("job is %s, want %s", info.State, tt.jobState)
					}
				}
				for _, r := range e.srv.Requests() {
					if r.Route == "POST /jobs/:jobid/stop" && contains(r.Body, `"drain":true`) != tt.drain {
						t.Errorf("stop body %s, drain %v", r.Body, tt.drain)
					}
				}
				if tt.cancels >= 0 {
					if n := count(e.srv, "PATCH /jobs/:jobid"); n != tt.cancels {
						t.Errorf("%d cancel requests, want %d: %v", n, tt.cancels, routes(e.srv))
					}
				}
			})
		}
	}
}

func TestStopResumeEqualsRun(t *testing.T) {
	for _, strategy := range []StopStrategy{StopWithSavepoint, CancelWithSavepoint, SavepointThenCancel} {
		t.Run(string(strategy), func(t *testing.T) {
			var got [2][]string
			var prog [2]Progress
			for i, resume := range []bool{false, true} {
				e := newEnv(t)
				e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 3, Probability: 0.3})
				mk := func() Stepper {
					return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Strategy: strategy}
				}
				prog[i], _ = drive(t, e, mk, resume)
				got[i] = routes(e.srv)
			}
			if !slices.Equal(got[0], got[1]) {
				t.Errorf("requests differ:\nrun:     %v\nresumed: %v", got[0], got[1])
			}
			a, b := prog[0], prog[1]
			if a.Outcome != OutcomeSucceeded || a.Outcome != b.Outcome || a.Steps != b.Steps || a.Savepoint.Location == "" || b.Savepoint.Location == "" {
				t.Errorf("progress differs:\nrun:     %+v\nresumed: %+v", a, b)
			}
		})
	}
}
