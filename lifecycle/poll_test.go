package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

func TestPollSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		poll    time.Duration
		lag     float64
		start   time.Time
		elapsed time.Duration
		want    time.Duration
	}{
		{poll: time.Second, start: t0, elapsed: 0, want: minPoll},
		{poll: time.Second, start: t0, elapsed: 240 * time.Millisecond, want: minPoll},
		{poll: time.Second, start: t0, elapsed: 600 * time.Millisecond, want: 200 * time.Millisecond},
		{poll: time.Second, start: t0, elapsed: 3 * time.Second, want: time.Second},
		{poll: time.Second, start: t0, elapsed: time.Hour, want: time.Second},
		// Lag set: its fraction of the time waited.
		{poll: time.Second, lag: 0.5, start: t0, elapsed: time.Second, want: 500 * time.Millisecond},
		{poll: time.Second, lag: 0.1, start: t0, elapsed: 2 * time.Second, want: 200 * time.Millisecond},
		{poll: time.Second, lag: -1, start: t0, elapsed: 600 * time.Millisecond, want: 200 * time.Millisecond},
		// A Poll shorter than minPoll is kept.
		{poll: 20 * time.Millisecond, start: t0, elapsed: 0, want: 20 * time.Millisecond},
		// Zero Poll: the default.
		{poll: 0, start: t0, elapsed: time.Minute, want: defaultPollInterval},
		// No start, or a start in the future (a clock set back): Poll.
		{poll: time.Second, start: time.Time{}, elapsed: 0, want: time.Second},
		{poll: time.Second, start: t0.Add(time.Minute), elapsed: 0, want: time.Second},
	}
	for _, tt := range tests {
		got := Timing{Poll: tt.poll, Lag: tt.lag}.pollSince(tt.start, t0.Add(tt.elapsed))
		if got != tt.want {
			t.Errorf("poll %v, lag %v, %v after %v: %v, want %v", tt.poll, tt.lag, tt.elapsed, tt.start, got, tt.want)
		}
	}
}

// TestPollsSoonAfterAction checks that a savepoint, a stop and a new job
// are seen soon after Flink completes them although Timing.Poll is long:
// within defaultLag of the wait (at least minPoll) plus a poll's own
// time, with a bounded number of polls.
func TestPollsSoonAfterAction(t *testing.T) {
	const took = 300 * time.Millisecond // the fake's savepoint
	e := newEnv(t, flinktest.WithSavepointDuration(took))
	timing := Timing{Poll: 10 * time.Second}
	start := e.srv.Clock().Now()
	p, res := drive(t, e, func() Stepper {
		return &TakeSavepoint{Env: Env{Client: e.c, Timing: timing, Clock: e.srv.Clock()}, Job: e.job}
	}, false)
	if res.Outcome != OutcomeSucceeded {
		t.Fatalf("savepoint: %s (%s)", res.Outcome, p.Reason)
	}
	if waited, limit := e.srv.Clock().Now().Sub(start), took+max(time.Duration(float64(took)*defaultLag), minPoll); waited > limit {
		t.Errorf("the savepoint of %v was seen after %v, more than %v", took, waited, limit)
	}
	if n := count(e.srv, "GET /jobs/:jobid/savepoints/:triggerid"); n > 5 {
		t.Errorf("%d polls for a savepoint of %v", n, took)
	}

	e.srv.ClearRequests()
	start = e.srv.Clock().Now()
	p, res = drive(t, e, func() Stepper {
		return &Stop{Env: Env{Client: e.c, Timing: timing, Clock: e.srv.Clock()}, Job: e.job, Strategy: SavepointThenCancel}
	}, false)
	if res.Outcome != OutcomeSucceeded {
		t.Fatalf("stop: %s (%s)", res.Outcome, p.Reason)
	}
	if waited := e.srv.Clock().Now().Sub(start); waited > 2*time.Second {
		t.Errorf("savepoint then cancel took %v with a poll of %v", waited, timing.Poll)
	}

	e.srv.ClearRequests()
	start = e.srv.Clock().Now()
	from := p.Savepoint.Location
	p, res = drive(t, e, func() Stepper {
		return &Submit{Env: Env{Client: e.c, Timing: timing, Clock: e.srv.Clock()}, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: counterArgs(), SavepointPath: from}}
	}, false)
	if res.Outcome != OutcomeSucceeded {
		t.Fatalf("submit: %s (%s)", res.Outcome, p.Reason)
	}
	if waited := e.srv.Clock().Now().Sub(start); waited > 2*time.Second {
		t.Errorf("the new job was seen RUNNING after %v with a poll of %v", waited, timing.Poll)
	}
	if n := count(e.srv, "GET /jobs/:jobid/status"); n > 6 {
		t.Errorf("%d polls of the new job", n)
	}
}
