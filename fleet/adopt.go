package fleet

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// UnclaimedJob is a job of a cluster that no deployment of the Store
// claims, as Flink shows it: what a user needs to tell which deployment
// should adopt it (Deployment.AdoptName). Flink's REST API does not show
// the jar or entry class a job was started with; its arguments show only
// as far as the program keeps them as global job parameters (Parameters).
type UnclaimedJob struct {
	ID        flinkapi.JobID    `json:"id"`
	Name      string            `json:"name"`
	State     flinkapi.JobState `json:"state"`
	StartTime time.Time         `json:"startTime"`
	// Parallelism is the largest parallelism of its vertices, and
	// Vertices their names, from the job's details; empty when they
	// could not be read.
	Parallelism int      `json:"parallelism,omitempty"`
	Vertices    []string `json:"vertices,omitempty"`
	// Parameters are the program's global job parameters as Flink shows
	// them in the job's configuration (user-config): a program that
	// reads its arguments with Flink's ParameterTool and registers them
	// shows its arguments here. Empty when it keeps none, or when the
	// configuration could not be read.
	Parameters map[string]string `json:"parameters,omitempty"`
}

// Unclaimed lists the jobs of the cluster that have not ended and that
// no deployment of the Store claims (as its job, the job an action in
// flight starts, or the job it adopts), ordered by name and start time:
// jobs started by hand, from the Flink UI or by another tool. It sends
// one request for the cluster's job list and two per job listed, for its
// details and its configuration. The housekeeping of each pass lists them too, without their
// details and from the shared overview (ClusterResults).
func (r *Runner) Unclaimed(ctx context.Context, cluster string) ([]UnclaimedJob, error) {
	env, ok := r.Clusters[cluster]
	if !ok {
		return nil, fmt.Errorf("fleet: cluster %q is not one of the runner's (%s)", cluster, strings.Join(r.clusterNames(), ", "))
	}
	claimed, err := r.claimed(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := env.Client.JobsOverview(ctx)
	if err != nil {
		return nil, err
	}
	var out []UnclaimedJob
	for _, j := range jobs {
		if j.State.IsGloballyTerminal() || claimed[j.ID] {
			continue
		}
		u := UnclaimedJob{ID: j.ID, Name: j.Name, State: j.State, StartTime: j.StartTime}
		if d, err := env.Client.Job(ctx, j.ID); err == nil {
			for _, v := range d.Vertices {
				u.Parallelism = max(u.Parallelism, v.Parallelism)
				u.Vertices = append(u.Vertices, v.Name)
			}
		}
		if c, err := env.Client.JobConfig(ctx, j.ID); err == nil && len(c.Parameters) > 0 {
			u.Parameters = c.Parameters
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, k int) bool {
		if out[i].Name != out[k].Name {
			return out[i].Name < out[k].Name
		}
		return out[i].StartTime.Before(out[k].StartTime)
	})
	return out, nil
}

// claimed returns the ids of the jobs the Store's deployments claim, and
// those this Runner is adopting.
func (r *Runner) claimed(ctx context.Context) (map[flinkapi.JobID]bool, error) {
	recs, err := r.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	claimed := map[flinkapi.JobID]bool{}
	for i := range recs {
		for _, id := range jobsOf(&recs[i].Status, nil) {
			claimed[id] = true
		}
		if recs[i].Adopting != "" {
			claimed[recs[i].Adopting] = true
		}
	}
	r.mu.Lock()
	for id := range r.adopted {
		claimed[id] = true
	}
	r.mu.Unlock()
	return claimed, nil
}

// adoptionSpec is the spec the deployment of rec is called under while
// it adopts: AdoptSpec until the Controller has taken the job on, Spec
// after.
func (rec *Record) adoptionSpec() lifecycle.JobSpec {
	if rec.AdoptSpec == nil || rec.Status.JobID != "" {
		return rec.Spec
	}
	return *rec.AdoptSpec
}

// adopting returns the job the deployment of rec adopts: the one its
// record names, or, while the deployment has no job, the one job of
// the cluster named rec.AdoptName that has not ended and that no
// deployment claims, recorded in rec.
func (r *Runner) adopting(ctx context.Context, rec *Record) (flinkapi.JobID, error) {
	if rec.Adopting != "" || rec.Status.JobID != "" {
		return rec.Adopting, nil
	}
	r.adoptMu.Lock()
	defer r.adoptMu.Unlock()
	id, err := r.findAdoptable(ctx, rec.Name, rec.Cluster, rec.AdoptName)
	if err != nil {
		return "", err
	}
	rec.Adopting = id
	r.mu.Lock()
	if r.adopted == nil {
		r.adopted = map[flinkapi.JobID]bool{}
	}
	r.adopted[id] = true
	r.mu.Unlock()
	return id, nil
}

// findAdoptable returns the one job of cluster named jobName that has
// not ended and that no deployment claims, for the deployment name.
func (r *Runner) findAdoptable(ctx context.Context, name, cluster, jobName string) (flinkapi.JobID, error) {
	jobs, err := r.Unclaimed(ctx, cluster)
	if err != nil {
		return "", err
	}
	var found []flinkapi.JobID
	for _, j := range jobs {
		if j.Name == jobName {
			found = append(found, j.ID)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("fleet: deployment %s adopts the job named %q, and cluster %s runs none that no deployment claims", name, jobName, cluster)
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("fleet: deployment %s adopts the job named %q, and cluster %s runs %d that no deployment claims (%v): give the deployment's spec the id of one (adopt)", name, jobName, cluster, len(found), found)
}
