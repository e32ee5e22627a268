package flinkapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Task metrics of a vertex's subtasks, the names Flink 1.x and 2.x both
// list for every task (GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics).
// The time metrics are milliseconds per second of wall-clock time and add
// up to about 1000 for a subtask; the record rates count what the subtask
// reads from and writes to the network (a source task reads nothing, a sink
// writes nothing).
const (
	MetricBusyTimeMsPerSecond          = "busyTimeMsPerSecond"
	MetricBackPressuredTimeMsPerSecond = "backPressuredTimeMsPerSecond"
	MetricIdleTimeMsPerSecond          = "idleTimeMsPerSecond"
	MetricNumRecordsInPerSecond        = "numRecordsInPerSecond"
	MetricNumRecordsOutPerSecond       = "numRecordsOutPerSecond"
	// MetricPendingRecords is the operator metric of a source (FLIP-33)
	// that counts the records not yet read from its external system, such
	// as a Kafka consumer's lag. It is listed under the operator's name,
	// "<operator>.pendingRecords" (PendingRecordsMetric finds it), and only
	// by sources that report it.
	MetricPendingRecords = "pendingRecords"
)

// Aggregation is how VertexMetrics combines the values of a vertex's
// subtasks.
type Aggregation string

// Aggregations Flink computes over the subtasks of a vertex.
const (
	AggMin  Aggregation = "min"
	AggMax  Aggregation = "max"
	AggAvg  Aggregation = "avg"
	AggSum  Aggregation = "sum"
	AggSkew Aggregation = "skew" // (1.19+) how uneven: 0 even, 100 all in one subtask
)

// AggregatedMetric is one metric of a vertex combined over its subtasks.
// An aggregation not asked for, or one Flink could not compute (it writes
// NaN, for example for a busy time it does not measure), is NaN.
type AggregatedMetric struct {
	ID                       string
	Min, Max, Avg, Sum, Skew float64
}

// metricNumber is a number of an aggregated metric: Flink writes doubles
// as JSON numbers and NaN and the infinities as strings.
type metricNumber struct {
	v   float64
	set bool
}

func (n *metricNumber) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil && !isRangeError(err) {
		return fmt.Errorf("metric value %q is not a number", clipValue(s))
	}
	n.v, n.set = v, true
	return nil
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (n metricNumber) value() float64 {
	if !n.set {
		return math.NaN()
	}
	return n.v
}

type aggregatedMetricWire struct {
	ID   string       `json:"id"`
	Min  metricNumber `json:"min"`
	Max  metricNumber `json:"max"`
	Avg  metricNumber `json:"avg"`
	Sum  metricNumber `json:"sum"`
	Skew metricNumber `json:"skew"`
}

func (w *aggregatedMetricWire) convert() AggregatedMetric {
	return AggregatedMetric{ID: w.ID, Min: w.Min.value(), Max: w.Max.value(), Avg: w.Avg.value(), Sum: w.Sum.value(), Skew: w.Skew.value()}
}

// vertexPath returns "/jobs/<job>/vertices/<vertex><suffix>" after
// validating both ids.
func vertexPath(job JobID, vertex, suffix string) (string, error) {
	p, err := jobPath(job, "/vertices/")
	if err != nil {
		return "", err
	}
	if !isHexID(vertex) {
		return "", invalidInput("vertex id %q is not 32 lower-case hexadecimal characters", clipValue(vertex))
	}
	return p + vertex + suffix, nil
}

func isHexID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// VertexMetricNames lists the metrics the vertex's subtasks report: the
// task metrics (MetricBusyTimeMsPerSecond, ...) under their own names and
// the operators' metrics as "<operator>.<metric>". The list is empty until
// Flink's metric fetcher has fetched the job's metrics (see JobMetrics).
//
// Flink REST: GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics (1.5+)
func (c *Client) VertexMetricNames(ctx context.Context, job JobID, vertex string) ([]string, error) {
	path, err := vertexPath(job, vertex, "/subtasks/metrics")
	if err != nil {
		return nil, err
	}
	var w []metricWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(w))
	for _, m := range w {
		out = append(out, m.ID)
	}
	return out, nil
}

// VertexMetrics returns the named metrics of a vertex, each combined over
// its subtasks by the aggregations asked for (all five when none is
// named), keyed by name. Flink answers all or nothing: when one of the
// names is not reported by the subtasks, or not yet (see JobMetrics), the
// map is empty. So is it for a vertex the job does not have. At least one
// name is required; names must not contain commas.
//
// Flink REST: GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=a,b&agg=min,max (1.5+)
func (c *Client) VertexMetrics(ctx context.Context, job JobID, vertex string, names []string, aggs ...Aggregation) (map[string]AggregatedMetric, error) {
	path, err := vertexPath(job, vertex, "/subtasks/metrics")
	if err != nil {
		return nil, err
	}
	if err := checkMetricNames("VertexMetrics", names); err != nil {
		return nil, err
	}
	q := url.Values{"get": {strings.Join(names, ",")}}
	if len(aggs) > 0 {
		as := make([]string, len(aggs))
		for i, a := range aggs {
			switch a {
			case AggMin, AggMax, AggAvg, AggSum, AggSkew:
			default:
				return nil, invalidInput("VertexMetrics: unknown aggregation %q; want min, max, avg, sum or skew", clipValue(string(a)))
			}
			as[i] = string(a)
		}
		q.Set("agg", strings.Join(as, ","))
	}
	var w []aggregatedMetricWire
	if err := c.get(ctx, path, q, &w); err != nil {
		return nil, err
	}
	out := make(map[string]AggregatedMetric, len(w))
	for i := range w {
		out[w[i].ID] = w[i].convert()
	}
	return out, nil
}

// PendingRecordsMetric returns the name of the source's pending records
// metric among names (VertexMetricNames), "<operator>.pendingRecords", or
// "" when the vertex reports none. Of several (a vertex of chained
// sources), the first in lexical order.
func PendingRecordsMetric(names []string) string {
	best := ""
	for _, n := range names {
		if (n == MetricPendingRecords || strings.HasSuffix(n, "."+MetricPendingRecords)) && (best == "" || n < best) {
			best = n
		}
	}
	return best
}

// VertexLoad is how busy a vertex is: its task metrics, the time ones
// averaged over its subtasks and the rates summed. A value Flink did not
// report is NaN.
type VertexLoad struct {
	// BusyMsPerSecond, BackPressuredMsPerSecond and IdleMsPerSecond are
	// the averages over the subtasks, in milliseconds per second;
	// MaxBusyMsPerSecond the busiest subtask's.
	BusyMsPerSecond, MaxBusyMsPerSecond float64
	BackPressuredMsPerSecond            float64
	IdleMsPerSecond                     float64
	// RecordsInPerSecond and RecordsOutPerSecond are the sums over the
	// subtasks.
	RecordsInPerSecond, RecordsOutPerSecond float64
	// PendingRecords is the sum of the pending records metric named in
	// the call, NaN when none was named or Flink reported none.
	PendingRecords float64
}

// Complete reports whether every task metric of l is known: Flink's
// metric fetcher had fetched them all.
func (l VertexLoad) Complete() bool {
	for _, v := range []float64{l.BusyMsPerSecond, l.BackPressuredMsPerSecond, l.IdleMsPerSecond, l.RecordsInPerSecond, l.RecordsOutPerSecond} {
		if math.IsNaN(v) {
			return false
		}
	}
	return true
}

// VertexLoad reads the task metrics of a vertex (busy, back-pressured and
// idle time, records in and out per second) and, if pendingMetric is not
// empty, the source metric of that name (find it with
// VertexMetricNames and PendingRecordsMetric). One request. As Flink
// answers all or nothing (see VertexMetrics), a pendingMetric the vertex
// does not report leaves every value NaN.
//
// Flink REST: GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=...&agg=avg,max,sum (1.13+)
func (c *Client) VertexLoad(ctx context.Context, job JobID, vertex, pendingMetric string) (VertexLoad, error) {
	names := []string{MetricBusyTimeMsPerSecond, MetricBackPressuredTimeMsPerSecond, MetricIdleTimeMsPerSecond,
		MetricNumRecordsInPerSecond, MetricNumRecordsOutPerSecond}
	if pendingMetric != "" {
		names = append(names, pendingMetric)
	}
	nan := math.NaN()
	l := VertexLoad{nan, nan, nan, nan, nan, nan, nan}
	m, err := c.VertexMetrics(ctx, job, vertex, names, AggAvg, AggMax, AggSum)
	if err != nil {
		return l, err
	}
	get := func(name string, pick func(AggregatedMetric) float64) float64 {
		if a, ok := m[name]; ok {
			return pick(a)
		}
		return nan
	}
	avg := func(a AggregatedMetric) float64 { return a.Avg }
	sum := func(a AggregatedMetric) float64 { return a.Sum }
	l.BusyMsPerSecond = get(MetricBusyTimeMsPerSecond, avg)
	l.MaxBusyMsPerSecond = get(MetricBusyTimeMsPerSecond, func(a AggregatedMetric) float64 { return a.Max })
	l.BackPressuredMsPerSecond = get(MetricBackPressuredTimeMsPerSecond, avg)
	l.IdleMsPerSecond = get(MetricIdleTimeMsPerSecond, avg)
	l.RecordsInPerSecond = get(MetricNumRecordsInPerSecond, sum)
	l.RecordsOutPerSecond = get(MetricNumRecordsOutPerSecond, sum)
	if pendingMetric != "" {
		l.PendingRecords = get(pendingMetric, sum)
	}
	return l, nil
}

// BackpressureStatus says whether a back-pressure answer holds levels.
type BackpressureStatus string

// Back-pressure statuses.
const (
	// BackpressureDeprecated: no levels: the metric fetcher has not
	// fetched the vertex's task metrics (yet), or the job has no such
	// vertex.
	BackpressureDeprecated BackpressureStatus = "deprecated"
	// BackpressureOK: the answer holds the levels of the latest sample.
	BackpressureOK BackpressureStatus = "ok"
)

// BackpressureLevel is how back-pressured a vertex or subtask is: its
// back-pressured ratio up to 0.1 is ok, up to 0.5 low, above high.
type BackpressureLevel string

// Back-pressure levels.
const (
	BackpressureLevelOK   BackpressureLevel = "ok"
	BackpressureLevelLow  BackpressureLevel = "low"
	BackpressureLevelHigh BackpressureLevel = "high"
)

// Backpressure is the answer of GET /jobs/:jobid/vertices/:vertexid/backpressure.
type Backpressure struct {
	Status BackpressureStatus
	// Level is the highest level of the subtasks; empty with status
	// deprecated.
	Level BackpressureLevel
	// EndTime is when the sample ended.
	EndTime  time.Time
	Subtasks []SubtaskBackpressure
}

// SubtaskBackpressure is one subtask's share of the back-pressure sample:
// the fractions of time it was back-pressured, idle and busy.
type SubtaskBackpressure struct {
	Subtask                     int
	Attempt                     int
	Level                       BackpressureLevel
	Ratio, IdleRatio, BusyRatio float64
}

type subtaskBackpressureWire struct {
	Subtask    int               `json:"subtask"`
	Attempt    int               `json:"attempt-number"`
	Level      BackpressureLevel `json:"backpressure-level"`
	LevelCamel BackpressureLevel `json:"backpressureLevel"`
	Ratio      metricNumber      `json:"ratio"`
	IdleRatio  metricNumber      `json:"idleRatio"`
	BusyRatio  metricNumber      `json:"busyRatio"`
}

type backpressureWire struct {
	Status     BackpressureStatus        `json:"status"`
	Level      BackpressureLevel         `json:"backpressure-level"`
	LevelCamel BackpressureLevel         `json:"backpressureLevel"`
	EndTime    int64                     `json:"end-timestamp"`
	Subtasks   []subtaskBackpressureWire `json:"subtasks"`
}

func (w *backpressureWire) convert() *Backpressure {
	b := &Backpressure{Status: w.Status, Level: orLevel(w.Level, w.LevelCamel), EndTime: FromMillis(w.EndTime)}
	if len(w.Subtasks) > 0 {
		b.Subtasks = make([]SubtaskBackpressure, len(w.Subtasks))
	}
	for i := range w.Subtasks {
		s := &w.Subtasks[i]
		b.Subtasks[i] = SubtaskBackpressure{Subtask: s.Subtask, Attempt: s.Attempt, Level: orLevel(s.Level, s.LevelCamel),
			Ratio: s.Ratio.value(), IdleRatio: s.IdleRatio.value(), BusyRatio: s.BusyRatio.value()}
	}
	return b
}

// orLevel is the level under Flink's JSON name, or under the name of its
// OpenAPI description.
func orLevel(a, b BackpressureLevel) BackpressureLevel {
	if a != "" {
		return a
	}
	return b
}

// VertexBackpressure returns the back-pressure of a vertex, which Flink
// derives from its subtasks' task metrics. Until the metric fetcher has
// fetched them, and for a vertex the job does not have, the answer has
// status deprecated and no levels.
//
// Flink REST: GET /jobs/:jobid/vertices/:vertexid/backpressure (levels from the task metrics in every supported version)
func (c *Client) VertexBackpressure(ctx context.Context, job JobID, vertex string) (*Backpressure, error) {
	path, err := vertexPath(job, vertex, "/backpressure")
	if err != nil {
		return nil, err
	}
	var w backpressureWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	switch w.Status {
	case BackpressureDeprecated, BackpressureOK:
	default:
		return nil, c.decodeError(http.MethodGet, path, fmt.Errorf("back-pressure status %q is neither deprecated nor ok", clipValue(string(w.Status))))
	}
	return w.convert(), nil
}
