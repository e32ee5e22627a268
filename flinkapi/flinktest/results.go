package flinktest

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// eventsAccumulator is the test job's accumulator: the events its counter
// processed in the current attempt.
const eventsAccumulator = "events"

// sourceEnds: a bounded job's source (--records) emitted its last event;
// the job ends FINISHED.
func (cl *cluster) sourceEnds(j *job, t time.Time) {
	cl.s.syncFiles(j, t)
	j.freeze(t)
	j.setState(flinkapi.JobFinished, t)
	cl.terminate(j, t, flinkapi.JobFinished)
}

// accumulatorEvents returns the value of the events accumulator at t, and
// whether the counter registered it (it does with its first event).
func (j *job) accumulatorEvents(t time.Time) (int64, bool) {
	if j.tasksStart.IsZero() {
		return 0, false
	}
	n := j.eventsAt(t) - j.attemptStart
	return n, n > 0
}

// handleExecutionResult answers GET /jobs/:jobid/execution-result as
// Flink's JobExecutionResultHandler: IN_PROGRESS until the job is globally
// terminal, then its JobResult.
func handleExecutionResult(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	j := q.cl.job(id)
	if j == nil {
		return handlerError(http.StatusNotFound,
			jexc{class: classRestHandler, msg: classJobNotFound + ": Could not find Flink job (" + string(id) + ")", frames: framesResultHandler},
			jexc{class: classJobNotFound, msg: "Could not find Flink job (" + string(id) + ")", frames: framesDispatcher})
	}
	if !j.state.IsGloballyTerminal() {
		writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}})
		return nil
	}
	status := map[flinkapi.JobState]string{flinkapi.JobFinished: "SUCCEEDED", flinkapi.JobFailed: "FAILED", flinkapi.JobCanceled: "CANCELED"}[j.state]
	accs := map[string]string{}
	if n, ok := j.accumulatorEvents(j.end); ok {
		accs[eventsAccumulator] = serializedLong(n)
	}
	start := j.ts[flinkapi.JobInitializing]
	if start.IsZero() {
		start = j.submitted
	}
	res := map[string]any{"id": j.id, "application-status": status, "accumulator-results": accs, "net-runtime": j.end.Sub(start).Milliseconds()}
	if q.s.cfg.pers.hasResultTimes() {
		res["name"], res["application-id"], res["start-time"], res["end-time"] = j.spec.name, j.id, start.UnixMilli(), j.end.UnixMilli()
	}
	if j.state == flinkapi.JobFailed && len(j.exceptions) > 0 {
		last := j.exceptions[len(j.exceptions)-1]
		res["failure-cause"] = (&failureCause{class: last.class, trace: last.trace}).wire()
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "job-execution-result": res})
	return nil
}

// serializedLong stands for Flink's Java serialization of an accumulator's
// value: the stream header and the number in decimal, base64 encoded,
// opaque as Flink's are.
func serializedLong(n int64) string {
	return base64.StdEncoding.EncodeToString(append([]byte{0xac, 0xed, 0x00, 0x05}, strconv.FormatInt(n, 10)...))
}

// handleAccumulators answers GET /jobs/:jobid/accumulators from the
// execution graph cache.
func handleAccumulators(q *request, w http.ResponseWriter) *restError {
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	user, serialized := []any{}, map[string]string{}
	at := q.now
	if j.state.IsGloballyTerminal() {
		at = j.end
	}
	if n, ok := j.accumulatorEvents(at); ok {
		user = append(user, map[string]string{"name": eventsAccumulator, "type": "LongCounter", "value": strconv.FormatInt(n, 10)})
		if q.query.Get("includeSerializedValue") == "true" {
			serialized[eventsAccumulator] = serializedLong(n)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"job-accumulators": []any{}, "user-task-accumulators": user, "serialized-user-task-accumulators": serialized})
	return nil
}
