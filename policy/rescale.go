package policy

import (
	"strconv"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Scheduler is the scheduler a Flink job runs under, as the REST API shows
// it.
type Scheduler string

// Schedulers. The zero Scheduler means unknown.
const (
	// SchedulerDefault: Flink's default scheduler, which answers the
	// resource requirements endpoints with an UnsupportedOperationException.
	SchedulerDefault Scheduler = "Default"
	// SchedulerAdaptive: the adaptive scheduler (jobmanager.scheduler:
	// adaptive, or reactive mode), which changes a running job's
	// parallelism when its resource requirements change (Flink 1.18+).
	SchedulerAdaptive Scheduler = "Adaptive"
)

// RescalePath is how a job's parallelism is changed.
type RescalePath string

// Rescale paths.
const (
	// RescaleNone: nothing to change (Reason ParallelismUnchanged).
	RescaleNone RescalePath = "None"
	// RescaleInPlace: set the job's resource requirements (PUT
	// /jobs/:jobid/resource-requirements) with the new parallelism as upper
	// bound; the adaptive scheduler rescales the job without a restart.
	RescaleInPlace RescalePath = "InPlace"
	// RescaleByUpgrade: replace the job with a stop with savepoint and a
	// new job of the new parallelism restored from it (an update under
	// the caller's UpdatePolicy, whose invariants hold).
	RescaleByUpgrade RescalePath = "Upgrade"
	// RescaleWait: the job is in a transitional state on a cluster that
	// could rescale it in place; look again once it runs.
	RescaleWait RescalePath = "Wait"
	// RescaleBlocked: the job cannot be rescaled as asked; Reason says why.
	RescaleBlocked RescalePath = "Blocked"
)

// Reasons of DecideRescale. A policy that does not validate blocks with
// ReasonInvalidPolicy, as for EvaluateUpdate.
const (
	// ReasonInvalidParallelism (Blocked): the target parallelism is below 1.
	ReasonInvalidParallelism Reason = "InvalidParallelism"
	// ReasonParallelismUnchanged (None): every vertex already runs at the
	// target parallelism.
	ReasonParallelismUnchanged Reason = "ParallelismUnchanged"
	// ReasonAboveMaxParallelism (Blocked): the target exceeds a vertex's
	// maximum parallelism, which neither path can change (it is fixed in
	// the job's state).
	ReasonAboveMaxParallelism Reason = "AboveMaxParallelism"
	// ReasonRescaleInPlace (InPlace): Flink 1.18+ and the adaptive
	// scheduler, and the job runs.
	ReasonRescaleInPlace Reason = "RescaleInPlace"
	// ReasonRescaleByUpgrade (Upgrade): the cluster cannot rescale the job
	// in place (older than 1.18, another scheduler, or the job does not
	// run), and the policy allows the restart.
	ReasonRescaleByUpgrade Reason = "RescaleByUpgrade"
	// ReasonRescaleRestartForbidden (Blocked): the job cannot be rescaled
	// in place and RescalePolicy.InPlaceOnly forbids the restart.
	ReasonRescaleRestartForbidden Reason = "RescaleRestartForbidden"
	// ReasonRescaleWaitRunning (Wait): the cluster could rescale in place,
	// but the job is in a transitional state.
	ReasonRescaleWaitRunning Reason = "RescaleWaitRunning"
)

// RescalePolicy says how a job's parallelism may be changed. It is meant
// to be embedded in a custom resource's spec.
type RescalePolicy struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. flinkkit writes no policy: whoever writes one may set it
	// to the FormatVersion it was written for, and Validate refuses a
	// version newer than this release reads.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// InPlaceOnly forbids the restart path: a job that cannot be rescaled
	// in place is left as it is (RescaleRestartForbidden). Default: false,
	// the restart path is allowed.
	InPlaceOnly bool `json:"inPlaceOnly,omitempty"`
}

// Validate reports what makes p unusable: a FormatVersion newer than this
// release reads, as an error matching ErrUnknownFormat. Every value of
// its other fields is valid.
func (p RescalePolicy) Validate() error {
	return checkFormat("RescalePolicy", p.FormatVersion)
}

// VertexParallelism is one job vertex as the job details show it.
//
// +kubebuilder:object:generate=false
type VertexParallelism struct {
	// ID is the vertex id.
	ID string
	// Parallelism is the vertex's current parallelism.
	Parallelism int
	// MaxParallelism is its maximum parallelism; 0 if unknown.
	MaxParallelism int
}

// RescaleObservations is what DecideRescale needs to know of the job and
// its cluster.
//
// +kubebuilder:object:generate=false
type RescaleObservations struct {
	// FlinkVersion is the cluster's version; zero if unknown (then the job
	// is not rescaled in place).
	FlinkVersion flinkapi.Version
	// Scheduler is the job's scheduler; empty if unknown (then the job is
	// not rescaled in place).
	Scheduler Scheduler
	// JobState is the job's state; empty when the JobManager does not know
	// the job.
	JobState flinkapi.JobState
	// Vertices are the job's vertices; empty if unknown.
	Vertices []VertexParallelism
}

// RescaleDecision is the outcome of DecideRescale.
//
// +kubebuilder:object:generate=false
type RescaleDecision struct {
	// Path is how to rescale, or None, Wait, Blocked.
	Path RescalePath
	// Reason is a stable code; Message explains it.
	Reason Reason
	// Target is the parallelism asked for.
	Target int
	// Current and CurrentMax are the lowest and highest parallelism of
	// the job's vertices; zero if unknown.
	Current, CurrentMax int
	// MaxParallelism is the lowest maximum parallelism of the job's
	// vertices; zero if unknown.
	MaxParallelism int
	// FlinkVersion, Scheduler and JobState are the observations the
	// decision rests on.
	FlinkVersion flinkapi.Version
	Scheduler    Scheduler
	JobState     flinkapi.JobState
	// Failure says why the policy is invalid (Reason InvalidPolicy);
	// empty otherwise.
	Failure string
}

// DecideRescale decides how to change the job's parallelism to target.
// It is pure: data in, decision out.
//
// The rules, in order:
//
//   - A policy that does not validate, such as one of a format version
//     newer than this release reads, blocks (InvalidPolicy).
//   - A target below 1 blocks (InvalidParallelism).
//   - A job whose vertices all run at target needs nothing
//     (ParallelismUnchanged).
//   - A target above a vertex's maximum parallelism blocks
//     (AboveMaxParallelism).
//   - On Flink 1.18+ with the adaptive scheduler a RUNNING job is rescaled
//     in place (RescaleInPlace); a job in a transitional state is waited
//     for (RescaleWaitRunning).
//   - Otherwise the job is rescaled through an upgrade (RescaleByUpgrade),
//     unless the policy is InPlaceOnly (RescaleRestartForbidden).
func DecideRescale(p RescalePolicy, obs RescaleObservations, target int) (d RescaleDecision) {
	d.Target, d.FlinkVersion, d.Scheduler, d.JobState = target, obs.FlinkVersion, obs.Scheduler, obs.JobState
	for i, v := range obs.Vertices {
		if i == 0 || v.Parallelism < d.Current {
			d.Current = v.Parallelism
		}
		d.CurrentMax = max(d.CurrentMax, v.Parallelism)
		if v.MaxParallelism > 0 && (d.MaxParallelism == 0 || v.MaxParallelism < d.MaxParallelism) {
			d.MaxParallelism = v.MaxParallelism
		}
	}
	running := obs.JobState == flinkapi.JobRunning
	if err := p.Validate(); err != nil {
		d.Path, d.Reason, d.Failure = RescaleBlocked, ReasonInvalidPolicy, err.Error()
		return d
	}
	switch {
	case target < 1:
		d.Path, d.Reason = RescaleBlocked, ReasonInvalidParallelism
	case running && len(obs.Vertices) > 0 && d.Current == target && d.CurrentMax == target:
		d.Path, d.Reason = RescaleNone, ReasonParallelismUnchanged
	case d.MaxParallelism > 0 && target > d.MaxParallelism:
		d.Path, d.Reason = RescaleBlocked, ReasonAboveMaxParallelism
	case inPlaceCapable(&obs) && running:
		d.Path, d.Reason = RescaleInPlace, ReasonRescaleInPlace
	case inPlaceCapable(&obs) && obs.JobState != "" && !obs.JobState.IsTerminal():
		d.Path, d.Reason = RescaleWait, ReasonRescaleWaitRunning
	case p.InPlaceOnly:
		d.Path, d.Reason = RescaleBlocked, ReasonRescaleRestartForbidden
	default:
		d.Path, d.Reason = RescaleByUpgrade, ReasonRescaleByUpgrade
	}
	return d
}

// inPlaceCapable reports whether the cluster can change the job's
// parallelism without a restart.
func inPlaceCapable(obs *RescaleObservations) bool {
	return obs.FlinkVersion.Supports(flinkapi.FeatureResourceRequirements) && obs.Scheduler == SchedulerAdaptive
}

// Message explains the decision in one line for people.
func (d RescaleDecision) Message() string {
	var b strings.Builder
	t := strconv.Itoa(d.Target)
	switch d.Reason {
	case ReasonInvalidPolicy:
		b.WriteString("the rescale policy is invalid: " + oneLine(d.Failure))
	case ReasonInvalidParallelism:
		b.WriteString("the target parallelism " + t + " is invalid: it must be at least 1")
	case ReasonParallelismUnchanged:
		b.WriteString("every vertex already runs at parallelism " + t)
	case ReasonAboveMaxParallelism:
		b.WriteString("the target parallelism " + t + " exceeds the job's maximum parallelism " + strconv.Itoa(d.MaxParallelism) +
			", which its state fixes; neither path can reach it")
	case ReasonRescaleInPlace:
		b.WriteString("Flink " + d.FlinkVersion.String() + " runs the job with the adaptive scheduler: set its resource requirements to parallelism " +
			t + " " + d.currentText() + " without a restart")
	case ReasonRescaleWaitRunning:
		b.WriteString("the job is " + stateName(d.JobState) + "; it is rescaled in place to " + t + " once it runs")
	case ReasonRescaleByUpgrade, ReasonRescaleRestartForbidden:
		b.WriteString("the job cannot be rescaled in place (")
		b.WriteString(d.whyNotInPlace())
		if d.Reason == ReasonRescaleByUpgrade {
			b.WriteString("): stop it with a savepoint and restore it with parallelism " + t + " " + d.currentText())
		} else {
			b.WriteString(") and the policy forbids the restart; the job keeps its parallelism")
			if d.Current > 0 {
				b.WriteString(" " + d.currentText()[len("from "):])
			}
		}
	default:
		b.WriteString(string(d.Path) + ": " + string(d.Reason))
	}
	return b.String()
}

func (d RescaleDecision) currentText() string {
	switch {
	case d.Current == 0:
		return "from an unknown parallelism"
	case d.Current == d.CurrentMax:
		return "from " + strconv.Itoa(d.Current)
	}
	return "from " + strconv.Itoa(d.Current) + ".." + strconv.Itoa(d.CurrentMax)
}

func (d RescaleDecision) whyNotInPlace() string {
	switch {
	case d.FlinkVersion.IsZero():
		return "the Flink version is unknown"
	case !d.FlinkVersion.Supports(flinkapi.FeatureResourceRequirements):
		return "Flink " + d.FlinkVersion.String() + " is older than 1.18"
	case d.Scheduler == "":
		return "the job's scheduler is unknown"
	case d.Scheduler != SchedulerAdaptive:
		return "the job runs under the " + string(d.Scheduler) + " scheduler, not the adaptive one"
	case d.JobState == "":
		return "the JobManager does not know the job"
	}
	return "the job is " + string(d.JobState)
}
