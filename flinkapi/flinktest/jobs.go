package flinktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"

	"github.com/flinkkit/flinkkit/flinkapi"
)

func itoa(n int) string { return strconv.Itoa(n) }

// jobsNewestFirst returns the cluster's jobs, newest first, as Flink lists
// them.
func (cl *cluster) jobsNewestFirst() []*job {
	out := append([]*job(nil), cl.jobs...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].submitted.After(out[b].submitted) })
	return out
}

func handleJobList(q *request, w http.ResponseWriter) *restError {
	jobs := []any{}
	for _, j := range q.cl.jobsNewestFirst() {
		jobs = append(jobs, map[string]any{"id": j.id, "status": j.state})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
	return nil
}

func handleJobsOverview(q *request, w http.ResponseWriter) *restError {
	jobs := []any{}
	for _, j := range q.cl.jobsNewestFirst() {
		jobs = append(jobs, q.s.renderOverview(j, q.now))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
	return nil
}

// cachedJob returns the job as the REST cache of kind holds it: a copy at
// most one refresh interval old. Unknown jobs are not cached.
func (q *request) cached(cache map[flinkapi.JobID]cachedJob, id flinkapi.JobID) *job {
	ttl := q.s.cfg.refreshInterval
	if e, ok := cache[id]; ok && ttl > 0 && q.now.Before(e.at.Add(ttl)) {
		return e.j
	}
	j := q.cl.job(id)
	if j == nil {
		delete(cache, id)
		return nil
	}
	c := j.clone()
	if ttl > 0 {
		cache[id] = cachedJob{at: q.now, j: c}
	}
	return c
}

// graphJob returns the job's execution graph from the cache, or the 404 of
// the execution graph handlers.
func (q *request) graphJob() (*job, *restError) {
	id, e := q.jobID()
	if e != nil {
		return nil, e
	}
	j := q.cached(q.cl.graphCache, id)
	if j == nil {
		return nil, jobNotFoundError(string(id), framesGraphHandler)
	}
	return j, nil
}

// statsJob returns the job's checkpoint statistics from their cache.
func (q *request) statsJob() (*job, *restError) {
	id, e := q.jobID()
	if e != nil {
		return nil, e
	}
	j := q.cached(q.cl.statsCache, id)
	if j == nil {
		return nil, jobNotFoundError(string(id), framesStatsHandler)
	}
	return j, nil
}

func handleJobDetails(q *request, w http.ResponseWriter) *restError {
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, q.s.renderDetails(j, q.now))
	return nil
}

// jobNotFoundServerError is the 500 of handlers that ask the dispatcher
// without mapping its FlinkJobNotFoundException to 404.
func jobNotFoundServerError(id flinkapi.JobID) *restError {
	return serverError(jexc{class: classJobNotFound, msg: "Could not find Flink job (" + string(id) + ")", frames: framesDispatcher})
}

func handleJobStatus(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	j := q.cl.job(id)
	if j == nil {
		return jobNotFoundServerError(id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": j.state})
	return nil
}

func handleExceptions(q *request, w http.ResponseWriter) *restError {
	max := maxExceptions
	if v := q.query.Get("maxExceptions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badParameter(fmt.Sprintf("Cannot resolve query parameter (maxExceptions) from value \"%s\".", v))
		}
		if n > 0 {
			max = n
		}
	}
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, q.s.renderExceptions(j, max))
	return nil
}

func handleCancel(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	switch mode := q.query.Get("mode"); mode {
	case "", "cancel":
	case "stop":
		return handlerError(http.StatusPermanentRedirect, jexc{class: classRestHandler, frames: framesRestHandler,
			msg: "The termination mode \"stop\" has been removed. For an ungraceful shutdown, please use \"cancel\" instead. For a graceful shutdown, please use \"jobs/:jobId/stop\" instead."})
	default:
		return badParameter(fmt.Sprintf("Cannot resolve query parameter (mode) from value \"%s\".", mode))
	}
	j := q.cl.job(id)
	switch {
	case j == nil:
		return handlerError(http.StatusNotFound,
			jexc{class: classRestHandler, msg: "Job could not be found.", frames: framesRestHandler},
			jexc{class: classJobNotFound, msg: "Could not find Flink job (" + string(id) + ")", frames: framesDispatcher})
	case j.state == flinkapi.JobCanceled:
	case j.state.IsGloballyTerminal():
		return handlerError(http.StatusConflict, jexc{class: classRestHandler, frames: framesRestHandler,
			msg: fmt.Sprintf("Job cancellation failed because the job has already reached another terminal state (%s).", j.state)})
	default:
		q.cl.cancel(j, q.now)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{})
	return nil
}

func handleRescaling(q *request, _ http.ResponseWriter) *restError {
	return handlerError(http.StatusServiceUnavailable, jexc{class: classRestHandler, frames: framesRestHandler,
		msg: "Rescaling is temporarily disabled. See FLINK-12312."})
}

// defaultSchedulerError is the 500 of the resource requirements endpoints
// on Flink's default scheduler.
func defaultSchedulerError() *restError {
	return serverError(jexc{class: classUnsupportedOp, frames: framesScheduler,
		msg: "The DefaultScheduler does not support changing the parallelism without a job restart. This feature is currently only expected to work with the AdaptiveScheduler."})
}

func handleGetRequirements(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	j := q.cl.job(id)
	if j == nil || j.state.IsGloballyTerminal() {
		return jobNotFoundServerError(id)
	}
	if !q.s.cfg.adaptive {
		return defaultSchedulerError()
	}
	out := map[string]any{}
	for _, v := range []string{sourceVertexID, j.spec.counterID()} {
		b, ok := j.bounds[v]
		if !ok {
			b = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: j.parallelism}
		}
		out[v] = map[string]any{"parallelism": b}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func handlePutRequirements(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	b, e := q.parseBody(bodyRequirements, nil)
	if e != nil {
		return e
	}
	req := flinkapi.ResourceRequirements{}
	for k, raw := range b.fields {
		var v struct {
			Parallelism *flinkapi.ParallelismBounds `json:"parallelism"`
		}
		if _, err := flinkapi.ParseJobID(k); err != nil {
			return badFormat(simpleName(bodyRequirements), jexc{class: classJSONMapping, msg: fmt.Sprintf(
				"Argument bytes must by an array of 16 bytes (through reference chain: %s[\"%s\"])", bodyRequirements, k)})
		}
		if err := json.Unmarshal(raw, &v); err != nil || v.Parallelism == nil {
			return b.mismatch(k, "org.apache.flink.runtime.jobgraph.JobVertexResourceRequirements")
		}
		req[k] = *v.Parallelism
	}
	j := q.cl.job(id)
	if j == nil || j.state.IsGloballyTerminal() {
		return jobNotFoundServerError(id)
	}
	if !q.s.cfg.adaptive {
		return defaultSchedulerError()
	}
	for _, v := range []string{sourceVertexID, j.spec.counterID()} {
		if _, ok := req[v]; !ok {
			return serverError(jexc{class: "org.apache.flink.util.FlinkRuntimeException", frames: framesScheduler,
				msg: "The vertex resource requirements do not match the job's vertices: " + v + " is missing."})
		}
	}
	j.bounds = req
	q.cl.rescaleInPlace(j, q.now)
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}

func handleCheckpoints(q *request, w http.ResponseWriter) *restError {
	j, e := q.statsJob()
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, q.s.renderStatistics(j))
	return nil
}

func handleCheckpointConfig(q *request, w http.ResponseWriter) *restError {
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, q.s.renderCheckpointConfig(j))
	return nil
}

func handleJobConfig(q *request, w http.ResponseWriter) *restError {
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	params := map[string]string{}
	maps.Copy(params, j.spec.params)
	cfg := map[string]any{"restart-strategy": "Restart deactivated.", "job-parallelism": j.parallelism, "object-reuse-mode": false, "user-config": params}
	if !q.s.cfg.pers.isV2() {
		// 1.x names the execution mode, and shows a restart strategy set
		// through the configuration as the cluster's.
		cfg["execution-mode"], cfg["restart-strategy"] = "PIPELINED", "Cluster level default restart strategy"
	}
	writeJSON(w, http.StatusOK, map[string]any{"jid": j.id, "name": j.spec.name, "execution-config": cfg})
	return nil
}

func handleCheckpointDetails(q *request, w http.ResponseWriter) *restError {
	raw := q.params["checkpointid"]
	cid, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return badParameter(fmt.Sprintf("Cannot resolve path parameter (checkpointid) from value \"%s\".", raw))
	}
	j, e := q.statsJob()
	if e != nil {
		return e
	}
	c := j.findCheckpoint(cid)
	if c == nil {
		return handlerError(http.StatusNotFound, jexc{class: classRestHandler, frames: framesStatsHandler,
			msg: fmt.Sprintf("Could not find checkpointing statistics for checkpoint %d.", cid)})
	}
	writeJSON(w, http.StatusOK, q.s.renderCheckpoint(j, c, true))
	return nil
}
