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

// clockOr is c, or the wall clock if c is nil: the one place that
// chooses the clock. Everything in lifecycle tells the time through it:
// the operations and the Controller through their Env's clock method
// (Env.clock), Run through the operation's (clocked), a
// SharedObservation through its own Clock.
func clockOr(c Clock) Clock {
	if c == nil {
		return wallClock{}
	}
	return c
}

// clocked is an operation that tells the time on its Env's Clock: every
// operation of this package, which embeds its Env.
type clocked interface{ clock() Clock }

// Default timings of the operations; each can be set per operation, and
// Timing.WithDefaults fills them in.
const (
	defaultSavepointTimeout = 10 * time.Minute // savepoint or stop with savepoint
	defaultStopTimeout      = 5 * time.Minute  // cancel, and the job reaching a terminal state
	defaultSubmitTimeout    = 5 * time.Minute  // upload, run, and the job reaching RUNNING
	defaultPollInterval     = time.Second
	// defaultLag is the detection lag allowed by default while an
	// operation waits for Flink, as a fraction of the time waited so far
	// (Timing.Lag): a third.
	defaultLag = 1.0 / 3
	// defaultCacheDuration is how long Flink answers job details and
	// checkpoint statistics from its cache by default: web.refresh-interval
	// (3 s), which rest.cache.checkpoint-statistics.timeout defaults to.
	defaultCacheDuration = 3 * time.Second
)

// Timing sets the deadlines and the poll interval of an operation. Zero
// fields take the defaults.
type Timing struct {
	// Savepoint bounds the savepoint phase (default 10m).
	Savepoint time.Duration
	// Stop bounds cancelling and waiting for the job to stop
	// (default 5m).
	Stop time.Duration
	// Submit bounds uploading, submitting and waiting for the job to run
	// (default 5m).
	Submit time.Duration
	// Poll is the delay between polls (default 1s); retries after
	// transient errors back off from it up to 16 times as long. Right
	// after an action (a savepoint triggered, a job cancelled or
	// submitted) the polls come sooner, as Lag says.
	Poll time.Duration
	// Lag bounds how late a wait sees the change it waits for (a job
	// RUNNING, a savepoint completed, a job stopped), as a fraction of the
	// time waited so far (default 1/3; zero or less takes the default).
	// After an action the next poll comes Lag times the time since the
	// action later, at least 100 ms (or Poll, if shorter) and at most
	// Poll: a change after w is seen by max(Lag*w, 100 ms) later at most
	// (and by Poll). A smaller Lag sees changes sooner for more polls: a
	// wait of w with the interval reaching Poll sends about
	// ln(w/100ms)/ln(1+Lag) polls until Lag*w reaches Poll, then one per
	// Poll. A savepoint's progress, read once 0.3 s after its trigger,
	// times the poll that sees it complete instead, when Flink's figures
	// say when that is (see the package documentation). With the
	// defaults, a job that starts in 0.35 s is seen after 4 polls, a
	// savepoint of 10 s after 3 and the progress read.
	Lag float64
	// Cache is how long Flink may answer job details and checkpoint
	// statistics from its cache (default 3s, Flink's own): set it to the
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

// WithDefaults returns t with every unset field set to its default:
// Savepoint 10m, Stop 5m, Submit 5m, Poll 1s, Lag 1/3 and Cache 3s.
func (t Timing) WithDefaults() Timing {
	t.Savepoint = orDefault(t.Savepoint, defaultSavepointTimeout)
	t.Stop = orDefault(t.Stop, defaultStopTimeout)
	t.Submit = orDefault(t.Submit, defaultSubmitTimeout)
	t.Poll, t.Lag, t.Cache = t.poll(), t.lag(), t.cache()
	return t
}

func (t Timing) poll() time.Duration { return orDefault(t.Poll, defaultPollInterval) }

func (t Timing) cache() time.Duration { return orDefault(t.Cache, defaultCacheDuration) }

// minPoll is the shortest delay of pollSince: the floor of the lag rule,
// so that the first polls of a wait, when little time has passed, are not
// sent in a burst.
const minPoll = 100 * time.Millisecond

func (t Timing) lag() float64 {
	if t.Lag <= 0 {
		return defaultLag
	}
	return t.Lag
}

// pollSince is the delay of a poll for a change expected since start: Lag
// times the time since then, at least minPoll (or Poll, if shorter) and at
// most Poll. The polls come close together while the wait is young, when
// each one is likely to see the change, and at Poll later: a change at w
// is seen by max(Lag*w, minPoll) later at most.
func (t Timing) pollSince(start, now time.Time) time.Duration {
	p := t.poll()
	return lagDelay(t.lag(), start, now, min(minPoll, p), p)
}

// lagDelay is lag times the time since start, within [floor, ceiling];
// ceiling when start is unknown or ahead of now (a clock set back).
func lagDelay(lag float64, start, now time.Time, floor, ceiling time.Duration) time.Duration {
	if start.IsZero() || now.Before(start) {
		return ceiling
	}
	d := time.Duration(float64(now.Sub(start)) * lag)
	return min(max(d, floor), ceiling)
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
// Progress and the time since Run started.
type Report struct {
	// Progress is a copy of the operation's Progress after the step.
	Progress Progress
	// Savepoint is the acknowledgement of the savepoint in flight
	// (subtasks that acknowledged it out of all, and the bytes written),
	// valid when HasSavepoint is true. Run leaves both unset, as it sends
	// no request of its own: a callback that shows the acknowledgement
	// fills them from the job's checkpoint statistics
	// (savepoint.FindProgress of Progress.Savepoint.Status over
	// API.Checkpoints), one request each time, which Flink
	// answers from its cache for Timing.Cache.
	Savepoint savepoint.Progress
	// HasSavepoint is true when Savepoint is set.
	HasSavepoint bool
	// Elapsed is the time since Run started, on the operation's Clock.
	Elapsed time.Duration
}

// Run calls op.Step until the operation ends, waiting RequeueAfter between
// steps on the operation's Clock, and calls onReport (if not nil) with a
// Report after every step. The callback adds no request to the
// operation's. Run returns the last Result, or the first error of Step or
// of the context.
func Run(ctx context.Context, op Stepper, p *Progress, onReport func(Report)) (Result, error) {
	clock := clockOr(nil) // a Stepper of another package: the wall clock
	if c, ok := op.(clocked); ok {
		clock = c.clock()
	}
	start := clock.Now()
	for range maxSteps {
		res, err := op.Step(ctx, p)
		if onReport != nil {
			onReport(Report{Progress: *p, Elapsed: clock.Now().Sub(start)})
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
