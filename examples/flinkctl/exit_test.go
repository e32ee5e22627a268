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

// TestVerdictCode: apply's exit code follows the verdict, for every
// verdict there is.
func TestVerdictCode(t *testing.T) {
	want := map[lifecycle.Verdict]int{lifecycle.VerdictDone: exitOK, lifecycle.VerdictBlocked: exitBlocked, lifecycle.VerdictInvalid: exitBadInput,
		lifecycle.VerdictFailed: exitFailed, lifecycle.VerdictProgressing: exitFailed, lifecycle.VerdictWaiting: exitFailed, lifecycle.VerdictDeleted: exitFailed}
	for _, v := range lifecycle.Verdicts {
		w, ok := want[v]
		if !ok {
			t.Errorf("verdict %s has no exit code in the test", v)
		}
		if got := verdictCode(v, ""); got != w {
			t.Errorf("verdict %s: exit %d, want %d", v, got, w)
		}
	}
	if got := verdictCode(lifecycle.VerdictFailed, lifecycle.OutcomeTimedOut); got != exitTimedOut {
		t.Errorf("an action that timed out: exit %d, want %d", got, exitTimedOut)
	}
}
