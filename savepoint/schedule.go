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
// next is when the next periodic savepoint is due by the interval, zero
// when periodic savepoints are off. It may be at or before now while the
// job is not running or a savepoint is active: then one is due as soon as
// neither holds. When a savepoint is due now, reason is set; otherwise it
// is empty.
func Due(in ScheduleInput, now time.Time) (due bool, reason Reason, next time.Time) {
	if in.Interval > 0 {
		base := in.JobStart
		for _, t := range [...]time.Time{in.Last.Time, in.Current.TriggerTime} {
			if t.After(base) {
				base = t
			}
		}
		if base.IsZero() {
			next = now
		} else {
			next = base.Add(in.Interval)
		}
	}
	if in.JobState != flinkapi.JobRunning || in.Current.Active() {
		return false, "", next
	}
	if in.ManualToken != "" && in.ManualToken != in.LastHandledToken {
		return true, ReasonUser, next
	}
	if in.Interval > 0 && !now.Before(next) {
		return true, ReasonScheduled, next
	}
	return false, "", next
}
