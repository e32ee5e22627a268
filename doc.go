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
//	ctx := context.Background()
//	c, err := flinkapi.NewClient("http://localhost:8081")
//	if err != nil {
//		log.Fatal(err)
//	}
//	jobs, err := c.JobsOverview(ctx)
//	if err != nil {
//		log.Fatal(err)
//	}
//	for _, j := range jobs {
//		if j.State != flinkapi.JobRunning {
//			continue
//		}
//		op, err := c.TriggerSavepoint(ctx, j.ID, flinkapi.SavepointRequest{})
//		if err != nil {
//			log.Fatal(err)
//		}
//		res, err := flinkapi.NewWaiter(c).Wait(ctx, op, 5*time.Minute)
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(j.Name, "saved at", res.Location)
//	}
package flinkkit
