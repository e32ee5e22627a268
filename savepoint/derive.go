package savepoint

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Failure messages of TimedOut statuses, by the state the deadline ended.
const (
	msgTimedOutPending  = "the deadline passed before Flink acknowledged the trigger"
	msgTimedOutInFlight = "the deadline passed while the savepoint was in progress"
	msgTimedOutLost     = "the deadline passed while Flink had forgotten the trigger id and the checkpoint history did not show the savepoint"
	msgNoResult         = "no result"
	msgUnknownStatus    = "unknown operation status"
	msgJobUnknown       = "Flink does not know the job"
)

// Begin returns the Status of a savepoint about to be triggered: Pending,
// with the trigger id recorded before the request that uses it. Store it
// before sending the trigger, so that a restarted caller re-sends the same
// trigger id instead of starting a second savepoint. trigger may be empty
// for clusters before Flink 1.15, which choose the id themselves;
// AfterTrigger records it. deadline is when the savepoint counts as
// TimedOut; zero means none.
func Begin(kind flinkapi.OperationKind, job flinkapi.JobID, trigger flinkapi.TriggerID, reason Reason, now, deadline time.Time) Status {
	return Status{
		Kind:        kind,
		JobID:       job,
		TriggerID:   trigger,
		TriggerTime: now,
		Deadline:    deadline,
		Reason:      reason,
		State:       Pending,
		LastUpdate:  now,
	}
}

// AfterTrigger returns the Status that follows prev once the trigger
// request (TriggerSavepoint or StopWithSavepoint) returned op and err.
// Only a Pending status takes a trigger's answer; for any other status it
// is stale (a late answer to a trigger that was re-sent) and only the
// deadline applies.
//
//   - err == nil: InFlight, with the trigger id Flink answered.
//   - transient err (429, 5xx, 408, no answer, any error not listed here):
//     still Pending (send the trigger again with the same id), Attempts+1,
//     LastError and LastErrorCode set.
//   - 404 for the job (or the 500 flinkapi.IsJobNotFound recognises):
//     Unconfirmed, going back to Pending if Flink's job list shows the
//     job running (see AfterJobList); 409: JobTerminal.
//   - 400, any other 404 (the route does not exist on this version), or an
//     error matching flinkapi.ErrInvalidInput or flinkapi.ErrUnsupported
//     (nothing was sent): Failed, with Flink's message.
//
// A non-final result past the deadline is TimedOut (see CheckDeadline).
// The success and transient paths do not allocate.
func AfterTrigger(prev Status, op flinkapi.Operation, err error, now time.Time) Status {
	if prev.State != Pending {
		return CheckDeadline(prev, now)
	}
	next := prev
	next.LastUpdate = now
	if err == nil {
		if op.TriggerID != "" {
			next.TriggerID = op.TriggerID
		}
		if next.JobID == "" {
			next.JobID = op.JobID
		}
		next.State = InFlight
		definite(&next)
		return CheckDeadline(next, now)
	}
	switch k, ae := classify(err); k {
	case errTransient:
		transient(&next, err, ae)
	case errJobNotFound:
		unconfirmed(&next, Pending, false, apiMessage(ae))
	case errConflict:
		end(&next, JobTerminal, apiMessage(ae))
	case errTriggerNotFound, errNotFound, errBadRequest:
		end(&next, Failed, apiMessage(ae))
	case errLocal:
		end(&next, Failed, cleanMessage(err.Error()))
	}
	return CheckDeadline(next, now)
}

// AfterPoll returns the Status that follows prev once the status call
// (flinkapi's OperationStatus) returned res and err. Active statuses take
// the answer; an Unconfirmed one takes a definite answer as the state it
// goes back to (Before) would, and a transient one as any other:
//
//   - IN_PROGRESS: InFlight.
//   - COMPLETED with a location: Succeeded, with the location.
//   - COMPLETED with a failure: Failed, Failure holding the root cause's
//     message. If the cause is Flink's StopWithSavepointStoppingException,
//     the savepoint completed before the job failed while stopping: Failed
//     with its Location. If it is FlinkJobNotFoundException: Unconfirmed,
//     with OperationFailed set. Flink answers so for a job that ended as
//     well (a trigger it forgot, sent again after the job finished): its
//     job list tells which (see AfterJobList). With a location (the stop
//     failed after its savepoint, then the job went): JobGone.
//   - COMPLETED with neither: Failed.
//   - 404 for the trigger id, or any other 404 that is not for the job:
//     Lost (never Failed: the savepoint may have completed; see Recover).
//     A Pending status stays Pending: Flink never acknowledged the trigger,
//     so send it again.
//   - 404 for the job (or the 500 flinkapi.IsJobNotFound recognises):
//     Unconfirmed, going back to the state before if Flink's job list
//     shows the job running; 409: JobTerminal.
//   - 400, or an error matching flinkapi.ErrInvalidInput or
//     flinkapi.ErrUnsupported: Failed, with the message.
//   - transient err (429, 5xx, 408, no answer, any error not listed here):
//     the state and location stay, Attempts+1, LastError and LastErrorCode
//     set. A transient answer never makes a savepoint Failed.
//
// A final status keeps its state: the only thing a late answer adds to it
// is a location it did not have, because a location once seen is never
// dropped. A non-final result past the deadline is TimedOut (see
// CheckDeadline); a definite answer wins over the deadline. The success,
// in-progress and transient paths do not allocate.
func AfterPoll(prev Status, res *flinkapi.OperationResult, err error, now time.Time) Status {
	from := prev.State
	if from == Unconfirmed {
		from = before(prev)
	}
	if !prev.Active() {
		if prev.State == "" || prev.Location != "" || err != nil || res == nil {
			return prev
		}
		if loc := resultLocation(res); loc != "" {
			prev.Location = loc
			prev.LastUpdate = now
		}
		return prev
	}
	next := prev
	next.LastUpdate = now
	if err != nil {
		switch k, ae := classify(err); k {
		case errTransient:
			transient(&next, err, ae)
		case errTriggerNotFound, errNotFound:
			if from == Pending {
				resume(&next, Pending)
			} else {
				resume(&next, Lost)
			}
		case errJobNotFound:
			unconfirmed(&next, from, false, apiMessage(ae))
		case errConflict:
			end(&next, JobTerminal, apiMessage(ae))
		case errBadRequest:
			end(&next, Failed, apiMessage(ae))
		case errLocal:
			end(&next, Failed, cleanMessage(err.Error()))
		}
		return CheckDeadline(next, now)
	}
	switch {
	case res == nil:
		// No error and no result: nothing was learned.
		next.Attempts++
		next.LastError, next.LastErrorCode = msgNoResult, 0
	case res.Status == flinkapi.StatusInProgress:
		resume(&next, InFlight)
	case res.Status != flinkapi.StatusCompleted:
		// flinkapi rejects other statuses; should one get here, it says
		// nothing definite.
		next.Attempts++
		next.LastError, next.LastErrorCode = msgUnknownStatus, 0
	case res.Failure == nil && res.Location != "":
		if next.Location == "" {
			next.Location = res.Location
		}
		end(&next, Succeeded, "")
	case res.Failure == nil:
		end(&next, Failed, msgCompletedNoLocation)
	default:
		if loc := resultLocation(res); loc != "" && next.Location == "" {
			next.Location = loc
		}
		if res.Failure.Class == jobNotFoundClass || hasCause(res.Failure.StackTrace, jobNotFoundClass) {
			unconfirmed(&next, from, true, FailureMessage(res.Failure))
		} else {
			end(&next, Failed, FailureMessage(res.Failure))
		}
	}
	return CheckDeadline(next, now)
}

// AfterJobList returns the Status that follows prev once Flink's job list
// (flinkapi's ListJobs, GET /jobs) was read to confirm an Unconfirmed
// status: listed reports whether the list holds the job of prev, state is
// its state there, and err is the error of the call. Only an Unconfirmed
// status takes it; for any other status it is stale, and only the
// deadline applies.
//
//   - err != nil: still Unconfirmed, Attempts+1, LastError and
//     LastErrorCode set, as for a transient answer: ask again.
//   - not listed: JobGone, Failure Flink's message that it did not know
//     the job.
//   - listed in a globally terminal state (FINISHED, CANCELED, FAILED):
//     Lost. The job ended, and the savepoint may have completed before it
//     did (the answer to a stop was lost): Recover looks for it in the
//     job's checkpoint history. Flink serves statistics from a cache, so a
//     caller reads them once the cache holds none from before the job
//     ended (package lifecycle records the job's state and waits).
//   - listed in another state after an operation that completed with
//     FlinkJobNotFoundException (OperationFailed): Failed, with Flink's
//     message and the job's state. The trigger id failed; a new savepoint
//     needs a new one.
//   - listed in another state after a 404: the state before (Before):
//     send the trigger again with the same id (Pending), poll (InFlight)
//     or recover (Lost).
//
// Leaving Unconfirmed clears Before, OperationFailed and the transient
// count. A non-final result past the deadline is TimedOut (see
// CheckDeadline); a definite answer wins over the deadline. A failed read
// never makes a savepoint Failed. Only the path to Failed allocates.
func AfterJobList(prev Status, listed bool, state flinkapi.JobState, err error, now time.Time) Status {
	if prev.State != Unconfirmed {
		return CheckDeadline(prev, now)
	}
	next := prev
	next.LastUpdate = now
	msg := next.Failure
	if msg == "" {
		msg = msgJobUnknown
	}
	switch {
	case err != nil:
		ae, _ := findError[*flinkapi.APIError](err)
		transient(&next, err, ae)
	case !listed:
		end(&next, JobGone, msg)
	case state.IsGloballyTerminal():
		resume(&next, Lost)
	case next.OperationFailed:
		end(&next, Failed, cleanMessage(msg+" (Flink lists the job "+string(state)+")"))
	default:
		resume(&next, before(prev))
	}
	return CheckDeadline(next, now)
}

// CheckDeadline returns prev, or TimedOut if prev is active (Pending,
// InFlight, Lost or Unconfirmed) and now is at or past its non-zero
// Deadline. Failure then says what the deadline interrupted; for an
// Unconfirmed status, the state it was in before Flink said it did not
// know the job. The savepoint may still complete on the cluster: a later
// answer that carries its location adds the location to the TimedOut
// status. AfterTrigger, AfterPoll, Recover and AfterJobList apply it to
// their results; call it on its own when no answer arrives.
func CheckDeadline(prev Status, now time.Time) Status {
	if !prev.Active() || prev.Deadline.IsZero() || now.Before(prev.Deadline) {
		return prev
	}
	state := prev.State
	if state == Unconfirmed {
		state = before(prev)
	}
	msg := msgTimedOutInFlight
	switch state {
	case Pending:
		msg = msgTimedOutPending
	case Lost:
		msg = msgTimedOutLost
	}
	prev.State = TimedOut
	prev.Failure = msg
	prev.Before, prev.OperationFailed = "", false
	prev.LastUpdate = now
	return prev
}

// before returns the state an Unconfirmed status goes back to: Before, or
// Pending if Before is no state it can go back to (a status not derived
// here). Pending is the safe guess: the trigger is sent again with the
// same id, which Flink answers with the operation it started if it knows
// the id, and which starts one if not.
func before(s Status) State {
	switch s.Before {
	case Pending, InFlight, Lost:
		return s.Before
	}
	return Pending
}

// unconfirmed records an answer that Flink does not know the job of s,
// which stood at from: Unconfirmed until Flink's job list confirms or
// contradicts it, with failed telling whether the answer was the end of
// the operation and msg Flink's message. The answer is not definite: the
// count of transient answers stays. A status that knows its location has
// nothing left to find: JobGone.
func unconfirmed(s *Status, from State, failed bool, msg string) {
	if s.Location != "" {
		end(s, JobGone, msg)
		return
	}
	s.State, s.Before, s.Failure = Unconfirmed, from, msg
	s.OperationFailed = s.OperationFailed || failed
}

// resume moves s to the active state after a definite answer.
func resume(s *Status, state State) {
	s.State, s.Failure = state, ""
	s.Before, s.OperationFailed = "", false
	definite(s)
}

// resultLocation returns the savepoint location a completed result reveals:
// its location, or the one named by a StopWithSavepointStoppingException.
func resultLocation(res *flinkapi.OperationResult) string {
	if !res.Completed() {
		return ""
	}
	if res.Location != "" {
		return res.Location
	}
	if res.Failure != nil {
		return createdSavepoint(res.Failure.StackTrace)
	}
	return ""
}

// definite clears the count of transient answers after a definite one.
func definite(s *Status) {
	s.Attempts, s.LastError, s.LastErrorCode = 0, "", 0
}

// end moves s to a final state.
func end(s *Status, state State, failure string) {
	s.State = state
	s.Failure = failure
	s.Before, s.OperationFailed = "", false
	definite(s)
}

// transient counts a transient answer. It does not allocate for the errors
// of flinkapi, whose messages are clean.
func transient(s *Status, err error, ae *flinkapi.APIError) {
	s.Attempts++
	if ae != nil {
		s.LastErrorCode = ae.StatusCode
		s.LastError = firstMessage(ae)
		return
	}
	s.LastErrorCode = 0
	if te, ok := findError[*flinkapi.TransportError](err); ok && te.Err != nil {
		err = innermost(te.Err)
	}
	s.LastError = cleanMessage(err.Error())
}

// firstMessage returns Flink's first message, or the status text; it does
// not allocate unless the message needs cleaning.
func firstMessage(ae *flinkapi.APIError) string {
	for _, m := range ae.Errors {
		if m = cleanMessage(m); m != "" {
			return m
		}
	}
	if t := http.StatusText(ae.StatusCode); t != "" {
		return t
	}
	return "unexpected HTTP status"
}

// apiMessage returns Flink's messages of a definite error answer.
func apiMessage(ae *flinkapi.APIError) string {
	if ae == nil {
		return ""
	}
	if msg := cleanMessage(ae.Message()); msg != "" {
		return msg
	}
	return firstMessage(ae)
}

// errKind sorts errors by what they mean for a savepoint.
type errKind int

const (
	errTransient       errKind = iota // nothing definite was learned
	errTriggerNotFound                // 404: Flink does not know the trigger id
	errJobNotFound                    // 404 (or 500): Flink does not know the job
	errNotFound                       // any other 404 (e.g. an unknown route)
	errConflict                       // 409: the job reached another terminal state
	errBadRequest                     // 400: permanent
	errLocal                          // nothing was sent: invalid input, unsupported feature
)

// classify sorts err, and returns the *flinkapi.APIError in it, if any.
// Answers that are not a definite answer about the operation are
// transient. Transient errors are classified without allocating: the
// status code decides before any message is read, but for a 500, whose
// message may be Flink's FlinkJobNotFoundException (read without
// allocating).
func classify(err error) (errKind, *flinkapi.APIError) {
	if ae, ok := findError[*flinkapi.APIError](err); ok {
		switch ae.StatusCode {
		case http.StatusNotFound:
			switch {
			case flinkapi.IsTriggerNotFound(ae):
				return errTriggerNotFound, ae
			case flinkapi.IsJobNotFound(ae):
				return errJobNotFound, ae
			}
			return errNotFound, ae
		case http.StatusConflict:
			return errConflict, ae
		case http.StatusBadRequest:
			return errBadRequest, ae
		case http.StatusInternalServerError:
			if namesMissingJob(ae) && flinkapi.IsJobNotFound(ae) {
				return errJobNotFound, ae
			}
		}
		return errTransient, ae
	}
	if _, ok := findError[*flinkapi.TransportError](err); ok {
		return errTransient, nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errTransient, nil
	}
	if errors.Is(err, flinkapi.ErrInvalidInput) || errors.Is(err, flinkapi.ErrUnsupported) {
		return errLocal, nil
	}
	return errTransient, nil
}

// namesMissingJob reports, without allocating, whether a message of ae
// holds Flink's "Could not find Flink job" (of FlinkJobNotFoundException),
// with which flinkapi.IsJobNotFound recognises a 500 for a job Flink does
// not know.
func namesMissingJob(ae *flinkapi.APIError) bool {
	const text = "could not find flink job"
	for _, m := range ae.Errors {
		for i := 0; i+len(text) <= len(m); i++ {
			j := 0
			for ; j < len(text); j++ {
				c := m[i+j]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				if c != text[j] {
					break
				}
			}
			if j == len(text) {
				return true
			}
		}
	}
	return false
}

// findError returns the first error of type T in err's tree, as errors.As
// does for types without an As method, without allocating.
func findError[T error](err error) (T, bool) {
	for err != nil {
		if t, ok := err.(T); ok {
			return t, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if t, ok := findError[T](e); ok {
					return t, true
				}
			}
			err = nil
		default:
			err = nil
		}
	}
	var zero T
	return zero, false
}

// innermost follows err's chain of single wrapped errors to its end
// ("connection refused", "i/o timeout").
func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
