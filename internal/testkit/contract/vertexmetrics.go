package contract

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// taskMetrics are the task metrics both Flink versions list for every
// vertex, and that VertexLoad reads.
var taskMetrics = []string{flinkapi.MetricBusyTimeMsPerSecond, flinkapi.MetricBackPressuredTimeMsPerSecond, flinkapi.MetricIdleTimeMsPerSecond,
	flinkapi.MetricNumRecordsInPerSecond, flinkapi.MetricNumRecordsOutPerSecond}

// vertexMetrics: the main job's plan has its two vertices, the counter
// reading from the source; each vertex lists the task metrics (once the
// metric fetcher fetched them); VertexLoad reads them, times within a
// second per second and the counter's records in per second above 0 (the
// job runs at 20 per second); VertexMetrics answers the aggregations asked
// for (min, max, avg and sum when none is named), and nothing at all when
// one name is unknown; the back-pressure sample has a level and one entry
// per subtask with ratios in 0..1; a vertex the job does not have has no
// metrics and no sample (status deprecated), which is no error.
func (s *suite) vertexMetrics(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	d, err := s.c.Job(ctx, s.main.id)
	if err != nil || len(d.Vertices) != 2 {
		t.Fatalf("Job: %+v, %v; want two vertices", d, err)
	}
	src, cnt := d.Vertices[0], d.Vertices[1]
	plan, err := s.c.JobPlan(ctx, s.main.id)
	if err != nil || len(plan) != 2 {
		t.Fatalf("JobPlan: %+v, %v; want two nodes", plan, err)
	}
	for _, n := range plan {
		switch n.ID {
		case src.ID:
			if len(n.Inputs) != 0 {
				t.Errorf("the source %s reads from %v", n.ID, n.Inputs)
			}
		case cnt.ID:
			if !slices.Equal(n.Inputs, []string{src.ID}) {
				t.Errorf("the counter %s reads from %v, want [%s]", n.ID, n.Inputs, src.ID)
			}
		default:
			t.Errorf("plan node %s is no vertex of the job", n.ID)
		}
	}

	for _, v := range []flinkapi.JobVertex{src, cnt} {
		var names []string
		s.waitFor(t, ctx, "the task metrics of "+v.Name, func() (bool, string) {
			names, err = s.c.VertexMetricNames(ctx, s.main.id, v.ID)
			for _, m := range taskMetrics {
				if !slices.Contains(names, m) {
					return false, fmt.Sprintf("%d names, %v", len(names), err)
				}
			}
			return err == nil, ""
		})
		t.Logf("%s: %d metrics; pending records metric %q", v.Name, len(names), flinkapi.PendingRecordsMetric(names))
	}

	var l flinkapi.VertexLoad
	s.waitFor(t, ctx, "records in per second of the counter", func() (bool, string) {
		l, err = s.c.VertexLoad(ctx, s.main.id, cnt.ID, "")
		return err == nil && l.Complete() && l.RecordsInPerSecond > 0, fmt.Sprintf("%+v, %v", l, err)
	})
	for name, v := range map[string]float64{"busy": l.BusyMsPerSecond, "max busy": l.MaxBusyMsPerSecond, "back-pressured": l.BackPressuredMsPerSecond,
		"idle": l.IdleMsPerSecond} {
		if !(v >= 0 && v <= 1000) {
			t.Errorf("%s time of the counter %v ms/s, want 0..1000", name, v)
		}
	}
	if !math.IsNaN(l.PendingRecords) || l.RecordsOutPerSecond < 0 {
		t.Errorf("counter load %+v: pending records without a metric named, or a negative rate", l)
	}
	t.Logf("counter load: %+v", l)

	m, err := s.c.VertexMetrics(ctx, s.main.id, src.ID, []string{flinkapi.MetricNumRecordsOutPerSecond}, flinkapi.AggMin, flinkapi.AggMax)
	a, ok := m[flinkapi.MetricNumRecordsOutPerSecond]
	switch {
	case err != nil || !ok || len(m) != 1:
		t.Errorf("VertexMetrics min,max: %+v, %v; want the metric", m, err)
	case a.Min > a.Max || !math.IsNaN(a.Avg) || !math.IsNaN(a.Sum):
		t.Errorf("VertexMetrics min,max: %+v; want min <= max and no avg or sum", a)
	}
	m, err = s.c.VertexMetrics(ctx, s.main.id, src.ID, []string{flinkapi.MetricNumRecordsOutPerSecond})
	if a := m[flinkapi.MetricNumRecordsOutPerSecond]; err != nil || math.IsNaN(a.Min) || math.IsNaN(a.Max) || math.IsNaN(a.Avg) || math.IsNaN(a.Sum) {
		t.Errorf("VertexMetrics without aggregations: %+v, %v; want min, max, avg and sum", m, err)
	}
	// One unknown name, and Flink answers nothing at all.
	m, err = s.c.VertexMetrics(ctx, s.main.id, src.ID, []string{flinkapi.MetricNumRecordsOutPerSecond, "noSuchMetric"})
	if err != nil || len(m) != 0 {
		t.Errorf("VertexMetrics with an unknown name: %+v, %v; want an empty answer", m, err)
	}
	var bp *flinkapi.Backpressure
	s.waitFor(t, ctx, "a back-pressure sample of the counter", func() (bool, string) {
		bp, err = s.c.VertexBackpressure(ctx, s.main.id, cnt.ID)
		return err == nil && bp.Status == flinkapi.BackpressureOK, fmt.Sprintf("%+v, %v", bp, err)
	})
	if !slices.Contains([]flinkapi.BackpressureLevel{flinkapi.BackpressureLevelOK, flinkapi.BackpressureLevelLow, flinkapi.BackpressureLevelHigh}, bp.Level) ||
		len(bp.Subtasks) != cnt.Parallelism || bp.EndTime.IsZero() {
		t.Errorf("back-pressure %+v; want a level and %d subtasks", bp, cnt.Parallelism)
	}
	for _, st := range bp.Subtasks {
		for _, r := range []float64{st.Ratio, st.IdleRatio, st.BusyRatio} {
			if !(r >= 0 && r <= 1) {
				t.Errorf("subtask %+v: a ratio outside 0..1", st)
			}
		}
	}

	// A vertex the job does not have: no sample and no metrics, not an
	// error.
	const unknown = "00000000000000000000000000000000"
	if bp, err := s.c.VertexBackpressure(ctx, s.main.id, unknown); err != nil || bp.Status != flinkapi.BackpressureDeprecated || len(bp.Subtasks) != 0 {
		t.Errorf("back-pressure of an unknown vertex: %+v, %v; want status deprecated", bp, err)
	}
	if names, err := s.c.VertexMetricNames(ctx, s.main.id, unknown); err != nil || len(names) != 0 {
		t.Errorf("metric names of an unknown vertex: %v, %v; want none", names, err)
	}
}
