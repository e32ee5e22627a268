package savepoint

import (
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/google/go-cmp/cmp"
)

func TestAfterJobList(t *testing.T) {
	now := at(time.Minute)
	deadline := at(10 * time.Minute)
	var (
		msg404    = "Job " + string(job) + " not found"
		msgResult = "Could not find Flink job (" + string(job) + ")"
	)
	done := func(prev Status, f func(*Status)) Status {
		return with(prev, func(s *Status) { s.LastUpdate = now; f(s) })
	}
	tests := []struct {
		name   string
		prev   Status
		listed bool
		state  flinkapi.JobState
		err    error
		now    time.Time // zero: now
		want   Status
	}{
		{
			name: "not listed after a 404: JobGone, Flink's message",
			prev: unconfirmedFrom(InFlight, false),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = JobGone, msg404 }),
		},
		{
			name: "not listed after a failed operation: JobGone",
			prev: with(unconfirmedFrom(InFlight, true), func(s *Status) { s.Attempts, s.LastError = 2, "x" }),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = JobGone, msgResult }),
		},
		{
			name: "not listed, no message kept: JobGone, a message still",
			prev: with(unconfirmedFrom(Pending, false), func(s *Status) { s.Failure = "" }),
			want: done(pending(), func(s *Status) { s.State, s.Failure = JobGone, msgJobUnknown }),
		},
		{
			name:   "listed FINISHED after a failed operation: Lost, recover from the checkpoint history",
			prev:   unconfirmedFrom(InFlight, true),
			listed: true, state: flinkapi.JobFinished,
			want: done(lost(), func(s *Status) {}),
		},
		{
			name:   "listed CANCELED after a 404 of a Pending status: Lost (the savepoint may have been taken)",
			prev:   unconfirmedFrom(Pending, false),
			listed: true, state: flinkapi.JobCanceled,
			want: done(lost(), func(s *Status) {}),
		},
		{
			name:   "listed FAILED: Lost",
			prev:   with(unconfirmedFrom(Lost, false), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 1, "x", 503 }),
			listed: true, state: flinkapi.JobFailed,
			want: done(lost(), func(s *Status) {}),
		},
		{
			name:   "listed RUNNING after a failed operation: Failed, a new trigger id needed",
			prev:   unconfirmedFrom(InFlight, true),
			listed: true, state: flinkapi.JobRunning,
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = Failed, msgResult+" (Flink lists the job RUNNING)" }),
		},
		{
			name:   "listed RUNNING after a 404 of a Pending status: Pending, send the trigger again",
			prev:   unconfirmedFrom(Pending, false),
			listed: true, state: flinkapi.JobRunning,
			want: done(pending(), func(s *Status) {}),
		},
		{
			name:   "listed RUNNING after a 404 of an InFlight status: InFlight, poll again",
			prev:   with(unconfirmedFrom(InFlight, false), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 3, "x", 503 }),
			listed: true, state: flinkapi.JobRunning,
			want: done(inFlight(), func(s *Status) {}),
		},
		{
			name:   "listed RESTARTING after a 404 of a Lost status: Lost, recover again",
			prev:   unconfirmedFrom(Lost, false),
			listed: true, state: flinkapi.JobRestarting,
			want: done(lost(), func(s *Status) {}),
		},
		{
			name:   "listed SUSPENDED (not globally terminal) after a 404: the state before",
			prev:   unconfirmedFrom(InFlight, false),
			listed: true, state: flinkapi.JobSuspended,
			want: done(inFlight(), func(s *Status) {}),
		},
		{
			name:   "listed RUNNING, no state to go back to recorded: Pending",
			prev:   with(unconfirmedFrom(InFlight, false), func(s *Status) { s.Before = "" }),
			listed: true, state: flinkapi.JobRunning,
			want: done(pending(), func(s *Status) {}),
		},
		{
			name:   "listed RUNNING, an unknown state to go back to: Pending",
			prev:   with(unconfirmedFrom(InFlight, false), func(s *Status) { s.Before = Succeeded }),
			listed: true, state: flinkapi.JobRunning,
			want: done(pending(), func(s *Status) {}),
		},
		{
			name: "503 of the list: still Unconfirmed, attempt counted",
			prev: unconfirmedFrom(InFlight, false),
			err:  apiErr(503, "/jobs", "Service temporarily unavailable due to an ongoing leader election. Please refresh."),
			want: done(unconfirmedFrom(InFlight, false), func(s *Status) {
				s.Attempts, s.LastError, s.LastErrorCode = 1, "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503
			}),
		},
		{
			name: "connection refused after a failed operation: still Unconfirmed, attempt counted, never Failed",
			prev: with(unconfirmedFrom(InFlight, true), func(s *Status) { s.Attempts = 4 }),
			err:  errRefused,
			want: done(unconfirmedFrom(InFlight, true), func(s *Status) { s.Attempts, s.LastError = 5, "connection refused" }),
		},
		{
			name: "404 of the list itself: still Unconfirmed, attempt counted",
			prev: unconfirmedFrom(Pending, false),
			err:  apiErr(404, "/jobs", "Not found: /jobs"),
			want: done(unconfirmedFrom(Pending, false), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 1, "Not found: /jobs", 404 }),
		},
		{
			name: "error past the deadline: TimedOut, as the state before",
			prev: unconfirmedFrom(Pending, false),
			err:  errLeader,
			now:  deadline,
			want: with(pending(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutPending, deadline
				s.Attempts, s.LastError, s.LastErrorCode = 1, "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503
			}),
		},
		{
			name: "not listed past the deadline: JobGone, a definite answer wins",
			prev: unconfirmedFrom(InFlight, false),
			now:  deadline.Add(time.Hour),
			want: with(inFlight(), func(s *Status) { s.State, s.Failure, s.LastUpdate = JobGone, msg404, deadline.Add(time.Hour) }),
		},
		{
			name:   "listed RUNNING after a failed operation past the deadline: Failed, a definite answer wins",
			prev:   unconfirmedFrom(InFlight, true),
			listed: true, state: flinkapi.JobRunning,
			now: deadline,
			want: with(inFlight(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = Failed, msgResult+" (Flink lists the job RUNNING)", deadline
			}),
		},
		{
			name:   "listed RUNNING after a 404 past the deadline: TimedOut",
			prev:   unconfirmedFrom(InFlight, false),
			listed: true, state: flinkapi.JobRunning,
			now:  deadline,
			want: with(inFlight(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutInFlight, deadline }),
		},
		{
			name:   "listed FINISHED past the deadline: TimedOut, as Lost",
			prev:   unconfirmedFrom(InFlight, true),
			listed: true, state: flinkapi.JobFinished,
			now:  deadline,
			want: with(lost(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutLost, deadline }),
		},
		{
			name:   "stale for an InFlight status: unchanged",
			prev:   inFlight(),
			listed: false,
			want:   inFlight(),
		},
		{
			name: "stale for an InFlight status past the deadline: TimedOut",
			prev: inFlight(),
			now:  deadline,
			want: with(inFlight(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutInFlight, deadline }),
		},
		{
			name: "stale for a final status: unchanged",
			prev: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
			want: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "no status begun: unchanged",
			prev: Status{},
			want: Status{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.now
			if n.IsZero() {
				n = now
			}
			got := AfterJobList(tt.prev, tt.listed, tt.state, tt.err, n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AfterJobList (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAfterJobListLongMessage: the Failure of a Failed status keeps to
// maxMessageLen with the job's state added.
func TestAfterJobListLongMessage(t *testing.T) {
	prev := with(unconfirmedFrom(InFlight, true), func(s *Status) { s.Failure = strings.Repeat("é", maxMessageLen/2) })
	got := AfterJobList(prev, true, flinkapi.JobRunning, nil, at(time.Minute))
	if got.State != Failed {
		t.Fatalf("state %s, want Failed", got.State)
	}
	checkMessage(t, "Failure", got.Failure)
}

// TestJobListRoundTrip walks the answers of package lifecycle's two
// confirmations: a stop whose answer was lost, sent again after Flink
// forgot the trigger id and the job finished, and a JobManager failover
// that answered 404 for a job that runs.
func TestJobListRoundTrip(t *testing.T) {
	now := at(time.Minute)
	// The stop, sent again, starts an operation that fails: the job ended.
	st := AfterTrigger(pending(), flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig}, nil, now)
	st = AfterPoll(st, failed("java.util.concurrent.CompletionException", traceJobNotFound), nil, now)
	if !st.NeedsJobList() || !st.OperationFailed || st.Before != InFlight || st.Final() {
		t.Fatalf("after FlinkJobNotFoundException: %+v", st)
	}
	st = AfterJobList(st, false, "", errLeader, now)
	if !st.NeedsJobList() || st.Attempts != 1 || !st.unknown() {
		t.Fatalf("after a failed list: %+v", st)
	}
	st = AfterJobList(st, true, flinkapi.JobFinished, nil, now)
	if !st.NeedsRecovery() || st.Before != "" || st.OperationFailed || st.Failure != "" || st.unknown() {
		t.Fatalf("after the list shows the job FINISHED: %+v", st)
	}
	st = Recover(st, history(sp(7, 0, flinkapi.CheckpointCompleted, loc)), now)
	if st.State != Succeeded || st.Location != loc || !st.Recovered {
		t.Fatalf("after the recovery: %+v", st)
	}

	// A 404 while the JobManager fails over; the list shows the job.
	st = AfterTrigger(pending(), flinkapi.Operation{}, errJobGone, now)
	if !st.NeedsJobList() || st.OperationFailed || st.Before != Pending {
		t.Fatalf("after a 404 for the job: %+v", st)
	}
	st = AfterJobList(st, true, flinkapi.JobRunning, nil, now)
	if !st.NeedsTrigger() || st.TriggerID != trig || st.Failure != "" {
		t.Fatalf("after the list shows the job RUNNING: %+v", st)
	}
}
