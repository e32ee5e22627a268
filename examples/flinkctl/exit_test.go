package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// TestClassify maps errors to their exit codes and one-line messages.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		says string
	}{
		{&flinkapi.TransportError{Method: "GET", Path: "/config", Err: errors.New("dial tcp: connection refused\nmore")}, exitUnreachable, "check --flink-url"},
		{fmt.Errorf("lifecycle: Stop: %w", &flinkapi.TransportError{Method: "GET", Path: "/jobs", Err: context.Canceled}), exitInterrupted, "to resume"},
		{fmt.Errorf("wrapped: %w", context.Canceled), exitInterrupted, "run `flinkctl apply -f x.yaml` to resume"},
		{context.DeadlineExceeded, exitTimedOut, "--timeout"},
		{fmt.Errorf("%w (upgrade mode Savepoint)", lifecycle.ErrStateRequired), exitBlocked, "without a savepoint"},
		{fmt.Errorf("%w %q", lifecycle.ErrUnknownStrategy, "Gently"), exitBadInput, "Gently"},
		{badInput("job file: %s", "no such file"), exitBadInput, "no such file"},
		{errors.New("something else\nwith a stack trace"), exitFailed, "something else ..."},
	} {
		code, line := classify(c.err, "http://flink:8081", "flinkctl apply -f x.yaml")
		if code != c.code || !strings.Contains(line, c.says) || strings.Contains(line, "\n") {
			t.Errorf("%v: code %d, line %q; want %d saying %q", c.err, code, line, c.code, c.says)
		}
	}
	for o, want := range map[lifecycle.Outcome]int{lifecycle.OutcomeSucceeded: exitOK, lifecycle.OutcomeNotNeeded: exitOK, lifecycle.OutcomeBlocked: exitBlocked,
		lifecycle.OutcomeLeftRunning: exitBlocked, lifecycle.OutcomeTimedOut: exitTimedOut, lifecycle.OutcomeSavepointFailed: exitFailed, lifecycle.OutcomeJobGone: exitFailed} {
		if got := outcomeCode(o); got != want {
			t.Errorf("outcome %s: exit %d, want %d", o, got, want)
		}
	}
}
