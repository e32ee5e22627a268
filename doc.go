// Package flinkkit is a Go SDK for the lifecycle of Apache Flink jobs.
//
// Kubernetes operators, streaming runtimes and operations tools import it
// instead of re-implementing (and re-breaking) the logic that keeps a Flink
// job's state safe through savepoints, upgrades, restarts and deletes.
//
// # Packages
//
//   - flinkapi: a typed, version-aware client for the JobManager REST API
//     (Flink 1.15 to 2.x): typed errors, safe retries, asynchronous
//     operations and waiters.
//   - flinkapi/flinktest: a fake JobManager for tests, with fault
//     injection and a controllable clock.
//   - savepoint: savepoint state derived from Flink's answers, records,
//     scheduling, age and retention. Pure: no I/O, no clock.
//   - policy: update and restart decisions and restore-point selection.
//     Pure.
//   - lifecycle: the job controller (a job spec and a stored job status
//     in, one call that observes, decides and steps), and the resumable
//     operations it is built from: savepoint, stop, submit, upgrade,
//     blue/green upgrade, restart, rescale, teardown, disposal; on
//     session clusters, or on application clusters through a Deployer.
//   - localcluster: a Deployer of application clusters started as local
//     processes from Flink's jars.
//
// Data flows one way: flinkapi observes, savepoint and policy decide,
// lifecycle acts through flinkapi, and the caller stores the progress.
//
// # Quick start
//
// Keep a job running as its spec says: call the controller, store the
// status, call again after RequeueAfter (the package example of
// lifecycle runs it against the fake JobManager):
//
//	c, err := flinkapi.NewClient("http://localhost:8081", flinkapi.WithRetryPolicy(flinkapi.NoRetry))
//	if err != nil {
//		return err
//	}
//	jars, err := lifecycle.JarDir("jars") // the only directory jars are read from
//	if err != nil {
//		return err
//	}
//	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: c, Jars: jars}, Store: store, Name: "app/counter"}
//	spec := lifecycle.JobSpec{
//		Job:    lifecycle.JobTemplate{JarFile: "app-v2.jar", EntryClass: "com.example.App", Parallelism: 4},
//		Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(6 * time.Hour)},
//	}
//	for {
//		res, err := ctrl.Reconcile(ctx, spec, &status) // deploys, upgrades, restarts, rolls back, ...
//		save(status)                                  // before anything else: a restarted caller resumes from it
//		if err != nil {
//			return err
//		}
//		time.Sleep(res.RequeueAfter)
//	}
//
// The single operations are there for what a controller does not
// cover: lifecycle.Upgrade, lifecycle.Teardown and the others each do one
// thing (lifecycle.Run steps them to their end; a controller calls Step
// once per reconcile).
//
// # Examples
//
// go run ./examples/upgrade keeps a job with the controller through a
// whole lifecycle (deploy, periodic savepoint, upgrade, failure and
// restart, delete with a final savepoint), its status in a file, against
// the fake JobManager, or against a real cluster with --flink-url and
// --jar; examples/operations does the same with the single operations.
// examples/runtime deploys, upgrades and removes the streaming jobs of an
// application on fleet.Runner; examples/operator (its own module) is an operator built on
// controller-runtime.
package flinkkit
