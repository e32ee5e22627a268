package flinkapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/flinkkit/flinkkit/internal/wait"
)

// OperationKind names the kind of an asynchronous operation, which decides
// the route its status is read from.
type OperationKind string

// Kinds of asynchronous operations.
const (
	OpSavepoint         OperationKind = "savepoint"           // POST /jobs/:jobid/savepoints
	OpStopWithSavepoint OperationKind = "stop-with-savepoint" // POST /jobs/:jobid/stop
	OpCheckpoint        OperationKind = "checkpoint"          // POST /jobs/:jobid/checkpoints
	OpSavepointDisposal OperationKind = "savepoint-disposal"  // POST /savepoint-disposal
)

// Operation identifies an asynchronous operation of the JobManager. It is a
// plain value: store it (for example in a Kubernetes status) and ask for its
// result later with OperationStatus or a Waiter.
type Operation struct {
	Kind      OperationKind `json:"kind"`
	JobID     JobID         `json:"jobID,omitempty"` // empty for savepoint disposal
	TriggerID TriggerID     `json:"triggerID"`
}

// String returns "kind trigger <id> of job <id>".
func (op Operation) String() string {
	if op.JobID == "" {
		return fmt.Sprintf("%s trigger %s", op.Kind, op.TriggerID)
	}
	return fmt.Sprintf("%s trigger %s of job %s", op.Kind, op.TriggerID, op.JobID)
}

func (op Operation) statusPath() (string, error) {
	if err := op.TriggerID.Validate(); err != nil {
		return "", err
	}
	switch op.Kind {
	case OpSavepoint, OpStopWithSavepoint:
		return jobPath(op.JobID, "/savepoints/"+string(op.TriggerID))
	case OpCheckpoint:
		return jobPath(op.JobID, "/checkpoints/"+string(op.TriggerID))
	case OpSavepointDisposal:
		return "/savepoint-disposal/" + string(op.TriggerID), nil
	}
	return "", invalidInput("unknown operation kind %q", op.Kind)
}

// OperationStatus is the queue status of an asynchronous operation.
type OperationStatus string

// Operation statuses. IN_PROGRESS means "ask again", never an error.
const (
	StatusInProgress OperationStatus = "IN_PROGRESS"
	StatusCompleted  OperationStatus = "COMPLETED"
)

// OperationResult is what the JobManager says about an asynchronous
// operation. A completed operation has either a Failure or its result
// (Location for savepoints, CheckpointID for checkpoints; disposal has none).
type OperationResult struct {
	Status       OperationStatus `json:"status"`
	Location     string          `json:"location,omitempty"`
	CheckpointID int64           `json:"checkpointID,omitempty"`
	Failure      *FailureCause   `json:"failure,omitempty"`
}

// Completed reports whether the operation has ended, well or badly.
func (r *OperationResult) Completed() bool { return r != nil && r.Status == StatusCompleted }

// Succeeded reports whether the operation ended without a failure cause.
func (r *OperationResult) Succeeded() bool { return r.Completed() && r.Failure == nil }

// FailureCause is the Java exception that ended an operation.
type FailureCause struct {
	Class      string `json:"class,omitempty"`
	StackTrace string `json:"stackTrace,omitempty"`
}

// Message returns a readable cause: the message of the innermost "Caused by"
// of the stack trace, or of the exception itself when there is none.
func (f *FailureCause) Message() string {
	if f == nil {
		return ""
	}
	if msg := RootCause(f.StackTrace); msg != "" {
		return msg
	}
	return f.Class
}

type serializedThrowableWire struct {
	Class      string `json:"class"`
	StackTrace string `json:"stack-trace"`
}

type asyncResultWire struct {
	Status struct {
		ID OperationStatus `json:"id"`
	} `json:"status"`
	Operation *struct {
		Location      string                   `json:"location"`
		FailureCause  *serializedThrowableWire `json:"failure-cause"`
		CheckpointID  int64                    `json:"checkpointId"`
		FailureCause2 *serializedThrowableWire `json:"failureCause"` // checkpoint trigger (1.17+)
	} `json:"operation"`
}

func (w *asyncResultWire) convert() *OperationResult {
	r := &OperationResult{Status: w.Status.ID}
	if op := w.Operation; op != nil {
		r.Location, r.CheckpointID = op.Location, op.CheckpointID
		fc := op.FailureCause
		if fc == nil {
			fc = op.FailureCause2
		}
		if fc != nil {
			r.Failure = &FailureCause{Class: fc.Class, StackTrace: fc.StackTrace}
		}
	}
	return r
}

// OperationStatus asks the JobManager for the result of an operation. An
// unknown trigger id (the result expired or the JobManager restarted) answers
// an error for which IsTriggerNotFound is true: the operation may still have
// completed.
//
// Flink REST: GET /jobs/:jobid/savepoints/:triggerid (1.5+),
// GET /jobs/:jobid/checkpoints/:triggerid (1.17+),
// GET /savepoint-disposal/:triggerid (1.5+)
func (c *Client) OperationStatus(ctx context.Context, op Operation) (*OperationResult, error) {
	path, err := op.statusPath()
	if err != nil {
		return nil, err
	}
	var w asyncResultWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	if w.Status.ID != StatusInProgress && w.Status.ID != StatusCompleted {
		return nil, c.decodeError(http.MethodGet, path, fmt.Errorf("unknown operation status %q", truncate(string(w.Status.ID), 40)))
	}
	return w.convert(), nil
}

type triggerResponseWire struct {
	RequestID TriggerID `json:"request-id"`
}

// trigger sends a trigger request and returns the operation Flink started.
func (c *Client) trigger(ctx context.Context, kind OperationKind, job JobID, path string, body any, retry bool) (Operation, error) {
	var w triggerResponseWire
	if _, err := c.do(ctx, call{method: "POST", path: path, body: body, retry: retry}, &w); err != nil {
		return Operation{}, err
	}
	if err := w.RequestID.Validate(); err != nil {
		return Operation{}, c.decodeError(http.MethodPost, path, errors.New("no usable request-id: "+inputMessage(err)))
	}
	return Operation{Kind: kind, JobID: job, TriggerID: w.RequestID}, nil
}

// WaiterOptions tune a Waiter.
type WaiterOptions struct {
	// MinDelay is the first wait between polls (default 100 ms); waits double
	// up to MaxDelay (default 2 s).
	MinDelay, MaxDelay time.Duration
	// OnPoll, if set, is called after every poll, for progress output.
	OnPoll func(Poll)
	// Now and Sleep replace the wall clock, so tests (for example against
	// the fake JobManager of package flinktest) need not wait. Sleep must
	// return ctx.Err() when ctx ends first. Defaults: time.Now and a timer.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }

// Poll describes one poll of a Waiter.
type Poll struct {
	Attempt int
	Elapsed time.Duration
	Result  *OperationResult // nil when the poll failed
	Err     error            // a transient error; the Waiter polls again
}

// Waiter polls an asynchronous operation until it completes, in the shape of
// the AWS SDK's waiters. Transient errors (IsRetryable) and IN_PROGRESS mean
// "poll again"; other errors end the wait.
type Waiter struct {
	client *Client
	opts   WaiterOptions
}

// NewWaiter returns a Waiter that polls through c.
func NewWaiter(c *Client, optFns ...func(*WaiterOptions)) *Waiter {
	o := WaiterOptions{MinDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second, Now: time.Now, Sleep: sleep}
	for _, f := range optFns {
		f(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	return &Waiter{client: c, opts: o}
}

// Wait polls op until it completes, ctx ends or maxWait passes. A completed
// operation with a failure cause returns the result and an error matching
// ErrOperationFailed. Past maxWait it returns the last result (nil if no poll
// succeeded) and an error matching ErrWaitTimeout: the operation may still
// complete on the cluster, so keep its trigger id.
func (w *Waiter) Wait(ctx context.Context, op Operation, maxWait time.Duration) (*OperationResult, error) {
	if maxWait <= 0 {
		return nil, invalidInput("maxWait must be positive, got %v", maxWait)
	}
	if w.opts.MinDelay <= 0 || w.opts.MaxDelay < w.opts.MinDelay {
		return nil, invalidInput("waiter delays: want 0 < MinDelay <= MaxDelay, got %v and %v", w.opts.MinDelay, w.opts.MaxDelay)
	}
	if _, err := op.statusPath(); err != nil {
		return nil, err
	}
	now := w.opts.Now
	start := now()
	deadline := start.Add(maxWait)
	delay := w.opts.MinDelay
	var last *OperationResult
	var lastErr error
	for attempt := 1; ; attempt++ {
		res, err := w.client.OperationStatus(ctx, op)
		if w.opts.OnPoll != nil {
			w.opts.OnPoll(Poll{Attempt: attempt, Elapsed: now().Sub(start), Result: res, Err: err})
		}
		switch {
		case err != nil && !IsRetryable(err):
			return last, err
		case err != nil:
			lastErr = err
		case res.Completed() && res.Failure != nil:
			return res, fmt.Errorf("%w: %s: %s", ErrOperationFailed, op, res.Failure.Message())
		case res.Completed():
			return res, nil
		default:
			last, lastErr = res, nil
		}
		remaining := deadline.Sub(now())
		if remaining <= 0 {
			if lastErr != nil {
				return last, fmt.Errorf("%w after %v: %s (last error: %v)", ErrWaitTimeout, maxWait, op, lastErr)
			}
			return last, fmt.Errorf("%w after %v: %s is still in progress", ErrWaitTimeout, maxWait, op)
		}
		if err := w.opts.Sleep(ctx, min(delay, remaining)); err != nil {
			return last, err
		}
		delay = min(2*delay, w.opts.MaxDelay)
	}
}
