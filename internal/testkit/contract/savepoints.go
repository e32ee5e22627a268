package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// triggerSavepoint: TriggerSavepoint with a client trigger id is
// idempotent (invariant 6): triggering again with the same id, while the
// savepoint runs and after it completed, answers the same operation and
// starts nothing new: exactly one new savepoint shows up in the history.
func (s *suite) triggerSavepoint(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	before, err := s.c.Checkpoints(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	baseline := maxCheckpointID(before)

	trigger := flinkapi.NewTriggerID()
	req := flinkapi.SavepointRequest{TriggerID: trigger}
	want := flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: s.main.id, TriggerID: trigger}
	op, err := s.c.TriggerSavepoint(ctx, s.main.id, req)
	if err != nil {
		t.Fatal(err)
	}
	if op != want {
		t.Fatalf("operation %+v, want %+v", op, want)
	}
	if again, err := s.c.TriggerSavepoint(ctx, s.main.id, req); err != nil || again != want {
		t.Errorf("second trigger with the same id while running: %+v, %v; want %+v", again, err, want)
	}
	s.savepoint.op = op

	res, err := s.waiter(s.c).Wait(ctx, op, s.tg.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded() || res.Location == "" {
		t.Fatalf("result %+v: want COMPLETED with a location", res)
	}
	loc := res.Location
	s.savepoint.location = loc
	t.Logf("savepoint at %s", loc)
	s.checkSavepointLocation(t, loc)

	// Once more after completion: same operation, same result.
	if again, err := s.c.TriggerSavepoint(ctx, s.main.id, req); err != nil || again != want {
		t.Errorf("third trigger with the same id after completion: %+v, %v; want %+v", again, err, want)
	}
	if res2, err := s.c.OperationStatus(ctx, op); err != nil || !res2.Succeeded() || res2.Location != loc {
		t.Errorf("status after the third trigger: %+v, %v; want COMPLETED at %s", res2, err, loc)
	}

	// Any savepoint the repeated triggers had started would have an id
	// below the next periodic checkpoints: wait for two of them, then
	// count the savepoints since the first trigger.
	var st *flinkapi.CheckpointStatistics
	s.waitFor(t, ctx, "two periodic checkpoints after the savepoint", func() (bool, string) {
		st, err = s.c.Checkpoints(ctx, s.main.id)
		if err != nil {
			return false, err.Error()
		}
		var spID int64
		for _, h := range st.History {
			if h.IsSavepoint && h.ExternalPath == loc {
				spID = h.ID
			}
		}
		n := 0
		for _, h := range st.History {
			if spID > 0 && h.ID > spID && !h.IsSavepoint && h.Status == flinkapi.CheckpointCompleted {
				n++
			}
		}
		return n >= 2, fmt.Sprintf("savepoint id %d, %d completed checkpoints after it", spID, n)
	})
	if lo := minCheckpointID(st); lo > baseline+1 {
		t.Fatalf("the history (ids %d..%d) no longer reaches back to id %d: cannot count the savepoints", lo, maxCheckpointID(st), baseline+1)
	}
	var savepoints []flinkapi.CheckpointStats
	for _, h := range st.History {
		if h.ID > baseline && h.IsSavepoint {
			savepoints = append(savepoints, h)
		}
	}
	if len(savepoints) != 1 {
		t.Fatalf("%d savepoints after checkpoint %d, want exactly 1: %+v", len(savepoints), baseline, savepoints)
	}
	sp := savepoints[0]
	if sp.Status != flinkapi.CheckpointCompleted || sp.ExternalPath != loc {
		t.Errorf("savepoint in the history: %+v, want COMPLETED at %s", sp, loc)
	}
	if l := st.LatestSavepoint; l == nil || l.ID != sp.ID || l.ExternalPath != loc || !l.IsSavepoint {
		t.Errorf("latest savepoint %+v, want id %d at %s", l, sp.ID, loc)
	}
	if s.v.AtLeast(1, 16) && sp.SavepointFormat != string(flinkapi.FormatCanonical) {
		t.Errorf("savepoint format %q, want CANONICAL (Flink's default)", sp.SavepointFormat)
	}
}

// checkSavepointLocation checks that a savepoint lies under the savepoint
// directory and exists.
func (s *suite) checkSavepointLocation(t *testing.T, loc string) {
	t.Helper()
	if s.tg.SavepointDir != "" && !under(loc, s.tg.SavepointDir) {
		t.Errorf("savepoint location %s is not under %s", loc, s.tg.SavepointDir)
	}
	if s.tg.SavepointExists == nil {
		return
	}
	ok, err := s.tg.SavepointExists(loc)
	if err != nil || !ok {
		t.Errorf("savepoint %s: exists %v, %v; want it on disk", loc, ok, err)
	}
}

// operationStatusUnknownTrigger: OperationStatus of a trigger id the
// cluster never saw answers 404 for which IsTriggerNotFound is true and
// IsJobNotFound false, for every kind of operation.
func (s *suite) operationStatusUnknownTrigger(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	kinds := []flinkapi.OperationKind{flinkapi.OpSavepoint, flinkapi.OpStopWithSavepoint, flinkapi.OpSavepointDisposal}
	if s.v.Supports(flinkapi.FeatureCheckpointTrigger) {
		kinds = append(kinds, flinkapi.OpCheckpoint)
	}
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			op := flinkapi.Operation{Kind: kind, JobID: s.main.id, TriggerID: flinkapi.NewTriggerID()}
			if kind == flinkapi.OpSavepointDisposal {
				op.JobID = ""
			}
			res, err := s.c.OperationStatus(ctx, op)
			ae := apiError(t, fmt.Sprintf("OperationStatus(%v)", op), err)
			t.Logf("unknown %s trigger: %d %q", kind, ae.StatusCode, ae.Message())
			wantStatus(t, "OperationStatus", ae, 404)
			if res != nil {
				t.Errorf("result %+v with an error", res)
			}
			if !flinkapi.IsTriggerNotFound(err) || flinkapi.IsJobNotFound(err) {
				t.Errorf("%v: IsTriggerNotFound %v, IsJobNotFound %v; want true, false",
					err, flinkapi.IsTriggerNotFound(err), flinkapi.IsJobNotFound(err))
			}
			checkReadable(t, "message", ae.Message())
		})
	}
}

// savepointOfUnknownJob: a savepoint of a job the cluster does not know is
// acknowledged; its status is COMPLETED with a failure cause whose message
// is readable and names the job.
func (s *suite) savepointOfUnknownJob(t *testing.T) {
	ctx := s.ctx(t)
	unknown := flinkapi.NewJobID()
	trigger := flinkapi.NewTriggerID()
	op, err := s.c.TriggerSavepoint(ctx, unknown, flinkapi.SavepointRequest{TriggerID: trigger})
	if err != nil {
		t.Fatalf("TriggerSavepoint of an unknown job: %v, want it acknowledged", err)
	}
	if want := (flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: unknown, TriggerID: trigger}); op != want {
		t.Errorf("operation %+v, want %+v", op, want)
	}
	res, err := s.waiter(s.c).Wait(ctx, op, s.tg.Timeout)
	if !errors.Is(err, flinkapi.ErrOperationFailed) {
		t.Fatalf("Wait: %v, want an error matching ErrOperationFailed", err)
	}
	if !res.Completed() || res.Succeeded() || res.Failure == nil || res.Location != "" {
		t.Fatalf("result %+v: want COMPLETED with a failure cause and no location", res)
	}
	msg := res.Failure.Message()
	t.Logf("savepoint of an unknown job: %s: %q", res.Failure.Class, msg)
	checkReadable(t, "failure message", msg)
	if !strings.Contains(msg, string(unknown)) {
		t.Errorf("failure message %q does not name job %s", msg, unknown)
	}
	if res.Failure.Class == "" || !strings.Contains(res.Failure.StackTrace, "\tat ") {
		t.Errorf("failure cause: class %q, stack trace %.200q: want both", res.Failure.Class, res.Failure.StackTrace)
	}
}

// stopWithSavepoint: StopWithSavepoint without drain ends the main job
// FINISHED, with a savepoint at the location the operation answered.
func (s *suite) stopWithSavepoint(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	loc := s.stop(t, ctx, s.c, s.main.id)
	s.mainStopped = true
	s.waitFor(t, ctx, "the stop's savepoint as the latest savepoint", func() (bool, string) {
		st, err := s.c.Checkpoints(ctx, s.main.id)
		if err != nil {
			return false, err.Error()
		}
		l := st.LatestSavepoint
		return l != nil && l.ExternalPath == loc && l.Status == flinkapi.CheckpointCompleted && l.IsSavepoint,
			fmt.Sprintf("latest savepoint %+v", l)
	})
	d, err := s.c.Job(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	s.checkTime(t, "end-time of the stopped job", d.EndTime, s.main.submitted)
	for _, v := range d.Vertices {
		if v.Status != string(flinkapi.JobFinished) {
			t.Errorf("vertex %s is %s after the stop, want FINISHED", v.Name, v.Status)
		}
	}
}

// stop stops a job with a savepoint (drain off), waits for the location and
// for the job to be FINISHED, and returns the location.
func (s *suite) stop(t *testing.T, ctx context.Context, c *flinkapi.Client, id flinkapi.JobID) string {
	t.Helper()
	trigger := flinkapi.NewTriggerID()
	op, err := c.StopWithSavepoint(ctx, id, flinkapi.StopRequest{TriggerID: trigger})
	if err != nil {
		t.Fatalf("StopWithSavepoint: %v", err)
	}
	if want := (flinkapi.Operation{Kind: flinkapi.OpStopWithSavepoint, JobID: id, TriggerID: trigger}); op != want {
		t.Errorf("StopWithSavepoint: operation %+v, want %+v", op, want)
	}
	res, err := s.waiter(c).Wait(ctx, op, s.tg.Timeout)
	if err != nil {
		t.Fatalf("StopWithSavepoint: wait: %v", err)
	}
	if !res.Succeeded() || res.Location == "" {
		t.Fatalf("StopWithSavepoint: result %+v, want COMPLETED with a location", res)
	}
	t.Logf("stopped with savepoint at %s", res.Location)
	s.waitState(t, ctx, c, id, flinkapi.JobFinished)
	s.checkSavepointLocation(t, res.Location)
	return res.Location
}

// cancelFinishedJob: CancelJob of a FINISHED job answers 409 "already
// reached another terminal state": IsTerminal (1.15+).
func (s *suite) cancelFinishedJob(t *testing.T) {
	if s.main == nil || !s.mainStopped {
		t.Skip("needs the main job FINISHED, which StopWithSavepoint did not do")
	}
	ctx := s.ctx(t)
	err := s.c.CancelJob(ctx, s.main.id)
	ae := apiError(t, "CancelJob of a FINISHED job", err)
	t.Logf("cancel of a FINISHED job: %d %q", ae.StatusCode, ae.Message())
	wantStatus(t, "CancelJob", ae, 409)
	if !flinkapi.IsTerminal(err) || !errors.Is(err, flinkapi.ErrConflict) || flinkapi.IsJobNotFound(err) {
		t.Errorf("%v: IsTerminal %v, ErrConflict %v, IsJobNotFound %v; want true, true, false",
			err, flinkapi.IsTerminal(err), errors.Is(err, flinkapi.ErrConflict), flinkapi.IsJobNotFound(err))
	}
	checkReadable(t, "message", ae.Message())
	if st, err := s.c.JobStatus(ctx, s.main.id); err != nil || st != flinkapi.JobFinished {
		t.Errorf("after the cancel: %s, %v; want FINISHED", st, err)
	}
}

// disposeSavepoint: DisposeSavepoint of the savepoint TriggerSavepoint took
// completes and removes its directory; disposing it again fails in the
// status with a readable cause.
func (s *suite) disposeSavepoint(t *testing.T) {
	loc := s.savepoint.location
	if loc == "" {
		t.Skip("needs a savepoint, which TriggerSavepoint did not take")
	}
	ctx := s.ctx(t)
	op, err := s.c.DisposeSavepoint(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if op.Kind != flinkapi.OpSavepointDisposal || op.JobID != "" || op.TriggerID.Validate() != nil {
		t.Errorf("operation %+v, want a savepoint-disposal trigger without job", op)
	}
	res, err := s.waiter(s.c).Wait(ctx, op, s.tg.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded() || res.Location != "" || res.CheckpointID != 0 {
		t.Errorf("result %+v, want COMPLETED without failure", res)
	}
	if s.tg.SavepointExists != nil {
		if ok, err := s.tg.SavepointExists(loc); err != nil || ok {
			t.Errorf("savepoint %s after disposal: exists %v, %v; want it gone", loc, ok, err)
		}
	}

	t.Run("Again", func(t *testing.T) {
		op, err := s.c.DisposeSavepoint(ctx, loc)
		if err != nil {
			t.Fatalf("second DisposeSavepoint: %v, want it acknowledged", err)
		}
		res, err := s.waiter(s.c).Wait(ctx, op, s.tg.Timeout)
		if !errors.Is(err, flinkapi.ErrOperationFailed) || res == nil || res.Failure == nil {
			t.Fatalf("second disposal: %+v, %v; want a failure cause", res, err)
		}
		t.Logf("second disposal: %s: %q", res.Failure.Class, res.Failure.Message())
		checkReadable(t, "failure message", res.Failure.Message())
	})
}
