// Package testkit is flinkkit's test floor: the test harness, everything
// that exists only for the tests. Its packages are imported by tests, by one
// another and by the scripts of `make test`; the library, its production
// helpers (the other packages under internal/) and the examples' programs
// never import them, which TestLibraryNeverImportsTestkit checks.
//
//   - appfake: a fake cluster manager of application clusters on the fake
//     JobManager (flinkapi/flinktest)
//   - contract: the contract suite of the flinkapi client, run against real
//     Flink and against the fake
//   - faultmatrix: every lifecycle operation and the controller under
//     injected faults, crashes and absences, checked against the invariants
//   - flinkfixture: real Flink session and application clusters for the
//     integration tests, their state on disk or in an S3-compatible object
//     store (SeaweedFS, built by scripts/s3-assets.sh); cmd/sharedflink
//     shares one per Flink version
//   - formattest: stored types held to the golden files of earlier releases
//   - plaincheck: hand-written deep copies checked to stay deep
//   - randdriver: the controller driven by seeded random schedules
//   - reqlog: the fake JobManager's request log, read for the suites
//   - s3client: a small S3 client (requests signed with Signature Version
//     4) that reads what Flink wrote to the object store
//
// Two Maven projects sit beside them, built by scripts/flink.sh: flinkjars
// (the runtime jars of a local Flink cluster) and testjob (the test job,
// dev.flinkkit.testjob.CounterJob).
package testkit
