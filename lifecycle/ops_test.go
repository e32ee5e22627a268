package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestSavepointDeadlineFromFirstSend: the caller records the stop's
// trigger id and goes away past the savepoint's deadline before sending
// it; meanwhile someone else takes a savepoint. The deadline counts from
// the first request actually sent: the stop is sent on return, and the
// other savepoint, triggered before it, is never taken for this one. The
// job ends FINISHED by the stop, never cancelled, and the state recorded
// is the stop's own savepoint.
func TestSavepointDeadlineFromFirstSend(t *testing.T) {
	for _, name := range []string{"Stop", "Teardown", "Upgrade", "TakeSavepoint"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			store := &MemoryStore{}
			mk := func() Stepper { return savingOp(e, store, name) }
			var p Progress
			for p.Savepoint.Status.State != savepoint.Pending {
				res, err := mk().Step(context.Background(), &p)
				if err != nil || res.Done {
					t.Fatalf("before the trigger: %v %+v", err, p)
				}
			}
			// Someone else's savepoint, a few seconds after the trigger id
			// was recorded. For TakeSavepoint, past forgetAfter: before
			// it sends a trigger recorded that long ago, it counts a
			// savepoint triggered within forgetAfter of the record as the
			// one a request sent then, whose answer was lost, took.
			after := 3 * time.Second
			if name == "TakeSavepoint" {
				after = forgetAfter + 3*time.Second
			}
			e.srv.Clock().Advance(after)
			if _, err := e.c.TriggerSavepoint(context.Background(), e.job, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()}); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(11 * time.Minute)
			var theirs string
			for _, s := range e.srv.Snapshots() {
				if s.Savepoint && s.Job == e.job && s.Location != "" {
					theirs = s.Location
				}
			}
			if theirs == "" {
				t.Fatal("the other savepoint did not complete")
			}
			res := resume(t, e, mk, &p)
			if res.Outcome != OutcomeSucceeded {
				t.Fatalf("%s (%s)", res.Outcome, p.Reason)
			}
			if p.Savepoint.Location == theirs || p.Savepoint.Location == "" {
				t.Errorf("location %q: the savepoint triggered before this operation sent anything (%s) was taken for its own", p.Savepoint.Location, theirs)
			}
			if n := count(e.srv, "PATCH /jobs/:jobid"); n != 0 {
				t.Errorf("%d cancels: the job was cancelled instead of stopped", n)
			}
			checkSaved(t, e, store, name, &p)
		})
	}
}

// savingOp builds the operation name (Stop, Teardown, Upgrade or
// TakeSavepoint) of e's job, which takes a savepoint.
func savingOp(e *env, store RestorePointStore, name string) Stepper {
	env := Env{Client: e.c, Clock: e.srv.Clock()}
	switch name {
	case "Teardown":
		return &Teardown{Env: env, Job: e.job, Store: store, Name: "app/counter"}
	case "Upgrade":
		return &Upgrade{Env: env, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	case "TakeSavepoint":
		return &TakeSavepoint{Env: env, Job: e.job}
	}
	return &Stop{Env: env, Job: e.job}
}

// checkSaved checks what the operation name left once it succeeded with
// p.Location: a job stopped by it, a new job started from it, a store
// that holds it.
func checkSaved(t *testing.T, e *env, store RestorePointStore, name string, p *Progress) {
	t.Helper()
	switch name {
	case "Stop", "Teardown":
		if info, _ := e.srv.Job(e.job); info.State != flinkapi.JobFinished {
			t.Errorf("job %s, want FINISHED by the stop", info.State)
		}
	case "Upgrade":
		if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != p.Savepoint.Location {
			t.Errorf("new job restored from %q, want the stop's savepoint %q", info.RestoredFrom, p.Savepoint.Location)
		}
	}
	if name == "Teardown" {
		if rec, _, _ := store.Get(context.Background(), "app/counter"); rec.Location != p.Savepoint.Location {
			t.Errorf("stored %q, want %q", rec.Location, p.Savepoint.Location)
		}
	}
}

// TestStopAnswerLostPastDeadline: the stop was sent, its answer lost with
// the caller, who comes back past the savepoint's deadline. The stored
// Progress shows nothing sent: the stop is sent again, Flink (which
// forgot the trigger id) answers that the job ended, and the savepoint
// that ended it, triggered after the operation started, is recorded.
func TestStopAnswerLostPastDeadline(t *testing.T) {
	e := newEnv(t)
	mk := func() Stepper { return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job} }
	var p Progress
	for p.Savepoint.Status.State != savepoint.Pending {
		if _, err := mk().Step(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	trigger := p.Savepoint.Status.TriggerID
	loseAnswer(t, mk(), &p)
	e.srv.Clock().Advance(11 * time.Minute)
	sp, ok := savepointOf(e, trigger)
	if !ok {
		t.Fatal("the first stop took no savepoint")
	}
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded || p.Savepoint.Location != sp.Location {
		t.Fatalf("%s (%s): location %q, want %q", res.Outcome, p.Reason, p.Savepoint.Location, sp.Location)
	}
}

// removed reports whether Flink discarded the checkpoint or savepoint at
// location.
func removed(e *env, location string) bool {
	for _, s := range e.srv.Snapshots() {
		if s.Location == location {
			return s.Removed
		}
	}
	return false
}

// TestUpgradeLastStateStaleObservation: a last-state upgrade read the
// job's latest retained checkpoint, then its caller was away for 101 s
// (before deciding, or before the cancel); the job checkpointed on, and
// Flink discarded the checkpoint read. The checkpoint is read again before
// the job is cancelled: the restore point recorded when the cancel is
// sent exists, and the new job starts from the newest retained
// checkpoint.
func TestUpgradeLastStateStaleObservation(t *testing.T) {
	for _, at := range []Phase{PhaseObserveRetention, PhaseCancel} {
		t.Run(string(at), func(t *testing.T) {
			e := newEnv(t)
			old := retainedJob(t, e)
			mk := func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}
			var p Progress
			for p.Phase != at {
				res, err := mk().Step(context.Background(), &p)
				if err != nil || res.Done {
					t.Fatalf("before %s: %v %+v", at, err, p)
				}
			}
			e.srv.Clock().Advance(101 * time.Second)
			for range maxTestSteps {
				before := p
				cancels := count(e.srv, "PATCH /jobs/:jobid")
				res, err := mk().Step(context.Background(), &p)
				if err != nil {
					t.Fatal(err)
				}
				if count(e.srv, "PATCH /jobs/:jobid") > cancels && (before.Replace.RestoreFrom == "" || removed(e, before.Replace.RestoreFrom)) {
					t.Fatalf("the job was cancelled with the restore point %q recorded, which Flink had discarded", before.Replace.RestoreFrom)
				}
				if res.Done {
					break
				}
				e.srv.Clock().Advance(res.RequeueAfter)
			}
			if p.Outcome != OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint {
				t.Fatalf("%s (%s): %+v", p.Outcome, p.Reason, p)
			}
			var final flinktest.Snapshot
			for _, s := range e.srv.Snapshots() {
				if s.Job == old && !s.Savepoint && !s.Removed {
					final = s
				}
			}
			if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != final.Location || final.Location == "" || info.State != flinkapi.JobRunning {
				t.Errorf("new job %+v, want it RUNNING from the newest retained checkpoint %q", info, final.Location)
			}
		})
	}
}

// TestUpgradeLastStateKeepsAgeCheckedCheckpoint: the caller of a
// last-state upgrade whose policy bounds the state's age is away while
// the job is cancelled, longer than that bound. The checkpoint was young
// enough when the policy chose it, and the job has been cancelled for it:
// the new job starts from the newest retained checkpoint, never Blocked
// with nothing running.
func TestUpgradeLastStateKeepsAgeCheckedCheckpoint(t *testing.T) {
	e := newEnv(t)
	old := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: []string{"--out", "/out2", "--keys", "2", "--rate", "10", "--checkpoint-interval", "20000"},
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(time.Minute)
	mk := func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState, MaxStateAge: policy.Duration(2 * time.Minute)},
			JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}
	var p Progress
	for p.Phase != PhaseWaitStopped {
		if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
			t.Fatalf("before the wait: %v %+v", err, p)
		}
	}
	e.srv.Clock().Advance(101 * time.Second)
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != p.Replace.RestoreFrom || info.State != flinkapi.JobRunning {
		t.Errorf("new job %+v, want RUNNING from %s", info, p.Replace.RestoreFrom)
	}
}

// TestUpgradeLastStateFailoverAtCancel: the JobManager fails over right
// after the cancel of a last-state upgrade took effect; the new one
// answers an empty checkpoint history (and forgets the cancelled job).
// The new job starts from the checkpoint recorded before the cancel
// (retained), never from the caller's older savepoint.
func TestUpgradeLastStateFailoverAtCancel(t *testing.T) {
	for _, ha := range []bool{false, true} {
		t.Run(map[bool]string{false: "no HA", true: "HA"}[ha], func(t *testing.T) {
			e := newEnv(t)
			old := retainedJob(t, e)
			sp, err := e.c.TriggerSavepoint(context.Background(), old, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
			if err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(5 * time.Second)
			res, err := e.c.OperationStatus(context.Background(), sp)
			if err != nil || res.Location == "" {
				t.Fatalf("savepoint: %+v %v", res, err)
			}
			latest := savepoint.Record{Location: res.Location, Time: e.srv.Clock().Now().Add(-4 * time.Second), Reason: savepoint.ReasonUser, JobID: old}
			e.srv.Clock().Advance(20 * time.Minute)
			mk := func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Latest: latest, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
					JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}
			var p Progress
			for p.Phase != PhaseCancel {
				if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
					t.Fatalf("before the cancel: %v %+v", err, p)
				}
			}
			recorded := p.Replace.RestoreFrom
			if p.Replace.RestoreKind != policy.KindCheckpoint || recorded == "" {
				t.Fatalf("recorded %s %q", p.Replace.RestoreKind, recorded)
			}
			e.inject(t, flinktest.Fault{Kind: flinktest.FaultRestart, After: true, Times: 1, Route: "PATCH /jobs/:jobid", Restart: flinktest.RestartOptions{HA: ha}})
			if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
				t.Fatalf("%s (%s)", res.Outcome, p.Reason)
			}
			info, _ := e.srv.Job(p.Submit.NewJobID)
			if info.RestoredFrom == latest.Location || p.Replace.RestoreKind != policy.KindCheckpoint {
				t.Fatalf("restored from %s %q, older than the checkpoint %q recorded before the cancel", p.Replace.RestoreKind, info.RestoredFrom, recorded)
			}
			if info.RestoredFrom != recorded || removed(e, recorded) {
				t.Errorf("restored from %q, want the retained checkpoint recorded before the cancel %q", info.RestoredFrom, recorded)
			}
		})
	}
}

// TestRestartRetentionTransient404: one 404 on the checkpointing
// configuration of a failed job, whose retained checkpoint is 3 minutes
// younger than the caller's savepoint, is transient (Flink lists the
// job): the restart starts from the checkpoint.
func TestRestartRetentionTransient404(t *testing.T) {
	for _, op := range []string{"Restart", "Upgrade"} {
		t.Run(op, func(t *testing.T) {
			e := newEnv(t)
			old := flinkapi.JobID("00000000000000000000000000000abc")
			if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
				FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION", "restart-strategy.type": "none"}}); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(5 * time.Second)
			sp, err := e.c.TriggerSavepoint(context.Background(), old, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
			if err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(2 * time.Second)
			res, err := e.c.OperationStatus(context.Background(), sp)
			if err != nil || res.Location == "" {
				t.Fatalf("savepoint: %+v %v", res, err)
			}
			latest := savepoint.Record{Location: res.Location, Time: e.srv.Clock().Now().Add(-time.Second), Reason: savepoint.ReasonUser, JobID: old}
			e.srv.Clock().Advance(3 * time.Minute)
			if op == "Restart" {
				if err := e.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
					t.Fatal(err)
				}
				e.srv.Clock().Advance(10 * time.Minute) // past the restart's backoff
			}
			e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Times: 1, Route: "GET /jobs/:jobid/checkpoints/config"})
			mk := func() Stepper {
				env := Env{Client: e.c, Clock: e.srv.Clock()}
				if op == "Restart" {
					return &Restart{Env: env, Job: old, Latest: latest, Policy: policy.RestartPolicy{Mode: policy.RestartFromLatestState}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
				}
				return &Upgrade{Env: env, Job: old, Latest: latest, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
			}
			var p Progress
			if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
				t.Fatalf("%s (%s)", res.Outcome, p.Reason)
			}
			if info, _ := e.srv.Job(p.Submit.NewJobID); p.Replace.RestoreKind != policy.KindCheckpoint || info.RestoredFrom != p.Replace.RestoreFrom {
				t.Errorf("restored from %s %q (%+v), want the retained checkpoint, not the savepoint 3 minutes older %q", p.Replace.RestoreKind, info.RestoredFrom, info, latest.Location)
			}
		})
	}
}
