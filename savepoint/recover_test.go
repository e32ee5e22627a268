package savepoint

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/google/go-cmp/cmp"
)

// sp returns a savepoint's statistics: triggered d after t0.
func sp(id int64, d time.Duration, status flinkapi.CheckpointStatus, path string) flinkapi.CheckpointStats {
	return flinkapi.CheckpointStats{
		ID: id, Status: status, IsSavepoint: true, CheckpointType: "SAVEPOINT",
		TriggerTime: at(d), ExternalPath: path, NumSubtasks: 4,
	}
}

// cp returns a periodic checkpoint's statistics: triggered d after t0.
func cp(id int64, d time.Duration) flinkapi.CheckpointStats {
	return flinkapi.CheckpointStats{
		ID: id, Status: flinkapi.CheckpointCompleted, CheckpointType: "CHECKPOINT",
		TriggerTime: at(d), ExternalPath: "s3://bucket/checkpoints/chk-x", Discarded: true,
	}
}

// history returns statistics with the entries newest first, as Flink sends
// them.
func history(entries ...flinkapi.CheckpointStats) *flinkapi.CheckpointStatistics {
	return &flinkapi.CheckpointStatistics{History: entries}
}

func TestRecover(t *testing.T) {
	now := at(2 * time.Minute)
	found := func(location string) Status {
		return with(lost(), func(s *Status) { s.State, s.Location, s.Recovered, s.LastUpdate = Succeeded, location, true, now })
	}
	stillLost := lost()
	lostForGood := with(lost(), func(s *Status) { s.State, s.Failure, s.LastUpdate = LostForGood, msgLostForGood, now })
	const (
		sp1 = "s3://bucket/savepoints/savepoint-1"
		sp2 = "s3://bucket/savepoints/savepoint-2"
		sp0 = "s3://bucket/savepoints/savepoint-0"
	)
	tests := []struct {
		name  string
		prev  Status
		stats *flinkapi.CheckpointStatistics
		now   time.Time
		want  Status
	}{
		{
			name:  "completed savepoint after the trigger: Succeeded",
			prev:  lost(),
			stats: history(cp(12, time.Minute), sp(11, 2*time.Second, flinkapi.CheckpointCompleted, sp1), cp(10, -time.Minute)),
			want:  found(sp1),
		},
		{
			name:  "the earliest of several",
			prev:  lost(),
			stats: history(sp(13, time.Minute, flinkapi.CheckpointCompleted, sp2), sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)),
			want:  found(sp1),
		},
		{
			name:  "within the clock skew before the trigger",
			prev:  lost(),
			stats: history(sp(11, -ClockSkew, flinkapi.CheckpointCompleted, sp1)),
			want:  found(sp1),
		},
		{
			name:  "equal trigger times: the lower id",
			prev:  lost(),
			stats: history(sp(12, time.Second, flinkapi.CheckpointCompleted, sp2), sp(11, time.Second, flinkapi.CheckpointCompleted, sp1), cp(9, -time.Hour)),
			want:  found(sp1),
		},
		{
			name: "only in LatestSavepoint (history evicted it)",
			prev: lost(),
			stats: &flinkapi.CheckpointStatistics{
				History:         []flinkapi.CheckpointStats{cp(20, time.Minute)},
				LatestSavepoint: ptr(sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)),
			},
			want: found(sp1),
		},
		{
			name:  "found past the deadline: Succeeded, the answer wins",
			prev:  lost(),
			stats: history(sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)),
			now:   at(time.Hour),
			want:  with(found(sp1), func(s *Status) { s.LastUpdate = at(time.Hour) }),
		},
		{
			name:  "savepoints before the skew do not count; history reaches back: LostForGood",
			prev:  lost(),
			stats: history(cp(12, time.Minute), sp(11, -ClockSkew-time.Millisecond, flinkapi.CheckpointCompleted, sp0)),
			want:  lostForGood,
		},
		{
			name: "failed, discarded, pathless savepoints and checkpoints do not count: LostForGood",
			prev: lost(),
			stats: history(
				sp(15, 5*time.Second, flinkapi.CheckpointFailed, ""),
				with2(sp(14, 4*time.Second, flinkapi.CheckpointCompleted, sp1), func(c *flinkapi.CheckpointStats) { c.Discarded = true }),
				sp(13, 3*time.Second, flinkapi.CheckpointCompleted, ""),
				cp(12, 2*time.Second),
				cp(10, -time.Minute),
			),
			want: lostForGood,
		},
		{
			name:  "a savepoint in progress after the trigger: still Lost",
			prev:  lost(),
			stats: history(sp(11, time.Second, flinkapi.CheckpointInProgress, ""), cp(10, -time.Minute)),
			want:  stillLost,
		},
		{
			name:  "history newer than the trigger (JobManager restarted): still Lost",
			prev:  lost(),
			stats: history(cp(3, time.Minute), cp(2, 30*time.Second)),
			want:  stillLost,
		},
		{
			name: "empty history, the job restored after the trigger (JobManager failover): LostForGood",
			prev: lost(),
			stats: &flinkapi.CheckpointStatistics{LatestRestored: &flinkapi.RestoredCheckpoint{
				ID: 9, RestoreTime: lost().TriggerTime.Add(time.Millisecond), ExternalPath: "s3://bucket/checkpoints/chk-9"}},
			want: with(lost(), func(s *Status) {
				s.State, s.LastUpdate = LostForGood, now
				s.Failure = msgLostForGood + "; the job was restored from checkpoint 9 at " +
					lost().TriggerTime.Add(time.Millisecond).UTC().Format(time.RFC3339Nano) + ", after the trigger, which aborted the savepoint in flight"
			}),
		},
		{
			name: "empty history, the job restored at the trigger time or before: still Lost",
			prev: lost(),
			stats: &flinkapi.CheckpointStatistics{LatestRestored: &flinkapi.RestoredCheckpoint{
				ID: 9, RestoreTime: lost().TriggerTime, ExternalPath: "s3://bucket/checkpoints/chk-9"}},
			want: stillLost,
		},
		{
			name: "restored after the trigger, but a savepoint in progress: still Lost",
			prev: lost(),
			stats: &flinkapi.CheckpointStatistics{
				History:        []flinkapi.CheckpointStats{sp(11, time.Second, flinkapi.CheckpointInProgress, "")},
				LatestRestored: &flinkapi.RestoredCheckpoint{ID: 9, RestoreTime: at(time.Second)}},
			want: stillLost,
		},
		{
			name: "restored after the trigger, and the savepoint completed: Succeeded",
			prev: lost(),
			stats: &flinkapi.CheckpointStatistics{
				History:        []flinkapi.CheckpointStats{sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)},
				LatestRestored: &flinkapi.RestoredCheckpoint{ID: 9, RestoreTime: at(time.Minute)}},
			want: found(sp1),
		},
		{
			name:  "empty history: still Lost",
			prev:  lost(),
			stats: history(),
			want:  stillLost,
		},
		{
			name:  "no statistics: still Lost",
			prev:  lost(),
			stats: nil,
			want:  stillLost,
		},
		{
			name:  "no trigger time: nothing can be matched",
			prev:  with(lost(), func(s *Status) { s.TriggerTime = time.Time{} }),
			stats: history(sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)),
			want:  with(lost(), func(s *Status) { s.TriggerTime = time.Time{} }),
		},
		{
			name:  "undecided past the deadline: TimedOut",
			prev:  lost(),
			stats: history(),
			now:   at(time.Hour),
			want:  with(lost(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutLost, at(time.Hour) }),
		},
		{
			name:  "not Lost: unchanged",
			prev:  inFlight(),
			stats: history(sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)),
			want:  inFlight(),
		},
		{
			name:  "Succeeded: unchanged",
			prev:  with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
			stats: history(sp(11, time.Second, flinkapi.CheckpointCompleted, sp1)),
			want:  with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := now
			if !tt.now.IsZero() {
				n = tt.now
			}
			if diff := cmp.Diff(tt.want, Recover(tt.prev, tt.stats, n)); diff != "" {
				t.Errorf("Recover (-want +got):\n%s", diff)
			}
		})
	}
}

func with2(c flinkapi.CheckpointStats, f func(*flinkapi.CheckpointStats)) flinkapi.CheckpointStats {
	f(&c)
	return c
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name string
		cs   flinkapi.CheckpointStats
		want Progress
		str  string
	}{
		{"three of four", flinkapi.CheckpointStats{NumSubtasks: 4, NumAcknowledgedSubtasks: 3, StateSize: 1258291},
			Progress{3, 4, 0.75, 1258291}, "3/4 subtasks (75%), 1.2 MiB"},
		{"none yet", flinkapi.CheckpointStats{NumSubtasks: 12}, Progress{0, 12, 0, 0}, "0/12 subtasks (0%), 0 B"},
		{"rounded down", flinkapi.CheckpointStats{NumSubtasks: 3, NumAcknowledgedSubtasks: 2, StateSize: 1023},
			Progress{2, 3, 2.0 / 3, 1023}, "2/3 subtasks (66%), 1023 B"},
		{"all", flinkapi.CheckpointStats{NumSubtasks: 3, NumAcknowledgedSubtasks: 3, StateSize: 5 << 30},
			Progress{3, 3, 1, 5 << 30}, "3/3 subtasks (100%), 5.0 GiB"},
		{"unknown counts", flinkapi.CheckpointStats{NumSubtasks: -1, NumAcknowledgedSubtasks: -1, StateSize: -1},
			Progress{}, "0/0 subtasks (0%), 0 B"},
		{"more acknowledged than total", flinkapi.CheckpointStats{NumSubtasks: 2, NumAcknowledgedSubtasks: 5, StateSize: 1024},
			Progress{2, 2, 1, 1024}, "2/2 subtasks (100%), 1.0 KiB"},
		{"just under a unit", flinkapi.CheckpointStats{NumSubtasks: 1, StateSize: 1<<20 - 1},
			Progress{0, 1, 0, 1<<20 - 1}, "0/1 subtasks (0%), 1.0 MiB"},
		{"huge", flinkapi.CheckpointStats{NumSubtasks: 1, StateSize: 1<<63 - 1},
			Progress{0, 1, 0, 1<<63 - 1}, "0/1 subtasks (0%), 8.0 EiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewProgress(tt.cs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NewProgress (-want +got):\n%s", diff)
			}
			if s := got.String(); s != tt.str {
				t.Errorf("String() = %q, want %q", s, tt.str)
			}
		})
	}
}

func TestFindProgress(t *testing.T) {
	running := sp(11, time.Second, flinkapi.CheckpointInProgress, "")
	running.NumAcknowledgedSubtasks, running.StateSize = 1, 2048
	later := sp(12, time.Minute, flinkapi.CheckpointInProgress, "")
	stats := history(later, running, sp(9, -time.Hour, flinkapi.CheckpointInProgress, ""), cp(10, 30*time.Second))

	got, ok := FindProgress(inFlight(), stats)
	if want := (Progress{1, 4, 0.25, 2048}); !ok || got != want {
		t.Errorf("FindProgress = %v, %v; want %v, true", got, ok, want)
	}
	if _, ok := FindProgress(inFlight(), history(cp(10, time.Second))); ok {
		t.Error("FindProgress found a savepoint among checkpoints")
	}
	if _, ok := FindProgress(inFlight(), nil); ok {
		t.Error("FindProgress found a savepoint in no statistics")
	}
	if _, ok := FindProgress(Status{State: InFlight}, stats); ok {
		t.Error("FindProgress matched a status without a trigger time")
	}
}

func ptr[T any](v T) *T { return &v }
