package lifecycle

import (
	"context"
	"maps"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// JobResult is the result of a bounded job that FINISHED on its own: a
// success of its own kind. The Controller records it once it sees the job
// FINISHED, and from then on never restarts the job, never takes a
// savepoint of it, and counts it as done (Converged) although it no longer
// runs, also once Flink has forgotten it (jobstore.expiration-time). A
// Delete of it finishes at once.
type JobResult struct {
	// JobID is the job that finished.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	EndTime time.Time `json:"endTime,omitzero"`
	// NetRuntime is Flink's net runtime of the job, from its execution
	// result.
	NetRuntime policy.Duration `json:"netRuntime,omitzero"`
	// Accumulators are the job's user accumulators as Flink prints them
	// (name to value), at most MaxStoredAccumulators of them.
	Accumulators map[string]string `json:"accumulators,omitempty"`
}

// IsZero reports whether r records no result.
func (r JobResult) IsZero() bool { return r.JobID == "" }

// MaxStoredAccumulators bounds JobResult.Accumulators; each value is cut
// to MaxFailureLength bytes.
const MaxStoredAccumulators = 32

// DeepCopyInto copies in into out, deeply.
func (in *JobResult) DeepCopyInto(out *JobResult) {
	*out = *in
	out.Accumulators = maps.Clone(in.Accumulators)
}

// finished reports whether st records that its job FINISHED.
func finished(st *JobStatus) bool { return st.JobID != "" && st.Result.JobID == st.JobID }

// recordResult records the result of the FINISHED job d, with its net
// runtime and accumulators (two requests). A
// read that fails for another reason than an unknown job leaves the
// result unrecorded, to be read again at the next observation.
func (c *Controller) recordResult(ctx context.Context, api API, st *JobStatus, d *flinkapi.JobDetails) {
	r := JobResult{JobID: st.JobID, EndTime: d.EndTime}
	res, err := api.JobExecutionResult(ctx, st.JobID)
	switch {
	case err == nil && res.Completed():
		r.NetRuntime = policy.Duration(res.NetRuntime)
	case err != nil && !flinkapi.IsJobNotFound(err):
		return
	}
	accs, err := api.JobAccumulators(ctx, st.JobID)
	if err != nil && !flinkapi.IsJobNotFound(err) {
		return
	}
	for _, a := range accs {
		if len(r.Accumulators) == MaxStoredAccumulators {
			break
		}
		if r.Accumulators == nil {
			r.Accumulators = map[string]string{}
		}
		v := a.Value
		if len(v) > MaxFailureLength {
			v = v[:MaxFailureLength]
		}
		r.Accumulators[a.Name] = v
	}
	st.Result = r
}
