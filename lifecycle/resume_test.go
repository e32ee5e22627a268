package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// TestResumeEqualsRun runs every operation twice on identical fake
// clusters with the same seeded 503s: once uninterrupted, once by a caller
// that stores the Progress as JSON after every step and builds a new
// operation from it. Both must send the same requests and end with the
// same Progress (trigger ids, which are random, aside): no second
// savepoint trigger, no duplicate job, no lost location.
func TestResumeEqualsRun(t *testing.T) {
	newID := flinkapi.JobID("0123456789abcdef0123456789abcdef")
	restartPolicy := policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)}
	tests := []struct {
		name    string
		prepare func(t *testing.T, e *env) RestorePointStore
		op      func(e *env, store RestorePointStore) Stepper
	}{
		{name: "TakeSavepoint", op: func(e *env, _ RestorePointStore) Stepper {
			return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}
		}},
		{name: "Stop/StopWithSavepoint", op: func(e *env, _ RestorePointStore) Stepper {
			return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}
		}},
		{name: "Stop/CancelWithSavepoint", op: func(e *env, _ RestorePointStore) Stepper {
			return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Strategy: CancelWithSavepoint}
		}},
		{name: "Stop/SavepointThenCancel", op: func(e *env, _ RestorePointStore) Stepper {
			return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Strategy: SavepointThenCancel}
		}},
		{name: "Stop/CancelWithoutState", op: func(e *env, _ RestorePointStore) Stepper {
			return &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Mode: policy.UpgradeStateless, Strategy: CancelWithoutState}
		}},
		{name: "Submit", op: func(e *env, _ RestorePointStore) Stepper {
			return &Submit{Env: Env{Client: e.c, Clock: e.srv.Clock()}, JarID: e.jar, JobID: newID, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		}},
		{name: "Restart", prepare: func(t *testing.T, e *env) RestorePointStore {
			// The latest savepoint, kept in a store, is the state to
			// restart from.
			p, _ := drive(t, e, func() Stepper { return &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job} }, false)
			rec, ok := p.Record()
			store := &MemoryStore{}
			if !ok || store.Put(context.Background(), "app/job", rec) != nil {
				t.Fatalf("savepoint %+v", p)
			}
			if err := e.srv.FailJob(e.job, "java.lang.RuntimeException: boom"); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(time.Minute)
			return store
		}, op: func(e *env, store RestorePointStore) Stepper {
			return &Restart{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Policy: restartPolicy, JarID: e.jar, JobID: newID, Store: store, Name: "app/job",
				Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		}},
		{name: "Teardown", prepare: func(*testing.T, *env) RestorePointStore { return &MemoryStore{} },
			op: func(e *env, store RestorePointStore) Stepper {
				return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Store: store, Name: "app/job"}
			}},
		{name: "Redeploy", prepare: func(t *testing.T, e *env) RestorePointStore {
			store := &MemoryStore{}
			p, _ := drive(t, e, func() Stepper {
				return &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Store: store, Name: "app/job"}
			}, false)
			if p.Outcome != OutcomeSucceeded {
				t.Fatalf("teardown: %+v", p)
			}
			return store
		}, op: func(e *env, store RestorePointStore) Stepper {
			return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Store: store, Name: "app/job", JarID: e.jar, JobID: newID,
				Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reqs [2][]string
			var prog [2]Progress
			for i, resume := range []bool{false, true} {
				e := newEnv(t)
				var store RestorePointStore
				if tt.prepare != nil {
					store = tt.prepare(t, e)
				}
				e.srv.ClearRequests()
				e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 4, Probability: 0.3})
				stateless := tt.name == "Stop/CancelWithoutState"
				prog[i], _ = checkedDrive(t, e, func() Stepper { return tt.op(e, store) }, resume, stateless)
				reqs[i] = routes(e.srv)
				if ids, n := triggerIDs(t, e.srv); len(ids) > 1 {
					t.Errorf("resume %v: %d trigger ids in %d requests", resume, len(ids), n)
				}
				for _, j := range e.srv.Jobs() {
					if jobsWithID(e, j.ID) != 1 {
						t.Errorf("resume %v: job %s twice", resume, j.ID)
					}
				}
			}
			if !slices.Equal(reqs[0], reqs[1]) {
				t.Errorf("requests differ:\nrun:     %v\nresumed: %v", reqs[0], reqs[1])
			}
			prog[0].Savepoint.Status.TriggerID, prog[1].Savepoint.Status.TriggerID = "", ""
			if prog[0] != prog[1] {
				t.Errorf("progress differs:\nrun:     %+v\nresumed: %+v", prog[0], prog[1])
			}
			if prog[0].Outcome != OutcomeSucceeded {
				t.Errorf("outcome %s: %s", prog[0].Outcome, prog[0].Reason)
			}
		})
	}
}
