package policy

import "github.com/flinkkit/flinkkit/flinkapi"

// DeploymentState is where a job's deployment stands, derived by
// DeploymentStateOf from the observed Flink job state and what the caller
// recorded. Each value is a stable CamelCase string.
type DeploymentState string

// Deployment states. The package documentation holds the table that
// derives them.
const (
	// Deploying: a deployment is under way and its job is not running yet.
	Deploying DeploymentState = "Deploying"
	// DeployFailed: the caller's submission failed, or the job it submitted
	// FAILED before the operation completed.
	DeployFailed DeploymentState = "DeployFailed"
	// Running: the job runs.
	Running DeploymentState = "Running"
	// Updating: an update is under way.
	Updating DeploymentState = "Updating"
	// Restarting: a restart is under way, by the caller or by Flink
	// (RESTARTING, FAILING, RECONCILING).
	Restarting DeploymentState = "Restarting"
	// Stopping: the job is being stopped or cancelled.
	Stopping DeploymentState = "Stopping"
	// Succeeded: the job FINISHED on its own (a bounded job).
	Succeeded DeploymentState = "Succeeded"
	// Failed: the job FAILED. EvaluateRestart says whether it restarts.
	Failed DeploymentState = "Failed"
	// Cancelled: the job was CANCELED.
	Cancelled DeploymentState = "Cancelled"
	// Suspended: the job is not running and its state is kept: the caller
	// stopped it (with a savepoint), or Flink SUSPENDED it when its
	// JobManager lost leadership (with HA another one takes it over).
	Suspended DeploymentState = "Suspended"
	// Lost: the JobManager answers but no longer knows a job the caller
	// deployed (it restarted without the job's HA data). Not Failed: the
	// job did not fail, its state is where it was. The way forward is
	// EvaluateRestart, which restarts it from the newest state within the
	// maximum age (RestartLostJob) under RestartFromLatestState, or says
	// RestartDisabled under Never; a spec change then lets EvaluateUpdate
	// restore it from that state (RestoreFromState).
	Lost DeploymentState = "Lost"
	// Deleted: the caller deleted the deployment; nothing of it runs.
	// DeploymentStateOf never derives it: the caller records it.
	Deleted DeploymentState = "Deleted"
	// Unknown: the state cannot be derived: the JobManager does not answer,
	// nothing was deployed, or Flink reported a state this package does not
	// know.
	Unknown DeploymentState = "Unknown"
)

// Operation is an operation the caller had in progress on the job.
type Operation string

// Operations. The zero Operation means none is in progress.
const (
	OperationNone    Operation = ""        // nothing in progress
	OperationDeploy  Operation = "Deploy"  // a first deployment
	OperationUpdate  Operation = "Update"  // an update to a new spec
	OperationRestart Operation = "Restart" // a restart after a failure
	OperationStop    Operation = "Stop"    // a stop, suspend or delete
)

// Recorded is the part of the caller's stored progress that
// DeploymentStateOf needs.
type Recorded struct {
	// Operation is the operation in progress; empty when none is.
	Operation Operation `json:"operation,omitempty"`
	// JobID is the job the caller deployed last: during a deploy, update
	// or restart, the new job once it was submitted. Empty if the caller
	// never deployed one.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// SubmitFailed reports that the submission of the operation in
	// progress failed (for example, jars/run answered an error).
	SubmitFailed bool `json:"submitFailed,omitempty"`
}

// DeploymentStateOf derives the deployment state from the observations and
// the caller's recorded progress, following the table in the package
// documentation.
func DeploymentStateOf(obs Observations, rec Recorded) DeploymentState {
	inProgress := Unknown // the state while the caller's operation runs
	switch rec.Operation {
	case OperationDeploy:
		inProgress = Deploying
	case OperationUpdate:
		inProgress = Updating
	case OperationRestart:
		inProgress = Restarting
	case OperationStop:
		inProgress = Stopping
	}
	starting := inProgress == Deploying || inProgress == Updating || inProgress == Restarting

	if starting && rec.SubmitFailed {
		return DeployFailed
	}
	if !obs.JobManagerReachable {
		return inProgress
	}
	job := obs.Job
	if job == nil {
		switch {
		case starting:
			return inProgress
		case rec.Operation == OperationStop:
			return Suspended
		case rec.JobID != "":
			return Lost
		}
		return Unknown
	}
	state := job.State
	if rec.Operation == OperationStop {
		switch state {
		case flinkapi.JobFinished, flinkapi.JobSuspended:
			return Suspended
		case flinkapi.JobCanceled:
			return Cancelled
		case flinkapi.JobFailed:
			return Failed
		}
		return Stopping
	}
	if starting {
		if rec.JobID == "" || job.ID != rec.JobID {
			// The job observed is still the old one (or one the caller did
			// not submit): the operation goes on.
			return inProgress
		}
		switch state {
		case flinkapi.JobInitializing, flinkapi.JobCreated:
			return inProgress
		case flinkapi.JobFailed:
			return DeployFailed
		}
	}
	return fromFlink(state)
}

// fromFlink maps a Flink job state alone.
func fromFlink(s flinkapi.JobState) DeploymentState {
	switch s {
	case flinkapi.JobInitializing, flinkapi.JobCreated:
		return Deploying
	case flinkapi.JobRunning:
		return Running
	case flinkapi.JobFailing, flinkapi.JobRestarting, flinkapi.JobReconciling:
		return Restarting
	case flinkapi.JobCancelling:
		return Stopping
	case flinkapi.JobFinished:
		return Succeeded
	case flinkapi.JobFailed:
		return Failed
	case flinkapi.JobCanceled:
		return Cancelled
	case flinkapi.JobSuspended:
		return Suspended
	}
	return Unknown
}
