// Command runtime shows a Cloudflow-style runtime built on flinkkit: an
// application ("sensors") of two streaming jobs, its streamlets ("ingest"
// and "aggregate"), is deployed, undeployed and deployed again, each
// streamlet addressed by the name "application/streamlet".
//
// The runtime is a small program on fleet.Runner. Each streamlet is a
// fleet.Deployment of the application, its lifecycle.JobSpec fixed when
// its deployment begins; the Runner keeps its fleet.Record (the spec, the
// spec its job last ran under, the lifecycle.JobStatus) in a
// fleet.DirStore, stored after every call of the streamlet's
// lifecycle.Controller:
//
//   - deploy syncs the application's deployments into the fleet and does
//     passes (Runner.Pass: Reconcile) until each job runs its spec stably;
//   - undeploy syncs the fleet without them and does passes until the
//     Runner has torn each down (Controller.Delete: the job stops with a
//     final savepoint, recorded in a lifecycle.FileStore under the
//     streamlet's name) and deleted its record;
//   - redeploy is a new record: the Controller finds the savepoint
//     recorded under the name and starts the job from it, if the
//     policy.UpdatePolicy finds it young enough; a streamlet never
//     deployed before starts without state.
//
// The store outlives the jobs, and the status files outlive the runtime: a
// runtime stopped at any point (Ctrl-C, a crash) and started again on the
// same --state-dir carries on where it stopped, with the same stop or the
// same submitted job, and never starts a second job of a deployment. Each
// line shows what Flink reports the new job was restored from and how the
// counts of the test job carry on.
//
// # Running it
//
// With no flags it runs against flinkkit's fake JobManager (package
// flinktest) in real time, in about fifteen seconds:
//
//	go run ./examples/runtime
//
// Against a real Flink session cluster (1.17 or later, with two free task
// slots and a default savepoint directory or --savepoint-dir) it runs
// flinkkit's test job; interrupted and run again with the same
// --state-dir, it carries on:
//
//	go run ./examples/runtime --flink-url http://localhost:8081 \
//		--jar .cache/flink/1.20.5/flinkkit-testjob.jar --state-dir /tmp/runtime-state
//
// --state-dir holds the restore points (<application>~<streamlet>.json),
// the fleet's records (streamlets/<application>~<streamlet>.json) and the
// run's next step with the number of the application's last deployment
// (demo.json). --help lists the
// flags.
package main
