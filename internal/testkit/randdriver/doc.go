// Package randdriver drives lifecycle.Controller with seeded random
// schedules against the fake JobManager of package flinktest, and counts
// the invariants of the controller it sees broken, by class.
//
// A run starts a fake session cluster on a manual clock (one of
// Versions, 2 or 4 slots), writes the
// counter job's jar, draws a first JobSpec (update mode, restart policy,
// periodic savepoints and their retention, checkpointing on or off,
// retained checkpoints, blue/green, rollback), in one run of eight
// adopts a job a user started through the REST API, and then 50 to 200
// events:
//
//   - a call of Reconcile, or of Delete once the schedule deletes, whose
//     status the caller stores as JSON, and waits what it asked (at most
//     30s); two runs in five are calm: most disturbances below turn
//     into calls, so that slow conditions show;
//   - spec changes: new arguments (an upgrade), a new parallelism (a
//     rescale, or one above the cluster's slots), a new update mode while
//     an action is in flight, suspend and resume, a restore request to an
//     older savepoint or to a path that names none, blue/green on or off,
//     a jar rebuilt at the same path (followed, half of the time, by a
//     rollback request), delete, a delete under OnDelete Detach, and a
//     re-creation under the same name with the stored status or a fresh
//     one, which may adopt (JobSpec.Adopt) the detached job or a job a
//     user started through the REST API, with retained checkpoints or
//     without; one-shot requests (JobSpec.Requests: savepoint,
//     checkpoint, restart, rollback); a new retention (MaxCount or
//     MaxAge, DisposeUpdate, DisposeUser, DisposeOnDelete); the caller
//     importing a savepoint on disk into its stored status
//     (JobStatus.ImportSavepoint);
//   - a crash during the next call or a refused status write: the call's
//     requests reach Flink, its status is not stored;
//   - absences of the caller of up to 10 minutes;
//   - faults (flinktest.Inject): 503s, answers dropped after the request
//     took effect, 404s on checkpoint routes, JobManager restarts with or
//     without high availability, savepoints that fail, jobs that fail
//     during a savepoint or while stopping, disposals that fail (the
//     storage refuses, 503s on the disposal routes, a disposal whose
//     answer is lost);
//   - users acting on Flink: a stop with a savepoint from the Flink UI, a
//     cancel, a job failure (one in three followed by a spec change that
//     reaches the controller with the job down), a JobManager restart, a
//     cancel of a job
//     that is not the deployment's (a detached one, one a user started).
//
// After every call the checks compare the stored status with what the
// fake knows (its jobs, its request log, the savepoints and checkpoints
// on its disk with the times of their state) and record a violation of a
// Class. At the end of a run the driver calls until no action is in
// flight and checks the savepoint ledger, then hands forged stored
// statuses to the controller. Everything runs on the fake's clock and one goroutine, so a
// seed always gives the same run.
//
//	res, err := randdriver.Run(ctx, 42)
//	for _, c := range randdriver.Classes {
//		fmt.Println(c, res.Count(c))
//	}
//
// # Running
//
// TestRandomDriver runs the seeds 1 to 100 (FLINKKIT_FULL=1: 1,000;
// FLINKKIT_RANDOM_RUNS=n: n), logs the count of each class and the first
// seed that broke it, and fails when a count is not zero;
// FLINKKIT_RANDOM_REPORT=1 only reports, and FLINKKIT_RANDOM_OUT=file
// writes the table to file. A count is of distinct violations: one per
// job started, action, delete, savepoint or probe that broke the class,
// not one per call that saw it. FLINKKIT_RANDOM_TRACE=1 logs every run's trace, for
// reading one seed:
//
//	FLINKKIT_RANDOM_TRACE=1 go test ./internal/testkit/randdriver -run 'TestRandomDriver/seed=7$' -v
//
// # What the checks see
//
// The checks use the controller's public surface (JobSpec, JobStatus,
// Reconcile, Delete, Converged, the restore-point store) and the fake's:
// Jobs, Snapshots (trigger ids and state times), Requests. A restore
// point counts as known when it exists on the fake's disk, completed
// after the last deliberate restore (a restore request, a rollback, a
// stateless start), and belongs to a job that ended and that Flink still
// knows, or the status or the store names it.
//
// Jobs a user started (not adopted yet) and detached jobs are not the
// deployment's: they count for no live-job check. A savepoint is the
// ledger's when the controller triggered it (its trigger id), Flink
// could show it to the controller (a request about its job was answered
// after it completed, before a JobManager restart forgot it), and the
// caller did not drop the status since (a fresh one after a Delete).
// Tasks running come from the fake's JobInfo.TasksRunning, checkpoints
// completed by a job from its snapshots since its jar run; the build a
// jar holds from the jar file's content when it was uploaded.
//
// Package randdriver is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package randdriver
