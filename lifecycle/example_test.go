package lifecycle_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	fmt.Println(stop.Stop.Strategy, res.Outcome, err)
	fmt.Println(stop.Savepoint.Location)

	var submit lifecycle.Progress
	var phase lifecycle.Phase
	res, err = lifecycle.Run(ctx, &lifecycle.Submit{
		Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, JarID: jar, JobID: "00000000000000000000000000000001", Run: flinkapi.RunJarRequest{ProgramArgs: args, SavepointPath: stop.Savepoint.Location},
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
	runs := func() bool { return !status.InFlight() && status.Converged(spec) }
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

// ExampleController_Converge runs the Controller until the spec is
// carried out, keeping the status in a file that is replaced atomically
// after every call and locked against a second process.
func ExampleController_Converge() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, _ := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	ctx := context.Background()
	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, Name: "app/counter"}
	spec := lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarID: jar, Args: []string{"--out", "/out", "--keys", "2"}}}

	dir, _ := os.MkdirTemp("", "statuses")
	defer os.RemoveAll(dir)
	file, err := lifecycle.OpenStatusFile(filepath.Join(dir, "app~counter.json"))
	if err != nil {
		fmt.Println(err) // another process acts on the job (ErrStatusLocked)
		return
	}
	defer file.Close()
	status, _, _ := file.Load() // a zero status: nothing deployed yet

	err = ctrl.Converge(ctx, spec, &status, file.Save)
	var failed *lifecycle.ActionError
	switch {
	case errors.Is(err, lifecycle.ErrInvalidSpec):
		fmt.Println("fix the spec:", err)
	case errors.As(err, &failed):
		fmt.Println(failed.Action, "ended", failed.Outcome, "because", failed.Reason)
	case err != nil:
		fmt.Println(err)
	default:
		stored, _, _ := file.Load()
		fmt.Println(stored.Situation, stored.State, stored.Reason == lifecycle.ReasonRunning)
	}
	// Output:
	// Running Running true
}

// ExampleController_Plan asks the Controller what it would do before
// anything is sent: the job's situation, the action, and the state it
// would start from.
func ExampleController_Plan() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, _ := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	ctx := context.Background()
	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, Name: "app/counter"}
	spec := lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarID: jar, Args: []string{"--out", "/out", "--keys", "2"}}}

	var status lifecycle.JobStatus
	plan, _ := ctrl.Plan(ctx, spec, status)
	fmt.Println(plan.Situation, plan.Action)
	for range 500 { // deploy it
		res, _ := ctrl.Reconcile(ctx, spec, &status)
		if status.Converged(spec) {
			break
		}
		srv.Clock().Advance(res.RequeueAfter)
	}
	spec.Job.Args = append(spec.Job.Args, "--rate", "20") // a new version
	plan, _ = ctrl.Plan(ctx, spec, status)
	fmt.Println(plan.Situation, plan.Action, plan.NewSavepoint, plan.Mode)
	// Output:
	// NeverDeployed Deploy
	// Running Upgrade true Savepoint
}

// Housekeeping of a session cluster shared by several deployments: the
// jar of an earlier version, which no spec uses any more, is deleted,
// and a job that no spec claims is reported, then stopped with its
// savepoint recorded under UnclaimedName.
func ExampleCleanSession() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	ctx := context.Background()
	c, _ := flinkapi.NewClient(srv.URL)
	jar := func(name string) flinkapi.JarID {
		id, _ := c.UploadJarReader(ctx, name, bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
		return id
	}
	v1, v2 := jar("app-1.0.jar"), jar("app-1.1.jar")
	ours, stray := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90"), flinkapi.JobID("0123456789abcdef0123456789abcdef")
	for _, id := range []flinkapi.JobID{ours, stray} {
		_, _ = c.RunJar(ctx, v2, flinkapi.RunJarRequest{JobID: id, ProgramArgs: []string{"--out", "/out/" + string(id)}})
	}
	srv.Clock().Advance(time.Hour)
	// The stored spec and status of the one deployment on the cluster.
	claims := []lifecycle.Claim{{Spec: lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarID: v2}}, Status: lifecycle.JobStatus{JobID: ours}}}

	report, err := lifecycle.CleanSession(ctx, c, claims, lifecycle.SessionOptions{}, srv.Clock().Now())
	fmt.Println("deleted the jar of 1.0:", len(report.Deleted) == 1 && report.Deleted[0] == v1, err)
	for _, j := range report.Unclaimed {
		fmt.Println("unclaimed:", j.ID, j.State)
		store := &lifecycle.MemoryStore{}
		var p lifecycle.Progress
		res, err := lifecycle.Run(ctx, lifecycle.UnclaimedTeardown(lifecycle.Env{Client: c, Clock: srv.Clock()}, store, j.ID), &p, nil)
		rec, _, _ := store.Get(ctx, lifecycle.UnclaimedName(j.ID))
		fmt.Println(res.Outcome, err, rec.Location == p.Savepoint.Location)
	}
	// Output:
	// deleted the jar of 1.0: true <nil>
	// unclaimed: 0123456789abcdef0123456789abcdef RUNNING
	// Succeeded <nil> true
}

// A fleet on one session cluster shares one overview, and watches it: a
// job at rest is reconciled when the overview shows it changed, and
// otherwise only at its resync, every Resync. Here one of three jobs is cancelled from
// the Flink UI; Changes names it alone.
func ExampleSharedObservation_Changes() {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"))
	defer srv.Close()
	c, _ := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	ctx := context.Background()
	jar, _ := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	shared := &lifecycle.SharedObservation{Client: c, Clock: srv.Clock()}

	type job struct {
		ctrl   *lifecycle.Controller
		spec   lifecycle.JobSpec
		status lifecycle.JobStatus
	}
	fleet := map[string]*job{}
	for _, name := range []string{"orders", "payments", "shipping"} {
		fleet[name] = &job{
			ctrl: &lifecycle.Controller{Env: lifecycle.Env{Client: c, Clock: srv.Clock()}, Name: "shop/" + name, Shared: shared},
			spec: lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarID: jar, Args: []string{"--out", "/out/" + name, "--checkpoint-interval", "1000"}}},
		}
	}
	byID := map[flinkapi.JobID]string{}
	for _, name := range []string{"orders", "payments", "shipping"} {
		j := fleet[name]
		for range 100 {
			res, _ := j.ctrl.Reconcile(ctx, j.spec, &j.status)
			if j.status.Settled && j.status.Converged(j.spec) {
				break
			}
			srv.Clock().Advance(res.RequeueAfter)
		}
		byID[j.status.JobID] = name
	}
	_, _ = shared.Changes(ctx) // the watch starts
	res, _ := fleet["orders"].ctrl.Reconcile(ctx, fleet["orders"].spec, &fleet["orders"].status)
	// Each job's resync at its own time, every Resync: the first between
	// half and one and a half Resync after this call.
	fmt.Println("at rest, called back at its resync:", res.RequeueAfter >= lifecycle.DefaultResync/2 && res.RequeueAfter < lifecycle.DefaultResync*3/2)

	_ = c.CancelJob(ctx, fleet["payments"].status.JobID) // from the Flink UI
	srv.Clock().Advance(lifecycle.DefaultSharedMaxAge)
	ids, _ := shared.Changes(ctx)
	for _, id := range ids {
		j := fleet[byID[id]]
		for range 10 {
			res, _ := j.ctrl.Reconcile(ctx, j.spec, &j.status)
			if j.status.JobState != flinkapi.JobRunning {
				break
			}
			srv.Clock().Advance(res.RequeueAfter) // Flink's cache of the job's details
		}
		fmt.Println(byID[id], j.status.JobState, j.status.Reason)
	}
	// Output:
	// at rest, called back at its resync: true
	// payments CANCELED JobCancelled
}
