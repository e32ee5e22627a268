package faultmatrix

import (
	"context"
	"slices"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/appfake"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// appDeployer is the fake Deployer of application clusters of package
// appfake as a lifecycle.Deployer.
type appDeployer struct{ *appfake.Deployer }

func (d appDeployer) Deploy(ctx context.Context, req lifecycle.DeployRequest) (lifecycle.Cluster, error) {
	c, err := d.Deployer.Deploy(ctx, appfake.Request{JobID: req.JobID, Args: req.Args, Parallelism: req.Parallelism, Configuration: req.FlinkConfiguration})
	return lifecycle.Cluster(c), err
}

func (d appDeployer) Delete(ctx context.Context, c lifecycle.Cluster) error {
	return d.Deployer.Delete(ctx, appfake.Cluster(c))
}

func (d appDeployer) Exists(_ context.Context, c lifecycle.Cluster) (bool, error) {
	return d.Deployer.Exists(appfake.Cluster(c)), nil
}

func (d appDeployer) Client(c lifecycle.Cluster) (lifecycle.API, error) {
	return d.Deployer.Client(appfake.Cluster(c))
}

// twoClusters reports whether the action a may run two application
// clusters at once: the old job's and its replacement's.
func twoClusters(a lifecycle.JobAction) bool {
	switch a {
	case lifecycle.ActionUpgrade, lifecycle.ActionRescale, lifecycle.ActionAutoscale, lifecycle.ActionRestart, lifecycle.ActionHealthRestart, lifecycle.ActionRollback,
		lifecycle.ActionBlueGreen:
		return true
	}
	return false
}

// checkClusters checks the application clusters after call n: before is
// the status stored before it, deleted the clusters the call deleted.
func (e *cenv) checkClusters(n int, before, st lifecycle.JobStatus, deleted []appfake.Deletion) {
	running := e.app.Running()
	limit := 1 // at rest, and once an action ended
	if st.InFlight() && twoClusters(st.Action) {
		limit = 2 // the old job's and its replacement's
	}
	if len(running) > limit {
		e.v.add("clusters: %d application clusters run after call %d (%v; action %s, in flight %v), at most %d", len(running), n, running, st.Action, st.InFlight(), limit)
	}
	if st.JobID != "" && st.JobState == flinkapi.JobRunning {
		if info, ok := e.srv.Job(st.JobID); ok && info.State == flinkapi.JobRunning && (st.Cluster.IsZero() || !e.app.Exists(appfake.Cluster(st.Cluster))) {
			e.v.add("clusters: after call %d the status names the running job %s and the cluster %q, which does not exist (running: %v)", n, st.JobID, st.Cluster.Name, running)
		}
	}
	for _, d := range deleted {
		if d.JobState == flinkapi.JobRunning && d.Cluster.Name == st.Cluster.Name {
			e.v.add("clusters: call %d deleted the cluster %s while its job %s ran, and the status still names it", n, d.Cluster.Name, d.Cluster.JobID)
		}
	}
}

// finalClusters checks the application clusters at the end of a change:
// exactly the status's runs, none after a delete or a suspend.
func (e *cenv) finalClusters(spec lifecycle.JobSpec, st lifecycle.JobStatus, outcome string) {
	running := e.app.Running()
	var want []string
	switch {
	case outcome == OutcomeDeleted, outcome == OutcomeConverged && spec.State == lifecycle.DesiredSuspended:
	case outcome == OutcomeConverged:
		want = []string{st.Cluster.Name}
	case !st.Cluster.IsZero() && slices.Contains(running, st.Cluster.Name):
		want = []string{st.Cluster.Name}
	}
	if !slices.Equal(running, want) {
		e.v.add("clusters: the change ended %s with the application clusters %v running; want [%s] (the status names %q)", outcome, running, strings.Join(want, " "),
			st.Cluster.Name)
	}
}
