package lifecycle

// The closed sets a status records, each declared once: the phases of
// the operations and how an operation ended, here (sets_gen.go derives
// the sets of known values from these declarations), and the Controller's
// actions, named here, each one row of act.go's table of actions. A stored
// Progress or JobStatus naming a value outside them is refused
// (ErrInvalidProgress, ErrInvalidStatus).

//go:generate go test . -run TestSetsGenerated -gensets

// Phase is where an operation stands. The strings are stable: they are
// stored in Progress.
type Phase string

// Phases of the operations. The zero Phase means the operation has not
// started; Step's first call records what the first request needs (trigger
// id, job id) and moves on.
const (
	// PhaseSavepoint: a savepoint (or stop with savepoint) is triggered,
	// polled, or recovered from the checkpoint history.
	PhaseSavepoint Phase = "Savepoint"
	// PhaseCancel: the job is to be cancelled.
	PhaseCancel Phase = "Cancel"
	// PhaseWaitStopped: the job is polled until it reaches a terminal state.
	PhaseWaitStopped Phase = "WaitStopped"
	// PhaseUpload: the jar is uploaded.
	PhaseUpload Phase = "Upload"
	// PhaseSubmit: the jar is run with the recorded job id.
	PhaseSubmit Phase = "Submit"
	// PhaseWaitRunning: the submitted job is polled until it runs.
	PhaseWaitRunning Phase = "WaitRunning"
	// PhaseFailureCause: the submitted job failed before it ran; its
	// exceptions are read for the Reason.
	PhaseFailureCause Phase = "FailureCause"
	// PhaseObserve: Upgrade and Restart read the old job's state.
	PhaseObserve Phase = "Observe"
	// PhaseObserveDetails: Upgrade and Restart read the details of an old
	// job that does not run: when it entered its state and ended.
	PhaseObserveDetails Phase = "ObserveDetails"
	// PhaseObserveCheckpoints: Upgrade and Restart read the old job's
	// latest retained checkpoint.
	PhaseObserveCheckpoints Phase = "ObserveCheckpoints"
	// PhaseObserveRetention: Upgrade and Restart read whether Flink
	// retains that checkpoint.
	PhaseObserveRetention Phase = "ObserveRetention"
	// PhaseAdopt: Upgrade and Restart of a job that no longer runs look
	// in Flink's job list for the job an earlier operation on it started
	// (Upgrade.JobID), to adopt it instead of starting another.
	PhaseAdopt Phase = "Adopt"
	// PhaseRecord: Teardown records the savepoint (or the retained
	// checkpoint of a job that had already ended) in its
	// RestorePointStore.
	PhaseRecord Phase = "Record"
	// PhaseDispose: DisposeSavepoints asks Flink to dispose of the next
	// savepoint.
	PhaseDispose Phase = "Dispose"
	// PhaseWaitDisposed: DisposeSavepoints polls the disposal.
	PhaseWaitDisposed Phase = "WaitDisposed"
	// PhaseDeleteCluster: Upgrade, Restart or Teardown deletes the
	// Deployer's cluster of the job it replaced or stopped; Ending holds
	// the outcome it then ends with.
	PhaseDeleteCluster Phase = "DeleteCluster"
	// PhaseDone: the operation ended; Outcome says how.
	PhaseDone Phase = "Done"
	// PhasePreflight: Upgrade checks the new job's plan and the
	// cluster's task slots before the old job is touched (Preflight).
	PhasePreflight Phase = "Preflight"

	// Phases of Rescale.

	// PhaseObserveScheduler: Rescale asks for the job's resource
	// requirements, which only the adaptive scheduler answers (1.18+).
	PhaseObserveScheduler Phase = "ObserveScheduler"
	// PhaseObserveParallelism: Rescale reads the job's vertices and
	// decides the path (policy.DecideRescale).
	PhaseObserveParallelism Phase = "ObserveParallelism"
	// PhaseSetRequirements: Rescale sets the new parallelism bounds of the
	// vertices recorded in Progress.Rescale.Vertices.
	PhaseSetRequirements Phase = "SetRequirements"
	// PhaseConfirmParallelism: Rescale reads the job's details until every
	// vertex runs at the new parallelism.
	PhaseConfirmParallelism Phase = "ConfirmParallelism"

	// Phases of BlueGreen, besides those of TakeSavepoint, Submit and
	// Stop it goes through.

	// PhaseCheckSlots: BlueGreen reads the session cluster's free task
	// slots (/overview) before it starts a second job beside the first.
	PhaseCheckSlots Phase = "CheckSlots"
	// PhaseWaitHealthy: BlueGreen reads the new job's details until it
	// runs with all its tasks.
	PhaseWaitHealthy Phase = "WaitHealthy"
	// PhaseHealthCheckpoint: BlueGreen reads the new job's checkpoint
	// statistics until a checkpoint completed after its start.
	PhaseHealthCheckpoint Phase = "HealthCheckpoint"
	// PhaseReadiness: BlueGreen asks the caller's readiness check.
	PhaseReadiness Phase = "Readiness"
	// PhaseConfirmHealthy: BlueGreen reads the new job's state (uncached)
	// once more before it stops the old job.
	PhaseConfirmHealthy Phase = "ConfirmHealthy"
	// PhaseConfirmOld: once its savepoint completed, BlueGreen reads the
	// old job's state (uncached) once more before it submits the new
	// job and, if the job ended meanwhile, its checkpoint history.
	PhaseConfirmOld Phase = "ConfirmOld"

	// Of Upgrade:

	// PhaseCheckJar: before the old job is touched, Upgrade reads the
	// cluster's jars (GET /jars) to see that the recorded upload of the
	// stable build it is to run is still there: the jar file holds another
	// build since (format 6).
	PhaseCheckJar Phase = "CheckJar"

	// Of a checkpoint triggered through the REST API:

	// PhaseCheckpoint: a checkpoint is triggered (its trigger id recorded in
	// Progress.Savepoint.Status, of kind checkpoint) and polled.
	PhaseCheckpoint Phase = "Checkpoint"
)

// Outcome is how an operation ended. The strings are stable.
type Outcome string

// Outcomes. Every operation ends in one of them, at the latest at its
// deadline.
const (
	// OutcomeSucceeded: the operation did what it was asked.
	OutcomeSucceeded Outcome = "Succeeded"
	// OutcomeSavepointFailed: Flink reported the savepoint failed (or
	// refused the trigger). A job asked to stop keeps running.
	OutcomeSavepointFailed Outcome = "SavepointFailed"
	// OutcomeSavepointLost: Flink forgot the trigger id and its checkpoint
	// history shows that no savepoint came of it.
	OutcomeSavepointLost Outcome = "SavepointLost"
	// OutcomeJobFailedWhileStopping: the stop's savepoint completed, then
	// the job failed while stopping. Progress.Savepoint.Location holds the savepoint;
	// the job may have restarted.
	OutcomeJobFailedWhileStopping Outcome = "JobFailedWhileStopping"
	// OutcomeJobGone: Flink does not know the job.
	OutcomeJobGone Outcome = "JobGone"
	// OutcomeJobTerminal: the job had already ended in another way.
	OutcomeJobTerminal Outcome = "JobTerminal"
	// OutcomeJobFailed: the submitted job failed before it ran.
	OutcomeJobFailed Outcome = "JobFailed"
	// OutcomeSubmitFailed: Flink refused the jar upload or run.
	OutcomeSubmitFailed Outcome = "SubmitFailed"
	// OutcomeTimedOut: the phase's deadline passed; Reason says where.
	OutcomeTimedOut Outcome = "TimedOut"
	// OutcomeBlocked: the policy does not let Upgrade or Restart go on
	// (Progress.Replace.Decision names its reason); nothing more was done.
	OutcomeBlocked Outcome = "Blocked"
	// OutcomeNotNeeded: Restart found nothing to restart (the job runs,
	// finished or was cancelled).
	OutcomeNotNeeded Outcome = "NotNeeded"
	// OutcomeLeftRunning: Teardown could not take a savepoint before its
	// deadline and the policy keeps state, so the job was left running;
	// Reason says why.
	OutcomeLeftRunning Outcome = "LeftRunning"
	// OutcomeDisposeFailed: DisposeSavepoints could not dispose of some
	// savepoints; Reason names them.
	OutcomeDisposeFailed Outcome = "DisposeFailed"

	// Of Rescale:

	// OutcomeParallelismNotReached: the job did not reach the new
	// parallelism before Rescale.Timeout: the cluster kept it (for
	// example for want of slots). The bounds stay set; the adaptive
	// scheduler may still apply them later. Reason names the parallelism
	// the job runs at.
	OutcomeParallelismNotReached Outcome = "ParallelismNotReached"
	// OutcomeRescaleRejected: Flink refused the new resource requirements;
	// Reason holds its message. The job runs as before.
	OutcomeRescaleRejected Outcome = "RescaleRejected"

	// Of BlueGreen and Canary:

	// OutcomeBlueGreenAborted: the new job of a blue/green upgrade failed, or
	// did not become healthy within the window, and was cancelled (Flink
	// confirmed it ended); the old job was left running, untouched. Reason
	// says why; Progress.Submit.NewJobID is empty: nothing is to be adopted.
	OutcomeBlueGreenAborted Outcome = "BlueGreenAborted"
	// OutcomeCanaryFailed: the canary job of a Canary did not restore the
	// old job's savepoint (Flink refused its state: a changed maximum
	// parallelism of a keyed operator, an operator whose state it has no
	// place for), failed, or was not healthy within the window; it was
	// cancelled (Flink confirmed it ended) and the old job was left running,
	// untouched. Reason says why; Progress.Submit.NewJobID is empty.
	OutcomeCanaryFailed Outcome = "CanaryFailed"

	// Of Upgrade:

	// OutcomeJarChanged: the jar file the new job's template names holds
	// another build than the template's (its content's SHA-256 is not
	// JobTemplate.JarDigest), and no upload of the template's build is
	// known (JobStatus.StableJarID): a rollback to the stable template
	// after a rebuild under the same path, whose upload was deleted.
	// Nothing was stopped, uploaded or started: the job runs on as it is.
	// Run the stable build again (its file, or its JarID), or change the
	// spec.
	OutcomeJarChanged Outcome = "JarChanged"
	// OutcomeForeignJob: Upgrade (a deploy) found a job that has not ended
	// under the id derived for its new job, and nothing it recorded proves
	// that this deployment started it (an id derived from the deployment's
	// Name, shared by every deployment of that Name and Controller
	// Namespace, or from a detached job): nothing was started, and the job
	// is left as it is, neither adopted nor stopped. Progress.Replace.Observed.Adopt
	// names it. Adopt it with JobSpec.Adopt, or give the Controller a
	// Namespace of its own to deploy beside it.
	OutcomeForeignJob Outcome = "ForeignJob"

	// Of a checkpoint triggered through the REST API:

	// OutcomeCheckpointFailed: Flink refused the checkpoint trigger or
	// reported the checkpoint failed, or forgot the trigger id and its
	// history shows no checkpoint completed since the trigger.
	OutcomeCheckpointFailed Outcome = "CheckpointFailed"
	// OutcomeUnsupported: the cluster's Flink release cannot do what was
	// asked (a checkpoint trigger before 1.17); nothing was sent.
	OutcomeUnsupported Outcome = "Unsupported"
)

// JobAction is an action of the Controller: the lifecycle operation it
// carries out, recorded in JobStatus.Action. The strings are stable.
type JobAction string

// Actions of the Controller, each carried out by an operation.
const (
	ActionDeploy        JobAction = "Deploy"        // Upgrade of no job, or of a suspended one: starts the job
	ActionUpgrade       JobAction = "Upgrade"       // Upgrade of the running job to a new template or restore request
	ActionRescale       JobAction = "Rescale"       // Rescale to the template's new parallelism
	ActionAutoscale     JobAction = "Autoscale"     // Rescale to the parallelism policy.RecommendScale recommended (JobSpec.Autoscale)
	ActionRestart       JobAction = "Restart"       // Restart of a failed or lost job
	ActionHealthRestart JobAction = "HealthRestart" // Upgrade that restarts an unhealthy job from its newest state
	ActionRollback      JobAction = "Rollback"      // Upgrade back to the last stable template
	ActionBlueGreen     JobAction = "BlueGreen"     // BlueGreen upgrade to a changed template
	ActionCanary        JobAction = "Canary"        // Canary of a changed template, before its Upgrade
	ActionSavepoint     JobAction = "Savepoint"     // TakeSavepoint, periodic
	ActionCheckpoint    JobAction = "Checkpoint"    // a checkpoint triggered through the REST API, periodic (JobSpec.Checkpoints)
	ActionDispose       JobAction = "Dispose"       // DisposeSavepoints of the retention
	ActionSuspend       JobAction = "Suspend"       // Stop with a savepoint
	ActionTeardown      JobAction = "Teardown"      // Teardown, on Delete
	// ActionAdopt records a running job that the Controller did not
	// start (JobSpec.Adopt) as the deployment's job, without restarting
	// it: the observation read it, and the action ends as it starts,
	// with no request of its own.
	ActionAdopt JobAction = "Adopt"

	// Actions of the one-shot requests (ActionRequests); a Rollback
	// request is carried out by ActionRollback.

	// ActionSavepointRequest: TakeSavepoint of the running job, asked for
	// by ActionRequests.Savepoint.
	ActionSavepointRequest JobAction = "SavepointRequest"
	// ActionCheckpointRequest: a checkpoint of the running job triggered
	// through the REST API, asked for by ActionRequests.Checkpoint.
	ActionCheckpointRequest JobAction = "CheckpointRequest"
	// ActionRestartRequest: Upgrade of the job to the template it runs,
	// asked for by ActionRequests.Restart.
	ActionRestartRequest JobAction = "RestartRequest"
)
