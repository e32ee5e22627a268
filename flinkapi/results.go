package flinkapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ApplicationStatus is how a job ended, as its execution result says.
type ApplicationStatus string

// Application statuses. Flink maps FINISHED to SUCCEEDED, FAILED to
// FAILED, CANCELED to CANCELED and anything else to UNKNOWN.
const (
	AppSucceeded ApplicationStatus = "SUCCEEDED"
	AppFailed    ApplicationStatus = "FAILED"
	AppCanceled  ApplicationStatus = "CANCELED"
	AppUnknown   ApplicationStatus = "UNKNOWN"
)

// ExecutionResult is the result of a job that ended: the answer of GET
// /jobs/:jobid/execution-result. While the job has not reached a globally
// terminal state Status is IN_PROGRESS and nothing else is set.
type ExecutionResult struct {
	Status            OperationStatus
	JobID             JobID
	ApplicationStatus ApplicationStatus
	// JobName, StartTime and EndTime are sent by Flink 2.3 (seen on
	// 2.3.0); empty and zero before.
	JobName   string
	StartTime time.Time
	EndTime   time.Time
	// NetRuntime is the time from the job's INITIALIZING to its end.
	NetRuntime time.Duration
	// Accumulators are the final values of the job's accumulators as
	// Flink sends them: Java-serialized (a SerializedValue of an
	// OptionalFailure), which only a JVM reads. For readable values read
	// JobAccumulators of the ended job, which the JobManager keeps while
	// it keeps the job.
	Accumulators map[string][]byte
	// Failure is the exception a FAILED job ended with; nil otherwise.
	Failure *FailureCause
}

// Completed reports whether the job ended and r holds its result.
func (r *ExecutionResult) Completed() bool { return r != nil && r.Status == StatusCompleted }

// Succeeded reports whether the job ended FINISHED.
func (r *ExecutionResult) Succeeded() bool {
	return r.Completed() && r.ApplicationStatus == AppSucceeded && r.Failure == nil
}

type executionResultWire struct {
	Status struct {
		ID OperationStatus `json:"id"`
	} `json:"status"`
	Result *struct {
		ID                JobID                    `json:"id"`
		Name              string                   `json:"name"`
		StartTime         int64                    `json:"start-time"`
		EndTime           int64                    `json:"end-time"`
		ApplicationStatus ApplicationStatus        `json:"application-status"`
		Accumulators      map[string]string        `json:"accumulator-results"`
		NetRuntime        int64                    `json:"net-runtime"`
		FailureCause      *serializedThrowableWire `json:"failure-cause"`
	} `json:"job-execution-result"`
}

// convert returns the result, or an error naming what Flink sent that
// is not one.
func (w *executionResultWire) convert() (*ExecutionResult, error) {
	out := &ExecutionResult{Status: w.Status.ID}
	switch w.Status.ID {
	case StatusInProgress:
		return out, nil
	case StatusCompleted:
	default:
		return nil, fmt.Errorf("unknown queue status %q", truncate(string(w.Status.ID), 40))
	}
	r := w.Result
	if r == nil {
		return nil, fmt.Errorf("status COMPLETED without a job-execution-result")
	}
	out.JobID, out.ApplicationStatus, out.NetRuntime = r.ID, r.ApplicationStatus, DurationFromMillis(r.NetRuntime)
	out.JobName, out.StartTime, out.EndTime = r.Name, FromMillis(r.StartTime), FromMillis(r.EndTime)
	if len(r.Accumulators) > 0 {
		out.Accumulators = make(map[string][]byte, len(r.Accumulators))
		for name, v := range r.Accumulators {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("accumulator %q: the serialized value is not base64: %w", truncate(name, 80), err)
			}
			out.Accumulators[name] = b
		}
	}
	if fc := r.FailureCause; fc != nil {
		out.Failure = &FailureCause{Class: fc.Class, StackTrace: fc.StackTrace}
	}
	return out, nil
}

// JobExecutionResult returns the result of a job: IN_PROGRESS while it
// runs, then how it ended, its net runtime, its accumulators (serialized)
// and the failure it ended with. A job the JobManager does not know
// answers an error for which IsJobNotFound is true.
//
// Flink REST: GET /jobs/:jobid/execution-result (1.5+)
func (c *Client) JobExecutionResult(ctx context.Context, job JobID) (*ExecutionResult, error) {
	path, err := jobPath(job, "/execution-result")
	if err != nil {
		return nil, err
	}
	var w executionResultWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	r, err := w.convert()
	if err != nil {
		return nil, c.decodeError(http.MethodGet, path, err)
	}
	return r, nil
}

// Accumulator is one user accumulator of a job, aggregated over its
// subtasks, as Flink prints it: Type is the simple class name of the
// accumulator ("LongCounter", "IntCounter", "DoubleCounter",
// "Histogram", ...), Value the toString of its value.
type Accumulator struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Int64 returns the value of an integer counter (LongCounter or
// IntCounter), and whether a is one.
func (a Accumulator) Int64() (int64, bool) {
	switch a.Type {
	case "LongCounter", "IntCounter":
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(a.Value), 10, 64)
	return n, err == nil
}

type accumulatorsWire struct {
	User []Accumulator `json:"user-task-accumulators"`
}

// JobAccumulators returns the user accumulators of a job, running or
// ended (while the JobManager keeps it), in the order Flink lists them.
// A job whose tasks registered none answers an empty list.
//
// Flink REST: GET /jobs/:jobid/accumulators (1.0+)
func (c *Client) JobAccumulators(ctx context.Context, job JobID) ([]Accumulator, error) {
	path, err := jobPath(job, "/accumulators")
	if err != nil {
		return nil, err
	}
	var w accumulatorsWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	if w.User == nil {
		w.User = []Accumulator{}
	}
	return w.User, nil
}

// AccumulatorByName returns the accumulator called name in accs.
func AccumulatorByName(accs []Accumulator, name string) (Accumulator, bool) {
	for _, a := range accs {
		if a.Name == name {
			return a, true
		}
	}
	return Accumulator{}, false
}
