package lifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/savepoint"
)

// inFlight is a savepoint of kind triggered at t0 and acknowledged by
// Flink, last polled at polled.
func inFlight(kind flinkapi.OperationKind, t0, polled time.Time) savepoint.Status {
	st := savepoint.Begin(kind, "j", "t", savepoint.ReasonUpdate, t0, t0.Add(time.Hour))
	st.State, st.LastUpdate = savepoint.InFlight, polled
	return st
}

func TestProgressDue(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := t0.Add(progressAfter)
	failing := inFlight(flinkapi.OpStopWithSavepoint, t0, t0.Add(200*time.Millisecond))
	failing.Attempts = 1
	for _, c := range []struct {
		name string
		st   savepoint.Status
		now  time.Time
		want bool
	}{
		{"before progressAfter", inFlight(flinkapi.OpSavepoint, t0, t0.Add(100*time.Millisecond)), at.Add(-time.Millisecond), false},
		{"the first poll after it", inFlight(flinkapi.OpSavepoint, t0, t0.Add(200*time.Millisecond)), at, true},
		{"a stop's first poll after it", inFlight(flinkapi.OpStopWithSavepoint, t0, t0.Add(200*time.Millisecond)), at.Add(progressWindow - time.Millisecond), true},
		// A caller back a minute later polls the trigger.
		{"a first poll long after it", inFlight(flinkapi.OpStopWithSavepoint, t0, t0.Add(200*time.Millisecond)), at.Add(time.Minute), false},
		{"after the read", inFlight(flinkapi.OpSavepoint, t0, at), at.Add(time.Second), false},
		{"a checkpoint", inFlight(flinkapi.OpCheckpoint, t0, t0.Add(200*time.Millisecond)), at, false},
		{"after a transient error", failing, at, false},
		{"not acknowledged", savepoint.Begin(flinkapi.OpSavepoint, "j", "t", savepoint.ReasonUpdate, t0, t0.Add(time.Hour)), at, false},
	} {
		if got := progressDue(c.st, c.now); got != c.want {
			t.Errorf("%s: progressDue = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestExpectedEnd(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0.Add(400 * time.Millisecond)
	st := inFlight(flinkapi.OpStopWithSavepoint, t0, t0.Add(200*time.Millisecond))
	completed := &flinkapi.CheckpointStats{ID: 7, Status: flinkapi.CheckpointCompleted, TriggerTime: t0.Add(-time.Minute), StateSize: 1000}
	sp := func(status flinkapi.CheckpointStatus, trigger time.Time, acked, bytes int64, ack time.Time) flinkapi.CheckpointStats {
		return flinkapi.CheckpointStats{ID: 8, Status: status, IsSavepoint: true, TriggerTime: trigger, NumSubtasks: 10,
			NumAcknowledgedSubtasks: int(acked), StateSize: bytes, LatestAck: ack}
	}
	earlier := &flinkapi.CheckpointStats{ID: 5, Status: flinkapi.CheckpointCompleted, IsSavepoint: true, TriggerTime: t0.Add(-time.Hour),
		EndToEndDuration: 3 * time.Second}
	for _, c := range []struct {
		name  string
		stats *flinkapi.CheckpointStatistics
		want  time.Time
	}{
		// A fifth of the subtasks by 200 ms after the trigger (on
		// Flink's clock, 10 ms after the recorded trigger): 1 s in all.
		{"subtasks", &flinkapi.CheckpointStatistics{LatestCompleted: completed,
			History: []flinkapi.CheckpointStats{sp(flinkapi.CheckpointInProgress, t0.Add(10*time.Millisecond), 2, 0, t0.Add(210*time.Millisecond))}},
			t0.Add(1010 * time.Millisecond)},
		// A tenth of the bytes of the latest checkpoint, no subtask yet,
		// 400 ms after the trigger: 4 s in all.
		{"bytes", &flinkapi.CheckpointStatistics{LatestCompleted: completed,
			History: []flinkapi.CheckpointStats{sp(flinkapi.CheckpointInProgress, t0, 0, 100, time.Time{})}},
			t0.Add(4 * time.Second)},
		{"completed", &flinkapi.CheckpointStatistics{LatestCompleted: completed,
			History: []flinkapi.CheckpointStats{sp(flinkapi.CheckpointCompleted, t0, 10, 1000, t0.Add(300*time.Millisecond))}},
			now},
		{"too little done", &flinkapi.CheckpointStatistics{LatestCompleted: completed,
			History: []flinkapi.CheckpointStats{sp(flinkapi.CheckpointInProgress, t0, 0, 5, time.Time{})}},
			time.Time{}},
		{"too little done, a savepoint before", &flinkapi.CheckpointStatistics{LatestCompleted: completed, LatestSavepoint: earlier,
			History: []flinkapi.CheckpointStats{sp(flinkapi.CheckpointInProgress, t0, 0, 5, time.Time{}), *earlier}},
			t0.Add(3 * time.Second)},
		// From Flink's cache, before the trigger: nothing of this one.
		{"cached", &flinkapi.CheckpointStatistics{LatestCompleted: completed, History: []flinkapi.CheckpointStats{*completed}}, time.Time{}},
		{"cached, a savepoint before", &flinkapi.CheckpointStatistics{LatestCompleted: completed, LatestSavepoint: earlier,
			History: []flinkapi.CheckpointStats{*earlier}}, t0.Add(3 * time.Second)},
		{"a savepoint before that took less than the time waited", &flinkapi.CheckpointStatistics{LatestSavepoint: &flinkapi.CheckpointStats{
			Status: flinkapi.CheckpointCompleted, IsSavepoint: true, TriggerTime: t0.Add(-time.Hour), EndToEndDuration: 300 * time.Millisecond}},
			time.Time{}},
	} {
		got, margin := expectedEnd(st, c.stats, now)
		if !got.Equal(c.want) {
			t.Errorf("%s: expectedEnd = %v, want %v", c.name, got.Sub(t0), c.want.Sub(t0))
		}
		if !got.IsZero() && got.After(now) && margin < minMargin {
			t.Errorf("%s: margin %v, less than %v", c.name, margin, minMargin)
		}
	}
}

// stepsOf runs op to its end on the fake's clock as Run does, sending its
// Progress through JSON after every step if resume is set (a caller that
// stores it and restarts), and returns the requests the fake saw.
func stepsOf(t *testing.T, e *env, op Stepper, resume bool) []string {
	t.Helper()
	var p Progress
	for range 1000 {
		res, err := op.Step(context.Background(), &p)
		if err != nil {
			t.Fatal(err)
		}
		if resume {
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			p = Progress{}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
		}
		if res.Done {
			if p.Outcome != OutcomeSucceeded {
				t.Fatalf("ended %s: %s", p.Outcome, p.Reason)
			}
			var out []string
			for _, r := range e.srv.Requests() {
				out = append(out, r.Time.Format("15:04:05.000")+" "+r.Route)
			}
			return out
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	t.Fatal("the operation did not end")
	return nil
}

// TestSavepointProgressPolls: a savepoint of 10 s is seen completed by
// the poll after its progress read, in 5 requests (the trigger, two
// polls, the progress read, the poll that sees it), also by a caller that
// stores its Progress and restarts after every step, and also when
// Flink's cache answers the progress read with statistics from before the
// trigger (then the polls go on as Timing.Lag says).
func TestSavepointProgressPolls(t *testing.T) {
	const d = 10 * time.Second
	var runs [][]string
	for _, resume := range []bool{false, true} {
		e := pollServer(t, true, flinktest.WithSavepointDuration(d))
		reqs := stepsOf(t, e, &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}, resume)
		if len(reqs) != 5 || reqs[3][13:] != "GET /jobs/:jobid/checkpoints" {
			t.Errorf("resume=%v: %d requests, want 5 with the progress read fourth: %q", resume, len(reqs), reqs)
		}
		runs = append(runs, reqs)
	}
	if len(runs[0]) != len(runs[1]) {
		t.Fatalf("a caller that restarts sent %q, one that does not %q", runs[1], runs[0])
	}
	for i := range runs[0] {
		if runs[0][i] != runs[1][i] {
			t.Errorf("request %d: %q by a caller that restarts, %q by one that does not", i, runs[1][i], runs[0][i])
		}
	}

	// The statistics are read 100 ms before the trigger: Flink's cache
	// answers the progress read with them.
	e := pollServer(t, true, flinktest.WithSavepointDuration(d))
	if _, err := e.c.Checkpoints(context.Background(), e.job); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(100 * time.Millisecond)
	e.srv.ClearRequests()
	reqs := stepsOf(t, e, &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}, false)
	if n := len(reqs); n <= 5 || n > 25 {
		t.Errorf("with the statistics cached: %d requests, want more than 5 (polls as Lag says), at most 25: %q", n, reqs)
	}
}

// statsClient answers Checkpoints with stats; it has no other call.
type statsClient struct {
	API
	stats *flinkapi.CheckpointStatistics
}

func (c statsClient) Checkpoints(context.Context, flinkapi.JobID) (*flinkapi.CheckpointStatistics, error) {
	return c.stats, nil
}

// TestReadProgressBeforeDeadline: a savepoint expected to complete after
// its deadline (a tenth of its bytes written 400 ms after the trigger, a
// deadline 2 s after it) is polled before the deadline, not at the
// expected time.
func TestReadProgressBeforeDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0.Add(400 * time.Millisecond)
	st := inFlight(flinkapi.OpStopWithSavepoint, t0, t0.Add(200*time.Millisecond))
	stats := &flinkapi.CheckpointStatistics{
		LatestCompleted: &flinkapi.CheckpointStats{ID: 7, Status: flinkapi.CheckpointCompleted, TriggerTime: t0.Add(-time.Minute), StateSize: 1000},
		History: []flinkapi.CheckpointStats{{ID: 8, Status: flinkapi.CheckpointInProgress, IsSavepoint: true, TriggerTime: t0,
			NumSubtasks: 10, StateSize: 100}},
	}
	for _, c := range []struct {
		name     string
		deadline time.Time
		want     time.Time
	}{
		{"far deadline", t0.Add(time.Minute), t0.Add(4*time.Second + minMargin + 20*time.Millisecond)},
		{"deadline before the expected time", t0.Add(2 * time.Second), t0.Add(2*time.Second - minMargin)},
		{"deadline in a moment", now.Add(time.Millisecond), now},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := st
			s.Deadline = c.deadline
			got, next := readProgress(context.Background(), statsClient{stats: stats}, s, now)
			if !next.Equal(c.want) || !got.LastUpdate.Equal(now) {
				t.Errorf("next poll %v, last update %v; want %v, %v", next.Sub(t0), got.LastUpdate.Sub(t0), c.want.Sub(t0), now.Sub(t0))
			}
		})
	}
}
