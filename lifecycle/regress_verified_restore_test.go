package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// lastStateUpgrade is a last-state upgrade of the old job, whose caller
// knows the savepoint latest.
func lastStateUpgrade(e *env, old flinkapi.JobID, latest savepoint.Record) func() Stepper {
	return func() Stepper {
		return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: old, Latest: latest, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
			JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}
}

// newestCheckpoint is the newest checkpoint of job the fake's disk holds.
func newestCheckpoint(e *env, job flinkapi.JobID) flinktest.Snapshot {
	var newest flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		if s.Job == job && !s.Savepoint && !s.Removed && s.Taken.After(newest.Taken) {
			newest = s
		}
	}
	return newest
}

// wantFromNewestCheckpoint checks that the upgrade of old that ended in
// res started the new job from old's newest retained checkpoint, not from
// the savepoint latest.
func wantFromNewestCheckpoint(t *testing.T, e *env, old flinkapi.JobID, latest savepoint.Record, res Result, p *Progress) {
	t.Helper()
	if res.Outcome != OutcomeSucceeded {
		t.Fatalf("%s (%s)", res.Outcome, p.Reason)
	}
	info, _ := e.srv.Job(p.Submit.NewJobID)
	if info.RestoredFrom == latest.Location {
		t.Fatalf("restored from the savepoint %q, 20 minutes older than the job's retained checkpoint", latest.Location)
	}
	if want := newestCheckpoint(e, old); info.RestoredFrom != want.Location || info.State != flinkapi.JobRunning || want.Location == "" {
		t.Errorf("new job %s from %q, want it RUNNING from the old job's newest retained checkpoint %q", info.State, info.RestoredFrom, want.Location)
	}
}

// TestVerifiedRestoreCachedDiscardedCheckpoint: the checkpoint
// statistics a last-state upgrade reads come from Flink's cache, filled
// 1.5 s earlier: their latest completed checkpoint has been subsumed
// since (Flink shows it discarded). That is no answer that the job
// retains no checkpoint: the statistics are read again once the cache
// passed, and the new job starts from the newest checkpoint, not from
// the caller's savepoint 20 minutes older.
func TestVerifiedRestoreCachedDiscardedCheckpoint(t *testing.T) {
	e := newEnv(t)
	old := retainedJob(t, e)
	latest := userSavepoint(t, e, old)
	e.srv.Clock().Advance(20*time.Minute + 300*time.Millisecond)
	if _, err := e.c.Checkpoints(context.Background(), old); err != nil { // fills Flink's cache
		t.Fatal(err)
	}
	e.srv.Clock().Advance(1500 * time.Millisecond)
	cached, err := e.c.Checkpoints(context.Background(), old)
	if err != nil || cached.LatestCompleted == nil || !cached.LatestCompleted.Discarded {
		t.Fatalf("the cached statistics should show their latest checkpoint discarded: %+v %v", cached, err)
	}
	var p Progress
	res := resume(t, e, lastStateUpgrade(e, old, latest), &p)
	wantFromNewestCheckpoint(t, e, old, latest, res, &p)
}

// TestVerifiedRestoreCheckpointsNotFoundOnce: the one read of the
// checkpoint statistics of a last-state upgrade answers 404 (a
// JobManager failing over). It is no answer that the job has no
// statistics: Flink's job list is asked, it shows the job, and the
// statistics are read again; the new job starts from the newest
// checkpoint, not from the caller's savepoint 20 minutes older.
func TestVerifiedRestoreCheckpointsNotFoundOnce(t *testing.T) {
	e := newEnv(t)
	old := retainedJob(t, e)
	latest := userSavepoint(t, e, old)
	e.srv.Clock().Advance(20 * time.Minute)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints", Job: old, Times: 1})
	var p Progress
	res := resume(t, e, lastStateUpgrade(e, old, latest), &p)
	wantFromNewestCheckpoint(t, e, old, latest, res, &p)
	if count(e.srv, "GET /jobs") == 0 {
		t.Errorf("Flink's job list was not asked after the 404: %v", routes(e.srv))
	}
}

// TestVerifiedRestoreCancelResentAfterAbsence: a last-state upgrade
// records the job's latest checkpoint and sends the cancel, which Flink
// answers 503 (it does not take). The caller is away for a minute, the
// job checkpoints on every second and Flink discards the checkpoint
// recorded. The cancel is not resent on that minute-old reading: the
// decision is taken again on what Flink shows now. The statistics read
// after the cancel answer 404 once (a failover); the new job starts from
// the job's newest retained checkpoint, never from the discarded one.
func TestVerifiedRestoreCancelResentAfterAbsence(t *testing.T) {
	e := newEnv(t)
	old := retainedJob(t, e)
	latest := userSavepoint(t, e, old)
	e.srv.Clock().Advance(20 * time.Minute)
	mk := lastStateUpgrade(e, old, latest)
	var p Progress
	for p.Phase != PhaseCancel {
		if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
			t.Fatalf("before the cancel: %v %+v", err, p)
		}
	}
	recorded := p.Replace.RestoreFrom
	if p.Replace.RestoreKind != policy.KindCheckpoint || recorded == "" {
		t.Fatalf("chose %s %q, want the job's latest checkpoint", p.Replace.RestoreKind, recorded)
	}
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "PATCH /jobs/:jobid", Job: old, Times: 1})
	if res, err := mk().Step(context.Background(), &p); err != nil || res.Done || p.Phase != PhaseWaitStopped || p.Requests == 0 {
		t.Fatalf("cancel: %v %+v", err, p)
	}
	e.srv.Clock().Advance(time.Minute)
	if ok, _ := e.srv.SavepointExists(recorded); ok {
		t.Fatalf("the checkpoint recorded %s should have been discarded during the absence", recorded)
	}
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints", Job: old, Times: 1})
	res := resume(t, e, mk, &p)
	wantFromNewestCheckpoint(t, e, old, latest, res, &p)
}

// TestVerifiedRestoreRestartRequestOfFailedJob: a job under the
// Savepoint update mode (no fallback to last state) and a restart policy
// that never restarts it fails, 20 minutes after its last savepoint; it
// retains its checkpoints. A restart request starts it again from its
// newest state, the retained checkpoint of a second before the failure,
// as the restart policy chooses, not from the savepoint.
func TestVerifiedRestoreRestartRequestOfFailedJob(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.FlinkConfiguration["restart-strategy.type"] = "none"
	spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeSavepoint}
	spec.Restart.Mode = policy.RestartNever
	k.settle("create", spec)
	spec.Requests.Savepoint = "sp-1"
	k.until("savepoint", spec, 100, func(st *JobStatus) bool {
		return st.RequestsHandled.Savepoint == "sp-1" && !st.InFlight() && st.Latest.Location != ""
	})
	latest := k.st.Latest
	k.srv.Clock().Advance(20 * time.Minute)
	failed := k.st.JobID
	if err := k.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(5 * time.Second)
	k.until("failed", spec, 20, func(st *JobStatus) bool { return st.JobState == flinkapi.JobFailed && !st.InFlight() })
	spec.Requests.Restart = "restart-1"
	k.until("restart request", spec, 300, func(st *JobStatus) bool {
		return st.Action == ActionRestartRequest && st.Progress.Done() && !st.InFlight()
	})
	if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == failed {
		t.Fatalf("restart request: %s (%s)", k.st.Progress.Outcome, k.st.Progress.Reason)
	}
	var newest flinktest.Snapshot
	for _, s := range k.srv.Snapshots() {
		if s.Job == failed && !s.Savepoint && !s.Removed && s.Taken.After(newest.Taken) {
			newest = s
		}
	}
	info := k.job()
	if info.RestoredFrom == latest.Location {
		t.Fatalf("restarted from the savepoint %q, 20 minutes older than the failed job's retained checkpoint %q", latest.Location, newest.Location)
	}
	if newest.Location == "" || info.RestoredFrom != newest.Location {
		t.Errorf("restarted from %q, want the failed job's newest retained checkpoint %q", info.RestoredFrom, newest.Location)
	}
}

// savepointByHand takes a savepoint of job as a user would and returns
// its location.
func (k *cluster) savepointByHand(job flinkapi.JobID) string {
	k.t.Helper()
	op, err := k.c.TriggerSavepoint(context.Background(), job, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		k.t.Fatal(err)
	}
	k.srv.Clock().Advance(5 * time.Second)
	res, err := k.c.OperationStatus(context.Background(), op)
	if err != nil || res.Location == "" {
		k.t.Fatalf("savepoint: %+v %v", res, err)
	}
	return res.Location
}

// TestVerifiedRestoreAdoptWithoutRetainedCheckpoints: a job started by
// hand without externalized checkpoints (Flink discards its checkpoints
// when it ends) and with a savepoint taken by hand is adopted 30 s after
// the savepoint. Its latest checkpoint, newer, is no state that outlives
// the job: the adoption records the savepoint as the newest state. When
// the job fails, the Controller restarts it from the savepoint, instead
// of trying a checkpoint Flink discarded with the job again and again.
func TestVerifiedRestoreAdoptWithoutRetainedCheckpoints(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.FlinkConfiguration = map[string]string{"restart-strategy.type": "none"}
	k.startByHand(spec, 10*time.Second)
	sp := k.savepointByHand(userJob)
	k.srv.Clock().Advance(30 * time.Second)
	spec.Adopt = userJob
	k.until("adopt", spec, 5, func(st *JobStatus) bool { return st.JobID == userJob && st.Action == ActionAdopt })
	if k.st.Latest.Location != sp {
		t.Fatalf("adopted with latest %q, want the savepoint %q: the job's checkpoints do not outlive it", k.st.Latest.Location, sp)
	}
	if err := k.srv.FailJob(userJob, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(5 * time.Second)
	k.until("restart", spec, 100, func(st *JobStatus) bool {
		return st.Action == ActionRestart && st.Progress.Done() && !st.InFlight()
	})
	if k.st.Progress.Outcome != OutcomeSucceeded || k.job().RestoredFrom != sp {
		t.Errorf("restart %s (%s), restored from %q, want from the savepoint %q", k.st.Progress.Outcome, k.st.Progress.Reason, k.job().RestoredFrom, sp)
	}
}

// TestVerifiedRestoreAdoptStatisticsUnavailable: the checkpoint
// statistics of a job to adopt answer 503 once. That is no answer that
// the job has no state: the adoption waits and reads them again, and
// records the job's savepoint in the history and its newest state
// (its retained checkpoint, newer) as the status's latest.
func TestVerifiedRestoreAdoptStatisticsUnavailable(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	sp := k.savepointByHand(userJob)
	k.srv.Clock().Advance(30 * time.Second)
	spec.Adopt = userJob
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/checkpoints", Job: userJob, Times: 1}); err != nil {
		t.Fatal(err)
	}
	k.until("adopt", spec, 10, func(st *JobStatus) bool { return st.JobID == userJob && st.Action == ActionAdopt })
	if !hasLocation(k.st.Savepoints.Records, sp) {
		t.Errorf("the job's savepoint %q is not in the history %+v", sp, k.st.Savepoints.Records)
	}
	stats, err := k.c.Checkpoints(context.Background(), userJob)
	if err != nil || stats.LatestCompleted == nil {
		t.Fatalf("checkpoints %+v %v", stats, err)
	}
	if k.st.Latest.Location == "" || k.st.Latest.Time.Before(stats.LatestCompleted.TriggerTime.Add(-10*time.Second)) {
		t.Errorf("adopted with latest %+v, want the job's newest state (its retained checkpoint %s)", k.st.Latest, stats.LatestCompleted.ExternalPath)
	}
}

// fakeDisk is a Storage that shows the fake's simulated disk: the
// checkpoints Flink has not removed, each chk-N directory with its
// _metadata, in the directories of their jobs.
type fakeDisk struct{ srv *flinktest.Server }

func (d fakeDisk) List(_ context.Context, dir string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(e string) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, s := range d.srv.Snapshots() {
		loc := strings.TrimSuffix(s.Location, "/")
		if s.Savepoint || s.Removed {
			continue
		}
		if loc == dir {
			add(loc + "/_metadata")
		}
		for p := loc; strings.Contains(p, "/"); p = p[:strings.LastIndex(p, "/")] {
			if p[:strings.LastIndex(p, "/")] == dir {
				add(p)
			}
		}
	}
	return out, nil
}

func (fakeDisk) Delete(context.Context, string) error { return errors.New("fakeDisk: read only") }

// TestVerifiedRestoreCheckpointOnStorage: a last-state upgrade records
// the job's latest checkpoint and cancels the job; the cancel does not
// take (503), the job is read running 5 s later and cancelled again, by
// when Flink has discarded the checkpoint recorded. The JobManager then
// restarts without high availability: no reading of the cancelled job
// is left. Storage shows the job's newest completed checkpoint (its
// _metadata written): the new job starts from it, neither from the
// discarded one (which Flink would refuse) nor from the savepoint.
func TestVerifiedRestoreCheckpointOnStorage(t *testing.T) {
	e := newEnv(t)
	old := retainedJob(t, e)
	latest := userSavepoint(t, e, old)
	e.srv.Clock().Advance(20 * time.Minute)
	mk := func() Stepper {
		u := lastStateUpgrade(e, old, latest)().(*Upgrade)
		u.storage = fakeDisk{e.srv}
		return u
	}
	var p Progress
	for p.Phase != PhaseCancel {
		if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
			t.Fatalf("before the cancel: %v %+v", err, p)
		}
	}
	recorded := p.Replace.RestoreFrom
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "PATCH /jobs/:jobid", Job: old, Times: 1})
	for range 2 { // the cancel that does not take, the read that shows the job running
		if res, err := mk().Step(context.Background(), &p); err != nil || res.Done {
			t.Fatalf("cancel: %v %+v", err, p)
		}
	}
	if p.Phase != PhaseCancel {
		t.Fatalf("phase %s, want the cancel sent again", p.Phase)
	}
	e.srv.Clock().Advance(5 * time.Second)
	if res, err := mk().Step(context.Background(), &p); err != nil || res.Done || p.Phase != PhaseWaitStopped {
		t.Fatalf("cancel again: %v %+v", err, p)
	}
	if ok, _ := e.srv.SavepointExists(recorded); ok {
		t.Fatalf("the checkpoint recorded %s should have been discarded before the job was cancelled", recorded)
	}
	e.srv.RestartJobManager(flinktest.RestartOptions{})
	res := resume(t, e, mk, &p)
	wantFromNewestCheckpoint(t, e, old, latest, res, &p)
}

// TestVerifiedRestoreLatestCheckpointGoneFromStorage: the newest state
// a caller recorded of a job is one of its checkpoints, which Flink
// discarded when the job failed (it retains none). A restart checks it
// against the storage before the run: the job's directory no longer
// holds it, so no run from it is sent (Flink would refuse it at every
// retry); the restart ends Blocked for want of state instead.
func TestVerifiedRestoreLatestCheckpointGoneFromStorage(t *testing.T) {
	e := newEnv(t)
	job := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: job, ProgramArgs: newArgs(),
		FlinkConfiguration: map[string]string{"restart-strategy.type": "none"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(30 * time.Second)
	cp := newestCheckpoint(e, job)
	if cp.Location == "" {
		t.Fatal("no checkpoint")
	}
	if err := e.srv.FailJob(job, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	if ok, _ := e.srv.SavepointExists(cp.Location); ok {
		t.Fatalf("Flink should have discarded %s with the job", cp.Location)
	}
	latest := savepoint.Record{Location: cp.Location, Time: cp.Taken, JobID: job}
	mk := func() Stepper {
		return &Restart{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: job, Latest: latest, Policy: policy.RestartPolicy{Mode: policy.RestartFromLatestState},
			JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}, storage: fakeDisk{e.srv}}
	}
	var p Progress
	res := resume(t, e, mk, &p)
	if n := runsFrom(e.srv, cp.Location); n != 0 || res.Outcome != OutcomeBlocked {
		t.Errorf("%s (%s); %d runs from the discarded checkpoint %s", res.Outcome, p.Reason, n, cp.Location)
	}
}

// TestVerifiedRestoreAdoptCachedStatistics: the checkpoint statistics of
// a job to adopt come from Flink's cache, filled 1.5 s earlier: their
// latest checkpoint has been subsumed since (Flink shows it discarded).
// They are read again once the cache passed: the adoption records the
// job's newest state, its retained checkpoint, not the savepoint 30 s
// older.
func TestVerifiedRestoreAdoptCachedStatistics(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	sp := k.savepointByHand(userJob)
	k.srv.Clock().Advance(30*time.Second + 300*time.Millisecond)
	if _, err := k.c.Checkpoints(context.Background(), userJob); err != nil { // fills Flink's cache
		t.Fatal(err)
	}
	k.srv.Clock().Advance(1500 * time.Millisecond)
	spec.Adopt = userJob
	k.until("adopt", spec, 10, func(st *JobStatus) bool { return st.JobID == userJob && st.Action == ActionAdopt })
	if k.st.Latest.Location == sp || k.st.Latest.Location == "" {
		t.Errorf("adopted with latest %q, want the job's retained checkpoint, 30 s newer than its savepoint %q", k.st.Latest.Location, sp)
	}
}
