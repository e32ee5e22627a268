// Command runtime shows a Cloudflow-style runtime built on flinkkit: an
// application ("sensors") of two streaming jobs, its streamlets ("ingest"
// and "aggregate"), is deployed, undeployed and deployed again, each
// streamlet addressed by the name "application/streamlet".
//
// The runtime is a thin shell around lifecycle.Controller. Each streamlet
// is a lifecycle.JobSpec, fixed when its deployment begins; the spec and
// its lifecycle.JobStatus are kept in a JSON file of their own
// (StreamletState), written atomically (temporary file, sync, rename) after
// every call of the Controller and before the next, and read before each
// deploy and undeploy:
//
//   - deploy is Reconcile until the job runs the spec stably;
//   - undeploy is Delete until it is done: the job stops with a final
//     savepoint, which the Controller records in a lifecycle.FileStore
//     under the streamlet's name;
//   - redeploy is Reconcile from a fresh status: the Controller finds the
//     savepoint recorded under the name and starts the job from it, if the
//     policy.UpdatePolicy finds it young enough; a streamlet never deployed
//     before starts without state.
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
// the streamlets' statuses (streamlets/<application>~<streamlet>.json) and,
// while a run is unfinished, its next step (demo.json). --help lists the
// flags.
package main
