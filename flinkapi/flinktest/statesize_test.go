package flinktest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestVertexStateSizes: a checkpoint's details show each vertex's state
// size, summing to the checkpoint's; SetVertexStateSize changes those of
// later checkpoints only. A savepoint whose counter holds state cannot be
// restored by a job whose counter has another uid unless
// allowNonRestoredState; one whose counter holds none can.
func TestVertexStateSizes(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{})
	f.advance(1500 * time.Millisecond)
	details := func() *flinkapi.CheckpointStats {
		t.Helper()
		cs, err := f.c.Checkpoints(f.ctx, id)
		if err != nil || cs.LatestCompleted == nil {
			t.Fatalf("Checkpoints: %+v, %v", cs, err)
		}
		if cs.LatestCompleted.Vertices != nil {
			t.Errorf("the statistics carry per-vertex sizes: %+v", cs.LatestCompleted.Vertices)
		}
		d, err := f.c.CheckpointDetails(f.ctx, id, cs.LatestCompleted.ID)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, v := range d.Vertices {
			sum += v.StateSize
		}
		if len(d.Vertices) != 2 || sum != d.StateSize {
			t.Errorf("checkpoint %d: vertices %+v sum to %d of %d", d.ID, d.Vertices, sum, d.StateSize)
		}
		return d
	}
	first := details()
	if first.Vertices[realSourceID].StateSize != 265 || first.Vertices[realCounterID].StateSize <= 0 {
		t.Fatalf("vertices %+v", first.Vertices)
	}
	if err := f.srv.SetVertexStateSize(id, realCounterID, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.SetVertexStateSize(id, "ffffffffffffffffffffffffffffffff", 0); err == nil {
		t.Error("SetVertexStateSize of an unknown vertex: no error")
	}
	if d, err := f.c.CheckpointDetails(f.ctx, id, first.ID); err != nil || d.Vertices[realCounterID].StateSize != first.Vertices[realCounterID].StateSize {
		t.Errorf("an earlier checkpoint changed: %+v, %v", d, err)
	}
	// The fake folds periodic checkpoints nobody saw into one: advance
	// until a new one shows.
	for i := 0; i < 20; i++ {
		f.advance(time.Second)
		if cs, err := f.c.Checkpoints(f.ctx, id); err != nil || cs.LatestCompleted != nil && cs.LatestCompleted.ID > first.ID {
			break
		}
	}
	if d := details(); d.ID == first.ID || d.Vertices[realCounterID].StateSize != 0 {
		t.Errorf("after SetVertexStateSize: checkpoint %d, vertices %+v", d.ID, d.Vertices)
	}

	// A savepoint of the counter without state restores into a renamed
	// counter; one with state does not without allowNonRestoredState.
	savepoint := func(job flinkapi.JobID) string {
		t.Helper()
		op, err := f.c.TriggerSavepoint(f.ctx, job, flinkapi.SavepointRequest{})
		if err != nil {
			t.Fatal(err)
		}
		f.advance(time.Second)
		res := f.result(op)
		if !res.Completed() {
			t.Fatalf("savepoint %+v", res)
		}
		return res.Location
	}
	renamed := append(testArgs("/out/renamed", 1000), "--uid-suffix", "-v2")
	if _, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), EntryClass: "dev.flinkkit.testjob.CounterJob",
		ProgramArgs: renamed, SavepointPath: savepoint(id)}); err != nil {
		t.Errorf("restoring a stateless counter into a renamed one: %v", err)
	}
	stateful := f.running(flinkapi.RunJarRequest{})
	f.advance(1500 * time.Millisecond)
	sp := savepoint(stateful)
	_, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), EntryClass: "dev.flinkkit.testjob.CounterJob",
		ProgramArgs: renamed, SavepointPath: sp})
	var ae *flinkapi.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.StackTrace, "Cannot map checkpoint/savepoint state for operator "+realCounterID) {
		t.Errorf("restoring a stateful counter into a renamed one: %v", err)
	}
	if _, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), EntryClass: "dev.flinkkit.testjob.CounterJob",
		ProgramArgs: renamed, SavepointPath: sp, AllowNonRestoredState: true}); err != nil {
		t.Errorf("with allowNonRestoredState: %v", err)
	}
}
