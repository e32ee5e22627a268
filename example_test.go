package flinkkit_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The quick start against the fake JobManager: submit a job with a chosen
// id, take a savepoint with a recorded trigger id, wait for it on the fake's
// clock, and keep the result as a savepoint record.
func Example() {
	jm := flinktest.NewServer(flinktest.WithVersion("2.3.0"))
	defer jm.Close()
	ctx := context.Background()

	c, err := flinkapi.NewClient(jm.URL)
	if err != nil {
		log.Fatal(err)
	}
	jar, err := c.UploadJarReader(ctx, "counter.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		log.Fatal(err)
	}
	job := flinkapi.JobID("5e5c6a3b0cf04a1e9f6fb2b2c8d1a0e7") // chosen before submitting
	if _, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: job, ProgramArgs: []string{"--out", "/out"}}); err != nil {
		log.Fatal(err)
	}
	jm.Clock().Advance(3 * time.Second)

	// Record the trigger id before the request that uses it.
	status := savepoint.Begin(flinkapi.OpSavepoint, job, flinkapi.NewTriggerID(), savepoint.ReasonUser,
		jm.Clock().Now(), jm.Clock().Now().Add(5*time.Minute))
	op, err := c.TriggerSavepoint(ctx, job, flinkapi.SavepointRequest{TriggerID: status.TriggerID})
	status = savepoint.AfterTrigger(status, op, err, jm.Clock().Now())

	w := flinkapi.NewWaiter(c, func(o *flinkapi.WaiterOptions) {
		o.Now, o.Sleep = jm.Clock().Now, jm.Clock().Sleep // no real waiting
	})
	res, err := w.Wait(ctx, status.Operation(), 5*time.Minute)
	status = savepoint.AfterPoll(status, res, err, jm.Clock().Now())

	rec, ok := savepoint.RecordOf(status)
	fmt.Println(status.State, ok, rec.Reason, rec.JobID == job)
	// Output:
	// Succeeded true User true
}

// The README's quick start, against the fake JobManager: upgrade a running
// job to a new jar with a stop with savepoint, as the update policy says,
// and keep the savepoint. In a controller, call Step instead of Run and
// store the Progress after each step.
func Example_upgrade() {
	jm := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer jm.Close()
	ctx := context.Background()
	c, _ := flinkapi.NewClient(jm.URL)
	jar, _ := c.UploadJarReader(ctx, "app.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	old, _ := c.RunJar(ctx, jar, flinkapi.RunJarRequest{ProgramArgs: []string{"--out", "/out"}})
	jm.Clock().Advance(5 * time.Second)

	var p lifecycle.Progress // store it after every step: a restarted caller resumes from it
	up := &lifecycle.Upgrade{
		Env: lifecycle.Env{Client: c, Clock: jm.Clock()}, Job: old, JarID: jar,
		Policy: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(6 * time.Hour)},
		Run:    flinkapi.RunJarRequest{ProgramArgs: []string{"--out", "/out", "--rate", "20"}},
		// the fake's clock: no real waiting
	}
	res, err := lifecycle.Run(ctx, up, &p, func(r lifecycle.Report) { /* persist r.Progress */ })
	fmt.Println(res.Outcome, err, p.Replace.Decision)
	var history savepoint.History
	if rec, ok := p.Record(); ok {
		history = history.Add(rec)
	}
	latest, _ := history.Latest()
	newJob, _ := jm.Job(p.JobID)
	fmt.Println(newJob.State, newJob.RestoredFrom == latest.Location, latest.Reason)
	// Output:
	// Succeeded <nil> SavepointBeforeUpdate
	// RUNNING true Update
}
