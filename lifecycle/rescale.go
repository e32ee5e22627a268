package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// defaultRescaleTimeout is how long Rescale waits for the job to reach the
// new parallelism by default. Flink's adaptive scheduler waits between
// rescales (jobmanager.adaptive-scheduler.scaling-interval.min in 1.x,
// executing.cooldown-after-rescaling in 2.x, 30 s by default).
const defaultRescaleTimeout = 5 * time.Minute

// Rescale changes a running job's parallelism, in place where Flink allows
// it and through an upgrade otherwise, as policy.DecideRescale says: on
// Flink 1.18+ with the adaptive scheduler it sets the job's resource
// requirements (lower bound 1, upper bound Parallelism for every vertex) and
// confirms that every vertex reaches Parallelism within Timeout; otherwise,
// unless Policy.InPlaceOnly, it runs Upgrade with Run.Parallelism set,
// under all of Upgrade's invariants, and confirms the new job's parallelism
// the same way. Build it anew from its configuration whenever convenient:
// all its state is in the Progress passed to Step.
type Rescale struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the job to rescale.
	Job flinkapi.JobID
	// Parallelism is the new parallelism of every vertex.
	Parallelism int
	// Policy says whether the restart path is allowed.
	Policy policy.RescalePolicy
	// Upgrade configures the restart path: the new job (JarID or JarFile,
	// Run), its UpdatePolicy, stop strategy, timings and restore points.
	// Env and Job are Rescale's, Run.Parallelism is set
	// to Parallelism, and transitions are reported by Rescale. A job that
	// sets its parallelism in its code ignores Run.Parallelism: give it the
	// new one in Run's arguments too.
	Upgrade Upgrade
	// Timeout bounds the wait for the job to reach the new parallelism
	// (default 5m).
	Timeout time.Duration
}

// Step does at most one REST request. The operation goes ObserveScheduler
// (GET resource-requirements: an answer means the adaptive scheduler,
// Flink's UnsupportedOperationException the default one; skipped before
// 1.18) and ObserveParallelism (the job's details), then follows the path
// policy.DecideRescale chose. In place: SetRequirements with the vertex ids
// recorded beforehand in p.Vertices, then ConfirmParallelism until every
// vertex runs at the new parallelism. Through an upgrade: the phases of
// Upgrade, then ConfirmParallelism on the new job. It ends Succeeded,
// NotNeeded (the job already runs at that parallelism), Blocked (the
// policy's reason in p.Decision), ParallelismNotReached when the job keeps
// another parallelism past Timeout, RescaleRejected when Flink refuses the
// requirements, JobGone or JobTerminal, or in Upgrade's outcome. Step
// returns an error for a canceled context, a Parallelism below 1 or an
// empty Job (before any request), and the errors of Upgrade.Step.
func (r *Rescale) Step(ctx context.Context, p *Progress) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if r.Parallelism < 1 {
		return Result{}, fmt.Errorf("lifecycle: Rescale.Parallelism is %d; want 1 or more", r.Parallelism)
	}
	if r.Job == "" {
		return Result{}, errors.New("lifecycle: Rescale.Job is empty; name the job to rescale")
	}
	op := *r
	return bound(ctx, p, opRescale, r.Job, &op.Env, r.Upgrade.Run.ProgramArgs, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opRescale, r.OnTransition, r.Logger, func() (Result, error) { return op.advance(ctx, p, r.clock().Now()) })
	})
}

func (r *Rescale) advance(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case "":
		startAt(p, now)
		p.JobID, p.Replace.PreviousJobID, p.Rescale.Parallelism = r.Job, r.Job, r.Parallelism
		p.Deadline = now.Add(orDefault(r.Timing.Stop, defaultStopTimeout))
		p.Phase = PhaseObserveScheduler
		return Result{}, nil
	case PhaseObserveScheduler, PhaseObserveParallelism, PhaseSetRequirements:
		if !now.Before(p.Deadline) {
			return finish(p, OutcomeTimedOut, "the deadline passed in phase "+string(p.Phase)+lastError(p)), nil
		}
		switch p.Phase {
		case PhaseObserveScheduler:
			return r.observeScheduler(ctx, p)
		case PhaseObserveParallelism:
			return r.observeParallelism(ctx, p, now)
		}
		return r.setRequirements(ctx, p, now)
	case PhaseConfirmParallelism:
		return r.confirm(ctx, p, now)
	}
	if p.Rescale.Path != policy.RescaleByUpgrade {
		return finish(p, OutcomeBlocked, fmt.Sprintf("unknown phase %q of Rescale", p.Phase)), nil
	}
	v, err := r.Client.Version(ctx)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.Timing.backoff(2)}, nil
	}
	res, err := r.upgrade(v).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	if p.Outcome != OutcomeSucceeded {
		return res, nil
	}
	// The new job runs: confirm its parallelism.
	p.Outcome, p.Reason, p.LastError = "", "", ""
	p.Phase = PhaseConfirmParallelism
	p.Deadline = now.Add(orDefault(r.Timeout, defaultRescaleTimeout))
	return Result{RequeueAfter: r.Timing.poll()}, nil
}

// upgrade is the Upgrade of the restart path.
func (r *Rescale) upgrade(v flinkapi.Version) *Upgrade {
	u := r.Upgrade
	u.Env, u.Job = r.Env, r.Job
	u.Run.Parallelism = r.Parallelism
	u.OnTransition, u.Logger = nil, nil
	return &u
}

// observeScheduler learns whether the job runs under the adaptive
// scheduler from its resource requirements.
func (r *Rescale) observeScheduler(ctx context.Context, p *Progress) (Result, error) {
	v, err := r.Client.Version(ctx)
	if err == nil && v.Supports(flinkapi.FeatureResourceRequirements) {
		_, err = r.Client.ResourceRequirements(ctx, p.Replace.PreviousJobID)
	} else if err == nil {
		p.Rescale.Scheduler = "" // no resource requirements before 1.18
		p.Phase, p.LastError = PhaseObserveParallelism, ""
		return Result{}, nil
	}
	switch {
	case err == nil:
		p.Rescale.Scheduler = policy.SchedulerAdaptive
	case flinkapi.IsUnsupportedByScheduler(err):
		p.Rescale.Scheduler = policy.SchedulerDefault
	case flinkapi.IsJobNotFound(err), flinkapi.IsDispatcherJobNotFound(err), permanent(err):
		// The job is looked at next; its scheduler stays unknown.
		p.Rescale.Scheduler = ""
	default:
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.Timing.backoff(2)}, nil
	}
	p.Phase, p.LastError = PhaseObserveParallelism, ""
	return Result{}, nil
}

// observeParallelism reads the job's vertices and decides.
func (r *Rescale) observeParallelism(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	v, err := r.Client.Version(ctx)
	if err != nil {
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.Timing.backoff(2)}, nil
	}
	obs := policy.RescaleObservations{FlinkVersion: v, Scheduler: p.Rescale.Scheduler}
	d, err := r.Client.Job(ctx, p.Replace.PreviousJobID)
	switch {
	case err == nil:
		obs.JobState = d.State
		obs.Vertices = make([]policy.VertexParallelism, len(d.Vertices))
		for i, vx := range d.Vertices {
			obs.Vertices[i] = policy.VertexParallelism{ID: vx.ID, Parallelism: vx.Parallelism, MaxParallelism: vx.MaxParallelism}
		}
		p.Replace.Observed.State, p.Replace.Observed.Missing, p.Replace.Observed.Since = d.State, false, d.Timestamps[d.State]
	case flinkapi.IsJobNotFound(err):
		p.Replace.Observed.State, p.Replace.Observed.Missing = "", true
	default:
		p.LastError = errMessage(err)
		return Result{RequeueAfter: r.Timing.backoff(2)}, nil
	}
	p.LastError = ""
	dec := policy.DecideRescale(r.Policy, obs, r.Parallelism)
	p.Replace.Decision = dec.Reason
	switch dec.Path {
	case policy.RescaleNone:
		return finish(p, OutcomeNotNeeded, string(dec.Reason)+": "+dec.Message()), nil
	case policy.RescaleWait:
		return Result{RequeueAfter: r.Timing.poll()}, nil
	case policy.RescaleInPlace:
		ids := make([]string, len(obs.Vertices))
		for i, vx := range obs.Vertices {
			if vx.ID == "" || strings.Contains(vx.ID, ",") {
				return finish(p, OutcomeBlocked, fmt.Sprintf("the job details name a vertex %q that cannot be recorded", vx.ID)), nil
			}
			ids[i] = vx.ID
		}
		p.Rescale.Path, p.Rescale.Vertices = policy.RescaleInPlace, strings.Join(ids, ",")
		p.Phase = PhaseSetRequirements
		p.Deadline = now.Add(orDefault(r.Timing.Stop, defaultStopTimeout))
		return Result{}, nil
	case policy.RescaleByUpgrade:
		p.Rescale.Path = policy.RescaleByUpgrade
		p.Phase, p.Outcome, p.Requests, p.LastError, p.Deadline = "", "", 0, "", time.Time{}
		return r.upgrade(v).step(ctx, p)
	}
	return finish(p, OutcomeBlocked, string(dec.Reason)+": "+dec.Message()), nil
}

// setRequirements sends the new bounds; PUT is idempotent, so it is sent
// again after a transient error.
func (r *Rescale) setRequirements(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	req := flinkapi.ResourceRequirements{}
	for _, id := range strings.Split(p.Rescale.Vertices, ",") {
		req[id] = flinkapi.ParallelismBounds{LowerBound: 1, UpperBound: p.Rescale.Parallelism}
	}
	err := r.Client.SetResourceRequirements(ctx, p.Replace.PreviousJobID, req)
	switch {
	case err == nil:
		p.LastError = ""
		p.Phase = PhaseConfirmParallelism
		p.Deadline = now.Add(orDefault(r.Timeout, defaultRescaleTimeout))
		return Result{RequeueAfter: r.Timing.poll()}, nil
	case flinkapi.IsJobNotFound(err), flinkapi.IsDispatcherJobNotFound(err):
		return finish(p, OutcomeJobGone, "Flink does not know the job: "+errMessage(err)), nil
	case permanent(err), isServerError(err):
		return finish(p, OutcomeRescaleRejected, "Flink refused the resource requirements: "+errMessage(err)), nil
	}
	p.LastError = errMessage(err)
	return Result{RequeueAfter: r.Timing.backoff(2)}, nil
}

// isServerError reports a 500 answer.
func isServerError(err error) bool {
	var ae *flinkapi.APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusInternalServerError
}

// confirm reads the job's details until every vertex runs at the new
// parallelism, or the deadline passes.
func (r *Rescale) confirm(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	d, err := r.Client.Job(ctx, p.JobID)
	switch {
	case err == nil:
		p.LastError = ""
	case flinkapi.IsJobNotFound(err):
		return finish(p, OutcomeJobGone, "Flink no longer knows the job "+string(p.JobID)), nil
	default:
		p.LastError = errMessage(err)
		if !now.Before(p.Deadline) {
			return finish(p, OutcomeParallelismNotReached, "the deadline passed before the job's parallelism could be read"+lastError(p)), nil
		}
		return Result{RequeueAfter: r.Timing.backoff(2)}, nil
	}
	if d.State.IsTerminal() {
		return finish(p, OutcomeJobTerminal, "the job is "+string(d.State)+" while its parallelism was being confirmed"), nil
	}
	lo, hi := 0, 0
	for i, v := range d.Vertices {
		if i == 0 || v.Parallelism < lo {
			lo = v.Parallelism
		}
		hi = max(hi, v.Parallelism)
	}
	how := "in place"
	if p.Rescale.Path == policy.RescaleByUpgrade {
		how = "through an upgrade, restored from " + string(p.Replace.RestoreKind) + " " + p.Replace.RestoreFrom
	}
	if d.State == flinkapi.JobRunning && len(d.Vertices) > 0 && lo == p.Rescale.Parallelism && hi == p.Rescale.Parallelism {
		return finish(p, OutcomeSucceeded, fmt.Sprintf("the job %s runs at parallelism %d, rescaled %s", p.JobID, p.Rescale.Parallelism, how)), nil
	}
	if !now.Before(p.Deadline) {
		at := strconv.Itoa(lo)
		if hi != lo {
			at += ".." + strconv.Itoa(hi)
		}
		return finish(p, OutcomeParallelismNotReached, fmt.Sprintf("the job %s is %s at parallelism %s, not %d, after the rescale %s: the cluster did not apply it in time (free slots?)",
			p.JobID, d.State, at, p.Rescale.Parallelism, how)), nil
	}
	return Result{RequeueAfter: r.Timing.poll()}, nil
}

func lastError(p *Progress) string {
	if p.LastError == "" {
		return ""
	}
	return ": " + p.LastError
}

// RescaleProgress is the record of a Rescale in a Progress.
type RescaleProgress struct {
	// Parallelism is the parallelism Rescale sets.
	Parallelism int `json:"parallelism,omitempty"`
	// Scheduler is the job's scheduler as Rescale found it; empty if
	// unknown.
	Scheduler policy.Scheduler `json:"scheduler,omitempty"`
	// Path is the way Rescale took (InPlace or Upgrade) once chosen.
	Path policy.RescalePath `json:"path,omitempty"`
	// Vertices are the ids of the job's vertices, comma-separated, whose
	// parallelism bounds Rescale sets; recorded before the request.
	Vertices string `json:"vertices,omitempty"`
}
