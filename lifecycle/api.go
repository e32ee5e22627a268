package lifecycle

import (
	"context"

	"github.com/flinkkit/flinkkit/flinkapi"
)

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

// SubmitAPI is what Submit needs: uploading a jar, running it, and looking
// the job up before submitting again.
type SubmitAPI interface {
	UploadJar(ctx context.Context, file string) (flinkapi.JarID, error)
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
