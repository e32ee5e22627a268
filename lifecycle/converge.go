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
// Progress.Reason). It matches ErrActionFailed.
type ActionError struct {
	Action  JobAction
	Outcome Outcome
	Reason  string
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("lifecycle: %s ended %s: %s", e.Action, e.Outcome, e.Reason)
}

// Is makes an ActionError match ErrActionFailed.
func (e *ActionError) Is(target error) bool { return target == ErrActionFailed }

// Converge calls Reconcile until the job runs as spec says
// (st.Converged(spec)), storing st with save after every call, before
// anything else and whatever the call returned, and waiting between
// calls as each asks (Result.RequeueAfter) on the Controller's Clock.
//
// It returns nil once the spec is carried out: the job runs stably, is
// suspended, or (a bounded job) finished. It returns an error matching
// ErrInvalidSpec, after one call that records it in st, for a spec the
// Controller cannot act on; an *ActionError (matching ErrActionFailed)
// as soon as an action ends without success (called again, the
// Controller tries the action again once its RetryInterval has passed);
// the error of Reconcile or of save; and ctx's error when it ends first.
// A spec the cluster cannot carry out yet (too few free task slots, a
// JobManager that does not answer) keeps Converge waiting and saying so
// in st: bound it with ctx.
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
		if res.Outcome != "" && res.Outcome != OutcomeSucceeded && res.Outcome != OutcomeNotNeeded {
			return &ActionError{Action: st.Action, Outcome: res.Outcome, Reason: st.Progress.Reason}
		}
		if st.Converged(spec) {
			return nil
		}
		if err := clock.Sleep(ctx, res.RequeueAfter); err != nil {
			return err
		}
	}
}
