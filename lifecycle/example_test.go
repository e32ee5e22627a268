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
