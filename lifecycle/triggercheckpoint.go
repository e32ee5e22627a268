package lifecycle

// The trigger of a checkpoint through the REST API (Flink 1.17+): the
// operation behind JobSpec.Checkpoints and RequestCheckpoint.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

const opTriggerCheckpoint = "TriggerCheckpoint"

// triggerCheckpoint triggers a checkpoint of a running job through the
// REST API (Flink 1.17+) and waits for it to complete. All its state is
// in the Progress: the trigger id in Progress.Savepoint.Status (of kind
// checkpoint), the completed checkpoint's id in Progress.Checkpoint.ID.
type triggerCheckpoint struct {
	Env
	Job flinkapi.JobID
	// Reason is recorded on the checkpoint's status (savepoint.ReasonUser
	// if empty).
	Reason savepoint.Reason
}

// Step does at most one request. The first Step records a new trigger id
// and sends nothing; the next sends the trigger with it (again after a
// transient error: Flink takes one trigger id once), then polls the
// result. A trigger id Flink forgot is looked up in the job's checkpoint
// history. It ends Succeeded with Progress.Checkpoint.ID set, or in
// another Outcome, at the latest at the deadline (Timing.Savepoint).
func (t *triggerCheckpoint) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *t
	return bound(ctx, p, opTriggerCheckpoint, t.Job, &op.Env, nil, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opTriggerCheckpoint, t.OnTransition, t.Logger, func() (Result, error) { return op.step(ctx, p) })
	})
}

func (t *triggerCheckpoint) step(ctx context.Context, p *Progress) (Result, error) {
	now := t.clock().Now()
	s := &p.Savepoint.Status
	switch {
	case p.Phase == "":
		startAt(p, now)
		p.JobID, p.Phase = t.Job, PhaseCheckpoint
		p.Deadline = now.Add(orDefault(t.Timing.Savepoint, defaultSavepointTimeout))
		*s = savepoint.Begin(flinkapi.OpCheckpoint, t.Job, flinkapi.NewTriggerID(), reasonOr(t.Reason, savepoint.ReasonUser), now, p.Deadline)
		return Result{}, nil
	case !now.Before(p.Deadline):
		return finish(p, OutcomeTimedOut, fmt.Sprintf("the checkpoint of job %s did not complete before its deadline", t.Job)), nil
	}
	api := t.Client
	switch s.State {
	case savepoint.Pending:
		return t.send(ctx, api, p, now), nil
	case savepoint.Lost:
		return t.recover(ctx, p), nil
	}
	return t.poll(ctx, api, p, now), nil
}

// send sends the recorded trigger.
func (t *triggerCheckpoint) send(ctx context.Context, api API, p *Progress, now time.Time) Result {
	s := &p.Savepoint.Status
	_, err := api.TriggerCheckpoint(ctx, p.JobID, flinkapi.CheckpointRequest{TriggerID: s.TriggerID})
	switch {
	case err == nil:
		s.State, s.Attempts, s.LastUpdate, p.LastError = savepoint.InFlight, s.Attempts+1, now, ""
	case errors.Is(err, flinkapi.ErrUnsupported):
		return finish(p, OutcomeUnsupported, "checkpoints are triggered through the REST API from Flink 1.17 on: "+errMessage(err))
	case flinkapi.IsRetryable(err):
		p.LastError = errMessage(err) // sent again with the same trigger id
	default:
		return finish(p, OutcomeCheckpointFailed, "Flink refused the checkpoint trigger: "+errMessage(err))
	}
	return Result{RequeueAfter: t.Timing.poll()}
}

// poll polls the trigger in flight.
func (t *triggerCheckpoint) poll(ctx context.Context, api API, p *Progress, now time.Time) Result {
	s := &p.Savepoint.Status
	res, err := api.OperationStatus(ctx, flinkapi.Operation{Kind: flinkapi.OpCheckpoint, JobID: p.JobID, TriggerID: s.TriggerID})
	switch {
	case flinkapi.IsTriggerNotFound(err):
		s.State = savepoint.Lost // its history is read next
		return Result{RequeueAfter: soon}
	case err != nil:
		p.LastError = errMessage(err)
	case !res.Completed():
	case res.Succeeded():
		s.State, p.Checkpoint.ID = savepoint.Succeeded, res.CheckpointID
		return finish(p, OutcomeSucceeded, fmt.Sprintf("checkpoint %d of job %s completed", res.CheckpointID, p.JobID))
	case res.Failure.TasksNotRunning():
		// Flink refuses a checkpoint until all tasks run: triggered
		// again, with a new trigger id, until the deadline.
		*s = savepoint.Begin(flinkapi.OpCheckpoint, p.JobID, flinkapi.NewTriggerID(), s.Reason, now, p.Deadline)
		p.LastError = res.Failure.Message()
	default:
		s.State, s.Failure = savepoint.Failed, res.Failure.Message()
		return finish(p, OutcomeCheckpointFailed, "the checkpoint failed: "+res.Failure.Message())
	}
	return Result{RequeueAfter: t.Timing.poll()}
}

// recover looks for the checkpoint of a trigger id Flink forgot in the
// job's checkpoint history: one completed that was triggered at or after
// the trigger.
func (t *triggerCheckpoint) recover(ctx context.Context, p *Progress) Result {
	s := &p.Savepoint.Status
	stats, err := t.Client.Checkpoints(ctx, p.JobID)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: t.Timing.poll()}
	}
	since := s.TriggerTime.Truncate(time.Millisecond)
	for _, h := range stats.History {
		if !h.IsSavepoint && h.Status == flinkapi.CheckpointCompleted && !h.TriggerTime.Before(since) {
			s.State, p.Checkpoint.ID = savepoint.Succeeded, h.ID
			return finish(p, OutcomeSucceeded, fmt.Sprintf("checkpoint %d of job %s completed (Flink forgot the trigger id)", h.ID, p.JobID))
		}
	}
	for _, h := range stats.History {
		if !h.IsSavepoint && h.Status == flinkapi.CheckpointInProgress {
			return Result{RequeueAfter: t.Timing.poll()} // it may be this one
		}
	}
	return finish(p, OutcomeCheckpointFailed, "Flink forgot the checkpoint trigger "+string(s.TriggerID)+" and no checkpoint completed since")
}

// CheckpointProgress is the record, in a Progress, of a checkpoint
// triggered through the REST API (ActionCheckpoint,
// ActionCheckpointRequest); its trigger is in Progress.Savepoint.
type CheckpointProgress struct {
	// ID is the checkpoint the trigger completed as (format 5).
	ID int64 `json:"id,omitempty"`
}
