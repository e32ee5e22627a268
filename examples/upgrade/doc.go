// Command upgrade keeps one Flink job as its spec says with flinkkit's job
// controller, lifecycle.Controller, one line per phase. Each phase changes
// the job's lifecycle.JobSpec (or, for the failure, the job itself) and
// runs the controller until the job runs as the spec says
// (Controller.Converge), the job's lifecycle.JobStatus saved after every
// call to a lifecycle.StatusFile:
//
//  1. deploy: a spec with the job (flinkkit's test job, counter-v1), an
//     update policy in Savepoint mode and a restart policy from the
//     latest state;
//  2. savepoint: the spec asks for a periodic savepoint
//     (JobSpec.Savepoints.Interval), which the controller takes once it
//     is due;
//  3. upgrade: new arguments (counter-v2); Controller.Plan says what the
//     controller will do, which then stops the job with a savepoint and
//     starts the new version from it; Flink's checkpoint statistics show
//     the new job restored from it, and its counts continue;
//  4. fail and restart: the job fails, and the controller restarts it
//     under the restart policy from its newest state, the retained
//     checkpoint or savepoint within the maximum age;
//  5. delete: Controller.Delete stops it with a final savepoint, kept in a
//     lifecycle.FileStore under the job's name, from which a job deployed
//     later under that name would start.
//
// Each line shows what the status says: the job's Situation, the last
// action and its outcome, and the restore point. A waiting phase shows its
// progress (the status's message after every call) on one line rewritten
// in place on a terminal, and as plain indented lines when the output is a
// file or a pipe. The single operations the controller is built from
// (lifecycle.Submit, Upgrade, Restart, Teardown, ...) are shown on their
// own by examples/operations.
//
// # Running it
//
// With no flags it starts flinkkit's fake JobManager (package flinktest)
// in real time inside the process, needs nothing else, and finishes in
// about fifteen seconds:
//
//	go run ./examples/upgrade
//
// There, the job is made to fail by the fake's Server.FailJob. Against a
// real Flink session cluster (1.17 or later, with a default savepoint
// directory or --savepoint-dir, and a free task slot), it runs flinkkit's
// test job, whose upgraded version is started with --fail-at and
// --fail-once so that it fails by itself, once: the restarted job, which
// runs the same spec, counts on past the failure:
//
//	scripts/flink.sh 1.20.5 # builds .cache/flink/1.20.5/flinkkit-testjob.jar
//	go run ./examples/upgrade --flink-url http://localhost:8081 \
//		--jar .cache/flink/1.20.5/flinkkit-testjob.jar
//
// The status file (counter.json) and the restore-point store
// (restore-points/) are in a new temporary folder, or in --state-dir. The
// jobs write their counts to one folder per version under --out (a new
// folder for each run on a real cluster: --fail-once fails once per
// folder). A wrong URL, a cluster that does not answer or a missing jar
// ends with one line on stderr and exit code 1; a wrong flag with exit
// code 2. --help lists the flags.
package main
