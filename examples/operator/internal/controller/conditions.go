package controller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// The condition types of a FlinkJob besides Ready, as the Kubernetes API
// conventions name them.
const (
	// ConditionProgressing is True while an action is in flight or the
	// spec is not carried out yet and something will still be done about
	// it; False once the spec is carried out, or when nothing will be done
	// until the spec (or the cluster) changes.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True while the job fails the spec: it failed,
	// was lost or cancelled, the spec's job was rolled back, a preflight
	// refused it, an action failed and waits for its retry, the
	// JobManager does not answer, the job is unhealthy or short of task
	// slots, or savepoints could not be disposed of.
	ConditionDegraded = "Degraded"
)

// Reasons of the Progressing and Degraded conditions that are not a
// status's reason.
const (
	// ReasonConverged: Progressing False, the spec is carried out.
	ReasonConverged = "Converged"
	// ReasonAsExpected: Degraded False.
	ReasonAsExpected = "AsExpected"
	// ReasonDisposalsGivenUp: Degraded True, savepoints of the history
	// could not be disposed of after lifecycle.MaxDisposeAttempts
	// attempts and stay on storage.
	ReasonDisposalsGivenUp = "DisposalsGivenUp"
)

// setConditions sets job's Ready, Progressing and Degraded conditions
// from its status. meta.SetStatusCondition keeps a condition's
// lastTransitionTime unless its status changes.
func setConditions(job *v1alpha1.FlinkJob, now time.Time) {
	for _, c := range []metav1.Condition{ready(job, now), progressing(job, now), degraded(job, now)} {
		meta.SetStatusCondition(&job.Status.Conditions, c)
	}
}

// condition is a condition of job's generation, its message bounded.
func condition(job *v1alpha1.FlinkJob, typ string, status metav1.ConditionStatus, reason, message string, now time.Time) metav1.Condition {
	if reason == "" {
		reason = string(policy.Unknown)
	}
	if len(message) > maxMessage {
		message = message[:maxMessage]
	}
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
		ObservedGeneration: job.Generation, LastTransitionTime: metav1.NewTime(now)}
}

// verdict is the verdict of job's status against its spec
// (lifecycle.JobStatus.VerdictFor), from which every condition follows;
// a FlinkJob being deleted is Progressing until its teardown is done.
func verdict(job *v1alpha1.FlinkJob) lifecycle.Verdict {
	v := job.Status.VerdictFor(job.Spec.JobSpec)
	if v == lifecycle.VerdictDone && !job.DeletionTimestamp.IsZero() {
		return lifecycle.VerdictProgressing
	}
	return v
}

// progressing is the Progressing condition of job's status, from its
// verdict: True, with the action's reason ("UpgradeInProgress", ...),
// while an action is in flight (a FlinkJob being deleted: its
// Teardown); False, Converged, once the verdict is Done; True, with the
// status's reason, while it is Progressing or Waiting (for the job to
// become stable, a restart's backoff, the JobManager) and while a
// failed action waits for its retry (JobStatus.RetryPending); False,
// with the status's reason, when nothing is done until the spec (or the
// cluster) changes: Blocked (PreflightRefused for a preflight's
// refusal), Failed, Invalid.
func progressing(job *v1alpha1.FlinkJob, now time.Time) metav1.Condition {
	st := &job.Status.JobStatus
	v := verdict(job)
	switch {
	case st.InFlight():
		return condition(job, ConditionProgressing, metav1.ConditionTrue, lifecycle.ActionReason(st.Action, ""), st.Message, now)
	case v == lifecycle.VerdictDone:
		return condition(job, ConditionProgressing, metav1.ConditionFalse, ReasonConverged, st.Message, now)
	case v == lifecycle.VerdictProgressing || v == lifecycle.VerdictWaiting || v == lifecycle.VerdictFailed && st.RetryPending(job.Spec.JobSpec):
		return condition(job, ConditionProgressing, metav1.ConditionTrue, st.Reason, st.Message, now)
	case preflightRefused(st):
		return condition(job, ConditionProgressing, metav1.ConditionFalse, string(policy.ReasonPreflightRefused), st.Message, now)
	}
	return condition(job, ConditionProgressing, metav1.ConditionFalse, st.Reason, st.Message, now)
}

// preflightRefused reports whether the last action ended Blocked by its
// preflight, and the job was left as it was.
func preflightRefused(st *lifecycle.JobStatus) bool {
	p := &st.Progress
	return !st.InFlight() && p.Outcome == lifecycle.OutcomeBlocked && p.Replace.Decision == policy.ReasonPreflightRefused
}

// degraded is the Degraded condition of job's status, derived from its
// verdict and typed state (Situation, Progress, RetryAt, the savepoint
// history), never from a message: True while the verdict is Waiting,
// Blocked, Failed or Invalid, with the first reason that holds of
//
//	JobManagerUnreachable      the JobManager does not answer (Situation Unreachable)
//	PreflightRefused           the preflight refused the spec's job; the old job runs on
//	<Action><Outcome>          an action did not succeed and waits for its retry (RetryAt)
//	the status's reason        otherwise (InvalidSpec; RolledBack, BlueGreenAborted,
//	                           CanaryFailed; a failed, lost or cancelled job, with its
//	                           failure's root cause; an unhealthy job; NotEnoughSlots; ...)
//
// except that a failed action whose retry is due (RetryAt passed) is no
// longer degraded: the next call tries it again. Otherwise True,
// DisposalsGivenUp, while savepoints could not be disposed of and stay
// on storage, else False (AsExpected). An action in flight is not
// itself degraded: the action that failed is, once it ended.
func degraded(job *v1alpha1.FlinkJob, now time.Time) metav1.Condition {
	st := &job.Status.JobStatus
	yes := func(reason, message string) metav1.Condition {
		return condition(job, ConditionDegraded, metav1.ConditionTrue, reason, message, now)
	}
	retry := st.RetryPending(job.Spec.JobSpec)
	switch v := verdict(job); {
	case v == lifecycle.VerdictFailed && retry && !now.Before(st.RetryAt):
		// Tried again at the next call.
	case v != lifecycle.VerdictWaiting && v != lifecycle.VerdictBlocked && v != lifecycle.VerdictFailed && v != lifecycle.VerdictInvalid:
	case st.Situation == lifecycle.SituationUnreachable:
		return yes(string(policy.ReasonJobManagerUnreachable), st.Message)
	case preflightRefused(st):
		return yes(string(policy.ReasonPreflightRefused), st.Progress.Reason)
	case retry:
		return yes(lifecycle.ActionReason(st.Action, st.Progress.Outcome), st.Progress.Reason)
	default:
		return yes(orState(st), withFailure(st))
	}
	if n := givenUp(st); n > 0 {
		return yes(ReasonDisposalsGivenUp,
			fmt.Sprintf("%d savepoints could not be disposed of after %d attempts and stay on storage (see status.savepoints)", n, lifecycle.MaxDisposeAttempts))
	}
	return condition(job, ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "", now)
}

// orState is st's reason, or its state when it records none.
func orState(st *lifecycle.JobStatus) string {
	if st.Reason != "" {
		return st.Reason
	}
	return string(st.State)
}

// withFailure is st's message with the root cause of the job's last
// failure, if the status knows one.
func withFailure(st *lifecycle.JobStatus) string {
	if st.Failure == "" {
		return st.Message
	}
	return st.Message + "; root cause: " + st.Failure
}

// givenUp counts the savepoints of st's history whose disposal was given
// up.
func givenUp(st *lifecycle.JobStatus) int {
	n := 0
	for _, r := range st.Savepoints.Records {
		if r.Disposal().GaveUp {
			n++
		}
	}
	return n
}
