package lifecycle

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Situation names where a job stands, from what Flink shows and what its
// JobStatus recorded: the closed set of the Controller's model. Every
// decision of the Controller starts from one of them; the strings are
// stable.
type Situation string

// Situations of a job.
const (
	// SituationNeverDeployed: the status records no job.
	SituationNeverDeployed Situation = "NeverDeployed"
	// SituationDeleted: a Delete finished; the status is that of a deleted
	// job. Reconciled again, the job is deployed anew from its newest
	// state.
	SituationDeleted Situation = "Deleted"
	// SituationSuspended: the job was stopped with a savepoint because the
	// spec asked for it.
	SituationSuspended Situation = "Suspended"
	// SituationInFlight: an action is under way; the call steps it.
	SituationInFlight Situation = "ActionInFlight"
	// SituationUnreachable: the JobManager does not answer.
	SituationUnreachable Situation = "Unreachable"
	// SituationRunning: the job is RUNNING.
	SituationRunning Situation = "Running"
	// SituationStarting: the job is CREATED or INITIALIZING: not running
	// yet.
	SituationStarting Situation = "Starting"
	// SituationRestarting: Flink restarts the job itself (RESTARTING,
	// FAILING, RECONCILING).
	SituationRestarting Situation = "Restarting"
	// SituationStoppedWithSavepoint: the job FINISHED with a savepoint
	// (stop with savepoint) that the status recorded: a stopped streaming
	// job whose savepoint is its newest state, for example after an
	// upgrade whose new job could not be submitted.
	SituationStoppedWithSavepoint Situation = "StoppedWithSavepoint"
	// SituationStoppedExternally: the job FINISHED with a savepoint that
	// someone else took (flink stop, the Flink UI, another tool): a
	// stopped streaming job whose savepoint is its newest state, never a
	// finished bounded job.
	SituationStoppedExternally Situation = "StoppedExternally"
	// SituationFinished: a bounded job FINISHED on its own: its checkpoint
	// history shows no savepoint that ended it, or the spec says the job
	// is bounded.
	SituationFinished Situation = "Finished"
	// SituationFinishUnconfirmed: the job ended, and Flink's answers do
	// not show how yet: whether a savepoint ended a FINISHED job could not
	// be read, or Flink answered from a cache filled before the job's end
	// (a job the status recorded ended shows RUNNING); the next call reads
	// again.
	SituationFinishUnconfirmed Situation = "FinishUnconfirmed"
	// SituationFailed: the job FAILED.
	SituationFailed Situation = "Failed"
	// SituationCancelled: the job was CANCELED (or is CANCELLING) by
	// someone else.
	SituationCancelled Situation = "Cancelled"
	// SituationHalted: Flink SUSPENDED the job (its JobManager lost
	// leadership).
	SituationHalted Situation = "Halted"
	// SituationLost: the JobManager answers but no longer knows the job.
	SituationLost Situation = "Lost"
)

// Situations lists every Situation, in the order of the model.
var Situations = []Situation{SituationNeverDeployed, SituationDeleted, SituationSuspended, SituationInFlight, SituationUnreachable,
	SituationRunning, SituationStarting, SituationRestarting, SituationStoppedWithSavepoint, SituationStoppedExternally,
	SituationFinished, SituationFinishUnconfirmed, SituationFailed, SituationCancelled, SituationHalted, SituationLost}

// runs reports whether a job in s is up (running, starting, or
// restarting itself).
func (s Situation) runs() bool {
	return s == SituationRunning || s == SituationStarting || s == SituationRestarting
}

// down reports whether nothing of the job runs and it is to be started
// again to run: failed, lost, cancelled, halted, or stopped with a
// savepoint.
func (s Situation) down() bool {
	switch s {
	case SituationFailed, SituationLost, SituationCancelled, SituationHalted, SituationStoppedWithSavepoint, SituationStoppedExternally:
		return true
	}
	return false
}

// Reasons the Controller records in JobStatus.Reason besides those of an
// action's end (ActionReason) and of package policy's decisions. A
// decision never reads them: they are for people and for tools that
// match stable strings.
const (
	ReasonRunning              = "Running"              // the job runs the spec's job
	ReasonWaitingForStable     = "WaitingForStable"     // the job runs; it is not stable yet
	ReasonRolledBack           = "RolledBack"           // the spec's job was rolled back
	ReasonBlueGreenAborted     = "BlueGreenAborted"     // the spec's job did not become healthy beside the old one
	ReasonCanaryFailed         = "CanaryFailed"         // the spec's job did not restore the job's state beside it (BlueGreenPolicy.Canary)
	ReasonInvalidSpec          = "InvalidSpec"          // the spec cannot be acted on
	ReasonSuspended            = "Suspended"            // the job is suspended as the spec asks
	ReasonNotDeployed          = "NotDeployed"          // Delete: nothing was deployed
	ReasonDeleted              = "Deleted"              // Delete finished
	ReasonDeletedStateNotKept  = "DeletedStateNotKept"  // Delete finished; no store keeps the job's newest state
	ReasonStoppedExternally    = "StoppedExternally"    // the job was stopped with a savepoint by someone else
	ReasonStoppedWithSavepoint = "StoppedWithSavepoint" // the job stopped with a savepoint and is to be started again
	ReasonFinishUnconfirmed    = "FinishUnconfirmed"    // the job FINISHED; its checkpoint history is read again
	ReasonNotEnoughSlots       = "NotEnoughSlots"       // the job needs more task slots than the cluster has free
	ReasonRetryWait            = "RetryWait"            // the last action did not succeed; it is tried again later
)

// ActionReason is the JobStatus.Reason of action a in flight (o empty:
// "<Action>InProgress") or ended with o ("<Action><Outcome>").
func ActionReason(a JobAction, o Outcome) string {
	if o == "" {
		return string(a) + "InProgress"
	}
	return string(a) + string(o)
}

// Plan is what the Controller would do next for a job, and why: the
// situation it found, the action it would start (or step), the state it
// would report, and the state a start would restore from. Controller.Plan
// returns it without acting; Reconcile carries it out.
type Plan struct {
	// Situation is where the job stands.
	Situation Situation `json:"situation"`
	// Action is the action the call starts, or, when InFlight, the one it
	// steps; empty: none.
	Action   JobAction `json:"action,omitempty"`
	InFlight bool      `json:"inFlight,omitempty"`
	// Target is the job template Action deploys, if it deploys one.
	Target JobTemplate `json:"target,omitzero"`
	// Mode is how the action carries the job's state over: the spec's
	// update mode (the one the action in flight started with).
	Mode policy.UpgradeMode `json:"mode,omitempty"`
	// NewSavepoint reports that the action first takes a savepoint of the
	// running job and restores from it.
	NewSavepoint bool `json:"newSavepoint,omitempty"`
	// RestorePoint is the newest state known to the status that a start
	// would restore from when it takes no new savepoint (the status's
	// latest savepoint, the job's retained checkpoint or a restore
	// request), and RestoreAge its age; zero: none is known.
	RestorePoint savepoint.Record `json:"restorePoint,omitzero"`
	RestoreAge   policy.Duration  `json:"restoreAge,omitzero"`
	// Blocked, if set, is why the spec cannot be carried out now; the
	// job is left as it is.
	Blocked string `json:"blocked,omitempty"`
	// State, Reason and Message are what the status reports when no
	// action starts.
	State   policy.DeploymentState `json:"state,omitempty"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	// Settled reports that the job runs the spec's job stably with
	// nothing to start, report or wait for.
	Settled bool `json:"settled,omitempty"`
	// Verdict is the verdict of the call planned (see Verdict), from the
	// plan's typed decisions: set by Controller.Plan and Reconcile.
	Verdict Verdict `json:"verdict,omitempty"`
	// Preflight is the preflight of the action (Controller.Plan only):
	// for one to start, what Flink's plan of the new job and the
	// cluster's slots say now (read-only; Skipped says why not); for one
	// in flight, what its preflight recorded.
	Preflight *Preflight `json:"preflight,omitempty"`
	// Adopt is a job that has not ended found under the id the action's
	// new job would get (Controller.Plan only; a start of a job where
	// none runs, on a session cluster): with the id derived from the
	// deployment's own job, the action adopts it as the one an earlier
	// call started instead of starting another; with Reason ForeignJob
	// (an id derived from the deployment's Name, or from a detached job),
	// nothing shows that this deployment started it, and the action
	// would end OutcomeForeignJob, leaving it as it is.
	Adopt flinkapi.JobID `json:"adopt,omitempty"`
	// RequeueAfter is when to look again when no action starts.
	RequeueAfter time.Duration `json:"requeueAfter,omitempty"`
	// Dispose is the savepoint of the history the savepoint ledger
	// disposes of at this call, beside whatever else the plan does (the
	// retention of SavepointPolicy; one request per call); empty when
	// none is due or an action is in flight or starts. Reconcile checks
	// it again when it sends the disposal, against the status of that
	// moment and the restore-point store's record, and disposes of
	// another (or none) when it may not go.
	Dispose string `json:"dispose,omitempty"`
	// Request is the one-shot request (JobSpec.Requests) the plan carries
	// out, by Action or, for one with nothing to do, by Reason alone; its
	// token is recorded as handled before the action's first step.
	Request RequestKind `json:"request,omitempty"`
}

// String is a one-line summary of p for people.
func (p Plan) String() string {
	s := "situation " + string(p.Situation)
	switch {
	case p.InFlight:
		s += ", stepping " + string(p.Action)
	case p.Action != "":
		s += ", start " + string(p.Action)
	default:
		s += ", no action"
	}
	if p.NewSavepoint {
		s += ", from a new savepoint"
	} else if p.RestorePoint.Location != "" && p.Action != "" {
		s += fmt.Sprintf(", from %s (%s old)", p.RestorePoint.Location, p.RestoreAge.Std().Round(time.Second))
	}
	if p.Adopt != "" && p.Blocked == "" {
		s += ", would adopt job " + string(p.Adopt)
	}
	if p.Blocked != "" {
		s += ", blocked: " + p.Blocked
	} else if p.Preflight != nil && p.Action == ActionAdopt && !p.InFlight && p.Preflight.Verdict != nil {
		s += ", an upgrade of the adopted job to the spec's: " + preflightSummary(p.Preflight)
	} else if p.Preflight != nil {
		s += ", " + preflightSummary(p.Preflight)
	}
	if p.Dispose != "" {
		s += ", dispose of " + p.Dispose
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	if p.Message != "" {
		s += " (" + p.Message + ")"
	}
	return s
}

// Observation is what the Controller read of a job before planning: one
// typed value, read with at most MaxRequestsPerCall requests, only what
// the plan needs.
type Observation struct {
	// Read reports that the job was observed in this call; false: no
	// request was needed (nothing deployed, an action in flight, the job
	// suspended or deleted).
	Read bool `json:"read,omitempty"`
	// Reachable reports that the JobManager answered; Error is its error
	// otherwise.
	Reachable bool   `json:"reachable,omitempty"`
	Error     string `json:"error,omitempty"`
	// Job is the job's details; nil when Flink does not know it.
	Job *flinkapi.JobDetails `json:"job,omitempty"`
	// Checkpoints are the job's checkpoint statistics, if read and
	// answered; CheckpointsRead reports that they were asked for.
	Checkpoints     *flinkapi.CheckpointStatistics `json:"checkpoints,omitempty"`
	CheckpointsRead bool                           `json:"checkpointsRead,omitempty"`
	// CheckpointsStale reports that the job ended less than Flink's cache
	// duration (Timing.Cache) before the statistics were read: they may
	// not show the savepoint that ended it yet.
	CheckpointsStale bool `json:"checkpointsStale,omitempty"`
	// CheckpointsAbsent reports that Flink answers the job has no
	// checkpointing at all (a batch job).
	CheckpointsAbsent bool `json:"checkpointsAbsent,omitempty"`
	// CheckpointsRetained reports, of a job to adopt (JobSpec.Adopt),
	// that its checkpoint configuration retains its checkpoints once it
	// fails (externalized checkpoints): only then is its latest
	// checkpoint state that outlives it.
	CheckpointsRetained bool `json:"checkpointsRetained,omitempty"`
	// CheckpointsError is the error that answered the checkpoint
	// statistics or configuration of a job to adopt (a failover, a
	// leader election, statistics from Flink's cache that show its
	// latest checkpoint discarded): no answer that it has no state; it
	// is adopted once they are read.
	CheckpointsError string `json:"checkpointsError,omitempty"`
	// NoCheckpointing reports that the job runs with periodic
	// checkpointing off (read once per job).
	NoCheckpointing bool `json:"noCheckpointing,omitempty"`
	// Restarts is the job's restart count, when health is judged; -1 if
	// unknown.
	Restarts int64 `json:"restarts,omitempty"`
	// FreeSlots is the cluster's free task slots, read while the job's
	// tasks wait for slots; -1 if not read.
	FreeSlots int `json:"freeSlots,omitempty"`
	// TotalSlots is the cluster's task slots, read with FreeSlots.
	TotalSlots int `json:"totalSlots,omitempty"`
	// Failure is the root cause of a failing job's newest exception.
	Failure string `json:"failure,omitempty"`
	// Requests counts the requests the observation sent.
	Requests int `json:"requests,omitempty"`
	// Shared is set when the job's state came from the cluster's shared
	// overview (Controller.Shared) and no request of the job's own was
	// sent: Job then holds what the overview shows (its state, start and
	// task counts, as one vertex).
	Shared bool `json:"shared,omitempty"`
	// HealthDeferred is set when a shared observation left the job's
	// health to a later call (its checkpoint statistics are read every
	// other poll, half of a fleet at each): no health sample is taken
	// and health is not judged at this call.
	HealthDeferred bool `json:"healthDeferred,omitempty"`
	// OverviewChanged is set when the shared overview showed the job at
	// rest changed (another state, tasks not all running, not listed) and
	// its own details were read instead. Flink answers those from a cache
	// for up to Timing.Cache after the change: when they still show it
	// running unchanged, the Controller looks again once that passed.
	OverviewChanged bool `json:"overviewChanged,omitempty"`
}

// terminatingSavepoint is the savepoint that ended a FINISHED job (a stop
// with savepoint: Flink's SYNC_SAVEPOINT), if its checkpoint history
// names one.
func (o Observation) terminatingSavepoint() (savepoint.Record, bool) {
	if o.Job == nil || o.Checkpoints == nil {
		return savepoint.Record{}, false
	}
	sp := o.Checkpoints.LatestSavepoint
	if sp == nil || sp.ExternalPath == "" || sp.CheckpointType != "SYNC_SAVEPOINT" {
		return savepoint.Record{}, false
	}
	return savepoint.Record{Location: sp.ExternalPath, Time: sp.TriggerTime, JobID: o.Job.ID, Reason: savepoint.ReasonUser}, true
}

// situationOf names the job's situation from its status and what was
// observed of it.
func situationOf(spec JobSpec, st *JobStatus, obs Observation) Situation {
	switch {
	case st.InFlight():
		return SituationInFlight
	case deleted(st):
		return SituationDeleted
	case st.JobID == "":
		return SituationNeverDeployed
	case st.Suspended:
		return SituationSuspended
	case !obs.Read:
		return SituationRunning // not observed: a spec change is planned without reading
	case !obs.Reachable:
		return SituationUnreachable
	case obs.Job == nil && finished(st):
		return SituationFinished
	case obs.Job == nil:
		return SituationLost
	}
	return situationOfState(spec, st, obs)
}

func situationOfState(spec JobSpec, st *JobStatus, obs Observation) Situation {
	if st.JobState.IsGloballyTerminal() && !obs.Job.State.IsGloballyTerminal() && obs.Job.ID == st.JobID {
		// A job never leaves a globally terminal state: the answer was
		// cached before the job ended.
		return SituationFinishUnconfirmed
	}
	if obs.Job.State == flinkapi.JobFinished {
		return finishedSituation(spec, st, obs)
	}
	if s := situationOfJobState(obs.Job.State); s != "" {
		return s
	}
	return SituationUnreachable // a state this release does not know: nothing is decided on it
}

// situationOfJobState is the situation of a job in Flink's state js,
// but for FINISHED (how it finished, its checkpoint history tells);
// empty for that and for a state this release does not know.
func situationOfJobState(js flinkapi.JobState) Situation {
	switch js {
	case flinkapi.JobRunning:
		return SituationRunning
	case flinkapi.JobCreated, flinkapi.JobInitializing:
		return SituationStarting
	case flinkapi.JobRestarting, flinkapi.JobFailing, flinkapi.JobReconciling:
		return SituationRestarting
	case flinkapi.JobFailed:
		return SituationFailed
	case flinkapi.JobCanceled, flinkapi.JobCancelling:
		return SituationCancelled
	case flinkapi.JobSuspended:
		return SituationHalted
	}
	return ""
}

// finishedSituation tells a bounded job that finished from a streaming
// job stopped with a savepoint, by the terminating savepoint in its
// checkpoint history.
func finishedSituation(spec JobSpec, st *JobStatus, obs Observation) Situation {
	if rec, ok := obs.terminatingSavepoint(); ok {
		if hasLocation(st.Savepoints.Records, rec.Location) || st.Latest.Location == rec.Location {
			return SituationStoppedWithSavepoint
		}
		return SituationStoppedExternally
	}
	if finished(st) || spec.Bounded || (obs.CheckpointsRead && obs.Checkpoints != nil && !obs.CheckpointsStale) || obs.CheckpointsAbsent {
		return SituationFinished
	}
	return SituationFinishUnconfirmed
}

// deleted reports whether st is the status of a job a Delete finished
// with.
func deleted(st *JobStatus) bool {
	return st.Deleted || st.Action == ActionTeardown && st.Progress.Done() && (st.Progress.Outcome == OutcomeSucceeded || st.Progress.Stopped())
}

func hasLocation(rs []savepoint.Record, loc string) bool {
	for _, r := range rs {
		if r.Location == loc {
			return true
		}
	}
	return false
}
