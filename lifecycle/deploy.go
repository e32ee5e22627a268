package lifecycle

import (
	"context"
	"errors"

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
// ($internal.pipeline.job-id), the restore path (execution.savepoint.path
// and execution.savepoint.ignore-unclaimed-state) and
// execution.shutdown-on-application-finish: false. A Deployer writes it
// into the cluster's configuration.
func ApplicationConfiguration(req DeployRequest) map[string]string {
	out := make(map[string]string, len(req.FlinkConfiguration)+4)
	for k, v := range req.FlinkConfiguration {
		out[k] = v
	}
	out["$internal.pipeline.job-id"] = string(req.JobID)
	out[ShutdownOnFinish] = "false"
	if req.RestorePath != "" {
		out["execution.savepoint.path"] = req.RestorePath
		if req.AllowNonRestoredState {
			out["execution.savepoint.ignore-unclaimed-state"] = "true"
		}
	}
	return out
}

// ErrDeployRefused marks a Deployer error that a retry will not change.
var ErrDeployRefused = errors.New("lifecycle: deploy refused")
