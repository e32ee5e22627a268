package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// A Runner keeps two deployments running on a cluster (here a fake
// JobManager on a clock the example moves) from records in a directory:
// Sync says which deployments there are, each Pass calls the
// Controllers of those that are due.
func ExampleRunner() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	jar, err := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fleet")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := fleet.NewDirStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	r := &fleet.Runner{Store: store, Clock: srv.Clock(),
		Clusters:   map[string]lifecycle.Env{"main": {Client: c, Clock: srv.Clock()}},
		Controller: lifecycle.Controller{PollInterval: 30 * time.Second}}
	var desired []fleet.Deployment
	for _, name := range []string{"orders", "payments"} {
		desired = append(desired, fleet.Deployment{Name: name, Cluster: "main", Spec: lifecycle.JobSpec{
			Job: lifecycle.JobTemplate{JarID: jar, Args: []string{"--out", "/out/" + name}}}})
	}
	changes, err := r.Sync(ctx, desired)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added:", changes.Added)
	for range 100 {
		results, err := r.Pass(ctx)
		if err != nil {
			log.Fatal(err)
		}
		done := true
		next := time.Hour
		for _, res := range results {
			done = done && res.Verdict == lifecycle.VerdictDone
			next = min(next, res.Next.Sub(srv.Clock().Now()))
		}
		if done {
			break
		}
		srv.Clock().Advance(max(next, time.Millisecond))
	}
	for _, res := range r.Results() {
		fmt.Println(res.Name, res.Cluster, res.Verdict, res.Situation)
	}
	// Output:
	// added: [orders payments]
	// orders main Done Running
	// payments main Done Running
}
