package flinktest

import (
	"net/http"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// rescaleRecord is one entry of a job's rescale history (Flink 2.3,
// FLIP-495). The fake's rescales complete at once: they start and end at
// the same instant, and the scheduler passes through Restarting and
// CreatingExecutionGraph without time passing.
type rescaleRecord struct {
	id           string
	requirements string
	trigger      flinkapi.RescaleTrigger
	at           time.Time
	// executingSince is when the scheduler last entered Executing before
	// the rescale; zero for the first schedule.
	executingSince time.Time
	waitingSince   time.Time // the first schedule: when the job waited for slots
	before, after  int       // the parallelism of every vertex
}

// recordRescale appends a completed rescale to the job's history if the
// adaptive scheduler keeps one, dropping the oldest beyond its size.
func (cl *cluster) recordRescale(j *job, trigger flinkapi.RescaleTrigger, before int, now time.Time) {
	size := cl.s.cfg.rescaleHistory
	if !cl.s.cfg.adaptive || size <= 0 || !cl.s.cfg.pers.hasRescaleHistory() {
		return
	}
	r := &rescaleRecord{id: cl.s.newHex(), requirements: cl.s.newHex(), trigger: trigger, at: now, before: before, after: j.parallelism}
	if n := len(j.rescales); n > 0 {
		r.executingSince = j.rescales[n-1].at
	} else {
		r.waitingSince = j.ts[flinkapi.JobCreated]
		if r.waitingSince.IsZero() {
			r.waitingSince = now
		}
	}
	j.rescales = append(j.rescales, r)
	if len(j.rescales) > size {
		j.rescales = append([]*rescaleRecord(nil), j.rescales[len(j.rescales)-size:]...)
	}
}

// render is the rescale as Flink writes it: the history's entries have no
// vertices or scheduler states; the details have them. The slot sharing
// groups ("slots": their slots and resource profiles) are left empty.
func (r *rescaleRecord) render(j *job, details bool) map[string]any {
	out := map[string]any{
		"rescaleUuid": r.id, "resourceRequirementsUuid": r.requirements, "rescaleAttemptId": 1,
		"vertices": map[string]any{}, "slots": map[string]any{}, "schedulerStates": []any{},
		"startTimestampInMillis": r.at.UnixMilli(), "endTimestampInMillis": r.at.UnixMilli(),
		"terminalState": string(flinkapi.RescaleCompleted), "triggerCause": string(r.trigger),
		"terminatedReason": string(flinkapi.RescaleSucceeded),
	}
	if !details {
		return out
	}
	var before any
	if r.before > 0 {
		before = r.before
	}
	vertices := map[string]any{}
	for _, v := range []struct{ id, name string }{{sourceVertexID, sourceVertexName}, {j.spec.counterID(), counterVertex}} {
		vertices[v.id] = map[string]any{
			"jobVertexId": v.id, "jobVertexName": v.name, "slotSharingGroupId": slotSharingGroupID, "slotSharingGroupName": "default",
			"desiredParallelism": r.after, "sufficientParallelism": 1, "preRescaleParallelism": before, "postRescaleParallelism": r.after,
		}
	}
	out["vertices"] = vertices
	span := func(state string, enter, leave time.Time) map[string]any {
		var l, d any
		if !leave.IsZero() {
			l, d = leave.UnixMilli(), leave.Sub(enter).Milliseconds()
		}
		return map[string]any{"state": state, "enterTimestampInMillis": enter.UnixMilli(), "leaveTimestampInMillis": l,
			"durationInMillis": d, "stringifiedException": nil}
	}
	var states []any
	if r.executingSince.IsZero() {
		states = append(states, span("WaitingForResources", r.waitingSince, r.at))
	} else {
		states = append(states, span("Executing", r.executingSince, r.at), span("Restarting", r.at, r.at))
	}
	states = append(states, span("CreatingExecutionGraph", r.at, r.at), span("Executing", r.at, r.at))
	out["schedulerStates"] = states
	return out
}

// slotSharingGroupID is the id of the test job's one slot sharing group
// (random in Flink).
const slotSharingGroupID = "b5a8abd4f7af417dcfaabd9f3f1a8f59"

// rescalesUnavailable is Flink's 404 for the rescale history of a job not
// on the adaptive scheduler.
func rescalesUnavailable(id flinkapi.JobID) *restError {
	return handlerError(http.StatusNotFound, jexc{
		class: "org.apache.flink.runtime.rest.handler.job.rescales.RescalesUnavailableException",
		msg: "The job `" + string(id) + "` has not enabled the `Adaptive` scheduler, or it has been enabled but the value of " +
			"configuration option `web.adaptive-scheduler.rescale-history.size` has not been set to greater than `0`.",
		frames: framesRescalesHandler,
	})
}

var framesRescalesHandler = []string{
	"org.apache.flink.runtime.rest.handler.job.rescales.RescalesUnavailableException.createForJob(RescalesUnavailableException.java:42)",
	"org.apache.flink.runtime.rest.handler.job.AbstractExecutionGraphHandler.lambda$handleRequest$0(AbstractExecutionGraphHandler.java:89)",
}

// handleRescaleHistory answers GET /jobs/:jobid/rescales/history: the
// job's rescales, newest first; empty on the adaptive scheduler with the
// history off; 404 on another scheduler.
func handleRescaleHistory(q *request, w http.ResponseWriter) *restError {
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	if !q.s.cfg.adaptive {
		return rescalesUnavailable(j.id)
	}
	out := make([]any, 0, len(j.rescales))
	for i := len(j.rescales) - 1; i >= 0; i-- {
		out = append(out, j.rescales[i].render(j, false))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleRescaleDetails answers GET
// /jobs/:jobid/rescales/details/:rescaleuuid: one rescale with its
// vertices and scheduler states; 404 for a rescale the history does not
// hold and on another scheduler than the adaptive one.
func handleRescaleDetails(q *request, w http.ResponseWriter) *restError {
	raw := q.params["rescaleuuid"]
	id, err := flinkapi.ParseRescaleID(raw)
	if err != nil {
		return badParameter("Cannot resolve path parameter (rescaleuuid) from value \"" + raw + "\".")
	}
	j, e := q.graphJob()
	if e != nil {
		return e
	}
	if !q.s.cfg.adaptive {
		return handlerError(http.StatusNotFound, jexc{class: classRestHandler,
			msg: "AdaptiveScheduler rescales was not enabled for job " + string(j.id) + ".", frames: framesRescalesHandler[1:]})
	}
	for _, r := range j.rescales {
		if r.id == string(id) {
			writeJSON(w, http.StatusOK, r.render(j, true))
			return nil
		}
	}
	return handlerError(http.StatusNotFound, jexc{class: classRestHandler,
		msg: "Could not find rescale details of specified rescaleUuid " + string(id) + ".", frames: framesRescalesHandler[1:]})
}
