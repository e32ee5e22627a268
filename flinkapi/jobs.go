package flinkapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// JobState is a Flink job status (JobStatus in Flink).
type JobState string

// Job states. FAILED, CANCELED and FINISHED are globally terminal: the job
// will not run again. SUSPENDED is only locally terminal: another JobManager
// may take the job over.
const (
	JobInitializing JobState = "INITIALIZING" // 1.12+
	JobCreated      JobState = "CREATED"
	JobRunning      JobState = "RUNNING"
	JobFailing      JobState = "FAILING"
	JobFailed       JobState = "FAILED"
	JobCancelling   JobState = "CANCELLING"
	JobCanceled     JobState = "CANCELED"
	JobFinished     JobState = "FINISHED"
	JobRestarting   JobState = "RESTARTING"
	JobSuspended    JobState = "SUSPENDED"
	JobReconciling  JobState = "RECONCILING"
)

// IsGloballyTerminal reports FAILED, CANCELED and FINISHED.
func (s JobState) IsGloballyTerminal() bool {
	return s == JobFailed || s == JobCanceled || s == JobFinished
}

// IsTerminal reports the globally terminal states and SUSPENDED.
func (s JobState) IsTerminal() bool { return s.IsGloballyTerminal() || s == JobSuspended }

// IsKnown reports whether s is one of the states above.
func (s JobState) IsKnown() bool {
	switch s {
	case JobInitializing, JobCreated, JobRunning, JobFailing, JobFailed, JobCancelling,
		JobCanceled, JobFinished, JobRestarting, JobSuspended, JobReconciling:
		return true
	}
	return false
}

// JobIDStatus is one entry of GET /jobs.
type JobIDStatus struct {
	ID     JobID    `json:"id"`
	Status JobState `json:"status"`
}

type jobsListWire struct {
	Jobs []JobIDStatus `json:"jobs"`
}

// ListJobs returns the id and state of every job the JobManager knows.
//
// Flink REST: GET /jobs (1.0+)
func (c *Client) ListJobs(ctx context.Context) ([]JobIDStatus, error) {
	var out jobsListWire
	if err := c.get(ctx, "/jobs", nil, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// JobOverview is one entry of GET /jobs/overview.
type JobOverview struct {
	ID               JobID
	Name             string
	State            JobState
	StartTime        time.Time
	EndTime          time.Time // zero while running
	Duration         time.Duration
	LastModification time.Time
	Tasks            TaskCounts // tasks per execution state, and their total
	// JobType is STREAMING or BATCH, SchedulerType the job's scheduler
	// (Default, Adaptive, AdaptiveBatch); Flink 2.3 sends them, older
	// versions leave them empty.
	JobType       string
	SchedulerType string
}

// TaskCounts counts a job's tasks, or a vertex's subtasks, per execution
// state: the "tasks" object of GET /jobs/overview (lower-case keys, with
// "total") and of each vertex of GET /jobs/:jobid (upper-case keys,
// without one). The states are Flink's ExecutionState of 1.15 to 2.x; a
// state Flink does not send counts 0. The JSON names are those of the
// job overview.
type TaskCounts struct {
	Created      int `json:"created"`
	Scheduled    int `json:"scheduled"`
	Deploying    int `json:"deploying"`
	Running      int `json:"running"`
	Finished     int `json:"finished"`
	Canceling    int `json:"canceling"`
	Canceled     int `json:"canceled"`
	Failed       int `json:"failed"`
	Reconciling  int `json:"reconciling"`
	Initializing int `json:"initializing"`
	// Total is Flink's "total" in the job overview, which counts tasks in
	// any state; for a vertex, whose counts Flink sends without a total,
	// it is the sum of the states above.
	Total int `json:"total"`
}

// sum adds up the counts of every state.
func (t TaskCounts) sum() int {
	return t.Created + t.Scheduled + t.Deploying + t.Running + t.Finished +
		t.Canceling + t.Canceled + t.Failed + t.Reconciling + t.Initializing
}

// jobTimestampsWire is the "timestamps" object of GET /jobs/:jobid: when
// the job entered each JobState, 0 for a state it never entered.
type jobTimestampsWire struct {
	Initializing int64 `json:"INITIALIZING"`
	Created      int64 `json:"CREATED"`
	Running      int64 `json:"RUNNING"`
	Failing      int64 `json:"FAILING"`
	Failed       int64 `json:"FAILED"`
	Cancelling   int64 `json:"CANCELLING"`
	Canceled     int64 `json:"CANCELED"`
	Finished     int64 `json:"FINISHED"`
	Restarting   int64 `json:"RESTARTING"`
	Suspended    int64 `json:"SUSPENDED"`
	Reconciling  int64 `json:"RECONCILING"`
}

// convert returns the states the job entered, or nil if none.
func (w *jobTimestampsWire) convert() map[JobState]time.Time {
	all := [...]struct {
		s  JobState
		ms int64
	}{
		{JobInitializing, w.Initializing}, {JobCreated, w.Created}, {JobRunning, w.Running},
		{JobFailing, w.Failing}, {JobFailed, w.Failed}, {JobCancelling, w.Cancelling},
		{JobCanceled, w.Canceled}, {JobFinished, w.Finished}, {JobRestarting, w.Restarting},
		{JobSuspended, w.Suspended}, {JobReconciling, w.Reconciling},
	}
	n := 0
	for _, e := range all {
		if e.ms > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	m := make(map[JobState]time.Time, n)
	for _, e := range all {
		if e.ms > 0 {
			m[e.s] = FromMillis(e.ms)
		}
	}
	return m
}

type jobsOverviewWire struct {
	Jobs []jobOverviewWire `json:"jobs"`
}

type jobOverviewWire struct {
	ID               JobID      `json:"jid"`
	Name             string     `json:"name"`
	State            JobState   `json:"state"`
	StartTime        int64      `json:"start-time"`
	EndTime          int64      `json:"end-time"`
	Duration         int64      `json:"duration"`
	LastModification int64      `json:"last-modification"`
	Tasks            TaskCounts `json:"tasks"`
	JobType          string     `json:"jobType"`
	SchedulerType    string     `json:"schedulerType"`
}

func (w *jobOverviewWire) convert() JobOverview {
	return JobOverview{
		ID: w.ID, Name: w.Name, State: w.State,
		StartTime: FromMillis(w.StartTime), EndTime: FromMillis(w.EndTime),
		Duration: DurationFromMillis(w.Duration), LastModification: FromMillis(w.LastModification),
		Tasks: TaskCounts(w.Tasks), JobType: w.JobType, SchedulerType: w.SchedulerType,
	}
}

// JobsOverview returns name, state and times of every job.
//
// Flink REST: GET /jobs/overview (1.0+)
func (c *Client) JobsOverview(ctx context.Context) ([]JobOverview, error) {
	var out jobsOverviewOut
	if err := c.get(ctx, "/jobs/overview", nil, &out); err != nil {
		return nil, err
	}
	if out.jobs == nil {
		out.jobs = []JobOverview{}
	}
	return out.jobs, nil
}

// jobsOverviewOut decodes GET /jobs/overview with readOverview, straight
// into the JobOverview values returned, or with encoding/json into wire
// values where readOverview gives up.
type jobsOverviewOut struct{ jobs []JobOverview }

func (o *jobsOverviewOut) decodeBody(raw []byte) error {
	if jobs, ok := readOverview(raw); ok {
		o.jobs = jobs
		return nil
	}
	var w jobsOverviewWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	o.jobs = make([]JobOverview, len(w.Jobs))
	for i := range w.Jobs {
		o.jobs[i] = w.Jobs[i].convert()
	}
	return nil
}

// JobDetails is the answer of GET /jobs/:jobid, without the plan.
type JobDetails struct {
	ID             JobID
	Name           string
	State          JobState
	IsStoppable    bool
	JobType        string // STREAMING or BATCH (1.16+)
	StartTime      time.Time
	EndTime        time.Time
	Duration       time.Duration
	MaxParallelism int
	Now            time.Time              // the JobManager's clock when it answered
	Timestamps     map[JobState]time.Time // when the job entered each state
	Vertices       []JobVertex
	// ApplicationID is the application the job belongs to ("application-id",
	// Flink 2.3+): for a jar run the job's own id (its SingleJobApplication),
	// for a run-application the application's id; empty where Flink does
	// not say.
	ApplicationID ApplicationID
}

// JobVertex is one operator chain of a job.
type JobVertex struct {
	ID             string
	Name           string
	Parallelism    int
	MaxParallelism int
	Status         string // execution state: RUNNING, FINISHED, ...
	StartTime      time.Time
	EndTime        time.Time
	Duration       time.Duration
	Tasks          TaskCounts // subtasks per execution state, and their sum
}

type jobDetailsWire struct {
	ID             JobID             `json:"jid"`
	Name           string            `json:"name"`
	State          JobState          `json:"state"`
	IsStoppable    bool              `json:"isStoppable"`
	JobType        string            `json:"job-type"`
	StartTime      int64             `json:"start-time"`
	EndTime        int64             `json:"end-time"`
	Duration       int64             `json:"duration"`
	MaxParallelism int               `json:"maxParallelism"`
	Now            int64             `json:"now"`
	Timestamps     jobTimestampsWire `json:"timestamps"`
	Vertices       []vertexWire      `json:"vertices"`
	ApplicationID  ApplicationID     `json:"application-id"`
}

type vertexWire struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	Parallelism    int            `json:"parallelism"`
	MaxParallelism int            `json:"maxParallelism"`
	Status         string         `json:"status"`
	StartTime      int64          `json:"start-time"`
	EndTime        int64          `json:"end-time"`
	Duration       int64          `json:"duration"`
	Tasks          taskCountsWire `json:"tasks"`
}

// decodeBody reads the answer with readDetails, or encoding/json where it
// gives up.
func (w *jobDetailsWire) decodeBody(raw []byte) error {
	if readDetails(raw, w) {
		return nil
	}
	*w = jobDetailsWire{}
	return json.Unmarshal(raw, w)
}

func (w *jobDetailsWire) convert() *JobDetails {
	d := &JobDetails{
		ID: w.ID, Name: w.Name, State: w.State, IsStoppable: w.IsStoppable, JobType: w.JobType,
		StartTime: FromMillis(w.StartTime), EndTime: FromMillis(w.EndTime),
		Duration: DurationFromMillis(w.Duration), MaxParallelism: w.MaxParallelism, Now: FromMillis(w.Now),
		Timestamps: w.Timestamps.convert(), ApplicationID: w.ApplicationID,
	}
	d.Vertices = make([]JobVertex, len(w.Vertices))
	for i := range w.Vertices {
		v := &w.Vertices[i]
		d.Vertices[i] = JobVertex{
			ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism,
			Status: v.Status, StartTime: FromMillis(v.StartTime), EndTime: FromMillis(v.EndTime),
			Duration: DurationFromMillis(v.Duration), Tasks: TaskCounts(v.Tasks),
		}
		if t := &d.Vertices[i].Tasks; t.Total == 0 {
			t.Total = t.sum()
		}
	}
	return d
}

// Job returns the details of one job. A job the JobManager does not know
// answers an error for which IsJobNotFound is true.
//
// Flink REST: GET /jobs/:jobid (1.0+)
func (c *Client) Job(ctx context.Context, id JobID) (*JobDetails, error) {
	path, err := jobPath(id, "")
	if err != nil {
		return nil, err
	}
	var w jobDetailsWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	return w.convert(), nil
}

type jobStatusWire struct {
	Status JobState `json:"status"`
}

// JobStatus returns the state of one job. Clusters older than 1.16 lack the
// status endpoint; there the client reads the job details instead.
//
// Flink REST: GET /jobs/:jobid/status (1.16+), else GET /jobs/:jobid
func (c *Client) JobStatus(ctx context.Context, id JobID) (JobState, error) {
	path, err := jobPath(id, "/status")
	if err != nil {
		return "", err
	}
	v, err := c.Version(ctx)
	if err != nil {
		return "", err
	}
	if !v.Supports(FeatureJobStatusEndpoint) {
		d, err := c.Job(ctx, id)
		if err != nil {
			return "", err
		}
		return d.State, nil
	}
	var out jobStatusWire
	if err := c.get(ctx, path, nil, &out); err != nil {
		return "", err
	}
	return out.Status, nil
}

// JobExceptions is the exception history of a job, the same for Flink 1.x
// and 2.x (2.0 removed the legacy "root-exception" and "all-exceptions";
// the client reads "exceptionHistory" and falls back to the legacy fields
// only when a cluster sends no history).
type JobExceptions struct {
	Entries   []ExceptionEntry // newest first, as Flink orders them
	Truncated bool
}

// ExceptionEntry is one failure of a job, with the concurrent failures that
// Flink grouped under it.
type ExceptionEntry struct {
	ExceptionName string // Java class of the exception
	Message       string // first line of the stack trace, without the class name
	StackTrace    string
	Timestamp     time.Time
	TaskName      string
	Endpoint      string            // "host:port" of the task manager (1.19+: "endpoint"; before: "location")
	TaskManagerID string            // 1.16+
	FailureLabels map[string]string // 1.18+
	Concurrent    []ExceptionEntry
}

type exceptionWire struct {
	ExceptionName string            `json:"exceptionName"`
	StackTrace    string            `json:"stacktrace"`
	Timestamp     int64             `json:"timestamp"`
	TaskName      string            `json:"taskName"`
	Location      string            `json:"location"`
	Endpoint      string            `json:"endpoint"`
	TaskManagerID string            `json:"taskManagerId"`
	FailureLabels map[string]string `json:"failureLabels"`
	Concurrent    []exceptionWire   `json:"concurrentExceptions"`
}

func (w *exceptionWire) convert() ExceptionEntry {
	msg, _ := splitJavaError(w.StackTrace)
	e := ExceptionEntry{
		ExceptionName: w.ExceptionName, Message: msg, StackTrace: w.StackTrace,
		Timestamp: FromMillis(w.Timestamp), TaskName: w.TaskName, Endpoint: w.Endpoint,
		TaskManagerID: w.TaskManagerID, FailureLabels: w.FailureLabels,
	}
	if e.Endpoint == "" {
		e.Endpoint = w.Location
	}
	for i := range w.Concurrent {
		e.Concurrent = append(e.Concurrent, w.Concurrent[i].convert())
	}
	return e
}

type jobExceptionsWire struct {
	RootException string `json:"root-exception"` // removed in 2.0
	Timestamp     int64  `json:"timestamp"`      // removed in 2.0
	Truncated     bool   `json:"truncated"`      // removed in 2.0
	History       *struct {
		Entries   []exceptionWire `json:"entries"`
		Truncated bool            `json:"truncated"`
	} `json:"exceptionHistory"`
}

func (w *jobExceptionsWire) convert() *JobExceptions {
	if w.History != nil && (len(w.History.Entries) > 0 || w.RootException == "") {
		out := &JobExceptions{Truncated: w.History.Truncated, Entries: make([]ExceptionEntry, len(w.History.Entries))}
		for i := range w.History.Entries {
			out.Entries[i] = w.History.Entries[i].convert()
		}
		return out
	}
	out := &JobExceptions{Truncated: w.Truncated}
	if w.RootException != "" {
		msg, _ := splitJavaError(w.RootException)
		name, _, _ := cutClassName(w.RootException)
		out.Entries = []ExceptionEntry{{ExceptionName: name, Message: msg, StackTrace: w.RootException, Timestamp: FromMillis(w.Timestamp)}}
	}
	return out
}

// cutClassName returns the exception class at the start of a stack trace.
func cutClassName(trace string) (name, rest string, ok bool) {
	first, _, _ := strings.Cut(trace, "\n")
	n, r, found := strings.Cut(strings.TrimSpace(first), ": ")
	if !found {
		n = first
	}
	if !IsJavaClassName(n) {
		return "", trace, false
	}
	return n, r, true
}

// JobExceptions returns the exception history of a job. maxExceptions
// bounds the number of entries (Flink's default is 20 when 0 is given).
//
// Flink REST: GET /jobs/:jobid/exceptions (1.0+; exceptionHistory 1.13+)
func (c *Client) JobExceptions(ctx context.Context, id JobID, maxExceptions int) (*JobExceptions, error) {
	path, err := jobPath(id, "/exceptions")
	if err != nil {
		return nil, err
	}
	if maxExceptions < 0 {
		return nil, invalidInput("maxExceptions must not be negative, got %d", maxExceptions)
	}
	var q url.Values
	if maxExceptions > 0 {
		q = url.Values{"maxExceptions": {strconv.Itoa(maxExceptions)}}
	}
	var w jobExceptionsWire
	if err := c.get(ctx, path, q, &w); err != nil {
		return nil, err
	}
	return w.convert(), nil
}

// CancelJob cancels a job. Flink answers 202 when it accepts the request,
// also for a job already CANCELED (1.15+); a job in another terminal state
// answers an error for which IsTerminal is true, an unknown job one for
// which IsJobNotFound is true. The request is never retried: check the job's
// state before cancelling again.
//
// Cancelling discards the job's state unless a savepoint or retained
// checkpoint was taken first; see package lifecycle.
//
// Flink REST: PATCH /jobs/:jobid?mode=cancel (1.0+)
func (c *Client) CancelJob(ctx context.Context, id JobID) error {
	path, err := jobPath(id, "")
	if err != nil {
		return err
	}
	_, err = c.do(ctx, call{method: http.MethodPatch, path: path, query: url.Values{"mode": {"cancel"}}}, nil)
	return err
}

// maxParallelism is the largest parallelism and maximum parallelism Flink
// accepts: KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM.
const maxParallelism = 1 << 15

// ParallelismBounds are the lower and upper parallelism of a job vertex for
// the adaptive scheduler: 1 <= LowerBound <= UpperBound <= 32768 (Flink's
// limit; a vertex's own maximum parallelism may be lower).
type ParallelismBounds struct {
	LowerBound int `json:"lowerBound"`
	UpperBound int `json:"upperBound"`
}

// ResourceRequirements maps job vertex ids to their parallelism bounds.
type ResourceRequirements map[string]ParallelismBounds

type vertexRequirementsWire struct {
	Parallelism ParallelismBounds `json:"parallelism"`
}

// ResourceRequirements returns the parallelism bounds of each vertex.
//
// Flink REST: GET /jobs/:jobid/resource-requirements (1.18+)
func (c *Client) ResourceRequirements(ctx context.Context, id JobID) (ResourceRequirements, error) {
	path, err := jobPath(id, "/resource-requirements")
	if err != nil {
		return nil, err
	}
	if _, err := c.requireFeature(ctx, FeatureResourceRequirements); err != nil {
		return nil, err
	}
	var w map[string]vertexRequirementsWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	out := make(ResourceRequirements, len(w))
	for k, v := range w {
		out[k] = v.Parallelism
	}
	return out, nil
}

// SetResourceRequirements changes the parallelism bounds of the job's
// vertices; with the adaptive scheduler the job rescales without a restart.
// Every vertex of the job must be given. It is not retried.
//
// Flink REST: PUT /jobs/:jobid/resource-requirements (1.18+)
func (c *Client) SetResourceRequirements(ctx context.Context, id JobID, req ResourceRequirements) error {
	path, err := jobPath(id, "/resource-requirements")
	if err != nil {
		return err
	}
	if len(req) == 0 {
		return invalidInput("resource requirements are empty; give the bounds of every vertex")
	}
	w := make(map[string]vertexRequirementsWire, len(req))
	for k, b := range req {
		if k == "" {
			return invalidInput("resource requirements: empty vertex id")
		}
		if b.UpperBound > maxParallelism {
			return invalidInput("resource requirements of vertex %s: ParallelismBounds.UpperBound %d is above %d, Flink's limit", truncate(k, 64), b.UpperBound, maxParallelism)
		}
		if b.LowerBound < 1 || b.UpperBound < 1 || b.LowerBound > b.UpperBound {
			return invalidInput("resource requirements of vertex %s: want 1 <= lowerBound <= upperBound <= %d, got %d..%d", truncate(k, 64), maxParallelism, b.LowerBound, b.UpperBound)
		}
		w[k] = vertexRequirementsWire{Parallelism: b}
	}
	if _, err := c.requireFeature(ctx, FeatureResourceRequirements); err != nil {
		return err
	}
	_, err = c.do(ctx, call{method: http.MethodPut, path: path, body: w}, nil)
	return err
}
