package lifecycle

import (
	"context"
	"errors"
	"time"

	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Clock tells the time and waits. flinktest's Clock fits it; nil in an
// operation means the wall clock.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }

func clockOr(c Clock) Clock {
	if c == nil {
		return wallClock{}
	}
	return c
}

// Default timings of the operations; each can be set per operation.
const (
	DefaultSavepointTimeout = 10 * time.Minute // savepoint or stop with savepoint
	DefaultStopTimeout      = 5 * time.Minute  // cancel, and the job reaching a terminal state
	DefaultSubmitTimeout    = 5 * time.Minute  // upload, run, and the job reaching RUNNING
	DefaultPollInterval     = time.Second
	// DefaultCacheDuration is how long Flink answers job details and
	// checkpoint statistics from its cache by default: web.refresh-interval
	// (3 s), which rest.cache.checkpoint-statistics.timeout defaults to.
	DefaultCacheDuration = 3 * time.Second
)

// Timing sets the deadlines and the poll interval of an operation. Zero
// fields take the defaults.
type Timing struct {
	// Savepoint bounds the savepoint phase (DefaultSavepointTimeout).
	Savepoint time.Duration
	// Stop bounds cancelling and waiting for the job to stop
	// (DefaultStopTimeout).
	Stop time.Duration
	// Submit bounds uploading, submitting and waiting for the job to run
	// (DefaultSubmitTimeout).
	Submit time.Duration
	// Poll is the delay between polls (DefaultPollInterval); retries after
	// transient errors back off from it up to 16 times as long. Right
	// after an action (a savepoint triggered, a job cancelled or
	// submitted) the polls come sooner: every eighth of the time waited
	// so far, from 10 ms up to Poll, so a change that Flink makes in tens
	// of milliseconds is not waited on for a whole Poll, and a wait is
	// overshot by at most an eighth.
	Poll time.Duration
	// Cache is how long Flink may answer job details and checkpoint
	// statistics from its cache (DefaultCacheDuration): set it to the
	// cluster's rest.cache.checkpoint-statistics.timeout or
	// web.refresh-interval, whichever is longer, if either is raised. The
	// checkpoint statistics of a job that ended are read only once that
	// long has passed since its end was seen, so that they show the
	// checkpoint that survived the end and the savepoint that caused it.
	Cache time.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (t Timing) poll() time.Duration { return orDefault(t.Poll, DefaultPollInterval) }

func (t Timing) cache() time.Duration { return orDefault(t.Cache, DefaultCacheDuration) }

// minPoll is the shortest delay of pollSince.
const minPoll = 10 * time.Millisecond

// pollSince is the delay of a poll for a change expected since start: an
// eighth of the time since then, at least minPoll (or Poll, if shorter)
// and at most Poll. The polls come close together while the wait is
// young, when each one is likely to see the change, and at Poll later: a
// wait of w is overshot by at most w/8 (or Poll), for about 40 polls more
// than polling at Poll, all in the wait's first seconds.
func (t Timing) pollSince(start, now time.Time) time.Duration {
	p := t.poll()
	if start.IsZero() || now.Before(start) {
		return p
	}
	return min(max(now.Sub(start)/8, min(minPoll, p)), p)
}

// backoff is the delay after n transient errors in a row.
func (t Timing) backoff(n int) time.Duration {
	d := t.poll()
	for i := 1; i < n && i < 5; i++ {
		d *= 2
	}
	return d
}

// Stepper is an operation that advances one step at a time: TakeSavepoint,
// Stop and Submit.
type Stepper interface {
	Step(ctx context.Context, p *Progress) (Result, error)
}

// errNoProgress reports a Step that neither ended nor asked to be called
// again; it is a bug in the operation.
var errNoProgress = errors.New("lifecycle: operation did not end within its step budget")

// maxSteps bounds Run as a last resort; deadlines end every operation long
// before.
const maxSteps = 1 << 20

// Report is what Run tells its callback after every step: the stored
// Progress and, while a savepoint is in flight, how far it has come.
type Report struct {
	// Progress is a copy of the operation's Progress after the step.
	Progress Progress
	// Savepoint is the acknowledgement of the savepoint in flight
	// (subtasks that acknowledged it out of all, and the bytes written),
	// valid when HasSavepoint is true.
	Savepoint savepoint.Progress
	// HasSavepoint is true when a savepoint is in flight and Flink's
	// checkpoint statistics show it.
	HasSavepoint bool
	// Elapsed is the time since Run started, on the operation's Clock.
	Elapsed time.Duration
}

// savepointReader is implemented by the operations that take savepoints:
// it gives the client that reads checkpoint statistics.
type savepointReader interface {
	savepointAPI() SavepointAPI
}

// Run calls op.Step until the operation ends, waiting RequeueAfter between
// steps on the operation's Clock, and calls onReport (if not nil) with a
// Report after every step. While a savepoint is in flight, Run reads the
// job's checkpoint statistics once per step for the Report; it does so
// only when onReport is set, and an error of that read is left out of the
// Report, never returned. Run returns the last Result, or the first error
// of Step or of the context.
func Run(ctx context.Context, op Stepper, p *Progress, onReport func(Report)) (Result, error) {
	clock := Clock(wallClock{})
	if c, ok := op.(interface{ clock() Clock }); ok {
		clock = c.clock()
	}
	start := clock.Now()
	for range maxSteps {
		res, err := op.Step(ctx, p)
		if onReport != nil {
			r := Report{Progress: *p, Elapsed: clock.Now().Sub(start)}
			if sr, ok := op.(savepointReader); ok && err == nil && !res.Done {
				r.Savepoint, r.HasSavepoint = savepointProgress(ctx, sr.savepointAPI(), p)
			}
			onReport(r)
		}
		if err != nil || res.Done {
			return res, err
		}
		if err := clock.Sleep(ctx, res.RequeueAfter); err != nil {
			return res, err
		}
	}
	return Result{}, errNoProgress
}

// savepointProgress reads the acknowledgement of p's savepoint in flight.
func savepointProgress(ctx context.Context, c SavepointAPI, p *Progress) (savepoint.Progress, bool) {
	st := p.Savepoint
	if c == nil || p.Phase != PhaseSavepoint || st.JobID == "" || !st.NeedsPoll() {
		return savepoint.Progress{}, false
	}
	stats, err := c.Checkpoints(ctx, st.JobID)
	if err != nil {
		return savepoint.Progress{}, false
	}
	return savepoint.FindProgress(st, stats)
}
