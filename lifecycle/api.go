package lifecycle

import (
	"context"
	"log/slog"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// API is the Flink REST client the operations and the Controller use:
// *flinkapi.Client. The narrower interfaces below name the part each
// operation calls.
type API interface {
	RescaleAPI
	DisposeSavepoint(ctx context.Context, savepointPath string) (flinkapi.Operation, error)
	JobExceptions(ctx context.Context, id flinkapi.JobID, maxExceptions int) (*flinkapi.JobExceptions, error)
	JobRestarts(ctx context.Context, id flinkapi.JobID) (int64, bool, error)
	ListJobs(ctx context.Context) ([]flinkapi.JobIDStatus, error)
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

// SavepointAPI is the part of the Flink REST client that takes savepoints
// and follows them: triggering, stopping with a savepoint, polling the
// asynchronous result, and reading the checkpoint history a lost trigger id
// is recovered from.
type SavepointAPI interface {
	TriggerSavepoint(ctx context.Context, job flinkapi.JobID, req flinkapi.SavepointRequest) (flinkapi.Operation, error)
	StopWithSavepoint(ctx context.Context, job flinkapi.JobID, req flinkapi.StopRequest) (flinkapi.Operation, error)
	OperationStatus(ctx context.Context, op flinkapi.Operation) (*flinkapi.OperationResult, error)
	Checkpoints(ctx context.Context, job flinkapi.JobID) (*flinkapi.CheckpointStatistics, error)
}

// JobAPI is the part of the client that reads a job's state and cancels
// it.
type JobAPI interface {
	JobStatus(ctx context.Context, id flinkapi.JobID) (flinkapi.JobState, error)
	CancelJob(ctx context.Context, id flinkapi.JobID) error
}

// StopAPI is what Stop needs: savepoints and job control.
type StopAPI interface {
	SavepointAPI
	JobAPI
}

// SubmitAPI is what Submit needs: uploading a jar (read from Env.Jars), running it, and looking
// the job up before submitting again.
type SubmitAPI interface {
	JarUploader
	RunJar(ctx context.Context, jar flinkapi.JarID, req flinkapi.RunJarRequest) (flinkapi.JobID, error)
	Job(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobDetails, error)
	JobStatus(ctx context.Context, id flinkapi.JobID) (flinkapi.JobState, error)
}

var (
	_ SavepointAPI = (*flinkapi.Client)(nil)
	_ JobAPI       = (*flinkapi.Client)(nil)
	_ StopAPI      = (*flinkapi.Client)(nil)
	_ SubmitAPI    = (*flinkapi.Client)(nil)
)

// quiet is e without its reporting: for the operations an operation runs
// on its own Progress, which it reports itself.
func (e Env) quiet() Env {
	e.OnTransition, e.Logger = nil, nil
	return e
}
