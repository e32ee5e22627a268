// Package controller is the FlinkJob reconciler: a controller-runtime
// Reconciler that keeps a Flink job running as its FlinkJob says, with
// flinkkit doing the Flink side.
//
// # One step per reconcile
//
// A reconcile never waits. It either advances the operation in flight by
// one lifecycle Step, or observes the job and starts an operation:
//
//	if job.Status.InFlight() {
//		res, err := op.Step(ctx, &job.Status.Progress) // at most one REST request
//	} else {
//		observe the job (flinkapi), ask package policy, maybe start an operation
//	}
//	r.Client.Status().Update(ctx, job) // Progress is stored before returning
//	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
//
// The operation in flight lives in the status (Operation and Progress), and
// the lifecycle operation is built anew from spec and status on every
// reconcile, so an operator that restarts, or a reconcile whose status
// update failed, resumes the same operation: trigger ids and job ids are
// recorded one step before the request that uses them.
//
// # What starts an operation
//
//	nothing deployed, or a new generation   lifecycle.Upgrade (Deploy, Update)
//	job FAILED or lost, and                 lifecycle.Restart
//	  policy.EvaluateRestart says Restart
//	periodic savepoint due (savepoint.Due)  lifecycle.TakeSavepoint
//	FlinkJob deleted (finalizer)            lifecycle.Teardown
//
// Upgrade asks policy.EvaluateUpdate itself, on what it observes of the old
// job; its decision is in Progress.Decision. The reconciler asks
// policy.EvaluateRestart before starting a Restart, so that a restart the
// policy refuses (RestartDisabled, an exhausted budget, a backoff) shows
// in the Ready condition instead of starting an operation that ends Blocked.
// An operation that does not succeed is tried again after RetryInterval,
// or at once for a new generation of the spec. A spec whose policies do not
// validate (policy.UpdatePolicy.Validate) starts nothing: the Ready
// condition says InvalidSpec and names the field.
//
// # Deletion
//
// The finalizer stays until lifecycle.Teardown has stopped the job with a
// savepoint and recorded it (in the status, and in Store for a FlinkJob
// created again under the same name). Teardown ends within its deadlines;
// if no savepoint could be taken it leaves a stateful job running, and the
// FlinkJob stays, until spec.allowCancelWithoutState allows cancelling it.
//
// # Events
//
// Every phase change of an operation becomes an event through lifecycle's
// OnTransition hook ("UpgradeSavepoint", "UpgradeSucceeded",
// "TeardownLeftRunning", ...), and is logged through the reconcile's logger.
package controller
