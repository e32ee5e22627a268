package savepoint

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/google/go-cmp/cmp"
)

func TestBegin(t *testing.T) {
	got := Begin(flinkapi.OpStopWithSavepoint, job, trig, ReasonStop, t0, at(time.Minute))
	want := Status{
		Kind: flinkapi.OpStopWithSavepoint, JobID: job, TriggerID: trig, TriggerTime: t0,
		Deadline: at(time.Minute), Reason: ReasonStop, State: Pending, LastUpdate: t0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Begin (-want +got):\n%s", diff)
	}
	if !got.NeedsTrigger() || got.NeedsPoll() || got.NeedsRecovery() || got.Final() || !got.Active() {
		t.Errorf("Begin: a Pending status needs the trigger and nothing else: %+v", got)
	}
	if op := got.Operation(); op != (flinkapi.Operation{Kind: flinkapi.OpStopWithSavepoint, JobID: job, TriggerID: trig}) {
		t.Errorf("Operation() = %v", op)
	}
}

func TestAfterTrigger(t *testing.T) {
	now := at(time.Second)
	tests := []struct {
		name string
		prev Status
		op   flinkapi.Operation
		err  error
		want Status
	}{
		{
			name: "202 acknowledged: InFlight",
			prev: pending(),
			op:   flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig},
			want: with(pending(), func(s *Status) { s.State, s.LastUpdate = InFlight, now }),
		},
		{
			name: "202 with Flink's own trigger id (before 1.15): recorded",
			prev: with(pending(), func(s *Status) { s.TriggerID = "" }),
			op:   flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trigNew},
			want: with(pending(), func(s *Status) { s.TriggerID, s.State, s.LastUpdate = trigNew, InFlight, now }),
		},
		{
			name: "202 after transient answers: attempts cleared",
			prev: with(pending(), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 3, "x", 503 }),
			op:   flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig},
			want: with(pending(), func(s *Status) { s.State, s.LastUpdate = InFlight, now }),
		},
		{
			name: "503: still Pending, attempt counted",
			prev: pending(),
			err:  errLeader,
			want: with(pending(), func(s *Status) {
				s.Attempts, s.LastError, s.LastErrorCode, s.LastUpdate = 1, "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503, now
			}),
		},
		{
			name: "connection refused: still Pending",
			prev: with(pending(), func(s *Status) { s.Attempts = 2 }),
			err:  errRefused,
			want: with(pending(), func(s *Status) { s.Attempts, s.LastError, s.LastUpdate = 3, "connection refused", now }),
		},
		{
			name: "404 job: Unconfirmed, back to Pending if the job list shows the job",
			prev: pending(),
			err:  errJobGone,
			want: with(pending(), func(s *Status) {
				s.State, s.Before, s.Failure, s.LastUpdate = Unconfirmed, Pending, "Job "+string(job)+" not found", now
			}),
		},
		{
			name: "404 job after transient answers: Unconfirmed, the count kept",
			prev: with(pending(), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 2, "x", 503 }),
			err:  errJobGone,
			want: with(pending(), func(s *Status) {
				s.State, s.Before, s.Failure, s.LastUpdate = Unconfirmed, Pending, "Job "+string(job)+" not found", now
				s.Attempts, s.LastError, s.LastErrorCode = 2, "x", 503
			}),
		},
		{
			name: "500 FlinkJobNotFoundException: Unconfirmed",
			prev: pending(),
			err:  errJobGone500,
			want: with(pending(), func(s *Status) {
				s.State, s.Before, s.Failure, s.LastUpdate = Unconfirmed, Pending, msgJobGone500, now
			}),
		},
		{
			name: "stale answer for an Unconfirmed status: only the deadline applies",
			prev: unconfirmedFrom(Pending, false),
			op:   flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig},
			want: unconfirmedFrom(Pending, false),
		},
		{
			name: "409: JobTerminal",
			prev: pending(),
			err:  errTerminal,
			want: with(pending(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = JobTerminal, "The job "+string(job)+" already reached another terminal state (FAILED).", now
			}),
		},
		{
			name: "400 no target directory: Failed with Flink's message",
			prev: pending(),
			err:  errNoTarget,
			want: with(pending(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = Failed, "Config key [state.savepoints.dir] is not set. Property [target-directory] must be provided.", now
			}),
		},
		{
			name: "404 unknown route: Failed",
			prev: pending(),
			err:  errRoute,
			want: with(pending(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = Failed, "Not found: /jobs/"+string(job)+"/stop", now
			}),
		},
		{
			name: "unsupported, nothing sent: Failed",
			prev: pending(),
			err:  errUnsupported,
			want: with(pending(), func(s *Status) { s.State, s.Failure, s.LastUpdate = Failed, errUnsupported.Error(), now }),
		},
		{
			name: "invalid input, nothing sent: Failed",
			prev: pending(),
			err:  errInvalid,
			want: with(pending(), func(s *Status) { s.State, s.Failure, s.LastUpdate = Failed, errInvalid.Error(), now }),
		},
		{
			name: "transient past the deadline: TimedOut",
			prev: pending(),
			err:  errLeader,
			want: with(pending(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutPending, at(10*time.Minute)
				s.Attempts, s.LastError, s.LastErrorCode = 1, "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503
			}),
		},
		{
			name: "late answer for an InFlight status: unchanged",
			prev: inFlight(),
			err:  errNoTarget,
			want: inFlight(),
		},
		{
			name: "late answer for a Succeeded status: unchanged",
			prev: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
			op:   flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trigNew},
			want: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "no status begun: unchanged",
			prev: Status{},
			op:   flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig},
			want: Status{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := now
			if tt.want.State == TimedOut {
				now = at(10 * time.Minute)
			}
			got := AfterTrigger(tt.prev, tt.op, tt.err, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AfterTrigger (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAfterTriggerTransient(t *testing.T) {
	now := at(time.Second)
	for _, tt := range transientErrors {
		t.Run(tt.name, func(t *testing.T) {
			got := AfterTrigger(pending(), flinkapi.Operation{}, tt.err, now)
			want := with(pending(), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode, s.LastUpdate = 1, tt.msg, tt.code, now })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("AfterTrigger (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAfterPoll(t *testing.T) {
	now := at(time.Minute)
	done := func(prev Status, f func(*Status)) Status {
		return with(prev, func(s *Status) { s.LastUpdate = now; f(s) })
	}
	const rootNotRunning = "Checkpoint triggering task Source: numbers (1/2) of job a1b2c3d4e5f60718293a4b5c6d7e8f90 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running."
	tests := []struct {
		name string
		prev Status
		res  *flinkapi.OperationResult
		err  error
		want Status
	}{
		{
			name: "IN_PROGRESS: InFlight",
			prev: inFlight(),
			res:  inProgress(),
			want: done(inFlight(), func(s *Status) {}),
		},
		{
			name: "IN_PROGRESS for a Pending status: InFlight",
			prev: pending(),
			res:  inProgress(),
			want: done(pending(), func(s *Status) { s.State = InFlight }),
		},
		{
			name: "IN_PROGRESS for a Lost status: InFlight again",
			prev: lost(),
			res:  inProgress(),
			want: done(lost(), func(s *Status) { s.State = InFlight }),
		},
		{
			name: "IN_PROGRESS after transient answers: attempts cleared",
			prev: with(inFlight(), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 4, "x", 502 }),
			res:  inProgress(),
			want: done(inFlight(), func(s *Status) {}),
		},
		{
			name: "COMPLETED with location: Succeeded",
			prev: inFlight(),
			res:  completed(loc),
			want: done(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "COMPLETED with location, for a Lost status: Succeeded",
			prev: lost(),
			res:  completed(loc),
			want: done(lost(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "COMPLETED past the deadline: Succeeded, the answer wins",
			prev: inFlight(),
			res:  completed(loc),
			want: done(inFlight(), func(s *Status) { s.State, s.Location, s.LastUpdate = Succeeded, loc, at(time.Hour) }),
		},
		{
			name: "COMPLETED with failure: Failed with the root cause",
			prev: inFlight(),
			res:  failed("java.util.concurrent.CompletionException", traceExpired),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = Failed, "Checkpoint expired before completing." }),
		},
		{
			name: "COMPLETED with failure: suppressed causes are not the root",
			prev: inFlight(),
			res:  failed("org.apache.flink.runtime.rest.handler.RestHandlerException", traceNotRunning),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = Failed, rootNotRunning }),
		},
		{
			name: "COMPLETED with failure without trace: the class",
			prev: inFlight(),
			res:  failed("org.apache.flink.runtime.checkpoint.CheckpointException", ""),
			want: done(inFlight(), func(s *Status) {
				s.State, s.Failure = Failed, "org.apache.flink.runtime.checkpoint.CheckpointException"
			}),
		},
		{
			name: "COMPLETED, job not found: Unconfirmed, the operation failed",
			prev: inFlight(),
			res:  failed("java.util.concurrent.CompletionException", traceJobNotFound),
			want: done(inFlight(), func(s *Status) {
				s.State, s.Before, s.OperationFailed, s.Failure = Unconfirmed, InFlight, true, "Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)"
			}),
		},
		{
			name: "COMPLETED, job not found, for a Lost status: Unconfirmed, back to Lost",
			prev: with(lost(), func(s *Status) { s.Attempts, s.LastError = 1, "x" }),
			res:  failed(jobNotFoundClass, ""),
			want: done(lost(), func(s *Status) {
				s.State, s.Before, s.OperationFailed, s.Failure = Unconfirmed, Lost, true, jobNotFoundClass
				s.Attempts, s.LastError = 1, "x"
			}),
		},
		{
			name: "COMPLETED, stop failed after the savepoint: Failed with its location",
			prev: with(inFlight(), func(s *Status) { s.Kind = flinkapi.OpStopWithSavepoint }),
			res:  failed("java.util.concurrent.CompletionException", traceStopFailed),
			want: done(inFlight(), func(s *Status) {
				s.Kind, s.State, s.Location = flinkapi.OpStopWithSavepoint, Failed, loc
				s.Failure = "Inconsistent execution state after stopping with savepoint. At least one execution is still in one of the following states: FAILED."
			}),
		},
		{
			name: "COMPLETED, stop failed after the savepoint, then the job vanished: JobGone with its location",
			prev: inFlight(),
			res:  failed("x.Y", traceStopFailed+"Caused by: "+jobNotFoundClass+": Could not find Flink job (x)\n"),
			want: done(inFlight(), func(s *Status) { s.State, s.Location, s.Failure = JobGone, loc, "Could not find Flink job (x)" }),
		},
		{
			name: "COMPLETED with neither location nor failure: Failed",
			prev: inFlight(),
			res:  completed(""),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = Failed, msgCompletedNoLocation }),
		},
		{
			name: "404 trigger id: Lost, never Failed",
			prev: inFlight(),
			err:  errTriggerGone,
			want: done(inFlight(), func(s *Status) { s.State = Lost }),
		},
		{
			name: "404 trigger id, before Flink 1.15: Lost",
			prev: inFlight(),
			err:  errTriggerOld,
			want: done(inFlight(), func(s *Status) { s.State = Lost }),
		},
		{
			name: "404 trigger id for a Lost status: Lost",
			prev: with(lost(), func(s *Status) { s.Attempts, s.LastError = 1, "x" }),
			err:  errTriggerGone,
			want: done(lost(), func(s *Status) {}),
		},
		{
			name: "404 trigger id for a Pending status: Pending, send the trigger again",
			prev: pending(),
			err:  errTriggerGone,
			want: done(pending(), func(s *Status) {}),
		},
		{
			name: "404 unknown route: Lost",
			prev: inFlight(),
			err:  errRoute,
			want: done(inFlight(), func(s *Status) { s.State = Lost }),
		},
		{
			name: "404 job: Unconfirmed, back to InFlight if the job list shows the job",
			prev: inFlight(),
			err:  errJobGone,
			want: done(inFlight(), func(s *Status) { s.State, s.Before, s.Failure = Unconfirmed, InFlight, "Job "+string(job)+" not found" }),
		},
		{
			name: "404 job for a Lost status (its checkpoint statistics): Unconfirmed, back to Lost",
			prev: lost(),
			err:  errJobGone,
			want: done(lost(), func(s *Status) { s.State, s.Before, s.Failure = Unconfirmed, Lost, "Job "+string(job)+" not found" }),
		},
		{
			name: "500 FlinkJobNotFoundException: Unconfirmed",
			prev: inFlight(),
			err:  errJobGone500,
			want: done(inFlight(), func(s *Status) { s.State, s.Before, s.Failure = Unconfirmed, InFlight, msgJobGone500 }),
		},
		{
			name: "500 without FlinkJobNotFoundException: transient",
			prev: inFlight(),
			err:  errInternal,
			want: done(inFlight(), func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode = 1, "Internal server error.", 500 }),
		},
		{
			name: "Unconfirmed, IN_PROGRESS: InFlight, the job list no longer needed",
			prev: unconfirmedFrom(InFlight, false),
			res:  inProgress(),
			want: done(inFlight(), func(s *Status) {}),
		},
		{
			name: "Unconfirmed after a failed operation, COMPLETED with a location: Succeeded",
			prev: unconfirmedFrom(InFlight, true),
			res:  completed(loc),
			want: done(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "Unconfirmed from Pending, 404 trigger id: Pending, send the trigger again",
			prev: unconfirmedFrom(Pending, false),
			err:  errTriggerGone,
			want: done(pending(), func(s *Status) {}),
		},
		{
			name: "Unconfirmed from InFlight, 404 trigger id: Lost",
			prev: unconfirmedFrom(InFlight, false),
			err:  errTriggerGone,
			want: done(lost(), func(s *Status) {}),
		},
		{
			name: "Unconfirmed, 404 job again: Unconfirmed, the failed operation remembered",
			prev: unconfirmedFrom(Lost, true),
			err:  errJobGone,
			want: done(unconfirmedFrom(Lost, true), func(s *Status) { s.Failure = "Job " + string(job) + " not found" }),
		},
		{
			name: "Unconfirmed, 503: still Unconfirmed, attempt counted",
			prev: unconfirmedFrom(InFlight, false),
			err:  errLeader,
			want: done(unconfirmedFrom(InFlight, false), func(s *Status) {
				s.Attempts, s.LastError, s.LastErrorCode = 1, "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503
			}),
		},
		{
			name: "Unconfirmed, 409: JobTerminal",
			prev: unconfirmedFrom(InFlight, false),
			err:  errTerminal,
			want: done(inFlight(), func(s *Status) {
				s.State, s.Failure = JobTerminal, "The job "+string(job)+" already reached another terminal state (FAILED)."
			}),
		},
		{
			name: "409: JobTerminal",
			prev: inFlight(),
			err:  errTerminal,
			want: done(inFlight(), func(s *Status) {
				s.State, s.Failure = JobTerminal, "The job "+string(job)+" already reached another terminal state (FAILED)."
			}),
		},
		{
			name: "400: Failed, permanent, with Flink's message",
			prev: inFlight(),
			err:  errNoTarget,
			want: done(inFlight(), func(s *Status) {
				s.State, s.Failure = Failed, "Config key [state.savepoints.dir] is not set. Property [target-directory] must be provided."
			}),
		},
		{
			name: "invalid input: Failed",
			prev: inFlight(),
			err:  errInvalid,
			want: done(inFlight(), func(s *Status) { s.State, s.Failure = Failed, errInvalid.Error() }),
		},
		{
			name: "no error and no result: nothing learned",
			prev: inFlight(),
			want: done(inFlight(), func(s *Status) { s.Attempts, s.LastError = 1, msgNoResult }),
		},
		{
			name: "unknown operation status: nothing learned",
			prev: inFlight(),
			res:  &flinkapi.OperationResult{Status: "QUEUED"},
			want: done(inFlight(), func(s *Status) { s.Attempts, s.LastError = 1, msgUnknownStatus }),
		},
		{
			name: "IN_PROGRESS past the deadline: TimedOut",
			prev: inFlight(),
			res:  inProgress(),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutInFlight, at(time.Hour) }),
		},
		{
			name: "Succeeded is sticky: a later failure changes nothing",
			prev: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
			res:  failed("x.Y", traceExpired),
			want: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "Succeeded is sticky: another location changes nothing",
			prev: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
			res:  completed("s3://elsewhere"),
			want: with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }),
		},
		{
			name: "Failed is sticky: a 404 changes nothing",
			prev: with(inFlight(), func(s *Status) { s.State, s.Failure = Failed, "boom" }),
			err:  errTriggerGone,
			want: with(inFlight(), func(s *Status) { s.State, s.Failure = Failed, "boom" }),
		},
		{
			name: "TimedOut keeps its state but gains a late location",
			prev: with(inFlight(), func(s *Status) { s.State, s.Failure = TimedOut, msgTimedOutInFlight }),
			res:  completed(loc),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure, s.Location = TimedOut, msgTimedOutInFlight, loc }),
		},
		{
			name: "LostForGood gains the location of a late stop failure",
			prev: with(inFlight(), func(s *Status) { s.State, s.Failure = LostForGood, msgLostForGood }),
			res:  failed("x.Y", traceStopFailed),
			want: done(inFlight(), func(s *Status) { s.State, s.Failure, s.Location = LostForGood, msgLostForGood, loc }),
		},
		{
			name: "TimedOut: a late IN_PROGRESS changes nothing",
			prev: with(inFlight(), func(s *Status) { s.State, s.Failure = TimedOut, msgTimedOutInFlight }),
			res:  inProgress(),
			want: with(inFlight(), func(s *Status) { s.State, s.Failure = TimedOut, msgTimedOutInFlight }),
		},
		{
			name: "no status begun: unchanged",
			prev: Status{},
			res:  completed(loc),
			want: Status{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := now
			if tt.want.LastUpdate.Equal(at(time.Hour)) {
				now = at(time.Hour)
			}
			got := AfterPoll(tt.prev, tt.res, tt.err, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AfterPoll (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAfterPollTransient(t *testing.T) {
	now := at(time.Minute)
	for _, prev := range []Status{pending(), inFlight(), lost(), unconfirmedFrom(Lost, true)} {
		for _, tt := range transientErrors {
			t.Run(string(prev.State)+"/"+tt.name, func(t *testing.T) {
				prev := with(prev, func(s *Status) { s.Attempts = 2 })
				got := AfterPoll(prev, nil, tt.err, now)
				want := with(prev, func(s *Status) { s.Attempts, s.LastError, s.LastErrorCode, s.LastUpdate = 3, tt.msg, tt.code, now })
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("AfterPoll (-want +got):\n%s", diff)
				}
				if !got.unknown() {
					t.Errorf("Unknown() = false after a transient answer")
				}
			})
		}
	}
}

func TestCheckDeadline(t *testing.T) {
	deadline := at(10 * time.Minute)
	tests := []struct {
		name string
		prev Status
		now  time.Time
		want Status
	}{
		{"Pending before the deadline", pending(), deadline.Add(-time.Nanosecond), pending()},
		{"Pending at the deadline", pending(), deadline,
			with(pending(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutPending, deadline })},
		{"InFlight past the deadline", inFlight(), deadline.Add(time.Hour),
			with(inFlight(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutInFlight, deadline.Add(time.Hour)
			})},
		{"Lost past the deadline", lost(), deadline.Add(time.Second),
			with(lost(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutLost, deadline.Add(time.Second)
			})},
		{"Unconfirmed before the deadline", unconfirmedFrom(InFlight, true), deadline.Add(-time.Nanosecond), unconfirmedFrom(InFlight, true)},
		{"Unconfirmed from Pending at the deadline: what Pending says", unconfirmedFrom(Pending, false), deadline,
			with(pending(), func(s *Status) { s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutPending, deadline })},
		{"Unconfirmed from InFlight past the deadline: what InFlight says", unconfirmedFrom(InFlight, true), deadline.Add(time.Hour),
			with(inFlight(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutInFlight, deadline.Add(time.Hour)
			})},
		{"Unconfirmed from Lost past the deadline: what Lost says", unconfirmedFrom(Lost, false), deadline.Add(time.Second),
			with(lost(), func(s *Status) {
				s.State, s.Failure, s.LastUpdate = TimedOut, msgTimedOutLost, deadline.Add(time.Second)
			})},
		{"no deadline", with(inFlight(), func(s *Status) { s.Deadline = time.Time{} }), deadline.Add(1000 * time.Hour),
			with(inFlight(), func(s *Status) { s.Deadline = time.Time{} })},
		{"Succeeded past the deadline: sticky", with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc }), deadline.Add(time.Hour),
			with(inFlight(), func(s *Status) { s.State, s.Location = Succeeded, loc })},
		{"Failed past the deadline: sticky", with(inFlight(), func(s *Status) { s.State = Failed }), deadline.Add(time.Hour),
			with(inFlight(), func(s *Status) { s.State = Failed })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, CheckDeadline(tt.prev, tt.now)); diff != "" {
				t.Errorf("CheckDeadline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatePredicates(t *testing.T) {
	tests := []struct {
		state                                               State
		active, final, trigger, poll, recoveryNeed, jobList bool
	}{
		{"", false, false, false, false, false, false},
		{Pending, true, false, true, false, false, false},
		{InFlight, true, false, false, true, false, false},
		{Lost, true, false, false, false, true, false},
		{Unconfirmed, true, false, false, false, false, true},
		{Succeeded, false, true, false, false, false, false},
		{Failed, false, true, false, false, false, false},
		{LostForGood, false, true, false, false, false, false},
		{JobGone, false, true, false, false, false, false},
		{JobTerminal, false, true, false, false, false, false},
		{TimedOut, false, true, false, false, false, false},
		{"SomethingNew", false, true, false, false, false, false},
	}
	for _, tt := range tests {
		s := Status{State: tt.state}
		got := [6]bool{s.Active(), s.Final(), s.NeedsTrigger(), s.NeedsPoll(), s.NeedsRecovery(), s.NeedsJobList()}
		want := [6]bool{tt.active, tt.final, tt.trigger, tt.poll, tt.recoveryNeed, tt.jobList}
		if got != want {
			t.Errorf("%q: Active, Final, NeedsTrigger, NeedsPoll, NeedsRecovery, NeedsJobList = %v, want %v", tt.state, got, want)
		}
	}
}

// TestStateStrings pins the strings stored in Kubernetes objects.
func TestStateStrings(t *testing.T) {
	got := []string{string(Pending), string(InFlight), string(Succeeded), string(Failed), string(Lost),
		string(LostForGood), string(JobGone), string(JobTerminal), string(TimedOut), string(Unconfirmed)}
	want := []string{"Pending", "InFlight", "Succeeded", "Failed", "Lost", "LostForGood", "JobGone", "JobTerminal", "TimedOut", "Unconfirmed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state strings changed (-want +got):\n%s", diff)
	}
}
