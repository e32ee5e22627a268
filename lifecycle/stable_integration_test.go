//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealStableEarnedByEachJob: on a real session cluster of
// FLINK_VERSION, a new job that runs the last stable template (the job
// redeployed after a stop with savepoint from outside, the Flink UI's
// stop; and after a delete and re-add of the same name) is not
// Converged until the new job itself has all its tasks running and
// completed a checkpoint after its start: after every call whose status
// says Converged, the job's details and checkpoint statistics are read
// and must show it.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealStableEarnedByEachJob -v ./lifecycle/
func TestRealStableEarnedByEachJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cluster, c := realSession(t, ctx, 2)
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "app/stable", PollInterval: time.Second,
		RetryInterval: 5 * time.Second}
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args: []string{"--out", cluster.OutDir("stable"), "--keys", "2", "--rate", "40", "--checkpoint-interval", "2000", "--name", "stable"}},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
	}
	var st lifecycle.JobStatus
	t.Cleanup(func() {
		if st.JobID != "" {
			_ = c.CancelJob(context.Background(), st.JobID)
		}
	})
	realUntil(t, ctx, "create", ctrl, &spec, &st, 3*time.Minute, func() bool { return st.Converged(spec) })

	// earns calls Reconcile until the status converges on a job other
	// than old, checking each call that says Converged.
	earns := func(what string, old flinkapi.JobID) {
		t.Helper()
		begin := time.Now()
		unearned := 0
		for {
			if time.Since(begin) > 3*time.Minute || ctx.Err() != nil {
				t.Fatalf("%s: not converged on a new job in 3 minutes: %s %s: %s", what, st.State, st.Reason, st.Message)
			}
			realCall(t, ctx, ctrl, spec, &st, false)
			if st.JobID == "" || st.JobID == old {
				continue
			}
			earned, saw := earnedNow(t, ctx, c, st.JobID)
			if !st.Converged(spec) {
				if !earned {
					unearned++
				}
				continue
			}
			if !earned {
				t.Fatalf("%s: Converged although the new job %s has not earned it: %s (%s: %s)", what, st.JobID, saw, st.Reason, st.Message)
			}
			t.Logf("%s: converged on job %s after %v; %d calls saw it before it earned stability (%s: %s)", what, st.JobID,
				time.Since(begin).Round(time.Millisecond), unearned, st.Reason, st.Message)
			return
		}
	}

	// Stopped with a savepoint from outside (the Flink UI's stop): the
	// controller starts the stable template again from that savepoint.
	old := st.JobID
	if _, err := c.StopWithSavepoint(ctx, old, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if s, err := c.JobStatus(ctx, old); err == nil && s == flinkapi.JobFinished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not stop with its savepoint")
		}
	}
	earns("redeploy after a stop from outside", old)

	// Deleted, then applied again under the same name: deployed anew
	// from the final savepoint.
	old = st.JobID
	for deadline := time.Now().Add(2 * time.Minute); !realCall(t, ctx, ctrl, spec, &st, true).Done; {
		if time.Now().After(deadline) {
			t.Fatalf("not deleted: %s %s: %s", st.State, st.Reason, st.Message)
		}
	}
	earns("delete and re-add", old)
}

// earnedNow reads job id's details and checkpoint statistics and reports
// whether all its tasks run and it completed a checkpoint after its
// start, and what it saw.
func earnedNow(t *testing.T, ctx context.Context, c *flinkapi.Client, id flinkapi.JobID) (bool, string) {
	t.Helper()
	d, err := c.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tasks := ""
	running := d.State == flinkapi.JobRunning && len(d.Vertices) > 0
	for _, v := range d.Vertices {
		tasks += fmt.Sprintf(" %s:%s", v.Name, v.Status)
		running = running && v.Status == string(flinkapi.JobRunning)
	}
	if !running {
		return false, fmt.Sprintf("job %s, tasks%s", d.State, tasks)
	}
	stats, err := c.Checkpoints(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if lc := stats.LatestCompleted; lc == nil || lc.TriggerTime.Before(d.StartTime) {
		return false, fmt.Sprintf("tasks%s; no checkpoint completed since its start at %s", tasks, d.StartTime.UTC().Format(time.RFC3339Nano))
	}
	return true, ""
}
