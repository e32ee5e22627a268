package savepoint

import (
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// ScheduleInput is what Due needs to know about a job. It is a call
// parameter, not a stored type.
type ScheduleInput struct {
	// Interval between periodic savepoints; 0 or less turns them off.
	Interval time.Duration
	// Cron, if set, schedules periodic savepoints at its times, besides
	// or instead of Interval.
	Cron Cron
	// JobState is the job's current state; nothing is due unless it is
	// RUNNING.
	JobState flinkapi.JobState
	// JobStart is when the job (this run of it) started. The first periodic
	// savepoint is due one Interval after it.
	JobStart time.Time
	// Last is the latest successful savepoint; zero if none.
	Last Record
	// Current is the latest savepoint operation, finished or not; zero if
	// none. Nothing is due while it is active (Pending, InFlight, Lost,
	// Unconfirmed).
	Current Status
	// ManualToken is the token of a user's request for a savepoint (for
	// example an annotation's value); a new value asks for one.
	ManualToken string
	// LastHandledToken is the ManualToken the last user-requested savepoint
	// was taken for. Set it to ManualToken when you Begin that savepoint.
	LastHandledToken string
}

// Due reports whether a savepoint should be triggered now, why, and when the
// next periodic savepoint is due.
//
// Nothing is due while the job is not RUNNING or a savepoint is active.
// Otherwise a user's request (ManualToken set and different from
// LastHandledToken) is due at once, with ReasonUser; it takes priority over
// the schedule. A periodic savepoint is due, with ReasonScheduled, one
// Interval after the latest of JobStart, Last.Time and
// Current.TriggerTime: the first one counts from the job's start, a
// savepoint of any reason restarts the count, and a failed attempt is
// retried one Interval after it, not at once. With none of these times
// known, a periodic savepoint is due at once.
//
// With Cron, a periodic savepoint is also due at Cron's first time after
// that latest time (and the earlier of the two counts when both are set).
// A caller that was down over several of Cron's times finds one savepoint
// due, not one per missed time: once it is taken, the next is due at
// Cron's first time after it.
//
// next is when the next periodic savepoint is due by the interval or the
// cron schedule, zero when periodic savepoints are off. It may be at or before now while the
// job is not running or a savepoint is active: then one is due as soon as
// neither holds. When a savepoint is due now, reason is set; otherwise it
// is empty.
func Due(in ScheduleInput, now time.Time) (due bool, reason Reason, next time.Time) {
	periodic := in.Interval > 0 || !in.Cron.IsZero()
	if periodic {
		base := in.JobStart
		for _, t := range [...]time.Time{in.Last.Time, in.Current.TriggerTime} {
			if t.After(base) {
				base = t
			}
		}
		switch {
		case base.IsZero():
			next = now
		case in.Interval > 0:
			next = base.Add(in.Interval)
			if c := in.Cron.Next(base); !c.IsZero() && c.Before(next) {
				next = c
			}
		default:
			next = in.Cron.Next(base)
		}
	}
	if in.JobState != flinkapi.JobRunning || in.Current.Active() {
		return false, "", next
	}
	if in.ManualToken != "" && in.ManualToken != in.LastHandledToken {
		return true, ReasonUser, next
	}
	if periodic && !next.IsZero() && !now.Before(next) {
		return true, ReasonScheduled, next
	}
	return false, "", next
}
