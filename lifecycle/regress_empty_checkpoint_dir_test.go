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

// blindStorage is a Storage that sees nothing of where Flink writes: every
// directory lists empty, as one not mounted where the caller runs.
type blindStorage struct{}

func (blindStorage) List(context.Context, string) ([]string, error) { return nil, nil }
func (blindStorage) Delete(context.Context, string) error           { return nil }

// TestCheckpointGoneWithEmptyCheckpointDir: the only job of a cluster,
// with its checkpoints retained, is stopped with a savepoint: it
// finishes, and Flink discards its checkpoints, leaving the checkpoint
// directory empty (no other job's directory beside the job's). A deploy
// (an Upgrade with no job to replace) from the checkpoint recorded as its
// newest state reads the storage: the
// job's directory and the checkpoint directory list nothing, but the
// storage shows the directory above them (the savepoint beside them),
// so the checkpoint is gone: no run from it is sent, and it does not
// stay the newest state. A storage that sees nothing of where Flink
// writes leaves Flink to judge: the run is sent, and Flink refuses it.
func TestCheckpointGoneWithEmptyCheckpointDir(t *testing.T) {
	for _, tc := range []struct {
		name    string
		storage func(*flinktest.Server) Storage
		runs    int
	}{
		{"storage shows the state directory", func(srv *flinktest.Server) Storage { return &fakeStorage{srv: srv} }, 0},
		{"storage shows nothing", func(*flinktest.Server) Storage { return blindStorage{} }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			if err := e.c.CancelJob(ctx, e.job); err != nil { // its checkpoints, not retained, go with it
				t.Fatal(err)
			}
			e.srv.Clock().Advance(time.Second)
			job := retainedJob(t, e)
			e.srv.Clock().Advance(5 * time.Second)
			cp := newestCheckpoint(e, job)
			if cp.Location == "" {
				t.Fatal("no checkpoint")
			}
			op, err := e.c.StopWithSavepoint(ctx, job, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()})
			if err != nil {
				t.Fatal(err)
			}
			e.srv.Clock().Advance(5 * time.Second)
			if res, err := e.c.OperationStatus(ctx, op); err != nil || res.Location == "" {
				t.Fatalf("stop with savepoint: %+v %v", res, err)
			}
			if ok, _ := e.srv.SavepointExists(cp.Location); ok {
				t.Fatalf("Flink should have discarded %s when the job finished", cp.Location)
			}
			if dir := parentDir(parentDir(cp.Location)); len(e.srv.ListStorage(dir)) != 0 {
				t.Fatalf("the checkpoint directory %s should be empty: %v", dir, e.srv.ListStorage(dir))
			}
			latest := savepoint.Record{Location: cp.Location, Time: cp.Taken, JobID: job}
			st := tc.storage(e.srv)
			mk := func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Latest: latest, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState},
					JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}, storage: st}
			}
			var p Progress
			res := resume(t, e, mk, &p)
			if n := runsFrom(e.srv, cp.Location); n != tc.runs {
				t.Errorf("%d runs from the discarded checkpoint %s, want %d (%s: %s)", n, cp.Location, tc.runs, res.Outcome, p.Reason)
			}
			if tc.runs == 0 && p.Replace.Observed.Latest.Location == cp.Location {
				t.Errorf("the discarded checkpoint %s stays the newest state (%s: %s)", cp.Location, res.Outcome, p.Reason)
			}
		})
	}
}
