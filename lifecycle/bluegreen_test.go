package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// blueGreenArgs are the new job's arguments: the counter job writing to
// another directory, with extra arguments.
func blueGreenArgs(extra ...string) flinkapi.RunJarRequest {
	return flinkapi.RunJarRequest{ProgramArgs: append([]string{"--out", "/out2", "--keys", "2", "--rate", "10"}, extra...)}
}

// windowChecker checks the invariants of the blue/green window after
// every step: at most two live jobs, two only between the savepoint and
// the end; the old job is not stopped before the new one was confirmed
// healthy; the savepoint is recorded before the submission; no third job.
func windowChecker(t *testing.T, e *env) func(Progress) {
	t.Helper()
	return func(p Progress) {
		t.Helper()
		alive, started := 0, 0
		for _, j := range e.srv.Jobs() {
			if j.ID != e.job {
				started++
			}
			if !j.State.IsGloballyTerminal() {
				alive++
			}
		}
		if alive > 2 || alive == 2 && p.Done() && p.Outcome != OutcomeTimedOut {
			t.Fatalf("%d live jobs in phase %s (outcome %s)", alive, p.Phase, p.Outcome)
		}
		if started > 1 {
			t.Fatalf("%d new jobs started", started)
		}
		if info, _ := e.srv.Job(e.job); info.State.IsGloballyTerminal() && p.BlueGreen.Healthy.IsZero() {
			t.Fatalf("the old job is %s before the new one was healthy (phase %s)", info.State, p.Phase)
		}
		if p.Submit.NewJobID != "" && (p.Replace.RestoreFrom == "" || p.Savepoint.Location == "") && !p.Submit.Adopted {
			t.Fatalf("the new job %s was submitted without the savepoint recorded first: %+v", p.Submit.NewJobID, p)
		}
	}
}

func TestBlueGreen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resume  bool
		stopOld StopStrategy
		want    flinkapi.JobState
	}{
		{"cancel", false, "", flinkapi.JobCanceled},
		{"cancel resumed", true, "", flinkapi.JobCanceled},
		{"stop with savepoint", false, StopWithSavepoint, flinkapi.JobFinished},
		{"stop with savepoint resumed", true, StopWithSavepoint, flinkapi.JobFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			before, _ := e.srv.Job(e.job)
			mk := func() Stepper {
				return &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs(), StopOld: tc.stopOld}
			}
			p, res := driveChecking(t, e, mk, tc.resume, windowChecker(t, e))
			if res.Outcome != OutcomeSucceeded || p.Submit.NewJobID == "" || p.BlueGreen.Healthy.IsZero() {
				t.Fatalf("outcome %s (%s), progress %+v", res.Outcome, p.Reason, p)
			}
			if p.Submit.NewJobID == blueGreenJobID(e.job) && derivedJobID(strings.ToLower(string(e.job))) == p.Submit.NewJobID {
				t.Fatal("the blue/green id is Upgrade's")
			}
			old, _ := e.srv.Job(e.job)
			nw, ok := e.srv.Job(p.Submit.NewJobID)
			if old.State != tc.want || !ok || nw.State != flinkapi.JobRunning {
				t.Fatalf("old job %s, new job %s (%v)", old.State, nw.State, ok)
			}
			if nw.RestoredFrom != p.Replace.RestoreFrom || p.Replace.RestoreFrom == "" {
				t.Fatalf("the new job restored from %q, the progress recorded %q", nw.RestoredFrom, p.Replace.RestoreFrom)
			}
			if tc.stopOld == StopWithSavepoint && (p.Savepoint.Location == p.Replace.RestoreFrom || p.Savepoint.Location == "") {
				t.Fatalf("no fallback savepoint: location %q, restore %q", p.Savepoint.Location, p.Replace.RestoreFrom)
			}
			if nw.Events < before.Events {
				t.Fatalf("the new job processed %d, the old had %d before", nw.Events, before.Events)
			}
			if n := count(e.srv, "POST /jars/:jarid/run"); n != 1 {
				t.Fatalf("%d jar runs", n)
			}
		})
	}
}

func TestBlueGreenNoFreeSlots(t *testing.T) {
	e := newEnv(t, flinktest.WithSlots(1))
	op := &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs()}
	p, res := drive(t, e, func() Stepper { return op }, false)
	if res.Outcome != OutcomeBlocked || !contains(p.Reason, "free task slots") || p.Submit.NewJobID != "" {
		t.Fatalf("outcome %s: %s", res.Outcome, p.Reason)
	}
	if n := count(e.srv, "POST /jobs/:jobid/savepoints") + count(e.srv, "POST /jars/:jarid/run"); n != 0 {
		t.Fatalf("%d savepoints or runs sent: %v", n, routes(e.srv))
	}
}

// abortedCleanly checks an aborted blue/green upgrade: the new job ended,
// the old one runs untouched, nothing to adopt.
func abortedCleanly(t *testing.T, e *env, p Progress, want string) {
	t.Helper()
	if p.Outcome != OutcomeBlueGreenAborted || p.Submit.NewJobID != "" || !contains(p.Reason, want) {
		t.Fatalf("outcome %s, new job %q: %s", p.Outcome, p.Submit.NewJobID, p.Reason)
	}
	old, _ := e.srv.Job(e.job)
	if old.State != flinkapi.JobRunning {
		t.Fatalf("the old job is %s", old.State)
	}
	for _, j := range e.srv.Jobs() {
		if j.ID != e.job && !j.State.IsGloballyTerminal() {
			t.Fatalf("the new job %s is %s", j.ID, j.State)
		}
	}
	if n := count(e.srv, "POST /jobs/:jobid/stop"); n != 0 {
		t.Fatalf("%d stops sent", n)
	}
	for _, r := range e.srv.Requests() {
		if r.Route == "PATCH /jobs/:jobid" && strings.Contains(r.Path, string(e.job)) {
			t.Fatalf("the old job was cancelled: %v", routes(e.srv))
		}
	}
}

func TestBlueGreenAborts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		ready func(context.Context, API, flinkapi.JobID) (bool, error)
		fail  bool // fail the new job once it was seen healthy
		want  string
	}{
		{name: "fails to start", args: []string{"--fail-at", "1"}, want: "new job"},
		{name: "never checkpoints", args: []string{"--checkpoint-interval", "36000000"}, want: "no checkpoint completed"},
		{name: "never ready", ready: func(context.Context, API, flinkapi.JobID) (bool, error) { return false, nil }, want: "not ready"},
		{name: "readiness errors", ready: func(context.Context, API, flinkapi.JobID) (bool, error) { return false, errors.New("no metrics") }, want: "no metrics"},
		{name: "fails after healthy", fail: true, want: "after it was seen healthy"},
	} {
		for _, resume := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{true: " resumed"}[resume], func(t *testing.T) {
				e := newEnv(t)
				mk := func() Stepper {
					return &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs(tc.args...),
						Window: 10 * time.Second, Ready: tc.ready}
				}
				check := windowChecker(t, e)
				failed := false
				p, _ := driveChecking(t, e, mk, resume, func(p Progress) {
					check(p)
					if tc.fail && !failed && p.Phase == PhaseConfirmHealthy {
						failed = true
						if err := e.srv.FailJob(p.Submit.NewJobID, "java.lang.RuntimeException: boom"); err != nil {
							t.Fatal(err)
						}
					}
				})
				abortedCleanly(t, e, p, tc.want)
			})
		}
	}
}

func TestBlueGreenReadyLater(t *testing.T) {
	e := newEnv(t)
	calls := 0
	ready := func(_ context.Context, api API, id flinkapi.JobID) (bool, error) {
		calls++
		return calls >= 3, nil
	}
	op := &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs(), Ready: ready}
	p, res := driveChecking(t, e, func() Stepper { return op }, false, windowChecker(t, e))
	if res.Outcome != OutcomeSucceeded || calls != 3 {
		t.Fatalf("outcome %s after %d readiness calls: %s", res.Outcome, calls, p.Reason)
	}
}

func TestBlueGreenSubmitRefused(t *testing.T) {
	e := newEnv(t)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 400, Route: "POST /jars/:jarid/run"})
	op := &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs()}
	p, res := drive(t, e, func() Stepper { return op }, false)
	if res.Outcome != OutcomeSubmitFailed || p.Submit.NewJobID != "" || p.Replace.RestoreFrom == "" {
		t.Fatalf("outcome %s, new job %q: %s", res.Outcome, p.Submit.NewJobID, p.Reason)
	}
	if old, _ := e.srv.Job(e.job); old.State != flinkapi.JobRunning {
		t.Fatalf("the old job is %s", old.State)
	}
}

func TestBlueGreenNotRunning(t *testing.T) {
	e := newEnv(t)
	if err := e.c.CancelJob(context.Background(), e.job); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	op := &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs()}
	p, res := drive(t, e, func() Stepper { return op }, false)
	if res.Outcome != OutcomeBlocked || !contains(p.Reason, "RUNNING") {
		t.Fatalf("outcome %s: %s", res.Outcome, p.Reason)
	}
}

// A BlueGreen started again after its Progress was lost in the window
// adopts the new job instead of starting a third.
func TestBlueGreenLostProgressAdopts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mk := func() *BlueGreen {
		return &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs()}
	}
	var p Progress
	for range maxTestSteps {
		res, err := mk().Step(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Phase == PhaseWaitHealthy || res.Done {
			break
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	if p.Phase != PhaseWaitHealthy {
		t.Fatalf("phase %s: %s", p.Phase, p.Reason)
	}
	first := p.Submit.NewJobID
	p2, res := driveChecking(t, e, func() Stepper { return mk() }, true, windowChecker(t, e))
	if res.Outcome != OutcomeSucceeded || !p2.Submit.Adopted || p2.Submit.NewJobID != first {
		t.Fatalf("outcome %s, adopted %v, new job %s (first %s): %s", res.Outcome, p2.Submit.Adopted, p2.Submit.NewJobID, first, p2.Reason)
	}
	if n := count(e.srv, "POST /jars/:jarid/run"); n != 1 {
		t.Fatalf("%d jar runs", n)
	}
}
