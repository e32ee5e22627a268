package lifecycle

import (
	"time"

	"github.com/flinkkit/flinkkit/policy"
)

// Verdict is what a JobStatus says of a JobSpec, in one word of a closed
// set (Verdicts): whether the spec is carried out, is being carried out,
// waits for something that comes by itself, is refused, failed, cannot
// be acted on, or the job was deleted. It is derived from typed state
// alone (the Situation, the action in flight or ended and its Outcome,
// the plan's blocked decision, the restart policy's decision, Deleted),
// never from a Reason or a Message: JobStatus.VerdictFor gives it for a
// spec, Plan.Verdict for the call planned. Converge, a command-line
// tool's exit code and an operator's conditions all follow from it. The
// strings are stable.
type Verdict string

// Verdicts of a status against its spec.
const (
	// VerdictDone: the spec is carried out (JobStatus.Converged): the job
	// runs the spec's job stably (its current job earned it), is
	// suspended as the spec asks, or, a bounded job, finished; also while
	// a periodic savepoint or disposal runs beside such a job.
	VerdictDone Verdict = "Done"
	// VerdictProgressing: the spec is being carried out: an action is in
	// flight or starts at the next call, a new job earns its stability,
	// Flink restarts the job itself, or the next call reads how a job
	// ended; also a status no call has judged yet.
	VerdictProgressing Verdict = "Progressing"
	// VerdictWaiting: nothing can be done for the spec now, and the
	// Controller acts again by itself once what it waits for comes: the
	// JobManager that does not answer, task slots the cluster lacks, the
	// restart policy's backoff.
	VerdictWaiting Verdict = "Waiting"
	// VerdictBlocked: the spec is refused and the job was left as it was:
	// the last action ended Blocked (its policy or preflight refused,
	// nothing unsafe was done) or LeftRunning, a blue/green upgrade was
	// aborted or a canary failed; the spec's job was rolled back; the
	// restart policy blocks a restart (no recent state); an adoption was
	// refused. A refused action is tried again after RetryInterval with
	// the same spec (JobStatus.RetryPending); the rest wait for a new
	// spec.
	VerdictBlocked Verdict = "Blocked"
	// VerdictFailed: the last action failed (tried again after
	// RetryInterval with the same spec, at once with a new one:
	// JobStatus.RetryPending), or the job failed, was lost or cancelled
	// and the restart policy does not start it again, or it runs
	// unhealthy and its health policy does not restart it.
	VerdictFailed Verdict = "Failed"
	// VerdictInvalid: the spec does not validate (JobSpec.Validate);
	// nothing is done until it changes.
	VerdictInvalid Verdict = "Invalid"
	// VerdictDeleted: a Delete finished. Reconciled again, the job is
	// deployed anew.
	VerdictDeleted Verdict = "Deleted"
)

// Verdicts lists every Verdict.
var Verdicts = []Verdict{VerdictDone, VerdictProgressing, VerdictWaiting, VerdictBlocked, VerdictFailed, VerdictInvalid, VerdictDeleted}

// VerdictFor is s's verdict against spec: Invalid for a spec that does
// not validate; Done when s carries spec out (Converged); Progressing
// while an action is in flight; Deleted once a Delete finished; the
// verdict of the last action when it ended without success and the
// Controller starts it again with spec (Blocked or Failed, by its
// Outcome); Blocked for a spec whose job was rolled back (aborted, or
// failed its canary); Progressing when the next call starts an action
// for spec (a new Job, state, restore request or one-shot request);
// else the verdict the last call recorded (JobStatus.Verdict:
// Progressing, Waiting, Blocked or Failed), or Progressing when it
// recorded none.
func (s *JobStatus) VerdictFor(spec JobSpec) Verdict {
	return s.verdictFor(spec, spec.Validate() == nil)
}

// verdictFor is VerdictFor, given whether spec validates.
func (s *JobStatus) verdictFor(spec JobSpec, valid bool) Verdict {
	if !valid {
		return VerdictInvalid
	}
	if s.Converged(spec) {
		return VerdictDone
	}
	spec = spec.effective(s)
	switch {
	case s.InFlight() && actions[s.Action].background && s.Verdict == VerdictDone && !s.changePending(spec):
		return VerdictDone // a savepoint or disposal beside the job that ran the spec stably
	case s.InFlight():
		return VerdictProgressing
	case deleted(s):
		return VerdictDeleted
	}
	if v, ok := s.endedVerdict(spec); ok {
		return v
	}
	switch {
	case s.rolledBack(spec):
		return VerdictBlocked
	case s.changePending(spec):
		return VerdictProgressing
	}
	switch s.Verdict {
	case VerdictWaiting, VerdictBlocked, VerdictFailed:
		return s.Verdict
	case VerdictDone:
		if actions[s.Action].background {
			// A savepoint or disposal ended beside the job that ran the
			// spec stably; the next call settles it again.
			return VerdictDone
		}
	}
	return VerdictProgressing
}

// RetryPending reports whether the last action ended without success
// and the Controller starts it again with spec once RetryAt has passed:
// the verdict is that action's (Blocked or Failed) until then, and
// Converge waits for the retry.
func (s *JobStatus) RetryPending(spec JobSpec) bool {
	_, ok := s.endedVerdict(spec.effective(s))
	return ok && !deleted(s)
}

// endedVerdict is the verdict of the last action when it ended without
// success and is tried again with spec: Blocked for one refused
// (nothing unsafe was done), else Failed. A savepoint, disposal or
// autoscaling beside the running job does not hold the spec up.
func (s *JobStatus) endedVerdict(spec JobSpec) (Verdict, bool) {
	p := &s.Progress
	if s.Action == "" || s.InFlight() || !p.Done() || p.Outcome == OutcomeSucceeded || p.Outcome == OutcomeNotNeeded ||
		actions[s.Action].background || s.Action == ActionAutoscale || s.Action == ActionAdopt || !retries(spec, s) {
		return "", false
	}
	if refusal(p.Outcome) {
		return VerdictBlocked, true
	}
	return VerdictFailed, true
}

// refusal reports whether outcome o ends an action that was refused and
// left the job as it was.
func refusal(o Outcome) bool {
	switch o {
	case OutcomeBlocked, OutcomeLeftRunning, OutcomeBlueGreenAborted, OutcomeCanaryFailed, OutcomeRescaleRejected, OutcomeUnsupported:
		return true
	}
	return false
}

// retries reports whether the Controller starts the last action, which
// did not succeed, again with spec (Controller.retrying): the spec asks
// what it asked when the action started.
func retries(spec JobSpec, st *JobStatus) bool {
	switch st.Action {
	case ActionSuspend:
		return spec.State == DesiredSuspended
	case ActionTeardown:
		return true // a Delete's: tried again by the next Delete
	}
	if spec.State == DesiredSuspended {
		return false
	}
	return spec.Job.equal(st.Target) || spec.Job.equal(st.Deployed) || st.Target.IsZero()
}

// rolledBack reports whether spec's Job was rolled back (or its
// blue/green upgrade aborted, or its canary failed): not tried again
// until the spec changes.
func (s *JobStatus) rolledBack(spec JobSpec) bool {
	return spec.State != DesiredSuspended && s.FailedJob != "" && spec.Job.Fingerprint() == s.FailedJob && !spec.Job.equal(s.Deployed)
}

// changePending reports whether spec asks for something the status does
// not record, so that the next call starts an action for it (a deploy,
// a change of the Job, a suspend or resume, a restore or one-shot
// request).
func (s *JobStatus) changePending(spec JobSpec) bool {
	if spec.State == DesiredSuspended {
		return !s.Suspended && s.JobID != "" && !deleted(s)
	}
	return s.JobID == "" || s.Suspended || deleted(s) ||
		!spec.Job.equal(s.Deployed) && spec.Job.Fingerprint() != s.FailedJob ||
		spec.Restore.Pending(s.RestoreHandled) || len(spec.Requests.Pending(s.RequestsHandled)) > 0
}

// planVerdict is the verdict of plan p, which PlanFor made of spec and
// st from obs at now: what the call does, or, with nothing to start,
// what the job's situation and the policies say.
func (c *Controller) planVerdict(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p Plan) Verdict {
	switch {
	case p.InFlight && actions[p.Action].background && st.Verdict == VerdictDone:
		return VerdictDone // beside the job that ran the spec stably
	case p.Settled:
		return VerdictDone // also with a savepoint due beside it
	case p.InFlight || p.Action != "":
		return VerdictProgressing
	}
	if v, ok := st.endedVerdict(spec); ok {
		return v // waits for RetryAt
	}
	if st.rolledBack(spec) {
		return VerdictBlocked
	}
	if v, ok := c.situationVerdict(spec, st, obs, now, p.Situation); ok {
		return v
	}
	switch {
	case p.Blocked != "":
		return VerdictBlocked // an adoption refused
	case !obs.Reachable && obs.Read:
		return VerdictWaiting
	case spec.State == DesiredSuspended || p.Situation == SituationFinished:
		return VerdictDone
	}
	return VerdictProgressing
}

// situationVerdict is the verdict of a call that starts no action in
// situation sit, where the situation alone decides it (ok).
func (c *Controller) situationVerdict(spec JobSpec, st *JobStatus, obs Observation, now time.Time, sit Situation) (Verdict, bool) {
	var short Plan
	slots := obs.Job != nil && c.slotsShort(st, obs, &short)
	switch sit {
	case SituationUnreachable:
		return VerdictWaiting, true
	case SituationRestarting, SituationFinishUnconfirmed:
		return VerdictProgressing, true // Flink restarts the job itself; how it ended is read again
	case SituationRunning:
		switch {
		case slots:
			return VerdictWaiting, true
		case spec.Health.Action != "" && !obs.HealthDeferred && obs.Job != nil && c.health(spec, st, obs, now).State == policy.Unhealthy:
			return VerdictFailed, true
		}
		return VerdictProgressing, true // stability to earn, a request to record
	case SituationStarting:
		if slots {
			return VerdictWaiting, true
		}
		return VerdictProgressing, true
	case SituationFailed, SituationLost, SituationCancelled, SituationHalted:
		if slots {
			return VerdictWaiting, true
		}
		return c.downVerdict(spec, st, obs, now), true
	}
	return "", false
}

// downVerdict is the verdict of a job that is down: the restart
// policy's decision, typed. A backoff waits; a restart refused because
// no state is recent enough is blocked (it would lose state); the rest
// (restarts disabled or used up, a job cancelled) leave the job failed.
func (c *Controller) downVerdict(spec JobSpec, st *JobStatus, obs Observation, now time.Time) Verdict {
	switch rd := policy.EvaluateRestart(spec.Restart, c.policyObservations(st, obs, now), now); {
	case rd.Action == policy.ActionWait:
		return VerdictWaiting
	case rd.Action == policy.ActionBlock && rd.Reason == policy.ReasonNoRecentState:
		return VerdictBlocked
	}
	return VerdictFailed
}
