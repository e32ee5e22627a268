package flinktest_test

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestApplication: an application cluster's JobManager serves its own job
// only, and with shutdownOnFinish stops answering once the job ended;
// without, it answers on until closed.
func TestApplication(t *testing.T) {
	for _, shutdown := range []bool{true, false} {
		f := newFake(t)
		mine := f.running(flinkapi.RunJarRequest{})
		other := f.running(flinkapi.RunJarRequest{})
		app := f.srv.Application(mine, shutdown)
		t.Cleanup(app.Close)
		c, err := flinkapi.NewClient(app.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := c.JobStatus(f.ctx, mine); err != nil || st != flinkapi.JobRunning {
			t.Fatalf("its job: %s, %v", st, err)
		}
		if _, err := c.Job(f.ctx, other); !flinkapi.IsJobNotFound(err) {
			t.Errorf("another job's details: %v, want job not found", err)
		}
		if _, err := c.JobStatus(f.ctx, other); !flinkapi.IsJobNotFound(err) {
			t.Errorf("another job's status: %v, want job not found", err)
		}
		for _, list := range []func() ([]flinkapi.JobID, error){
			func() ([]flinkapi.JobID, error) {
				js, err := c.ListJobs(f.ctx)
				var ids []flinkapi.JobID
				for _, j := range js {
					ids = append(ids, j.ID)
				}
				return ids, err
			},
			func() ([]flinkapi.JobID, error) {
				js, err := c.JobsOverview(f.ctx)
				var ids []flinkapi.JobID
				for _, j := range js {
					ids = append(ids, j.ID)
				}
				return ids, err
			},
		} {
			if ids, err := list(); err != nil || len(ids) != 1 || ids[0] != mine {
				t.Errorf("job list %v, %v: want only %s", ids, err, mine)
			}
		}
		if err := c.CancelJob(f.ctx, mine); err != nil {
			t.Fatal(err)
		}
		f.advance(2 * time.Second)
		st, err := c.JobStatus(f.ctx, mine)
		var te *flinkapi.TransportError
		switch {
		case shutdown && (!errorsAs(err, &te) || app.Running()):
			t.Errorf("shutdownOnFinish: after the job ended: %s, %v, running %v; want no answer", st, err, app.Running())
		case !shutdown && (err != nil || st != flinkapi.JobCanceled || !app.Running()):
			t.Errorf("after the job ended: %s, %v, running %v; want CANCELED", st, err, app.Running())
		}
		app.Close()
		if _, err := c.JobStatus(f.ctx, mine); !errorsAs(err, &te) || app.Running() {
			t.Errorf("after Close: %v, running %v; want no answer", err, app.Running())
		}
		if st, err := f.c.JobStatus(f.ctx, other); err != nil || st != flinkapi.JobRunning {
			t.Errorf("the server's other job: %s, %v", st, err)
		}
	}
}
