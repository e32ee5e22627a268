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

// userSavepoint takes a savepoint of job and returns its record, timed
// a second before its completion.
func userSavepoint(t *testing.T, e *env, job flinkapi.JobID) savepoint.Record {
	t.Helper()
	sp, err := e.c.TriggerSavepoint(context.Background(), job, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	res, err := e.c.OperationStatus(context.Background(), sp)
	if err != nil || res.Location == "" {
		t.Fatalf("savepoint: %+v %v", res, err)
	}
	return savepoint.Record{Location: res.Location, Time: e.srv.Clock().Now().Add(-4 * time.Second), Reason: savepoint.ReasonUser, JobID: job}
}

// TestUpgradeLastStateFailoverBeforeCheckpointRead: a last-state upgrade
// read the old job RUNNING; then the JobManager fails over with high
// availability, and the checkpoint statistics, read while the job is
// being restored, show no completed checkpoint and no restore. The job's
// newest state is its latest checkpoint (the one the new JobManager
// restores it from), 20 minutes younger than the caller's savepoint: the
// new job starts from it, never from the savepoint.
func TestUpgradeLastStateFailoverBeforeCheckpointRead(t *testing.T) {
	e := newEnv(t)
	old := retainedJob(t, e)
	latest := userSavepoint(t, e, old)
	e.srv.Clock().Advance(20 * time.Minute)
	mk := func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Latest: latest, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
			JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}
	var p Progress
	for p.Phase != PhaseObserveCheckpoints {
		if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
			t.Fatalf("before the checkpoint read: %v %+v", err, p)
		}
	}
	if p.Replace.Observed.State != flinkapi.JobRunning {
		t.Fatalf("observed %s, want RUNNING", p.Replace.Observed.State)
	}
	e.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	info, _ := e.srv.Job(p.Submit.NewJobID)
	if info.RestoredFrom == latest.Location || p.Replace.RestoreKind != policy.KindCheckpoint {
		t.Fatalf("restored from %s %q, the caller's savepoint 20 minutes older than the job's latest checkpoint", p.Replace.RestoreKind, info.RestoredFrom)
	}
	var newest flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		if s.Job == old && !s.Savepoint && !s.Removed && s.Taken.After(newest.Taken) {
			newest = s
		}
	}
	if info.RestoredFrom != newest.Location || info.State != flinkapi.JobRunning {
		t.Errorf("new job %+v, want it RUNNING from the old job's newest retained checkpoint %q", info, newest.Location)
	}
}

// TestUpgradeFailedWhileStoppingRestoresNewerSavepoint: the trigger of
// an upgrade's stop with savepoint is recorded, and sent 10 s later (the
// caller was away); the savepoint completes, then the job fails while
// stopping and ends FAILED. Its checkpoints, every second, completed
// after the trigger was recorded but before it was sent: the savepoint,
// which Flink's checkpoint statistics show triggered after them, is the
// job's newest state, and the new job starts from it (Savepoint mode with
// FallbackToLastState accepts either).
func TestUpgradeFailedWhileStoppingRestoresNewerSavepoint(t *testing.T) {
	e := newEnv(t)
	old := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION", "restart-strategy.type": "none"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(30 * time.Second)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping, Job: old, Times: 1})
	mk := func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, FallbackToLastState: true},
			JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}
	var p Progress
	for p.Phase != PhaseSavepoint {
		if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
			t.Fatalf("before the savepoint: %v %+v", err, p)
		}
	}
	e.srv.Clock().Advance(10 * time.Second)
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	if p.Replace.StopOutcome != OutcomeJobFailedWhileStopping || p.Savepoint.Location == "" {
		t.Fatalf("stop %s, savepoint %q: want the job failed while stopping after its savepoint", p.Replace.StopOutcome, p.Savepoint.Location)
	}
	info, _ := e.srv.Job(p.Submit.NewJobID)
	if info.RestoredFrom != p.Savepoint.Location || info.State != flinkapi.JobRunning {
		t.Errorf("new job RUNNING from %q (%s %s), want from the savepoint %q, newer than every checkpoint", info.RestoredFrom, p.Replace.RestoreKind, info.State, p.Savepoint.Location)
	}
}

// TestUpgradeLastStateStaleDecisionWithoutCheckpoint: a last-state
// upgrade of a job started a second before from a savepoint: it has no
// checkpoint yet, and the policy chooses the savepoint. The caller is
// away for 4 minutes before the cancel; the job has checkpointed every
// 5 s since. The decision is taken again on what Flink shows now: the
// new job starts from the job's newest checkpoint, not from the
// savepoint 4 minutes older.
func TestUpgradeLastStateStaleDecisionWithoutCheckpoint(t *testing.T) {
	e := newEnv(t)
	first := retainedJob(t, e)
	latest := userSavepoint(t, e, first)
	if err := e.c.CancelJob(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	old := flinkapi.JobID("00000000000000000000000000000def")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: old, SavepointPath: latest.Location,
		ProgramArgs:        []string{"--out", "/out2", "--keys", "2", "--rate", "10", "--checkpoint-interval", "5000"},
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(time.Second)
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
	if p.Replace.RestoreFrom != latest.Location {
		t.Fatalf("chose %s %q, want the savepoint the job started from (no checkpoint yet)", p.Replace.RestoreKind, p.Replace.RestoreFrom)
	}
	e.srv.Clock().Advance(4 * time.Minute)
	if res := resume(t, e, mk, &p); res.Outcome != OutcomeSucceeded {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	var newest flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		if s.Job == old && !s.Savepoint && !s.Removed && s.Taken.After(newest.Taken) {
			newest = s
		}
	}
	info, _ := e.srv.Job(p.Submit.NewJobID)
	if newest.Location == "" || info.RestoredFrom != newest.Location || info.State != flinkapi.JobRunning {
		t.Errorf("new job RUNNING from %q (%s), want from the old job's newest checkpoint %q", info.RestoredFrom, info.State, newest.Location)
	}
}
