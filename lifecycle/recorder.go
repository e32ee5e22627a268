package lifecycle

import (
	"context"
	"errors"
	"io"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// recorder is the client an operation acts through during one Step (see
// bound): every call goes to API, and the first answer that says the
// client is set up wrong for the cluster (flinkapi.ErrMisconfigured) is
// kept in the Step's sink, to be returned as Step's error. No call of an
// operation can leave it out: the operation holds no other client.
type recorder struct {
	API
	s *sink
}

// record returns c wrapped so that its answers are recorded in s. A
// client that is a recorder already (a caller's, recording for itself) is
// wrapped again: each records in its own sink.
func record(c API, s *sink) API {
	if c == nil {
		return nil
	}
	return &recorder{API: c, s: s}
}

// rewrap returns c recorded in the sinks of like, if like is a recorder
// (of recorders), and c as it is otherwise: for the client of a
// Deployer's cluster that replaces a recorded one.
func rewrap(like, c API) API {
	r, ok := like.(*recorder)
	if !ok {
		return c
	}
	return &recorder{API: rewrap(r.API, c), s: r.s}
}

// unrecorded returns the client that c records (through any number of
// recorders), or c.
func unrecorded(c API) API {
	for {
		r, ok := c.(*recorder)
		if !ok {
			return c
		}
		c = r.API
	}
}

func (r *recorder) note(err error) {
	if err != nil && r.s != nil && r.s.err == nil && errors.Is(err, flinkapi.ErrMisconfigured) {
		r.s.err = err
	}
}

func (r *recorder) TriggerSavepoint(ctx context.Context, job flinkapi.JobID, req flinkapi.SavepointRequest) (flinkapi.Operation, error) {
	op, err := r.API.TriggerSavepoint(ctx, job, req)
	r.note(err)
	return op, err
}

func (r *recorder) StopWithSavepoint(ctx context.Context, job flinkapi.JobID, req flinkapi.StopRequest) (flinkapi.Operation, error) {
	op, err := r.API.StopWithSavepoint(ctx, job, req)
	r.note(err)
	return op, err
}

func (r *recorder) OperationStatus(ctx context.Context, op flinkapi.Operation) (*flinkapi.OperationResult, error) {
	res, err := r.API.OperationStatus(ctx, op)
	r.note(err)
	return res, err
}

func (r *recorder) Checkpoints(ctx context.Context, job flinkapi.JobID) (*flinkapi.CheckpointStatistics, error) {
	st, err := r.API.Checkpoints(ctx, job)
	r.note(err)
	return st, err
}

func (r *recorder) CheckpointDetails(ctx context.Context, job flinkapi.JobID, checkpointID int64) (*flinkapi.CheckpointStats, error) {
	d, err := r.API.CheckpointDetails(ctx, job, checkpointID)
	r.note(err)
	return d, err
}

func (r *recorder) JobStatus(ctx context.Context, id flinkapi.JobID) (flinkapi.JobState, error) {
	st, err := r.API.JobStatus(ctx, id)
	r.note(err)
	return st, err
}

func (r *recorder) CancelJob(ctx context.Context, id flinkapi.JobID) error {
	err := r.API.CancelJob(ctx, id)
	r.note(err)
	return err
}

func (r *recorder) UploadJarReader(ctx context.Context, name string, rd io.Reader) (flinkapi.JarID, error) {
	id, err := r.API.UploadJarReader(ctx, name, rd)
	r.note(err)
	return id, err
}

// RunJar puts the values of the secrets the arguments name into the
// request, at the last recorder before the client: every other record of
// the request keeps the placeholders.
func (r *recorder) RunJar(ctx context.Context, jar flinkapi.JarID, req flinkapi.RunJarRequest) (flinkapi.JobID, error) {
	if _, nested := r.API.(*recorder); !nested {
		if err := resolveInto(ctx, &req.ProgramArgs, &req.Secrets); err != nil {
			return "", err
		}
	}
	id, err := r.API.RunJar(ctx, jar, req)
	r.note(err)
	return id, cleanError(ctx, err)
}

func (r *recorder) Job(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobDetails, error) {
	d, err := r.API.Job(ctx, id)
	r.note(err)
	return d, err
}

func (r *recorder) CheckpointConfig(ctx context.Context, job flinkapi.JobID) (*flinkapi.CheckpointConfig, error) {
	c, err := r.API.CheckpointConfig(ctx, job)
	r.note(err)
	return c, err
}

func (r *recorder) Version(ctx context.Context) (flinkapi.Version, error) {
	v, err := r.API.Version(ctx)
	r.note(err)
	return v, err
}

func (r *recorder) ResourceRequirements(ctx context.Context, id flinkapi.JobID) (flinkapi.ResourceRequirements, error) {
	req, err := r.API.ResourceRequirements(ctx, id)
	r.note(err)
	return req, err
}

func (r *recorder) SetResourceRequirements(ctx context.Context, id flinkapi.JobID, req flinkapi.ResourceRequirements) error {
	err := r.API.SetResourceRequirements(ctx, id, req)
	r.note(err)
	return err
}

func (r *recorder) DisposeSavepoint(ctx context.Context, savepointPath string) (flinkapi.Operation, error) {
	op, err := r.API.DisposeSavepoint(ctx, savepointPath)
	r.note(err)
	return op, err
}

// JobExceptions takes the values of the job's secrets out of Flink's
// exceptions, which echo a program's arguments.
func (r *recorder) JobExceptions(ctx context.Context, id flinkapi.JobID, maxExceptions int) (*flinkapi.JobExceptions, error) {
	e, err := r.API.JobExceptions(ctx, id, maxExceptions)
	r.note(err)
	return cleanExceptions(ctx, e), err
}

func (r *recorder) JobConfig(ctx context.Context, id flinkapi.JobID) (*flinkapi.JobConfig, error) {
	c, err := r.API.JobConfig(ctx, id)
	r.note(err)
	return c, err
}

func (r *recorder) JobRestarts(ctx context.Context, id flinkapi.JobID) (int64, bool, error) {
	n, ok, err := r.API.JobRestarts(ctx, id)
	r.note(err)
	return n, ok, err
}

func (r *recorder) ListJobs(ctx context.Context) ([]flinkapi.JobIDStatus, error) {
	jobs, err := r.API.ListJobs(ctx)
	r.note(err)
	return jobs, err
}

// withoutRetries is api sending every request once when it is a
// *flinkapi.Client: the Controller retries by being called again, and a
// call never waits in a retry nor sends more than MaxRequestsPerCall
// requests.
func withoutRetries(api API) API {
	switch a := api.(type) {
	case *flinkapi.Client:
		if a != nil {
			return a.WithoutRetries()
		}
	case *clusterAPI:
		return &clusterAPI{API: withoutRetries(a.API), d: a.d, c: a.c}
	}
	return api
}
