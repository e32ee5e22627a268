package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// Change is how a change set changes one deployment.
type Change string

// The changes of a deployment.
const (
	// Added: the Store has no record of it (or one being torn down).
	Added Change = "Added"
	// Changed: its spec differs from the stored one.
	Changed Change = "Changed"
	// Removed: the Store has it and the change set does not.
	Removed Change = "Removed"
	// Unchanged: its spec is the stored one.
	Unchanged Change = "Unchanged"
)

// PlanOptions say what a plan may do beyond reading.
type PlanOptions struct {
	// UploadJars lets the plan of a deployment whose new jar file Flink
	// has not got yet upload it, ask Flink for the plan of its job (the
	// preflight: lifecycle.Preflight) and delete it again: the one write
	// a plan does (DeploymentPlan.Uploaded says it did). Without it the
	// preflight of such a deployment is skipped
	// (lifecycle.PreflightSkipNotUploaded).
	UploadJars bool
}

// DeploymentPlan is what a change set would do to one deployment.
type DeploymentPlan struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	Change  Change `json:"change"`
	// Plan is the Controller's plan of the deployment's next call
	// (Controller.Plan, or Controller.PlanDelete for a removed one),
	// with its verdict and preflight.
	Plan lifecycle.Plan `json:"plan"`
	// Uploaded is the jar the plan uploaded for the preflight and
	// deleted again (PlanOptions.UploadJars).
	Uploaded flinkapi.JarID `json:"uploaded,omitempty"`
	// Error is why the deployment could not be planned; its Plan is
	// then empty.
	Error string `json:"error,omitempty"`
}

// ChangePlan is what a change set would do: a plan per deployment,
// ordered by name. It is plain data with JSON names for machines; String
// is its text for people.
type ChangePlan struct {
	Deployments []DeploymentPlan `json:"deployments"`
}

// Plan says what Sync of desired, and the passes after it, would do:
// for each deployment whether it is added, changed, removed or
// unchanged, and its Controller's plan, preflight included, from the
// stored records (read without waiting for a Runner at work). It sends
// only reads to Flink, and with opts.UploadJars the uploads and
// deletions of new jars that the preflight needs. desired is checked as
// Sync checks it.
func (r *Runner) Plan(ctx context.Context, desired []Deployment, opts PlanOptions) (ChangePlan, error) {
	recs, stored, want, err := r.checked(ctx, desired)
	if err != nil {
		return ChangePlan{}, err
	}
	var out ChangePlan
	for _, d := range desired {
		out.Deployments = append(out.Deployments, r.planDesired(ctx, d, stored[d.Name], opts))
	}
	for _, rec := range recs {
		if want[rec.Name] {
			continue
		}
		dp := DeploymentPlan{Name: rec.Name, Cluster: rec.Cluster, Change: Removed}
		spec := rec.Spec
		if rec.Applied != nil {
			spec = *rec.Applied
		}
		r.planOne(ctx, &dp, spec, rec.Status, true, opts)
		out.Deployments = append(out.Deployments, dp)
	}
	sort.Slice(out.Deployments, func(i, j int) bool { return out.Deployments[i].Name < out.Deployments[j].Name })
	return out, nil
}

// planDesired plans the desired deployment d against its stored record
// rec (nil if none).
func (r *Runner) planDesired(ctx context.Context, d Deployment, rec *Record, opts PlanOptions) DeploymentPlan {
	dp := DeploymentPlan{Name: d.Name, Cluster: d.Cluster, Change: Changed}
	var st lifecycle.JobStatus
	switch {
	case rec == nil || rec.Removed && rec.Cluster != d.Cluster:
		dp.Change = Added
	case rec.Removed:
		dp.Change, st = Added, rec.Status
	case rec.states(d):
		dp.Change, st = Unchanged, rec.Status
	default:
		st = rec.Status
	}
	spec := d.Spec
	switch {
	case d.AdoptName == "" || st.JobID != "":
	case rec != nil && rec.Adopting != "" && rec.AdoptName == d.AdoptName:
		spec = rec.adoptionSpec()
		spec.Adopt = rec.Adopting
	default:
		if rec != nil && rec.AdoptName == d.AdoptName {
			spec = rec.adoptionSpec()
		}
		// The job the deployment would adopt, as Flink lists it now.
		id, err := r.findAdoptable(ctx, d.Name, d.Cluster, d.AdoptName)
		if err != nil {
			dp.Error = err.Error()
			return dp
		}
		spec.Adopt = id
	}
	r.planOne(ctx, &dp, spec, st, false, opts)
	return dp
}

// planOne fills dp's Plan.
func (r *Runner) planOne(ctx context.Context, dp *DeploymentPlan, spec lifecycle.JobSpec, st lifecycle.JobStatus, remove bool, opts PlanOptions) {
	env, ok := r.Clusters[dp.Cluster]
	if !ok {
		dp.Error = r.unknownCluster(dp.Name, dp.Cluster).Error()
		return
	}
	ctrl := r.Controller
	ctrl.Env, ctrl.Name, ctrl.Shared = env, dp.Name, r.sharedOf(dp.Cluster, env)
	var p lifecycle.Plan
	var err error
	if remove {
		p, err = ctrl.PlanDelete(ctx, spec, st)
	} else {
		p, err = ctrl.Plan(ctx, spec, st)
	}
	if err != nil {
		dp.Error = err.Error()
		return
	}
	if !remove && opts.UploadJars && p.Preflight != nil && p.Preflight.Skipped == lifecycle.PreflightSkipNotUploaded && spec.Job.JarFile != "" {
		p, err = r.planUploaded(ctx, ctrl, dp, spec, st, p)
		if err != nil {
			dp.Error = err.Error()
		}
	}
	dp.Plan = p
}

// planUploaded uploads spec's jar file, plans spec with the upload for
// the preflight, and deletes the upload: p with the preflight and
// verdict of that plan.
func (r *Runner) planUploaded(ctx context.Context, ctrl lifecycle.Controller, dp *DeploymentPlan, spec lifecycle.JobSpec, st lifecycle.JobStatus, p lifecycle.Plan) (lifecycle.Plan, error) {
	jar, err := ctrl.Jars.Upload(ctx, ctrl.Client, spec.Job.JarFile)
	if err != nil {
		return p, fmt.Errorf("uploading %s for the preflight: %w", spec.Job.JarFile, err)
	}
	dp.Uploaded = jar
	defer func() {
		// The upload is deleted whatever the plan said; a deletion that
		// fails leaves a jar nothing uses (CleanSession removes it).
		_ = ctrl.Client.DeleteJar(context.WithoutCancel(ctx), jar)
	}()
	withJar := spec
	withJar.Job.JarFile, withJar.Job.JarID = "", jar
	q, err := ctrl.Plan(ctx, withJar, st)
	if err != nil {
		return p, err
	}
	p.Preflight, p.Verdict, p.Blocked = q.Preflight, q.Verdict, q.Blocked
	return p, nil
}

// String is the plan for people: one line per deployment, its change,
// cluster and verdict, and what its Controller would do.
func (p ChangePlan) String() string {
	var b strings.Builder
	for _, d := range p.Deployments {
		fmt.Fprintf(&b, "%-9s %s on %s: ", d.Change, d.Name, d.Cluster)
		switch {
		case d.Error != "":
			fmt.Fprintf(&b, "cannot be planned: %s", d.Error)
		default:
			fmt.Fprintf(&b, "%s; %s", d.Plan.Verdict, d.Plan.String())
			if d.Uploaded != "" {
				fmt.Fprintf(&b, " (jar uploaded as %s for the preflight, and deleted)", d.Uploaded)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
