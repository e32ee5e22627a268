package lifecycle

import (
	"context"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// A savepoint's trigger is polled as Timing.Lag says, except once: the
// first poll at or after progressAfter since the trigger reads the job's
// checkpoint statistics instead, and times the next poll by Flink's own
// figures. Flink reports a savepoint in progress there with the share of
// its subtasks that acknowledged it and the bytes written so far: the
// savepoint, progressing at that pace, completes at its expected time;
// without them, a savepoint taken before lasts as long as that one did.
// The next poll comes a margin after the expected time, however far it
// lies, instead of the polls Lag asks for in between; if the savepoint has
// not completed by then, the polls go on as Lag says. Nothing of it is
// recorded but the time of the read (savepoint.Status.LastUpdate), which
// makes it the only one: a caller that resumes after the read polls as
// Lag says from then on.

// progressAfter is how long after its trigger a savepoint's progress is
// read: after the first polls, which see a short savepoint complete, and
// early enough that the expected time saves the polls of a long one.
const progressAfter = 300 * time.Millisecond

// minProgress is the least share of a savepoint completed that its
// expected time is extrapolated from: below it, the figures are too small
// to say when it ends.
const minProgress = 0.01

// progressDue reports whether the step at now reads the progress of the
// savepoint of st in the job's checkpoint statistics instead of polling
// its trigger: the first poll at or after progressAfter since the
// trigger, within progressWindow, of a savepoint (not a checkpoint) that Flink acknowledged,
// with no transient error in the way.
func progressDue(st savepoint.Status, now time.Time) bool {
	if st.Kind == flinkapi.OpCheckpoint || st.TriggerTime.IsZero() || st.Attempts > 0 || !st.NeedsPoll() {
		return false
	}
	at := st.TriggerTime.Add(progressAfter)
	return !now.Before(at) && now.Before(at.Add(progressWindow)) && st.LastUpdate.Before(at)
}

// progressWindow is how long after progressAfter the progress read is
// still due: a step that comes later (its caller was away) polls the
// trigger, which tells at once whether the savepoint completed, rather
// than read the statistics first and leave the completion to a poll
// after them, which a JobManager that fails over in between would lose.
const progressWindow = 3 * progressAfter

// readProgress reads the job's checkpoint statistics for the savepoint
// of st and returns st with LastUpdate set to now, which makes the read
// the only one, and the time to poll its trigger next: a margin after its
// expected completion (expectedEnd), but before the savepoint's deadline,
// now when the statistics show it
// ended, or zero when they tell nothing (an error, or an answer from
// Flink's cache that predates the savepoint). The savepoint's state is
// not changed: its trigger tells it.
func readProgress(ctx context.Context, c API, st savepoint.Status, now time.Time) (savepoint.Status, time.Time) {
	st.LastUpdate = now
	stats, err := c.Checkpoints(ctx, st.JobID)
	if err != nil || stats == nil {
		return st, time.Time{}
	}
	end, margin := expectedEnd(st, stats, now)
	if end.IsZero() || !end.After(now) {
		return st, end
	}
	next := end.Add(margin)
	// However far the expected time lies, the trigger is polled before
	// the savepoint's deadline: one that completes sooner than expected
	// is seen before it would count as timed out.
	if last := st.Deadline.Add(-minMargin); !st.Deadline.IsZero() && next.After(last) {
		next = last
		if next.Before(now) {
			next = now
		}
	}
	return st, next
}

// expectedEnd is when the savepoint of st is expected to complete by the
// checkpoint statistics stats read at now: extrapolated from its progress
// while it is in progress, now once it ended, else from the duration of
// the newest savepoint completed before it; zero when nothing says.
// margin is how much later to look, for the figures' precision: Flink's
// milliseconds, magnified by the extrapolation.
func expectedEnd(st savepoint.Status, stats *flinkapi.CheckpointStatistics, now time.Time) (end time.Time, margin time.Duration) {
	from := st.TriggerTime.Truncate(time.Millisecond) // Flink records trigger times in milliseconds
	var cs *flinkapi.CheckpointStats
	for i := range stats.History {
		h := &stats.History[i]
		if h.IsSavepoint && !h.TriggerTime.Before(from) && (cs == nil || h.TriggerTime.Before(cs.TriggerTime)) {
			cs = h
		}
	}
	switch {
	case cs != nil && cs.Status != flinkapi.CheckpointInProgress:
		return now, 0
	case cs != nil:
		if end, done := extrapolate(st, *cs, stats.LatestCompleted, now); !end.IsZero() {
			return end, minMargin + time.Duration(float64(2*time.Millisecond)/done)
		}
	}
	if prev := stats.LatestSavepoint; prev != nil && prev.TriggerTime.Before(from) && prev.EndToEndDuration > 0 {
		if end := st.TriggerTime.Add(prev.EndToEndDuration); end.After(now) {
			return end, minMargin + 2*time.Millisecond
		}
	}
	return time.Time{}, 0
}

// minMargin is the least time the poll after a progress read comes after
// the savepoint's expected completion.
const minMargin = 5 * time.Millisecond

// extrapolate is when the savepoint cs, in progress since the trigger of
// st, completes at the pace it made so far: the larger of the share of
// its subtasks that acknowledged it and of the bytes it wrote against
// the state of the newest completed checkpoint (latest) is done by the
// time of its latest acknowledgement (or now, before any), counted from
// its trigger; done is that share. Zero when less than minProgress is
// done.
func extrapolate(st savepoint.Status, cs flinkapi.CheckpointStats, latest *flinkapi.CheckpointStats, now time.Time) (end time.Time, done float64) {
	done = savepoint.NewProgress(cs).Fraction
	if latest != nil && latest.StateSize > 0 && cs.StateSize > 0 {
		done = max(done, min(float64(cs.StateSize)/float64(latest.StateSize), 1))
	}
	if done < minProgress {
		return time.Time{}, 0
	}
	// Flink's trigger time, when it lies between the recorded one (which
	// may precede the request by a step) and now: the clocks agree.
	start := st.TriggerTime
	if t := cs.TriggerTime; t.After(start) && t.Before(now) {
		start = t
	}
	took := now.Sub(start)
	if !cs.LatestAck.IsZero() && !cs.TriggerTime.IsZero() && cs.LatestAck.After(cs.TriggerTime) {
		took = cs.LatestAck.Sub(cs.TriggerTime) // on Flink's clock
	}
	if took <= 0 {
		return time.Time{}, 0
	}
	return start.Add(time.Duration(float64(took) / done)), done
}

// expectedDelay is the delay of the poll after a progress read that
// expects to see the savepoint completed at next: until then, at once
// when it passed, and lag when the read told nothing.
func expectedDelay(next, now time.Time, lag time.Duration) time.Duration {
	if next.IsZero() {
		return lag
	}
	return max(next.Sub(now), 0)
}
