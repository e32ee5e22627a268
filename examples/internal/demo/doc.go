// Package demo holds what the runnable examples under examples/ share:
// reaching a Flink session cluster (a real one, or the fake JobManager of
// package flinktest running in real time) with the job's jar uploaded,
// flinkkit's test job as a jar run request (Cluster.Run, for the single
// operations) or a lifecycle.JobTemplate (Cluster.Job, for a
// lifecycle.Controller), and a Printer that writes one line per phase and
// the live progress of a waiting phase.
//
//	cl, err := demo.Open(ctx, demo.Config{FlinkURL: url, Jar: jar})
//	if err != nil {
//		return err // one line, naming the flag at fault
//	}
//	defer cl.Close()
//	out := demo.NewPrinter(os.Stdout)
//	var p lifecycle.Progress
//	res, err := lifecycle.Run(ctx, &lifecycle.Submit{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing},
//		JarID: cl.JarID, Run: cl.Run("counter")}, &p, out.Report("submit"))
//	out.Phase("submit", "job %s %s", demo.Short(p.JobID), res.Outcome)
//
// # Progress on a terminal and elsewhere
//
// On a terminal (os.Stdout is a character device) the progress of a waiting
// phase rewrites one line with a carriage return, and the phase's line
// replaces it when the phase ends. Written to a file or a pipe, each change
// of progress is a plain, indented line, so logs stay readable.
//
// # The test job
//
// Every job is flinkkit's test job (dev.flinkkit.testjob.CounterJob, built
// from internal/testkit/testjob; on the fake, its simulation): a keyed counter that
// writes each key's count to <out>/<job name>/<key>.count, so a job
// restored from a savepoint or checkpoint visibly continues counting.
package demo
