// Package flinkfixture starts a real Apache Flink session cluster on
// 127.0.0.1 for integration tests: one JobManager
// (StandaloneSessionClusterEntrypoint, with the web UI and the jar
// upload/run handlers) and one TaskManager (TaskManagerRunner), as two JVMs
// started directly with java, without Flink's shell scripts or flink-dist.
//
// The jars come from <repo>/.cache/flink/<version>/lib and the test job from
// <repo>/.cache/flink/<version>/flinkkit-testjob.jar; both are prepared by
// scripts/flink.sh <version>, which Start runs (it returns at once when
// nothing changed).
//
// The JVMs never outlive the test process: each runs in its own process
// group that Stop signals, gets SIGKILL when the Go process dies
// (Pdeathsig), and is recorded in <cache>/run so that a later Start can kill
// what a crashed run left behind.
//
// # Use
//
// An integration test (build tag "integration") starts one cluster for its
// package and stops it when done; FLINK_VERSION picks the version, or
// FLINK_URL a cluster started elsewhere:
//
//	cluster, err := flinkfixture.StartFromEnv(ctx, flinkfixture.Config{Slots: 2})
//	if err != nil {
//		t.Fatalf("needs a real Flink cluster: %v", err) // fails, never skips
//	}
//	defer cluster.Stop()
//	c, _ := flinkapi.NewClient(cluster.URL)
//
// The test job (cluster.TestJobJar, class TestJobClass) counts events per
// key and writes each key's count to the folder given as --out;
// ReadCounts reads them back, so a test sees whether state survived a
// savepoint, a restart or a redeploy.
//
// # Application clusters
//
// With Config.Application, Start starts an application cluster instead:
// its JobManager runs flink-container's StandaloneApplicationClusterEntryPoint
// (lib/ holds flink-container, of the exact version or, where Maven
// Central has none, such as 1.20.5, of the release's .0), which runs the
// job's main method from the jar on its classpath, with the job id, the
// restore path and allowNonRestoredState given on its command line; the
// TaskManager has the jar on its classpath too. Its JobManager outlives
// the job (execution.shutdown-on-application-finish: false): after a stop
// with a savepoint the job is FINISHED, and the stop's result and the
// checkpoint history are still served. A job that fails once it runs
// (the test job's --fail-at 1) is FAILED with its exception and the
// JobManager stays. A restore path that does not exist differs by
// version: Flink 1.20 exits the JobManager (status 2, "Fatal error
// occurred in the cluster entrypoint") although
// execution.submit-failed-job-on-application-error is true; Flink 2.3
// keeps it and shows the job FAILED with the missing path in its
// exception. The application tests start their clusters one at a time;
// the session cluster of the package starts with the first test that
// uses it.
//
// Package flinkfixture is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package flinkfixture
