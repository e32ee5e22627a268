package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
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
			mk := func() Stepper {
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
			var p Progress
			for p.Savepoint.State != savepoint.Pending {
				res, err := mk().Step(context.Background(), &p)
				if err != nil || res.Done {
					t.Fatalf("before the trigger: %v %+v", err, p)
				}
			}
			// Someone else's savepoint, a few seconds after the trigger id
			// was recorded.
			e.srv.Clock().Advance(3 * time.Second)
			other, err := e.c.TriggerSavepoint(context.Background(), e.job, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
			if err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(11 * time.Minute)
			_ = other
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
			if p.Location == theirs || p.Location == "" {
				t.Errorf("location %q: the savepoint triggered before this operation sent anything (%s) was taken for its own", p.Location, theirs)
			}
			if n := count(e.srv, "PATCH /jobs/:jobid"); n != 0 {
				t.Errorf("%d cancels: the job was cancelled instead of stopped", n)
			}
			switch name {
			case "Stop", "Teardown":
				if info, _ := e.srv.Job(e.job); info.State != flinkapi.JobFinished {
					t.Errorf("job %s, want FINISHED by the stop", info.State)
				}
			case "Upgrade":
				if info, _ := e.srv.Job(p.NewJobID); info.RestoredFrom != p.Location {
					t.Errorf("new job restored from %q, want the stop's savepoint %q", info.RestoredFrom, p.Location)
				}
			}
			if name == "Teardown" {
				if rec, _, _ := store.Get(context.Background(), "app/counter"); rec.Location != p.Location {
					t.Errorf("stored %q, want %q", rec.Location, p.Location)
				}
			}
		})
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
	for p.Savepoint.State != savepoint.Pending {
		if _, err := mk().Step(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
	trigger := p.Savepoint.TriggerID
	loseAnswer(t, mk(), &p)
	e.srv.Clock().Advance(11 * time.Minute)
	sp, ok := savepointOf(e, trigger)
	if !ok {
		t.Fatal("the first stop took no savepoint")
	}
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded || p.Location != sp.Location {
		t.Fatalf("%s (%s): location %q, want %q", res.Outcome, p.Reason, p.Location, sp.Location)
	}
}
