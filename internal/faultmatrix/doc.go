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
// Upgrade by the stored name with no job) and DisposeSavepoints. The fault
// classes (Classes) are error answers (404, 409, 500, 503 with the leader
// election message, before or after the request took effect), connection
// resets (with and without the request taking effect), latency,
// JobManager restarts with and without high availability and with jobs
// lost, savepoints that fail with a cause, and jobs that fail during a
// savepoint, while stopping, or at a given step.
//
// TestMatrix runs every operation under every fault class; TestSchedules
// runs randomised schedules (Generate) drawn from the seeds 1 to
// -schedules (default 1000): one to four faults at random routes, steps
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
//   - No location dropped: Progress.Location is never cleared or replaced
//     by older state, names a savepoint on the fake's disk and matches
//     Record; a savepoint that the operation's triggers completed is known
//     at the end unless a JobManager restart made Flink forget it.
//   - No restore from state older than the policy's maximum age, measured
//     when the restore point was chosen; every restore path was recorded
//     in Progress.RestoreFrom first.
//   - No duplicate job: never two running jobs of one deployment, jar runs
//     only with the job id recorded before, operations that start no job
//     start none.
//   - Nothing stuck: a bounded number of steps, a step at or past its
//     phase's deadline ends the phase, every phase has a deadline, and
//     the run ends within the sum of its deadlines (plus injected latency).
//   - Idempotent triggers: every trigger carries the trigger id stored
//     before it, and only a failure earns a new one.
//
// # Reproducing a failure
//
// A failing schedule prints its description, the broken invariants, the
// requests it sent and a command that runs only it:
//
//	go test ./internal/faultmatrix -run TestSchedules -seed=1234 -v
//	go test ./internal/faultmatrix -run 'TestMatrix/cells/404_x2/upgrade$' -v
//
// -schedules=N changes the number of generated schedules.
//
// # Real Flink
//
// Faults cannot be injected into a real cluster, but some of what the
// matrix found happens there without any: TestRealClusterFindings (build
// tag integration) upgrades a job in LastState mode while its observed
// checkpoint is subsumed before the cancel, and stops and replaces a job
// Flink does not know, on the cluster of FLINK_VERSION:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealClusterFindings ./internal/faultmatrix/
//
// # The README table
//
// TestMatrix renders the outcome of every cell (Table.Markdown) and fails
// when the table between the fault-matrix markers of the repository's
// README.md differs; -update writes it there:
//
//	go test ./internal/faultmatrix -run TestMatrix -update
package faultmatrix
