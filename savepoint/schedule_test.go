package savepoint

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

func TestDue(t *testing.T) {
	start := t0
	hour := time.Hour
	running := func(f func(*ScheduleInput)) ScheduleInput {
		in := ScheduleInput{Interval: hour, JobState: flinkapi.JobRunning, JobStart: start}
		if f != nil {
			f(&in)
		}
		return in
	}
	lastAt := func(d time.Duration) Record { return Record{Location: loc, Time: at(d), Reason: ReasonScheduled} }
	finished := func(state State, d time.Duration) Status {
		return Status{State: state, TriggerTime: at(d), Reason: ReasonScheduled}
	}
	tests := []struct {
		name       string
		in         ScheduleInput
		now        time.Time
		wantDue    bool
		wantReason Reason
		wantNext   time.Time
	}{
		{"first counts from the job's start: not yet", running(nil), at(59 * time.Minute), false, "", at(hour)},
		{"first counts from the job's start: due", running(nil), at(hour), true, ReasonScheduled, at(hour)},
		{"an interval after the last savepoint", running(func(in *ScheduleInput) { in.Last = lastAt(90 * time.Minute) }),
			at(2 * hour), false, "", at(150 * time.Minute)},
		{"overdue", running(func(in *ScheduleInput) { in.Last = lastAt(90 * time.Minute) }),
			at(5 * hour), true, ReasonScheduled, at(150 * time.Minute)},
		{"a savepoint before the job's start does not count", running(func(in *ScheduleInput) { in.Last = lastAt(-10 * time.Minute) }),
			at(30 * time.Minute), false, "", at(hour)},
		{"a failed attempt is retried an interval later", running(func(in *ScheduleInput) {
			in.Last, in.Current = lastAt(time.Hour), finished(Failed, 2*hour)
		}), at(2*hour + time.Minute), false, "", at(3 * hour)},
		{"a timed-out attempt too", running(func(in *ScheduleInput) { in.Current = finished(TimedOut, 2*hour) }),
			at(3 * hour), true, ReasonScheduled, at(3 * hour)},
		{"nothing due while one is in flight", running(func(in *ScheduleInput) { in.Current = finished(InFlight, 50*time.Minute) }),
			at(5 * hour), false, "", at(110 * time.Minute)},
		{"nothing due while one is pending", running(func(in *ScheduleInput) { in.Current = finished(Pending, 50*time.Minute) }),
			at(5 * hour), false, "", at(110 * time.Minute)},
		{"nothing due while one is lost", running(func(in *ScheduleInput) { in.Current = finished(Lost, 50*time.Minute) }),
			at(5 * hour), false, "", at(110 * time.Minute)},
		{"nothing due while the job is not running", running(func(in *ScheduleInput) { in.JobState = flinkapi.JobRestarting }),
			at(5 * hour), false, "", at(hour)},
		{"nothing due for a job without a state", running(func(in *ScheduleInput) { in.JobState = "" }),
			at(5 * hour), false, "", at(hour)},
		{"periodic off", running(func(in *ScheduleInput) { in.Interval = 0 }), at(5 * hour), false, "", time.Time{}},
		{"no times known: due at once", running(func(in *ScheduleInput) { in.JobStart = time.Time{} }), t0, true, ReasonScheduled, t0},
		{"a new user request is due at once", running(func(in *ScheduleInput) { in.ManualToken = "req-2"; in.LastHandledToken = "req-1" }),
			at(time.Minute), true, ReasonUser, at(hour)},
		{"a first user request", running(func(in *ScheduleInput) { in.ManualToken = "req-1" }),
			at(time.Minute), true, ReasonUser, at(hour)},
		{"a user request takes priority over the schedule", running(func(in *ScheduleInput) { in.ManualToken = "req-1" }),
			at(2 * hour), true, ReasonUser, at(hour)},
		{"a user request with periodic off", running(func(in *ScheduleInput) { in.Interval, in.ManualToken = 0, "req-1" }),
			at(time.Minute), true, ReasonUser, time.Time{}},
		{"a handled user request is not due again", running(func(in *ScheduleInput) { in.ManualToken, in.LastHandledToken = "req-1", "req-1" }),
			at(time.Minute), false, "", at(hour)},
		{"a user request waits for the one in flight", running(func(in *ScheduleInput) {
			in.ManualToken, in.Current = "req-2", finished(InFlight, 30*time.Minute)
		}), at(31 * time.Minute), false, "", at(90 * time.Minute)},
		{"a user request waits for the job", running(func(in *ScheduleInput) { in.ManualToken, in.JobState = "req-2", flinkapi.JobInitializing }),
			at(time.Minute), false, "", at(hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, reason, next := Due(tt.in, tt.now)
			if due != tt.wantDue || reason != tt.wantReason || !next.Equal(tt.wantNext) {
				t.Errorf("Due = %v, %q, %v; want %v, %q, %v", due, reason, next, tt.wantDue, tt.wantReason, tt.wantNext)
			}
		})
	}
}
