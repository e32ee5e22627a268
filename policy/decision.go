package policy

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Action is what a decision tells the caller to do now.
type Action string

// Actions.
const (
	// ActionNone: nothing to do (the spec is unchanged, the job runs, or it
	// ended in a way that is not restarted).
	ActionNone Action = "None"
	// ActionProceed: the old job is not running; deploy the new spec now,
	// from the RestorePoint (Kind None: without state).
	ActionProceed Action = "Proceed"
	// ActionStopWithSavepoint: stop the running job with a savepoint
	// (record Decision.Deadline as the savepoint's deadline), then evaluate
	// again; the next decision restores from the savepoint.
	ActionStopWithSavepoint Action = "StopWithSavepoint"
	// ActionCancelFirst: cancel the old job without a savepoint; once the
	// JobManager reports it CANCELED or forgets it, deploy from the
	// RestorePoint (Kind None: without state).
	ActionCancelFirst Action = "CancelFirst"
	// ActionWait: do nothing until something changes, at the latest until
	// Decision.Deadline; look again after RequeueAfter.
	ActionWait Action = "Wait"
	// ActionRestart: start the failed or lost job again from the
	// RestorePoint, and record the restart (RestartPolicy.CountRestart).
	ActionRestart Action = "Restart"
	// ActionBlock: do not act; the job stays as it is. The Reason and the
	// Message say why and what would unblock it. If RequeueAfter is set, the
	// decision may change by then.
	ActionBlock Action = "Block"
)

// Reason is a stable code for why a decision was made, in CamelCase so it
// can serve as a Kubernetes condition reason.
type Reason string

// Reasons of EvaluateUpdate and EvaluateRestart.
const (
	// ReasonPreflightRefused (Block): the preflight of an upgrade found
	// that the new job cannot start from the old one's state, or that the
	// cluster has not the task slots for it (ComparePlans); the old job
	// is left running.
	ReasonPreflightRefused Reason = "PreflightRefused"
	// ReasonInvalidPolicy (Block): the policy does not validate.
	ReasonInvalidPolicy Reason = "InvalidPolicy"
	// ReasonUpToDate (None): the spec did not change.
	ReasonUpToDate Reason = "UpToDate"
	// ReasonJobManagerUnreachable (Wait): the JobManager does not answer;
	// wait for it up to the transition timeout.
	ReasonJobManagerUnreachable Reason = "JobManagerUnreachable"
	// ReasonJobManagerUnreachableTimeout (Block): the JobManager has not
	// answered for longer than the transition timeout; nothing is done to a
	// job whose state is unknown.
	ReasonJobManagerUnreachableTimeout Reason = "JobManagerUnreachableTimeout"
	// ReasonJobTransitioning (Wait): the job is in a transitional state
	// (CANCELLING, RESTARTING, ...) or one this package does not know.
	ReasonJobTransitioning Reason = "JobTransitioning"
	// ReasonJobStuck: the job stayed in a transitional state longer than
	// the transition timeout. Block while it is CANCELLING; otherwise, for
	// an update, cancel it and restore from the RestorePoint.
	ReasonJobStuck Reason = "JobStuck"
	// ReasonSavepointInProgress (Wait): a savepoint is in flight and its
	// deadline has not passed.
	ReasonSavepointInProgress Reason = "SavepointInProgress"
	// ReasonSavepointLost (Wait): the JobManager forgot the savepoint's
	// trigger id; look the savepoint up in the checkpoint history (package
	// savepoint) before its deadline passes.
	ReasonSavepointLost Reason = "SavepointLost"
	// ReasonSavepointBeforeUpdate (StopWithSavepoint): Savepoint mode and
	// the job runs.
	ReasonSavepointBeforeUpdate Reason = "SavepointBeforeUpdate"
	// ReasonSavepointRetry (StopWithSavepoint): the last savepoint failed
	// or timed out and attempts remain; trigger a new one with a new id.
	ReasonSavepointRetry Reason = "SavepointRetry"
	// ReasonSavepointFallback (CancelFirst): the savepoint failed, no
	// attempts remain and FallbackToLastState allows the newest state
	// within the maximum age.
	ReasonSavepointFallback Reason = "SavepointFallback"
	// ReasonSavepointFailed (Block): the savepoint failed, no attempts
	// remain and the policy allows no fallback. The job keeps running.
	ReasonSavepointFailed Reason = "SavepointFailed"
	// ReasonSavepointTimedOut (Block): as SavepointFailed, for a savepoint
	// that outlived its deadline.
	ReasonSavepointTimedOut Reason = "SavepointTimedOut"
	// ReasonNoRecentState: no state within the maximum age. Block when
	// the job is not running; StopWithSavepoint for a running LastState
	// job.
	ReasonNoRecentState Reason = "NoRecentState"
	// ReasonNoRecentSavepoint (Block): Savepoint mode, the job is not
	// running, no savepoint is within the maximum age, and a young enough
	// retained checkpoint exists that FallbackToLastState does not allow.
	ReasonNoRecentSavepoint Reason = "NoRecentSavepoint"
	// ReasonRestoreFromState (Proceed or CancelFirst): restore the new job
	// from the RestorePoint.
	ReasonRestoreFromState Reason = "RestoreFromState"
	// ReasonStatelessUpgrade (Proceed or CancelFirst): Stateless mode; the
	// new job starts without state.
	ReasonStatelessUpgrade Reason = "StatelessUpgrade"
	// ReasonStartWithoutState (Proceed or CancelFirst): no state within the
	// maximum age exists and AllowStartWithoutState allows starting empty.
	ReasonStartWithoutState Reason = "StartWithoutState"
	// ReasonFirstDeploy (Proceed): first deployment, no state exists.
	ReasonFirstDeploy Reason = "FirstDeploy"

	// ReasonJobRunning (None): the job runs; no restart is needed.
	ReasonJobRunning Reason = "JobRunning"
	// ReasonJobFinished (None): the job finished; finished jobs are never
	// restarted.
	ReasonJobFinished Reason = "JobFinished"
	// ReasonJobCancelled (None): the job was cancelled and the restart
	// policy is Never: it stays cancelled.
	ReasonJobCancelled Reason = "JobCancelled"
	// ReasonRestartDisabled (Block): the restart policy is Never.
	ReasonRestartDisabled Reason = "RestartDisabled"
	// ReasonRestartBudgetExhausted (Block): MaxRestarts restarts happened
	// within the window; RequeueAfter says when the window ends.
	ReasonRestartBudgetExhausted Reason = "RestartBudgetExhausted"
	// ReasonRestartBackoff (Wait): the backoff since the last restart or
	// failure has not passed.
	ReasonRestartBackoff Reason = "RestartBackoff"
	// ReasonRestartFailedJob (Restart): the job FAILED; restart it from the
	// RestorePoint.
	ReasonRestartFailedJob Reason = "RestartFailedJob"
	// ReasonRestartLostJob (Restart): the JobManager no longer knows the job
	// (or it stayed SUSPENDED past the transition timeout); start it again
	// from the RestorePoint.
	ReasonRestartLostJob Reason = "RestartLostJob"
	// ReasonRestartCancelledJob (Restart): the job was CANCELED by someone
	// else while it is meant to run; restart it from the RestorePoint.
	ReasonRestartCancelledJob Reason = "RestartCancelledJob"
)

// RestoreKind says what a RestorePoint restores from.
type RestoreKind string

// Restore kinds. The zero RestoreKind means the decision restores nothing
// now (Wait, Block, StopWithSavepoint, None).
const (
	// KindNone: the new job deliberately starts without state.
	KindNone RestoreKind = "None"
	// KindSavepoint: restore from a savepoint.
	KindSavepoint RestoreKind = "Savepoint"
	// KindCheckpoint: restore from a retained checkpoint.
	KindCheckpoint RestoreKind = "Checkpoint"
)

// RestorePoint is the state a new job starts from.
//
// +kubebuilder:object:generate=false
type RestorePoint struct {
	// Kind is Savepoint, Checkpoint, None (start without state), or empty
	// when the decision starts no job.
	Kind RestoreKind `json:"kind,omitempty"`
	// Path is the savepoint's or checkpoint's location; never empty when
	// Kind is Savepoint or Checkpoint.
	Path string `json:"path,omitempty"`
	// Time is when the state was taken; the state's age is now minus Time.
	Time time.Time `json:"time,omitzero"`
	// AllowNonRestoredState is the update policy's setting, to pass along
	// with Path when the job is submitted.
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`
}

// IsSet reports whether r names state to restore from (a savepoint or a
// checkpoint with a path).
func (r RestorePoint) IsSet() bool {
	return (r.Kind == KindSavepoint || r.Kind == KindCheckpoint) && r.Path != ""
}

// Decision is the outcome of EvaluateUpdate or EvaluateRestart: what to do,
// from which state, why, and when to look again.
//
// +kubebuilder:object:generate=false
type Decision struct {
	// Action is what to do now.
	Action Action
	// RestorePoint is the state to start from for Proceed, CancelFirst and
	// Restart (Kind None: explicitly without state); zero otherwise.
	RestorePoint RestorePoint
	// Reason is a stable code; Message explains it.
	Reason Reason
	// Deadline is, for Wait, when the wait ends at the latest (always after
	// the decision's time); for StopWithSavepoint, the deadline to record
	// for the savepoint. Zero otherwise.
	Deadline time.Time
	// RequeueAfter is when to evaluate again; zero means only when
	// something changes (such as the spec).
	RequeueAfter time.Duration
	// Details are the facts the decision rests on; Message formats them.
	Details Details
}

// Details are the facts behind a Decision.
//
// +kubebuilder:object:generate=false
type Details struct {
	// Now is the time the decision was made for.
	Now time.Time
	// Mode is the update policy's upgrade mode (EvaluateUpdate only).
	Mode UpgradeMode
	// JobState is the observed job state; empty when the job is missing or
	// the JobManager did not answer.
	JobState flinkapi.JobState
	// Newest is the newest restore point of the kinds the policy accepts,
	// within the maximum age or not; zero if there is none.
	Newest RestorePoint
	// Skipped is a restore point within the maximum age that the policy
	// does not accept (a checkpoint in Savepoint mode without
	// FallbackToLastState); zero if none.
	Skipped RestorePoint
	// SavepointsOnly reports that the policy accepts only savepoints to
	// restore from (Savepoint mode without FallbackToLastState).
	SavepointsOnly bool
	// MaxStateAge is the policy's maximum state age.
	MaxStateAge time.Duration
	// Since is when the condition waited on or timed out began.
	Since time.Time
	// Limit is the timeout, backoff or window that applies.
	Limit time.Duration
	// Count and Max are savepoint attempts or restarts, and their limit.
	Count, Max int
	// TimedOut reports that the savepoint outlived its deadline (rather
	// than failing).
	TimedOut bool
	// Failure is the savepoint's failure cause, or why the policy or the
	// restore request is invalid.
	Failure string
	// Requested reports that the decision carries out a restore request
	// (Observations.Restore).
	Requested bool
	// Warning, if set, is a stable code for something the caller should
	// report although it did not change the decision, such as
	// WarningStateOlderThanMaxAge; Message explains it.
	Warning Reason
}

// Message explains the decision in one line for people, naming the ages,
// limits and deadlines involved. It is computed from the decision's fields
// on each call.
func (d Decision) Message() string {
	t := &d.Details
	var sb strings.Builder
	b := &sb
	b.Grow(messageSize(d.RestorePoint.Path, t.Failure))
	if writeRequest(b, &d) {
		return b.String()
	}
	switch d.Reason {
	case ReasonInvalidPolicy:
		b.WriteString("the policy is invalid: ")
		b.WriteString(oneLine(t.Failure))
	case ReasonUpToDate:
		b.WriteString("the spec did not change; nothing to do")
	case ReasonJobManagerUnreachable:
		b.WriteString("the JobManager does not answer (")
		writeSince(b, "last answer", t.Since, t.Now)
		b.WriteString("); waiting up to ")
		writeDur(b, t.Limit)
		b.WriteString(", until ")
		writeClock(b, d.Deadline)
	case ReasonJobManagerUnreachableTimeout:
		b.WriteString("the JobManager has not answered for ")
		writeAgeOrUnknown(b, t.Since, t.Now)
		b.WriteString(", longer than the limit of ")
		writeDur(b, t.Limit)
		b.WriteString("; nothing is done to a job whose state is unknown")
	case ReasonJobTransitioning:
		b.WriteString("the job has been ")
		b.WriteString(stateName(t.JobState))
		b.WriteString(" for ")
		writeDur(b, age(t.Since, t.Now))
		b.WriteString("; waiting up to ")
		writeDur(b, t.Limit)
		b.WriteString(" for it to settle, until ")
		writeClock(b, d.Deadline)
	case ReasonJobStuck:
		b.WriteString("the job has been ")
		b.WriteString(stateName(t.JobState))
		b.WriteString(" for ")
		writeDur(b, age(t.Since, t.Now))
		b.WriteString(", longer than the limit of ")
		writeDur(b, t.Limit)
		if d.Action == ActionCancelFirst {
			b.WriteString("; cancel it, then ")
			writeRestore(b, d.RestorePoint, t)
		} else {
			b.WriteString("; it cannot be stopped or replaced safely until it settles: check the JobManager")
		}
	case ReasonSavepointInProgress:
		b.WriteString("a savepoint is in progress (")
		writeSince(b, "triggered", t.Since, t.Now)
		b.WriteString("); waiting for it until its deadline ")
		writeClock(b, d.Deadline)
	case ReasonSavepointLost:
		b.WriteString("the JobManager no longer knows the savepoint's trigger id; look for the savepoint in the job's checkpoint history, until its deadline ")
		writeClock(b, d.Deadline)
	case ReasonSavepointBeforeUpdate:
		b.WriteString("the job is RUNNING and the policy takes a savepoint on update: stop it with a savepoint (deadline ")
		writeClock(b, d.Deadline)
		b.WriteString("), then restore from it")
	case ReasonSavepointRetry:
		writeSavepointFailure(b, t)
		b.WriteString("; triggering attempt ")
		writeInt(b, t.Count+1)
		b.WriteString(" of ")
		writeInt(b, t.Max)
		b.WriteString(" with a new trigger id (deadline ")
		writeClock(b, d.Deadline)
		b.WriteString(")")
	case ReasonSavepointFallback:
		writeSavepointFailure(b, t)
		b.WriteString(" after ")
		writeAttempts(b, t.Count)
		b.WriteString("; falling back as the policy allows: cancel the job, then ")
		writeRestore(b, d.RestorePoint, t)
	case ReasonSavepointFailed, ReasonSavepointTimedOut:
		writeSavepointFailure(b, t)
		b.WriteString(" after ")
		writeAttempts(b, t.Count)
		b.WriteString(" (limit ")
		writeInt(b, t.Max)
		b.WriteString("); the job keeps running; ")
		if t.Newest.IsSet() && age(t.Newest.Time, t.Now) <= t.MaxStateAge {
			b.WriteString("a ")
			writeLower(b, string(t.Newest.Kind))
			b.WriteString(" ")
			writeDur(b, age(t.Newest.Time, t.Now))
			b.WriteString(" old is within the limit of ")
			writeDur(b, t.MaxStateAge)
			b.WriteString(", but fallbackToLastState is off")
		} else {
			writeNoState(b, t)
		}
		b.WriteString("; fix the cause and change the spec to retry")
	case ReasonNoRecentState:
		writeNoState(b, t)
		switch d.Action {
		case ActionStopWithSavepoint:
			b.WriteString(": stop the job with a savepoint (deadline ")
			writeClock(b, d.Deadline)
			b.WriteString("), then restore from it")
		case ActionBlock:
			if t.JobState != "" {
				b.WriteString("; the job is ")
				b.WriteString(stateName(t.JobState))
			}
			b.WriteString("; raise maxStateAge, allow starting without state, or restore by hand")
		}
	case ReasonNoRecentSavepoint:
		writeNoState(b, t)
		b.WriteString("; a retained checkpoint ")
		writeDur(b, age(t.Skipped.Time, t.Now))
		b.WriteString(" old exists, but fallbackToLastState is off")
	case ReasonRestoreFromState:
		switch {
		case d.Action == ActionCancelFirst:
			b.WriteString("cancel the job, then ")
		case t.JobState == "":
			b.WriteString("the JobManager does not know the job: ")
		default:
			b.WriteString("the job is ")
			b.WriteString(string(t.JobState))
			b.WriteString(": ")
		}
		writeRestore(b, d.RestorePoint, t)
	case ReasonStatelessUpgrade:
		if d.Action == ActionCancelFirst {
			b.WriteString("stateless upgrade: cancel the job, then start the new one without state")
		} else {
			b.WriteString("stateless upgrade: start the new job without state")
		}
	case ReasonStartWithoutState:
		writeNoState(b, t)
		if d.Action == ActionCancelFirst {
			b.WriteString("; the policy allows starting without state: cancel the job, then start the new one without state")
		} else {
			b.WriteString("; the policy allows starting without state: start the new job without state")
		}
	case ReasonFirstDeploy:
		b.WriteString("first deployment and no state exists: ")
		if d.Action == ActionCancelFirst {
			b.WriteString("cancel the job, then ")
		}
		b.WriteString("start without state")
	case ReasonJobRunning:
		b.WriteString("the job is RUNNING; no restart needed")
	case ReasonJobFinished:
		b.WriteString("the job FINISHED; finished jobs are not restarted")
	case ReasonJobCancelled:
		b.WriteString("the job was CANCELED and the restart policy is Never; it is not restarted, a spec change restores it")
	case ReasonRestartDisabled:
		writeJob(b, t.JobState)
		b.WriteString(" and the restart policy is Never; it is not restarted, a spec change restores it")
	case ReasonRestartBudgetExhausted:
		writeJob(b, t.JobState)
		b.WriteString(" after ")
		writeInt(b, t.Count)
		b.WriteString(" restarts within ")
		writeDur(b, t.Limit)
		b.WriteString(" (limit ")
		writeInt(b, t.Max)
		b.WriteString("); no restart before ")
		writeClock(b, t.Since.Add(t.Limit))
	case ReasonRestartBackoff:
		b.WriteString("restart backoff of ")
		writeDur(b, t.Limit)
		b.WriteString(": waiting until ")
		writeClock(b, d.Deadline)
		b.WriteString(" before restart ")
		writeInt(b, t.Count+1)
		b.WriteString(" of ")
		writeInt(b, t.Max)
	case ReasonRestartFailedJob, ReasonRestartLostJob, ReasonRestartCancelledJob:
		writeJob(b, t.JobState)
		b.WriteString(": restart ")
		writeInt(b, t.Count+1)
		b.WriteString(" of ")
		writeInt(b, t.Max)
		b.WriteString(", ")
		writeRestore(b, d.RestorePoint, t)
	default:
		b.WriteString(string(d.Action))
		b.WriteString(": ")
		b.WriteString(string(d.Reason))
	}
	return b.String()
}

func writeRestore(b *strings.Builder, r RestorePoint, t *Details) {
	if !r.IsSet() {
		b.WriteString("start without state")
		return
	}
	b.WriteString("restore from ")
	if r.Kind == KindSavepoint {
		b.WriteString("savepoint ")
	} else {
		b.WriteString("checkpoint ")
	}
	b.WriteString(r.Path)
	b.WriteString(" (")
	writeDur(b, age(r.Time, t.Now))
	b.WriteString(" old, limit ")
	writeDur(b, t.MaxStateAge)
	b.WriteString(")")
}

// writeNoState says that no accepted state is within the maximum age, and
// how old the newest is.
func writeNoState(b *strings.Builder, t *Details) {
	kind := "state"
	if t.SavepointsOnly {
		kind = "savepoint"
	}
	if !t.Newest.IsSet() {
		b.WriteString("no ")
		b.WriteString(kind)
		b.WriteString(" found (limit ")
		writeDur(b, t.MaxStateAge)
		b.WriteString(")")
		return
	}
	b.WriteString("no ")
	b.WriteString(kind)
	b.WriteString(" within the limit of ")
	writeDur(b, t.MaxStateAge)
	b.WriteString(" (newest: ")
	writeLower(b, string(t.Newest.Kind))
	b.WriteString(" ")
	writeDur(b, age(t.Newest.Time, t.Now))
	b.WriteString(" old)")
}

func writeSavepointFailure(b *strings.Builder, t *Details) {
	if t.TimedOut {
		b.WriteString("the savepoint timed out (")
		writeSince(b, "triggered", t.Since, t.Now)
		b.WriteString(", deadline ")
		writeDur(b, t.Limit)
		b.WriteString(")")
		return
	}
	b.WriteString("the savepoint failed")
	if t.Failure != "" {
		b.WriteString(" (")
		b.WriteString(oneLine(clip(t.Failure, 200)))
		b.WriteString(")")
	}
}

func writeAttempts(b *strings.Builder, n int) {
	writeInt(b, n)
	if n == 1 {
		b.WriteString(" attempt")
	} else {
		b.WriteString(" attempts")
	}
}

func writeSince(b *strings.Builder, what string, since, now time.Time) {
	b.WriteString(what)
	b.WriteString(" ")
	writeAgo(b, since, now)
}

func writeAgo(b *strings.Builder, since, now time.Time) {
	if since.IsZero() {
		b.WriteString("at an unknown time")
		return
	}
	writeDur(b, age(since, now))
	b.WriteString(" ago")
}

func writeAgeOrUnknown(b *strings.Builder, since, now time.Time) {
	if since.IsZero() {
		b.WriteString("an unknown time")
		return
	}
	writeDur(b, age(since, now))
}

func writeClock(b *strings.Builder, t time.Time) {
	var buf [64]byte
	b.Write(t.UTC().AppendFormat(buf[:0], time.RFC3339))
}

// writeJob says what became of the job.
func writeJob(b *strings.Builder, s flinkapi.JobState) {
	if s == "" {
		b.WriteString("the JobManager does not know the job")
		return
	}
	b.WriteString("the job is ")
	b.WriteString(string(s))
}

func stateName(s flinkapi.JobState) string {
	if s == "" {
		return "missing"
	}
	return string(s)
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// age is now minus t, never negative.
func age(t, now time.Time) time.Duration {
	d := now.Sub(t)
	if d < 0 {
		return 0
	}
	return d
}

// fmtDur formats d for people: "45s", "8m", "2m30s", "26h", "1h30m".
// Durations of an hour or more drop seconds; all drop fractions.
func fmtDur(d time.Duration) string {
	var buf [32]byte
	return string(appendDur(buf[:0], d))
}

// writeDur writes fmtDur(d) to b without allocating.
func writeDur(b *strings.Builder, d time.Duration) {
	var buf [32]byte
	b.Write(appendDur(buf[:0], d))
}

// appendDur appends fmtDur(d) to dst.
func appendDur(dst []byte, d time.Duration) []byte {
	if d < 0 {
		if d == math.MinInt64 {
			d++
		}
		return appendDur(append(dst, '-'), -d)
	}
	if d < time.Second {
		// Rounded to milliseconds, as Duration.String writes it: "0s",
		// "1ms" to "999ms", or "1s" when it rounds up to a second.
		switch ms := int64(d.Round(time.Millisecond) / time.Millisecond); ms {
		case 0:
			return append(dst, "0s"...)
		case 1000:
			return append(dst, "1s"...)
		default:
			return append(strconv.AppendInt(dst, ms, 10), "ms"...)
		}
	}
	if d >= time.Hour {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	if h > 0 {
		dst = append(strconv.AppendInt(dst, h, 10), 'h')
	}
	if m > 0 {
		dst = append(strconv.AppendInt(dst, m, 10), 'm')
	}
	if s > 0 {
		dst = append(strconv.AppendInt(dst, s, 10), 's')
	}
	return dst
}

// writeInt writes strconv.Itoa(n) to b without allocating.
func writeInt(b *strings.Builder, n int) {
	var buf [24]byte
	b.Write(strconv.AppendInt(buf[:0], int64(n), 10))
}

// writeLower writes strings.ToLower(s) to b, without allocating when s is
// ASCII.
func writeLower(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			b.WriteString(strings.ToLower(s))
			return
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
}

// messageSize is the room a decision's message is given up front: its
// fixed text, clock times and durations, and the path and failure it may
// quote.
func messageSize(path, failure string) int {
	return 224 + len(path) + min(len(failure), 256)
}
