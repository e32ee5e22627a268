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

// progressing is the Progressing condition of job's status: True, with
// the action's reason ("UpgradeInProgress", ...), while an action is in
// flight (a FlinkJob being deleted: its Teardown); False, Converged, once
// the status carries out the spec (lifecycle.JobStatus.Converged); False,
// with the status's reason, when nothing is done until the spec or the
// cluster changes (stalled); else True with the status's reason (waiting
// for the job to become stable, for a restart's backoff, for an action's
// retry, for the JobManager).
func progressing(job *v1alpha1.FlinkJob, now time.Time) metav1.Condition {
	st := &job.Status.JobStatus
	switch {
	case st.InFlight():
		return condition(job, ConditionProgressing, metav1.ConditionTrue, lifecycle.ActionReason(st.Action, ""), st.Message, now)
	case job.DeletionTimestamp.IsZero() && st.Converged(job.Spec.JobSpec):
		return condition(job, ConditionProgressing, metav1.ConditionFalse, ReasonConverged, st.Message, now)
	}
	if reason, ok := stalled(st); ok {
		return condition(job, ConditionProgressing, metav1.ConditionFalse, reason, st.Message, now)
	}
	return condition(job, ConditionProgressing, metav1.ConditionTrue, st.Reason, st.Message, now)
}

// stalled reports whether nothing will be done for st until the spec (or
// the cluster) changes, and the reason: the spec's job was rolled back,
// aborted or failed its canary, the spec is invalid, a failed job is not
// restarted (restart policy Never) or a cancelled one never is, or the
// preflight refused the spec's job.
func stalled(st *lifecycle.JobStatus) (string, bool) {
	switch st.Reason {
	case lifecycle.ReasonRolledBack, lifecycle.ReasonBlueGreenAborted, lifecycle.ReasonCanaryFailed, lifecycle.ReasonInvalidSpec,
		string(policy.ReasonRestartDisabled), string(policy.ReasonJobCancelled):
		return st.Reason, true
	}
	if preflightRefused(st) {
		return string(policy.ReasonPreflightRefused), true
	}
	return "", false
}

// preflightRefused reports whether the last action ended Blocked by its
// preflight, and the job was left as it was.
func preflightRefused(st *lifecycle.JobStatus) bool {
	p := &st.Progress
	return !st.InFlight() && p.Outcome == lifecycle.OutcomeBlocked && p.Decision == policy.ReasonPreflightRefused
}

// degraded is the Degraded condition of job's status, derived from its
// typed state (State, Situation, Progress, RetryAt, the savepoint
// history, the stable reasons), never from a message: True, with the
// first that holds of
//
//	InvalidSpec                the spec cannot be acted on
//	JobManagerUnreachable      the JobManager does not answer (Situation Unreachable)
//	RolledBack, BlueGreenAborted, CanaryFailed
//	                           the spec's job did not become stable, healthy, or restore the state
//	PreflightRefused           the preflight refused the spec's job; the old job runs on
//	<Action><Outcome>          an action did not succeed and waits for its retry (RetryAt)
//	the status's reason        the job is Failed, DeployFailed, Lost or Cancelled (with its failure's root cause)
//	TooManyRestarts, NoCheckpointProgress, SavepointsFailing, NotEnoughSlots
//	                           the job runs, unhealthy or short of task slots
//	DisposalsGivenUp           savepoints could not be disposed of and stay on storage
//
// and otherwise False (AsExpected). An action in flight is not itself
// degraded: the action that failed is, once it ended.
func degraded(job *v1alpha1.FlinkJob, now time.Time) metav1.Condition {
	st := &job.Status.JobStatus
	yes := func(reason, message string) metav1.Condition {
		return condition(job, ConditionDegraded, metav1.ConditionTrue, reason, message, now)
	}
	inFlight := st.InFlight()
	switch {
	case st.Reason == lifecycle.ReasonInvalidSpec:
		return yes(st.Reason, st.Message)
	case !inFlight && st.Situation == lifecycle.SituationUnreachable && st.State == policy.Unknown:
		return yes(string(policy.ReasonJobManagerUnreachable), st.Message)
	case st.Reason == lifecycle.ReasonRolledBack || st.Reason == lifecycle.ReasonBlueGreenAborted || st.Reason == lifecycle.ReasonCanaryFailed:
		return yes(st.Reason, st.Message)
	case preflightRefused(st):
		return yes(string(policy.ReasonPreflightRefused), st.Progress.Reason)
	case actionFailed(job, now):
		return yes(lifecycle.ActionReason(st.Action, st.Progress.Outcome), st.Progress.Reason)
	case !inFlight && (st.State == policy.Failed || st.State == policy.DeployFailed || st.State == policy.Lost || st.State == policy.Cancelled):
		return yes(orState(st), withFailure(st))
	case !inFlight && unhealthy(st):
		return yes(st.Reason, st.Message)
	}
	if n := givenUp(st); n > 0 {
		return yes(ReasonDisposalsGivenUp,
			fmt.Sprintf("%d savepoints could not be disposed of after %d attempts and stay on storage (see status.savepoints)", n, lifecycle.MaxDisposeAttempts))
	}
	return condition(job, ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "", now)
}

// actionFailed reports whether the last action ended other than
// Succeeded or NotNeeded and waits for its retry (RetryAt after now)
// while the spec is not carried out: a spec changed back meanwhile, or a
// background action's failure beside a job that runs the spec, is not
// degraded.
func actionFailed(job *v1alpha1.FlinkJob, now time.Time) bool {
	st := &job.Status.JobStatus
	p := &st.Progress
	if st.InFlight() || !p.Done() || p.Outcome == lifecycle.OutcomeSucceeded || p.Outcome == lifecycle.OutcomeNotNeeded {
		return false
	}
	if !now.Before(st.RetryAt) {
		return false
	}
	return !job.DeletionTimestamp.IsZero() || !st.Converged(job.Spec.JobSpec)
}

// unhealthy reports whether a running job is judged unhealthy by its
// health policy, or waits for more task slots than the cluster has free.
func unhealthy(st *lifecycle.JobStatus) bool {
	switch st.Reason {
	case string(policy.ReasonTooManyRestarts), string(policy.ReasonNoCheckpointProgress), string(policy.ReasonSavepointsFailing),
		lifecycle.ReasonNotEnoughSlots:
		return true
	}
	return false
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
		if r.Disposal.GaveUp {
			n++
		}
	}
	return n
}
