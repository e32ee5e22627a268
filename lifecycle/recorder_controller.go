package lifecycle

import (
	"context"
	"errors"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// errUnsupported is the error of a recorder's call that its client does
// not have; supports tells beforehand.
var errUnsupported = errors.New("lifecycle: the client does not support this call")

// supports reports whether the client c records (or c itself) has the
// calls of T.
func supports[T any](c API) bool {
	_, ok := unrecorded(c).(T)
	return ok
}

// The calls the Controller makes beyond API, recorded like the others.

func (r *recorder) Overview(ctx context.Context) (*flinkapi.ClusterOverview, error) {
	c, ok := r.API.(overviewAPI)
	if !ok {
		return nil, errUnsupported
	}
	ov, err := c.Overview(ctx)
	r.note(err)
	return ov, err
}

func (r *recorder) JarPlan(ctx context.Context, jar flinkapi.JarID, req flinkapi.JarPlanRequest) (*flinkapi.Plan, error) {
	c, ok := r.API.(PreflightAPI)
	if !ok {
		return nil, errUnsupported
	}
	if _, nested := r.API.(*recorder); !nested { // as RunJar
		if err := resolveInto(ctx, &req.ProgramArgs, &req.Secrets); err != nil {
			return nil, err
		}
	}
	plan, err := c.JarPlan(ctx, jar, req)
	r.note(err)
	return plan, cleanError(ctx, err)
}

func (r *recorder) JobExecutionResult(ctx context.Context, job flinkapi.JobID) (*flinkapi.ExecutionResult, error) {
	c, ok := r.API.(resultReader)
	if !ok {
		return nil, errUnsupported
	}
	res, err := c.JobExecutionResult(ctx, job)
	r.note(err)
	return cleanResult(ctx, res), err
}

func (r *recorder) JobAccumulators(ctx context.Context, job flinkapi.JobID) ([]flinkapi.Accumulator, error) {
	c, ok := r.API.(resultReader)
	if !ok {
		return nil, errUnsupported
	}
	accs, err := c.JobAccumulators(ctx, job)
	r.note(err)
	return accs, err
}

func (r *recorder) JobPlan(ctx context.Context, job flinkapi.JobID) ([]flinkapi.PlanNode, error) {
	c, ok := r.API.(AutoscaleAPI)
	if !ok {
		return nil, errUnsupported
	}
	plan, err := c.JobPlan(ctx, job)
	r.note(err)
	return plan, err
}

func (r *recorder) VertexMetricNames(ctx context.Context, job flinkapi.JobID, vertex string) ([]string, error) {
	c, ok := r.API.(AutoscaleAPI)
	if !ok {
		return nil, errUnsupported
	}
	names, err := c.VertexMetricNames(ctx, job, vertex)
	r.note(err)
	return names, err
}

func (r *recorder) VertexLoad(ctx context.Context, job flinkapi.JobID, vertex, pendingMetric string) (flinkapi.VertexLoad, error) {
	c, ok := r.API.(AutoscaleAPI)
	if !ok {
		return flinkapi.VertexLoad{}, errUnsupported
	}
	l, err := c.VertexLoad(ctx, job, vertex, pendingMetric)
	r.note(err)
	return l, err
}

func (r *recorder) TriggerCheckpoint(ctx context.Context, job flinkapi.JobID, req flinkapi.CheckpointRequest) (flinkapi.Operation, error) {
	c, ok := r.API.(checkpointTriggerAPI)
	if !ok {
		return flinkapi.Operation{}, errUnsupported
	}
	op, err := c.TriggerCheckpoint(ctx, job, req)
	r.note(err)
	return op, err
}

var (
	_ overviewAPI          = (*recorder)(nil)
	_ resultReader         = (*recorder)(nil)
	_ AutoscaleAPI         = (*recorder)(nil)
	_ checkpointTriggerAPI = (*recorder)(nil)
)

func (r *recorder) ListJars(ctx context.Context) ([]flinkapi.Jar, error) {
	c, ok := r.API.(jarsLister)
	if !ok {
		return nil, errUnsupported
	}
	jars, err := c.ListJars(ctx)
	r.note(err)
	return jars, err
}
