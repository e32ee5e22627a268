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
package flinkfixture
