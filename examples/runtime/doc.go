// Command runtime shows a Cloudflow-style runtime built on flinkkit: an
// application ("sensors") of two streaming jobs, its streamlets ("ingest"
// and "aggregate"), is deployed, upgraded to a new version and removed,
// each streamlet a fleet.Deployment named "application/streamlet".
//
// The runtime is wiring around fleet.Runner: a fleet.DirStore keeps each
// streamlet's fleet.Record (its spec, the spec its job last ran under, its
// lifecycle.JobStatus), Runner.Run keeps the streamlets as their specs say,
// and each step is one Runner.Sync of the application as it should be:
//
//   - deploy: version 1 of each streamlet's job, started without state (or
//     from the savepoint an earlier run's removal recorded under its name);
//   - upgrade: version 2, each job stopped with a savepoint and its new
//     version started from it, its counts carrying on;
//   - remove: the application gone, each job stopped with a final
//     savepoint, recorded in a lifecycle.FileStore under the streamlet's
//     name, and its record deleted.
//
// The records outlive the runtime: stopped at any point (Ctrl-C, a crash)
// and started again on the same --state-dir, it carries on with the step
// its records show, the same stop or the same submitted job, and never
// starts a second job of a version.
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
// flinkkit's test job:
//
//	go run ./examples/runtime --flink-url http://localhost:8081 \
//		--jar .cache/flink/1.20.5/flinkkit-testjob.jar --state-dir /tmp/runtime-state
//
// --state-dir holds the restore points (<application>~<streamlet>.json) and
// the records (streamlets/<application>~<streamlet>.json); --metrics FILE
// gets the Runner's metrics (Runner.WriteMetrics) after each step. --help
// lists the flags.
package main
