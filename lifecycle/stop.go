package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// StopStrategy is how a job is stopped. The strings are stable.
type StopStrategy string

// Stop strategies.
const (
	// StopWithSavepoint stops the job with Flink's stop call (POST
	// /jobs/:jobid/stop): a savepoint, then the job ends
	// FINISHED. With Drain, MAX_WATERMARK fires all event-time timers first.
	StopWithSavepoint StopStrategy = "StopWithSavepoint"
	// CancelWithSavepoint takes a savepoint with cancel-job set: Flink
	// cancels the job once it completes. A fallback, chosen only when
	// forced, or for a cluster older than any flinkkit supports.
	CancelWithSavepoint StopStrategy = "CancelWithSavepoint"
	// SavepointThenCancel takes a savepoint, waits for it, then cancels the
	// job: for jobs that must not see the end of their input.
	SavepointThenCancel StopStrategy = "SavepointThenCancel"
	// CancelWithoutState cancels the job and keeps no state. Allowed only
	// for a Stateless policy.
	CancelWithoutState StopStrategy = "CancelWithoutState"
)

// ErrStateRequired is returned when a strategy would stop a job without a
// savepoint although its policy asks for its state to be kept.
var ErrStateRequired = errors.New("lifecycle: the policy keeps state; the job may not be stopped without a savepoint")

// ErrUnknownStrategy is returned for a StopStrategy this package does not
// know.
var ErrUnknownStrategy = errors.New("lifecycle: unknown stop strategy")

// ChooseStopStrategy returns the strategy to stop a job with on a cluster of
// version v (the zero Version: a current one) under upgrade mode mode (empty:
// policy.DefaultUpgradeMode). force, if set, is used as it is, except that
// CancelWithoutState requires the Stateless mode (ErrStateRequired).
// Without force: a Stateless job is cancelled without state; others are
// stopped with Flink's stop with a savepoint (StopWithSavepoint, on every
// version flinkkit supports; a version older than those, which has no
// stop call, is cancelled with a savepoint).
func ChooseStopStrategy(v flinkapi.Version, mode policy.UpgradeMode, force StopStrategy) (StopStrategy, error) {
	if mode == "" {
		mode = policy.DefaultUpgradeMode
	}
	switch force {
	case StopWithSavepoint, CancelWithSavepoint, SavepointThenCancel:
		return force, nil
	case CancelWithoutState:
		if mode != policy.UpgradeStateless {
			return "", fmt.Errorf("%w (upgrade mode %s, strategy %s)", ErrStateRequired, mode, force)
		}
		return force, nil
	case "":
	default:
		return "", fmt.Errorf("%w %q", ErrUnknownStrategy, force)
	}
	switch {
	case mode == policy.UpgradeStateless:
		return CancelWithoutState, nil
	case v.IsZero() || v.Supports(flinkapi.FeatureStopWithSavepoint):
		return StopWithSavepoint, nil
	}
	return CancelWithSavepoint, nil
}

// Stop stops a job by a StopStrategy, keeping a savepoint unless the
// strategy is CancelWithoutState. Build it anew from its configuration
// whenever convenient: all its state is in the Progress passed to Step.
type Stop struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the job to stop.
	Job flinkapi.JobID
	// Mode is the upgrade mode of the job's policy; empty:
	// policy.DefaultUpgradeMode. Only Stateless allows CancelWithoutState.
	Mode policy.UpgradeMode
	// Strategy forces a strategy; empty: ChooseStopStrategy picks one.
	Strategy StopStrategy
	// Drain emits MAX_WATERMARK before a StopWithSavepoint.
	Drain bool
	// Reason says why the savepoint is taken (savepoint.ReasonStop if
	// empty).
	Reason savepoint.Reason
}

// Step does at most one request. The first Step chooses the strategy and
// records it and the savepoint's trigger id in p, sending nothing. Then
// the savepoint is taken as by TakeSavepoint (with stop or cancel-job as
// the strategy says), the job is cancelled if the strategy says so, and
// its state is polled until it is terminal. The operation ends Succeeded
// with p.Location set (none for CancelWithoutState). If the savepoint
// fails or times out the job is not cancelled: it ends in that Outcome. If
// the job fails while stopping after its savepoint completed, it ends
// OutcomeJobFailedWhileStopping with p.Location set.
//
// Step returns ErrStateRequired (before any request) when CancelWithoutState
// is asked for a policy that keeps state, and a canceled context's error.
func (s *Stop) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *s
	return bound(ctx, p, opStop, s.Job, &op.Env, nil, func(ctx context.Context) (Result, error) { return op.step(ctx, p) })
}

// step is Step without the check of p's binding: Teardown and Upgrade
// stop jobs through it on their own Progress.
func (s *Stop) step(ctx context.Context, p *Progress) (Result, error) {
	return frame(ctx, p, opStop, nil, nil, func() (Result, error) { return s.advance(ctx, p) })
}

// advance is one step of s on p, between the frame's checks.
func (s *Stop) advance(ctx context.Context, p *Progress) (Result, error) {
	now := s.clock().Now()
	if p.Phase == "" {
		strategy, err := ChooseStopStrategy(flinkapi.Version{}, s.Mode, s.Strategy)
		if err != nil {
			return Result{}, err
		}
		startAt(p, now)
		p.JobID = s.Job
		p.Stop.Strategy = strategy
		switch strategy {
		case CancelWithoutState:
			p.Phase = PhaseCancel
			p.Deadline = now.Add(orDefault(s.Timing.Stop, defaultStopTimeout))
		case StopWithSavepoint:
			beginSavepoint(p, flinkapi.OpStopWithSavepoint, s.Job, reasonOr(s.Reason, savepoint.ReasonStop), now, s.Timing.Savepoint)
		default:
			beginSavepoint(p, flinkapi.OpSavepoint, s.Job, reasonOr(s.Reason, savepoint.ReasonStop), now, s.Timing.Savepoint)
		}
		return Result{}, nil
	}
	if p.Stop.Strategy == CancelWithoutState && s.Mode != policy.UpgradeStateless {
		// The policy changed since the operation started: invariant 1 holds.
		if _, err := ChooseStopStrategy(flinkapi.Version{}, s.Mode, CancelWithoutState); err != nil {
			return Result{}, err
		}
	}
	switch p.Phase {
	case PhaseSavepoint:
		return s.stepSavepoint(ctx, p, now), nil
	case PhaseCancel:
		return s.stepCancel(ctx, p, now), nil
	case PhaseWaitStopped:
		return s.stepWait(ctx, p, now), nil
	}
	return finish(p, OutcomeSavepointFailed, fmt.Sprintf("unknown phase %q of a stop", p.Phase)), nil
}

func (s *Stop) stepSavepoint(ctx context.Context, p *Progress, now time.Time) Result {
	send := func() (flinkapi.Operation, error) {
		if p.Stop.Strategy == StopWithSavepoint {
			return s.Client.StopWithSavepoint(ctx, p.JobID, flinkapi.StopRequest{
				TargetDirectory: s.TargetDirectory, Drain: s.Drain, FormatType: s.FormatType, TriggerID: p.Savepoint.Status.TriggerID,
			})
		}
		return s.Client.TriggerSavepoint(ctx, p.JobID, flinkapi.SavepointRequest{
			TargetDirectory: s.TargetDirectory, FormatType: s.FormatType, TriggerID: p.Savepoint.Status.TriggerID,
			CancelJob: p.Stop.Strategy == CancelWithSavepoint,
		})
	}
	if final, expect := savepointStep(ctx, s.Client, p, send, now, s.Timing); !final {
		return Result{RequeueAfter: savepointDelay(p, s.Timing, now, expect)}
	}
	if p.Savepoint.Status.State != savepoint.Succeeded {
		o, reason := savepointOutcome(p, s.TargetDirectory)
		return finish(p, o, reason)
	}
	p.Deadline = now.Add(orDefault(s.Timing.Stop, defaultStopTimeout))
	p.LastError, p.Stop.Unconfirmed = "", false
	if p.Stop.Strategy == SavepointThenCancel {
		p.Phase = PhaseCancel
		return Result{}
	}
	p.Phase = PhaseWaitStopped
	if p.Stop.Strategy == StopWithSavepoint {
		// Flink completes a stop with savepoint once the job has
		// finished: its state can be read at once.
		return Result{}
	}
	return Result{RequeueAfter: s.waitDelay(p, now)}
}

// stepCancel cancels the job. A cancel is never sent twice blindly: after
// one that may have reached Flink, the job's state is read first
// (stepWait), which sends the next cancel only if the job still runs.
func (s *Stop) stepCancel(ctx context.Context, p *Progress, now time.Time) Result {
	if !now.Before(p.Deadline) && p.Requests == 0 && p.LastError == "" {
		// No cancel was sent and failed: the time passed while the
		// caller was away, not waiting for Flink. The deadline counts
		// from the first cancel.
		p.Deadline = now.Add(orDefault(s.Timing.Stop, defaultStopTimeout))
	}
	if !now.Before(p.Deadline) {
		return finish(p, OutcomeTimedOut, "the deadline passed before the job could be cancelled: "+p.LastError)
	}
	p.Requests++
	err := s.Client.CancelJob(ctx, p.JobID)
	switch {
	case err == nil, flinkapi.IsTerminal(err):
		p.Requests, p.LastError = 0, ""
	case flinkapi.IsJobNotFound(err):
		// Confirmed by Flink's job list (stepWait) before it counts: one
		// such answer may be transient, and the job may still run.
		p.LastError, p.Stop.Unconfirmed = notFound+errMessage(err), true
	case errors.Is(err, flinkapi.ErrInvalidInput), errors.Is(err, flinkapi.ErrBadRequest):
		return finish(p, OutcomeJobTerminal, "Flink refused to cancel the job: "+errMessage(err))
	default:
		p.LastError = errMessage(err)
	}
	p.Phase = PhaseWaitStopped
	return Result{RequeueAfter: s.waitDelay(p, now)}
}

// waitDelay is when to read the state of a job being stopped again: soon
// after the cancel or the savepoint that stops it (the phase's deadline
// is counted from then), at Timing.Poll later.
func (s *Stop) waitDelay(p *Progress, now time.Time) time.Duration {
	return s.Timing.pollSince(p.Deadline.Add(-orDefault(s.Timing.Stop, defaultStopTimeout)), now)
}

// stepWait reads the job's state until it is terminal.
//
// Past the deadline with no read failed (the time passed while the caller
// was away), the state is read once more before the stop times out.
func (s *Stop) stepWait(ctx context.Context, p *Progress, now time.Time) Result {
	past := !now.Before(p.Deadline)
	if past && p.LastError != "" {
		return waitTimedOut(p)
	}
	if p.Stop.Unconfirmed {
		return s.confirmUnknown(ctx, p, now, past)
	}
	state, err := s.Client.JobStatus(ctx, p.JobID)
	switch {
	case err == nil:
	case past:
		p.LastError = errMessage(err)
		return waitTimedOut(p)
	case flinkapi.IsJobNotFound(err):
		// One such answer may be transient (see confirmUnknown).
		p.LastError, p.Stop.Unconfirmed = notFound+errMessage(err), true
		return Result{RequeueAfter: s.Timing.poll()}
	default:
		p.LastError = errMessage(err)
		return Result{RequeueAfter: s.Timing.backoff(2)}
	}
	return s.waitState(p, state, now, past)
}

// waitTimedOut ends the stop timed out: the job did not reach a
// terminal state before the deadline.
func waitTimedOut(p *Progress) Result {
	r := "the deadline passed before the job reached a terminal state"
	if p.LastError != "" {
		r += ": " + p.LastError
	}
	return finish(p, OutcomeTimedOut, r)
}

// confirmUnknown asks Flink's job list about the job after an answer
// said Flink does not know it: the list confirms it, or shows the job
// after all.
func (s *Stop) confirmUnknown(ctx context.Context, p *Progress, now time.Time, past bool) Result {
	known, st, err := listJob(ctx, s.Client, p.JobID)
	switch {
	case err != nil:
		p.LastError = notFound + errMessage(err)
		if past {
			return waitTimedOut(p)
		}
		return Result{RequeueAfter: s.Timing.backoff(2)}
	case !known:
		return s.stopped(p, "Flink no longer knows the job")
	case st.IsGloballyTerminal():
		seenTerminal(p, st, now, s.Timing)
		return s.stopped(p, "the job is "+string(st))
	}
	p.LastError, p.Stop.Unconfirmed = "", false
	return Result{RequeueAfter: s.Timing.poll()}
}

// waitState decides on the job's state read while it is being stopped:
// stopped once it is terminal, timed out past the deadline, read again
// while it is being cancelled, or cancelled again if it runs.
func (s *Stop) waitState(p *Progress, state flinkapi.JobState, now time.Time, past bool) Result {
	switch {
	case state.IsGloballyTerminal():
		seenTerminal(p, state, now, s.Timing)
		return s.stopped(p, "the job is "+string(state))
	case past:
		p.LastError = "the job is " + string(state)
		return waitTimedOut(p)
	case state == flinkapi.JobCancelling:
		return Result{RequeueAfter: s.waitDelay(p, now)}
	case p.Requests > 0:
		// The last cancel got no answer, or a failure, and the job still
		// runs: cancel again.
		p.Phase = PhaseCancel
		return Result{}
	case runsAgain(state) && p.Stop.Strategy == StopWithSavepoint && p.Savepoint.Location != "":
		// The stop's savepoint completed and the job runs: it failed
		// while stopping and Flink restarted it (the cause went with a
		// trigger id Flink forgot), or a failover recovered it before
		// it finished. It runs on from its checkpoints, and the state
		// it reaches is newer than the savepoint's: it ends as a job
		// that failed while stopping does, the savepoint kept.
		return finish(p, OutcomeJobFailedWhileStopping, fmt.Sprintf("the savepoint completed at %s, then the job did not finish: it is %s again", p.Savepoint.Location, state))
	case runsAgain(state):
		// Flink turns a job CANCELLING (or FINISHED) before it answers a
		// cancel or completes a stop: one that runs again was recovered
		// by a JobManager failover, and is cancelled again. Its state is
		// in the savepoint taken, or was not to be kept.
		p.Phase = PhaseCancel
		return Result{}
	}
	return Result{RequeueAfter: s.waitDelay(p, now)}
}

// runsAgain reports whether a job in state is running or about to.
func runsAgain(state flinkapi.JobState) bool {
	switch state {
	case flinkapi.JobRunning, flinkapi.JobRestarting, flinkapi.JobCreated, flinkapi.JobInitializing:
		return true
	}
	return false
}

// notFound starts Progress.LastError after an answer that Flink does not
// know the job, which Flink's job list confirms in the next step.
const notFound = "Flink does not know the job: "

// listJob looks id up in Flink's job list (GET /jobs), which an answer
// about one job cannot contradict by mistake: known reports whether the
// list has the job, and st its state.
func listJob(ctx context.Context, c API, id flinkapi.JobID) (known bool, st flinkapi.JobState, err error) {
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		return false, "", err
	}
	for _, j := range jobs {
		if strings.EqualFold(string(j.ID), string(id)) {
			return true, j.Status, nil
		}
	}
	return false, "", nil
}

func (s *Stop) stopped(p *Progress, why string) Result {
	p.LastError, p.Stop.Unconfirmed = "", false
	if p.Savepoint.Location != "" {
		return finish(p, OutcomeSucceeded, why+"; savepoint at "+p.Savepoint.Location)
	}
	return finish(p, OutcomeSucceeded, why+"; no state kept")
}

// StopProgress is the record of a Stop in a Progress: on its own, or
// inside Upgrade, Restart, Teardown, BlueGreen or Canary.
type StopProgress struct {
	// Strategy is the stop strategy Stop chose.
	Strategy StopStrategy `json:"strategy,omitempty"`
	// Unconfirmed reports that an answer about the job said Flink does not
	// know it: Flink's job list is asked in the next step, and confirms it
	// or shows the job after all (one such answer can come from a
	// JobManager failing over). Format 4; a Progress of an older format
	// recorded it as the start of LastError, which the first Step turns
	// into this field.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}
