package lifecycle

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// checkedDrive is drive with invariants checked after every step: a
// location once seen is kept, and a stateful job is cancelled only after a
// restore point is recorded (stateless: the policy allows none): the
// Progress stored before the step that sends a cancel names one.
func checkedDrive(t *testing.T, e *env, mk func() Stepper, resume, stateless bool) (Progress, Result) {
	t.Helper()
	location := ""
	var before Progress
	cancels := count(e.srv, "PATCH /jobs/:jobid")
	return driveChecking(t, e, mk, resume, func(p Progress) {
		if location != "" && p.Savepoint.Location != location {
			t.Fatalf("location %q dropped: %+v", location, p)
		}
		location = p.Savepoint.Location
		if n := count(e.srv, "PATCH /jobs/:jobid"); n > cancels && !stateless && before.Replace.RestoreFrom == "" && before.Savepoint.Location == "" {
			t.Fatalf("the job was cancelled without a restore point recorded before: %+v\n%v", before, routes(e.srv))
		} else {
			cancels = n
		}
		before = p
	})
}

// jobsWithID counts the jobs with id.
func jobsWithID(e *env, id flinkapi.JobID) int {
	n := 0
	for _, j := range e.srv.Jobs() {
		if j.ID == id {
			n++
		}
	}
	return n
}

func newArgs() []string {
	return []string{"--out", "/out2", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"}
}

func TestUpgrade(t *testing.T) {
	tests := []struct {
		name      string
		pol       policy.UpdatePolicy
		faults    func(e *env) []flinktest.Fault
		opts      []flinktest.Option
		prepare   func(t *testing.T, e *env) // before the upgrade
		outcome   Outcome
		triggers  int // distinct trigger ids; -1: any
		cancels   int // cancel requests; -1: any
		restored  bool
		oldState  flinkapi.JobState // "" : not checked
		stateless bool
	}{
		{name: "stop with savepoint", outcome: OutcomeSucceeded, triggers: 1, restored: true, oldState: flinkapi.JobFinished},
		{
			name: "503 bursts and resets", outcome: OutcomeSucceeded, triggers: 1, restored: true, oldState: flinkapi.JobFinished,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{
					{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/stop", Times: 2},
					{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid", Times: 2},
					{Kind: flinktest.FaultReset, Route: "GET /jobs/:jobid/checkpoints", Times: 1},
					{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", Times: 1, After: true},
				}
			},
		},
		{
			name: "JobManager restart on the trigger", outcome: OutcomeSucceeded, triggers: 1, restored: true, oldState: flinkapi.JobFinished,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "POST /jobs/:jobid/stop", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}}}
			},
		},
		{
			name: "savepoint fails once: retried with a new trigger id", outcome: OutcomeSucceeded, triggers: 2, restored: true, oldState: flinkapi.JobFinished,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job, Times: 1}}
			},
		},
		{
			name: "savepoint always fails: blocked, job keeps running", outcome: OutcomeBlocked, triggers: 2, cancels: 0, oldState: flinkapi.JobRunning,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultSavepointFails, Job: e.job}}
			},
		},
		{
			name: "job fails while stopping: restored from the stop's savepoint", outcome: OutcomeSucceeded, triggers: -1, cancels: -1, restored: true,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultJobFailsWhileStopping, Job: e.job, Times: 1, Cause: "java.lang.RuntimeException: boom"}}
			},
		},
		{
			name: "job failed: restored from the latest savepoint", outcome: OutcomeSucceeded, triggers: 0, cancels: 0, restored: true,
			prepare: func(t *testing.T, e *env) {
				if err := e.srv.FailJob(e.job, "java.lang.RuntimeException: boom"); err != nil {
					t.Fatal(err)
				}
				e.srv.Clock().Advance(2 * time.Second)
			},
		},
		{
			// The stop completed, then the JobManager restarted and forgot
			// the trigger and the job: the location cannot be learnt, and
			// without other state the policy blocks.
			// The stop completes at once, so the first poll of its
			// status is answered COMPLETED, then lost to the restart.
			name: "JobManager restart after the stop completed: blocked", outcome: OutcomeBlocked, triggers: 1, cancels: 0,
			opts: []flinktest.Option{flinktest.WithSavepointDuration(0)},
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultRestart, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1, After: true, Restart: flinktest.RestartOptions{HA: true}}}
			},
		},
		{
			// The job fails halfway through the savepoint and ends FAILED:
			// no savepoint, and the policy does not restore from a
			// checkpoint in Savepoint mode.
			name: "job fails during the savepoint: blocked", outcome: OutcomeBlocked, triggers: -1, cancels: 0, oldState: flinkapi.JobFailed,
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultJobFailsDuringSavepoint, Job: e.job, Times: 1}}
			},
		},
		{
			// The failed job's checkpoints are not retained (no
			// externalization configured): no restore point, no new job.
			name: "job fails during the savepoint: its checkpoint is not retained", outcome: OutcomeBlocked, triggers: -1, cancels: 0,
			pol: policy.UpdatePolicy{FallbackToLastState: true},
			faults: func(e *env) []flinktest.Fault {
				return []flinktest.Fault{{Kind: flinktest.FaultJobFailsDuringSavepoint, Job: e.job, Times: 1}}
			},
		},
		{name: "stateless", pol: policy.UpdatePolicy{Mode: policy.UpgradeStateless}, outcome: OutcomeSucceeded, triggers: 0, cancels: 1, oldState: flinkapi.JobCanceled, stateless: true},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			name := tt.name
			if resume {
				name += "/resumed"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, tt.opts...)
				ctx := context.Background()
				// The caller's latest savepoint, taken a minute ago.
				var latest savepoint.Record
				if tt.prepare != nil {
					sp, _ := drive(t, e, func() Stepper { return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job} }, false)
					latest, _ = sp.Record()
					tt.prepare(t, e)
				}
				before, _ := e.srv.Job(e.job)
				e.srv.ClearRequests()
				if tt.faults != nil {
					for _, f := range tt.faults(e) {
						e.inject(t, f)
					}
				}
				var transitions []Transition
				mk := func() Stepper {
					return &Upgrade{Env: Env{Client: e.c, Timing: Timing{Stop: time.Minute, Submit: time.Minute}, Clock: e.srv.Clock(), OnTransition: func(tr Transition) { transitions = append(transitions, tr) }}, Job: e.job, Policy: tt.pol, Latest: latest, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs(), Parallelism: 2}}
				}
				p, res := checkedDrive(t, e, mk, resume, tt.stateless)
				t.Logf("%s after %d steps (%s): %s", res.Outcome, p.Steps, p.Replace.Decision, p.Reason)
				if res.Outcome != tt.outcome {
					t.Fatalf("outcome %s (%s), want %s\n%v", res.Outcome, p.Reason, tt.outcome, routes(e.srv))
				}
				if ids, _ := triggerIDs(t, e.srv); tt.triggers >= 0 && len(ids) != tt.triggers {
					t.Errorf("trigger ids %v, want %d", ids, tt.triggers)
				}
				if n := count(e.srv, "PATCH /jobs/:jobid"); tt.cancels >= 0 && n != tt.cancels {
					t.Errorf("%d cancels, want %d", n, tt.cancels)
				}
				if tt.oldState != "" {
					if info, _ := e.srv.Job(e.job); info.State != tt.oldState {
						t.Errorf("old job is %s, want %s", info.State, tt.oldState)
					}
				}
				if len(transitions) == 0 || transitions[len(transitions)-1].To != PhaseDone || transitions[len(transitions)-1].Outcome != res.Outcome {
					t.Errorf("transitions %+v", transitions)
				}
				if res.Outcome != OutcomeSucceeded {
					if p.JobID != e.job && jobsWithID(e, p.JobID) != 0 {
						t.Errorf("a new job was started: %+v", p)
					}
					return
				}
				if p.JobID == e.job || p.Replace.PreviousJobID != e.job || jobsWithID(e, p.JobID) != 1 || len(e.srv.Jobs()) != 2 {
					t.Errorf("jobs %+v, progress %+v", e.srv.Jobs(), p)
				}
				if st, err := e.c.JobStatus(ctx, p.JobID); err != nil || st != flinkapi.JobRunning {
					t.Errorf("new job is %s, %v", st, err)
				}
				e.srv.Clock().Advance(5 * time.Second)
				info, _ := e.srv.Job(p.JobID)
				if !slices.Equal(info.ProgramArgs, newArgs()) {
					t.Errorf("new job %+v", info)
				}
				for _, r := range e.srv.Requests() {
					if r.Route == "POST /jars/:jarid/run" && !strings.Contains(r.Body, `"parallelism":2`) {
						t.Errorf("run request %s lacks the parallelism", r.Body)
					}
				}
				if tt.restored {
					if p.Replace.RestoreFrom == "" || info.RestoredFrom != p.Replace.RestoreFrom || info.Events <= before.Events/2 {
						t.Errorf("restored from %q (progress %q) with %d events, before %d", info.RestoredFrom, p.Replace.RestoreFrom, info.Events, before.Events)
					}
					if ok, _ := e.srv.SavepointExists(p.Replace.RestoreFrom); p.Replace.RestoreKind == policy.KindSavepoint && !ok {
						t.Errorf("restore point %s does not exist", p.Replace.RestoreFrom)
					}
				} else if info.RestoredFrom != "" || p.Replace.RestoreKind != policy.KindNone {
					t.Errorf("restored from %q, kind %q", info.RestoredFrom, p.Replace.RestoreKind)
				}
			})
		}
	}
}

// TestUpgradeLastStateCancelsAfterRecording checks that a LastState update
// with a young retained checkpoint cancels the job only after recording
// the checkpoint as the restore point, and restores from it.
func TestUpgradeLastStateCancelsAfterRecording(t *testing.T) {
	for _, resume := range []bool{false, true} {
		e := newEnv(t)
		ctx := context.Background()
		old := flinkapi.JobID("00000000000000000000000000000abc")
		if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
			t.Fatal(err)
		}
		e.srv.Clock().Advance(5 * time.Second)
		e.srv.ClearRequests()
		mk := func() Stepper {
			return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		}
		p, res := checkedDrive(t, e, mk, resume, false)
		if res.Outcome != OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint || p.Replace.Decision != policy.ReasonRestoreFromState {
			t.Fatalf("%s (%s): %+v", res.Outcome, p.Reason, p)
		}
		if ids, _ := triggerIDs(t, e.srv); len(ids) != 0 {
			t.Errorf("savepoints triggered: %v", ids)
		}
		if info, _ := e.srv.Job(old); info.State != flinkapi.JobCanceled {
			t.Errorf("old job %s", info.State)
		}
		if info, _ := e.srv.Job(p.JobID); info.RestoredFrom != p.Replace.RestoreFrom {
			t.Errorf("new job restored from %q, want %q", info.RestoredFrom, p.Replace.RestoreFrom)
		}
	}
}

// TestUpgradeRefusesCancelWithoutState checks invariant 1 for a forced
// CancelWithoutState under a policy that keeps state.
func TestUpgradeRefusesCancelWithoutState(t *testing.T) {
	e := newEnv(t)
	op := &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Strategy: CancelWithoutState}
	var p Progress
	var err error
	for range 5 {
		if _, err = op.Step(context.Background(), &p); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), ErrStateRequired.Error()) {
		t.Errorf("err = %v; progress %+v", err, p)
	}
	if n := count(e.srv, "PATCH /jobs/:jobid"); n != 0 {
		t.Errorf("%d cancels", n)
	}
}

func TestUpgradeResumeEqualsRun(t *testing.T) {
	var got [2][]string
	var prog [2]Progress
	for i, resume := range []bool{false, true} {
		e := newEnv(t)
		e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 4, Probability: 0.3})
		id := flinkapi.JobID("0123456789abcdef0123456789abcdef")
		mk := func() Stepper {
			return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, JobID: id, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		}
		prog[i], _ = checkedDrive(t, e, mk, resume, false)
		got[i] = routes(e.srv)
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("requests differ:\nrun:     %v\nresumed: %v", got[0], got[1])
	}
	// Trigger ids are random; everything else is the same.
	prog[0].Savepoint.Status.TriggerID, prog[1].Savepoint.Status.TriggerID = "", ""
	if prog[0] != prog[1] || prog[0].Outcome != OutcomeSucceeded {
		t.Errorf("progress differs:\nrun:     %+v\nresumed: %+v", prog[0], prog[1])
	}
}

// TestUpgradeLogger checks that transitions are logged.
func TestUpgradeLogger(t *testing.T) {
	e := newEnv(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	var p Progress
	op := &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock(), Logger: logger}, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	if res, err := Run(context.Background(), op, &p, nil); err != nil || res.Outcome != OutcomeSucceeded {
		t.Fatalf("%+v, %v", res, err)
	}
	out := buf.String()
	for _, want := range []string{"operation=Upgrade", "to=Observe", "to=Savepoint", "to=WaitRunning", "outcome=Succeeded", "location="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestUpgradeLastStateUnretainedCheckpoint checks that a LastState update
// does not cancel a job whose checkpoints Flink deletes on cancellation:
// it takes a savepoint instead.
func TestUpgradeLastStateUnretainedCheckpoint(t *testing.T) {
	e := newEnv(t)
	old := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	e.srv.ClearRequests()
	p, res := checkedDrive(t, e, func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}, false, false)
	if res.Outcome != OutcomeSucceeded || p.Replace.RestoreKind != policy.KindSavepoint || p.Replace.Decision != policy.ReasonNoRecentState {
		t.Fatalf("%s (%s): %+v", res.Outcome, p.Reason, p)
	}
	if n := count(e.srv, "PATCH /jobs/:jobid"); n != 0 {
		t.Errorf("%d cancels", n)
	}
	if info, _ := e.srv.Job(p.JobID); info.RestoredFrom != p.Savepoint.Location {
		t.Errorf("restored from %q, want %q", info.RestoredFrom, p.Savepoint.Location)
	}
}
