package flinkapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MetricNumRestarts is the job metric that counts the job's restarts by
// its restart strategy since it was submitted (a gauge of the JobManager's
// job scope).
const MetricNumRestarts = "numRestarts"

type metricWire struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// JobMetrics returns the current values of the named metrics of a job's
// JobManager scope, as Flink formats them (numbers as strings). A metric
// missing from the answer is missing from the map: the JobManager's metric
// fetcher updates its store at most every metrics.fetcher.update-interval
// (10 s by default), so right after a job starts the answer may be empty.
// At least one name is required; names must not contain commas.
//
// Flink REST: GET /jobs/:jobid/metrics?get=a,b (1.0+)
func (c *Client) JobMetrics(ctx context.Context, id JobID, names ...string) (map[string]string, error) {
	path, err := jobPath(id, "/metrics")
	if err != nil {
		return nil, err
	}
	if err := checkMetricNames("JobMetrics", names); err != nil {
		return nil, err
	}
	var w []metricWire
	if err := c.get(ctx, path, url.Values{"get": {strings.Join(names, ",")}}, &w); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(w))
	for _, m := range w {
		out[m.ID] = m.Value
	}
	return out, nil
}

// JobRestarts returns how often the job's restart strategy restarted it
// (the numRestarts metric), and false when the JobManager's metric store
// does not hold the metric yet (see JobMetrics). A value that is not a
// whole number is an error.
//
// Flink REST: GET /jobs/:jobid/metrics?get=numRestarts (1.10+)
func (c *Client) JobRestarts(ctx context.Context, id JobID) (int64, bool, error) {
	path, err := jobPath(id, "/metrics")
	if err != nil {
		return 0, false, err
	}
	m, err := c.JobMetrics(ctx, id, MetricNumRestarts)
	if err != nil {
		return 0, false, err
	}
	v, ok := m[MetricNumRestarts]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, false, c.decodeError(http.MethodGet, path, fmt.Errorf("metric %s is %q, not a count", MetricNumRestarts, clipValue(v)))
	}
	return n, true, nil
}

// checkMetricNames refuses an empty list of metric names and a name that
// is empty or holds a comma, which would split it in the get parameter.
func checkMetricNames(op string, names []string) error {
	if len(names) == 0 {
		return invalidInput("%s: name at least one metric", op)
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, ",") {
			return invalidInput("%s: metric name %q is empty or holds a comma", op, clipValue(n))
		}
	}
	return nil
}

// clipValue shortens a metric value for an error message.
func clipValue(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
