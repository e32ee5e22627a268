package flinktest

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// VertexMetrics are the task metrics the fake reports for one vertex of a
// running job (GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics and
// /backpressure): every subtask reports the same times, and the record
// rates of the vertex are shared evenly by its subtasks.
type VertexMetrics struct {
	// BusyMsPerSecond, BackPressuredMsPerSecond and IdleMsPerSecond are
	// each subtask's, in milliseconds per second.
	BusyMsPerSecond, BackPressuredMsPerSecond, IdleMsPerSecond float64
	// RecordsInPerSecond and RecordsOutPerSecond are the vertex's, all
	// subtasks together.
	RecordsInPerSecond, RecordsOutPerSecond float64
	// PendingRecords, if HasPending, is the source's backlog, all
	// subtasks together, reported as "Source__key-source.pendingRecords".
	PendingRecords float64
	HasPending     bool
}

// PendingRecordsName is the name under which the fake lists a source's
// pending records, as Flink does for the test job's source operator.
const PendingRecordsName = "Source__key-source." + flinkapi.MetricPendingRecords

type vertexKey struct {
	job    flinkapi.JobID
	vertex string
}

// SetVertexMetrics sets the metrics the job's vertex reports from now on,
// while the job's tasks run, in place of the simulated job's own load
// (defaultMetrics: --rate records per second through both vertices, the
// counter busy a millisecond per record). A job whose tasks do not run
// reports none (an empty list, as while Flink's metric fetcher has not
// fetched them). It returns an error for an unknown job or a vertex the
// job does not have.
func (s *Server) SetVertexMetrics(id flinkapi.JobID, vertex string, m VertexMetrics) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.cl.job(id)
	if j == nil {
		return fmt.Errorf("flinktest: SetVertexMetrics: no job %s", id)
	}
	if vertex != sourceVertexID && vertex != j.spec.counterID() {
		return fmt.Errorf("flinktest: SetVertexMetrics: job %s has no vertex %q (it has %s and %s)", id, vertex, sourceVertexID, j.spec.counterID())
	}
	if s.vertexMetrics == nil {
		s.vertexMetrics = map[vertexKey]VertexMetrics{}
	}
	s.vertexMetrics[vertexKey{id, vertex}] = m
	return nil
}

// reportedMetrics returns the metrics of the request's vertex if the job
// runs its tasks and has some set; the job, or Flink's error for an
// unknown job or vertex.
func (q *request) reportedMetrics() (*job, *VertexMetrics, *restError) {
	// The metric handlers read Flink's metric store, not the execution
	// graph cache.
	id, e := q.jobID()
	if e != nil {
		return nil, nil, e
	}
	j := q.cl.job(id)
	if j == nil {
		return nil, nil, jobNotFoundError(string(id), framesGraphHandler)
	}
	v := q.params["vertexid"]
	if len(v) != 32 || strings.Trim(v, "0123456789abcdef") != "" {
		return nil, nil, badParameter(fmt.Sprintf("Cannot resolve path parameter (vertexid) from value \"%s\".", v))
	}
	if v != sourceVertexID && v != j.spec.counterID() || !j.hasGraph() {
		return j, nil, nil // the metric store knows nothing of it
	}
	if j.state != flinkapi.JobRunning || !j.tasksRunning {
		return j, nil, nil
	}
	m, ok := q.s.vertexMetrics[vertexKey{j.id, v}]
	if !ok {
		m = defaultMetrics(j, v)
	}
	return j, &m, nil
}

// defaultMetrics is the load of the simulated job: its source emits
// --rate records per second, all of which the counter reads and passes
// on, busy a millisecond per record.
func defaultMetrics(j *job, vertex string) VertexMetrics {
	rate := float64(j.spec.rateMilli) / 1000
	if vertex == sourceVertexID {
		return VertexMetrics{IdleMsPerSecond: 1000, RecordsOutPerSecond: rate}
	}
	busy := min(rate/float64(max(j.parallelism, 1)), 1000)
	return VertexMetrics{BusyMsPerSecond: busy, IdleMsPerSecond: 1000 - busy, RecordsInPerSecond: rate, RecordsOutPerSecond: rate}
}

// metricValues are the per-subtask values of m by metric name.
func (m *VertexMetrics) metricValues(parallelism int) map[string]float64 {
	p := float64(max(parallelism, 1))
	out := map[string]float64{
		flinkapi.MetricBusyTimeMsPerSecond: m.BusyMsPerSecond, flinkapi.MetricBackPressuredTimeMsPerSecond: m.BackPressuredMsPerSecond,
		flinkapi.MetricIdleTimeMsPerSecond: m.IdleMsPerSecond, flinkapi.MetricNumRecordsInPerSecond: m.RecordsInPerSecond / p,
		flinkapi.MetricNumRecordsOutPerSecond: m.RecordsOutPerSecond / p,
	}
	if m.HasPending {
		out[PendingRecordsName] = m.PendingRecords / p
	}
	return out
}

// handleVertexMetrics answers GET .../subtasks/metrics like Flink's
// AggregatingSubtasksMetricsHandler: without get, the names; with get,
// the aggregations asked for (all by default) of the names, or nothing at
// all when one of them is unknown; nothing for a vertex the job does not
// have.
func handleVertexMetrics(q *request, w http.ResponseWriter) *restError {
	j, m, e := q.reportedMetrics()
	if e != nil {
		return e
	}
	out := []map[string]any{}
	if m == nil {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	values := m.metricValues(j.parallelism)
	get := q.query.Get("get")
	if get == "" {
		names := make([]string, 0, len(values))
		for n := range values {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, map[string]any{"id": n})
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	aggs := []string{"min", "max", "avg", "sum", "skew"}
	if a := q.query.Get("agg"); a != "" {
		aggs = nil
		for _, x := range strings.Split(a, ",") {
			switch x {
			case "min", "max", "avg", "sum", "skew":
				aggs = append(aggs, x)
			default:
				return badParameter(fmt.Sprintf("Cannot resolve query parameter (agg) from value \"%s\".", a))
			}
		}
	}
	p := float64(max(j.parallelism, 1))
	for _, n := range strings.Split(get, ",") {
		v, ok := values[n]
		if !ok {
			// Flink answers all or nothing.
			writeJSON(w, http.StatusOK, []map[string]any{})
			return nil
		}
		a := map[string]any{"id": n}
		for _, x := range aggs {
			switch x {
			case "min", "max", "avg":
				a[x] = v
			case "sum":
				a[x] = v * p
			case "skew":
				a[x] = 0.0
			}
		}
		out = append(out, a)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleBackpressure answers GET .../backpressure like every supported Flink, from
// the task metrics: deprecated while there are none, else every subtask's
// ratios and levels (ratio up to 0.1 ok, up to 0.5 low, above high).
func handleBackpressure(q *request, w http.ResponseWriter) *restError {
	j, m, e := q.reportedMetrics()
	if e != nil {
		return e
	}
	if m == nil {
		writeJSON(w, http.StatusOK, map[string]any{"status": "deprecated"})
		return nil
	}
	ratio := clampRatio(m.BackPressuredMsPerSecond / 1000)
	level := backpressureLevel(ratio)
	subtasks := []any{}
	for i := 0; i < max(j.parallelism, 1); i++ {
		subtasks = append(subtasks, map[string]any{"subtask": i, "attempt-number": j.attempt, "backpressure-level": level,
			"ratio": ratio, "idleRatio": clampRatio(m.IdleMsPerSecond / 1000), "busyRatio": clampRatio(m.BusyMsPerSecond / 1000)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "backpressure-level": level, "end-timestamp": q.now.UnixMilli(), "subtasks": subtasks})
	return nil
}

func clampRatio(r float64) float64 {
	if math.IsNaN(r) {
		return 0
	}
	return min(max(r, 0), 1)
}

func backpressureLevel(ratio float64) string {
	switch {
	case ratio <= 0.1:
		return "ok"
	case ratio <= 0.5:
		return "low"
	}
	return "high"
}

// handlePlan answers GET /jobs/:jobid/plan: the plan of the job details.
func handlePlan(q *request, w http.ResponseWriter) *restError {
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	d := q.s.renderDetails(j, q.now)
	writeJSON(w, http.StatusOK, map[string]any{"plan": d["plan"]})
	return nil
}
