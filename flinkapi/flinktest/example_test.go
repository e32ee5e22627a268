package flinktest_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// A client triggers a savepoint against the fake; the test moves the clock
// instead of sleeping.
func Example() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithSavepointDuration(500*time.Millisecond))
	defer srv.Close()
	ctx := context.Background()
	c, _ := flinkapi.NewClient(srv.URL)

	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	id := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	_, _ = c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: []string{"--out", "/out", "--keys", "2", "--rate", "10"}})
	srv.Clock().Advance(2 * time.Second) // the job starts and runs

	op, _ := c.TriggerSavepoint(ctx, id, flinkapi.SavepointRequest{TriggerID: "0123456789abcdef0123456789abcdef"})
	res, _ := c.OperationStatus(ctx, op)
	fmt.Println(res.Status)

	srv.Clock().Advance(500 * time.Millisecond) // the savepoint completes
	res, _ = c.OperationStatus(ctx, op)
	fmt.Println(res.Status, res.Location)

	info, _ := srv.Job(id)
	fmt.Println(info.State, info.Counts)
	// Output:
	// IN_PROGRESS
	// COMPLETED file:/tmp/flinktest/savepoints/savepoint-a1b2c3-36fc752affc8
	// RUNNING map[key-0:9 key-1:8]
}

// A fault makes the first savepoint of a job fail; the request log shows
// what the client sent.
func ExampleServer_Inject() {
	srv := flinktest.NewServer()
	defer srv.Close()
	ctx := context.Background()
	c, _ := flinkapi.NewClient(srv.URL)
	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	id, _ := c.RunJar(ctx, jar, flinkapi.RunJarRequest{ProgramArgs: []string{"--out", "/out"}})
	srv.Clock().Advance(time.Second)

	_ = srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: id, Times: 1, Cause: "Checkpoint was declined."})
	op, _ := c.TriggerSavepoint(ctx, id, flinkapi.SavepointRequest{})
	srv.Clock().Advance(time.Second)
	res, _ := c.OperationStatus(ctx, op)
	fmt.Println(res.Failure.Message())

	for _, r := range srv.Requests()[len(srv.Requests())-2:] {
		fmt.Println(r.Method, r.Route, r.Status)
	}
	// Output:
	// Checkpoint was declined.
	// POST POST /jobs/:jobid/savepoints 202
	// GET GET /jobs/:jobid/savepoints/:triggerid 200
}
