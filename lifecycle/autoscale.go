package lifecycle

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// MaxAutoscaleSamples bounds the samples kept of each vertex.
const MaxAutoscaleSamples = 64

// AutoscaleVertex is one vertex of the job as the Controller samples it.
type AutoscaleVertex struct {
	// ID is the vertex id, Inputs the vertices it reads from (the job's
	// plan).
	ID     string   `json:"id"`
	Inputs []string `json:"inputs,omitempty"`
	// Parallelism and MaxParallelism as the job's details last showed
	// them; a change of Parallelism drops the samples.
	Parallelism    int `json:"parallelism,omitempty"`
	MaxParallelism int `json:"maxParallelism,omitempty"`
	// Listed is set once the vertex's metric names were read;
	// PendingMetric is then the name of its pending records metric, if
	// it reports one.
	Listed        bool   `json:"listed,omitempty"`
	PendingMetric string `json:"pendingMetric,omitempty"`
	// Samples are the vertex's samples within the window, oldest first
	// (at most MaxAutoscaleSamples).
	Samples []policy.ScaleSample `json:"samples,omitempty"`
}

// AutoscaleStatus is what the Controller keeps for JobSpec.Autoscale: the
// samples of the job's vertices and the last recommendation.
type AutoscaleStatus struct {
	// JobID is the job the samples are of; samples of another job are
	// dropped.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Vertices are the job's vertices, from its plan; Next the index of
	// the one sampled next (one request per Reconcile).
	Vertices []AutoscaleVertex `json:"vertices,omitempty"`
	Next     int               `json:"next,omitempty"`
	// LastScale is when the Controller last started a rescale of its
	// own; the cool-down counts from it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	LastScale time.Time `json:"lastScale,omitzero"`
	// Parallelism is the parallelism the Controller scaled the job to,
	// and SpecParallelism the spec's Job.Parallelism when it did: while
	// the spec keeps that parallelism, the job keeps the one of the
	// autoscaler; a spec with another one wins.
	Parallelism     int `json:"parallelism,omitempty"`
	SpecParallelism int `json:"specParallelism,omitempty"`
	// Reason, Target and Message are the last recommendation
	// (policy.ScaleRecommendation).
	Reason  string `json:"reason,omitempty"`
	Target  int    `json:"target,omitempty"`
	Message string `json:"message,omitempty"`
}

// effective is spec as the Controller carries it out: with the
// autoscaler's parallelism while Autoscale is enabled and the spec's
// parallelism is the one it scaled from.
func (s JobSpec) effective(st *JobStatus) JobSpec {
	a := &st.Autoscale
	if s.Autoscale.Enabled && a.Parallelism > 0 && a.SpecParallelism == s.Job.Parallelism {
		s.Job.Parallelism = a.Parallelism
	}
	return s
}

// autoscale samples one vertex of the running job (at most one request)
// and returns the recommendation; ok is false when none could be made.
func (c *Controller) autoscale(ctx context.Context, api API, spec JobSpec, st *JobStatus, d *flinkapi.JobDetails, now time.Time) (policy.ScaleRecommendation, bool) {
	a := &st.Autoscale
	if a.JobID != st.JobID {
		*a = AutoscaleStatus{JobID: st.JobID, LastScale: a.LastScale, Parallelism: a.Parallelism, SpecParallelism: a.SpecParallelism}
	}
	p := spec.Autoscale.WithDefaults()
	c.syncVertices(a, d)
	sampleNext(ctx, api, a, st.JobID, d, now)
	trimSamples(a, now.Add(-2*p.Window.Std()))
	in := policy.ScaleInput{Since: d.StartTime, LastScale: a.LastScale}
	if t := d.Timestamps[flinkapi.JobRunning]; t.After(in.Since) {
		in.Since = t
	}
	for _, v := range a.Vertices {
		in.Vertices = append(in.Vertices, policy.ScaleVertex{ID: v.ID, Inputs: v.Inputs, Parallelism: v.Parallelism,
			MaxParallelism: v.MaxParallelism, Samples: v.Samples})
	}
	r := policy.RecommendScale(spec.Autoscale, in, now)
	a.Reason, a.Target, a.Message = string(r.Reason), r.Target, r.Message()
	return r, len(a.Vertices) > 0
}

// sampleNext sends the one request of an autoscale call: it reads the
// job's plan when no vertex is known, or else samples the next vertex
// in turn, listing its metric names first.
func sampleNext(ctx context.Context, api API, a *AutoscaleStatus, job flinkapi.JobID, d *flinkapi.JobDetails, now time.Time) {
	if len(a.Vertices) == 0 {
		plan, err := api.JobPlan(ctx, job)
		if err == nil {
			a.Vertices = planVertices(plan, d)
		}
		return
	}
	a.Next %= len(a.Vertices)
	v := &a.Vertices[a.Next]
	if !v.Listed {
		names, err := api.VertexMetricNames(ctx, job, v.ID)
		if err == nil && len(names) > 0 {
			v.Listed, v.PendingMetric = true, flinkapi.PendingRecordsMetric(names)
		}
	} else {
		l, err := api.VertexLoad(ctx, job, v.ID, v.PendingMetric)
		switch {
		case err == nil && l.Complete():
			v.Samples = append(v.Samples, sampleOf(l, now))
		case err == nil && v.PendingMetric != "":
			// Flink answers nothing when one name is unknown: the
			// source may have renamed its metric; list them again.
			v.Listed, v.PendingMetric = false, ""
		}
	}
	a.Next = (a.Next + 1) % len(a.Vertices)
}

// trimSamples drops the samples taken before keep, and the oldest
// beyond MaxAutoscaleSamples, of every vertex.
func trimSamples(a *AutoscaleStatus, keep time.Time) {
	for i := range a.Vertices {
		v := &a.Vertices[i]
		drop := 0
		for drop < len(v.Samples) && v.Samples[drop].Time.Before(keep) {
			drop++
		}
		drop = max(drop, len(v.Samples)-MaxAutoscaleSamples)
		v.Samples = slices.Delete(v.Samples, 0, drop)
	}
}

// syncVertices takes the vertices' parallelism from the job's details,
// dropping the samples of a vertex whose parallelism changed, and forgets
// the vertices when the job's differ from them.
func (c *Controller) syncVertices(a *AutoscaleStatus, d *flinkapi.JobDetails) {
	if len(a.Vertices) != len(d.Vertices) {
		a.Vertices, a.Next = nil, 0
		return
	}
	for i := range a.Vertices {
		v := &a.Vertices[i]
		j := slices.IndexFunc(d.Vertices, func(x flinkapi.JobVertex) bool { return x.ID == v.ID })
		if j < 0 {
			a.Vertices, a.Next = nil, 0
			return
		}
		if d.Vertices[j].Parallelism != v.Parallelism {
			v.Samples = nil
		}
		v.Parallelism, v.MaxParallelism = d.Vertices[j].Parallelism, d.Vertices[j].MaxParallelism
	}
}

// planVertices are the vertices of the plan with the parallelism of the
// details.
func planVertices(plan []flinkapi.PlanNode, d *flinkapi.JobDetails) []AutoscaleVertex {
	var out []AutoscaleVertex
	for _, jv := range d.Vertices {
		v := AutoscaleVertex{ID: jv.ID, Parallelism: jv.Parallelism, MaxParallelism: jv.MaxParallelism}
		if k := slices.IndexFunc(plan, func(n flinkapi.PlanNode) bool { return n.ID == jv.ID }); k >= 0 {
			v.Inputs = slices.Clone(plan[k].Inputs)
		}
		out = append(out, v)
	}
	return out
}

// sampleOf is l in the whole numbers of a stored sample.
func sampleOf(l flinkapi.VertexLoad, now time.Time) policy.ScaleSample {
	s := policy.ScaleSample{Time: now, BusyMicrosPerSecond: int(math.Round(clampMs(l.BusyMsPerSecond) * 1000)),
		BackPressuredMicrosPerSecond: int(math.Round(clampMs(l.BackPressuredMsPerSecond) * 1000)),
		RecordsInMilli:               milli(l.RecordsInPerSecond), RecordsOutMilli: milli(l.RecordsOutPerSecond)}
	if !math.IsNaN(l.PendingRecords) {
		s.HasPending, s.PendingRecords = true, int64(math.Round(min(max(l.PendingRecords, 0), 1e15)))
	}
	return s
}

func clampMs(v float64) float64 { return min(max(v, 0), 1000) }

func milli(v float64) int64 { return int64(math.Round(min(max(v, 0), 1e12) * 1000)) }

// startAutoscale records the rescale to r.Target ahead of it and starts
// it.
func (c *Controller) startAutoscale(ctx context.Context, spec JobSpec, st *JobStatus, r policy.ScaleRecommendation, now time.Time) (Result, error) {
	a := &st.Autoscale
	a.LastScale, a.Parallelism, a.SpecParallelism = now, r.Target, spec.Job.Parallelism
	t := st.Deployed // start copies it deeply
	t.Parallelism = r.Target
	return c.start(ctx, spec, st, ActionAutoscale, t, now, nil)
}

// DeepCopyInto copies in into out, deeply.
func (in *AutoscaleStatus) DeepCopyInto(out *AutoscaleStatus) {
	*out = *in
	out.Vertices = slices.Clone(in.Vertices)
	for i := range out.Vertices {
		out.Vertices[i].Inputs = slices.Clone(in.Vertices[i].Inputs)
		out.Vertices[i].Samples = slices.Clone(in.Vertices[i].Samples)
	}
}

// DeepCopy returns a deep copy of in, or nil for nil.
func (in *AutoscaleStatus) DeepCopy() *AutoscaleStatus {
	if in == nil {
		return nil
	}
	out := new(AutoscaleStatus)
	in.DeepCopyInto(out)
	return out
}
