package randdriver

// Class is a class of violation the driver counts: one kind of broken
// invariant of lifecycle.Controller. The strings are stable: they name the
// rows of the report.
type Class string

// The classes of violations, in the order of the report's rows. The first
// ones follow the items of the controller's issue (their numbers in the
// comments); the general ones follow.
const (
	// ExternalStopMisread (1): a job someone else stopped with a
	// savepoint (FINISHED with a terminating savepoint) is reported
	// converged while the spec says Running, or a later job of the
	// deployment starts from older state than that savepoint.
	ExternalStopMisread Class = "ExternalStopMisread"
	// RefusedRestoreBecameLatest (2): a restore path Flink refused
	// became JobStatus.Latest, or a later restart restored from it.
	RefusedRestoreBecameLatest Class = "RefusedRestoreBecameLatest"
	// StaleSavepointTaken (3): an action recorded as its savepoint one
	// that was triggered before the action sent its own trigger.
	StaleSavepointTaken Class = "StaleSavepointTaken"
	// OlderStateRestored (4, 10): a job started from a restore point
	// older than the newest one the status, the store or Flink's
	// checkpoint history of an ended job held at the time. A savepoint
	// completed before its job failed over to an older checkpoint is no
	// newer state than that checkpoint: the job's state since derives
	// from the checkpoint (Flink never recovers from a savepoint).
	OlderStateRestored Class = "OlderStateRestored"
	// PolicyChangeMidAction (5): an action in flight behaved otherwise
	// because the spec's policies changed after it started: it started
	// the new job without (or from older) state, or ended Blocked after
	// it had already stopped or cancelled the job.
	PolicyChangeMidAction Class = "PolicyChangeMidAction"
	// DeleteLostState (6): once Delete finished, the store holds no
	// restore point, or an older one than the status's Latest.
	DeleteLostState Class = "DeleteLostState"
	// StuckBlueGreen (7): blue/green on, a spec change pending, the job
	// failed or lost, the restart policy allowing a restart, and nothing
	// running for StuckAfter of fake time.
	StuckBlueGreen Class = "StuckBlueGreen"
	// RestartToReplacedSavepoint (8): after a restore request to an
	// older savepoint, a later job started from state the restore
	// replaced.
	RestartToReplacedSavepoint Class = "RestartToReplacedSavepoint"
	// TransientTakenAsFinal (9): an OlderStateRestored whose action met
	// an injected 404 on a checkpoint route: a transient answer taken
	// for "no checkpoint".
	TransientTakenAsFinal Class = "TransientTakenAsFinal"
	// StatusReuseSilent (11): a status reused after Delete finished
	// converges or reports Running without deploying anything; after
	// Delete the status still says Stopping or RUNNING; an action that
	// ended leaves the deployment "Deploying".
	StatusReuseSilent Class = "StatusReuseSilent"
	// NeverStable (12): a job without checkpointing runs the spec's job
	// for StuckAfter and never converges.
	NeverStable Class = "NeverStable"
	// StuckUndeployable (13): a job that can never run (its parallelism
	// above the cluster's slots) is not reported as such after
	// StuckAfter, or its Delete takes longer than DeleteWithin to tear
	// the job down.
	StuckUndeployable Class = "StuckUndeployable"
	// SameJarPathRunsOld (14): after the jar at the spec's path was
	// rebuilt (and the spec changed), a new job runs the jar uploaded
	// before the rebuild.
	SameJarPathRunsOld Class = "SameJarPathRunsOld"
	// BadStoredStatusActedOn (15): a forged or unknown stored status
	// (unknown action, phase or outcome, a newer format, another
	// deployment's, far-future times) is acted on, changed before it
	// is refused, or answered with a RequeueAfter beyond a day, instead
	// of a typed error.
	BadStoredStatusActedOn Class = "BadStoredStatusActedOn"

	// NeverDisposeDisposed: a call sent the disposal of a savepoint that
	// was, in the status it returned, in the never-dispose set: the
	// newest savepoint of the history, Latest, UpgradeFrom, the last
	// action's restore point, a Delete's final savepoint (its teardown's),
	// the store's record, the spec's restore request's path, or the one
	// the deployment's live job started from.
	NeverDisposeDisposed Class = "NeverDisposeDisposed"
	// SavepointLeaked: a savepoint the controller triggered (of a job of
	// the deployment, on the fake's disk) is neither in the history (nor
	// Latest, UpgradeFrom, the last action's, the store's) nor disposed
	// of, checked once no action is in flight: when a Delete is done, and
	// at the end of a run. Savepoints completed before the caller dropped
	// its status (a fresh one after a Delete) are not counted.
	SavepointLeaked Class = "SavepointLeaked"
	// DiscardedCheckpointStart: a job started from a checkpoint that
	// Flink had discarded when the start was sent (the run's check at
	// the act).
	DiscardedCheckpointStart Class = "DiscardedCheckpointStart"
	// ConvergedTooEarly: the status, right after a call that read the
	// job, is converged on a RUNNING job whose tasks do not all run (nor
	// ran within Flink's 3 s cache of job details), or that completed no
	// checkpoint since it was submitted under its id; a job without
	// checkpointing needs its tasks running only.
	ConvergedTooEarly Class = "ConvergedTooEarly"
	// DetachedTouched: a job a Delete left running (DeleteDetach) was
	// stopped, cancelled or savepointed by the controller, or taken for
	// the deployment's job by a status, without the spec adopting it.
	DetachedTouched Class = "DetachedTouched"
	// RollbackRanNewBuild: a rollback ran a jar of another build than the
	// one the template it rolls back to ran (after the jar was rebuilt at
	// the same path).
	RollbackRanNewBuild Class = "RollbackRanNewBuild"
	// FailedNeverRestarted: the deployment's job FAILED, its restart
	// policy allows a restart, state to restart from exists, and nothing
	// of the deployment ran for StuckAfter of fake time (blue/green with
	// a change pending is StuckBlueGreen).
	FailedNeverRestarted Class = "FailedNeverRestarted"

	// TwoLiveJobs: two jobs of the deployment live at once outside a
	// blue/green action in flight (jobs a user started and detached jobs
	// are not the deployment's).
	TwoLiveJobs Class = "TwoLiveJobs"
	// StateLossStop: the controller cancelled a running job under a
	// state-keeping update mode without a restore point recorded in the
	// status before the call.
	StateLossStop Class = "StateLossStop"
	// ConvergedNotRunning: the status, right after a call that read the
	// job, is converged while the spec says Running and the job does not
	// run (other than after an external stop, counted as
	// ExternalStopMisread).
	ConvergedNotRunning Class = "ConvergedNotRunning"
	// LiveAfterDelete: Delete said Done while a job of the deployment
	// still lives.
	LiveAfterDelete Class = "LiveAfterDelete"
	// SecretShown: the value of a secret the spec's job names shows in a
	// stored status or a call's error, or a jar run or plan carried its
	// placeholder instead of its value.
	SecretShown Class = "SecretShown"
	// SecretMissingActed: while the secret was unreadable, a jar run of
	// the job was sent, or an action that starts a job of a template
	// naming it did more than end Blocked (it stopped, cancelled or
	// savepointed the running job).
	SecretMissingActed Class = "SecretMissingActed"
	// Stuck: one action in flight for longer than ActionWithin of fake
	// time, or a Delete not done after ActionWithin.
	Stuck Class = "Stuck"
	// TooManyRequests: a call sent more than lifecycle.MaxRequestsPerCall
	// requests.
	TooManyRequests Class = "TooManyRequests"
)

// Classes lists every class, in the order of the report's rows.
var Classes = []Class{
	ExternalStopMisread, RefusedRestoreBecameLatest, StaleSavepointTaken, OlderStateRestored, PolicyChangeMidAction,
	DeleteLostState, StuckBlueGreen, RestartToReplacedSavepoint, TransientTakenAsFinal, StatusReuseSilent, NeverStable,
	StuckUndeployable, SameJarPathRunsOld, BadStoredStatusActedOn,
	NeverDisposeDisposed, SavepointLeaked, DiscardedCheckpointStart, ConvergedTooEarly, DetachedTouched, RollbackRanNewBuild, FailedNeverRestarted,
	TwoLiveJobs, StateLossStop, ConvergedNotRunning, LiveAfterDelete, SecretShown, SecretMissingActed, Stuck, TooManyRequests,
}
