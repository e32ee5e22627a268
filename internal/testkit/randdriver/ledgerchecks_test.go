package randdriver

import (
	"bytes"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The checks of the newer invariants, each played by hand as the tests
// of checks_test.go do: a controller that breaks it is counted, one that
// keeps it is not.

// checkpointing gives the bench's spec a checkpoint every second, with
// retained checkpoints.
func (b *bench) checkpointing() {
	b.d.spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000", "--restart-attempts", "0", "--name", "v0"}
	b.d.spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
}

func (b *bench) none(c Class) {
	b.t.Helper()
	if n := b.d.res.Count(c); n > 0 {
		b.t.Errorf("%d %s counted: %v", n, c, b.d.res.Violations[c])
	}
}

// A disposal of the status's Latest is counted; one of an older
// savepoint of the history is not.
func TestCheckNeverDisposeDisposed(t *testing.T) {
	for _, latest := range []bool{true, false} {
		b := newBench(t)
		id := b.run("")
		b.advance(10 * time.Second)
		older := b.savepoint(id)
		b.advance(10 * time.Second)
		newer := b.savepoint(id)
		st := b.running(id)
		st.Latest = savepoint.Record{Location: newer, Time: b.d.now()}
		st.Savepoints = st.Savepoints.Add(savepoint.Record{Location: older, Time: b.d.now().Add(-10 * time.Second)}).Add(st.Latest)
		loc := older
		if latest {
			loc = newer
		}
		b.call(st, st, func() {
			if _, err := b.d.ctrlC.DisposeSavepoint(b.ctx, loc); err != nil {
				t.Fatal(err)
			}
		})
		if latest {
			b.want(NeverDisposeDisposed)
		} else {
			b.none(NeverDisposeDisposed)
		}
	}
}

// A run from a checkpoint Flink has discarded (subsumed by a newer one)
// is counted.
func TestCheckDiscardedCheckpointStart(t *testing.T) {
	b := newBench(t)
	b.checkpointing()
	id := b.run("")
	b.advance(10 * time.Second)
	var gone string
	for _, s := range b.d.srv.Snapshots() {
		if s.Job == id && !s.Savepoint && s.Removed {
			gone = s.Location
		}
	}
	if gone == "" {
		t.Fatal("no discarded checkpoint")
	}
	st := b.running(id)
	st.Action = lifecycle.ActionRestart
	b.call(st, st, func() {
		_ = b.d.ctrlC.CancelJob(b.ctx, id)
		b.advance(time.Second)
		_, _ = b.d.ctrlC.RunJar(b.ctx, b.jar, flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), ProgramArgs: b.d.spec.Job.Args, SavepointPath: gone})
	})
	b.want(DiscardedCheckpointStart)
}

// A status converged on a job that runs but completed no checkpoint yet
// is counted; once it completed one, it is not.
func TestCheckConvergedTooEarly(t *testing.T) {
	for _, early := range []bool{true, false} {
		b := newBench(t)
		b.d.spec.Job.Args = []string{"--out", "/out", "--checkpoint-interval", "5000", "--name", "v0"}
		b.d.spec.Job.FlinkConfiguration = nil
		b.d.spec.Requests, b.d.spec.Restore = lifecycle.ActionRequests{}, policy.RestoreRequest{}
		var id flinkapi.JobID
		b.call(lifecycle.JobStatus{}, lifecycle.JobStatus{}, func() { id = b.run("") })
		if early {
			b.advance(time.Second)
		} else {
			b.advance(8 * time.Second)
		}
		if j, _ := b.d.srv.Job(id); j.State != flinkapi.JobRunning {
			t.Fatalf("job %s", j.State)
		}
		st := b.running(id)
		b.call(st, st, func() { _, _ = b.d.ctrlC.Job(b.ctx, id) })
		if early {
			b.want(ConvergedTooEarly)
		} else {
			b.none(ConvergedTooEarly)
		}
		b.none(ConvergedNotRunning)
	}
}

// A cancel of a detached job is counted, unless the spec adopts it.
func TestCheckDetachedTouched(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		b := newBench(t)
		id := b.run("")
		b.advance(10 * time.Second)
		b.d.detached[id], b.d.foreign[id] = true, "detached"
		if adopt {
			b.d.spec.Adopt = id
		}
		st := b.running(id)
		st.Deleted, st.Detached = true, id
		b.call(st, st, func() {
			if err := b.d.ctrlC.CancelJob(b.ctx, id); err != nil {
				t.Fatal(err)
			}
		})
		if adopt {
			b.none(DetachedTouched)
		} else {
			b.want(DetachedTouched)
		}
	}
}

// A status that takes a job running under a detached job's id is
// counted while that job is the detached one (also once a JobManager
// with high availability recovered it); once a JobManager without high
// availability forgot it and a jar run under its id started another
// job, that job is the deployment's to take.
func TestCheckDetachedRunAgain(t *testing.T) {
	for _, rerun := range []bool{false, true} {
		b := newBench(t)
		id := b.run("")
		b.advance(10 * time.Second)
		b.d.detached[id], b.d.detachedRun[id], b.d.foreign[id] = true, b.d.submitted[id], "detached"
		if rerun {
			b.d.srv.RestartJobManager(flinktest.RestartOptions{})
			b.advance(time.Second)
		} else {
			// A failover with high availability recovers the detached job.
			b.d.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
			b.advance(time.Second)
		}
		st := b.running(id)
		b.call(st, st, func() {
			if rerun {
				if _, err := b.d.ctrlC.RunJar(b.ctx, b.jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: b.d.spec.Job.Args}); err != nil {
					t.Fatal(err)
				}
			}
		})
		if rerun {
			b.none(DetachedTouched)
		} else {
			b.want(DetachedTouched)
		}
	}
}

// A savepoint the controller triggered and could read the result of,
// missing from the history, is counted; in the history, it is not.
func TestCheckSavepointLeaked(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		b := newBench(t)
		id := b.run("")
		b.advance(10 * time.Second)
		st := b.running(id)
		var loc string
		b.call(st, st, func() { loc = b.savepoint(id) })
		b.call(st, st, func() { _, _ = b.d.ctrlC.Job(b.ctx, id) })
		if recorded {
			st.Savepoints = st.Savepoints.Add(savepoint.Record{Location: loc, Time: b.d.now()})
		}
		b.d.checkLedger(b.ctx, st)
		if recorded {
			b.none(SavepointLeaked)
		} else {
			b.want(SavepointLeaked)
		}
	}
}

// A rollback that runs the jar rebuilt at the same path, not the build
// the template rolled back to ran, is counted.
func TestCheckRollbackRanNewBuild(t *testing.T) {
	b := newBench(t)
	b.d.jarBuild[b.jar] = 0
	b.d.buildOfName["v0"] = 0
	rebuilt, err := b.d.ctrlC.UploadJarReader(b.ctx, "job.jar", bytes.NewReader(jarBytes(1)))
	if err != nil {
		t.Fatal(err)
	}
	b.d.jarBuild[rebuilt] = 1
	id := b.run("")
	b.advance(10 * time.Second)
	before := b.running(id)
	st := before
	st.Action, st.Target = lifecycle.ActionRollback, lifecycle.JobTemplate{JarFile: b.d.jarPath, Args: []string{"--out", "/out", "--name", "v0"}}
	st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseWaitRunning, Started: b.d.now()}
	b.call(before, st, func() {
		_ = b.d.ctrlC.CancelJob(b.ctx, id)
		b.advance(time.Second)
		if _, err := b.d.ctrlC.RunJar(b.ctx, rebuilt, flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), ProgramArgs: b.d.spec.Job.Args}); err != nil {
			t.Fatal(err)
		}
	})
	b.want(RollbackRanNewBuild)
}

// A FAILED job with restarts left and state to restart from, left down,
// is counted.
func TestCheckFailedNeverRestarted(t *testing.T) {
	b := newBench(t)
	b.checkpointing()
	b.d.spec.BlueGreen.Enabled = false
	b.d.spec.Restart = policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxRestarts: 3}
	id := b.run("")
	b.advance(10 * time.Second)
	loc := b.savepoint(id)
	if err := b.d.srv.FailJob(id, "boom"); err != nil {
		t.Fatal(err)
	}
	st := b.running(id)
	st.Latest = savepoint.Record{Location: loc, Time: b.d.now()}
	st.State, st.Reason = policy.Failed, "Waiting"
	for range 20 {
		b.call(st, st, func() {})
		b.advance(time.Minute)
	}
	b.want(FailedNeverRestarted)
}

// A disposal of the savepoint the live job started from is counted while
// the history holds no savepoint of that job (an import newer than it
// is Latest); once it holds one, the disposal is not.
func TestCheckNeverDisposeRestorePoint(t *testing.T) {
	for _, own := range []bool{false, true} {
		b := newBench(t)
		old := b.run("")
		b.advance(10 * time.Second)
		from := b.savepoint(old)
		id := b.run(from)
		b.advance(10 * time.Second)
		imported := b.savepoint(id)
		st := b.running(id)
		st.Latest = savepoint.Record{Location: imported, Time: b.d.now(), Reason: savepoint.ReasonImported}
		st.Savepoints = st.Savepoints.Add(savepoint.Record{Location: from, Time: b.d.now().Add(-10 * time.Second), JobID: old}).Add(st.Latest)
		if own {
			b.advance(10 * time.Second)
			st.Latest = savepoint.Record{Location: b.savepoint(id), Time: b.d.now(), JobID: id}
			st.Savepoints = st.Savepoints.Add(st.Latest)
		}
		b.call(st, st, func() {
			if _, err := b.d.ctrlC.DisposeSavepoint(b.ctx, from); err != nil {
				t.Fatal(err)
			}
		})
		if own {
			b.none(NeverDisposeDisposed)
		} else {
			b.want(NeverDisposeDisposed)
		}
	}
}
