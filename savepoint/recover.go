package savepoint

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// ClockSkew is how much earlier than the Status's TriggerTime Flink may
// record the trigger time of the savepoint that trigger produced. The
// TriggerTime is taken by the caller's clock before the request is sent, the
// savepoint's by the JobManager's clock after it arrives; ClockSkew allows
// for the two clocks to differ by that much. A savepoint triggered within
// ClockSkew before TriggerTime by someone else can be taken for this one;
// its state is at most ClockSkew older.
const ClockSkew = 5 * time.Second

// msgLostForGood is the Failure of a LostForGood status.
const msgLostForGood = "Flink forgot the trigger id and the checkpoint history holds no completed savepoint triggered at or after the trigger time"

// Recover looks for the savepoint of a Lost status in the job's checkpoint
// statistics (flinkapi's Checkpoints: History and LatestSavepoint) and
// returns the next Status. For other statuses only the deadline applies.
//
// A candidate is a savepoint (IsSavepoint) that is COMPLETED, has an
// ExternalPath, is not Discarded, and was triggered at or after
// TriggerTime-ClockSkew. Any such savepoint holds state at least as recent
// as the lost one would have.
//
//   - a candidate: Succeeded, Location of the earliest one (ties: lowest
//     checkpoint id), Recovered set.
//   - no candidate, but a savepoint IN_PROGRESS triggered at or after
//     TriggerTime-ClockSkew: still Lost, as it may be this one.
//   - no candidate, and the History reaches back to the trigger (its oldest
//     entry was triggered at or before TriggerTime-ClockSkew):
//     LostForGood.
//   - no candidate, and the job was restored (LatestRestored) after
//     TriggerTime: LostForGood. A job restored, by a JobManager failover
//     or a restart of its tasks, runs a new execution, and the savepoint
//     in flight in the old one was aborted with it. This compares Flink's
//     clock with the caller's: it assumes they differ by less than the
//     time from the trigger to the restore (a failover takes seconds).
//   - otherwise (stats nil, History empty or truncated after the trigger,
//     for example because the JobManager restarted, or a zero
//     TriggerTime): still Lost; nothing can be decided. Ask again later;
//     the deadline ends the wait (see CheckDeadline).
//
// Flink's history is bounded by web.checkpoints.history (10 by default) and
// kept in memory: a JobManager restart empties it.
func Recover(prev Status, stats *flinkapi.CheckpointStatistics, now time.Time) Status {
	if prev.State != Lost {
		return CheckDeadline(prev, now)
	}
	if stats == nil || prev.TriggerTime.IsZero() {
		return CheckDeadline(prev, now)
	}
	from := prev.TriggerTime.Add(-ClockSkew)
	var best *flinkapi.CheckpointStats
	inProgress := false
	consider := func(cs *flinkapi.CheckpointStats) {
		if !cs.IsSavepoint || cs.TriggerTime.IsZero() || cs.TriggerTime.Before(from) {
			return
		}
		switch {
		case cs.Status == flinkapi.CheckpointInProgress:
			inProgress = true
		case cs.Status == flinkapi.CheckpointCompleted && cs.ExternalPath != "" && !cs.Discarded:
			if best == nil || cs.TriggerTime.Before(best.TriggerTime) ||
				cs.TriggerTime.Equal(best.TriggerTime) && cs.ID < best.ID {
				best = cs
			}
		}
	}
	covered := false
	for i := range stats.History {
		cs := &stats.History[i]
		consider(cs)
		if !cs.TriggerTime.IsZero() && !cs.TriggerTime.After(from) {
			covered = true
		}
	}
	if stats.LatestSavepoint != nil {
		consider(stats.LatestSavepoint)
	}
	next := prev
	switch {
	case best != nil:
		next.LastUpdate = now
		next.Recovered = true
		if next.Location == "" {
			next.Location = best.ExternalPath
		}
		end(&next, Succeeded, "")
		return next
	case inProgress:
		return CheckDeadline(prev, now)
	case !covered:
		r := stats.LatestRestored
		if r == nil || !r.RestoreTime.After(prev.TriggerTime) {
			return CheckDeadline(prev, now)
		}
		next.LastUpdate = now
		end(&next, LostForGood, fmt.Sprintf("%s; the job was restored from checkpoint %d at %s, after the trigger, which aborted the savepoint in flight",
			msgLostForGood, r.ID, r.RestoreTime.UTC().Format(time.RFC3339Nano)))
		return next
	}
	next.LastUpdate = now
	end(&next, LostForGood, msgLostForGood)
	return next
}
