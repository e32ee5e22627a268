// Package faultmatrix attacks package lifecycle with faults: it drives
// every lifecycle operation against the fake JobManager of package
// flinktest under injected faults, and checks the invariants of the design
// (no state lost, no savepoint location dropped, no restore from state
// older than the policy allows, no duplicate job, nothing stuck past its
// deadline, resumable from the stored Progress) after every step and at
// the end of every run.
//
// # What runs
//
// The operations (Ops) are TakeSavepoint, Stop with each strategy,
// Upgrade in Savepoint and LastState mode, Restart of a failed job,
// Submit, Teardown, a redeploy (Teardown into a RestorePointStore, then
// Upgrade by the stored name with no job), DisposeSavepoints and a
// blue/green upgrade (BlueGreen). The fault
// classes (Classes) are error answers (404, 409, 500, 503 with the leader
// election message, before or after the request took effect), connection
// resets (with and without the request taking effect), latency,
// JobManager restarts with and without high availability and with jobs
// lost, savepoints that fail with a cause, and jobs that fail during a
// savepoint, while stopping, or at a given step.
//
// TestMatrix runs every operation under every fault class; TestSchedules
// runs randomised schedules (Generate) drawn from the seeds 1 to
// -schedules (250; 1000 with FLINKKIT_FULL=1): one to four faults at random routes, steps
// and times, on Flink versions 1.18, 1.20 and 2.3. Each schedule runs
// twice: uninterrupted, and with the Progress sent through JSON and a
// fresh operation built after every step; both runs must keep the
// invariants and agree (outcome, requests, faults hit). The fake runs on
// its manual clock: nothing sleeps.
//
// # The invariants checked
//
//   - No state lost: a cancel of a stateful job is sent only when the
//     Progress stored before the step records a restore point, a job that
//     ends CANCELED has one, and a new job of a stateful policy starts
//     from state.
//   - No location dropped: Progress.Savepoint.Location is never cleared or replaced
//     by older state, names a savepoint on the fake's disk and matches
//     Record; a savepoint that the operation's triggers completed is known
//     at the end unless a JobManager restart made Flink forget it.
//   - No restore from state older than the policy's maximum age, measured
//     when the restore point was chosen; every restore path was recorded
//     in Progress.Replace.RestoreFrom first.
//   - No duplicate job: never two running jobs of one deployment, jar runs
//     only with the job id recorded before, operations that start no job
//     start none.
//   - Nothing stuck: a bounded number of steps, a step at or past its
//     phase's deadline ends the phase, every phase has a deadline, and
//     the run ends within the sum of its deadlines (plus injected latency).
//   - Idempotent triggers: every trigger carries the trigger id stored
//     before it, and only a failure earns a new one.
//   - The blue/green window (invariant 7): at most two live jobs, two
//     only while the operation runs (or after it timed out saying so);
//     the old job is never cancelled or stopped before the stored
//     Progress records the new one healthy; the new job is submitted
//     only from the savepoint the stored Progress recorded; never a
//     second new job (a third job), also after crash-and-resume; both
//     never run longer than the submission, the window and the stops
//     allow (plus the caller's absence).
//
// # Reproducing a failure
//
// A failing schedule prints its description, the broken invariants, the
// requests it sent and a command that runs only it:
//
//	go test ./internal/testkit/faultmatrix -run TestSchedules -seed=1234 -v
//	go test ./internal/testkit/faultmatrix -run 'TestMatrix/cells/404_x2/upgrade$' -v
//
// -schedules=N changes the number of generated schedules.
//
// # The job controller
//
// TestControllerMatrix carries out every spec change (Changes: create,
// update, suspend, resume, delete, rescale, restore request) with
// lifecycle.Controller from a converged status, under every fault class
// of Classes, aimed at the routes of the operation the change's action is
// built from, and two long absences of the caller (ControllerClasses): an
// answer lost with the caller away 6 minutes, past Flink's async store
// duration, and a crash mid-action with 6 minutes away and one failed
// read after. Each cell runs uninterrupted and with the status sent
// through JSON into a fresh JobStatus and a fresh Controller after every
// call; both keep the invariants and agree (outcome, requests). Then the
// cell runs again once per crash point of its uninterrupted run and way of
// crashing (CrashPoints): at every call that changed the cluster or
// recorded an id or restore point, the caller crashes losing the call's
// answer; after every call that changed the cluster it also crashes with
// its status stored, stays away 6 minutes, and its first request after
// fails once (-controller-all-crashes: both ways at every call that moved
// the change on). By default one decisive call in two is a crash point,
// the first included; FLINKKIT_FULL=1 crashes at every one.
// TestControllerSchedules adds -controller-seeds (60; 250 with
// FLINKKIT_FULL=1)
// generated scenarios (GenerateController): one to four faults and, in
// half of them, a crash with up to 10 minutes away.
//
// After them come the rows of the attacks of ordinary use
// (attackClasses, Attack), each on the spec changes it applies to (the
// other cells stay empty), on the session cluster only: the job stopped
// with a savepoint through the REST API by someone else; a restore
// request naming a path that does not exist; a JobManager failover (HA)
// answering the cancel of a last-state upgrade; the update mode changed
// from LastState to Savepoint after the action's first change of the
// cluster; the status of a finished Delete reconciled again; a job with
// --checkpoint-interval 0; a parallelism above the fake's task slots; and
// the jar rewritten at its path with other content. Each checks what
// matters after it (see the Attack constants): never Converged while the
// job has ended (checked in every row), a job after an external stop
// started from its savepoint or newer, a refused path never the status's
// latest state, a job again from the state a Delete kept, NotEnoughSlots
// reported, the new upload running; and that its attack was made. A cell
// a known controller bug breaks is not run and says "known bug" with the
// bug's name (knownCells); TestControllerKnownBugs -known-bugs
// reproduces it.
//
// Checked after every call: at most lifecycle.MaxRequestsPerCall
// requests; a trigger or jar run only with the ids the status stored
// before the call recorded, a job started only from the restore point
// recorded before, and never without state while a savepoint or retained
// checkpoint within the restart policy's maximum age exists; a cancel of
// the stateful job only with a restore point recorded; the savepoint
// history within lifecycle.MaxStoredSavepoints, and every savepoint on
// storage in it (the retention change); never two live jobs; a
// Reason always set, a requeue asked for and honoured on the fake's clock.
// At the end: the spec converged (status.Converged) or the delete is done,
// or the change ended named, not in flight, with a Reason its retry ends
// with again (or after ControllerHorizon); every action ends within its
// deadlines and ControllerMaxCalls calls; a job stopped or cancelled left
// a restore point the status or the store names. TestControllerRequests
// logs the requests per call during actions and per poll at rest
// (CONTROLLER REQUESTS); TestControllerRegressions runs the reproductions
// of the controller bugs the suite found and lifecycle fixed, and
// TestControllerKnownBugs those not fixed yet (none now), with
// -known-bugs.
//
// Every cell runs again in application clusters (subtests app-cells):
// the Controller is given the fake Deployer of package appfake and no
// Env.Client, each job runs in a cluster of its own on the same fake, whose
// endpoints the faults reach too; the crash points there are the calls
// that changed the cluster (-controller-app-decisive: every decisive
// call), and the seeds 1 to -controller-app-seeds (60) of
// TestControllerSchedules run there too (app-seeds). Checked after every
// call besides: at most one application cluster runs, two while an
// upgrade, rescale, restart or rollback is in flight; the status's
// Cluster exists while the job it names runs; a call never deletes a
// cluster whose job runs while the status still names it. At the end,
// exactly the status's cluster runs (none after a delete or suspend).
// Their totals are logged in lines starting CONTROLLER MATRIX
// (application clusters).
//
// A failing run prints its scenario, the broken invariants, its requests
// and the command that runs only it:
//
//	go test ./internal/testkit/faultmatrix -run 'TestControllerMatrix/cells/503_x4/update$' -v
//	go test ./internal/testkit/faultmatrix -run 'TestControllerMatrix/app-cells/reset_x2/update$' -v
//	go test ./internal/testkit/faultmatrix -run 'TestControllerMatrix/cells/reset_x2/delete$' -controller-crash=lost@6 -v
//	go test ./internal/testkit/faultmatrix -run 'TestControllerSchedules/seeds/17$' -controller-seed=17 -v
//
// CONTROLLER_TRACE=1 prints every call that moves the change on.
//
// # Real Flink
//
// Faults cannot be injected into a real cluster, but some of what the
// matrix found happens there without any: TestRealClusterFindings (build
// tag integration) upgrades a job in LastState mode while its observed
// checkpoint is subsumed before the cancel, and stops and replaces a job
// Flink does not know, on the cluster of FLINK_VERSION:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealClusterFindings ./internal/testkit/faultmatrix/
//
// # The tables of docs/guarantees.md
//
// TestMatrix renders the outcome of every cell (Table.Markdown) and fails
// when the table between the fault-matrix markers of the repository's
// docs/guarantees.md differs; TestControllerMatrix does the same with the
// controller tables between the controller-matrix and
// controller-matrix-app markers; -update writes them there:
//
//	go test ./internal/testkit/faultmatrix -run 'TestMatrix|TestControllerMatrix' -update
//
// Package faultmatrix is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package faultmatrix
