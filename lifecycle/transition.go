package lifecycle

import (
	"context"
	"log/slog"
)

// Transition is a change of phase of an operation, reported to an
// operation's OnTransition hook and Logger, for example to turn it into a
// Kubernetes event.
type Transition struct {
	// Operation names the operation: "Upgrade", "Restart", "Teardown" or
	// "DisposeSavepoints".
	Operation string
	// JobID is the job the operation acts on in the new phase.
	JobID string
	// From and To are the phases before and after the step.
	From, To Phase
	// Outcome and Reason are set when To is PhaseDone.
	Outcome Outcome
	Reason  string
	// Location is the savepoint location, once known.
	Location string
}

// report calls hook and logs with logger (each if not nil) when the step
// changed p's phase.
func report(ctx context.Context, op string, hook func(Transition), logger *slog.Logger, from Phase, p *Progress) {
	if from == p.Phase {
		return
	}
	tr := Transition{Operation: op, JobID: string(p.JobID), From: from, To: p.Phase, Location: p.Savepoint.Location}
	if p.Phase == PhaseDone {
		tr.Outcome, tr.Reason = p.Outcome, p.Reason
	}
	if hook != nil {
		hook(tr)
	}
	if logger != nil {
		attrs := []slog.Attr{slog.String("operation", op), slog.String("job", tr.JobID),
			slog.String("from", string(from)), slog.String("to", string(p.Phase))}
		if tr.Location != "" {
			attrs = append(attrs, slog.String("location", tr.Location))
		}
		level := slog.LevelInfo
		if tr.Outcome != "" {
			attrs = append(attrs, slog.String("outcome", string(tr.Outcome)), slog.String("reason", tr.Reason))
			if tr.Outcome != OutcomeSucceeded && tr.Outcome != OutcomeNotNeeded {
				level = slog.LevelWarn
			}
		}
		logger.LogAttrs(ctx, level, "lifecycle transition", attrs...)
	}
}

// frame runs step, one Step of the operation op on p: an operation that
// has ended returns its outcome, and a canceled context its error, before
// anything is done; a change of phase step makes is reported to hook and
// logger (nil: not reported).
func frame(ctx context.Context, p *Progress, op string, hook func(Transition), logger *slog.Logger, step func() (Result, error)) (Result, error) {
	if p.Done() {
		return Result{Done: true, Outcome: p.Outcome}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	from := p.Phase
	res, err := step()
	report(ctx, op, hook, logger, from, p)
	return res, err
}
