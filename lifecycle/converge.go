package lifecycle

import (
	"context"
	"errors"
	"fmt"
)

// ErrActionFailed is matched by the error of Converge when an action
// ended without success (an *ActionError).
var ErrActionFailed = errors.New("lifecycle: the action did not succeed")

// ActionError is the error of Converge for an action that ended without
// success: which action, how it ended and why (the status's
// Progress.Reason), and the status's verdict then (VerdictFailed, or
// VerdictBlocked for an action refused with the job left as it was). It
// matches ErrActionFailed.
type ActionError struct {
	Action  JobAction
	Outcome Outcome
	Reason  string
	Verdict Verdict
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("lifecycle: %s ended %s: %s", e.Action, e.Outcome, e.Reason)
}

// Is makes an ActionError match ErrActionFailed.
func (e *ActionError) Is(target error) bool { return target == ErrActionFailed }

// ErrNotCarriedOut is matched by the error of Converge for a spec that
// the Controller does not carry out, with no action of its own to blame
// and none to wait for (a *VerdictError).
var ErrNotCarriedOut = errors.New("lifecycle: the spec is not carried out")

// VerdictError is the error of Converge for a status whose verdict is
// Failed or Blocked at rest: the job failed and the restart policy does
// not start it again, it runs unhealthy, the spec's job was rolled back,
// a policy blocks it. Reason and Message are the status's, for people.
// It matches ErrNotCarriedOut.
type VerdictError struct {
	Verdict   Verdict
	Situation Situation
	Reason    string
	Message   string
}

func (e *VerdictError) Error() string {
	return fmt.Sprintf("lifecycle: the spec is not carried out (%s, job %s): %s: %s", e.Verdict, e.Situation, e.Reason, e.Message)
}

// Is makes a VerdictError match ErrNotCarriedOut.
func (e *VerdictError) Is(target error) bool { return target == ErrNotCarriedOut }

// Converge calls Reconcile until the job runs as spec says, storing st
// with save after every call, before anything else and whatever the call
// returned, and waiting between calls as each asks (Result.RequeueAfter)
// on the Controller's Clock. What it returns follows from the status's
// verdict (JobStatus.VerdictFor) after each call.
//
// It returns nil once the verdict is Done and the status is converged
// (JobStatus.Converged): the job runs stably, is suspended, or (a
// bounded job) finished; a savepoint or disposal in flight beside the
// job (a verdict of Done for readers of the status) is stepped to its
// end and the job read again first. It returns an error matching
// ErrInvalidSpec, after one call that records it in st, for a spec the
// Controller cannot act on (Invalid); an *ActionError (matching
// ErrActionFailed) as soon as an action ends without success (Failed or
// Blocked; called again, Converge waits for the Controller to try the
// action again once its RetryInterval has passed: JobStatus.RetryPending);
// a *VerdictError (matching ErrNotCarriedOut) for a verdict Failed or
// Blocked that no action ended in (a job failed that the restart policy
// does not restart, a spec whose job was rolled back); the error of
// Reconcile or of save; and ctx's error when it ends first. While the
// verdict is Progressing or Waiting (too few free task slots, a
// JobManager that does not answer, a restart's backoff) Converge goes
// on, saying why in st: bound it with ctx.
func (c *Controller) Converge(ctx context.Context, spec JobSpec, st *JobStatus, save func(*JobStatus) error) error {
	if save == nil {
		return errors.New("lifecycle: Converge needs a save function: the status is stored after every call")
	}
	clock := c.clock()
	for {
		res, err := c.Reconcile(ctx, spec, st)
		if serr := save(st); serr != nil {
			return errors.Join(err, fmt.Errorf("lifecycle: storing the status: %w", serr))
		}
		if err != nil {
			return err
		}
		switch v := st.VerdictFor(spec); {
		case v == VerdictDone && st.Converged(spec):
			return nil
		case v == VerdictDone:
			// A savepoint or disposal beside the job: Done for a reader
			// of the status, but the job was not read while it ran, and
			// may have failed meanwhile; stepped to its end, and the job
			// read again.
		case v != VerdictFailed && v != VerdictBlocked:
		case res.Outcome != "" && res.Outcome != OutcomeSucceeded && res.Outcome != OutcomeNotNeeded:
			// The action that ended in this call.
			return &ActionError{Action: st.Action, Outcome: res.Outcome, Reason: st.Progress.Reason, Verdict: v}
		case !st.RetryPending(spec):
			return &VerdictError{Verdict: v, Situation: st.Situation, Reason: st.Reason, Message: st.Message}
		}
		if err := clock.Sleep(ctx, res.RequeueAfter); err != nil {
			return err
		}
	}
}
