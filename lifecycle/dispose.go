package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// DisposeSavepoints disposes of old savepoints of a History, as
// savepoint.ChooseDisposals picks them at the operation's start, one after
// the other through Flink's savepoint disposal. History and Retention must
// not change until the operation ends. Build it anew from its
// configuration whenever convenient: all its state is in the Progress
// passed to Step.
type DisposeSavepoints struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// History is the job's savepoint history.
	History savepoint.History
	// Retention says which savepoints may go.
	Retention savepoint.RetentionOptions
}

// Chosen returns the savepoints the operation of p disposes of, oldest
// first: once it ended, the first p.Disposed of them were dealt with, and
// those not named as failed in p.Reason are gone; remove them from the
// History (savepoint.History.Remove). A caller that keeps the History
// may instead dispose of a savepoint again to confirm it is gone: Flink
// then answers that its files are not found, which counts as disposed
// of (the Controller's savepoint ledger does that).
func (d *DisposeSavepoints) Chosen(p *Progress) []savepoint.Record {
	if p.Started.IsZero() {
		return nil
	}
	return savepoint.ChooseDisposals(d.History.Records, d.Retention, p.Started)
}

// Step does at most one request. The first Step fixes the time the
// savepoints are chosen at (p.Started) and sends nothing. Then, for each
// savepoint, it sends the disposal and polls it; when Flink forgot the
// disposal's trigger id (a JobManager restart), it sends the disposal
// again. A savepoint whose files Flink cannot find counts as disposed of
// (an earlier disposal whose answer was lost may have removed them), and
// the Reason names it.
// Past a disposal's deadline that savepoint counts as failed and the next
// one follows. It ends Succeeded, or DisposeFailed naming the savepoints
// left. Step returns an error only for a canceled context.
func (d *DisposeSavepoints) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *d
	return bound(ctx, p, opDispose, "", &op.Env, nil, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opDispose, d.OnTransition, d.Logger, func() (Result, error) { return op.advance(ctx, p, d.clock().Now()), nil })
	})
}

func (d *DisposeSavepoints) advance(ctx context.Context, p *Progress, now time.Time) Result {
	if p.Phase == "" {
		startAt(p, now)
		p.Phase, p.Deadline = PhaseDispose, now.Add(orDefault(d.Timing.Stop, defaultStopTimeout))
		return d.next(p, now, false)
	}
	chosen := d.Chosen(p)
	if p.Dispose.Disposed >= len(chosen) {
		return d.end(p, len(chosen))
	}
	loc := chosen[p.Dispose.Disposed].Location
	if !now.Before(p.Deadline) {
		return d.failed(p, now, loc, "the deadline passed: "+p.LastError)
	}
	switch p.Phase {
	case PhaseDispose:
		p.Requests++
		op, err := d.Client.DisposeSavepoint(ctx, loc)
		switch {
		case err == nil:
			p.Dispose.Disposal, p.Phase, p.LastError = op.TriggerID, PhaseWaitDisposed, ""
			return Result{RequeueAfter: d.Timing.poll()}
		case permanent(err):
			return d.failed(p, now, loc, errMessage(err))
		}
		p.LastError = errMessage(err)
		return Result{RequeueAfter: d.Timing.backoff(p.Requests)}
	case PhaseWaitDisposed:
		res, err := d.Client.OperationStatus(ctx, flinkapi.Operation{Kind: flinkapi.OpSavepointDisposal, TriggerID: p.Dispose.Disposal})
		switch {
		case err == nil:
		case flinkapi.IsTriggerNotFound(err):
			p.Phase, p.Dispose.Disposal, p.LastError = PhaseDispose, "", errMessage(err)
			return Result{}
		default:
			p.LastError = errMessage(err)
			return Result{RequeueAfter: d.Timing.backoff(2)}
		}
		switch {
		case !res.Completed():
			return Result{RequeueAfter: d.Timing.poll()}
		case res.Succeeded():
			return d.next(p, now, true)
		}
		msg := "the disposal failed"
		if res.Failure != nil {
			msg = savepoint.FailureMessage(res.Failure)
		}
		if res.Failure.FilesNotFound() {
			// Its files are gone: what a disposal is for. An earlier
			// request whose answer was lost may have disposed of it, so
			// this is no failure (the caller would keep a record of
			// nothing, and try again for ever); the Reason names it.
			p.Reason += fmt.Sprintf("%s: already gone (%s); ", loc, msg)
			return d.next(p, now, true)
		}
		return d.failed(p, now, loc, msg)
	}
	return finish(p, OutcomeDisposeFailed, fmt.Sprintf("unknown phase %q of a disposal", p.Phase))
}

// failed records that loc could not be disposed of and goes on.
func (d *DisposeSavepoints) failed(p *Progress, now time.Time, loc, why string) Result {
	p.Dispose.Failed++
	p.Reason += fmt.Sprintf("%s: %s; ", loc, why)
	return d.next(p, now, true)
}

// next moves on to the next savepoint (after the current one if done).
func (d *DisposeSavepoints) next(p *Progress, now time.Time, done bool) Result {
	if done {
		p.Dispose.Disposed++
	}
	p.Phase, p.Dispose.Disposal, p.Requests, p.LastError = PhaseDispose, "", 0, ""
	p.Deadline = now.Add(orDefault(d.Timing.Stop, defaultStopTimeout))
	if n := len(d.Chosen(p)); p.Dispose.Disposed >= n {
		return d.end(p, n)
	}
	return Result{}
}

func (d *DisposeSavepoints) end(p *Progress, n int) Result {
	if p.Dispose.Failed > 0 {
		return finish(p, OutcomeDisposeFailed, fmt.Sprintf("%d of %d savepoints not disposed of: %s", p.Dispose.Failed, n, strings.TrimSuffix(p.Reason, "; ")))
	}
	why := fmt.Sprintf("%d savepoints disposed of", n)
	if p.Reason != "" {
		why += "; " + strings.TrimSuffix(p.Reason, "; ")
	}
	return finish(p, OutcomeSucceeded, why)
}

// DisposeProgress is the record of DisposeSavepoints in a Progress.
type DisposeProgress struct {
	// Disposed counts the savepoints DisposeSavepoints dealt with.
	Disposed int `json:"disposed,omitempty"`
	// Failed counts those of them it could not dispose of.
	Failed int `json:"failed,omitempty"`
	// Disposal is the trigger id of the disposal in flight.
	Disposal flinkapi.TriggerID `json:"disposal,omitempty"`
}
