// Command runtime shows a Cloudflow-style runtime built on flinkkit: an
// application ("sensors") of two streaming jobs, its streamlets ("ingest"
// and "aggregate"), is deployed, undeployed and deployed again, each
// streamlet addressed by the name "application/streamlet".
//
// Undeploying stops each job with a savepoint and records it in a
// restore-point store under the streamlet's name (lifecycle.Teardown with
// Store and Name); the store, a lifecycle.FileStore with one JSON file per
// name, outlives the jobs. Deploying again starts each job from the
// savepoint recorded under its own name, if the policy.UpdatePolicy finds it
// young enough (lifecycle.Upgrade with Store and Name and no Job); a
// streamlet never deployed before starts without state (FirstDeploy). Each
// line shows what Flink reports the new job was restored from and how the
// counts of the test job carry on.
//
// # Running it
//
// With no flags it runs against flinkkit's fake JobManager (package
// flinktest) in real time, in about ten seconds:
//
//	go run ./examples/runtime
//
// Against a real Flink session cluster (1.17 or later, with two free task
// slots and a default savepoint directory or --savepoint-dir) it runs
// flinkkit's test job:
//
//	go run ./examples/runtime --flink-url http://localhost:8081 \
//		--jar .cache/flink/1.20.5/flinkkit-testjob.jar --state-dir /tmp/restore-points
//
// --help lists the flags.
package main
