//go:build integration

package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// opsArgs are the counter job's arguments of the tests in this file.
func opsArgs(out, name string) []string {
	return []string{"--out", out, "--keys", "2", "--rate", "20", "--parallelism", "1", "--checkpoint-interval", "500", "--name", name}
}

// opsSubmit starts the counter job on the real cluster and returns its id
// once it runs.
func opsSubmit(t *testing.T, ctx context.Context, env lifecycle.Env, jar string, class string, args []string, conf map[string]string) flinkapi.JobID {
	t.Helper()
	var p lifecycle.Progress
	res, err := lifecycle.Run(ctx, &lifecycle.Submit{Env: env, JarFile: jar, Run: flinkapi.RunJarRequest{EntryClass: class, ProgramArgs: args, FlinkConfiguration: conf}}, &p, nil)
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("submit: %+v, %v (%s)", res, err, p.Reason)
	}
	return p.JobID
}

// TestRealSavepointDeadlineFromFirstSend: on a real cluster, a stop's
// trigger id is recorded and its caller goes away past the savepoint's
// deadline before sending it, while someone else takes a savepoint. On
// return the stop is sent: the job ends FINISHED by it, and the savepoint
// recorded is the stop's own, never the other one.
func TestRealSavepointDeadlineFromFirstSend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster, c := realSession(t, ctx, 2)
	env := realEnv(c)
	env.Timing.Savepoint = 3 * time.Second
	job := opsSubmit(t, ctx, env, cluster.TestJobJar, cluster.TestJobClass, opsArgs(cluster.OutDir("ops-deadline"), "ops-deadline"), nil)
	time.Sleep(2 * time.Second) // the tasks run

	op := &lifecycle.Stop{Env: env, Job: job}
	var p lifecycle.Progress
	for p.Savepoint.Status.State != savepoint.Pending {
		if res, err := op.Step(ctx, &p); err != nil || res.Done {
			t.Fatalf("before the stop: %v %+v", err, p)
		}
	}
	other, err := c.TriggerSavepoint(ctx, job, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := flinkapi.NewWaiter(c).Wait(ctx, other, time.Minute)
	if err != nil || theirs.Location == "" {
		t.Fatalf("the other savepoint: %+v, %v", theirs, err)
	}
	time.Sleep(env.Timing.Savepoint + time.Second) // away past the deadline

	res, err := lifecycle.Run(ctx, op, &p, nil)
	if err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("%+v, %v (%s)", res, err, p.Reason)
	}
	if p.Savepoint.Location == "" || p.Savepoint.Location == theirs.Location {
		t.Errorf("location %q: the savepoint taken before the stop was sent (%s) was taken for its own", p.Savepoint.Location, theirs.Location)
	}
	if st, err := c.JobStatus(ctx, job); err != nil || st != flinkapi.JobFinished {
		t.Errorf("job %s, %v; want FINISHED by the stop", st, err)
	}
}

// TestRealLastStateStaleObservation: on a real cluster, a last-state
// upgrade reads the job's latest retained checkpoint and its caller is
// away longer than the bound of a checkpoint read before deciding; the
// job checkpoints every 500 ms. The upgrade reads the checkpoint again
// before the cancel, and the new job runs from the newest retained
// checkpoint, not from the one read first.
func TestRealLastStateStaleObservation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster, c := realSession(t, ctx, 2)
	env := realEnv(c)
	retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	job := opsSubmit(t, ctx, env, cluster.TestJobJar, cluster.TestJobClass, opsArgs(cluster.OutDir("ops-stale-1"), "ops-stale"), retain)
	// A few checkpoints complete (the tasks of a loaded machine may take
	// seconds to start).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		stats, err := c.Checkpoints(ctx, job)
		if err == nil && stats.Counts.Completed >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint completed within a minute: %+v, %v", stats, err)
		}
	}

	op := &lifecycle.Upgrade{Env: env, Job: job, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
		JarFile: cluster.TestJobJar, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: opsArgs(cluster.OutDir("ops-stale-2"), "ops-stale"), FlinkConfiguration: retain}}
	var p lifecycle.Progress
	for p.Phase != lifecycle.PhaseObserveRetention {
		res, err := op.Step(ctx, &p)
		if err != nil || res.Done {
			t.Fatalf("before the retention read: %v %+v", err, p)
		}
		time.Sleep(res.RequeueAfter)
	}
	first := p.Replace.Observed.Checkpoint
	time.Sleep(12 * time.Second) // away: Flink discards the checkpoint read

	var res lifecycle.Result
	for !res.Done {
		if p.Phase == lifecycle.PhaseCancel && p.Replace.RestoreFrom == first {
			t.Fatalf("the job is about to be cancelled for the checkpoint %s, read 12 s before", first)
		}
		var err error
		if res, err = op.Step(ctx, &p); err != nil {
			t.Fatal(err)
		}
		time.Sleep(res.RequeueAfter)
	}
	if res.Outcome != lifecycle.OutcomeSucceeded || p.Replace.RestoreKind != policy.KindCheckpoint {
		t.Fatalf("%+v (%s)", res, p.Reason)
	}
	if p.Replace.RestoreFrom == first {
		t.Errorf("the new job started from %s, the checkpoint read before the caller was away", first)
	}
	if st, err := c.JobStatus(ctx, p.Submit.NewJobID); err != nil || st != flinkapi.JobRunning {
		t.Errorf("new job %s, %v", st, err)
	}
}
