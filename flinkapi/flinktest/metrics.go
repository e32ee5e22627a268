package flinktest

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// handleJobMetrics answers GET /jobs/:jobid/metrics?get=a,b like Flink's
// metric store: values as strings, only for jobs that have not ended
// (Flink drops the metrics of ended jobs), and an empty list for an
// unknown job or metric. Only numRestarts is modelled: the restarts of
// the job's restart strategy.
func handleJobMetrics(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	out := []map[string]string{}
	j := q.cl.job(id)
	if j != nil && !j.state.IsGloballyTerminal() && j.state != flinkapi.JobSuspended {
		for _, name := range strings.Split(q.query.Get("get"), ",") {
			if name == flinkapi.MetricNumRestarts {
				out = append(out, map[string]string{"id": name, "value": strconv.Itoa(j.attempt)})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rescaleInPlace applies new parallelism bounds to a running job as the
// adaptive scheduler does: the job's parallelism becomes the lowest upper
// bound of its vertices, as far as free slots allow, at once and without
// restarting its tasks. A job that is not RUNNING keeps its parallelism.
// A change of parallelism is recorded in the job's rescale history.
func (cl *cluster) rescaleInPlace(j *job, now time.Time) {
	if j.state != flinkapi.JobRunning || !j.usesSlots || len(j.bounds) == 0 {
		return
	}
	upper := 0
	for _, b := range j.bounds {
		if upper == 0 || b.UpperBound < upper {
			upper = b.UpperBound
		}
	}
	target := min(upper, j.parallelism+cl.freeSlots())
	if target >= 1 && target != j.parallelism {
		before := j.parallelism
		cl.usedSlots += target - j.parallelism
		j.parallelism = target
		cl.recordRescale(j, flinkapi.RescaleUpdateRequirement, before, now)
	}
}
