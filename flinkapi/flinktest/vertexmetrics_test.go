package flinktest_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestVertexMetrics: a running job's vertices report its own load, or
// the metrics set for them, aggregated over their subtasks, with the
// back-pressure levels Flink derives from them; an ended job and an
// unknown vertex report none.
func TestVertexMetrics(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/vm", 0), Parallelism: 2})
	d, err := f.c.Job(f.ctx, id)
	if err != nil || len(d.Vertices) != 2 {
		t.Fatalf("Job: %+v, %v", d, err)
	}
	src, cnt := d.Vertices[0].ID, d.Vertices[1].ID
	// Before any is set, the job's own load: 20 records/s (testArgs) over
	// 2 subtasks, a millisecond each.
	if l, err := f.c.VertexLoad(f.ctx, id, cnt, ""); err != nil || !l.Complete() || l.RecordsInPerSecond != 20 || l.BusyMsPerSecond != 10 {
		t.Errorf("VertexLoad before metrics are set: %+v, %v; want 20 records/s in, busy 10 ms/s", l, err)
	}
	if bp, err := f.c.VertexBackpressure(f.ctx, id, cnt); err != nil || bp.Status != flinkapi.BackpressureOK || bp.Level != flinkapi.BackpressureLevelOK {
		t.Errorf("VertexBackpressure before metrics are set: %+v, %v; want ok", bp, err)
	}
	if err := f.srv.SetVertexMetrics(id, cnt, flinktest.VertexMetrics{BusyMsPerSecond: 1000, RecordsInPerSecond: 30, RecordsOutPerSecond: 30}); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.SetVertexMetrics(id, src, flinktest.VertexMetrics{BusyMsPerSecond: 50, BackPressuredMsPerSecond: 700, IdleMsPerSecond: 250,
		RecordsOutPerSecond: 30, PendingRecords: 120, HasPending: true}); err != nil {
		t.Fatal(err)
	}
	l, err := f.c.VertexLoad(f.ctx, id, cnt, "")
	if err != nil || !l.Complete() || l.BusyMsPerSecond != 1000 || l.RecordsInPerSecond != 30 || !math.IsNaN(l.PendingRecords) {
		t.Errorf("VertexLoad of the counter: %+v, %v", l, err)
	}
	names, err := f.c.VertexMetricNames(f.ctx, id, src)
	pending := flinkapi.PendingRecordsMetric(names)
	if err != nil || pending != flinktest.PendingRecordsName {
		t.Fatalf("VertexMetricNames of the source: %v, %v", names, err)
	}
	l, err = f.c.VertexLoad(f.ctx, id, src, pending)
	if err != nil || l.PendingRecords != 120 || l.BackPressuredMsPerSecond != 700 {
		t.Errorf("VertexLoad of the source: %+v, %v", l, err)
	}
	m, err := f.c.VertexMetrics(f.ctx, id, src, []string{flinkapi.MetricNumRecordsOutPerSecond}, flinkapi.AggMin, flinkapi.AggSum)
	if a := m[flinkapi.MetricNumRecordsOutPerSecond]; err != nil || a.Min != 15 || a.Sum != 30 || !math.IsNaN(a.Avg) {
		t.Errorf("VertexMetrics min,sum: %+v, %v; want min 15 and sum 30 of 2 subtasks", m, err)
	}
	bp, err := f.c.VertexBackpressure(f.ctx, id, src)
	if err != nil || bp.Status != flinkapi.BackpressureOK || bp.Level != flinkapi.BackpressureLevelHigh || len(bp.Subtasks) != 2 || bp.Subtasks[1].Ratio != 0.7 {
		t.Errorf("VertexBackpressure of the source: %+v, %v", bp, err)
	}
	plan, err := f.c.JobPlan(f.ctx, id)
	if err != nil || len(plan) != 2 {
		t.Fatalf("JobPlan: %+v, %v", plan, err)
	}
	for _, n := range plan {
		if n.ID == cnt && (len(n.Inputs) != 1 || n.Inputs[0] != src) || n.ID == src && len(n.Inputs) != 0 {
			t.Errorf("plan node %+v; want the counter reading the source", n)
		}
	}
	if bp, err := f.c.VertexBackpressure(f.ctx, id, "00000000000000000000000000000000"); err != nil || bp.Status != flinkapi.BackpressureDeprecated {
		t.Errorf("unknown vertex: %+v, %v; want status deprecated", bp, err)
	}
	if m, err := f.c.VertexMetrics(f.ctx, id, src, []string{flinkapi.MetricNumRecordsOutPerSecond, "noSuchMetric"}); err != nil || len(m) != 0 {
		t.Errorf("an unknown name among known ones: %+v, %v; want nothing at all", m, err)
	}
	if _, err := f.c.VertexMetricNames(f.ctx, flinkapi.NewJobID(), src); !errors.Is(err, flinkapi.ErrNotFound) {
		t.Errorf("unknown job: %v, want ErrNotFound", err)
	}
	if err := f.srv.SetVertexMetrics(id, "00000000000000000000000000000000", flinktest.VertexMetrics{}); err == nil {
		t.Error("SetVertexMetrics of an unknown vertex succeeded")
	}
	if err := f.srv.SetVertexMetrics(flinkapi.NewJobID(), cnt, flinktest.VertexMetrics{}); err == nil {
		t.Error("SetVertexMetrics of an unknown job succeeded")
	}
	if err := f.c.CancelJob(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if l, err := f.c.VertexLoad(f.ctx, id, cnt, ""); err != nil || l.Complete() {
		t.Errorf("VertexLoad of a canceled job: %+v, %v; want no metrics", l, err)
	}
}
