package flinktest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// setUpper sets every vertex's parallelism bounds to 1..upper.
func (f *fake) setUpper(id flinkapi.JobID, upper int) {
	f.t.Helper()
	req, err := f.c.ResourceRequirements(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	for v := range req {
		req[v] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: upper}
	}
	if err := f.c.SetResourceRequirements(f.ctx, id, req); err != nil {
		f.t.Fatal(err)
	}
}

// Each in-place rescale that changes the parallelism is recorded, newest
// first, after the first schedule; the history keeps its size; the
// details give the parallelism before and after.
func TestRescaleHistory(t *testing.T) {
	f := newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithAdaptiveScheduler(), flinktest.WithRescaleHistory(3))
	id := f.running(flinkapi.RunJarRequest{})
	h, err := f.c.RescaleHistory(f.ctx, id)
	if err != nil || len(h) != 1 || h[0].Trigger != flinkapi.RescaleInitialSchedule || h[0].State != flinkapi.RescaleCompleted {
		t.Fatalf("history after the first schedule: %+v, %v", h, err)
	}
	first, err := f.c.RescaleDetails(f.ctx, id, h[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range first.Vertices {
		if v.Before != 0 || v.After != 1 {
			t.Errorf("first schedule, vertex %s: %d -> %d, want 0 (none) -> 1", v.Name, v.Before, v.After)
		}
	}
	if d, ok := first.Downtime(); !ok || d <= 0 {
		t.Errorf("first schedule's downtime %v, %v: want the wait for slots", d, ok)
	}

	f.setUpper(id, 1) // no change of parallelism: not recorded
	for _, upper := range []int{2, 3, 1} {
		f.advance(time.Second)
		f.setUpper(id, upper)
	}
	h, err = f.c.RescaleHistory(f.ctx, id)
	if err != nil || len(h) != 3 {
		t.Fatalf("history after three rescales: %d entries, %v; want 3 (its size)", len(h), err)
	}
	wantAfter := []int{1, 3, 2} // newest first
	for i, r := range h {
		if r.Trigger != flinkapi.RescaleUpdateRequirement || r.State != flinkapi.RescaleCompleted || r.Reason != flinkapi.RescaleSucceeded {
			t.Errorf("entry %d: %s %s %s", i, r.Trigger, r.State, r.Reason)
		}
		if i > 0 && !r.StartTime.Before(h[i-1].StartTime) {
			t.Errorf("entry %d started %v, not before entry %d (%v)", i, r.StartTime, i-1, h[i-1].StartTime)
		}
		d, err := f.c.RescaleDetails(f.ctx, id, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Vertices) != 2 {
			t.Errorf("entry %d: %d vertices, want 2", i, len(d.Vertices))
		}
		for _, v := range d.Vertices {
			if v.After != wantAfter[i] {
				t.Errorf("entry %d, vertex %s: after %d, want %d", i, v.Name, v.After, wantAfter[i])
			}
		}
		if dt, ok := d.Downtime(); !ok || dt != 0 {
			t.Errorf("entry %d: downtime %v, %v; the fake rescales at once", i, dt, ok)
		}
	}
	if _, err := f.c.RescaleDetails(f.ctx, id, first.ID); !flinkapi.IsRescaleNotFound(err) {
		t.Errorf("the first schedule, dropped from the full history: %v, want IsRescaleNotFound", err)
	}
}

// Without the history size the adaptive scheduler answers an empty
// history; without the adaptive scheduler Flink answers 404; before 2.3
// the routes do not exist.
func TestRescaleHistoryOff(t *testing.T) {
	unknown := flinkapi.RescaleID(flinkapi.NewJobID())
	f := newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithAdaptiveScheduler())
	id := f.running(flinkapi.RunJarRequest{})
	f.setUpper(id, 2)
	if h, err := f.c.RescaleHistory(f.ctx, id); err != nil || len(h) != 0 {
		t.Errorf("history off: %+v, %v; want empty", h, err)
	}
	if _, err := f.c.RescaleDetails(f.ctx, id, unknown); !flinkapi.IsRescaleNotFound(err) {
		t.Errorf("details with the history off: %v, want IsRescaleNotFound", err)
	}

	f = newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithRescaleHistory(5))
	id = f.running(flinkapi.RunJarRequest{})
	if _, err := f.c.RescaleHistory(f.ctx, id); !flinkapi.IsRescaleHistoryUnavailable(err) {
		t.Errorf("history on the default scheduler: %v, want IsRescaleHistoryUnavailable", err)
	}
	if _, err := f.c.RescaleDetails(f.ctx, id, unknown); !flinkapi.IsRescaleHistoryUnavailable(err) {
		t.Errorf("details on the default scheduler: %v, want IsRescaleHistoryUnavailable", err)
	}

	f = newFake(t, flinktest.WithVersion("2.2.0"), flinktest.WithAdaptiveScheduler(), flinktest.WithRescaleHistory(5))
	id = f.running(flinkapi.RunJarRequest{})
	if status, _ := f.raw("GET", "/jobs/"+string(id)+"/rescales/history", ""); status != 404 {
		t.Errorf("GET rescales/history on 2.2: %d, want 404 (no such route)", status)
	}
	if _, err := f.c.RescaleHistory(f.ctx, id); !errors.Is(err, flinkapi.ErrUnsupported) {
		t.Errorf("RescaleHistory on 2.2: %v, want ErrUnsupported", err)
	}
}

func TestWithRescaleHistoryNegative(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("WithRescaleHistory(-1): no panic")
		}
	}()
	flinktest.NewServer(flinktest.WithRescaleHistory(-1))
}
