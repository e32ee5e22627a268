package policy

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// EvaluateRestart decides whether a job that failed, or that the
// JobManager lost, is started again now and from which state. Call it when
// the spec did not change (otherwise EvaluateUpdate decides). It applies
// p's defaults and does no I/O; now is the only clock.
//
// The rules, in order:
//
//   - An invalid policy blocks (InvalidPolicy).
//   - A JobManager that does not answer is waited for until LastContact
//     plus TransitionTimeout, then the decision blocks.
//   - RUNNING and FINISHED jobs are left alone (JobRunning, JobFinished).
//   - A CANCELED job was cancelled by someone else (the Flink UI, flink
//     cancel, another tool) while its spec says it runs: it is restarted
//     like a failed one (RestartCancelledJob) if the mode is
//     FromLatestState; with mode Never it is left alone (JobCancelled).
//   - A transitional state (FAILING, RESTARTING, CANCELLING, CREATED,
//     INITIALIZING, RECONCILING, SUSPENDED, or one unknown to this package)
//     is Flink's own business: it is waited for until StateSince plus
//     TransitionTimeout, then the decision blocks (JobStuck), except for
//     SUSPENDED, which then counts as lost.
//   - A FAILED job (RestartFailedJob), a CANCELED one (RestartCancelledJob)
//     and a job the JobManager does not know (RestartLostJob) are restarted, if the mode is FromLatestState
//     (else RestartDisabled), after any savepoint in flight has ended or
//     passed its deadline, while fewer than MaxRestarts restarts happened
//     within Window (else RestartBudgetExhausted), from the newest
//     savepoint or retained checkpoint within MaxStateAge (else
//     NoRecentState), and once Backoff has passed since the later of the
//     last restart and the job's end (else RestartBackoff).
func EvaluateRestart(p RestartPolicy, obs Observations, now time.Time) (d Decision) {
	d.Details.Now, d.Details.JobState = now, obs.jobState()
	if err := p.Validate(); err != nil {
		d.Action, d.Reason, d.Details.Failure = ActionBlock, ReasonInvalidPolicy, err.Error()
		return d
	}
	p = p.WithDefaults()
	d.Details.MaxStateAge = p.MaxStateAge.Std()
	timeout := p.TransitionTimeout.Std()
	if !obs.JobManagerReachable {
		unreachable(&d, obs.LastContact, timeout, now)
		return d
	}
	job := obs.Job
	if job == nil {
		restart(&d, &p, &obs, now, ReasonRestartLostJob)
		return d
	}
	switch {
	case job.State == flinkapi.JobFailed:
		restart(&d, &p, &obs, now, ReasonRestartFailedJob)
	case job.State == flinkapi.JobRunning:
		d.Action, d.Reason = ActionNone, ReasonJobRunning
	case job.State == flinkapi.JobFinished:
		d.Action, d.Reason = ActionNone, ReasonJobFinished
	case job.State == flinkapi.JobCanceled && p.Mode == RestartFromLatestState:
		restart(&d, &p, &obs, now, ReasonRestartCancelledJob)
	case job.State == flinkapi.JobCanceled:
		d.Action, d.Reason = ActionNone, ReasonJobCancelled
	case transitionWait(&d, job, timeout, now):
	case job.State == flinkapi.JobSuspended:
		restart(&d, &p, &obs, now, ReasonRestartLostJob)
	default:
		stuckBlock(&d, job, timeout, now)
	}
	return d
}

// restart decides for a failed, cancelled or lost job.
func restart(d *Decision, p *RestartPolicy, obs *Observations, now time.Time, reason Reason) {
	if p.Mode != RestartFromLatestState {
		d.Action, d.Reason = ActionBlock, ReasonRestartDisabled
		return
	}
	// The default savepoint deadline bounds a savepoint status that has
	// none of its own.
	if savepointWait(d, &obs.Savepoint, defaultSavepointDeadline.Std(), now) {
		return
	}
	window := p.Window.Std()
	count := p.restartsInWindow(obs.Restarts, obs.LastRestart, now)
	d.Details.Count, d.Details.Max = count, p.MaxRestarts
	if count >= p.MaxRestarts {
		d.Action, d.Reason = ActionBlock, ReasonRestartBudgetExhausted
		d.Details.Since, d.Details.Limit = obs.LastRestart, window
		d.RequeueAfter = obs.LastRestart.Add(window).Sub(now)
		return
	}
	var s selection
	selectState(&s, obs, p.MaxStateAge.Std(), now, true)
	d.Details.Newest = s.newest
	if !s.chosen.IsSet() {
		d.Action, d.Reason = ActionBlock, ReasonNoRecentState
		return
	}
	from := obs.LastRestart
	if obs.Job != nil && obs.Job.EndTime.After(from) {
		from = obs.Job.EndTime
	}
	if !from.IsZero() {
		if until := from.Add(p.Backoff.Std()); now.Before(until) {
			d.Reason = ReasonRestartBackoff
			d.Details.Since, d.Details.Limit = from, p.Backoff.Std()
			wait(d, until, now)
			d.RequeueAfter = until.Sub(now)
			return
		}
	}
	d.Action, d.Reason = ActionRestart, reason
	d.RestorePoint = s.chosen
	d.RequeueAfter = defaultPollInterval
}
