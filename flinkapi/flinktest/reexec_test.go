package flinktest_test

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// runApp starts the test job as an application (Flink 2.3) with req's
// fields, its output under /out/<application id>; it returns the id.
func (f *fake) runApp(req flinkapi.RunApplicationRequest) (flinkapi.ApplicationID, error) {
	f.t.Helper()
	if req.ApplicationID == "" {
		req.ApplicationID = flinkapi.NewApplicationID()
	}
	req.EntryClass = flinktest.CounterJobClass
	if req.ProgramArgs == nil {
		req.ProgramArgs = testArgs("/out/"+string(req.ApplicationID), 1000)
	}
	_, err := f.c.RunJarApplication(f.ctx, f.upload(), req)
	return req.ApplicationID, err
}

// appJob returns the only job of an application, failing the test if it
// has none or more.
func (f *fake) appJob(id flinkapi.ApplicationID) (flinkapi.ApplicationState, flinkapi.JobID) {
	f.t.Helper()
	d, err := f.c.Application(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Application %s: %v", id, err)
	}
	if len(d.Jobs) != 1 {
		f.t.Fatalf("application %s has %d jobs, want 1: %+v", id, len(d.Jobs), d.Jobs)
	}
	return d.Status, d.Jobs[0].ID
}

// live counts the jobs of the JobManager that have not ended, per
// application.
func (f *fake) live() map[flinkapi.ApplicationID]int {
	n := map[flinkapi.ApplicationID]int{}
	for _, j := range f.srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			n[j.Application]++
		}
	}
	return n
}

// TestFailoverReexecutesApplications: after a JobManager failover with HA
// a Flink 2.3 JobManager recovers the applications that had not ended and
// executes them again itself: a recovered job keeps its id, an
// application whose job was not recovered submits it anew, and a jar run
// whose job is lost is gone with it.
func TestFailoverReexecutesApplications(t *testing.T) {
	t.Run("recovered", func(t *testing.T) {
		f := newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithSlots(4), flinktest.WithRefreshInterval(0))
		app, err := f.runApp(flinkapi.RunApplicationRequest{})
		if err != nil {
			t.Fatal(err)
		}
		plain, plainApp, err := f.c.RunJarIDs(f.ctx, f.upload(), flinkapi.RunJarRequest{EntryClass: flinktest.CounterJobClass, ProgramArgs: testArgs("/out/plain", 1000)})
		if err != nil {
			t.Fatal(err)
		}
		if plainApp != flinkapi.ApplicationID(plain) {
			t.Errorf("the jar run's application is %q, want its job's id %s", plainApp, plain)
		}
		f.advance(2 * time.Second)
		_, job := f.appJob(app)
		if d, err := f.c.Job(f.ctx, job); err != nil || d.ApplicationID != app {
			t.Errorf("job %s of application %s: application-id %q, %v", job, app, d.ApplicationID, err)
		}
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true, Downtime: time.Second})
		f.advance(3 * time.Second)
		st, again := f.appJob(app)
		if st != flinkapi.ApplicationRunning || again != job {
			t.Errorf("after the failover: application %s, job %s; want RUNNING with its job %s", st, again, job)
		}
		if st, j := f.appJob(plainApp); st != flinkapi.ApplicationRunning || j != plain {
			t.Errorf("after the failover: jar run's application %s, job %s; want RUNNING with %s", st, j, plain)
		}
		if n := f.live(); len(n) != 2 || n[app] != 1 || n[plainApp] != 1 {
			t.Errorf("live jobs per application %v, want one each", n)
		}
	})

	t.Run("lost jobs", func(t *testing.T) {
		f := newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithSlots(4), flinktest.WithRefreshInterval(0))
		app, err := f.runApp(flinkapi.RunApplicationRequest{})
		if err != nil {
			t.Fatal(err)
		}
		plain := f.run(flinkapi.RunJarRequest{})
		f.advance(2 * time.Second)
		_, job := f.appJob(app)
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true, Lose: []flinkapi.JobID{job, plain}})
		f.advance(2 * time.Second)
		st, again := f.appJob(app)
		if st != flinkapi.ApplicationRunning || again == job {
			t.Errorf("application %s, job %s after losing job %s: want RUNNING with a new job", st, again, job)
		}
		if info := f.info(again); info.State != flinkapi.JobRunning || info.Application != app || info.Events > 2000 {
			t.Errorf("re-executed job %+v: want RUNNING in %s, started afresh", info, app)
		}
		if _, err := f.c.Job(f.ctx, job); !flinkapi.IsJobNotFound(err) {
			t.Errorf("the lost job: %v", err)
		}
		if _, err := f.c.Application(f.ctx, flinkapi.ApplicationID(plain)); !flinkapi.IsApplicationNotFound(err) {
			t.Errorf("the jar run's application without its job: %v, want not found", err)
		}
	})

	// The JobManager fails right after accepting a run-application, before
	// the program submitted its job; the client gets no answer.
	for _, fixed := range []bool{false, true} {
		name := "fault/new job id"
		if fixed {
			name = "fault/fixed job id"
		}
		t.Run(name, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion("2.3.0"), flinktest.WithSlots(4), flinktest.WithRefreshInterval(0))
			f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultRestart, Route: "POST /jars/:jarid/run-application", After: true, Times: 1,
				Restart: flinktest.RestartOptions{HA: true}})
			req := flinkapi.RunApplicationRequest{ApplicationID: flinkapi.NewApplicationID()}
			if fixed {
				req.JobID = flinkapi.NewJobID()
			}
			req.ProgramArgs = testArgs("/out/dep", 1000)
			app, err := f.runApp(req)
			var te *flinkapi.TransportError
			if !errorsAs(err, &te) {
				t.Fatalf("run-application: %v, want a transport error", err)
			}
			f.advance(2 * time.Second)
			st, job := f.appJob(app)
			if st != flinkapi.ApplicationRunning || (fixed && job != req.JobID) {
				t.Errorf("re-executed application %s with job %s; want RUNNING (job %q if fixed)", st, job, req.JobID)
			}
			if n := f.live(); len(n) != 1 || n[app] != 1 {
				t.Fatalf("live jobs per application %v, want the one Flink submitted", n)
			}
			// Submitting again what Flink already re-executed: with the
			// same ids Flink refuses it...
			if _, err := f.runApp(req); !flinkapi.IsDuplicateJob(err) {
				t.Errorf("run-application again with its id: %v, want a duplicate", err)
			}
			if fixed {
				if _, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{JobID: req.JobID, EntryClass: flinktest.CounterJobClass, ProgramArgs: req.ProgramArgs}); !flinkapi.IsDuplicateJob(err) {
					t.Errorf("jar run with the job id: %v, want a duplicate", err)
				}
			}
			// ... with a new application id it makes a second live job of
			// the deployment, and the fake shows it.
			again := req
			again.ApplicationID = ""
			again.JobID = ""
			second, err := f.runApp(again)
			if err != nil {
				t.Fatal(err)
			}
			f.advance(2 * time.Second)
			running := 0
			for _, j := range f.srv.Jobs() {
				if j.State == flinkapi.JobRunning {
					running++
				}
			}
			if n := f.live(); running != 2 || n[app] != 1 || n[second] != 1 {
				t.Errorf("after the second submit: %d RUNNING, live per application %v; want two, one each", running, n)
			}
		})
	}

	t.Run("1.20", func(t *testing.T) {
		f := newFake(t, flinktest.WithVersion("1.20.5"), flinktest.WithRefreshInterval(0))
		id := f.running(flinkapi.RunJarRequest{})
		if d, err := f.c.Job(f.ctx, id); err != nil || d.ApplicationID != "" {
			t.Errorf("1.20 job details: application id %q, %v; want none", d.ApplicationID, err)
		}
		f.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
		f.advance(2 * time.Second)
		if info := f.info(id); info.State != flinkapi.JobRunning || info.Application != "" {
			t.Errorf("1.20 job after the failover %+v", info)
		}
	})
}
