// Package lifecycle keeps Flink jobs running as their specs say, through
// REST calls that can be interrupted at any point and resumed. Its job
// controller composes the lifecycle of one job; its operations, which
// the controller is built from, can be used on their own: taking a
// savepoint, stopping a job with one of several strategies, submitting a
// job from a jar without ever starting it twice, upgrading, restarting,
// rescaling and tearing down a job as its policy says, and disposing of
// old savepoints.
//
// # The job controller
//
// A JobSpec says what should run (a JobTemplate: the jar and its
// arguments; Running or Suspended; the update, restart, health, rescale,
// savepoint and rollback policies; a restore request). A JobStatus holds
// what runs and everything the controller needs to go on: the job id,
// the templates deployed and last stable, the action in flight with its
// Progress, the savepoint history, restarts, health samples. One call,
// Controller.Reconcile, observes the job, decides through package policy,
// steps the action in flight or starts the next, applies its outcome to
// the status and says when to call again; Controller.Delete tears the job
// down with a final savepoint. A Kubernetes reconciler is a thin shell
// around it:
//
//	// jars: lifecycle.JarDir("/opt/flink/usrlib"), built once; see
//	// "Where jars come from"
//	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: client, Jars: jars}, Store: store, Name: req.String()}
//	res, err := ctrl.Reconcile(ctx, job.Spec.JobSpec, &job.Status.JobStatus)
//	// store the status before anything else, whatever err is, then
//	return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
//
// The controller never sleeps, sends at most MaxRequestsPerCall requests
// a call (one step of an action, or an observation of the job at rest:
// its details, and only when needed its checkpoint statistics, restart
// count and exceptions), and records what a request needs before sending
// it: a caller that stores the status after every call and restarts ends
// like an uninterrupted run. At rest a job costs one request per
// PollInterval (three when its health is judged).
//
// What it does, at rest, in this order: deploys a job that is not there
// (or resumes a suspended one from its savepoint); suspends one the spec
// suspends (stop with savepoint); upgrades to a new template (a new
// parallelism alone: Rescale, in place where the cluster can); carries
// out a new restore request; restarts a failed or lost job as the restart
// policy says (also one whose new Job waits: when the update policy has
// no state to carry it out with, the job is restarted from its newest
// state first, and the upgrade follows once it runs); rolls an upgraded job that fails, or does not become
// stable (RUNNING, all its tasks running, a checkpoint completed after
// its start) within Rollback.ReadinessTimeout, and at once an upgrade
// whose new job Flink refused once the old job had stopped, back to the
// last stable template from the state the upgrade started from (never older than
// the update policy's maximum age; a template rolled back is not deployed
// again until the spec's Job changes); restarts an unhealthy job from its
// newest state when the health policy says so; takes the savepoints the
// schedule asks for and disposes of old ones per the retention. The
// failure it records is bounded (MaxFailureLength).
//
// # The savepoint ledger
//
// JobStatus.Savepoints is the deployment's ledger of savepoints: each
// savepoint the Controller took, or a caller imported
// (JobStatus.ImportSavepoint), stays in it until Flink disposed of it. The
// retention of SavepointPolicy (MaxCount, bounded by MaxStoredSavepoints,
// and MaxAge: they bound every savepoint the deployment took, whatever
// it was taken for, and imported ones only under DisposeUser) runs at
// every call with no action in flight, whatever the job's situation (running, suspended, failed, down), one disposal
// request per call beside what else the call does (Plan.Dispose). It never
// disposes of the newest savepoint, the one the job started from
// (JobStatus.RestoredFrom, until the history holds a savepoint of that
// job: a later action or an import does not free it), the one a rollback
// would restore, nor the one the spec's restore request names.
// These are checked at the act, in the call that sends the disposal,
// against the status and spec of that call and the restore-point store's
// record under the Controller's Name (read then), never only where the
// disposal was chosen: a disposal recorded in an earlier call (say, before
// Flink answered 503) whose savepoint is one of them now, because a
// restore started the job from it or it became the newest state, is
// dropped before it is sent, its record kept in the history.
// A disposal is recorded before it is sent (JobStatus.Disposing); a
// failed one keeps its record with a typed error (savepoint.Disposal) and
// is tried again after RetryInterval, doubled each time, at most
// MaxDisposeAttempts times. Delete keeps the final savepoint (the one its
// teardown took, whatever the times of records imported meanwhile: it
// becomes Latest and the store's) and, as
// SavepointPolicy.DisposeOnDelete and each record's OnDelete say, disposes
// of the others before it returns Done. An action that did not
// succeed is tried again with the same spec after RetryInterval; a new
// spec at once.
//
// A program of its own (a command-line tool, a runtime) calls
// Controller.Converge instead: it calls Reconcile until the spec is
// carried out, storing the status after every call with the function it
// is given, and ends, as the status's verdict says (see below), with nil
// once it is Done, an error matching ErrInvalidSpec for a spec the
// Controller cannot act on, an *ActionError for an action that ended
// without success, or a *VerdictError for a spec it does not carry out
// at rest (a failed job the restart policy does not restart, a spec
// whose job was rolled back). StatusFile is such a store: a file replaced
// atomically, locked against a second process.
//
// # The verdict
//
// Whether a spec is done, failed or stuck is one typed word, not
// something for the caller to work out from situations, reasons and
// outcomes: JobStatus.VerdictFor(spec) is a Verdict of the closed set
// Verdicts. Done: the spec is carried out (Converged). Progressing: an
// action is in flight or starts at the next call, a new job earns its
// stability, Flink restarts the job itself. Waiting: the Controller acts
// again by itself once what it waits for comes (the JobManager, task
// slots, a restart's backoff). Blocked: the spec is refused and the job
// was left as it was (an action ended Blocked or LeftRunning, a
// blue/green upgrade aborted, a canary failed, the spec's job rolled
// back, a restart that would lose state, an adoption refused). Failed:
// the last action failed, or the job failed and the restart policy
// does not start it again, or it runs unhealthy. Invalid: the spec does
// not validate. Deleted: a Delete finished. A Blocked or Failed action
// is tried again with the same spec after RetryInterval
// (JobStatus.RetryPending), a new spec at once. Every call records its
// verdict in JobStatus.Verdict, and Controller.Plan returns the one of
// the call it plans (Plan.Verdict). The verdict is derived from typed
// state alone (the situation, the action in flight or ended and its
// outcome, the plan's decisions, the restart and health policies'
// decisions, Deleted), never from a Reason or a Message; Converge's
// return, flinkctl's exit codes and the example operator's Ready,
// Progressing and Degraded conditions all follow from it.
//
// Before an upgrade, rescale, blue/green upgrade or deploy touches the
// job, its preflight (JobSpec.Preflight, on by default) asks Flink for
// the new job's plan from the jar and compares it with the running job
// (a vertex whose state would not be restored, a parallelism above a
// vertex's maximum) and the task slots it needs with the session
// cluster's: a refusal ends the action Blocked
// (policy.ReasonPreflightRefused), the job as it was. Controller.Plan
// shows the same verdict before anything is done.
//
// # Observe, plan, act
//
// Each Reconcile is three steps a reader can follow. Observe reads only
// what the plan needs into one Observation (the job's details; its
// checkpoint statistics to tell a stop with savepoint from a bounded
// job's end, to restart from a retained checkpoint or to judge
// stability; its exceptions when it fails; the cluster's free slots when
// its tasks wait for them). PlanFor, a pure function of the spec, the
// status, the observation and the time, names the job's Situation from a
// closed set (NeverDeployed, Deleted, Suspended, ActionInFlight,
// Unreachable, Running, Starting, Restarting, StoppedWithSavepoint,
// StoppedExternally, Finished, FinishUnconfirmed, Failed, Cancelled,
// Halted, Lost) and returns a Plan: the action to start or step, the
// state it would restore from and its age, or the state to report and
// what blocks the spec. Act starts the action from one table of actions
// (how each is built, what its success and failure write to the status)
// or steps the one in flight. Controller.Plan runs observe and plan only:
// a caller asks what would happen before anything is sent. Delete goes
// the same way (the action in flight first, then a teardown, a
// detachment or nothing to stop, then the savepoints to dispose of),
// and Controller.PlanDelete is its Plan. No decision
// reads text: JobStatus.Reason and Message are for people; the Reason*
// constants and ActionReason name the values Reason takes.
//
// A few rules follow from the model. A streaming job that ended with a
// savepoint (stopped by flink stop, the Flink UI or another tool: Flink's
// checkpoint history names the SYNC_SAVEPOINT that ended it) is a
// stopped job whose savepoint is its newest state: it is recorded, and
// the job is started again from it (or counts as suspended when the spec
// says Suspended); JobSpec.Bounded says a FINISHED job is a bounded job's
// success where the history cannot tell. An action in flight keeps the
// spec it started with (JobStatus.ActionSpec). A restore path whose job
// failed never becomes the job's latest state; a restore the user asked
// for does, also when it is older than the state it replaces. Stability
// belongs to the job that earned it (JobStatus.StableJobID): a job is
// stable once it was seen RUNNING with all its tasks running and a
// checkpoint completed after its start, and every new job (deployed,
// restarted, upgraded, rolled back, rescaled through a new job,
// redeployed after a stop from outside or a Delete, adopted) earns it
// again, also when it runs the last stable template; until then the
// status is not Converged (WaitingForStable). A job without
// checkpointing is stable once its tasks run. An action that ended
// leaves a status no longer in flight: the job's situation and state as
// the action left it (a refused upgrade: the old job Running as it
// was), not the action's own (Updating, Deploying). A job whose tasks
// wait for more slots than the cluster has free is reported
// (ReasonNotEnoughSlots, naming the numbers), and a Delete cancels it at
// once: it holds no state of its own. A Delete keeps the newest state the
// status knows in the Store, or says that nothing keeps it
// (ReasonDeletedStateNotKept); a status reused after a Delete deploys the
// job anew. A jar rebuilt under the same path is a new template
// (JobTemplate.JarDigest); a rollback runs the build that was stable,
// from its upload recorded in JobStatus.StableJarID (kept by
// CleanSession while the status names it), never the file's new content:
// with that upload gone, it ends OutcomeJarChanged before the job is
// touched. A job is the deployment's only if its identity says so (see
// Job identity below). A stored status that no Controller of this
// release wrote is refused with ErrInvalidStatus before it is changed,
// and no stored time makes a call wait longer than the Controller's
// intervals.
//
// Preconditions are checked at the act, not only where the act was
// chosen: what an earlier call recorded or read says what to do, never
// that it is still safe to do it. A disposal is sent only if, in this
// call, its savepoint is none of the newest state, Latest, UpgradeFrom,
// the action's restore point, the state the job started from while it
// has no savepoint of its own, the Store's record or the path of a restore
// request (a disposal recorded in JobStatus.Disposing included). A job is
// started from a checkpoint only if this call's reading (not a cached one,
// nor one from before an absence) or storage shows the checkpoint
// retained; with a Storage, a job's checkpoint directory listed empty in
// this call while the storage shows where it lies (other jobs'
// directories beside it, or the directory above it) means Flink discarded
// the checkpoint: no job starts from it and it is no newest state. A
// storage that cannot be read there, or shows nothing of it (not mounted
// where the caller runs), leaves Flink to judge the checkpoint: a start
// from one that is gone is refused. A job is the deployment's only if its identity says so (the
// status records it, or Flink records it as this deployment's), never
// because it runs under an id the deployment would derive. Stable belongs
// to the job that earned it: every new job (a restart, a redeploy, a
// revert to the stable template) earns it again, with all its tasks
// running and a checkpoint of its own.
//
// A job started outside the controller (from the Flink UI, the CLI, the
// REST API or another operator) is taken over without a restart by
// JobSpec.Adopt on a fresh status: ActionAdopt, two or three GETs, with
// only state that outlives the job as its newest; a job unknown
// to Flink or ended is refused (ReasonAdoptFailed), and nothing is
// deployed while an adoption is pending. JobSpec.OnDelete Detach makes a
// Delete leave the job running, untouched (ReasonDetached,
// JobStatus.Detached).
//
// # Job identity
//
// A new job's id is derived, so that a call started again after a crash
// finds the job an earlier one submitted instead of starting a second:
// from the job it replaces, or, for a deployment's first job, from the
// Controller's Name (mixed with its Namespace) or from the job a Delete
// detached. Before a job is started where none runs, Flink's job list
// is read, and a job that has not ended under that id is adopted only
// when its id proves it is the deployment's: derived from a job this
// status records, and started after that job (a job that started before
// it holds the id reused, and is passed over for the next derived id);
// as the run that started it left no record of what it
// runs (its writes were lost, and the spec may have changed since), it
// is not reported as running the spec, which is deployed to it next
// (JobStatus.Deployed is left empty). Under an id derived from the Name
// (a fresh status, one whose store was lost, another deployment of the
// same Name on the same cluster, one re-created after a Detach) or from
// a detached job, it may be another deployment's or run another spec:
// the deploy ends OutcomeForeignJob, naming it
// (Progress.Replace.Observed.Adopt), and neither starts a job nor touches that
// one; Controller.Plan says so beforehand (Reason ForeignJob,
// Plan.Adopt), or that it would adopt job X. Take such a job over with
// JobSpec.Adopt, or give each installation that deploys one Name to one
// cluster a Namespace of its own (Controller.Namespace): its
// deployments then derive ids of their own and deploy beside it. A
// detached job is never taken over without JobSpec.Adopt.
//
// # Bounded jobs, schedules and triggered checkpoints
//
// A bounded job that FINISHED on its own is a success of its own kind:
// the controller records its result (JobStatus.Result: end time, net
// runtime, accumulators, from GET /jobs/:id/execution-result and
// /accumulators) and from then on never restarts it, never takes a
// savepoint or checkpoint of it, and counts it as converged, also once
// Flink has forgotten the job; a Delete of it is done at once, and a
// changed Job runs afresh. Savepoints follow an interval, a cron
// schedule in a time zone (SavepointPolicy.Schedule, savepoint.Cron:
// daylight saving time as ISC cron handles it; a caller that was down
// over several times takes one savepoint, not one per missed time), or
// both. CheckpointPolicy has checkpoints triggered through the REST API
// for jobs whose own interval is long, each an action beside the running
// job like a periodic savepoint (ActionCheckpoint), its trigger id
// stored in the action's Progress before it is sent. SavepointPolicy and CheckpointPolicy say which failures Flink
// itself counts toward execution.checkpointing.tolerable-failed-checkpoints
// (CheckpointFailureManager); the controller acts on none of them.
//
// # Session clusters with many jobs
//
// CleanSession tidies a session cluster shared by many deployments,
// given the stored spec and status of each (Claim): it deletes the jars
// no claim uses (those of earlier versions; young jars, which a submit
// may not have recorded yet, stay) and reports the jobs no claim runs;
// UnclaimedTeardown stops such a job with its savepoint recorded under
// UnclaimedName. SessionPlan is its pure part.
//
// # Operations
//
// Each operation is a small struct of configuration (TakeSavepoint, Stop,
// Submit, Upgrade, BlueGreen, Restart, Rescale, Teardown, DisposeSavepoints) with an
// Env (the client, timing, clock and reporting every operation shares),
// whose Step does at most one request and records everything in a
// Progress the caller stores, so a Kubernetes controller calls it once
// per reconcile:
//
//	op := &lifecycle.Stop{Env: env, Job: id, Mode: spec.Update.Mode}
//	res, err := op.Step(ctx, &status.Progress)
//	// store status (with Progress) before anything else, then
//	return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
//
// Command-line tools and tests call Run, which loops over Step:
//
//	var p lifecycle.Progress
//	res, err := lifecycle.Run(ctx, op, &p, func(r lifecycle.Report) { log.Print(r.Progress.Phase) })
//	if rec, ok := p.Record(); ok { ... } // restore from rec.Location
//
// # Progress
//
// Progress is plain data with stable JSON names and a DeepCopy. The zero
// Progress starts an operation. Whatever makes a request idempotent is
// recorded in it one Step before the request: the savepoint's trigger id
// (savepoint.Begin) and the id of the job to submit. A caller that crashes
// and restarts passes back what it stored and resumes the same operation:
// the trigger is re-sent with the same id, which Flink 1.15+ deduplicates,
// and a submission is preceded by a look-up of the job id. A savepoint
// location, once seen, is kept in Progress.Savepoint.Location and never cleared.
//
// A Progress is a header every operation keeps (Operation, Target, Phase,
// JobID, Requests, Started, Deadline, Outcome, Reason, LastError, Steps)
// and one record per operation or sub-operation, set only by those that
// go through it: Savepoint (a savepoint or checkpoint trigger), Stop,
// Submit, Replace (the job an Upgrade, Restart, Teardown, BlueGreen or
// Canary replaces or stops, what was seen of it and the state the new
// job starts from), Teardown, Dispose, BlueGreen, Rescale and Checkpoint.
// An operation that runs another (a Stop and a Submit inside an Upgrade, a
// Stop inside a Teardown) steps the other's record in the same Progress;
// Started and Steps stay those of the operation the caller steps. A
// Progress of format 7 or older, which kept every field at the top level,
// is read into the records.
//
// A Progress belongs to one operation and one job: its first Step records
// them (Progress.Operation, Progress.Target) with the format version, and
// every later Step checks them before anything else. A Progress written
// by another operation, or by the same one for another job, is refused
// with ErrForeignProgress, one with a phase or outcome this release does
// not know (or an outcome without the Done phase) with ErrInvalidProgress,
// and one of a newer format with ErrUnknownFormat; nothing is sent and
// the Progress is left as it was (Reconcile and Delete refuse a JobStatus
// whose Progress in flight a Step would refuse before they change any of
// it). A Progress in Teardown's record phase whose location Flink did not
// report for its job (the savepoint of a trigger recorded for the job, or
// the newest state read from the job's checkpoint statistics) is refused
// with ErrInvalidProgress: nothing else enters a restore-point store.
// Store one Progress per operation, and start the next operation with a
// zero one.
//
// # Adopting the new job
//
// Upgrade, Restart and Rescale start a new job in place of the old one:
// Progress.Submit.NewJobID names it from the step that sends its submission on,
// whatever the outcome, also TimedOut (an operation that ended before it
// sent one leaves it empty: the old job, or none, is still the job). The
// caller must adopt it: store it
// as the deployment's job, and name it (not the old job) in the next
// operation, or a retry with the old job's id would replace a job that
// no longer runs. Should the Progress be lost, the operations protect
// the deployment anyway: without Upgrade.JobID the new job's id is
// derived from the old job's id (or from Name when there is no old job),
// so an operation started again on the old job looks that id up in
// Flink's job list (PhaseAdopt) before it decides, and adopts a job of
// that id that runs or is starting (Progress.Submit.Adopted) instead of
// submitting a second one; a job of that id that has ended is passed
// over for the next derived id. A job that runs under an id derived from
// Name is not adopted: any Upgrade of that Name derives it, so nothing
// shows whose it is; the operation ends OutcomeForeignJob and starts
// nothing (Job identity above).
//
// # Misconfigured clients
//
// An answer that says the client is set up wrong for the cluster (401,
// 403, a redirect, a TLS verification failure: flinkapi.ErrMisconfigured)
// is returned by Step as its error at once, instead of being polled until
// the deadline: no retry changes it. The Progress keeps what was
// recorded; once the client is fixed, the same operation resumes.
//
// # Savepoints
//
// TakeSavepoint and the savepoint phase of Stop follow package savepoint:
// trigger (again after transient errors, with the same id), poll, and when
// Flink forgot the trigger id (a JobManager restart, an expired result)
// look the savepoint up in the job's checkpoint history before calling it
// lost: OutcomeSavepointLost once the history, or a restore of the job
// after the trigger, shows it will not complete. Past the deadline the
// operation finds out what became of the savepoint first, in up to three
// reads (its trigger id, then the checkpoint history after a read that
// failed): a savepoint that completed while the caller was away is
// recorded; one that did not, or whose reads all failed, ends
// OutcomeTimedOut. A trigger that was never answered (recorded, and the
// caller away before it was sent or with its answer) does not count as
// waited for: past the deadline it is sent, and the deadline and the
// trigger time count from then. A savepoint found in the history counts
// as the operation's only if it was triggered at or after the trigger
// time (to Flink's milliseconds): one taken meanwhile by someone else,
// or by a schedule, never stands in for it.
//
// A savepoint the Controller takes beside the running job (a periodic one,
// or a savepoint request) whose action ended TimedOut at the update
// policy's deadline is not given up: Flink goes on with it until the
// job's checkpoint timeout (execution.checkpointing.timeout, 10 minutes
// by default). The Controller keeps a small record of it
// (JobStatus.LateSavepoint: job, trigger id, trigger time, when to give
// up) and, at later calls with no action in flight, reads what became of
// it, one request a call within MaxRequestsPerCall, at most once per
// PollInterval: the trigger id's status, the job's checkpoint timeout
// (GET /jobs/:id/checkpoints/config, once; at most MaxLateSavepointWait),
// and once Flink forgot the trigger id, the job's checkpoint history. A
// savepoint that completed is recorded in the history (and as Latest when
// it is the newest state of the deployment's job); one Flink failed, or
// that nothing showed completed by the timeout and a minute, counts as a
// failed periodic savepoint (JobStatus.SavepointFailures) then, never at
// its deadline. No periodic savepoint is triggered, and a savepoint
// request waits, while the record is pending; a call whose status was not
// stored reads again from the record it had. Once it is resolved, the job
// at rest costs what it did before.
//
// TakeSavepoint does not send again a trigger that was never answered and
// was recorded (or last cleared) more than a minute before: a request
// sent with it, whose answer was lost, may have taken a savepoint, and
// once Flink forgot the trigger id (rest.async.store-duration, or a
// JobManager restart) the same id would start a second one and leave the
// first on storage, never recorded. It reads the job's checkpoint history
// first: a savepoint completed since the trigger time, and triggered
// within that minute of it, is recorded as the operation's
// (Succeeded, found in the history); one in progress is waited for; only
// when the history shows none is the trigger sent (Progress.Savepoint.Resend). A
// stop with savepoint is not looked up so: a stop whose first request
// took effect ended the job, which the stop sent again learns from Flink.
//
// An answer that Flink does not know the job, also a savepoint that
// completes with FlinkJobNotFoundException, is checked against Flink's
// job list: the savepoint status turns savepoint.Unconfirmed, and the
// next Step reads the list and applies it (savepoint.AfterJobList). A job
// the list does not show is gone (OutcomeJobGone). A job it shows
// running fails a savepoint whose operation failed (OutcomeSavepointFailed);
// after a 404 the savepoint goes on where it stood: the trigger is sent
// again with the same id, the status polled or the history read. A job
// the list shows ended (FINISHED, CANCELED, FAILED) is not gone: a stop
// whose answer was lost with the caller, sent again after Flink forgot
// its trigger id (rest.async.store-duration, 5 minutes), gets exactly
// that answer once the first stop has finished the job. Its savepoint is
// looked up in the ended job's checkpoint history, read once Flink's
// cache of the statistics (Timing.Cache) holds none from before the end,
// and recorded when found. When nothing shows it, the operation ends
// OutcomeSavepointLost naming the trigger time and the directory the
// savepoint went to (or OutcomeJobTerminal if the job had ended
// otherwise), never Succeeded.
//
// Polls come soon after an action and slow down to Timing.Poll: a
// savepoint's status, a job being stopped or started are read again after
// Timing.Lag (a third by default) of the time waited so far, at least
// 100 ms, so a change Flink makes after w is seen by max(w/3, 100 ms)
// later at most, and one of minutes is read once per Timing.Poll. A
// savepoint's first poll 0.3 s or more after its trigger reads the job's
// checkpoint statistics instead: the share of subtasks that acknowledged
// it and the bytes written against the last checkpoint's (or, without
// them, the duration of the savepoint before) say when it completes, and
// the next poll comes just after that time, however far, the polls of
// Timing.Lag going on only if it has not completed by then. Only the time
// of that read is recorded (in the savepoint's status), so that it is
// read once, also by a caller that restarts. A job that starts in 0.35 s
// takes 4 polls (Flink answers a jar run before the job runs: the first
// poll comes 100 ms later), a savepoint of 10 s 3 and the progress read,
// an upgrade with a savepoint of 10 s 12 requests in all. Run's callback
// adds none.
// A Controller reads a new job waiting to become stable by the same rule
// (at least Timing.Cache apart, at most PollInterval), so a job whose
// first checkpoint completes 11 s after its start is seen stable about
// 1.6 s later, not a PollInterval later.
//
// # Stop strategies
//
// StopWithSavepoint (Flink's stop, optionally draining), CancelWithSavepoint
// (a savepoint with cancel-job), SavepointThenCancel (a savepoint, then a
// cancel), and CancelWithoutState, which only a Stateless policy allows:
// otherwise Step refuses with ErrStateRequired before any request.
// ChooseStopStrategy picks one by Flink version and policy unless the
// caller forces one. A job is never cancelled after its savepoint failed.
// If the job fails while stopping after the savepoint completed, the
// operation ends OutcomeJobFailedWhileStopping with the location kept.
//
// # Submission
//
// Submit uploads a jar (or reuses one) and runs it with a job id recorded
// beforehand. After a run request whose answer was lost it asks Flink for
// that job id and runs the jar again only if Flink does not know it; an
// answer that the id is in use counts as submitted. It ends once the job
// is RUNNING. A job that fails before it runs ends JobFailed with the root
// cause of Flink's exception (for a savepoint Flink cannot restore, its
// message). With a Deployer, Submit (and Upgrade and Restart) start the job
// in an application cluster of its own instead (see below).
//
// # Where jars come from
//
// A spec's JobTemplate.JarFile (and an operation's JarFile) is read only
// through Env.Jars, the caller's choice: JarDir, a directory that no
// name, "..", absolute path elsewhere or symbolic link may leave (Go's
// os.Root), or JarFS, an fs.FS. A name outside it, anything but a
// regular file (a device such as /dev/zero, a FIFO, a directory) or a
// file larger than Jars.MaxSize (DefaultMaxJarSize) is refused with an
// error matching ErrInvalidSpec that names the file and the source,
// before a byte of it is read or sent: Reconcile reports it in the
// status (Reason InvalidSpec) and stores no digest of it. Every read is
// bounded and ends with its context; the type and size are checked on the
// open file the digest or the upload then reads. Without Env.Jars no jar
// file is read at all. Jobs started from an uploaded JarID, or by a
// Deployer (whose JarFile names a file of the cluster's image), read
// none.
//
// # Secret arguments
//
// A job's argument may name a secret, ${secret:NAME}, alone or within
// other text ("--password=${secret:db/password}"). The value comes from
// Env.Secrets (SecretMap, or the caller's: a Kubernetes Secret, a file, a
// vault) and goes into the jar run and jar plan requests only, put in at
// the last step before the client sends them. The status, the operations'
// records, Plan and every message keep the placeholder. Flink echoes a
// program's arguments where it fails (a main method that refuses one, a
// job's exception, a failure cause): the client replaces the values the
// request carried by "xxxxx" in its errors and log lines
// (flinkapi.RunJarRequest.Secrets), and the Controller does so in the
// exceptions and failure causes it reads of the job, for every secret the
// spec or a template of the status names. An action that would start the
// job checks every secret first: one that cannot be read ends it Blocked
// (ErrSecretUnavailable's message, naming the secret) before the old job
// is touched, and it is tried again after RetryInterval. A spec naming
// secrets with a Deployer is refused (ErrInvalidSpec): the application
// cluster would have to keep the values. The text of the template is what
// the Controller compares: a secret whose value changes does not restart
// the job by itself; change the spec (a new name) to roll it. A value is
// not taken out of the job's name (--name in the program), of anything
// Flink logs itself, or, once it changed, of what the job running with
// the old value reports.
//
// # Application clusters
//
// A Deployer starts each job in a cluster of its own, with the job id and
// the restore path in the cluster's Flink configuration
// (ApplicationConfiguration), and returns the cluster (Progress.Submit.Cluster,
// JobStatus.Cluster): its JobManager's REST address, read through
// Deployer.Client. The clusters are configured with
// execution.shutdown-on-application-finish: false, as the Apache Flink
// Kubernetes operator does, so that a JobManager stays after its job
// ended: a stop's result, the job's final state and its checkpoint
// history can still be read, and flinkkit deletes the cluster itself once
// it has them. Upgrade, Restart and Teardown given the job's Cluster read
// and stop the job through that cluster's client; Upgrade and Restart
// start the new job in a new cluster and delete the old one once the new
// job was started (PhaseDeleteCluster), whatever the new job's outcome (the
// old job is stopped by then, its state recorded); Teardown deletes the
// cluster once the final savepoint is recorded or the job had ended. A
// cluster that no longer exists (Deployer.Exists false) while its
// JobManager cannot be reached is answered as a job Flink does not know:
// the job ended with its cluster, never an outage to wait out (the
// Controller then restarts it from its latest state), and a new cluster
// that is gone before its job ran ends the submission SubmitFailed at
// once. The Controller drives both kinds through the same JobSpec: with a
// Deployer every job runs in an application cluster, and Env.Client is
// not used. Deploy is idempotent for a job id (it returns the cluster it
// started for it), which takes the place of the job-list lookup of a
// session cluster when a Progress was lost.
//
// # Upgrade and restart
//
// Upgrade composes the operations above under a policy.UpdatePolicy. It
// reads the old job's state (Observe, from the uncached status call), the
// details of a job that does not run (ObserveDetails), its latest
// retained checkpoint (ObserveCheckpoints) and whether Flink keeps it
// (ObserveRetention), asks policy.EvaluateUpdate, and does what it
// decides: a stop with a savepoint through Stop, then the new job through
// Submit from that savepoint; a cancel through Stop (CancelWithoutState)
// only once the restore point the policy chose is recorded in
// Progress.Replace.RestoreFrom, or when the policy starts without state
// (Stateless, AllowStartWithoutState); or at once the submission when the
// job is not running. After a stop that did not succeed (the savepoint
// failed, timed out or was lost, the job failed while stopping) it
// observes the job again and asks the policy once more, which retries
// with a new trigger id, falls back, or ends the operation Blocked with
// its reason in Progress.Replace.Decision; the job keeps running then. An Upgrade
// without a Job deploys (FirstDeploy) or redeploys. Restart does the same
// for a failed or lost job under a policy.RestartPolicy
// (policy.EvaluateRestart), from the newest savepoint or retained
// checkpoint within the maximum age, with a new job id recorded before
// the submission. A retained checkpoint counts as a restore point only if
// the job's checkpointing configuration keeps it once the job is
// cancelled (or, for a FAILED job, at all): Flink deletes the others with
// the job (execution.checkpointing.externalized-checkpoint-retention).
// An answer that Flink does not know the job to that configuration read
// is confirmed by its job list first: a job the list shows has its
// configuration read again within the deadline.
//
// A job is cancelled for a retained checkpoint only if it was read
// shortly before (10 s; else the job is observed again: Flink may have
// discarded it since), also when a cancel that did not take is sent
// again. After the cancel the new job starts from the
// newest retained checkpoint of the cancelled job: a newer one that the
// statistics show, else the one recorded before the cancel (a JobManager
// that failed over answers an empty history), never older state, and
// without asking the policy again about an age it already accepted.
//
// A start from a checkpoint is decided only on a reading that shows it
// retained: never on a transient or cached answer. Statistics of a job
// that has not ended whose latest checkpoint Flink shows discarded were
// answered from Flink's cache before its successor completed: the job
// is read again once Timing.Cache has passed; so are statistics, read
// less than Timing.Cache after the Controller saw a checkpoint of the
// job complete (a checkpoint request or a periodic trigger,
// JobStatus.Checkpoint), that do not show it: Flink filled its cache
// before that checkpoint completed. An answer that Flink does
// not know the job (a JobManager failing over) is confirmed by its job
// list, and the job read again if the list shows it; a 503 is read
// again after a backoff; none is taken for "no checkpoint" and none
// makes older state the restore point. With Controller.Storage set, a
// start from a checkpoint (chk-N of <checkpoint dir>/<job id>, complete
// once its _metadata is written) goes from the newest one complete
// there, and one the storage shows gone is no restore point. The latest
// checkpoint an adoption records of a job that retains them is the job's
// newest state only while no later reading is needed: without Storage, a
// start from it that no reading of the action shows retained is not sent
// (the job ran on after the record, and Flink discards a checkpoint once
// the next completes), and once another job is the deployment's it is no
// longer the status's Latest.
//
// # Blue/green upgrades
//
// BlueGreen upgrades a running job on a session cluster without a gap in
// which no version of it runs. It reads the old job (it must be RUNNING;
// otherwise Blocked) and the cluster's free task slots (/overview): a new
// job that would not fit beside the old one ends the operation Blocked,
// saying how many slots are free and needed, instead of a new job stuck
// in CREATED. It looks the new job's id (BlueGreen.JobID, or one derived
// from the old job's id, distinct from Upgrade's) up in Flink's job list
// and adopts a job of that id that runs (a BlueGreen whose Progress was
// lost), takes a savepoint of the old job without stopping it, records
// its location in Progress.Savepoint.Location and Progress.Replace.RestoreFrom, then
// submits the new job from it through Submit (Progress.Submit.NewJobID recorded
// before the jar run). Once the new job runs, it has BlueGreen.Window to
// become healthy: RUNNING with all its tasks running, a checkpoint
// completed after its start, BlueGreen.Ready if set (a check of the
// caller's, such as the source's lag read from the metrics), and its
// state read once more uncached. Only then is Progress.BlueGreen.Healthy recorded
// and the old job stopped: cancelled (its state is in the new job), or,
// with StopOld, stopped with a savepoint kept as a fallback restore point
// (Progress.Savepoint.Location; a failed fallback savepoint falls back to the
// cancel). The operation ends Succeeded with NewJobID the job to adopt.
//
// A new job that fails, or is not healthy by the end of the window, is
// cancelled (confirmed through its terminal state or Flink's job list)
// and the old job is left running, untouched: BlueGreenAborted, with the
// cause in the Reason and NewJobID empty, so a caller never adopts it. A
// savepoint that fails ends the operation before anything is started.
// Only a cancel that times out leaves two jobs (TimedOut, NewJobID set);
// a stop of the old job that timed out is first sent again as a cancel,
// twice at most.
// The window's deadline bounds the wait for Flink, not the caller's
// absence: past it, the new job's health is read once more.
//
// The Controller runs a change of the spec's job as a BlueGreen when
// JobSpec.BlueGreen is enabled (ActionBlueGreen); an aborted one leaves
// the old job running, Reason BlueGreenAborted, and the spec is not
// tried again until it changes. With a Deployer (BlueGreen.Deployer and
// Cluster) the new job runs in a second application cluster beside the
// old one (the free slots of a shared cluster are not checked then), and
// once the old job is stopped its cluster is deleted; an aborted upgrade
// deletes the new cluster instead.
//
// The trade-off: during the overlap both jobs run and both emit output,
// so the sinks must be idempotent or transactional; and the new job
// starts from the savepoint, so it processes again what the old job
// processed after it. The cluster needs room for both jobs at once.
//
// With BlueGreen.Preflight (the Controller passes JobSpec.Preflight)
// the preflight runs before the savepoint: the new job's plan against the
// old job's vertices, and the task slots it needs against the cluster's
// free slots only (both jobs run at once); a refusal ends it Blocked
// (policy.ReasonPreflightRefused), the old job untouched.
//
// # Restore canary
//
// Canary proves, with no downtime, that a new version restores the
// running job's state, before an upgrade stops the job: as BlueGreen it
// checks the preflight and the free slots, takes a savepoint without
// stopping the old job, starts the new version from it beside the old
// one (Progress.Submit.NewJobID recorded before the jar run, an id derived from
// the old job's, distinct from Upgrade's and BlueGreen's, looked up in
// Flink's job list first), and waits until it is healthy; then it
// cancels the canary (Succeeded; the old job never touched). A canary
// that Flink refuses (a restore that fails, such as a changed maximum
// parallelism of a keyed operator, which no plan shows), that fails, or
// that is not healthy within the window is cancelled: CanaryFailed. The
// savepoint it restored stays (the Controller records it in
// JobStatus.Savepoints). With JobSpec.BlueGreen.Canary (and Enabled) the
// Controller runs a change of the spec's job as a Canary (ActionCanary),
// then, once it passed (JobStatus.CanaryPassed), as a regular upgrade
// (stop with savepoint, start from it: the final restore point); a
// failed canary leaves the old job running, Reason CanaryFailed, and the
// spec is not tried again until it changes.
//
// # Restore requests
//
// Upgrade.Restore carries a user's request to start from a savepoint path
// of their choice (policy.RestoreRequest, with a token that changes every
// time they ask). It is recorded in Progress.Replace.Request at the first Step,
// so a caller that restarts mid-way neither loses nor repeats it. A
// running job is first stopped with a savepoint (Progress.Savepoint.Location keeps
// it, so the user can go back); the new job starts from the requested
// path. Once the operation ends, Progress.HandledRestore gives the token
// to record as handled (Upgrade.RestoreHandled, and
// policy.Observations.RestoreHandled), so the request is not carried out
// again; a path Flink cannot restore ends the upgrade SubmitFailed or
// JobFailed with Flink's message, and counts as handled: no retry loop.
//
// # Rescale
//
// Rescale changes a running job's parallelism as policy.DecideRescale
// says: in place on Flink 1.18+ with the adaptive scheduler (it sets the
// job's resource requirements and confirms every vertex reaches the new
// parallelism within its timeout, or ends ParallelismNotReached), and
// otherwise, unless the policy forbids it, through Upgrade with the new
// parallelism, under all of Upgrade's invariants.
//
// With JobSpec.Autoscale enabled (off by default) the Controller samples
// the running job's vertices, one request per Reconcile (the job's plan
// once, each vertex's metric names once, then one vertex's task metrics
// in turn), keeps the samples of the last windows in
// JobStatus.Autoscale, and when policy.RecommendScale recommends another
// parallelism it records it (and the time, from which the cool-down
// counts) and rescales the job through Rescale (ActionAutoscale). The job
// then runs at the autoscaler's parallelism while the spec's
// Job.Parallelism stays what it was; a new one in the spec wins.
//
// # Teardown and redeploy
//
// Teardown stops a job with a savepoint until Timing.Savepoint passes
// (a savepoint that failed or was lost while the job runs on is tried
// again, up to SavepointAttempts in all), records the savepoint in a
// RestorePointStore under the caller's name,
// and then ends: when no savepoint could be taken it cancels the job
// without state only in Stateless mode or with AllowCancelWithoutState,
// and otherwise ends LeftRunning saying why, so a delete never waits
// longer than its deadlines. A job that failed while stopping is
// cancelled once its savepoint is recorded. A job that had already ended
// (FAILED, CANCELED, FINISHED) is named so, and its newest state is
// recorded instead: a savepoint it ended with, or its latest checkpoint
// if Flink retains it (after a failure, with externalized checkpoints;
// after a cancel, unless they are deleted on cancellation; never after
// finishing). Without either, a policy that keeps state ends the
// teardown in OutcomeJobTerminal or OutcomeSavepointLost, whose Reason
// says what could not be found. Progress.Stopped reports such an end: the
// job no longer runs, and tearing it down again cannot bring the state
// back, so a caller deleting the deployment may let it go, with the
// warning. An Upgrade with the same
// Store and Name restores from the stored savepoint if it is within the
// policy's maximum age (it competes with Upgrade.Latest; the newer wins),
// and otherwise does what the policy says (block, or start without
// state).
//
// MemoryStore and FileStore implement RestorePointStore. FileStore keeps
// one JSON file per name, replaced atomically (temporary file, sync,
// rename); both are safe for concurrent use and accept only names made
// of segments of letters, digits, '.', '_' and '-' joined by '/', which
// cannot leave the directory.
//
// # Stored formats
//
// What this package writes for a later release to read carries a format
// version; FormatVersion is the newest this release writes and reads. A
// Progress holds it in Progress.FormatVersion, set by every Step, and
// every Step refuses a newer one with ErrUnknownFormat; so do Reconcile
// and Delete for a JobStatus (and for the savepoint.History and
// policy.HealthHistory it holds), and Validate for a JobSpec. (They are
// checked where they are used, not while decoding: a struct of the
// caller's that embeds one must decode whole.)
// A FileStore file holds the version beside the record
// ({"formatVersion":2,"record":{...}}); a bare record, as releases before
// format versions wrote it, reads as version 1. A file of a newer version
// was written by a later flinkkit: Get refuses it with an error matching
// ErrUnknownFormat that names the format and the version, and never
// returns a record from it. Golden fixtures of every format
// (testdata/golden) hold every release to reading what the earlier ones
// wrote.
//
// # Disposal
//
// DisposeSavepoints disposes of the savepoints savepoint.ChooseDisposals
// picks from a History at the operation's start, one after the other
// through Flink's savepoint disposal, polling each; a disposal whose
// trigger id Flink forgot is sent again, and a savepoint whose files are
// gone counts as disposed of (the Reason names it). Remove the disposed
// ones from the History afterwards (DisposeSavepoints.Chosen).
//
// # Retained checkpoints of replaced jobs
//
// A job that retains its checkpoints on cancellation
// (execution.checkpointing.externalized-checkpoint-retention:
// RETAIN_ON_CANCELLATION) leaves them on storage when an upgrade,
// restart, rollback, rescale by upgrade or blue/green replaces it, and
// Flink has no REST call to delete them. With a Controller.Storage
// (LocalStorage; s3storage, a module of its own, for S3-compatible stores) the
// Controller records each replaced job (JobStatus.Replaced) and, once
// the job that replaced it completed a checkpoint of its own (read from
// the checkpoint statistics it observes anyway) and the deployment is at
// rest, removes the replaced job's chk-N directories under
// <checkpoint dir>/<job id>/, then shared/, taskowned/ and the directory
// when nothing may reference them. The new job's claim mode counts when
// it started from one of them: NO_CLAIM (Flink's default) references
// nothing of the replaced job after its first checkpoint; under CLAIM and
// LEGACY the restored checkpoint and shared/ are never removed. A location
// the status or the spec names (Latest, UpgradeFrom, the savepoint
// history, Restore.Path, the Store's record) is kept with the shared
// files of its job until it is named no more. Nothing is removed while
// an action is in flight; a failed removal is kept as a CleanupError and
// tried again at later calls (at most MaxCleanupAttempts), never holding
// an action up; a removal redone after a crash finds nothing left to do.
//
// Controller.Audit compares what lies on storage with the ledger,
// changing nothing: it lists the deployment's savepoint and checkpoint
// directories through the Storage (at most MaxAuditRequests requests)
// and classifies each entry as an AuditKind (in the history, a restore
// point, a retained checkpoint of the running job or of a replaced one,
// a savepoint of the deployment's job the history lacks, an incomplete
// snapshot, foreign), and each history record not on storage as
// Missing.
//
// # Transitions
//
// Upgrade, Restart, Teardown and DisposeSavepoints report every change of
// phase to an optional OnTransition hook (for example to emit a
// Kubernetes event) and an optional *slog.Logger, with the outcome and
// reason once they end.
//
// # Outcomes and deadlines
//
// Every phase has a deadline (Timing); every operation ends in a named
// Outcome with a Reason, at the latest at the deadline. A deadline bounds
// the wait for Flink, not the caller's absence: a phase whose deadline
// passed while no request of it failed (the caller was away) reads once
// more before it times out, and one that had sent nothing yet counts its
// deadline from its first request. Transient errors
// (503, connection resets) never end an operation early: they are kept in
// Progress.LastError and the step is retried with backoff. An answer that
// Flink does not know a job (404) is confirmed with Flink's job list
// (GET /jobs) in the next step before the job counts as gone: during a
// JobManager failover one such answer can come while the job still runs,
// and acting on it would start a second job or drop a savepoint.
//
// internal/testkit/faultmatrix runs every operation under each fault class and
// 1,000 seeded fault schedules, and 1,000 seeded schedules of a caller
// that crashes, loses answers and stays away up to 10 minutes, and checks
// these rules after every step.
package lifecycle
