package flinktest

import (
	"net/http"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// application is a Flink 2.3 application: a program the JobManager ran,
// with the job it started. Its state follows its job's.
type application struct {
	id      string
	name    string
	job     flinkapi.JobID // "": the program failed before submitting a job
	created time.Time
	// cancelAt is when POST /applications/:applicationid/cancel asked
	// for its end; zero if never.
	cancelAt time.Time
	// prog is the program of an application started by run-application,
	// which a JobManager failover with HA runs again; nil for the
	// SingleJobApplication of a jar run.
	prog *program
}

// addApp records an application of job j (nil: the program failed first).
func (cl *cluster) addApp(id, name string, j *job, now time.Time) {
	a := &application{id: id, name: name, created: now}
	if j != nil {
		a.job = j.id
	}
	cl.apps[id] = a
	cl.appOrder = append(cl.appOrder, id)
}

// jobOf returns the application's job, nil if it has none or the
// JobManager no longer keeps it.
func (cl *cluster) jobOf(a *application) *job {
	if a.job == "" {
		return nil
	}
	return cl.byID[a.job]
}

// appState is the application's state: its job's, mapped to Flink's
// ApplicationState, and when it reached a terminal one (zero if not).
func (cl *cluster) appState(a *application) (string, time.Time) {
	j := cl.jobOf(a)
	if j == nil {
		return "FAILED", a.created
	}
	switch j.state {
	case flinkapi.JobFinished:
		return "FINISHED", j.end
	case flinkapi.JobFailed:
		return "FAILED", j.end
	case flinkapi.JobCanceled:
		return "CANCELED", j.end
	}
	if !a.cancelAt.IsZero() || j.state == flinkapi.JobCancelling {
		return "CANCELING", time.Time{}
	}
	return "RUNNING", time.Time{}
}

// appTimes renders start-time, end-time and duration of an application.
func appTimes(a *application, end, now time.Time) (int64, int64, int64) {
	d := now.Sub(a.created)
	if !end.IsZero() {
		d = end.Sub(a.created)
	}
	return millis(a.created), millis(end), d.Milliseconds()
}

func handleApplicationsOverview(q *request, w http.ResponseWriter) *restError {
	apps := []any{}
	for i := len(q.cl.appOrder) - 1; i >= 0; i-- {
		a := q.cl.apps[q.cl.appOrder[i]]
		state, end := q.cl.appState(a)
		start, endMs, dur := appTimes(a, end, q.now)
		jobs := map[string]int{}
		if j := q.cl.jobOf(a); j != nil {
			jobs[string(j.state)]++
		}
		apps = append(apps, map[string]any{
			"id": a.id, "name": a.name, "start-time": start, "end-time": endMs, "duration": dur,
			"status": state, "jobs": jobs,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"applications": apps})
	return nil
}

// application returns the application of the :applicationid parameter, or
// the errors Flink answers: 400 for a malformed id, and for an unknown one
// notFound's answer.
func (q *request) application(notFound func(id string) *restError) (*application, *restError) {
	raw := q.params["applicationid"]
	id, err := flinkapi.ParseApplicationID(raw)
	if err != nil {
		return nil, badParameter("Cannot resolve path parameter (applicationid) from value \"" + raw + "\".")
	}
	a := q.cl.apps[string(id)]
	if a == nil {
		return nil, notFound(string(id))
	}
	return a, nil
}

func appNotFoundException(id string) jexc {
	return jexc{class: "org.apache.flink.runtime.messages.FlinkApplicationNotFoundException",
		msg: "Could not find Flink application (" + id + ")", frames: framesDispatcher}
}

// appCancelNotFound is the 404 of the cancellation, for an unknown
// application and for one that has ended.
func appCancelNotFound(id string) *restError {
	return handlerError(http.StatusNotFound,
		jexc{class: classRestHandler, msg: "Application could not be found.", frames: framesRestHandler},
		appNotFoundException(id))
}

func handleApplicationDetails(q *request, w http.ResponseWriter) *restError {
	a, e := q.application(func(id string) *restError { return serverError(appNotFoundException(id)) })
	if e != nil {
		return e
	}
	state, end := q.cl.appState(a)
	start, endMs, dur := appTimes(a, end, q.now)
	ts := map[string]int64{"CREATED": millis0(a.created), "RUNNING": 0, "FAILING": 0, "FAILED": 0, "CANCELING": 0, "CANCELED": 0, "FINISHED": 0}
	jobs := []any{}
	if j := q.cl.jobOf(a); j != nil {
		ts["RUNNING"] = millis0(a.created)
		jobs = append(jobs, q.s.renderOverview(j, q.now))
	}
	if !a.cancelAt.IsZero() {
		ts["CANCELING"] = millis0(a.cancelAt)
	}
	if !end.IsZero() {
		ts[state] = millis0(end)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": a.id, "name": a.name, "status": state, "start-time": start, "end-time": endMs, "duration": dur,
		"timestamps": ts, "jobs": jobs,
	})
	return nil
}

func handleApplicationCancel(q *request, w http.ResponseWriter) *restError {
	a, e := q.application(appCancelNotFound)
	if e != nil {
		return e
	}
	if state, _ := q.cl.appState(a); state == "FINISHED" || state == "FAILED" || state == "CANCELED" {
		return appCancelNotFound(a.id)
	}
	if a.cancelAt.IsZero() {
		a.cancelAt = q.now
	}
	if j := q.cl.job(a.job); j != nil && !j.state.IsGloballyTerminal() && j.state != flinkapi.JobCancelling {
		q.cl.cancel(j, q.now)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{})
	return nil
}
