// Package appfake is a fake cluster manager of Flink application clusters
// for tests: a Deployer that starts each job in an application cluster of
// its own on the fake JobManager of package flinktest.
//
// Every job runs on one shared flinktest.Server, started by a jar run with
// the job id, arguments, parallelism, restore path and Flink configuration
// of its Request, and is served from a flinktest.Application: a REST
// endpoint of its own that knows only that job, and whose JobManager exits
// once the job ended unless the configuration sets
// execution.shutdown-on-application-finish: false. Faults injected into the
// Server reach the Application endpoints too, and the jar runs and cancels
// the Deployer sends itself.
//
// Deploy is idempotent for a job id; Delete closes the cluster's endpoint
// and cancels its job if it still runs; Exists reports whether the
// cluster's JobManager runs. The package does not import package
// lifecycle, so that lifecycle's own tests can use it: each user wraps the
// Deployer in a few lines of adapter to lifecycle.Deployer (Cluster
// converts to lifecycle.Cluster, which has the same fields).
//
// Package appfake is test harness (internal/testkit): only tests and other
// harness packages import it, never the library or the examples' programs.
package appfake
