// Package flinkfixture starts a real Apache Flink session cluster on
// 127.0.0.1 for integration tests: one JobManager
// (StandaloneSessionClusterEntrypoint, with the web UI and the jar
// upload/run handlers) and one TaskManager (TaskManagerRunner), as two JVMs
// started directly with java, without Flink's shell scripts or flink-dist.
//
// The jars come from <repo>/.cache/flink/<version>/lib and the test job from
// <repo>/.cache/flink/<version>/flinkkit-testjob.jar; both are prepared by
// scripts/flink.sh <version>, which Start runs (it returns at once when
// nothing changed). By default the cluster keeps its checkpoints and
// savepoints under WorkDir; with Config.ObjectStore in an S3-compatible
// object store (see below).
//
// The JVMs (and the object store) never outlive the test process: each
// runs in its own process group that Stop signals, gets SIGKILL when the
// Go process dies (Pdeathsig), and is recorded in <cache>/run so that a
// later Start can kill what a crashed run left behind.
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
// # State in an object store
//
// With Config.ObjectStore the cluster keeps its checkpoints and savepoints
// in an S3-compatible object store instead of WorkDir: a SeaweedFS server
// on 127.0.0.1 (weed mini: master, volume server, filer, S3 gateway and
// a maintenance worker in one process, on free ports, its data under WorkDir, one
// identity with keys made up at start, from a config file the fixture
// writes, and one bucket, "flinkkit"), started beside the JVMs and
// stopped with them. Its weed binary is $FLINKKIT_WEED, or what
// scripts/s3-assets.sh prints: the script builds it once from the Go
// module proxy into .cache/s3/<version>/ (several minutes) and prints the
// cached one afterwards. The cluster loads Flink's flink-s3-fs-hadoop plugin
// (Hadoop's S3A), which scripts/flink.sh fetches into
// <cache>/<version>/plugins/s3-fs-hadoop (Maven Central has none for
// 1.20.5: 1.20.1's serves the 1.20.5 runtime), with s3.endpoint,
// s3.path.style.access and the identity's keys, and its default folders
// are s3://flinkkit/<cluster>/checkpoints and .../savepoints
// (Cluster.CheckpointURI, SavepointURI; SavepointDir and CheckpointDir
// are then empty). The shared cluster of `make integration`
// (cmd/sharedflink) is one such cluster, and a cluster started with
// ObjectStore while SharedEnv names it uses its store rather than
// starting another. StartObjectStore starts a store on its own, for tests
// of storage without a Flink cluster.
//
// LocationExists, ListLocation, ListChildren, DeleteLocation and
// StateStorage take a savepoint's or checkpoint's location in either
// place: a file: URI or an absolute path, or an s3:// URI in a store of
// this process or of the shared cluster (found by its bucket). In the
// store a savepoint or checkpoint exists when its _metadata object does;
// S3 has no folders, so a folder is the first part of the keys under a
// prefix (or an empty "folder/" object that S3A writes for an empty one).
//
// Package flinkfixture is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package flinkfixture
