package savepoint

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// event is one thing that can happen to a savepoint: an answer to the
// trigger or to a poll, checkpoint statistics for Recover, Flink's job
// list, or time passing.
type event struct {
	kind      string // "trigger", "poll", "recover", "joblist", "deadline"
	op        flinkapi.Operation
	res       *flinkapi.OperationResult
	err       error
	stats     *flinkapi.CheckpointStatistics
	listed    bool              // joblist: the job is in the list
	state     flinkapi.JobState // joblist: its state there
	transient bool              // says nothing definite
}

func (e event) String() string {
	switch {
	case e.err != nil:
		return fmt.Sprintf("%s err %v", e.kind, e.err)
	case e.res != nil:
		return fmt.Sprintf("%s %+v", e.kind, *e.res)
	case e.stats != nil:
		return fmt.Sprintf("%s %d entries", e.kind, len(e.stats.History))
	case e.kind == "joblist":
		return fmt.Sprintf("%s listed %v %s", e.kind, e.listed, e.state)
	}
	return e.kind
}

var locations = []string{"s3://b/sp-1", "s3://b/sp-2", "hdfs://nn/sp-3"}

func randomEvent(rng *rand.Rand, tr time.Time) event {
	transientErr := func() error { return transientErrors[rng.IntN(len(transientErrors))].err }
	definiteErrs := []error{errTriggerGone, errTriggerOld, errJobGone, errJobGone500, errRoute, errTerminal, errNoTarget, errInvalid, errUnsupported}
	switch rng.IntN(5) {
	case 0:
		e := event{kind: "trigger"}
		switch rng.IntN(3) {
		case 0:
			e.op = flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig}
		case 1:
			e.err, e.transient = transientErr(), true
		default:
			e.err = definiteErrs[rng.IntN(len(definiteErrs))]
		}
		return e
	case 1, 2:
		e := event{kind: "poll"}
		switch rng.IntN(8) {
		case 0:
			e.res = inProgress()
		case 1:
			e.res = completed(locations[rng.IntN(len(locations))])
		case 2:
			e.res = failed("x.Y", []string{traceExpired, traceNotRunning, traceJobNotFound, traceStopFailed, "", traceStopFailed + traceJobNotFound}[rng.IntN(6)])
		case 3:
			e.res = completed("")
		case 4, 5:
			e.err, e.transient = transientErr(), true
		case 6:
			e.transient = true // no result, no error
		default:
			e.err = definiteErrs[rng.IntN(len(definiteErrs))]
		}
		return e
	case 3:
		e := event{kind: "joblist"}
		switch rng.IntN(4) {
		case 0:
			e.err, e.transient = transientErr(), true
		case 1:
			// not listed
		default:
			states := []flinkapi.JobState{flinkapi.JobRunning, flinkapi.JobRestarting, flinkapi.JobFinished, flinkapi.JobCanceled, flinkapi.JobFailed, flinkapi.JobSuspended, ""}
			e.listed, e.state = true, states[rng.IntN(len(states))]
		}
		return e
	default:
		if rng.IntN(2) == 0 {
			return event{kind: "deadline"}
		}
		var h []flinkapi.CheckpointStats
		for i := range rng.IntN(4) {
			status := []flinkapi.CheckpointStatus{flinkapi.CheckpointCompleted, flinkapi.CheckpointInProgress, flinkapi.CheckpointFailed}[rng.IntN(3)]
			cs := flinkapi.CheckpointStats{
				ID: int64(i), Status: status, IsSavepoint: rng.IntN(2) == 0,
				TriggerTime: tr.Add(time.Duration(rng.IntN(120)-60) * time.Second),
			}
			if status == flinkapi.CheckpointCompleted {
				cs.ExternalPath = locations[rng.IntN(len(locations))]
			}
			h = append(h, cs)
		}
		return event{kind: "recover", stats: &flinkapi.CheckpointStatistics{History: h}}
	}
}

func apply(s Status, e event, now time.Time) Status {
	switch e.kind {
	case "trigger":
		return AfterTrigger(s, e.op, e.err, now)
	case "poll":
		return AfterPoll(s, e.res, e.err, now)
	case "recover":
		return Recover(s, e.stats, now)
	case "joblist":
		return AfterJobList(s, e.listed, e.state, e.err, now)
	}
	return CheckDeadline(s, now)
}

// TestRandomAnswerSequences feeds random sequences of answers to a
// savepoint and checks the invariants after every step: a location once seen
// is never dropped or replaced, a transient answer never fails a savepoint,
// final states are sticky, the deadline ends every wait, an answer that
// Flink does not know the job ends nothing before its job list confirms
// it, and a 404 never fails a savepoint, confirmed or not.
func TestRandomAnswerSequences(t *testing.T) {
	const sequences, steps = 5000, 40
	for seed := range uint64(sequences) {
		rng := rand.New(rand.NewPCG(seed, 7))
		now := t0
		s := pending()
		if rng.IntN(4) == 0 {
			s.Deadline = time.Time{}
		}
		var trail []string
		for range steps {
			now = now.Add(time.Duration(rng.IntN(60)) * time.Second)
			e := randomEvent(rng, s.TriggerTime)
			next := apply(s, e, now)
			trail = append(trail, fmt.Sprintf("%v -> %s", e, next.State))
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d: "+format+"\nfrom %+v\nto   %+v\ntrail:\n%v", append(append([]any{seed}, args...), s, next, trail)...)
			}
			if s.Location != "" && next.Location != s.Location {
				fail("location %q dropped or replaced", s.Location)
			}
			if s.Final() && next.State != s.State {
				fail("final state %s changed", s.State)
			}
			// A trigger's answer counts only for a Pending status, the job
			// list only for an Unconfirmed one; any other status takes
			// them as stale.
			applies := s.Active() && (e.kind != "trigger" || s.State == Pending) && (e.kind != "joblist" || s.State == Unconfirmed)
			if (e.kind == "trigger" || e.kind == "joblist") && !applies && next != CheckDeadline(s, now) {
				fail("a stale %s answer changed the status", e.kind)
			}
			if flinkapi.IsJobNotFound(e.err) && applies && next.Final() && next.State != TimedOut {
				fail("an answer that Flink does not know the job ended the savepoint unconfirmed")
			}
			if e.kind == "joblist" && applies && next.State == Failed && (!s.OperationFailed || !e.listed || e.state.IsGloballyTerminal()) {
				fail("the job list failed a savepoint whose operation had not failed, or of a job that ended")
			}
			if e.kind == "joblist" && applies && next.State == JobGone && (e.listed || e.err != nil) {
				fail("JobGone although the job list holds the job or was not read")
			}
			if next.State != Unconfirmed && (next.Before != "" || next.OperationFailed) {
				fail("%s with Before %q, OperationFailed %v", next.State, next.Before, next.OperationFailed)
			}
			if next.State == Unconfirmed && !next.Before.active() {
				fail("Unconfirmed with nothing to go back to: %q", next.Before)
			}
			if e.transient && applies {
				switch {
				case next.State == Failed:
					fail("a transient answer failed the savepoint")
				case next.State != s.State && next.State != TimedOut:
					fail("a transient answer changed the state")
				case next.State == TimedOut && now.Before(s.Deadline):
					fail("timed out before the deadline")
				case next.Attempts != s.Attempts+1 || next.LastError == "":
					fail("a transient answer was not counted")
				}
			}
			if next.Active() && !next.Deadline.IsZero() && !now.Before(next.Deadline) {
				fail("still active past the deadline")
			}
			if next.Active() && next.Location != "" {
				fail("an active status has a location")
			}
			if next.State == Succeeded && next.Location == "" {
				fail("Succeeded without a location")
			}
			if next.State == Failed && s.State != Failed && !s.OperationFailed && (e.kind == "joblist" || e.kind == "poll" && isNotFound(e.err)) {
				fail("a 404 failed the savepoint")
			}
			if _, ok := RecordOf(next); ok != (next.Location != "") {
				fail("RecordOf disagrees with Location")
			}
			if next.Failure != "" {
				checkMessage(t, "Failure", next.Failure)
			}
			if next.LastError != "" {
				checkMessage(t, "LastError", next.LastError)
			}
			s = next
		}
	}
}

// TestTransientAnswersNeverFail sends only transient answers, many times
// over, to every active state.
func TestTransientAnswersNeverFail(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, start := range []Status{pending(), inFlight(), lost(), unconfirmedFrom(InFlight, true), unconfirmedFrom(Pending, false)} {
		s := with(start, func(s *Status) { s.Deadline = time.Time{} })
		counted := 0
		for i := range 10000 {
			tt := transientErrors[rng.IntN(len(transientErrors))]
			now := at(time.Duration(i) * time.Second)
			switch rng.IntN(3) {
			case 0:
				s = AfterPoll(s, nil, tt.err, now)
				counted++
			case 1:
				s = AfterTrigger(s, flinkapi.Operation{}, tt.err, now)
				if start.State == Pending {
					counted++
				}
			default:
				s = AfterJobList(s, rng.IntN(2) == 0, flinkapi.JobRunning, tt.err, now)
				if start.State == Unconfirmed {
					counted++
				}
			}
			if s.State != start.State {
				t.Fatalf("%s became %s after %d transient answers", start.State, s.State, i+1)
			}
		}
		if s.Attempts != counted {
			t.Errorf("%s: %d attempts counted, want %d", start.State, s.Attempts, counted)
		}
	}
}

// FuzzAfterPoll derives the next Status from arbitrary answers, Flink's
// error messages and stack traces, and checks the invariants.
func FuzzAfterPoll(f *testing.F) {
	f.Add(uint8(1), 503, "Service temporarily unavailable", "", "", "", false)
	f.Add(uint8(1), 404, "There is no savepoint operation with triggerId=x for job y.", "", "", "", false)
	f.Add(uint8(1), 404, "Job x not found", "", "", "", true)
	f.Add(uint8(2), 0, "", "java.lang.Exception", traceStopFailed, "", false)
	f.Add(uint8(0), 0, "", "", "", "s3://b/sp", true)
	f.Add(uint8(3), 400, "Request did not match expected format", "", "", "", false)
	f.Fuzz(func(t *testing.T, state uint8, code int, msg, class, trace, location string, inProgressAnswer bool) {
		states := []State{Pending, InFlight, Lost, Unconfirmed, Succeeded, Failed, TimedOut, LostForGood, JobGone, JobTerminal, ""}
		prev := with(pending(), func(s *Status) { s.State = states[int(state)%len(states)] })
		if prev.State == Unconfirmed && state&64 != 0 {
			prev.Before, prev.OperationFailed, prev.Failure = InFlight, state&32 != 0, "Job x not found"
		}
		if prev.State == Succeeded || state >= 128 && prev.Final() {
			prev.Location = "s3://b/known"
		}
		var (
			res *flinkapi.OperationResult
			err error
		)
		switch {
		case code != 0:
			err = &flinkapi.APIError{StatusCode: code, Method: "GET", Path: pollPath(), Errors: []string{msg}}
		case inProgressAnswer && location == "" && trace == "":
			res = inProgress()
		default:
			res = &flinkapi.OperationResult{Status: flinkapi.StatusCompleted, Location: location}
			if trace != "" || class != "" {
				res.Failure = &flinkapi.FailureCause{Class: class, StackTrace: trace}
			}
		}
		now := at(time.Minute)
		next := AfterPoll(prev, res, err, now)
		if prev.Location != "" && next.Location != prev.Location {
			t.Fatalf("location %q dropped: %+v", prev.Location, next)
		}
		if prev.Final() && next.State != prev.State {
			t.Fatalf("final %s became %s", prev.State, next.State)
		}
		transientCode := code != 0 && code != 400 && code != 404 && code != 409 && !flinkapi.IsJobNotFound(err)
		if prev.Active() && transientCode && next.State != prev.State {
			t.Fatalf("transient %d changed %s to %s", code, prev.State, next.State)
		}
		if code == 404 && next.State == Failed && prev.State != Failed {
			t.Fatalf("404 failed the savepoint")
		}
		if prev.Active() && flinkapi.IsJobNotFound(err) && next.State != Unconfirmed {
			t.Fatalf("an answer that Flink does not know the job made %s %s, not Unconfirmed", prev.State, next.State)
		}
		if next.State != Unconfirmed && (next.Before != "" || next.OperationFailed) {
			t.Fatalf("%s with Before %q, OperationFailed %v", next.State, next.Before, next.OperationFailed)
		}
		if next.Active() && next.Location != "" {
			t.Fatalf("an active status has a location: %+v", next)
		}
		if next.State == Succeeded && next.Location == "" {
			t.Fatalf("Succeeded without a location")
		}
		if next.Failure != "" && next.Failure != prev.Failure {
			checkMessage(t, "Failure", next.Failure)
		}
		if next.LastError != "" {
			checkMessage(t, "LastError", next.LastError)
		}
	})
}

// isNotFound reports a 404 answer.
func isNotFound(err error) bool {
	ae, ok := findError[*flinkapi.APIError](err)
	return ok && ae.StatusCode == 404
}

// FuzzAfterJobList applies arbitrary job lists, list errors and statuses
// and checks the invariants: nothing but an Unconfirmed status takes the
// list, a failed read only counts, only a listed job that runs fails a
// savepoint whose operation failed, only an unlisted job is JobGone, and a
// location is never dropped.
func FuzzAfterJobList(f *testing.F) {
	f.Add(uint8(3), uint8(1), false, true, "RUNNING", 0, "")
	f.Add(uint8(3), uint8(1), true, true, "RUNNING", 0, "")
	f.Add(uint8(3), uint8(2), true, true, "FINISHED", 0, "")
	f.Add(uint8(3), uint8(0), false, false, "", 0, "")
	f.Add(uint8(3), uint8(9), false, true, "RESTARTING", 503, "Service temporarily unavailable")
	f.Add(uint8(1), uint8(0), false, false, "", 0, "")
	f.Add(uint8(4), uint8(0), false, true, "RUNNING", 0, "")
	f.Fuzz(func(t *testing.T, state, before uint8, opFailed, listed bool, jobState string, code int, msg string) {
		states := []State{Pending, InFlight, Lost, Unconfirmed, Succeeded, Failed, TimedOut, LostForGood, JobGone, JobTerminal, ""}
		prev := with(pending(), func(s *Status) { s.State = states[int(state)%len(states)] })
		if prev.State == Unconfirmed {
			prev.Before, prev.OperationFailed, prev.Failure = states[int(before)%len(states)], opFailed, msg
		}
		if prev.Final() && state >= 128 {
			prev.Location = "s3://b/known"
		}
		var err error
		if code != 0 {
			err = &flinkapi.APIError{StatusCode: code, Method: "GET", Path: "/jobs", Errors: []string{msg}}
		}
		js := flinkapi.JobState(jobState)
		now := at(time.Duration(before) * time.Minute / 8)
		next := AfterJobList(prev, listed, js, err, now)
		if prev.Location != "" && next.Location != prev.Location {
			t.Fatalf("location %q dropped: %+v", prev.Location, next)
		}
		if prev.State != Unconfirmed {
			if next != CheckDeadline(prev, now) {
				t.Fatalf("a stale job list changed %+v to %+v", prev, next)
			}
			return
		}
		switch {
		case err != nil && next.State != Unconfirmed && next.State != TimedOut:
			t.Fatalf("a failed list made %s", next.State)
		case err != nil && (next.Attempts != prev.Attempts+1 || next.LastError == ""):
			t.Fatalf("a failed list was not counted: %+v", next)
		case next.State == Failed && (err != nil || !listed || js.IsGloballyTerminal() || !prev.OperationFailed):
			t.Fatalf("Failed by listed %v %q, err %v, operation failed %v", listed, js, err, prev.OperationFailed)
		case next.State == JobGone && (err != nil || listed):
			t.Fatalf("JobGone by listed %v, err %v", listed, err)
		case next.State == Unconfirmed && err == nil:
			t.Fatalf("still Unconfirmed after the list answered")
		case next.State != Unconfirmed && (next.Before != "" || next.OperationFailed):
			t.Fatalf("%s with Before %q, OperationFailed %v", next.State, next.Before, next.OperationFailed)
		case next.Active() && !now.Before(next.Deadline):
			t.Fatalf("still active past the deadline: %+v", next)
		}
		if next.Failure != "" && next.Failure != prev.Failure {
			checkMessage(t, "Failure", next.Failure)
		}
	})
}
