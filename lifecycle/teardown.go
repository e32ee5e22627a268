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

// Teardown stops a job for good within bounded time, so that deleting it
// never hangs: it stops the job with a savepoint (through Stop) until
// Timing.Savepoint passes (a savepoint that failed or was lost, with the
// job still running, is tried again after a delay, SavepointAttempts
// times in all), records the savepoint in Store under Name for
// a later redeploy, and if no savepoint could be taken does what the
// policy allows: cancel without state (Stateless mode or
// AllowCancelWithoutState), or leave the job running and end
// OutcomeLeftRunning saying why. Build it anew from its configuration
// whenever convenient: all its state is in the Progress passed to Step.
type Teardown struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the job to tear down.
	Job flinkapi.JobID
	// Mode is the upgrade mode of the job's policy; empty:
	// policy.DefaultUpgradeMode. Stateless cancels at once.
	Mode policy.UpgradeMode
	// AllowCancelWithoutState lets Teardown cancel a stateful job without
	// a savepoint when none could be taken in time: the caller's explicit
	// consent to losing its state.
	AllowCancelWithoutState bool
	// SavepointAttempts is how many stops with savepoint (each with a
	// new trigger id) Teardown tries while Timing.Savepoint has time
	// left, when one fails or is lost and the job still runs; 0:
	// policy.DefaultSavepointAttempts.
	SavepointAttempts int
	// Store and Name, if set, receive the final savepoint.
	Store RestorePointStore
	Name  string
	// Strategy and Drain are passed to Stop.
	Strategy StopStrategy
	Drain    bool
	// Deployer and Cluster, if set, are the Deployer's cluster Job runs
	// in (an application cluster): Job is read and stopped through the
	// cluster's client (Env.Client is not used), and once the job is
	// stopped and its savepoint recorded (or it had ended) the cluster is
	// deleted (PhaseDeleteCluster).
	Deployer Deployer
	Cluster  Cluster
}

// Step does at most one REST request (or one Put to the Store). It goes
// through the phases of Stop, then Record (the savepoint stored under
// Name) and, when the job failed while stopping or no savepoint could be
// taken and the policy allows it, the phases of a cancel. It ends
// Succeeded (p.Location holds the savepoint unless the job was cancelled
// without state or had already ended), LeftRunning, or TimedOut when the
// cancel or the record did not complete in time (p.Location is kept).
// Step returns an error for a canceled context and ErrStateRequired for a
// Strategy of CancelWithoutState under a policy that keeps state.
func (t *Teardown) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *t
	return bound(ctx, p, opTeardown, t.Job, &op.Env, nil, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opTeardown, t.OnTransition, t.Logger, func() (Result, error) { return op.step(ctx, p) })
	})
}

// step is one Step of t on p, between the frame's checks and report.
func (t *Teardown) step(ctx context.Context, p *Progress) (Result, error) {
	env, err := jobEnv(t.Env, t.Deployer, t.Cluster)
	if err != nil {
		return Result{}, err
	}
	op := *t
	op.Env = env
	now := t.clock().Now()
	var res Result
	if p.Phase == PhaseDeleteCluster {
		res = stepDeleteCluster(ctx, t.Deployer, t.Cluster, p, now, t.Timing)
	} else if res, err = op.advance(ctx, p, now); err == nil && res.Done && t.retires(p) {
		res = retire(p, now, t.Timing)
	}
	return res, err
}

// endedBefore reports whether the stop of p, which did not succeed,
// found the job ended without a savepoint of it: its newest state is to
// be read instead.
func endedBefore(p *Progress) bool {
	switch p.Replace.StopOutcome {
	case OutcomeJobTerminal, OutcomeSavepointFailed, OutcomeSavepointLost, OutcomeTimedOut:
		return p.Savepoint.Location == "" && (ended(p) || p.Replace.StopOutcome == OutcomeJobTerminal)
	}
	return false
}

// retries reports whether the job of p, whose savepoint failed or was
// lost, is stopped with another: while Timing.Savepoint, counted from the
// start (end), has time left and attempts remain.
func (t *Teardown) retries(p *Progress, now time.Time) (end time.Time, ok bool) {
	if p.Replace.StopOutcome != OutcomeSavepointFailed && p.Replace.StopOutcome != OutcomeSavepointLost || p.Savepoint.Location != "" {
		return time.Time{}, false
	}
	end = p.Started.Add(orDefault(t.Timing.Savepoint, defaultSavepointTimeout))
	tries := t.SavepointAttempts
	if tries <= 0 {
		tries = policy.DefaultSavepointAttempts
	}
	return end, now.Before(end) && p.Replace.Attempts < tries
}

// retires reports whether the teardown, which just ended, deletes the
// job's cluster first: the job is stopped for good (its savepoint taken
// and recorded, or it had ended), so nothing of it runs any more.
func (t *Teardown) retires(p *Progress) bool {
	return t.Deployer != nil && !t.Cluster.IsZero() && (p.Outcome == OutcomeSucceeded || p.Stopped())
}

func (t *Teardown) stopOp(p *Progress) *Stop {
	op := &Stop{Env: t.quiet(), Job: t.Job, Mode: t.Mode, Strategy: t.Strategy, Drain: t.Drain, Reason: savepoint.ReasonStop}
	if p.Replace.StopOutcome != "" {
		// The cancel after the stop: allowed by the policy, or a restore
		// point is recorded.
		op.Mode, op.Strategy = policy.UpgradeStateless, CancelWithoutState
	}
	return op
}

func (t *Teardown) advance(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case "":
		res, err := t.stopOp(p).step(ctx, p)
		p.Replace.PreviousJobID = t.Job
		if err == nil && p.Stop.Strategy != "" && p.Stop.Strategy != CancelWithoutState {
			p.Replace.Attempts = 1
		}
		return res, err
	case PhaseSavepoint, PhaseCancel, PhaseWaitStopped:
		return t.stepStop(ctx, p, now)
	case PhaseObserve, PhaseObserveCheckpoints, PhaseObserveRetention:
		return t.stepObserve(ctx, p, now)
	case PhaseRecord:
		return t.stepRecord(ctx, p, now)
	}
	return finish(p, OutcomeTimedOut, fmt.Sprintf("unknown phase %q of a teardown", p.Phase)), nil
}

// stepStop steps the stop (or the cancel that follows it) and goes on
// once it ended.
func (t *Teardown) stepStop(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	res, err := t.stopOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	if p.Replace.StopOutcome != "" {
		// The cancel ended.
		if p.Outcome != OutcomeSucceeded {
			return finish(p, p.Outcome, "cancelling the job after "+string(p.Replace.StopOutcome)+": "+p.Reason), nil
		}
		if ranOn(p) && !readNewest(p) {
			return t.readAfterCancel(p, now), nil
		}
		return t.done(p, "the job is cancelled after "+string(p.Replace.StopOutcome)), nil
	}
	p.Replace.StopOutcome = p.Outcome
	return t.next(ctx, p, now)
}

// lateObserveReads bounds the reads of a job that had ended past the
// deadline of its observe phases (counted in Progress.Requests): its
// state, its checkpoint statistics and its retention, each with one
// answer that Flink does not know the job, which the job list confirms
// or not before the read is sent again.
const lateObserveReads = 6

// stepObserve does one read of the state and checkpoints of a job that
// had ended, within the phase's deadline. Past it the reads go on while
// each gets an answer that moves the phase on, lateObserveReads reads at
// most: a read that failed before the caller went away leaves the
// job's retained checkpoint, which Flink may still show, to be read when
// it is back, rather than the teardown ending without the job's newest
// state. The first read past the deadline that fails without moving on
// ends the teardown TimedOut.
func (t *Teardown) stepObserve(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	timedOut := func() (Result, error) {
		return finish(p, OutcomeTimedOut, "the job had ended ("+string(p.Replace.StopOutcome)+": "+p.Reason+
			"), and the deadline passed while reading its state and checkpoints"+lastError(p)), nil
	}
	late := !now.Before(p.Deadline)
	switch {
	case late && p.Requests >= lateObserveReads:
		return timedOut()
	case late && p.LastError == "" && p.Requests == 0:
		// No read of the phase failed: the time passed while the caller
		// was away, not waiting for Flink. The job has ended, nothing
		// runs: the phase's deadline counts from its first read after.
		p.Deadline, late = now.Add(orDefault(t.Timing.Stop, defaultStopTimeout)), false
	case late:
		p.Requests++
	}
	phase, deadline, unconfirmed := p.Phase, p.Deadline, p.Stop.Unconfirmed
	res, err := t.observeEnded(ctx, p, now)
	if err == nil && !res.Done && late && p.Phase == phase && p.Deadline.Equal(deadline) && p.Stop.Unconfirmed == unconfirmed && p.LastError != "" {
		return timedOut() // a read past the deadline failed and moved nothing on
	}
	return res, err
}

// stepRecord records the restore point in the Store under the name.
func (t *Teardown) stepRecord(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if !now.Before(p.Deadline) && p.LastError != "" {
		return finish(p, OutcomeTimedOut, fmt.Sprintf("could not record the restore point %s under %q: %s", restorePoint(p), t.Name, p.LastError)), nil
	}
	if err := t.Store.Put(ctx, t.Name, teardownRecord(p)); err != nil {
		p.Requests++
		p.LastError = err.Error()
		return Result{RequeueAfter: t.Timing.backoff(p.Requests)}, nil
	}
	p.Teardown.Recorded, p.Requests, p.LastError = true, 0, ""
	switch {
	case p.Savepoint.Location == "" && ended(p):
		return t.endedResult(p), nil
	case ranOn(p) && readNewest(p):
		return t.ranOnResult(p), nil
	}
	return t.next(ctx, p, now)
}

// restorePoint is the restore point the teardown found: its savepoint, or
// the retained checkpoint of a job that had already ended.
func restorePoint(p *Progress) string {
	if p.Savepoint.Location != "" {
		return p.Savepoint.Location
	}
	return p.Replace.RestoreFrom
}

// ranOn reports whether the job of p failed while it was being stopped
// after its savepoint completed: Flink restarted it, and it ran on (and
// may have completed checkpoints newer than the savepoint) until the
// cancel that followed.
func ranOn(p *Progress) bool {
	if p.Savepoint.Location == "" {
		return false
	}
	return p.Replace.StopOutcome == OutcomeJobFailedWhileStopping || p.Replace.StopOutcome == OutcomeSucceeded && p.Replace.Observed.State == flinkapi.JobFailed
}

// readNewest reports whether the newest state of a job that ran on was
// read after it ended (readAfterCancel).
func readNewest(p *Progress) bool { return p.Replace.Observed.Latest.Location != "" }

// readAfterCancel goes on, once the cancel of a job that ran on after its
// savepoint ended, to read the job's retained checkpoint (once Flink's
// cache holds no answer from before the cancel): the newer of it and the
// savepoint is the job's newest state, recorded under the name.
func (t *Teardown) readAfterCancel(p *Progress, now time.Time) Result {
	sp, _ := p.Record()
	why := p.Reason
	resetPhase(p)
	p.Reason = why
	if !p.Replace.Observed.State.IsGloballyTerminal() {
		seenTerminal(p, flinkapi.JobCanceled, now, t.Timing)
	}
	p.Replace.Observed.Latest = sp
	p.Phase = PhaseObserveCheckpoints
	p.Deadline = later(now.Add(orDefault(t.Timing.Stop, defaultStopTimeout)), p.Replace.Observed.StatsAfter.Add(t.Timing.poll()))
	return Result{RequeueAfter: p.Replace.Observed.StatsAfter.Sub(now)}
}

// teardownRecord is what Teardown stores under its name: the savepoint,
// or the retained checkpoint of a job that had ended or ran on past its
// savepoint when it is the newer (endedFound).
func teardownRecord(p *Progress) savepoint.Record {
	if p.Savepoint.Location == "" || p.Replace.RestoreKind == policy.KindCheckpoint && p.Replace.RestoreFrom != "" {
		return savepoint.Record{Location: p.Replace.RestoreFrom, Time: p.Replace.Observed.CheckpointTime, JobID: p.Replace.PreviousJobID}
	}
	rec, _ := p.Record()
	rec.Location = p.Savepoint.Location
	return rec
}

// next decides, once the stop ended, what follows: recording its
// savepoint, looking at a job that had already ended for its newest
// state, another attempt, a cancel, or the end.
func (t *Teardown) next(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if p.Replace.StopOutcome == OutcomeSucceeded && ranOn(p) && !readNewest(p) {
		// The job failed after its savepoint and ended FAILED by itself:
		// its newest state is read before anything is recorded.
		return t.readAfterCancel(p, now), nil
	}
	if p.Savepoint.Location != "" && t.Store != nil && t.Name != "" && !p.Teardown.Recorded {
		resetPhase(p)
		p.Phase, p.Deadline = PhaseRecord, now.Add(orDefault(t.Timing.Stop, defaultStopTimeout))
		return Result{}, nil
	}
	why := p.Reason
	switch p.Replace.StopOutcome {
	case OutcomeSucceeded:
		return t.done(p, why), nil
	case OutcomeJobGone:
		return t.gone(p, why), nil
	}
	if endedBefore(p) {
		// The job had ended (or ended while Flink forgot the trigger):
		// nothing to stop or retry; its newest state is its retained
		// checkpoint, if Flink kept one.
		resetPhase(p)
		p.Reason = why
		p.Phase, p.Deadline = PhaseObserve, now.Add(orDefault(t.Timing.Stop, defaultStopTimeout))
		if ended(p) {
			p.Phase = PhaseObserveCheckpoints
		}
		return Result{}, nil
	}
	if end, ok := t.retries(p, now); ok {
		// The job still runs without a savepoint (a checkpoint declined,
		// a JobManager failover): stop it with a new one while
		// Timing.Savepoint, counted from the start, has time left.
		return t.retry(ctx, p, now, end, why)
	}
	return t.cancelOrLeave(ctx, p, why)
}

// cancelOrLeave cancels a job the stop left running: with a savepoint
// (the job failed while stopping, or the savepoint completed after its
// deadline) it may be cancelled; without one only if the policy allows
// it, or it is left running.
func (t *Teardown) cancelOrLeave(ctx context.Context, p *Progress, why string) (Result, error) {
	if p.Savepoint.Location == "" && t.Mode != policy.UpgradeStateless && !t.AllowCancelWithoutState {
		tries := ""
		if p.Replace.Attempts > 1 {
			tries = fmt.Sprintf(" in %d attempts", p.Replace.Attempts)
		}
		return finish(p, OutcomeLeftRunning, "no savepoint could be taken"+tries+" ("+why+") and the policy keeps state, so the job was not cancelled and may still run; "+
			"fix the cause and tear down again, or allow cancelling without state"), nil
	}
	resetPhase(p)
	p.Stop.Strategy = ""
	return t.stopOp(p).step(ctx, p)
}

// observeEnded reads the state of a job that had ended (Observe, when
// only a 409 said so), then its checkpoint statistics, read once Flink's
// cache holds none from before the end, for its newest restore point: a
// completed savepoint, or the latest checkpoint if Flink retains it
// (Observe Retention).
func (t *Teardown) observeEnded(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case PhaseObserve:
		return t.observeEndedState(ctx, p, now), nil
	case PhaseObserveRetention:
		if done, _ := readRetention(ctx, t.Client, p); !done { // the job had ended when observed
			return Result{RequeueAfter: t.Timing.backoff(2)}, nil
		}
		return t.endedFound(p, now), nil
	}
	if now.Before(p.Replace.Observed.StatsAfter) {
		p.Deadline = later(p.Deadline, p.Replace.Observed.StatsAfter.Add(t.Timing.poll()))
		return Result{RequeueAfter: p.Replace.Observed.StatsAfter.Sub(now)}, nil
	}
	if p.Stop.Unconfirmed {
		return t.confirmKnown(ctx, p, now)
	}
	return t.readEndedCheckpoints(ctx, p, now), nil
}

// observeEndedState reads the state of a job that had ended (when only
// a 409 said so): once it is terminal, its checkpoint statistics are
// read after Flink's cache of them has turned over.
func (t *Teardown) observeEndedState(ctx context.Context, p *Progress, now time.Time) Result {
	st, err := t.Client.JobStatus(ctx, p.Replace.PreviousJobID)
	switch {
	case err == nil && st.IsGloballyTerminal():
		seenTerminal(p, st, now, t.Timing)
		p.Phase, p.LastError = PhaseObserveCheckpoints, ""
		p.Deadline = later(p.Deadline, p.Replace.Observed.StatsAfter.Add(t.Timing.poll()))
		return Result{RequeueAfter: p.Replace.Observed.StatsAfter.Sub(now)}
	case err == nil:
		return finish(p, p.Replace.StopOutcome, p.Reason+"; Flink lists the job "+string(st)+": tear down again")
	case flinkapi.IsJobNotFound(err):
		p.Replace.StopOutcome = OutcomeJobGone
		return t.gone(p, "Flink no longer knows the job ("+p.Reason+")")
	}
	p.LastError = errMessage(err)
	return Result{RequeueAfter: t.Timing.backoff(2)}
}

// readEndedCheckpoints reads the ended job's checkpoint statistics for
// its newest completed savepoint and its latest checkpoint, whose
// retention is read next; with neither, the ended job's state is what
// was found.
func (t *Teardown) readEndedCheckpoints(ctx context.Context, p *Progress, now time.Time) Result {
	stats, err := t.Client.Checkpoints(ctx, p.Replace.PreviousJobID)
	switch {
	case flinkapi.IsJobNotFound(err):
		// One answer that Flink does not know the job may come from a
		// JobManager failing over: its job list tells, in the next step,
		// before the job's state is taken for lost.
		p.Stop.Unconfirmed, p.LastError = true, notFound+errMessage(err)
		return Result{RequeueAfter: t.Timing.poll()}
	case err == nil:
		if c := stats.LatestSavepoint; c != nil && c.Status == flinkapi.CheckpointCompleted && c.ExternalPath != "" && !c.Discarded {
			p.Replace.Observed.Latest = savepoint.Record{Location: c.ExternalPath, Time: c.TriggerTime, JobID: p.Replace.PreviousJobID}
		}
		if c := retainedState(stats); c.Path != "" {
			p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = c.Path, c.Time
			p.Phase, p.LastError = PhaseObserveRetention, ""
			return Result{}
		}
	case errors.Is(err, flinkapi.ErrNotFound), permanent(err):
		// No statistics (checkpointing off, or Flink forgot the job).
	default:
		p.LastError = errMessage(err)
		return Result{RequeueAfter: t.Timing.backoff(2)}
	}
	return t.endedFound(p, now)
}

// confirmKnown asks Flink's job list about the ended job after its
// checkpoint statistics were answered with "not found": a job the list
// shows has its statistics read again; one it does not has none to read.
func (t *Teardown) confirmKnown(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	known, _, err := listJob(ctx, t.Client, p.Replace.PreviousJobID)
	switch {
	case err != nil:
		p.LastError = notFound + errMessage(err)
		return Result{RequeueAfter: t.Timing.backoff(2)}, nil
	case known:
		p.Stop.Unconfirmed, p.LastError = false, ""
		return Result{RequeueAfter: t.Timing.poll()}, nil
	}
	p.Stop.Unconfirmed = false
	return t.endedFound(p, now), nil
}

// endedFound chooses the newest restore point of a job that had ended, a
// savepoint or its retained checkpoint, and records it.
func (t *Teardown) endedFound(p *Progress, now time.Time) Result {
	p.LastError = ""
	sp, cp := p.Replace.Observed.Latest, p.Replace.Observed.Checkpoint
	switch {
	case sp.Location != "" && (cp == "" || sp.Time.After(p.Replace.Observed.CheckpointTime) || otherJobsCheckpoint(cp, p.Replace.PreviousJobID)):
		p.Replace.RestoreFrom, p.Replace.RestoreKind = sp.Location, policy.KindSavepoint
		p.Replace.Observed.Checkpoint, p.Replace.Observed.CheckpointTime = sp.Location, sp.Time
	case cp != "":
		p.Replace.RestoreFrom, p.Replace.RestoreKind = cp, policy.KindCheckpoint
	}
	if p.Replace.RestoreFrom != "" && t.Store != nil && t.Name != "" {
		p.Phase, p.Deadline, p.Requests = PhaseRecord, now.Add(orDefault(t.Timing.Stop, defaultStopTimeout)), 0
		return Result{}
	}
	if ranOn(p) {
		return t.ranOnResult(p)
	}
	return t.endedResult(p)
}

// otherJobsCheckpoint reports whether cp is a checkpoint of another job than
// job (its directory, <dir>/<job id>/chk-N, names another id): one job
// was started from, which Flink shows as restored when the job completed
// none of its own (after a failure, say, that followed its stop's
// savepoint). Its state predates every savepoint job took, whatever time
// the restore gives it.
func otherJobsCheckpoint(cp string, job flinkapi.JobID) bool {
	dir, _, ok := checkpointOf(cp)
	return ok && job != "" && !strings.EqualFold(dir[strings.LastIndex(dir, "/")+1:], string(job))
}

// ranOnResult ends the teardown of a job that ran on after its savepoint,
// once its newest state was read after the cancel (and recorded).
func (t *Teardown) ranOnResult(p *Progress) Result {
	why := fmt.Sprintf("the job is cancelled after %s; its newest state is the %s %s (taken at %s)", p.Replace.StopOutcome,
		strings.ToLower(string(p.Replace.RestoreKind)), restorePointOf(p), stamp(p.Replace.Observed.CheckpointTime))
	return t.done(p, why)
}

// restorePointOf is the newest state endedFound chose, or the savepoint.
func restorePointOf(p *Progress) string {
	if p.Replace.RestoreFrom != "" {
		return p.Replace.RestoreFrom
	}
	return p.Savepoint.Location
}

// endedResult ends the teardown of a job that had ended.
func (t *Teardown) endedResult(p *Progress) Result {
	state := string(p.Replace.Observed.State)
	if p.Replace.RestoreFrom != "" {
		why := fmt.Sprintf("the job had already ended %s; its newest state is the %s %s (taken at %s)",
			state, strings.ToLower(string(p.Replace.RestoreKind)), p.Replace.RestoreFrom, stamp(p.Replace.Observed.CheckpointTime))
		if p.Teardown.Recorded {
			why += fmt.Sprintf("; recorded as %q", t.Name)
		}
		return finish(p, OutcomeSucceeded, why+" ("+p.Reason+")")
	}
	if t.Mode == policy.UpgradeStateless || t.AllowCancelWithoutState {
		return finish(p, OutcomeSucceeded, "the job had already ended "+state+"; no state kept ("+p.Reason+")")
	}
	return finish(p, p.Replace.StopOutcome, p.Reason+"; the job is "+state+" and Flink keeps no checkpoint of it, so no restore point is recorded")
}

// retry starts another stop with savepoint, after a delay that grows
// with the attempts, bounded by end.
func (t *Teardown) retry(ctx context.Context, p *Progress, now, end time.Time, why string) (Result, error) {
	p.Replace.Attempts++
	attempts := p.Replace.Attempts
	resetPhase(p)
	p.Replace.StopOutcome, p.Stop.Strategy = "", ""
	op := t.stopOp(p)
	op.Timing.Savepoint = end.Sub(now)
	res, err := op.step(ctx, p)
	p.LastError = "savepoint attempt " + fmt.Sprint(attempts) + ": " + why
	res.RequeueAfter = max(res.RequeueAfter, t.Timing.backoff(attempts))
	return res, err
}

// gone ends the teardown of a job Flink does not know (any more): nothing
// runs, and nothing is recorded unless a savepoint was seen before.
func (t *Teardown) gone(p *Progress, why string) Result {
	if p.Savepoint.Location != "" || p.Teardown.Recorded {
		return t.done(p, why)
	}
	return finish(p, OutcomeJobGone, why+"; nothing was recorded")
}

func (t *Teardown) done(p *Progress, why string) Result {
	if p.Savepoint.Location != "" && !strings.Contains(why, p.Savepoint.Location) {
		why += "; savepoint at " + p.Savepoint.Location
	}
	if p.Teardown.Recorded {
		why += fmt.Sprintf("; recorded as %q", t.Name)
	}
	return finish(p, OutcomeSucceeded, why)
}

// TeardownProgress is the record of a Teardown in a Progress.
type TeardownProgress struct {
	// Recorded is set once Teardown stored the savepoint's location under
	// its name.
	Recorded bool `json:"recorded,omitempty"`
}
