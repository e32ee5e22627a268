package flinktest

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// disposalDuration is how long removing a savepoint takes.
const disposalDuration = 50 * time.Millisecond

// savepointDirKey is the configuration key of the default savepoint
// directory, as Flink's errors name it.
func (p personality) savepointDirKey() string {
	if p.atLeast(1, 20) {
		return "execution.checkpointing.savepoint-dir"
	}
	return "state.savepoints.dir"
}

func handleSavepointTrigger(q *request, w http.ResponseWriter) *restError {
	return q.savepointOrStop(w, false)
}

func handleStop(q *request, w http.ResponseWriter) *restError {
	return q.savepointOrStop(w, true)
}

// savepointOrStop answers POST /jobs/:jobid/savepoints and /stop.
func (q *request) savepointOrStop(w http.ResponseWriter, stop bool) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	class, dirField := bodySavepoint, "target-directory"
	known := []string{"target-directory", "cancel-job", "triggerId", "formatType"}
	if stop {
		class, dirField = bodyStop, "targetDirectory"
		known = []string{"targetDirectory", "drain", "triggerId", "formatType"}
	}
	b, e := q.parseBody(class, known)
	if e != nil {
		return e
	}
	dir, e := b.str(dirField)
	if e != nil {
		return e
	}
	var cancelJob bool
	if !stop {
		if cancelJob, e = b.boolean("cancel-job"); e != nil {
			return e
		}
	} else if _, e = b.boolean("drain"); e != nil {
		return e
	}
	format, e := b.enum("formatType", "org.apache.flink.core.execution.SavepointFormatType", "CANONICAL", "NATIVE")
	if e != nil {
		return e
	}
	trigger, e := b.triggerID("triggerId")
	if e != nil {
		return e
	}
	if dir == "" {
		dir = q.s.cfg.savepointDir
	}
	if dir == "" {
		return handlerError(http.StatusBadRequest, jexc{class: classRestHandler, frames: framesRestHandler, msg: fmt.Sprintf(
			"Config key [%s] is not set. Property [%s] must be provided.", q.s.cfg.pers.savepointDirKey(), dirField)})
	}
	if trigger == "" {
		trigger = flinkapi.TriggerID(q.s.newHex())
	}
	key := opKey{trigger: trigger, job: id}
	if _, known := q.cl.savepointOps[key]; known {
		// A trigger id Flink knows for this job: nothing new starts.
		writeJSON(w, http.StatusAccepted, map[string]string{"request-id": string(trigger)})
		return nil
	}
	kind := opSavepoint
	if stop {
		kind = opStop
	}
	op := &operation{kind: kind, key: key, cancelJob: cancelJob}
	q.cl.savepointOps[key] = op
	if format == "" {
		format = "CANONICAL"
	}
	q.startSnapshot(id, op, func(j *job) *checkpoint {
		return q.cl.triggerSavepoint(j, q.now, stop, dir, format, op)
	})
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": string(trigger)})
	return nil
}

// startSnapshot starts a savepoint, stop or checkpoint of job id, or fails
// op at once when the job cannot take one, as the dispatcher does.
func (q *request) startSnapshot(id flinkapi.JobID, op *operation, start func(*job) *checkpoint) {
	j := q.cl.job(id)
	switch {
	case j == nil || j.state.IsGloballyTerminal():
		// Only running jobs have a JobMaster to ask.
		op.fail(q.now, completionFailure(jexc{class: classJobNotFound, msg: "Could not find Flink job (" + string(id) + ")", frames: framesDispatcher}))
	case j.state == flinkapi.JobInitializing:
		op.fail(q.now, completionFailure(jexc{class: classUnavailableOp, frames: framesDispatcher,
			msg: "Unable to get JobMasterGateway for initializing job. The requested operation is not available while the JobManager is initializing."}))
	case j.state != flinkapi.JobRunning || !j.tasksRunning || j.stopping != nil && op.kind == opStop:
		// Triggering fails before the checkpoint exists: it counts as a
		// failed checkpoint but never shows in the history.
		j.counts.Total++
		j.counts.Failed++
		op.fail(q.now, completionFailure(notRunningFailure(j)))
	default:
		c := start(j)
		q.s.applySnapshotFaults(j, c, op)
	}
}

func handleSavepointStatus(q *request, w http.ResponseWriter) *restError {
	return handleOperationStatus(q, w, q.cl.savepointOps, "savepoint", "failure-cause")
}

// handleOperationStatus answers the status of a savepoint or checkpoint
// operation of a job; failureField is the name Flink gives the failure
// cause in that kind of result.
func handleOperationStatus(q *request, w http.ResponseWriter, ops map[opKey]*operation, kind, failureField string) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	trigger, e := q.triggerID()
	if e != nil {
		return e
	}
	op := ops[opKey{trigger: trigger, job: id}]
	if op == nil {
		return handlerError(http.StatusNotFound, jexc{class: classRestHandler, frames: framesRestHandler,
			msg: fmt.Sprintf("There is no %s operation with triggerId=%s for job %s.", kind, trigger, id)})
	}
	writeJSON(w, http.StatusOK, opStatus(op, failureField))
	return nil
}

func handleCheckpointTrigger(q *request, w http.ResponseWriter) *restError {
	id, e := q.jobID()
	if e != nil {
		return e
	}
	b, e := q.parseBody(bodyCheckpoint, []string{"checkpointType", "triggerId"})
	if e != nil {
		return e
	}
	if _, e = b.enum("checkpointType", "org.apache.flink.core.execution.CheckpointType", "CONFIGURED", "FULL", "INCREMENTAL"); e != nil {
		return e
	}
	trigger, e := b.triggerID("triggerId")
	if e != nil {
		return e
	}
	if trigger == "" {
		trigger = flinkapi.TriggerID(q.s.newHex())
	}
	key := opKey{trigger: trigger, job: id}
	if _, known := q.cl.checkpointOps[key]; !known {
		op := &operation{kind: opCheckpoint, key: key}
		q.cl.checkpointOps[key] = op
		q.startSnapshot(id, op, func(j *job) *checkpoint {
			return q.cl.triggerCheckpoint(j, q.now, typeCheckpoint, op)
		})
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": string(trigger)})
	return nil
}

func handleCheckpointStatus(q *request, w http.ResponseWriter) *restError {
	return handleOperationStatus(q, w, q.cl.checkpointOps, "checkpoint", "failureCause")
}

func handleDisposalTrigger(q *request, w http.ResponseWriter) *restError {
	b, e := q.parseBody(bodyDisposal, []string{"savepoint-path"})
	if e != nil {
		return e
	}
	p, e := b.str("savepoint-path")
	if e != nil {
		return e
	}
	trigger := flinkapi.TriggerID(q.s.newHex())
	op := &operation{kind: opDisposal, key: opKey{trigger: trigger}, path: p, completeAt: q.now.Add(disposalDuration)}
	q.cl.disposals[trigger] = op
	// Savepoint disposal answers 200, not 202.
	writeJSON(w, http.StatusOK, map[string]string{"request-id": string(trigger)})
	return nil
}

// finishDisposal removes the savepoint of a disposal, or fails it.
func (s *Server) finishDisposal(op *operation, t time.Time) {
	snap := s.snapshots[normalizeLocation(op.path)]
	if msg, ok := s.disposalFault(); ok && snap != nil && !snap.removed {
		cause := jexc{class: "java.io.IOException", frames: framesFileSystem, msg: msg}
		op.fail(t, newFailure(jexc{class: classFlinkException, msg: fmt.Sprintf("Could not dispose savepoint %s.", op.path), frames: framesDisposal}, cause))
		return
	}
	if op.path != "" && snap != nil && !snap.removed {
		snap.removed = true
		op.succeed(t, "", 0)
		return
	}
	cause := jexc{class: classFileNotFound, frames: framesFileSystem, msg: fmt.Sprintf(
		"Cannot find checkpoint or savepoint file/directory '%s' on file system '%s'.", op.path, scheme(op.path))}
	op.fail(t, newFailure(jexc{class: classFlinkException, msg: fmt.Sprintf("Could not dispose savepoint %s.", op.path), frames: framesDisposal}, cause))
}

func handleDisposalStatus(q *request, w http.ResponseWriter) *restError {
	trigger, e := q.triggerID()
	if e != nil {
		return e
	}
	op := q.cl.disposals[trigger]
	if op == nil {
		h := fnv.New32a()
		h.Write([]byte(trigger))
		return handlerError(http.StatusNotFound, jexc{class: classNotFound, frames: framesRestHandler, msg: fmt.Sprintf(
			"Operation not found under key: org.apache.flink.runtime.rest.handler.async.OperationKey@%08x", h.Sum32())})
	}
	writeJSON(w, http.StatusOK, opStatus(op, "failure-cause"))
	return nil
}

// opStatus renders an operation's result. Checkpoint triggers name their
// failure "failureCause", the others "failure-cause".
func opStatus(op *operation, failureField string) map[string]any {
	if !op.done {
		return map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}, "operation": nil}
	}
	res := map[string]any{}
	switch {
	case op.failure != nil:
		res[failureField] = op.failure.wire()
	case op.kind == opCheckpoint:
		res["checkpointId"] = op.checkpointID
	case op.kind == opDisposal:
	default:
		res["location"] = op.location
	}
	return map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": res}
}
