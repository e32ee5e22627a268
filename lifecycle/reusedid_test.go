package lifecycle

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// TestReusedJobIDNotTaken: a job running under the id derived from the
// job an Upgrade replaces, started before that job (a job id reused: a
// deployment created again under its name after a Delete left its job
// running, with a JobManager that forgot the job the old id had), is no
// earlier run's of the Upgrade. It is neither adopted from Flink's job
// list (the old job no longer runs) nor taken for the new job when the
// jar run answers that its id is in use (the old job stopped for the
// upgrade): the new job starts under the id derived from it, and the
// other job runs on, untouched.
func TestReusedJobIDNotTaken(t *testing.T) {
	for _, oldRuns := range []bool{false, true} {
		name := "lookup"
		if oldRuns {
			name = "duplicate"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			old := flinkapi.JobID("0000000000000000000000000000a1d0")
			other := derivedJobID(strings.ToLower(string(old)))
			if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: other, ProgramArgs: counterArgs()}); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(time.Minute)
			if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: counterArgs()}); err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(10 * time.Second)
			if !oldRuns {
				if err := e.c.CancelJob(ctx, old); err != nil {
					t.Fatal(err)
				}
				e.srv.Clock().Advance(5 * time.Second)
			}
			e.srv.ClearRequests()
			p, res := drive(t, e, func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()},
					Policy: policy.UpdatePolicy{AllowStartWithoutState: true}}
			}, true)
			want := derivedJobID(strings.ToLower(string(other)))
			if res.Outcome != OutcomeSucceeded || p.Submit.Adopted || p.Submit.NewJobID != want {
				t.Errorf("%s (%s): adopted %v, new job %s, want %s started", res.Outcome, p.Reason, p.Submit.Adopted, p.Submit.NewJobID, want)
			}
			if info, ok := e.srv.Job(other); !ok || info.State != flinkapi.JobRunning {
				t.Errorf("the other job: %s, want RUNNING", info.State)
			}
			if info, ok := e.srv.Job(want); !ok || info.State != flinkapi.JobRunning {
				t.Errorf("the new job %s: %s, want RUNNING", want, info.State)
			}
			for _, r := range e.srv.Requests() {
				if r.Method != "GET" && strings.Contains(r.Path, string(other)) {
					t.Errorf("%s %s sent to the other job", r.Method, r.Path)
				}
			}
		})
	}
}

// TestPlanDoesNotAdoptOlderJob: the deployment's job was cancelled from
// outside, and a job started before it runs under the id derived from
// it (a job id reused). Controller.Plan's preview of the restart does
// not present that job as one it would adopt, as the restart does not
// take it: the new job starts under the next derived id, and the other
// job runs on.
func TestPlanDoesNotAdoptOlderJob(t *testing.T) {
	k := newCluster(t, true)
	ctx := context.Background()
	first := nameJobID("", k.controller().Name) // the deployment's first job
	other := derivedJobID(strings.ToLower(string(first)))
	jar, err := k.c.UploadJarReader(ctx, "other.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: other, ProgramArgs: counterArgs()}); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(time.Minute)
	spec := k.spec("/out")
	k.settle("create", spec)
	if k.st.JobID != first {
		t.Fatalf("the deployment's job is %s, want %s", k.st.JobID, first)
	}
	if err := k.c.CancelJob(ctx, first); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(5 * time.Second)
	plan, err := k.controller().Plan(ctx, spec, k.st)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Action != ActionRestart || plan.Adopt != "" || plan.Blocked != "" {
		t.Errorf("plan %s: action %s, adopt %q (the older job is %s), blocked %q; want a restart that adopts nothing", plan, plan.Action, plan.Adopt, other, plan.Blocked)
	}
	k.until("the restart", spec, 300, func(st *JobStatus) bool { return st.JobID != first && !st.InFlight() && st.State == policy.Running })
	if want := derivedJobID(strings.ToLower(string(other))); k.st.JobID != want || k.st.Progress.Submit.Adopted {
		t.Errorf("restarted as %s (adopted %v), want %s started", k.st.JobID, k.st.Progress.Submit.Adopted, want)
	}
	if info, ok := k.srv.Job(other); !ok || info.State != flinkapi.JobRunning {
		t.Errorf("the older job: %s, want RUNNING", info.State)
	}
}
