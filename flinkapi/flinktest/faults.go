package flinktest

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// FaultKind is a kind of fault the server can inject.
type FaultKind int

// Kinds of faults. The first four act on requests that match the fault's
// Route and Job; the last three on savepoints and stops of the fault's Job
// when they are triggered.
const (
	// FaultStatus answers Status with Flink's error body for it: for 503
	// the leader election message, for 404 "Job <id> not found" on job
	// routes, for 500 an internal server error with a trace.
	FaultStatus FaultKind = iota + 1
	// FaultReset closes the connection without an answer.
	FaultReset
	// FaultLatency delays the answer by Delay: on a manual clock the clock
	// moves forward by Delay; on a wall clock the request waits.
	FaultLatency
	// FaultRestart restarts the JobManager (see RestartJobManager) with the
	// fault's Restart options; the request in flight gets a connection
	// reset if the restart has downtime or the fault is After. After a
	// POST /jars/:jarid/run-application (Flink 2.3, After) the JobManager
	// fails once the application is stored but before its program
	// submitted the job, as Flink runs the program after its answer: with
	// HA the new JobManager runs the application again and submits its job
	// itself.
	FaultRestart
	// FaultSavepointFails makes a savepoint or stop complete with a failure
	// cause: a CheckpointException with Cause as message (default
	// "Checkpoint expired before completing."). A failed stop leaves the
	// job running.
	FaultSavepointFails
	// FaultJobFailsDuringSavepoint makes the job fail (Cause: "a.b.Class:
	// message" or a message) halfway through a savepoint or stop, which
	// then fails. The job restarts from its latest checkpoint if its
	// restart strategy allows, else it ends FAILED.
	FaultJobFailsDuringSavepoint
	// FaultJobFailsWhileStopping makes a stop's savepoint complete and the
	// job fail right after it (Flink 1.15+): the operation completes with
	// failure-cause StopWithSavepointStoppingException, which names the
	// savepoint's location, and the job restarts or fails.
	FaultJobFailsWhileStopping
	// FaultDisposalFails makes a savepoint disposal complete with a
	// failure and leave the savepoint's files: an IOException with Cause
	// as its message ("Permission denied" if empty), as Flink reports a
	// storage that refuses the delete.
	FaultDisposalFails
)

var faultNames = map[FaultKind]string{
	FaultStatus: "status", FaultReset: "reset", FaultLatency: "latency", FaultRestart: "restart",
	FaultSavepointFails: "savepoint-fails", FaultJobFailsDuringSavepoint: "job-fails-during-savepoint",
	FaultJobFailsWhileStopping: "job-fails-while-stopping", FaultDisposalFails: "disposal-fails",
}

// String names the kind.
func (k FaultKind) String() string {
	if n, ok := faultNames[k]; ok {
		return n
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

func (k FaultKind) onRequests() bool { return k >= FaultStatus && k <= FaultRestart }

// Fault describes a fault to inject with Server.Inject.
type Fault struct {
	Kind FaultKind
	// Route limits a request fault to one endpoint, named as in Flink's
	// documentation with or without the method: "POST
	// /jobs/:jobid/savepoints", "/jobs/:jobid". Empty: every request.
	Route string
	// Job limits the fault to requests about, or savepoints of, this job.
	// Empty: any job.
	Job flinkapi.JobID
	// Status is the status code of FaultStatus (400 to 599).
	Status int
	// Message, if set, replaces the error message of FaultStatus: the body
	// is {"errors": [Message]}.
	Message string
	// Delay is the latency of FaultLatency.
	Delay time.Duration
	// After lets the request take effect before FaultStatus, FaultReset or
	// FaultRestart replaces its answer: a trigger starts its savepoint, a
	// jar run its job, and the client does not learn it.
	After bool
	// Restart configures FaultRestart.
	Restart RestartOptions
	// Cause is the failure cause of the savepoint and job faults.
	Cause string
	// Times limits how often the fault hits; 0: every time.
	Times int
	// Probability, between 0 and 1, makes the fault hit only some of the
	// requests or savepoints it matches, drawn from the server's seeded
	// random source; 0 means always.
	Probability float64
}

// faultState is an injected fault and how often it hit.
type faultState struct {
	Fault
	hits int
}

func (f *faultState) describe() string {
	d := f.Kind.String()
	switch f.Kind {
	case FaultStatus:
		d += fmt.Sprintf(" %d", f.Status)
	case FaultLatency:
		d += " " + f.Delay.String()
	}
	if f.After {
		d += " after"
	}
	return d
}

// Inject adds a fault. Faults act in the order they were injected; of the
// request faults that match a request, every latency applies and the first
// status, reset or restart decides the answer.
func (s *Server) Inject(f Fault) error {
	if _, ok := faultNames[f.Kind]; !ok {
		return fmt.Errorf("flinktest: Inject: unknown fault kind %d", int(f.Kind))
	}
	if f.Kind == FaultStatus && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("flinktest: Inject: status %d of a FaultStatus is not an error status (400 to 599)", f.Status)
	}
	if f.Kind == FaultLatency && f.Delay <= 0 {
		return fmt.Errorf("flinktest: Inject: FaultLatency needs a positive Delay")
	}
	if f.Route != "" {
		if !f.Kind.onRequests() {
			return fmt.Errorf("flinktest: Inject: %v acts on savepoints, not on routes; leave Route empty", f.Kind)
		}
		if len(routesByName(strings.TrimSpace(f.Route))) == 0 {
			return fmt.Errorf("flinktest: Inject: unknown route %q; want e.g. \"POST /jobs/:jobid/savepoints\"", f.Route)
		}
	}
	if f.Job != "" {
		id, err := flinkapi.ParseJobID(string(f.Job))
		if err != nil {
			return fmt.Errorf("flinktest: Inject: %w", err)
		}
		f.Job = id
	}
	if f.Times < 0 || f.Probability < 0 || f.Probability > 1 {
		return fmt.Errorf("flinktest: Inject: Times must be >= 0 and Probability within [0, 1]")
	}
	f.Route = strings.TrimSpace(f.Route)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &faultState{Fault: f})
	return nil
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// fires reports whether an eligible fault hits this time, counting it.
func (s *Server) fires(f *faultState) bool {
	if f.Times > 0 && f.hits >= f.Times {
		return false
	}
	if f.Probability > 0 && f.Probability < 1 && s.rng.Float64() >= f.Probability {
		return false
	}
	f.hits++
	return true
}

// matchFaults returns the request faults that hit a request: the latencies
// and at most one status, reset or restart. The lock must be held.
func (s *Server) matchFaults(e *Request, params map[string]string) []*faultState {
	var out []*faultState
	decided := false
	for _, f := range s.faults {
		if !f.Kind.onRequests() {
			continue
		}
		if f.Route != "" && e.Route != f.Route && !strings.HasSuffix(e.Route, " "+f.Route) {
			continue
		}
		if f.Job != "" && !strings.EqualFold(params["jobid"], string(f.Job)) {
			continue
		}
		if f.Kind != FaultLatency && decided {
			continue
		}
		if !s.fires(f) {
			continue
		}
		out = append(out, f)
		if f.Kind != FaultLatency {
			decided = true
		}
	}
	return out
}

// applySnapshotFaults arms the savepoint faults that hit a new savepoint,
// stop or checkpoint c of j. The lock must be held.
func (s *Server) applySnapshotFaults(j *job, c *checkpoint, op *operation) {
	for _, f := range s.faults {
		if !f.appliesTo(op) || f.Job != "" && f.Job != j.id {
			continue
		}
		if !s.fires(f) {
			continue
		}
		switch f.Kind {
		case FaultSavepointFails:
			c.failWith = f.Cause
			if c.failWith == "" {
				c.failWith = "Checkpoint expired before completing."
			}
		case FaultJobFailsDuringSavepoint:
			c.jobFailAt = c.trigger.Add(c.completeAt.Sub(c.trigger) / 2)
			c.jobFailCause = f.Cause
		case FaultJobFailsWhileStopping:
			c.stopFailure = f.Cause
			if c.stopFailure == "" {
				c.stopFailure = "flinktest: injected task failure while stopping"
			}
		}
	}
}

// appliesTo reports whether f is a savepoint fault for op's kind.
func (f *faultState) appliesTo(op *operation) bool {
	switch f.Kind {
	case FaultSavepointFails, FaultJobFailsDuringSavepoint:
		return op.kind == opSavepoint || op.kind == opStop
	case FaultJobFailsWhileStopping:
		return op.kind == opStop
	}
	return false
}

// injectedError is the answer of a FaultStatus.
func (s *Server) injectedError(f *faultState, r *http.Request, params map[string]string) *restError {
	if f.Message != "" {
		return plainError(f.Status, f.Message)
	}
	switch f.Status {
	case http.StatusServiceUnavailable:
		return plainError(f.Status, "Service temporarily unavailable due to an ongoing leader election. Please refresh.")
	case http.StatusNotFound:
		if trigger := params["triggerid"]; trigger != "" && params["jobid"] != "" {
			// Flink looks an operation's status up by its key only: an
			// unknown operation, whatever the job.
			kind := "savepoint"
			if strings.Contains(r.URL.Path, "/checkpoints/") {
				kind = "checkpoint"
			}
			return handlerError(f.Status, jexc{class: classRestHandler, frames: framesRestHandler,
				msg: fmt.Sprintf("There is no %s operation with triggerId=%s for job %s.", kind, trigger, params["jobid"])})
		}
		if id := params["jobid"]; id != "" {
			return jobNotFoundError(id, framesGraphHandler)
		}
		return unknownRoute(r)
	case http.StatusConflict:
		return handlerError(f.Status, jexc{class: classRestHandler, frames: framesRestHandler,
			msg: "Job cancellation failed because the job has already reached another terminal state (FAILED)."})
	case http.StatusInternalServerError:
		return serverError(jexc{class: classRuntime, msg: "flinktest: injected fault", frames: framesRestHandler})
	}
	return handlerError(f.Status, jexc{class: classRestHandler, frames: framesRestHandler, msg: http.StatusText(f.Status)})
}

// restartFromFault restarts the JobManager for a FaultRestart. pending is
// the run-application the failed request started, if any (After).
func (s *Server) restartFromFault(f *faultState, pending string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restartLocked(f.Restart, pending)
}

// disposalFault reports whether a FaultDisposalFails hits a disposal
// that completes now, and the message of its cause. The lock must be
// held.
func (s *Server) disposalFault() (string, bool) {
	for _, f := range s.faults {
		if f.Kind != FaultDisposalFails || !s.fires(f) {
			continue
		}
		if f.Cause != "" {
			return f.Cause, true
		}
		return "Permission denied", true
	}
	return "", false
}
