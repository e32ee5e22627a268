package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Defaults of AutoscalePolicy, as its fields document them.
const (
	defaultTargetUtilization   = 70 // percent of a vertex's processing capacity
	defaultUtilizationBoundary = 20 // percentage points either side of the target
	defaultCatchUpDuration     = 5 * time.Minute
	defaultScaleWindow         = 5 * time.Minute
	defaultScaleStabilization  = time.Minute
	defaultScaleCoolDown       = 10 * time.Minute
)

// AutoscalePolicy says how RecommendScale sizes a job from the metrics of
// its vertices, and whether the job controller acts on it. It is meant to
// be embedded in a custom resource's spec; its zero value is off, with
// the defaults its fields name.
type AutoscalePolicy struct {
	// FormatVersion is the format this value was written in; 0 reads as
	// 1. Validate refuses a newer one.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Enabled lets the job controller sample the vertices' metrics and
	// rescale the job as RecommendScale says. Off by default.
	Enabled bool `json:"enabled,omitempty"`
	// TargetUtilization is the share of a vertex's processing capacity,
	// in percent, the new parallelism is sized for (1..100; default 70).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	TargetUtilization int `json:"targetUtilization,omitempty"`
	// UtilizationBoundary, in percentage points, is how far the
	// utilisation at the current parallelism may be from the target
	// before the parallelism changes (default 20: 50..90 with the default
	// target). A negative value means 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	UtilizationBoundary int `json:"utilizationBoundary,omitempty"`
	// CatchUpDuration is the time within which a source's backlog (its
	// pending records) is to be caught up, on top of its input rate
	// (default 5m).
	CatchUpDuration Duration `json:"catchUpDuration,omitzero"`
	// MinParallelism and MaxParallelism bound the recommendation (default
	// 1, and each vertex's maximum parallelism, which also bounds a
	// larger MaxParallelism).
	// +kubebuilder:validation:Minimum=0
	MinParallelism int `json:"minParallelism,omitempty"`
	// +kubebuilder:validation:Minimum=0
	MaxParallelism int `json:"maxParallelism,omitempty"`
	// Window is the span of the samples a recommendation averages; there
	// is none until the job has been sampled that long (default 5m).
	Window Duration `json:"window,omitzero"`
	// Stabilization is how long after the job started running, or was
	// rescaled, its samples are ignored: the time it takes to settle
	// (default 1m).
	Stabilization Duration `json:"stabilization,omitzero"`
	// CoolDown is how long after a rescale the parallelism stays as it is
	// (default 10m).
	CoolDown Duration `json:"coolDown,omitzero"`
}

// WithDefaults returns p with its unset fields set to their defaults.
func (p AutoscalePolicy) WithDefaults() AutoscalePolicy {
	if p.TargetUtilization == 0 {
		p.TargetUtilization = defaultTargetUtilization
	}
	if p.UtilizationBoundary == 0 {
		p.UtilizationBoundary = defaultUtilizationBoundary
	}
	p.UtilizationBoundary = max(p.UtilizationBoundary, 0)
	if p.CatchUpDuration == 0 {
		p.CatchUpDuration = Duration(defaultCatchUpDuration)
	}
	if p.MinParallelism == 0 {
		p.MinParallelism = 1
	}
	if p.Window == 0 {
		p.Window = Duration(defaultScaleWindow)
	}
	if p.Stabilization == 0 {
		p.Stabilization = Duration(defaultScaleStabilization)
	}
	if p.CoolDown == 0 {
		p.CoolDown = Duration(defaultScaleCoolDown)
	}
	return p
}

// Validate reports what makes p unusable, naming every field at fault: a
// format newer than this release reads (matching ErrUnknownFormat), a
// target utilisation outside 1..100, negative durations or bounds, a
// minimum above the maximum.
func (p AutoscalePolicy) Validate() error {
	if err := checkFormat("AutoscalePolicy", p.FormatVersion); err != nil {
		return err
	}
	var errs []error
	if p.TargetUtilization < 0 || p.TargetUtilization > 100 {
		errs = append(errs, fmt.Errorf("targetUtilization: %d is not a percentage in 1..100", p.TargetUtilization))
	}
	if p.UtilizationBoundary > 100 {
		errs = append(errs, fmt.Errorf("utilizationBoundary: %d is more than 100 percentage points", p.UtilizationBoundary))
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"catchUpDuration", p.CatchUpDuration}, {"window", p.Window}, {"stabilization", p.Stabilization}, {"coolDown", p.CoolDown}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %v must not be negative", d.name, d.v))
		}
	}
	if p.MinParallelism < 0 || p.MaxParallelism < 0 {
		errs = append(errs, fmt.Errorf("minParallelism %d and maxParallelism %d must not be negative", p.MinParallelism, p.MaxParallelism))
	} else if p.MaxParallelism > 0 && p.MinParallelism > p.MaxParallelism {
		errs = append(errs, fmt.Errorf("minParallelism %d is above maxParallelism %d", p.MinParallelism, p.MaxParallelism))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("policy: invalid AutoscalePolicy: %w", errors.Join(errs...))
}

// ScaleSample is one observation of a vertex's task metrics
// (flinkapi.VertexLoad), in whole numbers so that it can be stored in a
// Kubernetes status: times in microseconds per second averaged over the
// subtasks (Flink's milliseconds per second times 1000), rates in
// thousandths of a record per second summed over them.
//
// +kubebuilder:object:generate=false
type ScaleSample struct {
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Time time.Time `json:"time"`
	// BusyMicrosPerSecond and BackPressuredMicrosPerSecond: 0..1,000,000.
	BusyMicrosPerSecond          int `json:"busyMicrosPerSecond"`
	BackPressuredMicrosPerSecond int `json:"backPressuredMicrosPerSecond,omitempty"`
	// RecordsInMilli and RecordsOutMilli: records in and out per second,
	// times 1000.
	RecordsInMilli  int64 `json:"recordsInMilli,omitempty"`
	RecordsOutMilli int64 `json:"recordsOutMilli,omitempty"`
	// PendingRecords, if HasPending, is a source's backlog.
	PendingRecords int64 `json:"pendingRecords,omitempty"`
	HasPending     bool  `json:"hasPending,omitempty"`
}

// ScaleVertex is one vertex of a job as RecommendScale sees it.
//
// +kubebuilder:object:generate=false
type ScaleVertex struct {
	// ID is the vertex id; Inputs the ids of the vertices it reads from
	// (none: a source).
	ID     string
	Inputs []string
	// Parallelism is its current parallelism; MaxParallelism its maximum
	// (0: unknown).
	Parallelism, MaxParallelism int
	// Samples are its observations, oldest first.
	Samples []ScaleSample
}

// ScaleInput is what RecommendScale needs to know of the job.
//
// +kubebuilder:object:generate=false
type ScaleInput struct {
	Vertices []ScaleVertex
	// Since is when the job began running at its current parallelism;
	// samples before Since + Stabilization are ignored.
	Since time.Time
	// LastScale is when the job was last rescaled; zero: never.
	LastScale time.Time
}

// Reasons of RecommendScale, for the job and for each vertex.
const (
	// ReasonScaleUp: a vertex needs more capacity than its parallelism
	// gives at the target utilisation.
	ReasonScaleUp Reason = "ScaleUp"
	// ReasonScaleDown: every vertex needs less.
	ReasonScaleDown Reason = "ScaleDown"
	// ReasonScaleWithinTarget: the utilisation is within the boundary of
	// the target; the parallelism stays.
	ReasonScaleWithinTarget Reason = "ScaleWithinTarget"
	// ReasonScaleAtMaxParallelism: more is needed, but the parallelism is
	// at its maximum already.
	ReasonScaleAtMaxParallelism Reason = "ScaleAtMaxParallelism"
	// ReasonScaleAtMinParallelism: less is needed, but the parallelism is
	// at its minimum already.
	ReasonScaleAtMinParallelism Reason = "ScaleAtMinParallelism"
	// ReasonScaleCoolDown: the job was rescaled less than CoolDown ago.
	ReasonScaleCoolDown Reason = "ScaleCoolDown"
	// ReasonScaleCollecting: the job has not run a whole Window past
	// its stabilisation yet, or a vertex has fewer than two samples in the
	// last Window, or they span less than half of it.
	ReasonScaleCollecting Reason = "ScaleCollectingMetrics"
	// ReasonScaleUnknownRate: the vertex is to process records but has
	// processed none in the window (or its upstream is unknowable), so its
	// processing capacity is unknown; it keeps its parallelism.
	ReasonScaleUnknownRate Reason = "ScaleUnknownRate"
	// ReasonScaleNoVertices: nothing is known of the job's vertices.
	ReasonScaleNoVertices Reason = "ScaleNoVertices"
)

// VertexScale is the recommendation for one vertex.
//
// +kubebuilder:object:generate=false
type VertexScale struct {
	ID string
	// Reason is one of the Reasons of RecommendScale.
	Reason Reason
	// Current and Target are its parallelism now and the one it needs.
	Current, Target int
	// ProcessingRate is the records per second it can process at Current
	// (its observed rate divided by its busy share); TargetRate the
	// records per second it is to process: its upstream's target output,
	// for a source its input rate plus its backlog over CatchUpDuration.
	// Both NaN when unknown.
	ProcessingRate, TargetRate float64
	// Utilization is TargetRate over ProcessingRate: the share of its
	// capacity at Current it needs. NaN when unknown.
	Utilization float64
}

// ScaleRecommendation is the outcome of RecommendScale: one parallelism
// for the whole job, the highest any vertex needs.
//
// +kubebuilder:object:generate=false
type ScaleRecommendation struct {
	// Reason is why (a Reason of RecommendScale, or InvalidPolicy).
	Reason Reason
	// Current is the job's parallelism (its highest vertex's), Target
	// the recommended one; they differ only with Reason ScaleUp or
	// ScaleDown.
	Current, Target int
	// Until is when a ScaleCoolDown or ScaleCollectingMetrics ends, if
	// known.
	Until time.Time
	// Vertices are the vertices' recommendations, in input order.
	Vertices []VertexScale
	// Failure says why the policy is invalid (InvalidPolicy).
	Failure string
}

// Change reports whether r asks for another parallelism.
func (r ScaleRecommendation) Change() bool { return r.Target != r.Current && r.Target > 0 }

// RecommendScale recommends a parallelism for the job from the windows of
// its vertices' samples, at now. It is pure.
//
// Each vertex's processing rate is its observed rate (records in per
// second; records out for a source) divided by its busy share. Its target
// rate is the sum of its inputs' target output rates (an input's target
// rate times its observed out/in ratio); for a source, its observed rate
// plus the growth of its backlog and the backlog over CatchUpDuration.
// The utilisation it needs at its parallelism is the target rate over
// the processing rate; within UtilizationBoundary of TargetUtilization
// the parallelism stays, else it becomes the least that meets the target
// rate at TargetUtilization, bounded by MinParallelism and the maximum
// parallelism (the vertex's and MaxParallelism), and moved up to a divisor
// of the vertex's maximum parallelism (its key groups then spread evenly)
// if one is at most a quarter higher. The job's target is the highest
// vertex target. Nothing changes within CoolDown after LastScale, nor
// before the job has run a whole Window past Since + Stabilization (and
// LastScale + Stabilization) with at least two samples of every vertex in
// the last Window, half a Window apart or more; older samples are ignored.
func RecommendScale(p AutoscalePolicy, in ScaleInput, now time.Time) (r ScaleRecommendation) {
	for _, v := range in.Vertices {
		r.Current = max(r.Current, v.Parallelism)
	}
	r.Target = r.Current
	if err := p.Validate(); err != nil {
		r.Reason, r.Failure = ReasonInvalidPolicy, err.Error()
		return r
	}
	p = p.WithDefaults()
	if len(in.Vertices) == 0 || r.Current < 1 {
		r.Reason = ReasonScaleNoVertices
		return r
	}
	if !in.LastScale.IsZero() && now.Before(in.LastScale.Add(p.CoolDown.Std())) {
		r.Reason, r.Until = ReasonScaleCoolDown, in.LastScale.Add(p.CoolDown.Std())
		return r
	}
	from := in.Since.Add(p.Stabilization.Std())
	if !in.LastScale.IsZero() && in.LastScale.Add(p.Stabilization.Std()).After(from) {
		from = in.LastScale.Add(p.Stabilization.Std())
	}
	ev := scaleEval{p: p, now: now, from: from, byID: map[string]int{}, rates: map[string]float64{}}
	for i, v := range in.Vertices {
		ev.byID[v.ID] = i
	}
	ev.windows = make([]window, len(in.Vertices))
	for i := range in.Vertices {
		w := windowOf(in.Vertices[i].Samples, from, now.Add(-p.Window.Std()), now)
		if !w.covered {
			r.Reason = ReasonScaleCollecting
			if t := from.Add(p.Window.Std()); t.After(now) {
				r.Until = t
			}
			return r
		}
		ev.windows[i] = w
	}
	r.Target = 0
	up, down := false, true
	var other Reason
	for i := range in.Vertices {
		vs := ev.vertex(in.Vertices, i)
		r.Vertices = append(r.Vertices, vs)
		r.Target = max(r.Target, vs.Target)
		switch vs.Reason {
		case ReasonScaleUp:
			up = true
		case ReasonScaleDown:
		default:
			down = false
			if other == "" || vs.Reason == ReasonScaleAtMaxParallelism {
				other = vs.Reason
			}
		}
	}
	switch {
	case r.Target > r.Current && up:
		r.Reason = ReasonScaleUp
	case r.Target < r.Current && down:
		r.Reason = ReasonScaleDown
	case other != "":
		r.Target, r.Reason = r.Current, other
	default:
		r.Target, r.Reason = r.Current, ReasonScaleWithinTarget
	}
	return r
}

// window is the average of a vertex's usable samples.
type window struct {
	covered                bool
	busy, in, out          float64 // busy share 0..1, records per second
	pending, pendingGrowth float64 // the newest backlog, its growth per second
}

// windowOf averages the samples at or after from and after start, up to
// now; covered when there are two or more and they span now - start.
func windowOf(samples []ScaleSample, from, start, now time.Time) window {
	var w window
	var first, last *ScaleSample
	n := 0
	for i := range samples {
		s := &samples[i]
		if s.Time.Before(from) || s.Time.Before(start) || s.Time.After(now) {
			continue
		}
		if first == nil {
			first = s
		}
		last = s
		n++
		w.busy += min(max(float64(s.BusyMicrosPerSecond), 0), 1e6) / 1e6
		w.in += float64(max(s.RecordsInMilli, 0)) / 1000
		w.out += float64(max(s.RecordsOutMilli, 0)) / 1000
	}
	if n < 2 || last.Time.Sub(first.Time) < now.Sub(start)/2 || from.After(start) {
		return w
	}
	w.covered = true
	w.busy, w.in, w.out = w.busy/float64(n), w.in/float64(n), w.out/float64(n)
	if first.HasPending && last.HasPending {
		w.pending = float64(max(last.PendingRecords, 0))
		if dt := last.Time.Sub(first.Time).Seconds(); dt > 0 {
			w.pendingGrowth = float64(last.PendingRecords-first.PendingRecords) / dt
		}
	}
	return w
}

type scaleEval struct {
	p       AutoscalePolicy
	now     time.Time
	from    time.Time
	byID    map[string]int
	windows []window
	rates   map[string]float64 // target rates by vertex id, once computed
}

// targetRate is the records per second vertex i is to process; NaN if
// unknown. A cycle (no job graph has one) counts as unknown.
func (e *scaleEval) targetRate(vs []ScaleVertex, i int, depth int) float64 {
	v := &vs[i]
	if r, ok := e.rates[v.ID]; ok {
		return r
	}
	w := &e.windows[i]
	var rate float64
	switch {
	case depth > len(vs):
		return math.NaN()
	case len(v.Inputs) == 0:
		rate = max(w.out+w.pendingGrowth, 0) + w.pending/e.p.CatchUpDuration.Std().Seconds()
	default:
		for _, id := range v.Inputs {
			j, ok := e.byID[id]
			if !ok {
				rate = w.in // the upstream is unknown: what arrives
				break
			}
			up := e.targetRate(vs, j, depth+1)
			uw := &e.windows[j]
			ratio := 1.0
			if len(vs[j].Inputs) > 0 {
				if uw.in > 0 {
					ratio = uw.out / uw.in
				} else {
					ratio = 0
				}
			}
			rate += up * ratio
		}
	}
	e.rates[v.ID] = rate
	return rate
}

// vertex is the recommendation of vertex i.
func (e *scaleEval) vertex(vs []ScaleVertex, i int) VertexScale {
	v := &vs[i]
	w := &e.windows[i]
	out := VertexScale{ID: v.ID, Current: v.Parallelism, Target: v.Parallelism, ProcessingRate: math.NaN(), Utilization: math.NaN()}
	out.TargetRate = e.targetRate(vs, i, 0)
	observed := w.in
	if len(v.Inputs) == 0 {
		observed = w.out
	}
	maxP := v.MaxParallelism
	if e.p.MaxParallelism > 0 && (maxP <= 0 || e.p.MaxParallelism < maxP) {
		maxP = e.p.MaxParallelism
	}
	minP := e.p.MinParallelism
	if maxP > 0 {
		minP = min(minP, maxP)
	}
	tu := float64(e.p.TargetUtilization) / 100
	switch {
	case math.IsNaN(out.TargetRate):
		out.Reason = ReasonScaleUnknownRate
		return out
	case out.TargetRate == 0 || w.busy <= 0 && observed > 0:
		// No load, or so little that the busy time rounds to nothing.
		out.Utilization = 0
	case observed <= 0:
		out.Reason = ReasonScaleUnknownRate
		return out
	default:
		out.ProcessingRate = observed / w.busy
		out.Utilization = out.TargetRate / out.ProcessingRate
	}
	band := float64(e.p.UtilizationBoundary) / 100
	within := math.Abs(out.Utilization-tu) <= band+1e-9
	need := v.Parallelism
	if !within {
		need = max(int(math.Ceil(float64(v.Parallelism)*out.Utilization/tu-1e-9)), 1)
		need = evenParallelism(max(need, minP), v.MaxParallelism)
		if out.Utilization < tu {
			need = min(need, v.Parallelism) // never up for less load
		}
	}
	// The bounds hold whatever the load, also for a vertex that runs
	// outside them now.
	need = max(need, minP)
	if maxP > 0 {
		need = min(need, maxP)
	}
	out.Target = need
	switch {
	case need > v.Parallelism:
		out.Reason = ReasonScaleUp
	case need < v.Parallelism:
		out.Reason = ReasonScaleDown
	case within:
		out.Reason = ReasonScaleWithinTarget
	case out.Utilization > tu:
		out.Reason = ReasonScaleAtMaxParallelism
	case v.Parallelism <= minP:
		out.Reason = ReasonScaleAtMinParallelism
	default:
		out.Reason = ReasonScaleWithinTarget
	}
	return out
}

// evenParallelism is the least divisor of maxParallelism from p up to a
// quarter above p, or p: a parallelism that spreads the key groups
// evenly.
func evenParallelism(p, maxParallelism int) int {
	if maxParallelism <= 0 || p <= 0 {
		return p
	}
	limit := p + (p+3)/4
	for d := p; d <= limit && d <= maxParallelism; d++ {
		if maxParallelism%d == 0 {
			return d
		}
	}
	return p
}

// Message explains the recommendation in one line for people.
func (r ScaleRecommendation) Message() string {
	cur, tgt := strconv.Itoa(r.Current), strconv.Itoa(r.Target)
	switch r.Reason {
	case ReasonInvalidPolicy:
		return "the autoscale policy is invalid: " + oneLine(r.Failure)
	case ReasonScaleNoVertices:
		return "nothing is known of the job's vertices yet"
	case ReasonScaleCoolDown:
		return "the job was rescaled recently; its parallelism " + cur + " stays until " + r.Until.UTC().Format(time.RFC3339)
	case ReasonScaleCollecting:
		if r.Until.IsZero() {
			return "collecting the vertices' metrics over the window"
		}
		return "collecting the vertices' metrics over the window, until " + r.Until.UTC().Format(time.RFC3339) + " at the earliest"
	case ReasonScaleUp, ReasonScaleDown:
		dir := "up"
		if r.Reason == ReasonScaleDown {
			dir = "down"
		}
		return "scale " + dir + " from " + cur + " to " + tgt + ": " + r.vertexText()
	case ReasonScaleAtMaxParallelism:
		return "more capacity is needed, but parallelism " + cur + " is the maximum: " + r.vertexText()
	case ReasonScaleAtMinParallelism:
		return "less capacity is needed, but parallelism " + cur + " is the minimum"
	case ReasonScaleUnknownRate:
		return "a vertex's processing rate is unknown (it processed nothing in the window); parallelism " + cur + " stays"
	}
	return "parallelism " + cur + " meets the load at the target utilisation"
}

// vertexText names the vertex that needs the most of its capacity among
// those that need the target parallelism.
func (r ScaleRecommendation) vertexText() string {
	best := -1
	for i, v := range r.Vertices {
		if v.Target == r.Target && !math.IsNaN(v.Utilization) && (best < 0 || v.Utilization > r.Vertices[best].Utilization) {
			best = i
		}
	}
	if best < 0 {
		return "no vertex's rates are known"
	}
	v := r.Vertices[best]
	return fmt.Sprintf("vertex %s needs %.0f%% of its capacity at %d (%.1f of %.1f records/s)", v.ID, v.Utilization*100, v.Current,
		v.TargetRate, v.ProcessingRate)
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *ScaleSample) DeepCopyInto(out *ScaleSample) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *ScaleSample) DeepCopy() *ScaleSample {
	if in == nil {
		return nil
	}
	out := new(ScaleSample)
	in.DeepCopyInto(out)
	return out
}
