package lifecycle

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// API is what lifecycle, and the fleet above it, needs of the Flink REST
// client, declared once: *flinkapi.Client has every call. The operations and
// the Controller hold this one interface; what a cluster can do is a matter
// of its Flink version, which the client checks before it sends a request (a
// call the version lacks fails with flinkapi.ErrUnsupported, nothing sent),
// never of which calls a client value has. A test double embeds an API (or
// *flinkapi.Client) and overrides the calls it changes.
type API interface {
	// The cluster.
	Version(ctx context.Context) (flinkapi.Version, error)
	Overview(ctx context.Context) (*flinkapi.ClusterOverview, error)
	JobsOverview(ctx context.Context) ([]flinkapi.JobOverview, error)
	ListJobs(ctx context.Context) ([]flinkapi.JobIDStatus, error)

	// One job.
	Job(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobDetails, error)
	JobStatus(ctx context.Context, id flinkapi.JobID) (flinkapi.JobState, error)
	CancelJob(ctx context.Context, id flinkapi.JobID) error
	JobExceptions(ctx context.Context, id flinkapi.JobID, maxExceptions int) (*flinkapi.JobExceptions, error)
	JobRestarts(ctx context.Context, id flinkapi.JobID) (int64, bool, error)
	JobExecutionResult(ctx context.Context, job flinkapi.JobID) (*flinkapi.ExecutionResult, error)
	JobAccumulators(ctx context.Context, job flinkapi.JobID) ([]flinkapi.Accumulator, error)
	JobPlan(ctx context.Context, job flinkapi.JobID) ([]flinkapi.PlanNode, error)
	JobConfig(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobConfig, error)
	VertexMetricNames(ctx context.Context, job flinkapi.JobID, vertex string) ([]string, error)
	VertexLoad(ctx context.Context, job flinkapi.JobID, vertex, pendingMetric string) (flinkapi.VertexLoad, error)
	ResourceRequirements(ctx context.Context, id flinkapi.JobID) (flinkapi.ResourceRequirements, error)
	SetResourceRequirements(ctx context.Context, id flinkapi.JobID, req flinkapi.ResourceRequirements) error

	// Savepoints and checkpoints.
	TriggerSavepoint(ctx context.Context, job flinkapi.JobID, req flinkapi.SavepointRequest) (flinkapi.Operation, error)
	StopWithSavepoint(ctx context.Context, job flinkapi.JobID, req flinkapi.StopRequest) (flinkapi.Operation, error)
	TriggerCheckpoint(ctx context.Context, job flinkapi.JobID, req flinkapi.CheckpointRequest) (flinkapi.Operation, error)
	OperationStatus(ctx context.Context, op flinkapi.Operation) (*flinkapi.OperationResult, error)
	Checkpoints(ctx context.Context, job flinkapi.JobID) (*flinkapi.CheckpointStatistics, error)
	CheckpointDetails(ctx context.Context, job flinkapi.JobID, checkpointID int64) (*flinkapi.CheckpointStats, error)
	CheckpointConfig(ctx context.Context, job flinkapi.JobID) (*flinkapi.CheckpointConfig, error)
	DisposeSavepoint(ctx context.Context, savepointPath string) (flinkapi.Operation, error)

	// Jars.
	UploadJarReader(ctx context.Context, name string, r io.Reader) (flinkapi.JarID, error)
	ListJars(ctx context.Context) ([]flinkapi.Jar, error)
	DeleteJar(ctx context.Context, jar flinkapi.JarID) error
	RunJar(ctx context.Context, jar flinkapi.JarID, req flinkapi.RunJarRequest) (flinkapi.JobID, error)
	JarPlan(ctx context.Context, jar flinkapi.JarID, req flinkapi.JarPlanRequest) (*flinkapi.Plan, error)
}

var _ API = (*flinkapi.Client)(nil)

// Env is what every operation and the Controller share: the client, the
// timing, the clock, where to report, and where savepoints go. Build it
// once and embed it in each operation:
//
//	jars, err := lifecycle.JarDir("/opt/flink/usrlib") // where jars may be read
//	...
//	env := lifecycle.Env{Client: c, Timing: lifecycle.Timing{Poll: time.Second}, Jars: jars}
//	op := &lifecycle.Upgrade{Env: env, Job: id, JarFile: "app.jar"}
//
// The operations learn the cluster's Flink version from the client when
// they need it; flinkkit speaks to Flink 1.15 and later, which all take
// client trigger ids and the stop with savepoint.
type Env struct {
	// Client is the Flink REST client, typically a *flinkapi.Client. The
	// Controller sends each request of a *flinkapi.Client once
	// (Client.WithoutRetries), whatever its retry policy: it retries by
	// being called again (Result.RequeueAfter), never waits in a call, and
	// sends at most MaxRequestsPerCall requests per call. The operations
	// run on their own (Run) use the client's retry policy.
	Client API
	// Timing sets the deadlines and the poll interval; zero fields take
	// the defaults.
	Timing Timing
	// Clock tells the time and waits in Run; nil: the wall clock.
	Clock Clock
	// OnTransition, if set, is called after every change of phase.
	OnTransition func(Transition)
	// Logger, if set, logs every change of phase.
	Logger *slog.Logger
	// TargetDirectory is where savepoints are written; empty: the
	// cluster's default (state.savepoints.dir).
	TargetDirectory string
	// FormatType is the savepoint format; empty: Flink's default.
	FormatType flinkapi.FormatType
	// Jars is where the jar files the specs and operations name are read
	// from (JarDir, JarFS); nil: none is, and a JarFile to read is
	// refused with ErrInvalidSpec. Jobs started from an uploaded JarID or
	// by a Deployer need none.
	Jars *Jars
	// Secrets gives the values of the secrets the job's arguments name
	// (${secret:NAME}; see Secrets); nil: none, and a job whose arguments
	// name one is not started (ErrSecretUnavailable).
	Secrets Secrets
}

// clock is the Env's Clock, or the wall clock (clockOr): the one clock
// of every operation and of the Controller, which embed the Env.
func (e *Env) clock() Clock { return clockOr(e.Clock) }

// quiet is e without its reporting: for the operations an operation runs
// on its own Progress, which it reports itself.
func (e Env) quiet() Env {
	e.OnTransition, e.Logger = nil, nil
	return e
}

// ErrInvalidSpec is matched by the error Validate returns for a JobSpec
// the Controller cannot act on.
var ErrInvalidSpec = errors.New("lifecycle: invalid job spec")

// soon is the RequeueAfter for "at once": after a step that asks for no
// wait, or once an action ended and the job is to be observed again.
const soon = 10 * time.Millisecond
