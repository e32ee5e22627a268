package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Deployer starts each job in a cluster of its own: an application
// cluster, whose JobManager starts with the job (its id as
// $internal.pipeline.job-id, its restore path as execution.savepoint.path)
// and serves the job's REST API at an address of its own. The operations
// and the Controller use it instead of the jar run of a session cluster:
// they read and stop the job through the client of its cluster
// (Deployer.Client), start a replacement in a new cluster, and delete the
// old cluster once the new job runs, or once a teardown's savepoint is
// recorded.
//
// A cluster must outlive its job: configure its JobManager with
// execution.shutdown-on-application-finish: false (the DeployRequest's
// FlinkConfiguration says so, see ApplicationConfiguration), so that a
// stop's result, the job's final state and its checkpoint history can be
// read after the job ended; flinkkit deletes the cluster when it has
// them. A cluster that no longer exists (Exists false: deleted, or its
// JobManager exited) while its job's state cannot be read is taken as a
// job that ended, never as an outage to wait out.
//
// Deploy may wait for the cluster to come up (localcluster waits until its
// REST API answers, a few seconds), or return at once: a JobManager that
// does not answer yet is waited for while the cluster exists.
//
// Every method may be called again after an error, and after a Step that
// never returned: Deploy is idempotent for one job id (the cluster it
// started for req.JobID before is returned, not a second one), Delete of a
// cluster that is gone is success. An error that a retry will not change
// should wrap ErrDeployRefused; the submission then ends SubmitFailed.
// Other errors are retried with backoff until the operation's deadline.
type Deployer interface {
	// Deploy starts a cluster that runs the job of req, or finds the one
	// it started for req.JobID, and returns it.
	Deploy(ctx context.Context, req DeployRequest) (Cluster, error)
	// Delete deletes c and everything it runs.
	Delete(ctx context.Context, c Cluster) error
	// Exists reports whether c exists: started, not deleted, and its
	// JobManager running or coming back.
	Exists(ctx context.Context, c Cluster) (bool, error)
	// Client returns the client of the REST API of c's JobManager.
	Client(c Cluster) (API, error)
}

// DeployRequest is the job a Deployer starts: the same description as a
// session cluster's jar run.
type DeployRequest struct {
	// JobID is the job's id, recorded in Progress before Deploy is called.
	JobID flinkapi.JobID
	// JarFile is the job's jar; empty: the Deployer's own artifact (an
	// image with the job in it).
	JarFile string
	// EntryClass, Args and Parallelism are the job's main class, its
	// arguments and its default parallelism (0: the cluster's).
	EntryClass  string
	Args        []string
	Parallelism int
	// FlinkConfiguration is the job's Flink configuration; it always holds
	// ApplicationConfiguration's settings.
	FlinkConfiguration map[string]string
	// RestorePath is the savepoint or retained checkpoint to start from;
	// empty: without state.
	RestorePath string
	// AllowNonRestoredState is Flink's allowNonRestoredState.
	AllowNonRestoredState bool
}

// Cluster is a cluster a Deployer started: stored in Progress and in the
// JobStatus, so that it is found again after a restart.
type Cluster struct {
	// Name identifies the cluster to its Deployer (a process directory, a
	// Kubernetes Deployment).
	Name string `json:"name"`
	// URL is the address of its JobManager's REST API.
	URL string `json:"url,omitempty"`
	// JobID is the job it runs.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
}

// IsZero reports whether c names no cluster.
func (c Cluster) IsZero() bool { return c.Name == "" }

// ShutdownOnFinish is the Flink setting that keeps an application
// cluster's JobManager after its job ended; ApplicationConfiguration sets
// it to false.
const ShutdownOnFinish = "execution.shutdown-on-application-finish"

// ApplicationConfiguration returns the Flink configuration of an
// application cluster for req: req.FlinkConfiguration with the job id
// ($internal.pipeline.job-id), the restore path and whether state may be
// left unrestored (under the keys of Flink 1.20 and later,
// execution.state-recovery.path and
// execution.state-recovery.ignore-unclaimed-state, and under the older
// execution.savepoint.* ones, which 1.15 to 1.19 read), and
// execution.shutdown-on-application-finish: false. A Deployer writes it
// into the cluster's configuration. Flink's application entry point lets
// its command line's savepoint settings win over the configuration: a
// Deployer that starts it passes RestorePath and AllowNonRestoredState
// there too (--fromSavepoint, --allowNonRestoredState), or the latter is
// lost.
func ApplicationConfiguration(req DeployRequest) map[string]string {
	out := make(map[string]string, len(req.FlinkConfiguration)+6)
	for k, v := range req.FlinkConfiguration {
		out[k] = v
	}
	out["$internal.pipeline.job-id"] = string(req.JobID)
	out[ShutdownOnFinish] = "false"
	if req.RestorePath != "" {
		out["execution.state-recovery.path"] = req.RestorePath
		out["execution.savepoint.path"] = req.RestorePath
		if req.AllowNonRestoredState {
			out["execution.state-recovery.ignore-unclaimed-state"] = "true"
			out["execution.savepoint.ignore-unclaimed-state"] = "true"
		}
	}
	return out
}

// ErrDeployRefused marks a Deployer error that a retry will not change.
var ErrDeployRefused = errors.New("lifecycle: deploy refused")

// clusterClient returns the client of the Deployer's cluster c, wrapped
// so that a cluster that no longer exists answers as Flink does for a job
// it does not know.
func clusterClient(d Deployer, c Cluster) (API, error) {
	api, err := d.Client(c)
	if err != nil {
		return nil, fmt.Errorf("lifecycle: the client of cluster %s: %w", c.Name, err)
	}
	if api == nil {
		return nil, fmt.Errorf("lifecycle: the Deployer returned no client for cluster %s", c.Name)
	}
	return &clusterAPI{API: api, d: d, c: c}, nil
}

// clusterAPI is the client of a cluster a Deployer started. A request
// that could not reach the cluster's JobManager (a transport error), when
// the Deployer says the cluster no longer exists, is answered as Flink
// answers for a job it does not know (a 404 that flinkapi.IsJobNotFound
// recognises), and the job list is empty: the job ended with its
// cluster, and the operations treat it as gone (confirmed by the list),
// never as an outage to wait out.
type clusterAPI struct {
	API
	d Deployer
	c Cluster
}

// gone turns err into a job-not-found answer for job if err is a
// transport error and the cluster no longer exists.
func (a *clusterAPI) gone(ctx context.Context, job flinkapi.JobID, err error) error {
	var te *flinkapi.TransportError
	if !errors.As(err, &te) {
		return err
	}
	if exists, xerr := a.d.Exists(ctx, a.c); xerr != nil || exists {
		return err
	}
	return &clusterGone{cluster: a.c.Name, APIError: &flinkapi.APIError{StatusCode: 404, Method: "GET", Path: "/jobs/" + string(job),
		Errors: []string{"Could not find Flink job (" + string(job) + "): its cluster " + a.c.Name + " no longer exists"}}}
}

// clusterGone is the answer of clusterAPI for a cluster that no longer
// exists: a job-not-found APIError, and errors.As finds it as such.
type clusterGone struct {
	*flinkapi.APIError
	cluster string
}

func (e *clusterGone) Unwrap() error { return e.APIError }

// isClusterGone reports whether err says the Deployer's cluster no longer
// exists.
func isClusterGone(err error) bool {
	var g *clusterGone
	return errors.As(err, &g)
}

func (a *clusterAPI) JobStatus(ctx context.Context, id flinkapi.JobID) (flinkapi.JobState, error) {
	s, err := a.API.JobStatus(ctx, id)
	return s, a.gone(ctx, id, err)
}

func (a *clusterAPI) Job(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobDetails, error) {
	d, err := a.API.Job(ctx, id)
	return d, a.gone(ctx, id, err)
}

func (a *clusterAPI) CancelJob(ctx context.Context, id flinkapi.JobID) error {
	return a.gone(ctx, id, a.API.CancelJob(ctx, id))
}

func (a *clusterAPI) TriggerSavepoint(ctx context.Context, id flinkapi.JobID, req flinkapi.SavepointRequest) (flinkapi.Operation, error) {
	op, err := a.API.TriggerSavepoint(ctx, id, req)
	return op, a.gone(ctx, id, err)
}

func (a *clusterAPI) StopWithSavepoint(ctx context.Context, id flinkapi.JobID, req flinkapi.StopRequest) (flinkapi.Operation, error) {
	op, err := a.API.StopWithSavepoint(ctx, id, req)
	return op, a.gone(ctx, id, err)
}

func (a *clusterAPI) OperationStatus(ctx context.Context, op flinkapi.Operation) (*flinkapi.OperationResult, error) {
	res, err := a.API.OperationStatus(ctx, op)
	if op.JobID == "" {
		return res, err
	}
	return res, a.gone(ctx, op.JobID, err)
}

func (a *clusterAPI) Checkpoints(ctx context.Context, id flinkapi.JobID) (*flinkapi.CheckpointStatistics, error) {
	s, err := a.API.Checkpoints(ctx, id)
	return s, a.gone(ctx, id, err)
}

func (a *clusterAPI) CheckpointDetails(ctx context.Context, id flinkapi.JobID, checkpointID int64) (*flinkapi.CheckpointStats, error) {
	d, err := a.API.CheckpointDetails(ctx, id, checkpointID)
	return d, a.gone(ctx, id, err)
}

func (a *clusterAPI) CheckpointConfig(ctx context.Context, id flinkapi.JobID) (*flinkapi.CheckpointConfig, error) {
	c, err := a.API.CheckpointConfig(ctx, id)
	return c, a.gone(ctx, id, err)
}

func (a *clusterAPI) JobExceptions(ctx context.Context, id flinkapi.JobID, n int) (*flinkapi.JobExceptions, error) {
	e, err := a.API.JobExceptions(ctx, id, n)
	return e, a.gone(ctx, id, err)
}

func (a *clusterAPI) JobRestarts(ctx context.Context, id flinkapi.JobID) (int64, bool, error) {
	n, ok, err := a.API.JobRestarts(ctx, id)
	return n, ok, a.gone(ctx, id, err)
}

func (a *clusterAPI) JobConfig(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobConfig, error) {
	c, err := a.API.JobConfig(ctx, id)
	return c, a.gone(ctx, id, err)
}

func (a *clusterAPI) ResourceRequirements(ctx context.Context, id flinkapi.JobID) (flinkapi.ResourceRequirements, error) {
	r, err := a.API.ResourceRequirements(ctx, id)
	return r, a.gone(ctx, id, err)
}

func (a *clusterAPI) SetResourceRequirements(ctx context.Context, id flinkapi.JobID, req flinkapi.ResourceRequirements) error {
	return a.gone(ctx, id, a.API.SetResourceRequirements(ctx, id, req))
}

// ListJobs of a cluster that no longer exists is empty.
func (a *clusterAPI) ListJobs(ctx context.Context) ([]flinkapi.JobIDStatus, error) {
	jobs, err := a.API.ListJobs(ctx)
	if err == nil {
		return jobs, nil
	}
	var te *flinkapi.TransportError
	if !errors.As(err, &te) {
		return nil, err
	}
	if exists, xerr := a.d.Exists(ctx, a.c); xerr == nil && !exists {
		return nil, nil
	}
	return nil, err
}

// retire turns the end of an operation that replaced or stopped the job
// of a Deployer's cluster into PhaseDeleteCluster: the outcome it ended
// with (and p.Reason) are kept while the next Steps delete the cluster.
func retire(p *Progress, now time.Time, t Timing) Result {
	p.Replace.Ending, p.Outcome = p.Outcome, ""
	p.Phase, p.Requests, p.LastError = PhaseDeleteCluster, 0, ""
	p.Deadline = now.Add(orDefault(t.Stop, defaultStopTimeout))
	return Result{}
}

// stepDeleteCluster deletes the cluster c of the job the operation
// replaced or stopped, then ends with the outcome kept in p.Ending. A
// cluster that cannot be deleted by the deadline is named in the Reason;
// the outcome stays, as the job is stopped either way.
func stepDeleteCluster(ctx context.Context, d Deployer, c Cluster, p *Progress, now time.Time, t Timing) Result {
	if !now.Before(p.Deadline) && p.Requests == 0 && p.LastError == "" {
		// Nothing failed yet: the time passed while the caller was away.
		p.Deadline = now.Add(orDefault(t.Stop, defaultStopTimeout))
	}
	err := d.Delete(ctx, c)
	noted(ctx, err)
	if err != nil && now.Before(p.Deadline) && !errors.Is(err, ErrDeployRefused) {
		p.Requests++
		p.LastError = err.Error()
		return Result{RequeueAfter: t.backoff(p.Requests)}
	}
	o, reason := p.Replace.Ending, p.Reason
	if err != nil {
		reason += "; the cluster " + c.Name + " of the old job could not be deleted: " + err.Error()
	} else {
		reason += "; the stopped job's cluster " + c.Name + " is deleted"
	}
	p.Replace.Ending = ""
	return finish(p, o, reason)
}

// jobEnv is env with the client of the Deployer's cluster c, where the
// job runs, when there is one.
func jobEnv(env Env, d Deployer, c Cluster) (Env, error) {
	if d == nil || c.IsZero() {
		return env, nil
	}
	if a, ok := unrecorded(env.Client).(*clusterAPI); ok && a.c == c {
		return env, nil // the Controller gave the operation that client
	}
	api, err := clusterClient(d, c)
	if err != nil {
		return env, err
	}
	env.Client = rewrap(env.Client, api)
	return env, nil
}

// absentAPI is the client of a job whose cluster was deleted with it:
// Flink knows no job there, and nothing can be sent.
type absentAPI struct{}

var errNoCluster = errors.New("lifecycle: the job's cluster was deleted with it; there is no JobManager to ask")

func absentJob(id flinkapi.JobID) error {
	return &flinkapi.APIError{StatusCode: 404, Method: "GET", Path: "/jobs/" + string(id),
		Errors: []string{"Could not find Flink job (" + string(id) + "): its cluster was deleted with it"}}
}

func (absentAPI) TriggerSavepoint(_ context.Context, id flinkapi.JobID, _ flinkapi.SavepointRequest) (flinkapi.Operation, error) {
	return flinkapi.Operation{}, absentJob(id)
}
func (absentAPI) StopWithSavepoint(_ context.Context, id flinkapi.JobID, _ flinkapi.StopRequest) (flinkapi.Operation, error) {
	return flinkapi.Operation{}, absentJob(id)
}
func (absentAPI) OperationStatus(_ context.Context, op flinkapi.Operation) (*flinkapi.OperationResult, error) {
	return nil, absentJob(op.JobID)
}
func (absentAPI) Checkpoints(_ context.Context, id flinkapi.JobID) (*flinkapi.CheckpointStatistics, error) {
	return nil, absentJob(id)
}
func (absentAPI) CheckpointDetails(_ context.Context, id flinkapi.JobID, _ int64) (*flinkapi.CheckpointStats, error) {
	return nil, absentJob(id)
}
func (absentAPI) JobStatus(_ context.Context, id flinkapi.JobID) (flinkapi.JobState, error) {
	return "", absentJob(id)
}
func (absentAPI) CancelJob(_ context.Context, id flinkapi.JobID) error { return absentJob(id) }
func (absentAPI) UploadJarReader(context.Context, string, io.Reader) (flinkapi.JarID, error) {
	return "", errNoCluster
}
func (absentAPI) RunJar(context.Context, flinkapi.JarID, flinkapi.RunJarRequest) (flinkapi.JobID, error) {
	return "", errNoCluster
}
func (absentAPI) Job(_ context.Context, id flinkapi.JobID) (*flinkapi.JobDetails, error) {
	return nil, absentJob(id)
}
func (absentAPI) CheckpointConfig(_ context.Context, id flinkapi.JobID) (*flinkapi.CheckpointConfig, error) {
	return nil, absentJob(id)
}
func (absentAPI) Version(context.Context) (flinkapi.Version, error) {
	return flinkapi.Version{}, errNoCluster
}
func (absentAPI) ResourceRequirements(_ context.Context, id flinkapi.JobID) (flinkapi.ResourceRequirements, error) {
	return nil, absentJob(id)
}
func (absentAPI) SetResourceRequirements(_ context.Context, id flinkapi.JobID, _ flinkapi.ResourceRequirements) error {
	return absentJob(id)
}
func (absentAPI) DisposeSavepoint(context.Context, string) (flinkapi.Operation, error) {
	return flinkapi.Operation{}, errNoCluster
}
func (absentAPI) JobExceptions(_ context.Context, id flinkapi.JobID, _ int) (*flinkapi.JobExceptions, error) {
	return nil, absentJob(id)
}
func (absentAPI) JobConfig(_ context.Context, id flinkapi.JobID) (*flinkapi.JobConfig, error) {
	return nil, absentJob(id)
}
func (absentAPI) JobRestarts(_ context.Context, id flinkapi.JobID) (int64, bool, error) {
	return 0, false, absentJob(id)
}
func (absentAPI) ListJobs(context.Context) ([]flinkapi.JobIDStatus, error)     { return nil, nil }
func (absentAPI) JobsOverview(context.Context) ([]flinkapi.JobOverview, error) { return nil, nil }
func (absentAPI) Overview(context.Context) (*flinkapi.ClusterOverview, error) {
	return nil, errNoCluster
}
func (absentAPI) JobExecutionResult(_ context.Context, id flinkapi.JobID) (*flinkapi.ExecutionResult, error) {
	return nil, absentJob(id)
}
func (absentAPI) JobAccumulators(_ context.Context, id flinkapi.JobID) ([]flinkapi.Accumulator, error) {
	return nil, absentJob(id)
}
func (absentAPI) JobPlan(_ context.Context, id flinkapi.JobID) ([]flinkapi.PlanNode, error) {
	return nil, absentJob(id)
}
func (absentAPI) VertexMetricNames(_ context.Context, id flinkapi.JobID, _ string) ([]string, error) {
	return nil, absentJob(id)
}
func (absentAPI) VertexLoad(_ context.Context, id flinkapi.JobID, _, _ string) (flinkapi.VertexLoad, error) {
	return flinkapi.VertexLoad{}, absentJob(id)
}
func (absentAPI) TriggerCheckpoint(_ context.Context, id flinkapi.JobID, _ flinkapi.CheckpointRequest) (flinkapi.Operation, error) {
	return flinkapi.Operation{}, absentJob(id)
}
func (absentAPI) ListJars(context.Context) ([]flinkapi.Jar, error) { return nil, errNoCluster }
func (absentAPI) DeleteJar(context.Context, flinkapi.JarID) error  { return errNoCluster }
func (absentAPI) JarPlan(context.Context, flinkapi.JarID, flinkapi.JarPlanRequest) (*flinkapi.Plan, error) {
	return nil, errNoCluster
}
