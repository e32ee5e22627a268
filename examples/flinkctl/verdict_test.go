package main

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestApplyStableOnlyOnceEarned: a job stopped with a savepoint from
// outside (the Flink UI) is deployed again by apply with the same,
// stable template; apply says the job runs the spec's job stably only
// once the new job has all its tasks running and completed a checkpoint
// after its start, read at the instant apply ends.
func TestApplyStableOnlyOnceEarned(t *testing.T) {
	f := newFixture(t)
	file := f.jobFile("counter", "/out/v1", "")
	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	old := f.deployment("counter").Status.JobID
	f.srv.Clock().Advance(3 * time.Second)
	ctx := context.Background()
	if _, err := f.c.StopWithSavepoint(ctx, old, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()}); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if j, _ := f.srv.Job(old); j.State == flinkapi.JobFinished {
			break
		}
		f.srv.Clock().Advance(100 * time.Millisecond)
	}
	f.srv.Clock().Advance(4 * time.Second) // past Flink's cache of the job's details
	r := f.run("apply", "-f", file)
	wantCode(t, r, exitOK, "")
	st := f.deployment("counter").Status
	if st.JobID == old {
		t.Fatalf("apply converged on the stopped job %s", old)
	}
	d, err := f.c.Job(ctx, st.JobID)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Vertices {
		if v.Status != string(flinkapi.JobRunning) {
			t.Fatalf("apply said %q while the new job's vertex %s is %s", r.stdout, v.Name, v.Status)
		}
	}
	stats, err := f.c.Checkpoints(ctx, st.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if stats.LatestCompleted == nil || stats.LatestCompleted.TriggerTime.Before(d.StartTime) {
		t.Fatalf("apply said %q before the new job completed a checkpoint", r.stdout)
	}
	if st.StableJobID != st.JobID {
		t.Errorf("StableJobID %s, the job is %s", st.StableJobID, st.JobID)
	}
}
