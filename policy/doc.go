// +kubebuilder:object:generate=true

// Package policy decides, from what a caller observed of a Flink job, whether
// an update may proceed, whether a failed job is restarted, and from which
// savepoint or checkpoint the next job starts. It is pure: data in, decision
// out; it does no I/O, starts no goroutines and never reads the clock (now
// is a parameter), so every rule can be unit-tested.
//
// A reconcile loop observes the job, asks for a decision, acts on it through
// package lifecycle or its own code, and requeues:
//
//	obs := policy.Observations{
//		JobManagerReachable: true,
//		LastContact:         now,
//		Job:                 &policy.Job{ID: id, State: details.State, StateSince: details.Timestamps[details.State]},
//		Savepoint:           status.Savepoint,       // savepoint.Status of the operation in progress
//		LatestSavepoint:     status.LatestSavepoint, // savepoint.Record
//		LatestCheckpoint:    policy.Checkpoint{Path: cp.ExternalPath, Time: cp.TriggerTime},
//		SpecChanged:         spec.Generation != status.DeployedGeneration,
//	}
//	var d policy.Decision
//	if obs.SpecChanged {
//		d = policy.EvaluateUpdate(spec.Update, obs, now)
//	} else {
//		d = policy.EvaluateRestart(spec.Restart, obs, now)
//	}
//	setCondition(string(d.Reason), d.Message())
//	switch d.Action {
//	case policy.ActionStopWithSavepoint: // stop with a savepoint due by d.Deadline
//	case policy.ActionCancelFirst:       // cancel; deploy from d.RestorePoint once it is gone
//	case policy.ActionProceed:           // deploy from d.RestorePoint
//	case policy.ActionRestart:           // deploy from d.RestorePoint and record the restart
//	case policy.ActionWait, policy.ActionBlock, policy.ActionNone:
//	}
//	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
//
// # Policies
//
// UpdatePolicy and RestartPolicy are plain structs with stable JSON names,
// meant to be embedded in a custom resource's spec; Duration fields are
// written as strings ("90s"). Zero fields mean "default" (WithDefaults
// lists them) and Validate names every invalid field. The upgrade modes are
// Stateless (cancel, start empty), Savepoint (stop with a savepoint, restore
// from it) and LastState (restore from the newest savepoint or retained
// checkpoint that is young enough, taking a savepoint only when there is
// none). The restart modes are Never and FromLatestState.
//
// # Decisions
//
// EvaluateUpdate and EvaluateRestart return a Decision: an Action (None,
// Proceed, StopWithSavepoint, CancelFirst, Wait, Restart, Block), the
// RestorePoint to start from (a savepoint or checkpoint with its path and
// time, or Kind None: explicitly without state), a stable Reason usable as a
// Kubernetes condition reason, a Message for people naming the ages and
// limits involved, a Deadline for every Wait, and RequeueAfter. Their
// comments list the rules. The guarantees, which the tests try to break:
//
//   - State the policy asks to keep is never dropped: in Savepoint and
//     LastState mode a job is cancelled or replaced only with a restore
//     point, unless AllowStartWithoutState is set and no state at all is
//     young enough, or it is the first deployment and no state exists.
//   - No restore point is older than the policy's MaxStateAge, none has an
//     empty path, and a retained checkpoint is chosen in Savepoint mode only
//     if FallbackToLastState allows it.
//   - Every Wait has a Deadline after now; past it the decision is another
//     one with a named Reason. An update never proceeds while the old job is
//     CANCELLING or in another transitional state.
//   - Only FAILED (and lost) jobs are restarted, never FINISHED or CANCELED
//     ones, within MaxRestarts per Window and after Backoff.
//
// SelectRestorePoint exposes the choice of state on its own. Times are
// compared only as time.Time and time.Duration.
//
// # Restore requests
//
// A user who says "start this job from that savepoint" sets
// Observations.Restore: a RestoreRequest with the path and a token that
// changes every time they ask again. The caller records the token of the
// last request carried out in Observations.RestoreHandled, so a request is
// never replayed. A pending request takes precedence over the state the
// policy would choose, whether or not the spec changed, and the decision
// says so (Reason RestoreRequested, Details.Requested):
//
//   - A job that is not running (or missing) is replaced at once from the
//     requested path.
//   - A running job is stopped with a savepoint first
//     (SavepointBeforeRestore), so the state it has now is kept too and the
//     user can go back to it; the new job then starts from the requested
//     path, not from that savepoint. Only a request with
//     CancelWithoutSavepoint, or the Stateless mode, cancels it without
//     one. A savepoint that fails is retried while SavepointAttempts
//     allow, then the job keeps running (SavepointFailed) unless
//     FallbackToLastState or AllowStartWithoutState lets it go.
//   - MaxStateAge does not silently reject a request: it applies when the
//     request sets CheckAge (RestoreRequestTooOld, or
//     RestoreRequestAgeUnknown without a time); otherwise a request older
//     than the limit goes ahead and the decision carries
//     Details.Warning = WarningStateOlderThanMaxAge with the age in its
//     Message.
//   - A request without a path or a token is refused
//     (InvalidRestoreRequest).
//
// # Health and rescaling
//
// A job can run and still be broken. The caller keeps a small, bounded
// HealthHistory of samples (job state, restart count from Flink's
// numRestarts metric, completed checkpoints, savepoint failures;
// HealthHistory.Add), and EvaluateHealth judges it: too many restarts
// within a window, no completed checkpoint within a window derived from
// the job's checkpoint interval and timeout, savepoints failing in a row,
// or a transitional state held past a deadline. Ended jobs are never
// unhealthy (the restart policy decides about them) and a job is not
// judged before its first window has passed. What to do is a Decision
// like the others: only report, or restart from the newest state within
// MaxStateAge, never without state.
//
// DecideRescale picks how a job's parallelism changes: in place through
// its resource requirements on Flink 1.18+ with the adaptive scheduler,
// otherwise through an upgrade with a savepoint, unless
// RescalePolicy.InPlaceOnly forbids the restart.
//
// RecommendScale says which parallelism a job needs, from a window of
// samples of its vertices' task metrics (ScaleSample: busy time and
// records in and out per second, a source's pending records): a vertex's
// processing rate is its observed rate over its busy share, its target
// rate what its inputs are to send it (for a source, its input rate plus
// its backlog over AutoscalePolicy.CatchUpDuration), and its parallelism
// is sized for TargetUtilization, within the bounds and on a divisor of
// its maximum parallelism where one is near. A stabilisation time after
// the job starts, a full window of samples and a cool-down after each
// rescale keep it from flapping; every ScaleRecommendation has a stable
// Reason.
//
// # Deployment state
//
// DeploymentStateOf derives a DeploymentState from the observed Flink job
// state and the caller's Recorded progress (the operation in progress, the
// id of the job it deployed, whether its submission failed). "Op" below is
// a Deploy, Update or Restart in progress, whose state is Deploying,
// Updating or Restarting; "its job" means the observed job is the one the
// caller recorded as deployed by it. A failed submission during Op gives
// DeployFailed before anything else.
//
//	Flink job state         nothing in progress  Op, its job   Op, other job  Stop in progress
//	----------------------  -------------------  ------------  -------------  ----------------
//	no answer from the JM   Unknown              Op's state    Op's state     Stopping
//	missing, job recorded   Lost                 Op's state    Op's state     Suspended
//	missing, none recorded  Unknown              Op's state    Op's state     Suspended
//	INITIALIZING, CREATED   Deploying            Op's state    Op's state     Stopping
//	RUNNING                 Running              Running       Op's state     Stopping
//	FAILING, RESTARTING,    Restarting           Restarting    Op's state     Stopping
//	  RECONCILING
//	CANCELLING              Stopping             Stopping      Op's state     Stopping
//	FINISHED                Succeeded            Succeeded     Op's state     Suspended
//	FAILED                  Failed               DeployFailed  Op's state     Failed
//	CANCELED                Cancelled            Cancelled     Op's state     Cancelled
//	SUSPENDED               Suspended            Suspended     Op's state     Suspended
//	unknown to flinkapi     Unknown              Unknown       Op's state     Stopping
//
// Lost is not Failed: the JobManager restarted without the job's HA data,
// and the job's state is where it was. EvaluateRestart treats a missing job
// like a FAILED one and, under RestartFromLatestState, restarts it from the
// newest state within the maximum age (Reason RestartLostJob); under Never
// it blocks with RestartDisabled until the spec changes, and then
// EvaluateUpdate restores the new job from that state (RestoreFromState).
//
// # Stored formats
//
// The policies (UpdatePolicy, RestartPolicy, HealthPolicy, RescalePolicy),
// RestoreRequest and HealthHistory are stored by callers, in a resource's
// spec or status, and read by later releases, so each carries its format
// version in FormatVersion. 0 (not written) reads as version 1; a version
// newer than this package's FormatVersion was written for a later
// flinkkit and is refused, with an error matching ErrUnknownFormat that
// names the type and the version. HealthHistory.Add sets the version; a
// HealthHistory of a newer one decodes to that version alone (a status
// that embeds it still decodes), and HealthHistory.CheckFormat and
// EvaluateHealth refuse it. The
// policies and RestoreRequest are written by users and embedded in their
// own types, so they have no UnmarshalJSON: Validate refuses a newer version, and the
// decisions that validate them block on it as on any invalid policy
// (InvalidPolicy; InvalidRestoreRequest for a request). Golden fixtures of
// every format (testdata/golden) hold every release to reading what the
// earlier ones wrote.
//
// # Kubernetes
//
// The spec, observation and decision types are plain data with DeepCopy
// and DeepCopyInto methods and no Kubernetes import, so they can be
// embedded in custom resources. controller-gen's object generator writes
// them for UpdatePolicy, RestartPolicy and Recorded (make generate); the
// types holding time.Time have hand-written ones of the same form, because
// the generator emits calls to a DeepCopyInto that time.Time lacks.
package policy
