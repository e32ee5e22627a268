// Package contract is the contract suite of the flinkapi client: every REST
// call of flinkapi.Client, and the lifecycle invariants built on them, run
// against one JobManager and checked against concrete values.
//
// The suite is a library so that the same test functions run against more
// than one kind of JobManager. The real-cluster test of this package
// (real_integration_test.go, build tag "integration") starts a Flink session
// cluster with internal/testkit/flinkfixture and passes it as a Target; a fake
// JobManager passes itself the same way:
//
//	func TestContract(t *testing.T) {
//		contract.Run(t, contract.Target{
//			URL:          cluster.URL,
//			Version:      cluster.Version,
//			JarPath:      cluster.TestJobJar,
//			EntryClass:   cluster.TestJobClass,
//			SavepointDir: cluster.SavepointDir,
//			OutDir:       cluster.OutDir,
//			ReadCounts:   flinkfixture.ReadCounts,
//		})
//	}
//
// # What runs
//
// Run runs one subtest per contract item, in a fixed order, named after the
// call it pins (Cluster/Config, RunJar, RunJarDuplicateJobID, TriggerSavepoint,
// CancelJob/Again, ...), so that a failure names the call. Items that share
// a job (the suite's long-running "main" job) say so in their failure
// message when an earlier item left them nothing to work on. The items that
// change the cluster for good run last: DeleteJar, then RestartJobManager.
//
// The test job is dev.flinkkit.testjob.CounterJob (internal/testkit/testjob): a
// keyed counter that writes each key's count to <out>/<key>.count, takes
// its checkpoint interval, failure point and restart attempts from its
// program arguments, and so makes the job's state observable from outside.
//
// # Capabilities
//
// Optional fields of Target switch items on: ReadCounts (the state test),
// SavepointExists (checks of savepoint files on disk), RestartJobManager
// (forgotten jobs and trigger ids after a JobManager restart) and
// AdaptiveURL (resource requirements under the adaptive scheduler, and on
// Flink 2.3 the in-place rescale they cause, confirmed from the rescale
// history; RescaleHistoryConfig is that cluster's configuration). Without
// them those items are skipped with a message that says why.
//
// # Time
//
// Every wait is a poll with a deadline (Target.Timeout) measured with
// Target.Now, and a bounded number of attempts, sleeping with Target.Sleep
// between polls (Target.PollInterval). A fake JobManager with a
// controllable clock supplies its own Now and Sleep.
//
// Package contract is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package contract
