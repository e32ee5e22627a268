package policy

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// HealthAction says what is done about a job found unhealthy.
type HealthAction string

// Health actions.
const (
	// HealthReport only reports an unhealthy job: the decision's Action is
	// None and its Reason names the problem.
	HealthReport HealthAction = "Report"
	// HealthRestartFromLatestState cancels an unhealthy job and starts it
	// again from the newest savepoint or retained checkpoint within
	// MaxStateAge; without such state the decision blocks and the job is
	// left as it is.
	HealthRestartFromLatestState HealthAction = "RestartFromLatestState"
)

// Defaults of HealthPolicy.WithDefaults. defaultCheckpointTimeout is
// Flink's own default (execution.checkpointing.timeout), used to derive the
// checkpoint window of a job whose timeout is not known.
const (
	defaultHealthAction         = HealthReport
	DefaultHealthMaxRestarts    = 3
	DefaultHealthWindow         = Duration(10 * time.Minute)
	defaultMaxSavepointFailures = 3
	defaultCheckpointTimeout    = Duration(10 * time.Minute)
)

// MaxHealthSamples bounds HealthHistory.Samples.
const MaxHealthSamples = 32

// HealthPolicy says when a job that runs counts as unhealthy and what is
// done about it. It is meant to be embedded in a custom resource's spec.
// Zero fields take the defaults listed at WithDefaults.
type HealthPolicy struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. flinkkit writes no policy: whoever writes one may set it
	// to the FormatVersion it was written for, and Validate refuses a
	// version newer than this release reads.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Action is Report or RestartFromLatestState. Default: Report.
	// +kubebuilder:validation:Enum=Report;RestartFromLatestState
	Action HealthAction `json:"action,omitempty"`
	// MaxRestarts is how many restarts by Flink's own restart strategy
	// (the job's numRestarts metric) are tolerated within Window; more make
	// the job unhealthy. Default: 3.
	// +kubebuilder:validation:Minimum=0
	MaxRestarts int `json:"maxRestarts,omitempty"`
	// Window is the period restarts are counted over. It is also the
	// warm-up of the restart and savepoint rules: they judge a job only once
	// it has run for Window. Default: 10m.
	Window Duration `json:"window,omitzero"`
	// CheckpointWindow is the longest a running job may go without
	// completing a checkpoint. Zero derives it from the job's checkpointing
	// configuration (HealthHistory.CheckpointInterval and
	// CheckpointTimeout): twice the interval plus the timeout, the time one
	// checkpoint may take from the previous one's completion until it
	// times out, with as much again to spare. A job without checkpointing
	// is not judged by this rule.
	CheckpointWindow Duration `json:"checkpointWindow,omitzero"`
	// MaxSavepointFailures is how many savepoints in a row may fail
	// (HealthSample.SavepointFailures) before the job counts as unhealthy.
	// Default: 3.
	// +kubebuilder:validation:Minimum=0
	MaxSavepointFailures int `json:"maxSavepointFailures,omitempty"`
	// TransitionTimeout is how long a job may stay in a transitional state
	// (CREATED, INITIALIZING, RESTARTING, CANCELLING, FAILING, RECONCILING)
	// before it counts as stuck. Default: 5m.
	TransitionTimeout Duration `json:"transitionTimeout,omitzero"`
	// MaxStateAge is the oldest state a restart of an unhealthy job may
	// restore from. Default: 24h.
	MaxStateAge Duration `json:"maxStateAge,omitzero"`
}

// WithDefaults returns p with every unset (zero) field set to its default:
// Action Report, MaxRestarts 3, Window 10m, MaxSavepointFailures 3,
// TransitionTimeout 5m, MaxStateAge 24h. CheckpointWindow stays zero (derived
// from the job's configuration).
func (p HealthPolicy) WithDefaults() HealthPolicy {
	if p.Action == "" {
		p.Action = defaultHealthAction
	}
	if p.MaxRestarts == 0 {
		p.MaxRestarts = DefaultHealthMaxRestarts
	}
	if p.Window == 0 {
		p.Window = DefaultHealthWindow
	}
	if p.MaxSavepointFailures == 0 {
		p.MaxSavepointFailures = defaultMaxSavepointFailures
	}
	if p.TransitionTimeout == 0 {
		p.TransitionTimeout = DefaultTransitionTimeout
	}
	if p.MaxStateAge == 0 {
		p.MaxStateAge = defaultMaxStateAge
	}
	return p
}

// Validate reports every field of p that holds a value the policy cannot
// use, as *FieldError values joined with errors.Join. Zero values are
// valid: they mean "default". A FormatVersion newer than this release
// reads is reported alone, by an error matching ErrUnknownFormat.
func (p HealthPolicy) Validate() error {
	if err := checkFormat("HealthPolicy", p.FormatVersion); err != nil {
		return err
	}
	var errs []error
	switch p.Action {
	case "", HealthReport, HealthRestartFromLatestState:
	default:
		errs = append(errs, &FieldError{Field: "action", Value: string(p.Action),
			Message: "unknown health action; want Report or RestartFromLatestState"})
	}
	if p.MaxRestarts < 0 {
		errs = append(errs, &FieldError{Field: "maxRestarts", Value: strconv.Itoa(p.MaxRestarts),
			Message: "must not be negative (0 means the default, 3)"})
	}
	if p.MaxSavepointFailures < 0 {
		errs = append(errs, &FieldError{Field: "maxSavepointFailures", Value: strconv.Itoa(p.MaxSavepointFailures),
			Message: "must not be negative (0 means the default, 3)"})
	}
	errs = checkNonNegative(errs, "window", p.Window)
	errs = checkNonNegative(errs, "checkpointWindow", p.CheckpointWindow)
	errs = checkNonNegative(errs, "transitionTimeout", p.TransitionTimeout)
	errs = checkNonNegative(errs, "maxStateAge", p.MaxStateAge)
	return errors.Join(errs...)
}

// HealthSample is one observation of a job, as the caller took it from
// the JobManager's REST API.
//
// +kubebuilder:object:generate=false
type HealthSample struct {
	// Time is when the sample was taken.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Time time.Time `json:"time"`
	// State is the job's state (GET /jobs/:jobid/status or details).
	State flinkapi.JobState `json:"state"`
	// StateSince is when the job entered State (the timestamps of the job
	// details); zero: since the first of the trailing samples in State.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	StateSince time.Time `json:"stateSince,omitzero"`
	// Restarts is Flink's count of the job's restarts (the numRestarts job
	// metric, flinkapi.Client.JobRestarts); negative: unknown, and the
	// restart rule skips the sample.
	Restarts int64 `json:"restarts"`
	// CompletedCheckpoints is the job's count of completed checkpoints
	// (GET /jobs/:jobid/checkpoints counts.completed).
	CompletedCheckpoints int64 `json:"completedCheckpoints,omitempty"`
	// LatestCheckpoint is when the newest completed checkpoint completed
	// (its latest acknowledgement); zero if unknown or none.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	LatestCheckpoint time.Time `json:"latestCheckpoint,omitzero"`
	// SavepointFailures is how many savepoints of the job failed since its
	// last successful one (or since it started).
	SavepointFailures int `json:"savepointFailures,omitempty"`
}

// HealthHistory is the caller's bounded record of a job's health samples,
// meant for a custom resource's status. Add appends a sample and keeps the
// history within MaxHealthSamples; a sample of another job starts a new
// history. One of a FormatVersion newer than this release reads decodes
// to that version alone, and EvaluateHealth refuses it (InvalidPolicy,
// naming the type and the version).
//
// +kubebuilder:object:generate=false
type HealthHistory struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. Add sets it to FormatVersion.
	FormatVersion int `json:"formatVersion,omitempty"`
	// JobID is the job the samples are of.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
	// Started is when the job started (Flink's start-time); zero: the time
	// of the first sample. Warm-ups count from it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Started time.Time `json:"started,omitzero"`
	// CheckpointInterval and CheckpointTimeout are the job's checkpointing
	// configuration (GET /jobs/:jobid/checkpoints/config), from which the
	// checkpoint window is derived when the policy sets none. A zero
	// interval means checkpointing is off or unknown.
	CheckpointInterval Duration `json:"checkpointInterval,omitzero"`
	CheckpointTimeout  Duration `json:"checkpointTimeout,omitzero"`
	// Samples are the samples, oldest first.
	Samples []HealthSample `json:"samples,omitempty"`
}

// Add records s, a sample of job, which started at started (zero if
// unknown). A sample of another job than h.JobID starts a new history
// (the checkpointing configuration is kept only for the same job). A sample
// not newer than the newest is dropped. Samples older than the policy's
// window (the longer of Window and the checkpoint window) are dropped,
// except the newest of them, which restarts are counted from; beyond
// MaxHealthSamples, the sample closest to its predecessor goes, so the
// history spans the window with fewer points.
func (h *HealthHistory) Add(job flinkapi.JobID, started time.Time, s HealthSample, p HealthPolicy) {
	if job != h.JobID {
		*h = HealthHistory{JobID: job}
	}
	h.FormatVersion = FormatVersion
	if h.Started.IsZero() || !started.IsZero() && started.Before(h.Started) {
		h.Started = started
	}
	if n := len(h.Samples); n == 0 || s.Time.After(h.Samples[n-1].Time) {
		h.Samples = append(h.Samples, s)
	}
	if h.Started.IsZero() {
		h.Started = h.Samples[0].Time
	}
	p = p.WithDefaults()
	span := max(p.Window.Std(), checkpointWindow(&p, h))
	cut := h.Samples[len(h.Samples)-1].Time.Add(-span)
	// Keep one sample at or before the cut: the base of the counts.
	first := 0
	for i := len(h.Samples) - 1; i >= 0; i-- {
		if !h.Samples[i].Time.After(cut) {
			first = i
			break
		}
	}
	if first > 0 {
		h.Samples = append(h.Samples[:0], h.Samples[first:]...)
	}
	switch n := len(h.Samples); {
	case n == MaxHealthSamples+1: // one over, as after each Add
		drop, gap := 1, time.Duration(math.MaxInt64)
		for i := 1; i < len(h.Samples)-1; i++ {
			if g := h.Samples[i].Time.Sub(h.Samples[i-1].Time); g < gap {
				drop, gap = i, g
			}
		}
		h.Samples = append(h.Samples[:drop], h.Samples[drop+1:]...)
	case n > MaxHealthSamples+1: // a longer stored history
		h.Samples = thinSamples(h.Samples, MaxHealthSamples)
	}
}

// thinSamples drops samples until max are left, each time the one of the
// smallest gap to the sample before it (the first of equal gaps), never
// the first or the last: what dropping them one by one with a scan each
// does, in O(n log n) with a heap of the gaps. It thins ss in place and
// returns it shortened; its scratch space is one allocation.
func thinSamples(ss []HealthSample, max int) []HealthSample {
	n := len(ss)
	if n <= max || n <= 2 {
		return ss
	}
	// Slot i holds sample i's neighbours still kept (next is -1 once i is
	// dropped) and the heap's i-th entry: the heap never holds more than
	// n-2 entries, as each drop pops one before it pushes one.
	slots := make([]thinSlot, n)
	h := gapHeap{s: slots}
	for i := range n {
		slots[i].prev, slots[i].next = i-1, i+1
		if i > 0 && i < n-1 {
			slots[h.n].e = gapEntry{ss[i].Time.Sub(ss[i-1].Time), i}
			h.n++
		}
	}
	h.init()
	for left := n; left > max && h.n > 0; {
		e := h.pop()
		s := &slots[e.i]
		if s.next < 0 || ss[e.i].Time.Sub(ss[s.prev].Time) != e.gap {
			continue // dropped, or its gap changed: a newer entry stands
		}
		left--
		p, nx := s.prev, s.next
		s.next = -1
		slots[p].next, slots[nx].prev = nx, p
		if nx < n-1 {
			h.push(gapEntry{ss[nx].Time.Sub(ss[p].Time), nx})
		}
	}
	out := ss[:0]
	for i := range ss {
		if slots[i].next >= 0 {
			out = append(out, ss[i])
		}
	}
	return out
}

// thinSlot is thinSamples' scratch space for one sample.
type thinSlot struct {
	prev, next int
	e          gapEntry
}

type gapEntry struct {
	gap time.Duration
	i   int
}

// gapHeap is a binary min-heap of the first n entries of its slots,
// ordered by gap, then by position: the scan's choice.
type gapHeap struct {
	s []thinSlot
	n int
}

func (h *gapHeap) less(a, b int) bool {
	x, y := &h.s[a].e, &h.s[b].e
	return x.gap < y.gap || x.gap == y.gap && x.i < y.i
}

func (h *gapHeap) swap(a, b int) { h.s[a].e, h.s[b].e = h.s[b].e, h.s[a].e }

func (h *gapHeap) init() {
	for i := h.n/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *gapHeap) push(e gapEntry) {
	h.s[h.n].e = e
	h.n++
	for i := h.n - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *gapHeap) pop() gapEntry {
	e := h.s[0].e
	h.n--
	h.s[0].e = h.s[h.n].e
	h.down(0)
	return e
}

func (h *gapHeap) down(i int) {
	for {
		least, l := i, 2*i+1
		if l < h.n && h.less(l, least) {
			least = l
		}
		if r := l + 1; r < h.n && h.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}

// start is when the job started, as far as known.
func (h *HealthHistory) start() time.Time {
	if !h.Started.IsZero() {
		return h.Started
	}
	if len(h.Samples) > 0 {
		return h.Samples[0].Time
	}
	return time.Time{}
}

// checkpointWindow is the policy's checkpoint window, or the one derived
// from h's configuration; zero when checkpointing is off or unknown.
func checkpointWindow(p *HealthPolicy, h *HealthHistory) time.Duration {
	if p.CheckpointWindow > 0 {
		return p.CheckpointWindow.Std()
	}
	if h.CheckpointInterval <= 0 {
		return 0
	}
	timeout := h.CheckpointTimeout
	if timeout <= 0 {
		timeout = defaultCheckpointTimeout
	}
	return 2*h.CheckpointInterval.Std() + timeout.Std()
}

// HealthState is the verdict of a health evaluation.
type HealthState string

// Health states.
const (
	// Healthy: every rule judged the job and none found a problem.
	Healthy HealthState = "Healthy"
	// Unhealthy: a rule found a problem; HealthDecision.Problem names it.
	Unhealthy HealthState = "Unhealthy"
	// NotJudged: the job is not judged now: it ended, the JobManager does
	// not answer, nothing was sampled, or it is warming up.
	NotJudged HealthState = "NotJudged"
)

// Reasons of EvaluateHealth, in HealthDecision.Problem and, for the Action
// None, in Decision.Reason.
const (
	// ReasonHealthy: no rule found a problem.
	ReasonHealthy Reason = "Healthy"
	// ReasonWarmingUp: the job started too recently to be judged.
	ReasonWarmingUp Reason = "WarmingUp"
	// ReasonNoHealthData: the history holds no sample.
	ReasonNoHealthData Reason = "NoHealthData"
	// ReasonJobEnded: the job is FINISHED, CANCELED, FAILED or SUSPENDED,
	// or the JobManager no longer knows it: it is not judged; the restart
	// policy decides what follows.
	ReasonJobEnded Reason = "JobEnded"
	// ReasonTooManyRestarts: Flink restarted the job more than MaxRestarts
	// times within Window.
	ReasonTooManyRestarts Reason = "TooManyRestarts"
	// ReasonNoCheckpointProgress: the running job completed no checkpoint
	// within the checkpoint window.
	ReasonNoCheckpointProgress Reason = "NoCheckpointProgress"
	// ReasonSavepointsFailing: MaxSavepointFailures savepoints or more
	// failed in a row.
	ReasonSavepointsFailing Reason = "SavepointsFailing"
	// ReasonRestartUnhealthyJob (CancelFirst): the policy restarts the
	// unhealthy job: cancel it, then start it from the RestorePoint.
	ReasonRestartUnhealthyJob Reason = "RestartUnhealthyJob"
)

// ReasonJobStuck (in Problem) means the job stayed in a transitional state
// longer than TransitionTimeout; as a Decision.Reason with Action Block it
// means a CANCELLING job that cannot be restarted until it settles.
// ReasonNoRecentState blocks a restart for want of state within
// MaxStateAge, ReasonSavepointInProgress waits for a savepoint in flight,
// ReasonJobManagerUnreachable and ReasonInvalidPolicy are as for
// EvaluateUpdate.

// HealthDecision is the outcome of EvaluateHealth: the verdict, the
// problem found, and what to do about it as a Decision of the same shape
// as update and restart decisions.
//
// +kubebuilder:object:generate=false
type HealthDecision struct {
	// State is the verdict.
	State HealthState
	// Problem is a stable code for the verdict: Healthy, WarmingUp,
	// NoHealthData, JobEnded, JobManagerUnreachable, InvalidPolicy, or the
	// problem of an unhealthy job (TooManyRestarts, NoCheckpointProgress,
	// SavepointsFailing, JobStuck).
	Problem Reason
	// Decision is what to do: None (nothing, or only report),
	// CancelFirst (restart from Decision.RestorePoint), Wait (a savepoint
	// is in flight) or Block (no state young enough, a CANCELLING job, an
	// invalid policy).
	Decision
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *HealthDecision) DeepCopyInto(out *HealthDecision) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *HealthDecision) DeepCopy() *HealthDecision {
	if in == nil {
		return nil
	}
	out := new(HealthDecision)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *HealthSample) DeepCopyInto(out *HealthSample) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *HealthSample) DeepCopy() *HealthSample {
	if in == nil {
		return nil
	}
	out := new(HealthSample)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *HealthHistory) DeepCopyInto(out *HealthHistory) {
	*out = *in
	if in.Samples != nil {
		out.Samples = make([]HealthSample, len(in.Samples))
		copy(out.Samples, in.Samples)
	}
}

// DeepCopy returns a copy of in, or nil for nil.
func (in *HealthHistory) DeepCopy() *HealthHistory {
	if in == nil {
		return nil
	}
	out := new(HealthHistory)
	in.DeepCopyInto(out)
	return out
}

// EvaluateHealth judges a job from its health history and decides what to
// do about it. It applies p's defaults and does no I/O; now is the only
// clock. obs supplies whether the JobManager answers and the restore
// points (LatestSavepoint, LatestCheckpoint, a savepoint in flight); the
// job's state is the newest sample's.
//
// The rules, in order:
//
//   - An invalid policy blocks (InvalidPolicy); a JobManager that does not
//     answer (JobManagerUnreachable), a job it does not know, and an empty
//     history (NoHealthData) are not judged.
//   - FINISHED, CANCELED, FAILED and SUSPENDED jobs are never unhealthy
//     (JobEnded): the restart policy decides about them.
//   - A job in a transitional state (CREATED, INITIALIZING, RESTARTING,
//     CANCELLING, FAILING, RECONCILING, or one unknown to this package)
//     since longer than TransitionTimeout is stuck (JobStuck).
//   - Once the job has run for Window: more than MaxRestarts restarts
//     within Window (TooManyRestarts), counted from the newest sample at
//     or before now minus Window (else the oldest); MaxSavepointFailures
//     or more savepoints failed in a row (SavepointsFailing).
//   - Once the job has run for the checkpoint window: a RUNNING job whose
//     newest completed checkpoint (or, without one, its start) is older
//     than the window (NoCheckpointProgress). Without a completion time the
//     checkpoint count is used: progress dates from the first sample that
//     shows the newest count.
//   - A job none of whose rules has had its window yet is not judged
//     (WarmingUp); otherwise it is Healthy.
//
// For an unhealthy job under HealthReport the Decision's Action is None
// with the problem as its Reason. Under HealthRestartFromLatestState it is
// CancelFirst from the newest savepoint or retained checkpoint within
// MaxStateAge (RestartUnhealthyJob), after a savepoint in flight ended or
// passed its deadline (Wait, SavepointInProgress); without such state it
// blocks (NoRecentState), and a CANCELLING job blocks (JobStuck): a job is
// never restarted without state. Every decision but a terminal one asks to
// be evaluated again after 10s at the latest.
//
// A policy or a history of a format version newer than this release
// reads is invalid (InvalidPolicy), like any other that does not validate.
func EvaluateHealth(p HealthPolicy, h HealthHistory, obs Observations, now time.Time) (d HealthDecision) {
	d.Details.Now = now
	d.State = NotJudged
	err := p.Validate()
	if err == nil {
		// A history of a newer format holds no samples this release read.
		err = h.CheckFormat()
	}
	if err != nil {
		d.Problem, d.Action, d.Reason, d.Details.Failure = ReasonInvalidPolicy, ActionBlock, ReasonInvalidPolicy, err.Error()
		return d
	}
	p = p.WithDefaults()
	d.Details.MaxStateAge = p.MaxStateAge.Std()
	d.Action, d.RequeueAfter = ActionNone, defaultPollInterval
	switch {
	case !obs.JobManagerReachable:
		d.Problem = ReasonJobManagerUnreachable
		d.Details.Since = obs.LastContact
	case len(h.Samples) == 0:
		d.Problem = ReasonNoHealthData
	}
	if d.Problem != "" {
		d.Reason = d.Problem
		return d
	}
	last := &h.Samples[len(h.Samples)-1]
	d.Details.JobState = last.State
	if obs.Job == nil || last.State.IsTerminal() {
		d.Problem, d.Reason, d.RequeueAfter = ReasonJobEnded, ReasonJobEnded, 0
		if obs.Job == nil {
			d.Details.JobState = ""
		}
		return d
	}
	judge(&d, &p, &h, last, now)
	d.Reason = d.Problem
	if d.State == Unhealthy && p.Action == HealthRestartFromLatestState {
		restartUnhealthy(&d, &p, &obs, last, now)
	}
	return d
}

// judge applies the rules to the history and sets d.State, d.Problem and
// the details.
func judge(d *HealthDecision, p *HealthPolicy, h *HealthHistory, last *HealthSample, now time.Time) {
	start := h.start()
	ran := now.Sub(start)
	timeout := p.TransitionTimeout.Std()
	window := p.Window.Std()
	cpWindow := checkpointWindow(p, h)

	if last.State != flinkapi.JobRunning {
		since := stateSince(h)
		if since.Before(start) {
			since = start
		}
		if now.Sub(since) >= timeout {
			d.State, d.Problem = Unhealthy, ReasonJobStuck
			d.Details.Since, d.Details.Limit = since, timeout
			return
		}
	}
	if ran >= window {
		if base := restartBase(h, now.Add(-window)); base != nil && last.Restarts >= 0 {
			if n := last.Restarts - base.Restarts; n > int64(p.MaxRestarts) {
				d.State, d.Problem = Unhealthy, ReasonTooManyRestarts
				d.Details.Count, d.Details.Max = int(min(n, math.MaxInt32)), p.MaxRestarts
				d.Details.Since, d.Details.Limit = base.Time, window
				return
			}
		}
		if last.SavepointFailures >= p.MaxSavepointFailures {
			d.State, d.Problem = Unhealthy, ReasonSavepointsFailing
			d.Details.Count, d.Details.Max = last.SavepointFailures, p.MaxSavepointFailures
			return
		}
	}
	if cpWindow > 0 && ran >= cpWindow && last.State == flinkapi.JobRunning {
		progress := checkpointProgress(h)
		if progress.Before(start) {
			progress = start
		}
		if now.Sub(progress) >= cpWindow {
			d.State, d.Problem = Unhealthy, ReasonNoCheckpointProgress
			d.Details.Since, d.Details.Limit = progress, cpWindow
			d.Details.Count = int(min(last.CompletedCheckpoints, math.MaxInt32))
			return
		}
	}
	warm := min(window, timeout)
	if cpWindow > 0 {
		warm = min(warm, cpWindow)
	}
	if ran < warm {
		d.State, d.Problem = NotJudged, ReasonWarmingUp
		d.Details.Since, d.Details.Limit = start, warm
		return
	}
	d.State, d.Problem = Healthy, ReasonHealthy
}

// stateSince is when the newest sample's state began: its StateSince, else
// the time of the first of the trailing samples in that state.
func stateSince(h *HealthHistory) time.Time {
	n := len(h.Samples)
	last := &h.Samples[n-1]
	if !last.StateSince.IsZero() {
		return last.StateSince
	}
	since := last.Time
	for i := n - 2; i >= 0 && h.Samples[i].State == last.State; i-- {
		since = h.Samples[i].Time
	}
	return since
}

// restartBase is the sample restarts are counted from: the newest with a
// known count at or before cut, else the oldest with a known count; nil if
// none is known.
func restartBase(h *HealthHistory, cut time.Time) *HealthSample {
	var oldest *HealthSample
	for i := len(h.Samples) - 1; i >= 0; i-- {
		s := &h.Samples[i]
		if s.Restarts < 0 {
			continue
		}
		if !s.Time.After(cut) {
			return s
		}
		oldest = s
	}
	return oldest
}

// checkpointProgress is when the job last completed a checkpoint, as far
// as the history shows; zero if it shows none.
func checkpointProgress(h *HealthHistory) time.Time {
	n := len(h.Samples)
	last := &h.Samples[n-1]
	if !last.LatestCheckpoint.IsZero() {
		return last.LatestCheckpoint
	}
	if last.CompletedCheckpoints <= 0 {
		return time.Time{}
	}
	at := last.Time
	for i := n - 2; i >= 0 && h.Samples[i].CompletedCheckpoints == last.CompletedCheckpoints; i-- {
		at = h.Samples[i].Time
	}
	return at
}

// restartUnhealthy turns the verdict into a restart, or says why not.
func restartUnhealthy(d *HealthDecision, p *HealthPolicy, obs *Observations, last *HealthSample, now time.Time) {
	if last.State == flinkapi.JobCancelling {
		d.Action, d.Reason = ActionBlock, ReasonJobStuck
		return
	}
	// Keep the verdict's facts; a wait on a savepoint replaces them.
	details := d.Details
	waiting := savepointWait(&d.Decision, &obs.Savepoint, defaultSavepointDeadline.Std(), now)
	d.Details = details
	if waiting {
		return
	}
	var sel selection
	selectState(&sel, obs, p.MaxStateAge.Std(), now, true)
	d.Details.Newest = sel.newest
	if !sel.chosen.IsSet() {
		d.Action, d.Reason = ActionBlock, ReasonNoRecentState
		return
	}
	d.Action, d.Reason = ActionCancelFirst, ReasonRestartUnhealthyJob
	d.RestorePoint = sel.chosen
	d.RequeueAfter = defaultPollInterval
}

// Message explains the decision in one line for people: the verdict with
// the counts, ages and limits behind it, then what to do.
func (d HealthDecision) Message() string {
	t := &d.Details
	var sb strings.Builder
	b := &sb
	b.Grow(messageSize(d.RestorePoint.Path, t.Failure))
	switch d.Problem {
	case ReasonInvalidPolicy:
		b.WriteString("the health policy is invalid: ")
		b.WriteString(oneLine(t.Failure))
		return b.String()
	case ReasonJobManagerUnreachable:
		b.WriteString("the JobManager does not answer (")
		writeSince(b, "last answer", t.Since, t.Now)
		b.WriteString("); the job's health is not judged")
		return b.String()
	case ReasonNoHealthData:
		return "no health sample of the job yet; it is not judged"
	case ReasonJobEnded:
		writeJob(b, t.JobState)
		b.WriteString("; an ended job is not judged, the restart policy decides")
		return b.String()
	case ReasonWarmingUp:
		b.WriteString("the job started ")
		writeAgo(b, t.Since, t.Now)
		b.WriteString("; it is judged once it has run for ")
		writeDur(b, t.Limit)
		return b.String()
	case ReasonHealthy:
		b.WriteString("the job is ")
		b.WriteString(stateName(t.JobState))
		b.WriteString(" and healthy")
		return b.String()
	case ReasonJobStuck:
		b.WriteString("unhealthy: the job has been ")
		b.WriteString(stateName(t.JobState))
		b.WriteString(" for ")
		writeDur(b, age(t.Since, t.Now))
		b.WriteString(", longer than the limit of ")
		writeDur(b, t.Limit)
	case ReasonTooManyRestarts:
		b.WriteString("unhealthy: Flink restarted the job ")
		writeInt(b, t.Count)
		b.WriteString(" times within ")
		writeDur(b, t.Limit)
		b.WriteString(" (limit ")
		writeInt(b, t.Max)
		b.WriteString(")")
	case ReasonNoCheckpointProgress:
		b.WriteString("unhealthy: the job completed no checkpoint for ")
		writeDur(b, age(t.Since, t.Now))
		b.WriteString(" (limit ")
		writeDur(b, t.Limit)
		b.WriteString(", ")
		writeInt(b, t.Count)
		b.WriteString(" completed in all); its restore point grows stale")
	case ReasonSavepointsFailing:
		b.WriteString("unhealthy: ")
		writeInt(b, t.Count)
		b.WriteString(" savepoints failed in a row (limit ")
		writeInt(b, t.Max)
		b.WriteString(")")
	default:
		b.WriteString(string(d.State))
		b.WriteString(": ")
		b.WriteString(string(d.Problem))
	}
	switch d.Action {
	case ActionNone:
		b.WriteString("; reported only")
	case ActionCancelFirst:
		b.WriteString("; cancel it, then ")
		writeRestore(b, d.RestorePoint, t)
	case ActionWait:
		b.WriteString("; a savepoint is in flight: waiting for it until ")
		writeClock(b, d.Deadline)
	case ActionBlock:
		if d.Reason == ReasonJobStuck {
			b.WriteString("; a CANCELLING job cannot be restarted until it settles: check the JobManager")
		} else {
			b.WriteString("; not restarted: ")
			writeNoState(b, t)
		}
	}
	return b.String()
}
