package appfake_test

import (
	"context"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/appfake"
)

// A job in an application cluster of its own: its endpoint knows only
// that job, and deleting the cluster ends the job.
func Example() {
	ctx := context.Background()
	srv := flinktest.NewServer()
	defer srv.Close()
	d, err := appfake.New(ctx, srv)
	if err != nil {
		panic(err)
	}
	defer d.Close()

	id := flinkapi.JobID("0123456789abcdef0123456789abcdef")
	c, err := d.Deploy(ctx, appfake.Request{JobID: id, Args: []string{"--out", "/out"},
		Configuration: map[string]string{appfake.ShutdownOnFinish: "false"}})
	if err != nil {
		panic(err)
	}
	again, _ := d.Deploy(ctx, appfake.Request{JobID: id})
	fmt.Println(c.Name, again == c, d.Exists(c))
	srv.Clock().Advance(5 * time.Second)

	api, _ := d.Client(c)
	jobs, _ := api.ListJobs(ctx)
	fmt.Println(len(jobs), jobs[0].ID == id, jobs[0].Status)

	if err := d.Delete(ctx, c); err != nil {
		panic(err)
	}
	srv.Clock().Advance(5 * time.Second)
	info, _ := srv.Job(id)
	fmt.Println(d.Exists(c), d.Running(), info.State)
	// Output:
	// app-0123456789ab true true
	// 1 true RUNNING
	// false [] CANCELED
}
