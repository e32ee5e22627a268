package savepoint

import "time"

// RecordOf returns the Record of the savepoint s produced. ok is false when
// s has no Location. A Location is present when s is Succeeded, when a
// stop-with-savepoint is Failed because the job failed while stopping after
// its savepoint completed, and when a late answer added the location to a
// final status; in each case the savepoint is complete and can be restored
// from.
//
// The Record's Time is s.TriggerTime (LastUpdate if that is zero): the
// savepoint's state is no older than its trigger.
func RecordOf(s Status) (r Record, ok bool) {
	if s.Location == "" {
		return Record{}, false
	}
	t := s.TriggerTime
	if t.IsZero() {
		t = s.LastUpdate
	}
	return Record{Location: s.Location, Time: t, Reason: s.Reason, JobID: s.JobID}, true
}

// Age returns how old the savepoint of r is at now. A Record without a Time
// is as old as it gets (the largest time.Duration); one from the future (by
// a skewed clock) has a negative age.
func Age(r Record, now time.Time) time.Duration {
	if r.Time.IsZero() {
		return maxDuration
	}
	return now.Sub(r.Time)
}

const maxDuration = time.Duration(1<<63 - 1)

// YoungerThan reports whether r has a location and a time and is younger
// than maxAge at now. A maxAge of 0 or less is never satisfied: a caller
// without a maximum age does not ask.
func YoungerThan(r Record, maxAge time.Duration, now time.Time) bool {
	return r.Location != "" && !r.Time.IsZero() && maxAge > 0 && Age(r, now) < maxAge
}
