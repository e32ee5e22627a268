package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// jarDeployer is a Deployer that starts the job through a jar run, as a
// stand-in for an application cluster: idempotent for one job id, and
// failing its first calls as told.
type jarDeployer struct {
	c        *flinkapi.Client
	jar      flinkapi.JarID
	args     []string
	fail     int  // calls that fail
	failLate bool // the failing calls start the job, then fail
	refuse   bool
	calls    []DeployRequest
}

func (d *jarDeployer) Deploy(ctx context.Context, req DeployRequest) (Cluster, error) {
	d.calls = append(d.calls, req)
	if d.refuse {
		return Cluster{}, fmt.Errorf("image not found: %w", ErrDeployRefused)
	}
	if d.fail > 0 && !d.failLate {
		d.fail--
		return Cluster{}, errors.New("the API server is unavailable")
	}
	_, err := d.c.RunJar(ctx, d.jar, flinkapi.RunJarRequest{JobID: req.JobID, ProgramArgs: d.args,
		SavepointPath: req.RestorePath, AllowNonRestoredState: req.AllowNonRestoredState})
	if flinkapi.IsDuplicateJob(err) {
		err = nil // already created: success
	}
	if err == nil && d.fail > 0 {
		d.fail--
		return Cluster{}, errors.New("the answer was lost")
	}
	if err != nil {
		return Cluster{}, err
	}
	return Cluster{Name: "session", JobID: req.JobID}, nil
}

// The jobs of a jarDeployer share the session cluster: it is never
// deleted and always exists.
func (d *jarDeployer) Delete(context.Context, Cluster) error         { return nil }
func (d *jarDeployer) Exists(context.Context, Cluster) (bool, error) { return true, nil }
func (d *jarDeployer) Client(Cluster) (API, error)                   { return d.c, nil }

func TestUpgradeWithDeployer(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("failLate=%v", late), func(t *testing.T) {
			e := newEnv(t)
			d := &jarDeployer{c: e.c, jar: e.jar, args: newArgs(), fail: 2, failLate: late}
			p, res := checkedDrive(t, e, func() Stepper {
				return &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, Deployer: d, Policy: policy.UpdatePolicy{AllowNonRestoredState: true}}
			}, true, false)
			if res.Outcome != OutcomeSucceeded || p.Submit.JarID != "" {
				t.Fatalf("outcome %s: %+v", res.Outcome, p)
			}
			if len(d.calls) != 3 {
				t.Errorf("%d deploy calls, want 3", len(d.calls))
			}
			for _, c := range d.calls {
				if c.JobID != p.JobID || c.RestorePath != p.Savepoint.Location || !c.AllowNonRestoredState ||
					c.FlinkConfiguration["execution.savepoint.path"] != p.Savepoint.Location || c.FlinkConfiguration[ShutdownOnFinish] != "false" {
					t.Errorf("deploy request %+v, progress %+v", c, p)
				}
			}
			if n := count(e.srv, "POST /jars"); n != 0 {
				t.Errorf("%d jar uploads", n)
			}
			if j, ok := e.srv.Job(p.JobID); !ok || j.RestoredFrom != p.Savepoint.Location || jobsWithID(e, p.JobID) != 1 {
				t.Errorf("new job %+v", j)
			}
		})
	}
}

func TestSubmitDeployerRefused(t *testing.T) {
	e := newEnv(t)
	d := &jarDeployer{c: e.c, jar: e.jar, refuse: true}
	p, res := drive(t, e, func() Stepper { return &Submit{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Deployer: d} }, true)
	if res.Outcome != OutcomeSubmitFailed || len(d.calls) != 1 || !contains(p.Reason, "image not found") {
		t.Fatalf("outcome %s after %d calls: %s", res.Outcome, len(d.calls), p.Reason)
	}
	// A deployer that keeps failing ends at the deadline.
	d = &jarDeployer{c: e.c, jar: e.jar, fail: 1 << 30}
	p, res = drive(t, e, func() Stepper {
		return &Submit{Env: Env{Client: e.c, Timing: Timing{Submit: time.Minute}, Clock: e.srv.Clock()}, Deployer: d}
	}, false)
	if res.Outcome != OutcomeTimedOut || !contains(p.Reason, "unavailable") {
		t.Fatalf("outcome %s after %d calls: %s", res.Outcome, len(d.calls), p.Reason)
	}
}
