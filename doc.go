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
//   - lifecycle: stop-with-savepoint strategies and resumable steps for
//     stop, upgrade, restart, submit and teardown.
//
// Data flows one way: flinkapi observes, savepoint and policy decide,
// lifecycle acts through flinkapi, and the caller stores the progress.
//
// # Quick start
//
// Upgrade a running job to a new jar: stop it with a savepoint as the
// update policy says, start the new job from that savepoint, and keep the
// savepoint (the package example runs the same against the fake
// JobManager):
//
//	c, err := flinkapi.NewClient("http://localhost:8081")
//	if err != nil {
//		return err
//	}
//	var p lifecycle.Progress // store it after every step: a restarted caller resumes from it
//	up := &lifecycle.Upgrade{
//		Client: c, Job: oldJob, JarFile: "app-v2.jar",
//		Policy: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(6 * time.Hour)},
//		Run:    flinkapi.RunJarRequest{EntryClass: "com.example.App", Parallelism: 4},
//	}
//	res, err := lifecycle.Run(ctx, up, &p, func(r lifecycle.Report) { save(r.Progress) })
//	if err != nil {
//		return err
//	}
//	fmt.Println(res.Outcome, p.Reason) // Succeeded: the new job … is RUNNING, started from Savepoint …
//	if rec, ok := p.Record(); ok {
//		history = history.Add(rec) // savepoint.History: age, retention, restore points
//	}
//
// A Kubernetes controller calls up.Step(ctx, &status.Progress) once per
// reconcile instead of Run, stores the status, and requeues after the
// Result's RequeueAfter.
//
// # Examples
//
// go run ./examples/upgrade runs a whole lifecycle (submit, periodic
// savepoint, upgrade, failure and restart, teardown) against the fake
// JobManager, or against a real cluster with --flink-url and --jar.
// examples/runtime redeploys streaming jobs by name from a restore-point
// store; examples/operator (its own module) is an operator built on
// controller-runtime.
package flinkkit
