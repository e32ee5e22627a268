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

// discardedStarts are the jobs the fake ran from a checkpoint it had
// discarded (a start Flink refuses), and whether st's Latest names one.
func discardedStarts(k *cluster) (runs []string, latest bool) {
	removed := map[string]bool{}
	for _, s := range k.srv.Snapshots() {
		if s.Removed && !s.Savepoint {
			removed[s.Location] = true
		}
	}
	for _, r := range k.srv.Requests() {
		if r.Route == "POST /jars/:jarid/run" && r.Status == 400 {
			runs = append(runs, r.Path)
		}
	}
	return runs, removed[k.st.Latest.Location]
}

// TestVerifiedDriverAdoptedCheckpointLostJob: a job started by hand
// that retains its checkpoints is adopted; its latest checkpoint is
// recorded as its newest state. The job runs on and completes others
// (Flink discards that one), then a JobManager without high availability
// forgets it. No reading shows which checkpoint the job retained last and
// no Storage is set: the restart does not send a start from the recorded
// checkpoint (which Flink would refuse), and once another job is the
// deployment's, the recorded checkpoint is no longer its newest state.
func TestVerifiedDriverAdoptedCheckpointLostJob(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	spec.Adopt = userJob
	k.until("adopt", spec, 5, func(st *JobStatus) bool { return st.JobID == userJob && st.Action == ActionAdopt })
	recorded := k.st.Latest.Location
	if recorded == "" {
		t.Fatal("the adoption recorded no newest state")
	}
	k.srv.Clock().Advance(5 * time.Second) // later checkpoints subsume it
	k.srv.RestartJobManager(flinktest.RestartOptions{})
	k.srv.Clock().Advance(time.Second)
	k.until("restart", spec, 100, func(st *JobStatus) bool {
		return st.Action == ActionRestart && st.Progress.Done() && !st.InFlight()
	})
	for _, s := range k.srv.Snapshots() {
		if s.Location == recorded && !s.Removed {
			t.Fatalf("the recorded checkpoint %s was not discarded: the test shows nothing", recorded)
		}
	}
	if runs, _ := discardedStarts(k); len(runs) > 0 {
		t.Errorf("restart %s (%s): jobs run from a checkpoint Flink had discarded (refused): %v", k.st.Progress.Outcome, k.st.Progress.Reason, runs)
	}
	// A stateless update starts another job.
	spec.Update.Mode = policy.UpgradeStateless
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.until("update", spec, 100, func(st *JobStatus) bool {
		return st.JobID != userJob && st.JobID != "" && !st.InFlight() && st.JobState == flinkapi.JobRunning
	})
	runs, latest := discardedStarts(k)
	if len(runs) > 0 {
		t.Errorf("jobs run from a checkpoint Flink had discarded (refused): %v", runs)
	}
	if latest || k.st.Latest.Location == recorded {
		t.Errorf("the status's newest state is still the discarded checkpoint %s", k.st.Latest.Location)
	}
}

// TestVerifiedDriverDeleteWithoutJobKeepsLatest: a status that knows a
// newest state (reused after a Delete, or a savepoint imported) deploys
// a job the cluster has no slots for: the deploy is blocked and no job
// runs. A Delete then finds nothing deployed, and still leaves the
// status's newest state in the restore-point store, for a later deploy
// under the name.
func TestVerifiedDriverDeleteWithoutJobKeepsLatest(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Parallelism = 5 // 4 slots
	latest := savepoint.Record{Location: "file:/tmp/flinktest/savepoints/savepoint-000000-imported", Time: k.srv.Clock().Now().Add(-time.Minute),
		Reason: savepoint.ReasonImported}
	k.st = JobStatus{FormatVersion: FormatVersion, Latest: latest}
	k.st.Savepoints = k.st.Savepoints.Add(latest)
	k.until("blocked", spec, 50, func(st *JobStatus) bool {
		return st.Action == ActionDeploy && st.Progress.Done() && st.Progress.Outcome == OutcomeBlocked
	})
	if k.st.JobID != "" || k.st.Latest.Location != latest.Location {
		t.Fatalf("blocked deploy: job %q, latest %q", k.st.JobID, k.st.Latest.Location)
	}
	for range 20 {
		if res := k.call(spec, true); res.Done {
			break
		}
	}
	if !k.st.Deleted {
		t.Fatalf("not deleted: %s %s", k.st.Reason, k.st.Message)
	}
	rec, ok, err := k.store.Get(context.Background(), "app/counter")
	if err != nil || !ok || rec.Location != latest.Location {
		t.Errorf("the store holds %q (%v, %v) after the Delete, want the status's newest state %q", rec.Location, ok, err, latest.Location)
	}
}

// TestVerifiedDriverFailoverAfterSavepoint: a savepoint of the job
// completes, then its JobManager fails over (with high availability)
// and recovers the job from its latest checkpoint, taken before the
// savepoint: Flink never recovers a job from a savepoint. The job's
// state since derives from that checkpoint (an exactly-once sink aborted
// what the savepoint holds pending), so a last-state upgrade starts the
// new job from it, not from the savepoint of the execution the job left.
func TestVerifiedDriverFailoverAfterSavepoint(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "60000"}
	spec.Update.Mode = policy.UpgradeLastState
	k.settle("deploy", spec)
	k.srv.Clock().Advance(65 * time.Second) // a checkpoint at 60 s
	sp := k.savepointByHand(k.st.JobID)
	rec := savepoint.Record{Location: sp, Time: k.srv.Clock().Now().Add(-5 * time.Second), JobID: k.st.JobID, Reason: savepoint.ReasonUser}
	k.st.Savepoints = k.st.Savepoints.Add(rec)
	k.st.Latest = rec
	k.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
	k.srv.Clock().Advance(5 * time.Second)
	recovered := k.job().Restored
	if recovered == "" || recovered == sp {
		t.Fatalf("the job recovered from %q", recovered)
	}
	old := k.st.JobID
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.until("upgrade", spec, 200, func(st *JobStatus) bool {
		return st.JobID != old && !st.InFlight() && st.JobState == flinkapi.JobRunning
	})
	if got := k.job().RestoredFrom; got != recovered {
		t.Errorf("upgraded from %q, want the checkpoint %q the job failed over to (not the savepoint %q of the execution it left)", got, recovered, sp)
	}
}

// adoptRunning starts a job by hand that retains its checkpoints, adopts
// it (its latest checkpoint becomes the status's newest state) and lets
// it run on until Flink discarded that checkpoint. It returns the spec
// and the checkpoint recorded.
func adoptRunning(t *testing.T, k *cluster) (JobSpec, string) {
	t.Helper()
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	spec.Adopt = userJob
	k.until("adopt", spec, 5, func(st *JobStatus) bool { return st.JobID == userJob && st.Action == ActionAdopt })
	recorded := k.st.Latest.Location
	if recorded == "" {
		t.Fatal("the adoption recorded no newest state")
	}
	k.srv.Clock().Advance(5 * time.Second)
	for _, s := range k.srv.Snapshots() {
		if s.Location == recorded && !s.Removed {
			t.Fatalf("the recorded checkpoint %s was not discarded: the test shows nothing", recorded)
		}
	}
	return spec, recorded
}

// TestVerifiedDriverTeardownKeepsNoRanOnCheckpoint: an adopted job, whose
// latest checkpoint the adoption recorded, runs on (Flink discards that
// checkpoint) and is deleted under the Stateless mode: cancelled, its
// checkpoints not read. The restore-point store does not get the
// discarded checkpoint as the newest state for a later deploy.
func TestVerifiedDriverTeardownKeepsNoRanOnCheckpoint(t *testing.T) {
	k := newCluster(t, true)
	spec, recorded := adoptRunning(t, k)
	spec.Update.Mode = policy.UpgradeStateless
	for range 50 {
		if res := k.call(spec, true); res.Done {
			break
		}
	}
	if !k.st.Deleted {
		t.Fatalf("not deleted: %s %s", k.st.Reason, k.st.Message)
	}
	if rec, ok, _ := k.store.Get(context.Background(), "app/counter"); ok && rec.Location == recorded {
		t.Errorf("the store keeps the checkpoint %s Flink discarded as the newest state", recorded)
	}
	if k.st.Latest.Location == recorded {
		t.Errorf("the status keeps the checkpoint %s Flink discarded as the newest state", recorded)
	}
}

// TestVerifiedDriverDetachedRanOnCheckpoint: an adopted job, whose latest
// checkpoint the adoption recorded, is detached by a Delete and runs on
// (Flink discards that checkpoint). The deployment is created again
// with the status stored before: its deploy starts a job of its own,
// never from the detached job's discarded checkpoint.
func TestVerifiedDriverDetachedRanOnCheckpoint(t *testing.T) {
	k := newCluster(t, true)
	spec, recorded := adoptRunning(t, k)
	spec.OnDelete = DeleteDetach
	if res := k.call(spec, true); !res.Done || k.st.Detached != userJob {
		t.Fatalf("detach: %+v %s %s", res, k.st.Reason, k.st.Message)
	}
	k.srv.Clock().Advance(time.Minute)
	spec.OnDelete, spec.Adopt = "", ""
	spec.Update.AllowStartWithoutState = true
	k.until("deploy", spec, 100, func(st *JobStatus) bool {
		return st.Action == ActionDeploy && st.Progress.Done() && !st.InFlight()
	})
	if runs, _ := discardedStarts(k); len(runs) > 0 {
		t.Errorf("deploy %s (%s): jobs run from a checkpoint Flink had discarded (refused): %v", k.st.Progress.Outcome, k.st.Progress.Reason, runs)
	}
	if k.st.Latest.Location == recorded {
		t.Errorf("the status keeps the detached job's discarded checkpoint %s as the newest state", recorded)
	}
}

// TestVerifiedDriverSuspendFailedWhileStopping: a suspend's stop took
// a savepoint, the job failed after it and ran on (Flink restarted it)
// until it was cancelled; the suspend then read its retained checkpoint,
// 6 s newer than the savepoint, as its restore point. That checkpoint is
// the status's newest state (beside the savepoint in the history), and
// the Delete that follows keeps it in the restore-point store.
func TestVerifiedDriverSuspendFailedWhileStopping(t *testing.T) {
	k := newCluster(t, true)
	now := k.srv.Clock().Now()
	job := flinkapi.JobID("0123456789abcdef0123456789abcdef")
	sp, chk := "file:/tmp/flinktest/savepoints/savepoint-012345-0fd53d6f9885", "file:/tmp/flinktest/checkpoints/"+string(job)+"/chk-82"
	k.st = JobStatus{FormatVersion: FormatVersion, JobID: job, JobState: flinkapi.JobCanceled, Action: ActionSuspend, Suspended: true,
		Progress: Progress{Phase: PhaseDone, Outcome: OutcomeSucceeded, JobID: job,
			Savepoint: SavepointProgress{Status: savepoint.Status{TriggerTime: now.Add(-time.Minute), Location: sp, JobID: job, Reason: savepoint.ReasonStop},
				Location: sp},
			Replace: ReplaceProgress{PreviousJobID: job, RestoreFrom: chk, RestoreKind: policy.KindCheckpoint,
				Observed: Observed{Checkpoint: chk, CheckpointTime: now.Add(-54 * time.Second)}}}}
	k.controller().recordTaken(&k.st)
	if k.st.Latest.Location != chk {
		t.Fatalf("latest %q, want the retained checkpoint %q, newer than the savepoint %q", k.st.Latest.Location, chk, sp)
	}
	if !hasLocation(k.st.Savepoints.Records, sp) {
		t.Errorf("the savepoint %q is not in the history %+v", sp, k.st.Savepoints.Records)
	}
	for range 10 {
		if res := k.call(JobSpec{Job: k.spec("/out").Job}, true); res.Done {
			break
		}
	}
	if rec, ok, _ := k.store.Get(context.Background(), "app/counter"); !ok || rec.Location != chk {
		t.Errorf("the store holds %q after the Delete, want the retained checkpoint %q", rec.Location, chk)
	}
}

// TestVerifiedDriverStoppedWhileRetentionRead: a last-state upgrade read
// the running job's retained checkpoint, then Flink answered that it did
// not know the job's checkpointing configuration; meanwhile the job was
// stopped with a savepoint from outside, which discards its retained
// checkpoints. The job list shows it FINISHED: the upgrade observes the
// job again and starts the new job from the stop's savepoint, never from
// the checkpoint Flink discarded.
func TestVerifiedDriverStoppedWhileRetentionRead(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update.Mode = policy.UpgradeLastState
	spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	k.until("running", spec, 300, func(st *JobStatus) bool { return !st.InFlight() && st.State == policy.Running && st.runsStably() })
	k.srv.Clock().Advance(10 * time.Second) // a retained checkpoint or two
	old := k.st.JobID
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints/config", Times: 2}); err != nil {
		t.Fatal(err)
	}
	spec.Job.Args = append(spec.Job.Args, "--name", "v1")
	k.until("the retention unconfirmed", spec, 50, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Phase == PhaseObserveRetention && st.Progress.Stop.Unconfirmed
	})
	if k.st.Progress.Replace.Observed.Checkpoint == "" {
		t.Fatal("the upgrade read no retained checkpoint: the test shows nothing")
	}
	chk := k.st.Progress.Replace.Observed.Checkpoint
	stop := k.stopExternally()
	k.until("upgraded", spec, 200, func(st *JobStatus) bool {
		if st.Progress.Replace.RestoreFrom == chk {
			t.Fatalf("the upgrade chose %s, discarded by the stop, in phase %s", chk, st.Progress.Phase)
		}
		return st.Action == ActionUpgrade && st.Progress.Done() && !st.InFlight()
	})
	if runs, _ := discardedStarts(k); len(runs) > 0 {
		t.Errorf("jobs run from a discarded checkpoint: %v", runs)
	}
	if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old || k.st.Progress.Replace.RestoreFrom != stop {
		t.Errorf("upgrade %s from %q, job %s; want Succeeded from the stop's savepoint %s", k.st.Progress.Outcome, k.st.Progress.Replace.RestoreFrom, k.st.JobID, stop)
	}
}
