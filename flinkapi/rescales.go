package flinkapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// RescaleID identifies one rescale of a job in Flink 2.3's rescale history
// (its "rescaleUuid"): 32 lower-case hexadecimal characters.
type RescaleID string

// ParseRescaleID checks that s is a rescale id (32 hexadecimal characters)
// and returns it in Flink's lower-case form.
func ParseRescaleID(s string) (RescaleID, error) {
	if err := checkHex32("rescale id", s); err != nil {
		return "", err
	}
	return RescaleID(strings.ToLower(s)), nil
}

// Validate reports whether id is a well-formed rescale id.
func (id RescaleID) Validate() error { return checkHex32("rescale id", string(id)) }

// RescaleTrigger is what started a rescale, Flink's TriggerCause.
type RescaleTrigger string

// The causes of a rescale (Flink 2.3).
const (
	// RescaleInitialSchedule is the job's first schedule: every job on
	// the adaptive scheduler with the history on has one.
	RescaleInitialSchedule RescaleTrigger = "INITIAL_SCHEDULE"
	// RescaleUpdateRequirement follows new resource requirements
	// (SetResourceRequirements).
	RescaleUpdateRequirement RescaleTrigger = "UPDATE_REQUIREMENT"
	// RescaleNewResourceAvailable follows new slots.
	RescaleNewResourceAvailable RescaleTrigger = "NEW_RESOURCE_AVAILABLE"
	// RescaleRecoverableFailover is the restart after a task failure.
	RescaleRecoverableFailover RescaleTrigger = "RECOVERABLE_FAILOVER"
)

// RescaleState is how a rescale ended, Flink's TerminalState. The zero
// value means the rescale is still in progress.
type RescaleState string

// The terminal states of a rescale (Flink 2.3).
const (
	// RescaleCompleted: the job runs with the new parallelism.
	RescaleCompleted RescaleState = "COMPLETED"
	// RescaleFailed: the rescale ended in an error or with the job.
	RescaleFailed RescaleState = "FAILED"
	// RescaleIgnored: nothing was changed (no new resources or
	// parallelism, or newer requirements replaced these).
	RescaleIgnored RescaleState = "IGNORED"
)

// IsTerminal reports whether the rescale has ended.
func (s RescaleState) IsTerminal() bool { return s != "" }

// RescaleReason says why a rescale ended, Flink's TerminatedReason.
type RescaleReason string

// The reasons a rescale ended (Flink 2.3).
const (
	RescaleSucceeded             RescaleReason = "SUCCEEDED"
	RescaleExceptionOccurred     RescaleReason = "EXCEPTION_OCCURRED"
	RescaleRequirementsUpdated   RescaleReason = "RESOURCE_REQUIREMENTS_UPDATED"
	RescaleNoChange              RescaleReason = "NO_RESOURCES_OR_PARALLELISMS_CHANGE"
	RescaleJobFinished           RescaleReason = "JOB_FINISHED"
	RescaleJobFailed             RescaleReason = "JOB_FAILED"
	RescaleJobCanceled           RescaleReason = "JOB_CANCELED"
	RescaleJobFailoverRestarting RescaleReason = "JOB_FAILOVER_RESTARTING"
)

// Rescale is one rescale of a job under the adaptive scheduler, as Flink
// 2.3's rescale history records it.
type Rescale struct {
	ID RescaleID
	// RequirementsID identifies the resource requirements the rescale
	// worked towards; Attempt counts the rescales towards them (from 1).
	RequirementsID string
	Attempt        int64
	Trigger        RescaleTrigger
	State          RescaleState  // zero while in progress
	Reason         RescaleReason // zero while in progress
	StartTime      time.Time
	EndTime        time.Time // zero while in progress
	// Vertices are the job's vertices by id, with their parallelism
	// before and after. Only RescaleDetails fills them: Flink leaves them
	// out of the history's entries.
	Vertices map[string]VertexRescale
	// SchedulerStates are the states the adaptive scheduler went through
	// during the rescale, in order. Only RescaleDetails fills them.
	SchedulerStates []SchedulerStateSpan
}

// Duration is the time from the rescale's start to its end, 0 while it is
// in progress. It includes the time the job kept running before the
// scheduler restarted it; Downtime is the time it did not run.
func (r *Rescale) Duration() time.Duration {
	if r.EndTime.IsZero() || r.StartTime.IsZero() || r.EndTime.Before(r.StartTime) {
		return 0
	}
	return r.EndTime.Sub(r.StartTime)
}

// schedulerExecuting is the adaptive scheduler's state of a running job.
const schedulerExecuting = "Executing"

// Downtime is how long the rescale kept the job from running: from the
// moment the scheduler left Executing (the tasks were stopped) to the
// moment it entered Executing again (the tasks were deployed with the new
// parallelism), read from SchedulerStates. ok is false when that cannot be
// told: the scheduler states are absent (an entry of RescaleHistory), or
// the job did not run again within the rescale (in progress, failed). A
// rescale that never left Executing (ignored) has a downtime of 0, ok.
func (r *Rescale) Downtime() (d time.Duration, ok bool) {
	if len(r.SchedulerStates) == 0 {
		return 0, false
	}
	var stopped time.Time
	for i, s := range r.SchedulerStates {
		switch {
		case s.State != schedulerExecuting && stopped.IsZero():
			stopped = s.Enter
			if i > 0 && !r.SchedulerStates[i-1].Leave.IsZero() {
				stopped = r.SchedulerStates[i-1].Leave // Executing's end
			}
		case s.State == schedulerExecuting && !stopped.IsZero():
			if s.Enter.Before(stopped) {
				return 0, false
			}
			return s.Enter.Sub(stopped), true
		}
	}
	return 0, stopped.IsZero()
}

// VertexRescale is one job vertex in a rescale. A parallelism Flink does
// not know (before the job's first schedule, after a failed rescale) is 0.
type VertexRescale struct {
	ID   string
	Name string
	// SlotSharingGroup is the name of the vertex's slot sharing group.
	SlotSharingGroup string
	// Desired is the parallelism the scheduler aimed at (the upper bound
	// as far as the slots allow), Sufficient the least it accepts.
	Desired    int
	Sufficient int
	// Before and After are the vertex's parallelism before and after the
	// rescale.
	Before int
	After  int
}

// SchedulerStateSpan is one state of the adaptive scheduler during a
// rescale: Executing, Restarting, WaitingForResources,
// CreatingExecutionGraph, ...
type SchedulerStateSpan struct {
	State    string
	Enter    time.Time
	Leave    time.Time // zero while in it
	Duration time.Duration
	// Exception is the failure the scheduler met in this state, as Flink
	// prints it; empty when none.
	Exception string
}

type rescaleWire struct {
	RescaleUUID      RescaleID                    `json:"rescaleUuid"`
	RequirementsUUID string                       `json:"resourceRequirementsUuid"`
	AttemptID        int64                        `json:"rescaleAttemptId"`
	Vertices         map[string]vertexRescaleWire `json:"vertices"`
	SchedulerStates  []schedulerStateSpanWire     `json:"schedulerStates"`
	Start            int64                        `json:"startTimestampInMillis"`
	End              int64                        `json:"endTimestampInMillis"`
	TerminalState    RescaleState                 `json:"terminalState"`
	TriggerCause     RescaleTrigger               `json:"triggerCause"`
	TerminatedReason RescaleReason                `json:"terminatedReason"`
}

type vertexRescaleWire struct {
	ID               string `json:"jobVertexId"`
	Name             string `json:"jobVertexName"`
	SlotSharingGroup string `json:"slotSharingGroupName"`
	Desired          int    `json:"desiredParallelism"`
	Sufficient       int    `json:"sufficientParallelism"`
	Before           int    `json:"preRescaleParallelism"`
	After            int    `json:"postRescaleParallelism"`
}

type schedulerStateSpanWire struct {
	State     string `json:"state"`
	Enter     int64  `json:"enterTimestampInMillis"`
	Leave     int64  `json:"leaveTimestampInMillis"`
	Duration  int64  `json:"durationInMillis"`
	Exception string `json:"stringifiedException"`
}

func (w *rescaleWire) convert() Rescale {
	r := Rescale{
		ID: RescaleID(strings.ToLower(string(w.RescaleUUID))), RequirementsID: w.RequirementsUUID, Attempt: w.AttemptID,
		Trigger: w.TriggerCause, State: w.TerminalState, Reason: w.TerminatedReason,
		StartTime: FromMillis(w.Start), EndTime: FromMillis(w.End),
	}
	if len(w.Vertices) > 0 {
		r.Vertices = make(map[string]VertexRescale, len(w.Vertices))
		for k, v := range w.Vertices {
			id := v.ID
			if id == "" {
				id = k
			}
			r.Vertices[k] = VertexRescale{ID: id, Name: v.Name, SlotSharingGroup: v.SlotSharingGroup,
				Desired: v.Desired, Sufficient: v.Sufficient, Before: v.Before, After: v.After}
		}
	}
	for _, s := range w.SchedulerStates {
		r.SchedulerStates = append(r.SchedulerStates, SchedulerStateSpan{State: s.State, Enter: FromMillis(s.Enter),
			Leave: FromMillis(s.Leave), Duration: DurationFromMillis(s.Duration), Exception: s.Exception})
	}
	return r
}

// RescaleHistory returns the job's rescales as Flink 2.3 keeps them, the
// newest first, at most web.adaptive-scheduler.rescale-history.size of
// them, without their vertices and scheduler states (RescaleDetails has
// those). The history is kept only by the adaptive scheduler
// (jobmanager.scheduler: adaptive) and only when that size is above 0:
//   - on the adaptive scheduler with the size 0 (the default), Flink
//     answers an empty history; with the size above 0 a running job's
//     history always holds its first schedule (RescaleInitialSchedule),
//     so an empty history of a running job means the history is off;
//   - on another scheduler, Flink answers 404: IsRescaleHistoryUnavailable
//     is true.
//
// An unknown job answers IsJobNotFound. Clusters older than Flink 2.3
// answer ErrUnsupported, with nothing sent.
//
// Flink REST: GET /jobs/:jobid/rescales/history (2.3+)
func (c *Client) RescaleHistory(ctx context.Context, job JobID) ([]Rescale, error) {
	path, err := jobPath(job, "/rescales/history")
	if err != nil {
		return nil, err
	}
	if _, err := c.requireFeature(ctx, FeatureRescaleHistory); err != nil {
		return nil, err
	}
	var w []rescaleWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	out := make([]Rescale, len(w))
	for i := range w {
		out[i] = w[i].convert()
	}
	return out, nil
}

// RescaleDetails returns one rescale of the job's history with its
// vertices' parallelism before and after and the scheduler's states
// (hence its Downtime). A rescale the history does not hold (never
// there, or dropped from a full history) answers IsRescaleNotFound, as
// every rescale does on the adaptive scheduler with the history off; on
// another scheduler IsRescaleHistoryUnavailable is true. Clusters older
// than Flink 2.3 answer ErrUnsupported, with nothing sent.
//
// Flink REST: GET /jobs/:jobid/rescales/details/:rescaleuuid (2.3+)
func (c *Client) RescaleDetails(ctx context.Context, job JobID, id RescaleID) (*Rescale, error) {
	path, err := jobPath(job, "/rescales/details/")
	if err != nil {
		return nil, err
	}
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if _, err := c.requireFeature(ctx, FeatureRescaleHistory); err != nil {
		return nil, err
	}
	path += strings.ToLower(string(id))
	var w rescaleWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	if err := w.RescaleUUID.Validate(); err != nil {
		return nil, c.decodeError(http.MethodGet, path, errors.New("no usable rescale id: "+inputMessage(err)))
	}
	r := w.convert()
	return &r, nil
}

// isRescalesPath reports whether an answer came from a rescale route.
func isRescalesPath(ae *APIError) bool {
	return strings.HasPrefix(ae.Path, "/jobs/") && strings.Contains(ae.Path, "/rescales/")
}

// IsRescaleHistoryUnavailable reports whether err is Flink's 404 for the
// rescale history of a job whose scheduler keeps none: a job not on the
// adaptive scheduler ("The job ... has not enabled the `Adaptive`
// scheduler, or ...", "AdaptiveScheduler rescales was not enabled for job
// ..."). Confirm a change of parallelism from the job's vertices instead.
func IsRescaleHistoryUnavailable(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || !isRescalesPath(ae) {
		return false
	}
	for _, m := range ae.Errors {
		if containsFold(m, "rescalesunavailableexception") || containsFold(m, "has not enabled") ||
			containsFold(m, "rescales was not enabled") {
			return true
		}
	}
	return false
}

// IsRescaleNotFound reports whether err is Flink's 404 for a rescale id
// the job's history does not hold ("Could not find rescale details of
// specified rescaleUuid ...").
func IsRescaleNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || !isRescalesPath(ae) {
		return false
	}
	for _, m := range ae.Errors {
		if containsFold(m, "could not find rescale") {
			return true
		}
	}
	return false
}
