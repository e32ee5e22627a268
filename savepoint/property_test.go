package savepoint

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// event is one thing that can happen to a savepoint: an answer to the
// trigger or to a poll, checkpoint statistics for Recover, or time passing.
type event struct {
	kind      string // "trigger", "poll", "recover", "deadline"
	op        flinkapi.Operation
	res       *flinkapi.OperationResult
	err       error
	stats     *flinkapi.CheckpointStatistics
	transient bool // says nothing definite
}

func (e event) String() string {
	switch {
	case e.err != nil:
		return fmt.Sprintf("%s err %v", e.kind, e.err)
	case e.res != nil:
		return fmt.Sprintf("%s %+v", e.kind, *e.res)
	case e.stats != nil:
		return fmt.Sprintf("%s %d entries", e.kind, len(e.stats.History))
	}
	return e.kind
}

var locations = []string{"s3://b/sp-1", "s3://b/sp-2", "hdfs://nn/sp-3"}

func randomEvent(rng *rand.Rand, tr time.Time) event {
	transientErr := func() error { return transientErrors[rng.IntN(len(transientErrors))].err }
	definiteErrs := []error{errTriggerGone, errTriggerOld, errJobGone, errRoute, errTerminal, errNoTarget, errInvalid, errUnsupported}
	switch rng.IntN(4) {
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
	}
	return CheckDeadline(s, now)
}

// TestRandomAnswerSequences feeds random sequences of answers to a
// savepoint and checks the invariants after every step: a location once seen
// is never dropped or replaced, a transient answer never fails a savepoint,
// final states are sticky, and the deadline ends every wait.
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
			// A trigger's answer counts only for a Pending status; any other
			// status takes it as stale.
			applies := s.Active() && (e.kind != "trigger" || s.State == Pending)
			if e.kind == "trigger" && !applies && next != CheckDeadline(s, now) {
				fail("a stale trigger answer changed the status")
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
	for _, start := range []Status{pending(), inFlight(), lost()} {
		s := with(start, func(s *Status) { s.Deadline = time.Time{} })
		counted := 0
		for i := range 10000 {
			tt := transientErrors[rng.IntN(len(transientErrors))]
			if rng.IntN(2) == 0 {
				s = AfterPoll(s, nil, tt.err, at(time.Duration(i)*time.Second))
				counted++
			} else {
				s = AfterTrigger(s, flinkapi.Operation{}, tt.err, at(time.Duration(i)*time.Second))
				if start.State == Pending {
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
		states := []State{Pending, InFlight, Lost, Succeeded, Failed, TimedOut, LostForGood, JobGone, JobTerminal, ""}
		prev := with(pending(), func(s *Status) { s.State = states[int(state)%len(states)] })
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
