package policy

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// EvaluateUpdate decides whether an update of the job's spec may proceed
// now, what must happen first, and from which state the new job starts.
// It applies p's defaults, reads obs and compares times with now only; it
// does no I/O and never reads the clock.
//
// The rules, in order:
//
//   - An invalid policy blocks (InvalidPolicy).
//   - A restore request (obs.Restore) whose token is not
//     obs.RestoreHandled takes precedence over everything below: see
//     "Restore requests" in the package documentation.
//   - Without SpecChanged or FirstDeploy there is nothing to do (UpToDate).
//   - A JobManager that does not answer is waited for until LastContact
//     plus TransitionTimeout, then the update blocks: nothing is done to a
//     job whose state is unknown. FirstDeploy goes ahead without it.
//   - Stateless: a running job is cancelled, a job that is not running is
//     replaced; the new job starts without state (StatelessUpgrade).
//   - A savepoint in flight (Pending, InFlight, Lost, Unconfirmed) is
//     waited for until its deadline (SavepointInProgress, SavepointLost).
//   - A transitional job state (CANCELLING, RESTARTING, FAILING, CREATED,
//     INITIALIZING, RECONCILING, or one unknown to this package) is waited
//     for until StateSince plus TransitionTimeout. Past it, a CANCELLING
//     job blocks (JobStuck); any other is cancelled and replaced from
//     state, as for a job that is not running.
//   - A job that is not running (FINISHED, FAILED, CANCELED, SUSPENDED or
//     unknown to the JobManager) is replaced from the newest state within
//     MaxStateAge: savepoints only in Savepoint mode unless
//     FallbackToLastState, savepoints and retained checkpoints in LastState
//     mode. Without such state the update blocks (NoRecentState,
//     NoRecentSavepoint), unless AllowStartWithoutState and no state of any
//     kind is young enough (StartWithoutState), or FirstDeploy and no state
//     exists at all (FirstDeploy).
//   - A RUNNING job in Savepoint mode is stopped with a savepoint first
//     (SavepointBeforeUpdate). If that savepoint completed but the job
//     runs again (it failed while stopping and restarted), it is
//     cancelled and replaced from the savepoint (RestoreFromState) rather
//     than stopped again. In LastState mode it is cancelled and
//     replaced from the newest state within MaxStateAge
//     (RestoreFromState), or, without such state, stopped with a savepoint
//     first (NoRecentState).
//   - When that savepoint failed or outlived its deadline, a new one is
//     triggered while SavepointAttempts allows (SavepointRetry); then the
//     update falls back to the newest state within MaxStateAge if
//     FallbackToLastState (SavepointFallback), starts without state if
//     AllowStartWithoutState and no state is young enough
//     (StartWithoutState), or blocks (SavepointFailed, SavepointTimedOut)
//     and the job keeps running.
func EvaluateUpdate(p UpdatePolicy, obs Observations, now time.Time) (d Decision) {
	d.Details.Now, d.Details.JobState, d.Details.Mode = now, obs.jobState(), p.Mode
	if err := p.Validate(); err != nil {
		d.Action, d.Reason, d.Details.Failure = ActionBlock, ReasonInvalidPolicy, err.Error()
		return d
	}
	p = p.WithDefaults()
	d.Details.Mode = p.Mode
	d.Details.MaxStateAge = p.MaxStateAge.Std()
	timeout := p.TransitionTimeout.Std()
	if obs.Restore.Pending(obs.RestoreHandled) {
		evaluateRestore(&d, &p, &obs, now)
		return d
	}
	if !obs.SpecChanged && !obs.FirstDeploy {
		d.Action, d.Reason = ActionNone, ReasonUpToDate
		return d
	}
	job := obs.Job
	if !obs.JobManagerReachable {
		if !obs.FirstDeploy {
			unreachable(&d, obs.LastContact, timeout, now)
			return d
		}
		job = nil
		d.Details.JobState = ""
	}
	if p.Mode == UpgradeStateless {
		updateStateless(&d, &p, job, now)
		return d
	}
	if savepointWait(&d, &obs.Savepoint, p.SavepointDeadline.Std(), now) {
		return d
	}
	switch {
	case job == nil || job.State.IsTerminal():
		replaceJob(&d, &p, &obs, now, ActionProceed)
	case job.State == flinkapi.JobRunning:
		updateRunning(&d, &p, &obs, now)
	case transitionWait(&d, job, timeout, now):
	case job.State == flinkapi.JobCancelling:
		stuckBlock(&d, job, timeout, now)
	default:
		replaceJob(&d, &p, &obs, now, ActionCancelFirst)
		if d.Reason == ReasonRestoreFromState {
			d.Reason = ReasonJobStuck
			d.Details.Since, d.Details.Limit = transitionSince(job, now), timeout
		}
	}
	return d
}

// The helpers below fill in d, which already holds the Details known so
// far; p has its defaults applied. They are plain functions taking
// pointers rather than methods of a struct holding those pointers, which
// would make the compiler move the inputs to the heap.

// updateStateless decides for the Stateless mode.
func updateStateless(d *Decision, p *UpdatePolicy, job *Job, now time.Time) {
	timeout := p.TransitionTimeout.Std()
	switch {
	case job == nil || job.State.IsTerminal():
		d.Action = ActionProceed
	case job.State == flinkapi.JobRunning:
		d.Action = ActionCancelFirst
	case transitionWait(d, job, timeout, now):
		return
	case job.State == flinkapi.JobCancelling:
		stuckBlock(d, job, timeout, now)
		return
	default:
		d.Action = ActionCancelFirst
		d.Details.Since, d.Details.Limit = transitionSince(job, now), timeout
		d.Reason = ReasonJobStuck
		d.RestorePoint = RestorePoint{Kind: KindNone}
		d.RequeueAfter = defaultPollInterval
		return
	}
	d.Reason = ReasonStatelessUpgrade
	d.RestorePoint = RestorePoint{Kind: KindNone}
	d.RequeueAfter = defaultPollInterval
}

// acceptsCheckpoints reports whether the policy restores from retained
// checkpoints without a savepoint failure having to justify it.
func acceptsCheckpoints(p *UpdatePolicy) bool {
	return p.Mode == UpgradeLastState || p.FallbackToLastState
}

// replaceJob decides how a job that is not running (or is stuck) is
// replaced: action with the newest acceptable state, or why not.
func replaceJob(d *Decision, p *UpdatePolicy, obs *Observations, now time.Time, action Action) {
	var s selection
	selectState(&s, obs, p.MaxStateAge.Std(), now, acceptsCheckpoints(p))
	d.Details.Newest, d.Details.Skipped = s.newest, s.skipped
	d.Details.SavepointsOnly = !acceptsCheckpoints(p)
	switch {
	case s.chosen.IsSet():
		d.Action, d.Reason = action, ReasonRestoreFromState
		d.RestorePoint = restoreFrom(s.chosen, p)
		d.RequeueAfter = defaultPollInterval
	case obs.FirstDeploy && !s.any:
		d.Action, d.Reason = action, ReasonFirstDeploy
		d.RestorePoint = RestorePoint{Kind: KindNone}
		d.RequeueAfter = defaultPollInterval
	case s.skipped.IsSet():
		d.Action, d.Reason = ActionBlock, ReasonNoRecentSavepoint
	case p.AllowStartWithoutState:
		d.Action, d.Reason = action, ReasonStartWithoutState
		d.RestorePoint = RestorePoint{Kind: KindNone}
		d.RequeueAfter = defaultPollInterval
	default:
		d.Action, d.Reason = ActionBlock, ReasonNoRecentState
	}
}

// updateRunning decides for a RUNNING job in a stateful mode.
func updateRunning(d *Decision, p *UpdatePolicy, obs *Observations, now time.Time) {
	var s selection
	if p.Mode == UpgradeLastState {
		selectState(&s, obs, p.MaxStateAge.Std(), now, true)
		d.Details.Newest = s.newest
		if s.chosen.IsSet() {
			d.Action, d.Reason = ActionCancelFirst, ReasonRestoreFromState
			d.RestorePoint = restoreFrom(s.chosen, p)
			d.RequeueAfter = defaultPollInterval
			return
		}
	}
	spLimit := p.SavepointDeadline.Std()
	st := &obs.Savepoint
	if st.Location != "" {
		// The savepoint completed, yet the job runs: it failed while
		// stopping and restarted (from older state). Another stop could
		// end the same way forever; the savepoint is the newest state, so
		// cancel the job and restore from it.
		selectState(&s, obs, p.MaxStateAge.Std(), now, acceptsCheckpoints(p))
		if s.chosen.IsSet() {
			d.Details.Newest = s.newest
			d.Action, d.Reason = ActionCancelFirst, ReasonRestoreFromState
			d.RestorePoint = restoreFrom(s.chosen, p)
			d.RequeueAfter = defaultPollInterval
			return
		}
	}
	failed, timedOut := savepointEnded(st, spLimit, now)
	if !failed {
		d.Action, d.Reason = ActionStopWithSavepoint, ReasonSavepointBeforeUpdate
		if p.Mode == UpgradeLastState {
			d.Reason = ReasonNoRecentState
		}
		d.Deadline = now.Add(spLimit)
		d.RequeueAfter = defaultPollInterval
		return
	}
	if p.Mode != UpgradeLastState {
		selectState(&s, obs, p.MaxStateAge.Std(), now, true)
	}
	attempts := max(obs.SavepointAttempts, 1)
	d.Details.Count, d.Details.Max = attempts, p.SavepointAttempts
	d.Details.TimedOut, d.Details.Failure = timedOut, st.Failure
	d.Details.Since, d.Details.Limit = st.TriggerTime, spLimit
	d.Details.Newest = s.newest
	switch {
	case attempts < p.SavepointAttempts:
		d.Action, d.Reason = ActionStopWithSavepoint, ReasonSavepointRetry
		d.Deadline = now.Add(spLimit)
		d.RequeueAfter = defaultPollInterval
	case p.FallbackToLastState && s.chosen.IsSet():
		d.Action, d.Reason = ActionCancelFirst, ReasonSavepointFallback
		d.RestorePoint = restoreFrom(s.chosen, p)
		d.RequeueAfter = defaultPollInterval
	case p.AllowStartWithoutState && !s.youngExists():
		d.Action, d.Reason = ActionCancelFirst, ReasonStartWithoutState
		d.RestorePoint = RestorePoint{Kind: KindNone}
		d.RequeueAfter = defaultPollInterval
	case timedOut:
		d.Action, d.Reason = ActionBlock, ReasonSavepointTimedOut
	default:
		d.Action, d.Reason = ActionBlock, ReasonSavepointFailed
	}
}

// restoreFrom returns r with the policy's restore options.
func restoreFrom(r RestorePoint, p *UpdatePolicy) RestorePoint {
	r.AllowNonRestoredState = p.AllowNonRestoredState
	return r
}

// savepointInFlight reports whether st is a savepoint that has not ended.
// One that waits for Flink's job list (Unconfirmed) has not.
func savepointInFlight(st *savepoint.Status) bool {
	if st.Location != "" {
		return false
	}
	switch st.State {
	case savepoint.Pending, savepoint.InFlight, savepoint.Lost, savepoint.Unconfirmed:
		return true
	}
	return false
}

// savepointDeadline is st's deadline: its own, else its trigger (or last
// update) time plus limit, else now plus limit.
func savepointDeadline(st *savepoint.Status, limit time.Duration, now time.Time) time.Time {
	switch {
	case !st.Deadline.IsZero():
		return st.Deadline
	case !st.TriggerTime.IsZero():
		return st.TriggerTime.Add(limit)
	case !st.LastUpdate.IsZero():
		return st.LastUpdate.Add(limit)
	}
	return now.Add(limit)
}

// savepointWait makes d a Wait, and reports true, while a savepoint is in
// flight before its deadline.
func savepointWait(d *Decision, st *savepoint.Status, limit time.Duration, now time.Time) bool {
	if !savepointInFlight(st) {
		return false
	}
	deadline := savepointDeadline(st, limit, now)
	if !now.Before(deadline) {
		return false
	}
	d.Reason = ReasonSavepointInProgress
	if st.State == savepoint.Lost || st.State == savepoint.Unconfirmed && st.Before == savepoint.Lost {
		d.Reason = ReasonSavepointLost
	}
	d.Details.Since, d.Details.Limit = st.TriggerTime, limit
	wait(d, deadline, now)
	return true
}

// savepointEnded reports whether st is a savepoint that ended without a
// location: failed, or in flight past its deadline (timedOut).
func savepointEnded(st *savepoint.Status, limit time.Duration, now time.Time) (failed, timedOut bool) {
	if st.Location != "" {
		return false, false
	}
	switch st.State {
	case savepoint.Failed, savepoint.LostForGood, savepoint.JobGone, savepoint.JobTerminal:
		return true, false
	case savepoint.TimedOut:
		return true, true
	case savepoint.Pending, savepoint.InFlight, savepoint.Lost, savepoint.Unconfirmed:
		if !now.Before(savepointDeadline(st, limit, now)) {
			return true, true
		}
	}
	return false, false
}

// transitionSince is when the job's current state began, as far as known.
func transitionSince(job *Job, now time.Time) time.Time {
	switch {
	case !job.StateSince.IsZero():
		return job.StateSince
	case !job.StartTime.IsZero():
		return job.StartTime
	}
	return now
}

// transitionWait makes d a Wait, and reports true, while a job in a
// transitional state is within the timeout.
func transitionWait(d *Decision, job *Job, timeout time.Duration, now time.Time) bool {
	since := transitionSince(job, now)
	deadline := since.Add(timeout)
	if !now.Before(deadline) {
		return false
	}
	d.Reason = ReasonJobTransitioning
	d.Details.Since, d.Details.Limit = since, timeout
	wait(d, deadline, now)
	return true
}

// stuckBlock blocks on a job stuck in a transitional state.
func stuckBlock(d *Decision, job *Job, timeout time.Duration, now time.Time) {
	d.Action, d.Reason = ActionBlock, ReasonJobStuck
	d.Details.Since, d.Details.Limit = transitionSince(job, now), timeout
	d.RequeueAfter = defaultPollInterval
}

// unreachable waits for a silent JobManager until lastContact plus
// timeout, then blocks.
func unreachable(d *Decision, lastContact time.Time, timeout time.Duration, now time.Time) {
	d.Details.JobState = ""
	d.Details.Since, d.Details.Limit = lastContact, timeout
	since := lastContact
	if since.IsZero() {
		since = now
	}
	deadline := since.Add(timeout)
	if now.Before(deadline) {
		d.Reason = ReasonJobManagerUnreachable
		wait(d, deadline, now)
		return
	}
	d.Action, d.Reason = ActionBlock, ReasonJobManagerUnreachableTimeout
	d.RequeueAfter = defaultPollInterval
}

// wait makes d a Wait until deadline, which must be after now.
func wait(d *Decision, deadline, now time.Time) {
	d.Action = ActionWait
	d.Deadline = deadline
	d.RequeueAfter = min(defaultPollInterval, deadline.Sub(now))
}
