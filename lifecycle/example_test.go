package lifecycle_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// A job is stopped with a savepoint and submitted again from it, against
// the fake JobManager of package flinktest; Run waits on the fake's clock.
func Example() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	ctx := context.Background()
	c, _ := flinkapi.NewClient(srv.URL)
	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	args := []string{"--out", "/out", "--keys", "2", "--rate", "10"}
	job := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	_, _ = c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: job, ProgramArgs: args})
	srv.Clock().Advance(5 * time.Second)

	var stop lifecycle.Progress
	res, err := lifecycle.Run(ctx, &lifecycle.Stop{Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, Job: job}, &stop, nil)
	fmt.Println(stop.Strategy, res.Outcome, err)
	fmt.Println(stop.Location)

	var submit lifecycle.Progress
	var phase lifecycle.Phase
	res, err = lifecycle.Run(ctx, &lifecycle.Submit{
		Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, JarID: jar, JobID: "00000000000000000000000000000001", Run: flinkapi.RunJarRequest{ProgramArgs: args, SavepointPath: stop.Location},
	}, &submit, func(r lifecycle.Report) {
		if r.Progress.Phase != phase {
			phase = r.Progress.Phase
			fmt.Println(" ", phase)
		}
	})
	fmt.Println(res.Outcome, err)
	info, _ := srv.Job(submit.JobID)
	fmt.Println(info.RestoredFrom)
	// Output:
	// StopWithSavepoint Succeeded <nil>
	// file:/tmp/flinktest/savepoints/savepoint-a1b2c3-36fc752affc8
	//   Submit
	//   WaitRunning
	//   Done
	// Succeeded <nil>
	// file:/tmp/flinktest/savepoints/savepoint-a1b2c3-36fc752affc8
}

// The job controller keeps a job as its spec says: each call observes,
// decides and steps one action; the caller stores the status after every
// call and calls again after RequeueAfter. Here a job is created and then
// updated, against the fake JobManager.
func ExampleController() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, _ := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	ctx := context.Background()
	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, Name: "app/counter"}
	spec := lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarID: jar, Args: []string{"--out", "/out", "--keys", "2"}}}

	var status lifecycle.JobStatus // stored after every call: a Kubernetes status, a file
	reconcile := func(until func() bool) {
		for range 500 {
			res, err := ctrl.Reconcile(ctx, spec, &status)
			if err != nil {
				fmt.Println(err)
				return
			}
			if until() {
				return
			}
			srv.Clock().Advance(res.RequeueAfter)
		}
	}
	runs := func() bool { return !status.InFlight() && status.Reason == "Running" }
	reconcile(runs)
	first := status.JobID
	fmt.Println(status.Action, status.State, status.Reason)

	spec.Job.Args = append(spec.Job.Args, "--rate", "20") // a new version of the job
	reconcile(func() bool { return runs() && status.JobID != first })
	fmt.Println(status.Action, status.State, status.UpgradeFrom.Location != "")
	// Output:
	// Deploy Running Running
	// Upgrade Running true
}
