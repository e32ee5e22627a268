package flinktest_test

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// latestCheckpoint returns the newest checkpoint of job on the disk that
// Flink has not discarded.
func (f *fake) latestCheckpoint(job flinkapi.JobID) flinktest.Snapshot {
	f.t.Helper()
	var last flinktest.Snapshot
	for _, s := range f.srv.Snapshots() {
		if s.Job == job && !s.Savepoint && !s.Removed && s.CheckpointID > last.CheckpointID {
			last = s
		}
	}
	if last.Location == "" {
		f.t.Fatalf("job %s has no checkpoint: %+v", job, f.srv.Snapshots())
	}
	return last
}

// snapshotAt returns the snapshot at loc.
func (f *fake) snapshotAt(loc string) flinktest.Snapshot {
	f.t.Helper()
	for _, s := range f.srv.Snapshots() {
		if s.Location == loc {
			return s
		}
	}
	f.t.Fatalf("no snapshot at %s", loc)
	return flinktest.Snapshot{}
}

// cancelled cancels job and waits until it is CANCELED.
func (f *fake) cancelled(job flinkapi.JobID) {
	f.t.Helper()
	if err := f.c.CancelJob(f.ctx, job); err != nil {
		f.t.Fatalf("CancelJob: %v", err)
	}
	f.advance(time.Second)
	if st := f.state(job); st != flinkapi.JobCanceled {
		f.t.Fatalf("job %s is %s after its cancel, want CANCELED", job, st)
	}
}

// TestRecoveredCheckpointIsTheJobs: a JobManager failover with high
// availability recovers a job from its own latest checkpoint, which stays
// in the job's completed checkpoint store: a cancel without retention
// discards it (Flink's store, shut down, discards every checkpoint it
// holds with the job's checkpoint properties), and so does the job's next
// checkpoint (subsumed, state.checkpoints.num-retained 1). A snapshot a
// job was submitted with (restore mode NO_CLAIM: not the job's) is never
// discarded, also after a failover recovered the job from it.
func TestRecoveredCheckpointIsTheJobs(t *testing.T) {
	t.Run("cancel after a failover", func(t *testing.T) {
		f := newFake(t)
		id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/a", 3000)})
		f.advance(4 * time.Second)
		own := f.latestCheckpoint(id)
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
		f.advance(time.Second) // running, before its next checkpoint
		stats, err := f.c.Checkpoints(f.ctx, id)
		if err != nil || stats.LatestRestored == nil || stats.LatestRestored.ExternalPath != own.Location {
			t.Fatalf("checkpoint statistics %+v (%v), want the job restored from its latest checkpoint %s", stats, err, own.Location)
		}
		f.cancelled(id)
		if s := f.snapshotAt(own.Location); !s.Removed {
			t.Errorf("the checkpoint %s the failover recovered job %s from survives its cancel without retention", own.Location, id)
		}
	})
	t.Run("subsumed after a failover", func(t *testing.T) {
		f := newFake(t)
		id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/a", 500)})
		f.advance(2 * time.Second)
		own := f.latestCheckpoint(id)
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
		f.advance(5 * time.Second)
		if next := f.latestCheckpoint(id); next.CheckpointID <= own.CheckpointID {
			t.Fatalf("no checkpoint after the failover: %+v", next)
		}
		if s := f.snapshotAt(own.Location); !s.Removed {
			t.Errorf("the checkpoint %s the failover recovered job %s from survives the job's next checkpoint", own.Location, id)
		}
	})
	t.Run("submitted from another job's checkpoint", func(t *testing.T) {
		f := newFake(t)
		retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
		a := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/a", 500), FlinkConfiguration: retain})
		f.advance(2 * time.Second)
		f.cancelled(a)
		kept := f.latestCheckpoint(a)
		// A job without retention, submitted from it, checkpointing
		// rarely: recovered by a failover from the snapshot it was
		// submitted with, then cancelled.
		b := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/b", 60000), SavepointPath: kept.Location})
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
		f.advance(2 * time.Second)
		f.cancelled(b)
		if s := f.snapshotAt(kept.Location); s.Removed {
			t.Errorf("job %s's cancel discarded %s, the retained checkpoint of job %s it was submitted with", b, kept.Location, a)
		}
	})
}
