// Command operations shows the single operations of package lifecycle,
// each called on its own, on the lifecycle of one Flink job, one line per
// phase:
//
//  1. submit the job with a job id chosen and recorded first (lifecycle.Submit);
//  2. take a periodic savepoint once savepoint.Due says it is due
//     (lifecycle.TakeSavepoint);
//  3. upgrade the job under a policy.UpdatePolicy in Savepoint mode: stop
//     it with a savepoint and start the new version from it
//     (lifecycle.Upgrade), then show that Flink restored the new job from
//     that savepoint;
//  4. make the job fail, and restart it under a policy.RestartPolicy from
//     its latest state, the newest savepoint or retained checkpoint within
//     the maximum age (lifecycle.Restart);
//  5. stop it for good with a final savepoint (lifecycle.Teardown).
//
// A program that keeps a job as a spec says uses lifecycle.Controller,
// which chooses and steps these operations itself (examples/upgrade shows
// it); the operations are for what a controller does not cover, such as a
// tool that does one thing to a job.
//
// A waiting phase shows its progress (the savepoint's acknowledged subtasks
// and the time elapsed, from lifecycle.Run's reports) on one line rewritten
// in place on a terminal, and as plain indented lines when the output is a
// file or a pipe.
//
// # Running it
//
// With no flags it starts flinkkit's fake JobManager (package flinktest)
// in real time inside the process, needs nothing else, and finishes in
// about ten seconds:
//
//	go run ./examples/operations
//
// There, the job is made to fail by the fake's Server.FailJob. Against a
// real Flink session cluster (1.17 or later, with a default savepoint
// directory or --savepoint-dir, and a free task slot), it runs flinkkit's
// test job, whose upgraded version is started with --fail-at so that it
// fails by itself:
//
//	scripts/flink.sh 1.20.5 # builds .cache/flink/1.20.5/flinkkit-testjob.jar
//	go run ./examples/operations --flink-url http://localhost:8081 \
//		--jar .cache/flink/1.20.5/flinkkit-testjob.jar
//
// The jobs write their counts to one folder per job under --out, where the
// counts of each job continue from those of the job before it. A wrong URL,
// a cluster that does not answer or a missing jar ends with one line on
// stderr and exit code 1; a wrong flag with exit code 2. --help lists the
// flags.
package main
