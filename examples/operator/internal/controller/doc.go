// Package controller is the FlinkJob reconciler: a controller-runtime
// Reconciler that keeps a Flink job as its FlinkJob says, with flinkkit's
// lifecycle.Controller doing everything on the Flink side.
//
// # Kubernetes plumbing around lifecycle.Controller
//
// Every rule of the job's lifecycle lives in lifecycle.Controller: what
// to deploy, when to update, rescale, restart, roll back, suspend, take
// or dispose of a savepoint, and how to tear the job down. The reconciler
// only connects it to Kubernetes. A reconcile
//
//	gets the FlinkJob, adds the finalizer (or, once deleted, checks it)
//	builds a lifecycle.Controller: the Flink client, Timing, Clock, Store,
//	  Name "<namespace>/<name>", OnTransition (events), Logger (logr),
//	  Secrets (the labelled Secrets of the FlinkJob's namespace)
//	res, err := c.Reconcile(ctx, job.Spec.JobSpec, &job.Status.JobStatus)
//	  (c.Delete once the FlinkJob is being deleted)
//	sets ObservedGeneration and the Ready condition
//	r.Client.Status().Update(ctx, job) // whatever happened, if anything in it changed, before anything else
//	return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
//
// A job at rest costs the API server no writes: the status is written only
// when it differs from the one read. The controller watches FlinkJobs for
// changes of their generation (a new spec, or the deletion), not for the
// status writes it makes itself; everything else comes back through
// RequeueAfter. FlinkJobReconciler.Options sets MaxConcurrentReconciles.
//
// In the Application mode (spec.mode: Application) the Controller also
// gets the FlinkJob's appcluster.Deployer: every job runs in an
// application cluster of its own, whose Kubernetes objects (ConfigMap,
// JobManager Deployment and Service, TaskManager Deployment) are owned by
// the FlinkJob, and the job is read and stopped through that cluster's
// REST API (status.cluster), never the session cluster's.
//
// A call never waits: it steps the action in flight once, or observes
// the job at rest and starts the action the spec asks for, and sends at
// most lifecycle.MaxRequestsPerCall requests. Whatever the next request
// needs (a savepoint's trigger id, the id of the job to submit) is in the
// status one call before it is sent, so an operator that restarts, or a
// reconcile whose status update was lost, resumes the same action instead
// of starting another: a lost stop answer is not a second savepoint, a
// lost jar run answer not a second job. A call that returns an error
// stores its status too, and controller-runtime retries it with backoff.
//
// # Secret arguments
//
// A job argument may name a key of a Secret, ${secret:SECRET/KEY}
// (lifecycle.Secrets): the key KEY of the Secret SECRET in the FlinkJob's
// namespace, labelled LabelSecret "true", read through the reconciler's
// client when the job is started. The value goes to Flink in the jar run
// request only; the status, events and logs keep the placeholder, and
// Flink's echoes of it are shown as "xxxxx". A Secret that cannot be read
// blocks the start, and the Ready condition names it.
//
// # Ready
//
// The Ready condition is derived from the status's State, Reason and
// Message: True while the job runs the spec's job, stable (State and
// Reason Running); Unknown while the JobManager cannot be read (State
// Unknown); False otherwise, with the status's reason (UpgradeInProgress,
// WaitingForStable, RestartDisabled, Suspended, RolledBack, InvalidSpec,
// TeardownLeftRunning, ...) and message. A spec that does not validate
// (lifecycle.JobSpec.Validate) sends no request: Ready says InvalidSpec
// and names every field at fault.
//
// # Deletion
//
// The finalizer stays until lifecycle.Controller.Delete says Done: the
// job is torn down with a final savepoint recorded in the status and in
// Store under the FlinkJob's name, so that a FlinkJob created again under
// that name starts from it; or the job had already ended (failed for good,
// cancelled) and tearing it down again cannot bring its state back, which
// a Warning event names ("DeletedJobTerminal", ...) before the finalizer
// goes. A teardown that could not take a savepoint leaves a stateful job
// running and the FlinkJob in place, tried again every RetryInterval,
// until spec.allowCancelWithoutState allows cancelling it.
//
// cmd/operator's Store is a ConfigMapStore: the restore points live in a
// ConfigMap of each FlinkJob's namespace, outside the FlinkJob, so that
// they outlive it and every replica of the operator sees them.
//
// # Metrics
//
// On controller-runtime's Prometheus registry (metrics.Registry), served at
// the manager's metrics endpoint beside controller-runtime's own:
//
//	flinkkit_operations_started_total{operation}        Deploy, Upgrade, Restart, Teardown, TakeSavepoint, ...
//	flinkkit_operations_ended_total{operation,outcome}  Succeeded, NotNeeded, TimedOut, LeftRunning, ...
//	flinkkit_savepoint_duration_seconds{operation}      histogram: trigger until seen completed
//	flinkkit_jobs{state}                                gauge: FlinkJobs by status.state
//	flinkkit_job_restarts_total                         restarts of failed or lost jobs
//	flinkkit_flinkjob_state_entered_timestamp_seconds{namespace,name,state}
//	                                                    gauge: when each FlinkJob entered its status.state
//	flinkkit_state_duration_seconds{state}              histogram: time in a state, observed when left
//
// The time in a state is measured by this process: after a restart, from
// the first reconcile that saw the FlinkJob.
//
// # Events
//
// Every phase change of the controller's operations becomes an event
// through lifecycle's OnTransition hook, named after the operation and
// the phase or outcome ("UpgradeSavepoint", "UpgradeSucceeded",
// "TakeSavepointSucceeded", "TeardownLeftRunning", ...), a Warning for an
// outcome other than Succeeded or NotNeeded; it is also logged through
// the reconcile's logger.
//
// A new root cause of the job's failure (status.failure, from the
// JobManager's exceptions) is reported once as a Warning event,
// JobException, when the reconcile that observed it has stored it.
//
// # Watches
//
// The controller also watches the objects of the application clusters,
// which their FlinkJob controls (Deployments, Services, ConfigMaps), for
// their deletion only: a FlinkJob whose JobManager Deployment is deleted
// is reconciled at once, not at its next poll.
package controller
