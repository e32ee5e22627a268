package appfake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

const job flinkapi.JobID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

func newDeployer(t *testing.T, opts ...Option) (*flinktest.Server, *Deployer) {
	t.Helper()
	srv := flinktest.NewServer()
	t.Cleanup(srv.Close)
	d, err := New(context.Background(), srv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return srv, d
}

var (
	keep = map[string]string{ShutdownOnFinish: "false"}
	args = []string{"--out", "/out"}
)

// TestFailAndNeverStart: failing Deploy calls do nothing; a cluster that
// never starts runs no job and does not exist.
func TestFailAndNeverStart(t *testing.T) {
	ctx := context.Background()
	srv, d := newDeployer(t, FailDeploys(1), NeverStart())
	if _, err := d.Deploy(ctx, Request{JobID: job, Args: args, Configuration: keep}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("first Deploy: %v", err)
	}
	c, err := d.Deploy(ctx, Request{JobID: job, Args: args, Configuration: keep})
	if _, ok := srv.Job(job); err != nil || ok || d.Exists(c) || len(d.Running()) != 0 || len(d.Requests()) != 2 {
		t.Fatalf("never started: %v, job known %v, exists %v, running %v", err, ok, d.Exists(c), d.Running())
	}
}

// TestDeleteAndDeployAgain: Delete cancels the running job; a Deploy of
// the same id afterwards starts a new cluster, not the deleted one; the
// exited cluster of a job that ended does not exist.
func TestDeleteAndDeployAgain(t *testing.T) {
	ctx := context.Background()
	srv, d := newDeployer(t)
	c, err := d.Deploy(ctx, Request{JobID: job, Args: args, Configuration: keep})
	if err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(5 * time.Second)
	if err := d.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(5 * time.Second)
	info, _ := srv.Job(job)
	dels := d.Deletions()
	if info.State != flinkapi.JobCanceled || !d.Deleted(c.Name) || len(dels) != 1 || dels[0].JobState != flinkapi.JobRunning {
		t.Fatalf("after Delete: job %s, deleted %v, deletions %+v", info.State, d.Deleted(c.Name), dels)
	}
	again, err := d.Deploy(ctx, Request{JobID: job, Args: args})
	if err != nil || again.Name == c.Name || again.URL == c.URL {
		t.Fatalf("Deploy after Delete: %+v, %v; deleted %+v", again, err, c)
	}
	// Its job ended, and it was not told to stay: it exited.
	if d.Exists(again) || len(d.Running()) != 0 {
		t.Errorf("the new cluster of an ended job exists: running %v", d.Running())
	}
	if err := d.Delete(ctx, Cluster{Name: "app-unknown"}); err != nil {
		t.Errorf("Delete of an unknown cluster: %v", err)
	}
}

// TestLostAnswers: a jar run that took effect with its answer lost starts
// the cluster, and the next Deploy returns it; a cancel that failed is
// sent again by the next Delete.
func TestLostAnswers(t *testing.T) {
	ctx := context.Background()
	srv, d := newDeployer(t)
	if err := srv.Inject(flinktest.Fault{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", After: true, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(ctx, Request{JobID: job, Args: args, Configuration: keep}); err == nil {
		t.Fatal("Deploy with its answer lost succeeded")
	}
	if got := d.Running(); len(got) != 1 || got[0] != Name(job) {
		t.Fatalf("running %v after a lost answer", got)
	}
	c, err := d.Deploy(ctx, Request{JobID: job, Args: args, Configuration: keep})
	if err != nil || c.Name != Name(job) || !d.Exists(c) {
		t.Fatalf("Deploy again: %+v %v", c, err)
	}
	srv.Clock().Advance(5 * time.Second)
	if err := srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 500, Route: "PATCH /jobs/:jobid", Times: 1}); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, c); err == nil {
		t.Fatal("Delete with its cancel failing succeeded")
	}
	if err := d.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(5 * time.Second)
	if info, _ := srv.Job(job); info.State != flinkapi.JobCanceled || d.Exists(c) {
		t.Errorf("after Delete again: job %s, exists %v", info.State, d.Exists(c))
	}
}
