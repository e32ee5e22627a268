package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TakeSavepoint takes a savepoint of a running job, which keeps running.
// Build it anew from its configuration whenever convenient: all its state
// is in the Progress passed to Step.
type TakeSavepoint struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// Job is the job to take the savepoint of.
	Job flinkapi.JobID
	// Reason says why the savepoint is taken (savepoint.ReasonUser if
	// empty).
	Reason savepoint.Reason
}

// Step does at most one request. The first Step records a new trigger id
// in p.Savepoint and sends nothing; store p, then call again: the next
// Step sends the trigger with that id, later ones re-send it after
// transient errors, poll the result, and look a savepoint whose trigger id
// Flink forgot up in the job's checkpoint history. A trigger never
// answered and recorded more than a minute before is looked up there too
// before it is sent again: a request sent with it, whose answer was lost,
// may have taken the savepoint (see Progress.Savepoint.Resend). The operation ends
// Succeeded with p.Location set, or in another Outcome, at the latest at
// the deadline. Step returns an error only for a canceled context.
func (t *TakeSavepoint) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *t
	return bound(ctx, p, opTakeSavepoint, t.Job, &op.Env, nil, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opTakeSavepoint, t.OnTransition, t.Logger, func() (Result, error) { return op.step(ctx, p) })
	})
}

func (t *TakeSavepoint) step(ctx context.Context, p *Progress) (Result, error) {
	now := t.clock().Now()
	if p.Phase == "" {
		startAt(p, now)
		p.JobID = t.Job
		beginSavepoint(p, flinkapi.OpSavepoint, t.Job, reasonOr(t.Reason, savepoint.ReasonUser), now, t.Timing.Savepoint)
		return Result{}, nil
	}
	send := func() (flinkapi.Operation, error) {
		return t.Client.TriggerSavepoint(ctx, p.JobID, flinkapi.SavepointRequest{
			TargetDirectory: t.TargetDirectory, FormatType: t.FormatType, TriggerID: p.Savepoint.Status.TriggerID,
		})
	}
	if final, expect := savepointStep(ctx, t.Client, p, send, now, t.Timing); !final {
		return Result{RequeueAfter: savepointDelay(p, t.Timing, now, expect)}, nil
	}
	o, reason := savepointOutcome(p, t.TargetDirectory)
	return finish(p, o, reason), nil
}

func reasonOr(r, def savepoint.Reason) savepoint.Reason {
	if r == "" {
		return def
	}
	return r
}

// beginSavepoint records the trigger id and the deadline of a savepoint
// about to be triggered. Flink takes a client's trigger id from 1.15 on,
// the oldest release flinkkit speaks to.
func beginSavepoint(p *Progress, kind flinkapi.OperationKind, job flinkapi.JobID, reason savepoint.Reason, now time.Time, timeout time.Duration) {
	trigger := flinkapi.NewTriggerID()
	deadline := now.Add(orDefault(timeout, defaultSavepointTimeout))
	p.Phase = PhaseSavepoint
	p.Deadline = deadline
	p.Savepoint.Status = savepoint.Begin(kind, job, trigger, reason, now, deadline)
	p.Savepoint.Resend = time.Time{}
}

// unsent reports whether the trigger of p's savepoint was never answered:
// recorded (savepoint.Begin) and not sent, or sent by a step whose
// answer was lost with the Progress it changed.
func unsent(p *Progress) bool {
	st := p.Savepoint.Status
	return st.State == savepoint.Pending && st.Attempts == 0 && st.LastUpdate.Equal(st.TriggerTime) && !st.TriggerTime.IsZero()
}

// firstSend prepares the trigger of p's savepoint, never answered, to be
// sent at now. Past its deadline nothing was answered before it: the
// time passed while the caller was away, not waiting for Flink, and the
// deadline counts from this request. The trigger time stays when the
// trigger id was recorded: a request sent with it before (whose answer
// was lost with the Progress) may have started the savepoint then, and
// a savepoint in the checkpoint history counts as this one only if it
// was triggered at or after that time, so one taken earlier (by someone
// else, or by a schedule) is never taken for it. A trigger sent again
// after the job's tasks were not running (Requests > 0) keeps the
// phase's deadline.
func firstSend(p *Progress, now time.Time) {
	st := &p.Savepoint.Status
	if p.Requests > 0 || st.Deadline.IsZero() || now.Before(st.Deadline) {
		return
	}
	st.Deadline = now.Add(st.Deadline.Sub(st.TriggerTime))
	p.Deadline = st.Deadline
}

// forgetAfter is how long after a savepoint trigger was recorded (or its
// lookup last showed no savepoint of it) it is sent again without a look
// at the job's checkpoint history first. A request sent with it before,
// whose answer was lost, may have taken a savepoint; Flink answers the
// same trigger id with that savepoint's operation for as long as it keeps
// the id (rest.async.store-duration after the operation completed, 5
// minutes by default), but once it forgot it (that duration passed, or
// its JobManager restarted), the same id starts a second savepoint and
// the first would be left on storage, never recorded. As no request is
// sent without a lookup later than this after the time it counts from,
// a savepoint the lookup counts as this one was triggered at most this
// long after it.
const forgetAfter = time.Minute

// mayBeForgotten reports whether the trigger of st, a savepoint of
// TakeSavepoint that Flink never acknowledged, may have been sent and
// taken long enough ago that Flink forgot its id: the job's checkpoint
// history is read before it is sent again. A stop's savepoint is not
// looked up so: a savepoint found would be followed by the job's stop or
// cancel, and one someone else took would lose the state since; a stop
// whose first request took effect ended the job, which Flink answers
// when it is sent again.
func mayBeForgotten(p *Progress, st savepoint.Status, now time.Time) bool {
	return p.Operation == opTakeSavepoint && st.NeedsTrigger() && st.TriggerID != "" && !st.TriggerTime.IsZero() &&
		!now.Before(resendFrom(p, st).Add(forgetAfter))
}

// resendFrom is the time the trigger of st, never acknowledged, was
// recorded or last found in no savepoint of the job's checkpoint history.
func resendFrom(p *Progress, st savepoint.Status) time.Time {
	return later(st.TriggerTime, p.Savepoint.Resend)
}

// lookupBeforeResend reads the job's checkpoint history before the
// trigger of st, recorded long ago and never acknowledged, is sent
// again (invariant 2): a savepoint completed since the trigger time, and
// triggered at most forgetAfter after it was last sent without a lookup,
// is the one an earlier request took, recorded as found (Recovered);
// while one is in progress the status stays Pending and the history is
// read again later; when it shows none, the trigger is sent
// (p.Resend). A read that fails counts as a poll's error would.
func lookupBeforeResend(ctx context.Context, c API, p *Progress, st savepoint.Status, now time.Time) savepoint.Status {
	stats, err := c.Checkpoints(ctx, st.JobID)
	if err != nil {
		next := savepoint.AfterPoll(st, nil, err, now)
		if next.State == savepoint.Pending && next.Attempts == 0 {
			// A definite answer that the history is not there to read
			// (another 404): nothing will show the savepoint.
			p.Savepoint.Resend = now
		}
		return next
	}
	stats = onlyUntil(stats, resendFrom(p, st).Add(forgetAfter))
	lost := st
	lost.State = savepoint.Lost
	if found := recoverSince(lost, stats, st.TriggerTime, now); found.State == savepoint.Succeeded {
		return found
	}
	next := st
	next.LastUpdate, next.Attempts, next.LastError, next.LastErrorCode = now, 0, "", 0
	if !savepointInProgress(stats, st.TriggerTime) {
		p.Savepoint.Resend = now
	}
	return savepoint.CheckDeadline(next, now)
}

// onlyUntil returns a copy of stats in which savepoints triggered after
// until are no candidates of savepoint.Recover, as onlySince does for
// those triggered before its time.
func onlyUntil(stats *flinkapi.CheckpointStatistics, until time.Time) *flinkapi.CheckpointStatistics {
	return withoutSavepoints(stats, func(c flinkapi.CheckpointStats) bool { return c.TriggerTime.After(until) })
}

// withoutSavepoints returns a copy of stats in which the savepoints out
// says are no candidates of savepoint.Recover: completed ones read as
// discarded, those in progress as failed. Their trigger times stay, so
// that the history still shows how far back it reaches.
func withoutSavepoints(stats *flinkapi.CheckpointStatistics, out func(flinkapi.CheckpointStats) bool) *flinkapi.CheckpointStatistics {
	mark := func(c flinkapi.CheckpointStats) flinkapi.CheckpointStats {
		if c.IsSavepoint && out(c) {
			switch c.Status {
			case flinkapi.CheckpointCompleted:
				c.Discarded = true
			case flinkapi.CheckpointInProgress:
				c.Status = flinkapi.CheckpointFailed
			}
		}
		return c
	}
	cp := *stats
	cp.History = make([]flinkapi.CheckpointStats, len(stats.History))
	for i, c := range stats.History {
		cp.History[i] = mark(c)
	}
	if stats.LatestSavepoint != nil {
		c := mark(*stats.LatestSavepoint)
		cp.LatestSavepoint = &c
	}
	return &cp
}

// savepointInProgress reports whether stats show a savepoint in
// progress that was triggered at or after since, as recoverSince counts
// them.
func savepointInProgress(stats *flinkapi.CheckpointStatistics, since time.Time) bool {
	from := since.Truncate(time.Millisecond) // Flink records trigger times in milliseconds
	in := func(c *flinkapi.CheckpointStats) bool {
		return c != nil && c.IsSavepoint && c.Status == flinkapi.CheckpointInProgress && !c.TriggerTime.IsZero() && !c.TriggerTime.Before(from)
	}
	if in(stats.LatestSavepoint) {
		return true
	}
	for i := range stats.History {
		if in(&stats.History[i]) {
			return true
		}
	}
	return false
}

// recoverSince looks for the savepoint of the Lost status st in the
// checkpoint statistics stats as savepoint.Recover does, counting only
// savepoints triggered at or after since: one triggered earlier was
// someone else's (or an earlier operation's), not this one.
func recoverSince(st savepoint.Status, stats *flinkapi.CheckpointStatistics, since, now time.Time) savepoint.Status {
	if stats == nil || since.IsZero() {
		return savepoint.Recover(st, stats, now)
	}
	sent := st.TriggerTime
	st.TriggerTime = since
	next := savepoint.Recover(st, onlySince(stats, since), now)
	next.TriggerTime = sent
	return next
}

// onlySince returns a copy of stats in which savepoints triggered before
// since are no candidates of savepoint.Recover (withoutSavepoints).
func onlySince(stats *flinkapi.CheckpointStatistics, since time.Time) *flinkapi.CheckpointStatistics {
	since = since.Truncate(time.Millisecond) // Flink records trigger times in milliseconds
	return withoutSavepoints(stats, func(c flinkapi.CheckpointStats) bool { return !c.TriggerTime.IsZero() && c.TriggerTime.Before(since) })
}

// recoveryFrom is the earliest trigger time of a savepoint in the
// checkpoint history that counts as the one of p: its trigger time, or
// for a job that ended as its stop would have ended it, the start of the
// operation (a stop sent before the trigger time was moved by
// firstSend, whose answer was lost, may have ended it: the savepoint
// that ended a job is its newest state).
func recoveryFrom(p *Progress) time.Time {
	if ended(p) && stoppedBy(p) && !p.Started.IsZero() && p.Started.Before(p.Savepoint.Status.TriggerTime) {
		return p.Started
	}
	return p.Savepoint.Status.TriggerTime
}

// savepointStep does the one request the savepoint status asks for and
// derives the next status. It reports whether the status is final, and
// when the savepoint is expected to complete if the step read its
// progress (zero: unknown; see progressDue).
func savepointStep(ctx context.Context, c API, p *Progress, send func() (flinkapi.Operation, error), now time.Time, t Timing) (final bool, expect time.Time) {
	if unsent(p) {
		firstSend(p, now)
	}
	if progressDue(p.Savepoint.Status, now) && !savepoint.CheckDeadline(p.Savepoint.Status, now).Final() {
		p.Savepoint.Status, expect = readProgress(ctx, c, p.Savepoint.Status, now)
		return false, expect
	}
	st, notRunning, moved := savepointRequest(ctx, c, p, send, now, t)
	if !moved {
		return false, time.Time{}
	}
	if st.State == savepoint.Failed && st.Location == "" && notRunning && now.Before(st.Deadline) {
		// A job is RUNNING before all its tasks are: Flink refuses a
		// savepoint until they run. Trigger again, with a new trigger id
		// (this one failed), until the deadline.
		p.Savepoint.Status = savepoint.Begin(st.Kind, st.JobID, newTriggerID(st.TriggerID), st.Reason, now, st.Deadline)
		p.Savepoint.Status.LastError, p.LastError = st.Failure, st.Failure
		p.Requests++
		return false, time.Time{}
	}
	p.Savepoint.Status = st
	p.LastError = savepointError(st)
	keepLocation(p)
	if st.Final() {
		p.Requests = 0
	}
	return st.Final(), time.Time{}
}

// savepointRequest does the one request the savepoint status of p asks
// for and returns the status it leads to; notRunning reports that Flink
// failed the savepoint because the job's tasks were not all running.
// moved is false when p is to be left as it is (a read past the deadline
// failed and is to be repeated, or Flink's cache is waited for).
func savepointRequest(ctx context.Context, c API, p *Progress, send func() (flinkapi.Operation, error), now time.Time, t Timing) (st savepoint.Status, notRunning, moved bool) {
	st = savepoint.CheckDeadline(p.Savepoint.Status, now)
	switch {
	case st.State == savepoint.TimedOut && p.Savepoint.Status.Active() && st.Location == "" && !st.TriggerTime.IsZero():
		// The deadline passed (while answers failed, or while the caller
		// was away) before anything said what became of a savepoint that
		// may have been taken: find out before calling it timed out
		// (invariant 2).
		st, moved = lateLookup(ctx, c, p, now)
		return st, false, moved
	case st.NeedsJobList():
		return confirmJob(ctx, c, p, st, now, t), false, true
	case mayBeForgotten(p, st, now):
		return lookupBeforeResend(ctx, c, p, st, now), false, true
	case st.NeedsTrigger():
		op, err := send()
		return savepoint.AfterTrigger(st, op, err, now), false, true
	case st.NeedsPoll():
		res, err := c.OperationStatus(ctx, st.Operation())
		return savepoint.AfterPoll(st, res, err, now), err == nil && res != nil && res.Failure.TasksNotRunning(), true
	case st.NeedsRecovery() && ended(p) && now.Before(p.Replace.Observed.StatsAfter):
		// Wait until Flink's cache holds no statistics from before the
		// job ended (see savepointDelay).
		return st, false, false
	case st.NeedsRecovery():
		return recoverSavepoint(ctx, c, p, st, now), false, true
	}
	return st, false, true
}

// confirmJob asks Flink's job list about the job of st after an answer
// said Flink does not know it (a 404, or an operation that completed with
// FlinkJobNotFoundException, as Flink answers for a job that ended, too,
// when a trigger it forgot starts a new operation): the list confirms it
// (JobGone), or shows the job after all. A job that ended is recorded:
// its checkpoint statistics count from a cache duration later.
func confirmJob(ctx context.Context, c API, p *Progress, st savepoint.Status, now time.Time, t Timing) savepoint.Status {
	known, js, err := listJob(ctx, c, st.JobID)
	if err == nil && known && js.IsGloballyTerminal() {
		seenTerminal(p, js, now, t)
	}
	return savepoint.AfterJobList(st, known, js, err, now)
}

// recoverSavepoint looks the savepoint of st, whose trigger id Flink
// forgot, up in the job's checkpoint history.
func recoverSavepoint(ctx context.Context, c API, p *Progress, st savepoint.Status, now time.Time) savepoint.Status {
	stats, err := c.Checkpoints(ctx, st.JobID)
	switch {
	case flinkapi.IsJobNotFound(err):
		// Unconfirmed, as after a poll: the job list is asked next.
		return savepoint.AfterPoll(st, nil, err, now)
	case err != nil && ended(p) && errors.Is(err, flinkapi.ErrNotFound):
		// An ended job without checkpoint statistics (checkpointing
		// off): nothing will show the savepoint.
		st.State, st.Failure = savepoint.LostForGood, lostEnded(p, st, "Flink has no checkpoint statistics of it ("+errMessage(err)+")")
		st.LastError, st.Attempts, st.LastUpdate = "", 0, now
		return st
	case err != nil:
		// The error of the statistics call means for the savepoint
		// what it means for a poll: a transient error keeps it Lost.
		return savepoint.AfterPoll(st, nil, err, now)
	}
	st = recoverSince(st, stats, recoveryFrom(p), now)
	if st.State == savepoint.Lost && ended(p) {
		// Statistics read after the job ended are final: no
		// savepoint of it will appear.
		st.State, st.Failure = savepoint.LostForGood, lostEnded(p, st, "its checkpoint history, read after it ended, holds no savepoint triggered at or after "+stamp(st.TriggerTime))
		st.LastUpdate = now
	}
	return st
}

// lateReads bounds the reads past a savepoint's deadline that find out
// what became of it: the first polls the trigger id (Flink answers it for
// its async-operation store duration, also after a caller's absence), the
// others read the checkpoint history. A read that fails leaves the status
// as it was for the next one, counted in Progress.Requests; a definite
// answer, or the last read, ends it.
const lateReads = 3

// lateLookup does one read past the deadline of the active savepoint of p
// and returns the status it leads to, and whether that is final.
func lateLookup(ctx context.Context, c API, p *Progress, now time.Time) (savepoint.Status, bool) {
	prev := p.Savepoint.Status
	if prev.LastUpdate.Before(prev.Deadline) {
		p.Requests = 0 // the first read past the deadline
	}
	timedOut := savepoint.CheckDeadline(prev, now)
	next, failed := timedOut, false
	if p.Requests == 0 && prev.State == savepoint.InFlight {
		res, err := c.OperationStatus(ctx, prev.Operation())
		next = savepoint.AfterPoll(prev, res, err, now)
		// A transient error, or a trigger id Flink forgot: the history
		// may still show the savepoint.
		failed = next.State == savepoint.TimedOut && (next.Attempts > prev.Attempts || next.Failure != timedOut.Failure)
	} else {
		stats, err := c.Checkpoints(ctx, prev.JobID)
		if err == nil {
			lost := prev
			lost.State = savepoint.Lost
			if found := recoverSince(lost, stats, recoveryFrom(p), now); found.State == savepoint.Succeeded {
				next = found
			}
		} else {
			failed = true
			next.LastError = errMessage(err)
		}
	}
	if !failed || p.Requests+1 >= lateReads {
		return next, true
	}
	p.Requests++
	prev.LastUpdate, prev.LastError = now, next.LastError
	prev.Attempts++ // the next read after a backoff
	if prev.LastError == "" {
		prev.LastError = next.Failure
	}
	p.Savepoint.Status, p.LastError = prev, prev.LastError
	return prev, false
}

// savepointError is Progress.LastError of the savepoint status st: its
// last transient error, or for an Unconfirmed status the answer that
// Flink does not know the job, which its job list is to confirm.
func savepointError(st savepoint.Status) string {
	switch {
	case !st.NeedsJobList():
		return st.LastError
	case st.OperationFailed:
		return notFoundResult + st.Failure
	}
	return notFound + st.Failure
}

// notFoundResult starts Progress.LastError while an operation that
// completed with FlinkJobNotFoundException waits for Flink's job list.
const notFoundResult = "Flink failed the savepoint, not knowing the job: "

// seenTerminal records that a status call or Flink's job list showed the
// job in the terminal state js at now: its checkpoint statistics count
// from a cache duration later.
func seenTerminal(p *Progress, js flinkapi.JobState, now time.Time, t Timing) {
	if p.Replace.Observed.State == js && !p.Replace.Observed.StatsAfter.IsZero() {
		return
	}
	p.Replace.Observed.State, p.Replace.Observed.Missing = js, false
	p.Replace.Observed.StatsAfter = now.Add(t.cache())
}

// ended reports whether the job of p was seen in a terminal state.
func ended(p *Progress) bool {
	return p.Replace.Observed.State.IsGloballyTerminal() && !p.Replace.Observed.StatsAfter.IsZero()
}

// lostEnded is the Failure of a savepoint of a job that ended, when
// Flink no longer knows the savepoint's trigger id (or never did) and
// nothing shows the savepoint.
func lostEnded(p *Progress, st savepoint.Status, why string) string {
	return fmt.Sprintf("the job is %s, Flink knows no savepoint of trigger id %s, and %s", p.Replace.Observed.State, st.TriggerID, why)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// newTriggerID returns a fresh trigger id, or none for a cluster that
// chooses its own (the failed one had none).
func newTriggerID(failed flinkapi.TriggerID) flinkapi.TriggerID {
	if failed == "" {
		return ""
	}
	return flinkapi.NewTriggerID()
}

// savepointDelay is when to step an active savepoint again; expect is when
// it is expected to complete, if the step read its progress (zero:
// unknown).
func savepointDelay(p *Progress, t Timing, now time.Time, expect time.Time) time.Duration {
	if p.Savepoint.Status.NeedsJobList() && !p.Savepoint.Status.OperationFailed {
		// Flink's job list is asked next, after the backoff of two
		// transient errors at least (the 404 may come from a JobManager
		// failing over), and of each failed read of the list.
		return t.backoff(max(p.Savepoint.Status.Attempts, 2))
	}
	if p.Savepoint.Status.Attempts > 0 {
		return t.backoff(p.Savepoint.Status.Attempts)
	}
	switch {
	case p.Savepoint.Status.NeedsJobList():
		// Flink's job list is asked next, at once: the operation ended.
		return 0
	case mayBeForgotten(p, p.Savepoint.Status, now):
		// A savepoint in progress since the trigger, maybe the one an
		// earlier request took: the history is read again.
		return t.backoff(3)
	case p.Savepoint.Status.NeedsTrigger() && p.Requests > 0:
		// Triggered again after the tasks were not running.
		return t.backoff(p.Requests)
	case p.Savepoint.Status.NeedsTrigger():
		return 0
	case p.Savepoint.Status.NeedsRecovery() && ended(p) && now.Before(p.Replace.Observed.StatsAfter):
		return p.Replace.Observed.StatsAfter.Sub(now)
	case p.Savepoint.Status.NeedsRecovery():
		// The checkpoint history changes with each checkpoint: no need to
		// read it as often as a poll.
		return t.backoff(3)
	}
	lag := t.pollSince(p.Savepoint.Status.TriggerTime, now)
	if expect.IsZero() {
		return lag
	}
	d := expectedDelay(expect, now, lag)
	if dl := p.Savepoint.Status.Deadline; !dl.IsZero() {
		d = min(d, max(dl.Sub(now), 0))
	}
	return d
}

// savepointOutcome maps the final savepoint status of p to an Outcome
// and reason; dir is the target directory the savepoint was asked for
// (empty: the cluster's default).
func savepointOutcome(p *Progress, dir string) (Outcome, string) {
	st := p.Savepoint.Status
	switch st.State {
	case savepoint.Succeeded:
		if st.Recovered {
			return OutcomeSucceeded, "savepoint completed (found in the checkpoint history) at " + st.Location
		}
		return OutcomeSucceeded, "savepoint completed at " + st.Location
	case savepoint.Failed:
		if st.Location != "" {
			return OutcomeJobFailedWhileStopping, fmt.Sprintf("the savepoint completed at %s, then the job failed while stopping: %s", st.Location, st.Failure)
		}
		return OutcomeSavepointFailed, "savepoint failed: " + st.Failure
	case savepoint.LostForGood:
		if ended(p) {
			if stoppedBy(p) {
				return OutcomeSavepointLost, fmt.Sprintf("the %s triggered at %s may have ended the job, but its savepoint is not known: %s; "+
					"if it completed, it lies in %s: restore from it by hand", kindName(st.Kind, p.Stop.Strategy), stamp(st.TriggerTime), st.Failure, dirName(dir))
			}
			return OutcomeJobTerminal, "the job had ended before its savepoint was taken: " + st.Failure
		}
		return OutcomeSavepointLost, st.Failure
	case savepoint.JobGone:
		return OutcomeJobGone, "Flink does not know the job: " + st.Failure
	case savepoint.JobTerminal:
		return OutcomeJobTerminal, "the job already ended: " + st.Failure
	case savepoint.TimedOut:
		r := "savepoint timed out: " + st.Failure
		if st.Location != "" {
			r += "; it completed later at " + st.Location
		}
		return OutcomeTimedOut, r
	}
	return OutcomeSavepointFailed, fmt.Sprintf("savepoint ended in state %q: %s", st.State, st.Failure)
}

// stoppedBy reports whether the savepoint of p may be the one that ended
// its job: a stop with savepoint and a FINISHED job, or a cancel with
// savepoint and a CANCELED one.
func stoppedBy(p *Progress) bool {
	switch {
	case p.Savepoint.Status.Kind == flinkapi.OpStopWithSavepoint:
		return p.Replace.Observed.State == flinkapi.JobFinished
	case p.Stop.Strategy == CancelWithSavepoint:
		return p.Replace.Observed.State == flinkapi.JobCanceled
	}
	return false
}

func kindName(k flinkapi.OperationKind, s StopStrategy) string {
	switch {
	case k == flinkapi.OpStopWithSavepoint:
		return "stop with savepoint"
	case s == CancelWithSavepoint:
		return "cancel with savepoint"
	}
	return "savepoint"
}

// dirName names a savepoint target directory for people.
func dirName(dir string) string {
	if dir == "" {
		return "the cluster's savepoint directory (state.savepoints.dir)"
	}
	return dir
}

// errMessage is a short message of a transient error.
func errMessage(err error) string {
	var ae *flinkapi.APIError
	if errors.As(err, &ae) {
		if m := ae.Message(); m != "" {
			return fmt.Sprintf("%d: %s", ae.StatusCode, m)
		}
	}
	return err.Error()
}

// SavepointProgress is the record of a savepoint (or checkpoint) trigger
// in a Progress: of TakeSavepoint, of a stop with savepoint (Stop,
// Upgrade, Teardown, BlueGreen, Canary) and of a triggered checkpoint.
type SavepointProgress struct {
	// Status is the status of the savepoint operation, if any.
	Status savepoint.Status `json:"status,omitzero"`
	// Resend is when the job's checkpoint history last showed no
	// savepoint of the recorded trigger, which Flink had not
	// acknowledged, before it was sent again (format 5): a trigger
	// recorded, or cleared so, longer ago than Flink surely keeps a
	// trigger id is looked up in the history before it is sent, as a
	// request sent with it before may have taken a savepoint whose id
	// Flink forgot since.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Resend time.Time `json:"resend,omitzero"`
	// Location is the savepoint's location once known. It is never cleared.
	Location string `json:"location,omitempty"`
}
