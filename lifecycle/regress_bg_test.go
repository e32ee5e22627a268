package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// TestControllerBlueGreenStoppedAfterItsSavepoint: the savepoint of a
// blue/green upgrade completes; before the new job is submitted, a user
// stops the old job from the Flink UI with a savepoint, newer than the
// blue/green one. Nothing of the old job runs any more: the new job
// starts from the user's savepoint, the job's final state, and the
// status records it as the newest state.
func TestControllerBlueGreenStoppedAfterItsSavepoint(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.BlueGreen = BlueGreenPolicy{Enabled: true, Window: policy.Duration(time.Minute)}
			k.settle("create", spec)
			old := k.st.JobID
			spec.Job.Args = append(spec.Job.Args, "--name", "v2")
			k.until("blue/green savepoint", spec, 100, func(st *JobStatus) bool {
				return st.Action == ActionBlueGreen && st.Progress.Savepoint.Location != ""
			})
			ours := k.st.Progress.Savepoint.Location
			if k.st.Progress.Submit.NewJobID != "" {
				t.Fatalf("the new job %s was submitted in the call that saw the savepoint complete", k.st.Progress.Submit.NewJobID)
			}
			loc := k.stopExternally()
			k.until("blue/green", spec, 300, func(st *JobStatus) bool {
				return st.Action == ActionBlueGreen && !st.InFlight()
			})
			if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old {
				t.Fatalf("blue/green: %s (%s), job %s (old %s)", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, old)
			}
			if got := k.job().RestoredFrom; got != loc {
				t.Fatalf("the new job restored from %q (the blue/green savepoint is %q), want the user's stop savepoint %q", got, ours, loc)
			}
			if k.st.Latest.Location != loc {
				t.Errorf("the status's latest is %q, want the user's stop savepoint %q", k.st.Latest.Location, loc)
			}
			if k.maxRequests > MaxRequestsPerCall {
				t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
			}
		})
	}
}

// TestControllerBlueGreenOldJobFailedAfterItsSavepoint: the savepoint of
// a blue/green upgrade (update mode LastState) completes; then the old
// job fails for good, keeping its retained checkpoints, the newest taken
// after the blue/green savepoint. Nothing of the old job runs beside
// which to start the new one: the blue/green upgrade ends with nothing
// started, and the new job starts from the job's newest state, that
// checkpoint, never from the older blue/green savepoint.
func TestControllerBlueGreenOldJobFailedAfterItsSavepoint(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.BlueGreen = BlueGreenPolicy{Enabled: true, Window: policy.Duration(time.Minute)}
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeLastState}
	k.settle("create", spec)
	old := k.st.JobID
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.until("blue/green savepoint", spec, 100, func(st *JobStatus) bool {
		return st.Action == ActionBlueGreen && st.Progress.Savepoint.Location != ""
	})
	ours := k.st.Progress.Savepoint.Location
	k.srv.Clock().Advance(1500 * time.Millisecond) // a checkpoint after the savepoint
	if err := k.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.settle("after the failure", spec)
	var newest, sp flinktest.Snapshot
	for _, s := range k.srv.Snapshots() {
		if s.Job == old && !s.Savepoint && !s.Removed && s.Taken.After(newest.Taken) {
			newest = s
		}
		if s.Location == ours {
			sp = s
		}
	}
	if !newest.Taken.After(sp.Taken) {
		t.Fatalf("the old job's newest checkpoint %+v is not newer than the blue/green savepoint %+v", newest, sp)
	}
	if k.st.JobID == old || k.job().RestoredFrom != newest.Location {
		t.Fatalf("job %s restored from %q (the blue/green savepoint is %s), want the old job's newest retained checkpoint %s", k.st.JobID,
			k.job().RestoredFrom, ours, newest.Location)
	}
	if k.maxRequests > MaxRequestsPerCall {
		t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
	}
}

// TestBlueGreenOldJobReadAfterSavepoint: once the blue/green savepoint
// completed, the old job is read once more (its state, one request)
// before the jar run; a job that still runs keeps the blue/green
// savepoint as the restore point.
func TestBlueGreenOldJobReadAfterSavepoint(t *testing.T) {
	e := newEnv(t)
	mk := func() Stepper {
		return &BlueGreen{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs()}
	}
	var p Progress
	for p.Savepoint.Location == "" {
		res, err := mk().Step(context.Background(), &p)
		if err != nil || res.Done {
			t.Fatalf("before the savepoint completed: %v %+v", err, p)
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	n := len(e.srv.Requests())
	if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
		t.Fatalf("the read of the old job: %v %+v", err, p)
	}
	reqs := e.srv.Requests()[n:]
	if len(reqs) != 1 || reqs[0].Route != "GET /jobs/:jobid/status" {
		t.Fatalf("the step after the savepoint sent %v, want one read of the old job's state", reqs)
	}
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	if info, _ := e.srv.Job(p.Submit.NewJobID); info.RestoredFrom != p.Savepoint.Location || info.State != flinkapi.JobRunning {
		t.Fatalf("new job %+v, want it RUNNING from the blue/green savepoint %s", info, p.Savepoint.Location)
	}
}
