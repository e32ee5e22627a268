// Package flinktest is a fake Apache Flink JobManager for tests: an
// in-process HTTP server (net/http/httptest) that speaks the REST API of
// a Flink session cluster with the answers, status codes and error bodies
// of a real one, runs a simulated job on a clock the test controls, and
// injects faults on demand.
//
//	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
//	defer srv.Close()
//	c, _ := flinkapi.NewClient(srv.URL)
//	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
//	id := flinkapi.NewJobID()
//	_, _ = c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: []string{"--out", "/out"}})
//	srv.Clock().Advance(5 * time.Second) // the job runs and checkpoints
//	op, _ := c.TriggerSavepoint(ctx, id, flinkapi.SavepointRequest{})
//	srv.Clock().Advance(time.Second) // the savepoint completes
//	res, _ := c.OperationStatus(ctx, op)
//
// # The cluster
//
// The fake is a session cluster with one TaskManager (WithSlots slots)
// and web submission enabled. It serves every route flinkapi.Client calls:
// /config, /overview, /taskmanagers, DELETE /cluster, the /jars routes,
// /jobs, /jobs/overview, /jobs/:jobid (GET, PATCH), its /status,
// /exceptions, /metrics, /execution-result, /accumulators,
// /resource-requirements, /rescaling, /checkpoints (statistics,
// config, details, trigger and status), /savepoints, /stop and
// /savepoint-disposal, and as Flink 2.3 (WithVersion) the applications:
// /applications/overview, /applications/:applicationid, its /cancel, and
// POST /jars/:jarid/run-application, which starts the job inside an
// application of its own and answers 202 at once (every jar run of 2.3 is
// an application too, "SingleJobApplication(<job name>)" with the job's
// id; an application's state follows its job's), and the rescale history
// (WithRescaleHistory): /jobs/:jobid/rescales/history and
// /rescales/details/:rescaleuuid (not its /overview, /summary and
// /config); also under the /v1 prefix. Unknown routes answer as
// Flink does: 404 "Unable to load requested file <path>." for GET,
// "Not found: <path>" for other methods.
//
// # Application clusters
//
// Server.Application gives one job of the server a JobManager endpoint of
// its own, as an application cluster has: its job lists show only that
// job, a request about another job is answered as for a job Flink does
// not know, and with shutdownOnFinish (Flink's default) it stops
// answering once its job ended, as an application cluster's JobManager
// exits. Faults, the clock and JobManager restarts of the server apply to
// it, and its savepoints lie on the server's one disk, so jobs of several
// application clusters restore from each other's savepoints. A test's
// Deployer runs the job on the server (a jar run with the job id and the
// restore path) and hands out the Application's URL.
//
// # Versions
//
// WithVersion picks the Flink release the fake plays, 1.15 to 2.x. Routes
// appear with their release (/jobs/:jobid/status 1.16, checkpoint triggers
// 1.17, resource requirements 1.18); 1.15 to 1.19 reject request fields
// they do not know with 400 "Request did not match expected format
// <Body>." (claimMode before 1.20, flinkConfiguration before 1.17) while
// later versions ignore them; 2.x drops the jar run's programArgs string
// and the legacy fields of /exceptions, and adds its own fields to job
// details and overviews.
//
// # The job
//
// Every job runs a simulation of flinkkit's test job (CounterJobClass,
// internal/testkit/testjob), configured by its program arguments: --out, --keys,
// --rate, --parallelism, --checkpoint-interval (milliseconds),
// --fail-at, --fail-once (true: a counter started after a failure at
// --fail-at of a job with the same --out does not fail), --restart-attempts,
// --restart-delay, --snapshot-delay (milliseconds every checkpoint and
// savepoint takes longer, as in the test job), --records (a bounded job: it ends FINISHED after that many
// events), --record-delay (accepted and checked; the load the
// vertices report is what SetVertexMetrics sets), --uid-suffix (appended
// to the counter's uid, which gives its vertex the id Flink derives from
// the new uid), --max-parallelism (the counter's, shown in the job's
// details; no plan shows it: a job restored from a snapshot of the
// counter, of the same uid, taken with another maximum fails to start,
// as in Flink; one without the flag takes the snapshot's), --label (named
// at the end of a --fail-at failure's message) and --name. The jar plan
// (POST /jars/:jarid/plan) answers the plan these arguments give without
// running the job, and a program error or a missing jar as Flink does
// (500 with the trace). A source emits
// key-0, key-1, ... round robin at --rate events per second and a keyed
// counter counts them. The count of events processed is the job's state:
// checkpoints and savepoints record it, a job run from a savepoint path
// continues from it, and a restart after a failure goes back to the latest
// checkpoint. Server.Job reports a job's counts and the savepoint it was
// restored from; Server.ReadCounts reads what the job's <out>/<key>.count
// files would hold. The counter's accumulator "events" (a LongCounter:
// the events of the current attempt) shows in /accumulators once it
// counted one, and in the execution result once the job ended,
// serialized opaquely (not Java serialization).
//
// A job goes INITIALIZING, CREATED (until it gets slots), RUNNING, and its
// tasks deploy a little later; only then do checkpoints, savepoints and
// the counter run. Periodic checkpoints appear in the statistics with ids,
// trigger times, external paths under the checkpoint directory, and the
// subsumed ones marked discarded. Savepoints and stops take
// WithSavepointDuration; a stop freezes the source when triggered and ends
// the job FINISHED when its savepoint completes. Cancelling goes through
// CANCELLING to CANCELED. A job reaching --fail-at, or failed by FailJob
// or a fault, restarts or ends FAILED with Flink's exception history.
// Running a jar with a job id in use answers 400 "Could not execute
// application." caused by DuplicateJobSubmissionException (1.x) or
// DuplicateApplicationSubmissionException (2.x); a savepoint path that
// names no savepoint answers 400 and leaves the job FAILED.
//
// # Asynchronous operations
//
// Triggers answer 202 with a request id (disposal 200). A client trigger
// id already known for the job starts nothing new and returns the same
// operation, also when it failed; savepoints and stops share one cache,
// checkpoints have their own. A savepoint of an unknown or ended job is
// acknowledged and completes with CompletionException:
// FlinkJobNotFoundException. Results are kept WithStoreDuration after they
// complete, then their trigger ids answer 404 "There is no savepoint
// operation with triggerId=...".
//
// # Time
//
// By default the server runs on a manual Clock that moves only when the
// test advances it (Server.Clock().Advance): nothing happens by itself and
// no test needs to sleep. WithClock shares a clock between servers;
// WithAutoAdvance moves it on every request, for clients that poll with
// real sleeps such as flinkapi.Waiter; WithRealTime follows the wall clock
// for demos. Like Flink with its default web.refresh-interval, the fake
// caches job details, exceptions, checkpoint configuration and checkpoint
// statistics for 3 seconds (WithRefreshInterval).
//
// # Faults
//
// Inject adds faults, limited to a route (Fault.Route, in Flink's
// notation "POST /jobs/:jobid/savepoints") and a job, to N hits
// (Fault.Times), or to a share of the matching requests drawn from the
// seeded random source (Fault.Probability, WithSeed): error statuses with
// Flink's bodies (503 is the leader election answer), connection resets,
// latency, JobManager restarts (before or After the request takes effect),
// savepoints that fail, jobs that fail during a savepoint or while
// stopping. RestartJobManager restarts the JobManager directly: trigger ids
// are forgotten, and jobs too unless RestartOptions.HA, which recovers
// running jobs from their latest checkpoint (RestartOptions.Lose drops some
// of them); that checkpoint stays the job's own, subsumed by its next one
// and discarded when the job ends without retention, while a snapshot a
// job was submitted with (restore mode NO_CLAIM) is never discarded. Requests returns the request log, with the status answered and
// the fault injected, for assertions; Snapshots lists the savepoints and
// checkpoints completed on the simulated disk, with the trigger id that
// took each savepoint and the time of its state. An injected 404 on an
// operation's status route answers as Flink does for an unknown trigger
// id ("There is no savepoint operation with triggerId=...").
//
// # JobManager failover on Flink 2.3
//
// What a Flink 2.3 session cluster with high availability does after a
// JobManager failover (FLIP-549, FLIP-560; read in Flink's
// SessionDispatcherLeaderProcess, PackagedProgramApplication and the
// 2.3 release notes), and what the fake does of it:
//   - The new leader reads the ExecutionPlanStore and the JobResultStore:
//     every job whose plan is stored and that has no result (not
//     globally terminal) is recovered with its job id, from its latest
//     completed checkpoint. Jobs that were running keep their ids.
//   - It then reads the ApplicationStore and the ApplicationResultStore:
//     every application stored without a result (not FINISHED, FAILED or
//     CANCELED) is recovered with its id and executed again. A
//     run-application (PackagedProgramApplication) runs its main method
//     again; a job it submits whose name matches a recovered job is that
//     job (same id, no new submission), otherwise it is a new submission,
//     restored from the request's savepoint, with the request's fixed job
//     id or a new one. The application is stored before the 202 answer
//     and the program runs after it, so a failover right after the submit
//     re-executes an application whose job may not exist yet: Flink then
//     submits it itself. A jar run (/jars/:jarid/run) is a
//     SingleJobApplication whose id is its job's: it is recovered with
//     that job, and does not run main again.
//   - Meanwhile requests are refused (connection reset); afterwards the
//     recovered and re-executed jobs are listed, INITIALIZING then
//     RUNNING, and the applications RUNNING; trigger ids are gone.
//
// The fake does this on RestartJobManager and FaultRestart with
// RestartOptions.HA for Flink 2.3+. A client that submits again what Flink
// re-executed (a jar run with a new job id, a run-application with a new
// application id) makes a second live job of the same deployment;
// JobInfo.Application tells which application each job belongs to. A
// submission with the fixed ids Flink already uses is refused as a
// duplicate, as Flink refuses it.
//
// # Limits
//
// The fake models the REST API and the life of one kind of job, not Flink:
//   - Every job is the counter job; no user code runs. A jar's entry class
//     must be in its manifest or among its class files; the program
//     arguments of CounterJobClass are checked as the test job checks
//     them, those of other classes are read leniently.
//   - One TaskManager, no task-level REST routes (subtasks, vertices,
//     metrics, backpressure, flame graphs, logs); of the job metrics only
//     numRestarts (GET /jobs/:jobid/metrics), no job submission by
//     JobGraph (POST /jobs), no dataset routes, no history server.
//   - Checkpoint sizes, durations and metrics are fixed made-up numbers;
//     statistics summaries are computed over the history only.
//   - The adaptive scheduler (WithAdaptiveScheduler) rescales a RUNNING
//     job at once when its parallelism bounds change, to the lowest upper
//     bound its free slots allow, without restarting its tasks and without
//     Flink's cooldown; a job that is not RUNNING keeps its parallelism.
//     With WithRescaleHistory the job's history records its first
//     schedule and each such change of parallelism, completed at the
//     instant it began (a downtime of 0); restarts after failures, and
//     changes of bounds that leave the parallelism as it is, are not
//     recorded. The details leave the slot sharing groups empty.
//   - Savepoints and checkpoints live on a simulated disk, not in files;
//     ReadCounts and SavepointExists read that disk. The
//     "serialized-throwable" of failure causes is not Java serialization.
//   - Jar runs do not take their options from query parameters, and
//     restore modes (CLAIM, NO_CLAIM) do not change what happens to the
//     restored snapshot.
//   - Timings (initialisation, deployment, cancellation, checkpoint
//     duration) are fixed; a failed restore fails the job at once.
//   - Concurrent savepoints and stops complete independently. Flink 1.20
//     was seen leaving a draining stop in progress for good when a
//     savepoint was triggered while it ran; the fake does not do that.
package flinktest
