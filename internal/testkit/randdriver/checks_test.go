package randdriver

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The tests below play a controller that breaks one invariant, by
// hand, through the controller's client, and check that the driver's
// checks count it: every check can fail.

// bench is a driver whose calls a test makes by hand.
type bench struct {
	t   *testing.T
	d   *driver
	ctx context.Context
	jar flinkapi.JarID
}

func newBench(t *testing.T) *bench {
	t.Helper()
	d, err := newDriver(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	b := &bench{t: t, d: d, ctx: context.Background()}
	b.jar, err = d.ctrlC.UploadJarReader(b.ctx, "job.jar", bytes.NewReader(jarBytes(0)))
	if err != nil {
		t.Fatal(err)
	}
	d.newRequests()
	return b
}

// call plays one call of a controller: act sends its requests, and the
// driver checks it as a call that turned before into st.
func (b *bench) call(before, st lifecycle.JobStatus, act func()) {
	b.t.Helper()
	d := b.d
	d.newRequests()
	live := liveJobs(d.srv)
	now := d.now()
	act()
	sent := reqlog.WithoutReplays(d.newRequests())
	first := len(d.ctrlReqs)
	d.ctrlReqs = append(d.ctrlReqs, sent...)
	d.track(before, st, now, first)
	d.checkCall(b.ctx, before, st, lifecycle.Result{RequeueAfter: time.Second}, now, sent, live)
}

// run starts a counter job from path ("" for none).
func (b *bench) run(path string) flinkapi.JobID {
	b.t.Helper()
	id := flinkapi.NewJobID()
	if _, err := b.d.ctrlC.RunJar(b.ctx, b.jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: b.d.spec.Job.Args, SavepointPath: path,
		FlinkConfiguration: b.d.spec.Job.FlinkConfiguration}); err != nil {
		b.t.Fatal(err)
	}
	return id
}

// savepoint takes a savepoint of id and returns its location.
func (b *bench) savepoint(id flinkapi.JobID) string {
	b.t.Helper()
	if _, err := b.d.ctrlC.TriggerSavepoint(b.ctx, id, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()}); err != nil {
		b.t.Fatal(err)
	}
	b.advance(5 * time.Second)
	var loc string
	for _, s := range b.d.srv.Snapshots() {
		if s.Savepoint && s.Job == id {
			loc = s.Location
		}
	}
	if loc == "" {
		b.t.Fatal("no savepoint completed")
	}
	return loc
}

func (b *bench) advance(d time.Duration) { b.d.srv.Clock().Advance(d) }

func (b *bench) want(c Class) {
	b.t.Helper()
	if b.d.res.Count(c) == 0 {
		b.t.Errorf("no %s counted; violations %v", c, b.d.res.Violations)
	}
}

// running is a status of a job that runs the spec's job.
func (b *bench) running(id flinkapi.JobID) lifecycle.JobStatus {
	spec := b.d.spec
	return lifecycle.JobStatus{FormatVersion: lifecycle.FormatVersion, Name: storeName, JobID: id, JobState: flinkapi.JobRunning,
		State: policy.Running, Reason: string(policy.Running), Deployed: spec.Job, Stable: spec.Job,
		Situation: lifecycle.SituationRunning, Settled: true}
}

func TestCheckTwoLiveJobs(t *testing.T) {
	b := newBench(t)
	var st lifecycle.JobStatus
	b.call(st, st, func() {
		b.run("")
		b.run("")
	})
	b.want(TwoLiveJobs)
}

func TestCheckTooManyRequests(t *testing.T) {
	b := newBench(t)
	var st lifecycle.JobStatus
	b.call(st, st, func() {
		for range lifecycle.MaxRequestsPerCall + 1 {
			_, _ = b.d.ctrlC.ListJars(b.ctx)
		}
	})
	b.want(TooManyRequests)
}

func TestCheckStateLossStop(t *testing.T) {
	b := newBench(t)
	b.d.spec.Update.Mode = policy.UpgradeSavepoint
	id := b.run("")
	b.advance(10 * time.Second)
	before := b.running(id)
	st := before
	st.Action, st.Progress = lifecycle.ActionUpgrade, lifecycle.Progress{Phase: lifecycle.PhaseCancel, Started: b.d.now()}
	b.call(before, st, func() {
		if err := b.d.ctrlC.CancelJob(b.ctx, id); err != nil {
			t.Fatal(err)
		}
	})
	b.want(StateLossStop)
}

// An upgrade that cancels a job and starts the next one from an older
// savepoint while the cancelled job's retained checkpoint is newer.
func TestCheckOlderStateRestored(t *testing.T) {
	b := newBench(t)
	b.d.spec.Update.Mode = policy.UpgradeLastState
	b.d.spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"}
	b.d.spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	id := b.run("")
	b.advance(10 * time.Second)
	old := b.savepoint(id)
	b.advance(30 * time.Second) // newer checkpoints
	before := b.running(id)
	before.Latest = savepoint.Record{Location: old, Time: b.d.now().Add(-time.Minute)}
	st := before
	st.Action, st.Progress = lifecycle.ActionUpgrade, lifecycle.Progress{Phase: lifecycle.PhaseSubmit, Started: b.d.now()}
	b.call(before, st, func() {
		if err := b.d.ctrlC.CancelJob(b.ctx, id); err != nil {
			t.Fatal(err)
		}
		b.advance(5 * time.Second)
		b.run(old)
	})
	b.want(OlderStateRestored)
}

// A savepoint completed before the job failed over (a JobManager with
// high availability recovers it from its latest checkpoint, older than
// the savepoint) is no newer state than that checkpoint: a last-state
// start from the checkpoint the job was cancelled with is not counted.
// Without the failover, the savepoint is the newer state and the same
// start is counted.
func TestCheckOlderStateAfterFailover(t *testing.T) {
	for _, failover := range []bool{false, true} {
		b := newBench(t)
		b.d.spec.Update.Mode = policy.UpgradeLastState
		b.d.spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "60000"}
		b.d.spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
		id := b.run("")
		b.advance(65 * time.Second) // one checkpoint, at 60 s
		sp := b.savepoint(id)
		if failover {
			b.d.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
			b.advance(5 * time.Second)
		}
		var chk string
		for _, s := range b.d.srv.Snapshots() {
			if s.Job == id && !s.Savepoint && !s.Removed {
				chk = s.Location
			}
		}
		if chk == "" {
			t.Fatal("no retained checkpoint")
		}
		before := b.running(id)
		before.Latest = savepoint.Record{Location: sp, Time: b.d.now().Add(-5 * time.Second)}
		st := before
		st.Action, st.Progress = lifecycle.ActionUpgrade, lifecycle.Progress{Phase: lifecycle.PhaseSubmit, Started: b.d.now()}
		b.call(before, st, func() {
			if err := b.d.ctrlC.CancelJob(b.ctx, id); err != nil {
				t.Fatal(err)
			}
			b.advance(5 * time.Second)
			b.run(chk)
		})
		if failover {
			b.none(OlderStateRestored)
		} else {
			b.want(OlderStateRestored)
		}
	}
}

// After a restore request to an older savepoint, a restart goes back to
// the newer one the request replaced.
func TestCheckRestartToReplacedSavepoint(t *testing.T) {
	b := newBench(t)
	id := b.run("")
	b.advance(10 * time.Second)
	older := b.savepoint(id)
	b.advance(10 * time.Second)
	newer := b.savepoint(id)
	b.advance(time.Second)
	b.d.spec.Restore = policy.RestoreRequest{Path: older, Token: "t1"}
	before := b.running(id)
	st := before
	st.Action = lifecycle.ActionUpgrade
	var next flinkapi.JobID
	b.call(before, st, func() {
		_ = b.d.ctrlC.CancelJob(b.ctx, id)
		b.advance(5 * time.Second)
		next = b.run(older)
	})
	b.advance(10 * time.Second)
	before = b.running(next)
	before.RestoreHandled = "t1"
	st = before
	st.Action = lifecycle.ActionRestart
	b.call(before, st, func() {
		_ = b.d.ctrlC.CancelJob(b.ctx, next)
		b.advance(5 * time.Second)
		b.run(newer)
	})
	b.want(RestartToReplacedSavepoint)
}

func TestCheckConvergedNotRunning(t *testing.T) {
	b := newBench(t)
	id := b.run("")
	b.advance(10 * time.Second)
	if err := b.d.ctrlC.CancelJob(b.ctx, id); err != nil {
		t.Fatal(err)
	}
	b.advance(10 * time.Second)
	st := b.running(id)
	b.call(st, st, func() { _, _ = b.d.ctrlC.Job(b.ctx, id) })
	b.want(ConvergedNotRunning)
}

func TestCheckLiveAfterDelete(t *testing.T) {
	b := newBench(t)
	id := b.run("")
	b.advance(10 * time.Second)
	st := b.running(id)
	st.State = policy.Cancelled
	b.d.checkDeleted(b.ctx, st, lifecycle.Result{Done: true, Outcome: lifecycle.OutcomeSucceeded})
	b.want(LiveAfterDelete)
}

func TestCheckStuck(t *testing.T) {
	b := newBench(t)
	before := lifecycle.JobStatus{}
	st := before
	st.Action, st.Progress = lifecycle.ActionDeploy, lifecycle.Progress{Phase: lifecycle.PhaseWaitRunning, Started: b.d.now()}
	for range 100 {
		b.call(before, st, func() {})
		before = st
		b.advance(time.Minute)
	}
	b.want(Stuck)
}

func TestCheckNeverStable(t *testing.T) {
	b := newBench(t)
	b.d.spec.Job.Args = []string{"--out", "/out", "--checkpoint-interval", "0"}
	id := b.run("")
	st := b.running(id)
	st.Stable = lifecycle.JobTemplate{} // never seen stable
	st.Reason = "WaitingForStable"
	for range 40 {
		b.call(st, st, func() { _, _ = b.d.ctrlC.Job(b.ctx, id) })
		b.advance(time.Minute)
	}
	b.want(NeverStable)
}

func TestCheckStuckBlueGreen(t *testing.T) {
	b := newBench(t)
	b.d.spec.BlueGreen.Enabled = true
	b.d.spec.Job.Args = []string{"--out", "/out", "--restart-attempts", "0"}
	b.d.spec.Restart = policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxRestarts: 3}
	id := b.run("")
	b.advance(10 * time.Second)
	if err := b.d.srv.FailJob(id, "boom"); err != nil {
		t.Fatal(err)
	}
	st := b.running(id)
	st.Deployed.Args = []string{"--out", "/out", "--name", "older"} // a change pending
	st.State, st.Reason = policy.Failed, "Waiting"
	for range 40 {
		b.call(st, st, func() {})
		b.advance(time.Minute)
	}
	b.want(StuckBlueGreen)
}

func TestCheckStuckUndeployable(t *testing.T) {
	b := newBench(t)
	b.d.spec.Job.Parallelism = b.d.slots + 1
	st := lifecycle.JobStatus{State: policy.Deploying, Reason: "DeployInProgress"}
	for range 40 {
		b.call(st, st, func() {})
		b.advance(time.Minute)
	}
	b.want(StuckUndeployable)
}

// The fake the checks rely on keeps a snapshot's trigger id and state
// time.
func TestSnapshotsCarryTriggers(t *testing.T) {
	b := newBench(t)
	id := b.run("")
	b.advance(10 * time.Second)
	loc := b.savepoint(id)
	var s flinktest.Snapshot
	for _, x := range b.d.srv.Snapshots() {
		if x.Location == loc {
			s = x
		}
	}
	if s.TriggerID == "" || s.Taken.IsZero() {
		t.Fatalf("snapshot %+v", s)
	}
}

// A blue/green upgrade whose old job a user stopped with a newer
// savepoint starts the new job from its own, older savepoint: counted
// when the controller read the old job after the stop completed, not
// when the stop completed after its last read of the old job before the
// jar run (nothing it could read showed it).
func TestCheckExternalStopSeenBeforeRun(t *testing.T) {
	for _, seen := range []bool{true, false} {
		b := newBench(t)
		id := b.run("")
		b.advance(10 * time.Second)
		ours := b.savepoint(id)
		before := b.running(id)
		before.Action, before.Progress = lifecycle.ActionBlueGreen, lifecycle.Progress{Phase: lifecycle.PhaseSubmit, Started: b.d.now(),
			JobID: id, Replace: lifecycle.ReplaceProgress{PreviousJobID: id, RestoreFrom: ours}, Savepoint: lifecycle.SavepointProgress{Location: ours}}
		read := func() {
			if _, err := b.d.ctrlC.JobStatus(b.ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if !seen {
			b.call(before, before, read)
		}
		trig := flinkapi.NewTriggerID()
		b.d.userTriggers[string(trig)] = true
		if _, err := b.d.user.StopWithSavepoint(b.ctx, id, flinkapi.StopRequest{TriggerID: trig}); err != nil {
			t.Fatal(err)
		}
		b.d.userStopped[id] = true
		b.advance(5 * time.Second)
		b.call(before, before, func() {
			if seen {
				read()
			}
			b.run(ours)
		})
		if got := b.d.res.Count(ExternalStopMisread); seen != (got > 0) {
			t.Errorf("stop seen by the controller %v: %d ExternalStopMisread; violations %v", seen, got, b.d.res.Violations)
		}
		if !seen && b.d.res.Count(OlderStateRestored) > 0 {
			t.Errorf("an unseen stop counted as OlderStateRestored: %v", b.d.res.Violations)
		}
	}
}
