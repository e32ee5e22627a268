package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"github.com/flinkkit/flinkkit/internal/bytesize"
	"github.com/flinkkit/flinkkit/policy"
)

// The preflight of the Controller's plan (Controller.Plan): what Flink
// says of the new job before an action starts.

// planPreflight is the preflight of Controller.Plan, read-only: for a
// plan that starts a deploy, upgrade or rescale on a session cluster, it
// asks Flink for the new job's plan from the jar uploaded before (none
// uploaded: PreflightSkipNotUploaded), when that plan lacks vertices of
// the job observed for the state they hold (a snapshot's details), and
// for the cluster's slots, and judges them against the job observed. A verdict that refuses makes the
// plan Blocked. An action in flight shows the preflight it recorded.
func (c *Controller) planPreflight(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs Observation, p *Plan) {
	if p.InFlight {
		p.Preflight = st.Progress.Replace.Preflight.DeepCopy()
		return
	}
	if p.Action == ActionAdopt {
		c.adoptPreflight(ctx, api, spec, st, obs, p)
		return
	}
	switch {
	case !preflighted(p.Action), spec.Preflight.Disabled:
		return
	case c.Deployer != nil:
		p.Preflight = &Preflight{Skipped: PreflightSkipApplication}
		return
	}
	pf := c.newJobPlan(ctx, api, st, p)
	if pf == nil {
		return // Reconcile's preflight asks again, and says why it cannot go on
	}
	if d := obs.Job; d != nil && d.ID == st.JobID && !d.State.IsGloballyTerminal() {
		pf.Old, pf.Held, pf.OldRead = planOf(d), heldSlots(d), true
	}
	if pf.dropsVertices() {
		// The state the old job's vertices hold, read now: the newest
		// snapshot's, or the one the action restores without a new
		// savepoint.
		restore := ""
		if !p.NewSavepoint {
			restore = p.RestorePoint.Location
		}
		for range 2 {
			if pf.StateRead || readOldState(ctx, api, st.JobID, restore, pf) != nil {
				break
			}
		}
	}
	if !spec.Preflight.ElasticSlots {
		if ov, err := api.Overview(ctx); err == nil {
			pf.FreeSlots, pf.TotalSlots, pf.SlotsRead = ov.SlotsAvailable, ov.SlotsTotal, true
		}
	}
	beside := p.Action == ActionBlueGreen || p.Action == ActionCanary
	v := pf.judge(spec.Update.AllowNonRestoredState, !spec.Preflight.ElasticSlots, beside)
	pf.Verdict, p.Preflight = &v, pf
	if !v.Allowed() {
		// The action would end Blocked at its preflight, the job left as
		// it is: the plan's verdict says so now.
		p.Blocked, p.Verdict = "preflight: "+v.Message(), VerdictBlocked
	}
}

// adoptPreflight is the preflight of the plan of an adoption, which
// stops nothing and keeps the job running its own plan: when the plan of
// the spec's job (from its jar, uploaded before: none,
// PreflightSkipNotUploaded) differs from the adopted job's, the two are
// compared as for an upgrade of the adopted job (its vertices, the slots
// it holds, the state of the vertices the spec's job lacks, the
// cluster's slots), so that the plan says whether the upgrade to the
// spec's job after the adoption would lose state. The verdict does not
// block the adoption; the plan's message says what it found.
func (c *Controller) adoptPreflight(ctx context.Context, api API, spec JobSpec, st *JobStatus, obs Observation, p *Plan) {
	d := obs.Job
	if spec.Preflight.Disabled || d == nil {
		return
	}
	pf := c.newJobPlan(ctx, api, st, p)
	if pf == nil {
		return
	}
	pf.Old, pf.Held, pf.OldRead = planOf(d), heldSlots(d), true
	if equalPlans(pf.Old, pf.New) {
		return // the adopted job runs the spec's plan: nothing to compare
	}
	if pf.dropsVertices() {
		for range 2 {
			if pf.StateRead || readOldState(ctx, api, d.ID, "", pf) != nil {
				break
			}
		}
	}
	if !spec.Preflight.ElasticSlots {
		if ov, err := api.Overview(ctx); err == nil {
			pf.FreeSlots, pf.TotalSlots, pf.SlotsRead = ov.SlotsAvailable, ov.SlotsTotal, true
		}
	}
	v := pf.judge(spec.Update.AllowNonRestoredState, !spec.Preflight.ElasticSlots, false)
	pf.Verdict, p.Preflight = &v, pf
	p.Message += fmt.Sprintf("; the spec's job has another plan than job %s, which the preflight compares as for an upgrade", d.ID)
}

// newJobPlan asks Flink for the plan of p's target from the jar uploaded
// before, as a preflight with the new job's vertices read; nil when
// Flink did not answer. With no jar uploaded yet, it records on p the
// preflight skipped (PreflightSkipNotUploaded) and returns nil.
func (c *Controller) newJobPlan(ctx context.Context, api API, st *JobStatus, p *Plan) *Preflight {
	jar := c.jarID(p.Target, st)
	if jar == "" {
		p.Preflight = &Preflight{Skipped: PreflightSkipNotUploaded}
		return nil
	}
	plan, err := api.JarPlan(ctx, jar, p.Target.run().PlanRequest())
	if err != nil {
		return nil
	}
	return &Preflight{New: policy.NewJobPlan(plan, nil).Vertices, NewRead: true}
}

// equalPlans reports whether two plans have the same vertices, with the
// same parallelism and maximum parallelism (where both know it).
func equalPlans(a, b []policy.PlanVertex) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		i := slices.IndexFunc(b, func(w policy.PlanVertex) bool { return w.ID == v.ID })
		if i < 0 || b[i].Parallelism != v.Parallelism || b[i].MaxParallelism != v.MaxParallelism && b[i].MaxParallelism > 0 && v.MaxParallelism > 0 {
			return false
		}
	}
	return true
}

// preflighted reports whether action a runs a preflight.
func preflighted(a JobAction) bool {
	switch a {
	case ActionDeploy, ActionUpgrade, ActionRescale, ActionBlueGreen, ActionCanary:
		return true
	}
	return false
}

// preflightSummary is a one-line account of p's preflight for people.
func preflightSummary(pf *Preflight) string {
	switch {
	case pf == nil:
		return ""
	case pf.Skipped != "":
		return fmt.Sprintf("preflight skipped (%s)", pf.Skipped)
	case pf.Verdict == nil:
		return "preflight under way"
	case pf.Verdict.Allowed() && pf.Verdict.DroppedBytes() > 0:
		return fmt.Sprintf("preflight passed (%d task slots needed; drops %s of state: allowNonRestoredState)", pf.Verdict.SlotsNeeded,
			bytesize.String(pf.Verdict.DroppedBytes()))
	case pf.Verdict.Allowed():
		return fmt.Sprintf("preflight passed (%d task slots needed)", pf.Verdict.SlotsNeeded)
	}
	return "preflight refused: " + pf.Verdict.Message()
}
