package lifecycle

import (
	"context"
	"errors"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// LateSavepoint is a savepoint the Controller triggered beside the
// running job (a periodic one, or a user's one-shot request) whose
// action ended TimedOut at the update policy's savepoint deadline while
// Flink may still complete it: Flink goes on with a savepoint until the
// job's checkpoint timeout (execution.checkpointing.timeout, 10 minutes
// by default), not the Controller's deadline. The Controller looks it up
// at later calls with no action in flight (one request a call, within
// MaxRequestsPerCall): it polls the trigger id, reads the job's
// checkpoint timeout once, and once Flink forgot the trigger id reads
// the job's checkpoint history. A savepoint that completed is recorded
// in the history (and as Latest when it is the newest state of the
// deployment's job); one that failed, or that nothing showed completed
// by GiveUp, counts as a failed periodic savepoint
// (JobStatus.SavepointFailures) only then. No periodic savepoint is
// triggered, and a savepoint request waits, while one is pending. The
// zero LateSavepoint is none (format 7).
type LateSavepoint struct {
	// JobID is the job the savepoint was triggered of, TriggerID the
	// trigger id it was triggered with, and Reason why it was taken
	// (savepoint.ReasonScheduled for a periodic one).
	JobID     flinkapi.JobID     `json:"jobID,omitempty"`
	TriggerID flinkapi.TriggerID `json:"triggerID,omitempty"`
	Reason    savepoint.Reason   `json:"reason,omitempty"`
	// TriggerTime is when it was triggered: the time of its record once
	// it completed.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	TriggerTime time.Time `json:"triggerTime,omitzero"`
	// GiveUp is when the lookup ends without an answer: the trigger time
	// plus the job's checkpoint timeout (Flink's default until it was
	// read, at most MaxLateSavepointWait) and a minute to read Flink's
	// answer.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	GiveUp time.Time `json:"giveUp,omitzero"`
	// NextRead is when the next read is due.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	NextRead time.Time `json:"nextRead,omitzero"`
	// Reads counts the reads so far, Failures those in a row whose
	// request failed (the next waits longer).
	Reads    int `json:"reads,omitempty"`
	Failures int `json:"failures,omitempty"`
	// TimeoutRead is set once the job's checkpoint configuration was
	// read (GiveUp counts from its timeout), Forgotten once Flink
	// answered that it does not know the trigger id (or the job): the
	// job's checkpoint history is read instead.
	TimeoutRead bool `json:"timeoutRead,omitempty"`
	Forgotten   bool `json:"forgotten,omitempty"`
}

// Pending reports whether a lookup is pending.
func (l LateSavepoint) Pending() bool { return l.TriggerID != "" && l.JobID != "" }

// MaxLateSavepointWait bounds how long after its trigger a late savepoint
// is looked up, whatever the job's checkpoint timeout says.
const MaxLateSavepointWait = time.Hour

// flinkCheckpointTimeout is Flink's default checkpoint timeout
// (execution.checkpointing.timeout), which bounds a late savepoint's
// lookup until the job's own is read.
const flinkCheckpointTimeout = 10 * time.Minute

// lateGrace is how long past the checkpoint timeout a late savepoint is
// still read: Flink expires it at the timeout, and the next read sees
// that.
const lateGrace = time.Minute

// awaitLate records the savepoint of the TakeSavepoint action that
// ended in st as a late one to look up, when it ended TimedOut with a
// trigger id that Flink may have taken and no location, and reports
// whether it did. Another late savepoint still pending is concluded
// first (given up): there is one record.
func (c *Controller) awaitLate(st *JobStatus, now time.Time) bool {
	p := &st.Progress
	sp := p.Savepoint.Status
	if p.Outcome != OutcomeTimedOut || sp.Location != "" || sp.TriggerID == "" || sp.JobID == "" || sp.TriggerTime.IsZero() {
		return false
	}
	if st.LateSavepoint.Pending() && st.LateSavepoint.TriggerID != sp.TriggerID {
		c.lateFailed(context.Background(), st, OutcomeTimedOut, "a later savepoint took its place before it was found")
	}
	st.LateSavepoint = LateSavepoint{JobID: sp.JobID, TriggerID: sp.TriggerID, Reason: reasonOr(sp.Reason, savepoint.ReasonUser),
		TriggerTime: sp.TriggerTime, GiveUp: sp.TriggerTime.Add(flinkCheckpointTimeout + lateGrace), NextRead: now}
	return true
}

// lateAnswer is what one read of a late savepoint's lookup found: it
// completed at loc (ok), or failed (failed, failure); err is a read that
// failed, to be tried again.
type lateAnswer struct {
	loc, failure string
	ok, failed   bool
	err          error
}

// lookLate does the next read of the late savepoint pending in st, when
// it is due and the call's budget (obs.Requests) allows, and applies its
// answer; it returns when to call again for the next read (0: none
// pending).
func (c *Controller) lookLate(ctx context.Context, api API, st *JobStatus, obs *Observation, now time.Time) time.Duration {
	l := &st.LateSavepoint
	if !l.Pending() {
		return 0
	}
	if now.Before(l.NextRead) || obs.Requests >= MaxRequestsPerCall {
		return max(l.NextRead.Sub(now), soon)
	}
	obs.Requests++
	l.Reads++
	a := readLate(ctx, api, l, now)
	if c.lateEnded(ctx, st, a, now) {
		return 0
	}
	return c.nextLateRead(l, a, now)
}

// readLate does the next read of the late savepoint l: the job's
// checkpoint timeout (once, after the first read), its trigger id, or,
// once Flink forgot the trigger, the job's checkpoint history.
func readLate(ctx context.Context, api API, l *LateSavepoint, now time.Time) lateAnswer {
	switch {
	case !l.TimeoutRead && l.Reads > 1:
		return readLateTimeout(ctx, api, l)
	case !l.Forgotten:
		return readLateTrigger(ctx, api, l)
	}
	return readLateHistory(ctx, api, l, now)
}

// lateEnded applies the answer a to the late savepoint pending in st
// when it ends the lookup (the savepoint completed or failed, or the
// lookup gave up), and reports whether it did.
func (c *Controller) lateEnded(ctx context.Context, st *JobStatus, a lateAnswer, now time.Time) bool {
	l := &st.LateSavepoint
	switch {
	case a.ok:
		c.lateCompleted(ctx, st, a.loc)
	case a.failed:
		c.lateFailed(ctx, st, OutcomeSavepointFailed, a.failure)
	case !now.Before(l.GiveUp):
		why := "nothing showed it completed by " + stamp(l.GiveUp) + " (its trigger time and the job's checkpoint timeout)"
		if a.err != nil {
			why += "; the last read failed: " + errMessage(a.err)
		}
		c.lateFailed(ctx, st, OutcomeTimedOut, why)
	default:
		return false
	}
	return true
}

// nextLateRead records when to read the late savepoint l again after
// the answer a, and returns the wait.
func (c *Controller) nextLateRead(l *LateSavepoint, a lateAnswer, now time.Time) time.Duration {
	wait := lagDelay(c.Timing.lag(), l.TriggerTime, now, c.Timing.poll(), c.poll())
	switch {
	case a.err != nil:
		l.Failures++
		wait = min(c.Timing.backoff(l.Failures), c.poll())
	case l.Forgotten && l.Reads == 1 || !l.TimeoutRead && l.Reads == 1:
		l.Failures = 0
		wait = soon // the history, or the timeout, is read next
	default:
		l.Failures = 0
	}
	l.NextRead = now.Add(wait)
	return wait
}

// readLateTimeout reads the job's checkpoint timeout, which bounds the
// lookup of l (once; Flink's default bounds it if the read fails).
func readLateTimeout(ctx context.Context, api API, l *LateSavepoint) lateAnswer {
	cfg, err := api.CheckpointConfig(ctx, l.JobID)
	l.TimeoutRead = true
	switch {
	case err == nil:
		if cfg.Timeout > 0 {
			l.GiveUp = l.TriggerTime.Add(min(cfg.Timeout, MaxLateSavepointWait) + lateGrace)
		}
	case !errors.Is(err, flinkapi.ErrNotFound):
		return lateAnswer{err: err}
	}
	return lateAnswer{}
}

// readLateTrigger asks Flink about l's trigger id.
func readLateTrigger(ctx context.Context, api API, l *LateSavepoint) lateAnswer {
	res, err := api.OperationStatus(ctx, flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: l.JobID, TriggerID: l.TriggerID})
	switch {
	case err == nil && res.Succeeded() && res.Location != "":
		return lateAnswer{loc: res.Location, ok: true}
	case err == nil && res.Completed():
		return lateAnswer{failure: "Flink failed it: " + savepoint.FailureMessage(res.Failure), failed: true}
	case err == nil:
		return lateAnswer{} // in progress
	case flinkapi.IsTriggerNotFound(err), flinkapi.IsJobNotFound(err):
		l.Forgotten = true
		return lateAnswer{}
	}
	return lateAnswer{err: err}
}

// readLateHistory looks for l in the job's checkpoint history, once
// Flink forgot its trigger id.
func readLateHistory(ctx context.Context, api API, l *LateSavepoint, now time.Time) lateAnswer {
	stats, err := api.Checkpoints(ctx, l.JobID)
	switch {
	case err == nil:
		lost := savepoint.Status{Kind: flinkapi.OpSavepoint, JobID: l.JobID, TriggerID: l.TriggerID, Reason: l.Reason,
			State: savepoint.Lost, TriggerTime: l.TriggerTime}
		if found := recoverSince(lost, stats, l.TriggerTime, now); found.State == savepoint.Succeeded && found.Location != "" {
			return lateAnswer{loc: found.Location, ok: true}
		}
		if !savepointInProgress(stats, l.TriggerTime) {
			return lateAnswer{failure: "Flink forgot its trigger id, and the job's checkpoint history shows no savepoint of it completed or in progress", failed: true}
		}
		return lateAnswer{}
	case errors.Is(err, flinkapi.ErrNotFound):
		return lateAnswer{failure: "Flink knows neither its trigger id nor the job's checkpoint history (" + errMessage(err) + ")", failed: true}
	}
	return lateAnswer{err: err}
}

// lateCompleted records the late savepoint of st, which completed at
// loc, in the history: the newest state when it is newer than Latest and
// of the deployment's job; a periodic one of that job ends the run of
// failures.
func (c *Controller) lateCompleted(ctx context.Context, st *JobStatus, loc string) {
	l := st.LateSavepoint
	rec := savepoint.Record{Location: loc, Time: l.TriggerTime, Reason: l.Reason, JobID: l.JobID}
	if l.JobID == st.JobID {
		c.recordSavepoint(st, rec)
	} else {
		// A job replaced since: its savepoint is no restore point of the
		// deployment, but its files are the deployment's to dispose of.
		st.Savepoints = st.Savepoints.Add(rec)
	}
	if l.Reason == savepoint.ReasonScheduled && l.JobID == st.JobID {
		st.SavepointFailures = 0
	}
	st.LateSavepoint = LateSavepoint{}
	c.reportLate(ctx, l, OutcomeSucceeded, "savepoint completed after its deadline at "+loc, loc)
}

// lateFailed ends the lookup of the late savepoint of st without a
// savepoint: a periodic one of the deployment's job counts as failed.
func (c *Controller) lateFailed(ctx context.Context, st *JobStatus, o Outcome, why string) {
	l := st.LateSavepoint
	if l.Reason == savepoint.ReasonScheduled && l.JobID == st.JobID {
		st.SavepointFailures++
	}
	st.LateSavepoint = LateSavepoint{}
	c.reportLate(ctx, l, o, "the savepoint triggered at "+stamp(l.TriggerTime)+" past its deadline did not complete: "+why, "")
}

// reportLate reports the end of a late savepoint's lookup as a
// transition of its action to Done.
func (c *Controller) reportLate(ctx context.Context, l LateSavepoint, o Outcome, why, loc string) {
	a := ActionSavepointRequest
	if l.Reason == savepoint.ReasonScheduled {
		a = ActionSavepoint
	}
	p := Progress{JobID: l.JobID, Phase: PhaseDone, Outcome: o, Reason: why, Savepoint: SavepointProgress{Location: loc}}
	report(ctx, string(a), c.OnTransition, c.Logger, PhaseSavepoint, &p)
}
