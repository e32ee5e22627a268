package lifecycle

import (
	"context"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// More calls of API, recorded like the others.

func (r *recorder) Overview(ctx context.Context) (*flinkapi.ClusterOverview, error) {
	ov, err := r.API.Overview(ctx)
	r.note(err)
	return ov, err
}

func (r *recorder) JarPlan(ctx context.Context, jar flinkapi.JarID, req flinkapi.JarPlanRequest) (*flinkapi.Plan, error) {
	if _, nested := r.API.(*recorder); !nested { // as RunJar
		if err := resolveInto(ctx, &req.ProgramArgs, &req.Secrets); err != nil {
			return nil, err
		}
	}
	plan, err := r.API.JarPlan(ctx, jar, req)
	r.note(err)
	return plan, cleanError(ctx, err)
}

func (r *recorder) JobExecutionResult(ctx context.Context, job flinkapi.JobID) (*flinkapi.ExecutionResult, error) {
	res, err := r.API.JobExecutionResult(ctx, job)
	r.note(err)
	return cleanResult(ctx, res), err
}

func (r *recorder) JobAccumulators(ctx context.Context, job flinkapi.JobID) ([]flinkapi.Accumulator, error) {
	accs, err := r.API.JobAccumulators(ctx, job)
	r.note(err)
	return accs, err
}

func (r *recorder) JobPlan(ctx context.Context, job flinkapi.JobID) ([]flinkapi.PlanNode, error) {
	plan, err := r.API.JobPlan(ctx, job)
	r.note(err)
	return plan, err
}

func (r *recorder) VertexMetricNames(ctx context.Context, job flinkapi.JobID, vertex string) ([]string, error) {
	names, err := r.API.VertexMetricNames(ctx, job, vertex)
	r.note(err)
	return names, err
}

func (r *recorder) VertexLoad(ctx context.Context, job flinkapi.JobID, vertex, pendingMetric string) (flinkapi.VertexLoad, error) {
	l, err := r.API.VertexLoad(ctx, job, vertex, pendingMetric)
	r.note(err)
	return l, err
}

func (r *recorder) TriggerCheckpoint(ctx context.Context, job flinkapi.JobID, req flinkapi.CheckpointRequest) (flinkapi.Operation, error) {
	op, err := r.API.TriggerCheckpoint(ctx, job, req)
	r.note(err)
	return op, err
}

func (r *recorder) ListJars(ctx context.Context) ([]flinkapi.Jar, error) {
	jars, err := r.API.ListJars(ctx)
	r.note(err)
	return jars, err
}

func (r *recorder) DeleteJar(ctx context.Context, jar flinkapi.JarID) error {
	err := r.API.DeleteJar(ctx, jar)
	r.note(err)
	return err
}

func (r *recorder) JobsOverview(ctx context.Context) ([]flinkapi.JobOverview, error) {
	jobs, err := r.API.JobsOverview(ctx)
	r.note(err)
	return jobs, err
}
