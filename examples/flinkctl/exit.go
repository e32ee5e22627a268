package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// Exit codes: what happened, for scripts.
const (
	exitOK          = 0   // the command did what it was asked
	exitFailed      = 1   // the operation failed (a savepoint failed, the job failed, the job is unhealthy)
	exitBadInput    = 2   // bad input: usage, flags, the job file, a job Flink does not know
	exitBlocked     = 3   // blocked by policy: nothing unsafe was done (state would be lost, an upgrade was refused)
	exitTimedOut    = 4   // timed out: --timeout, or the operation's deadline, passed
	exitUnreachable = 5   // the cluster is unreachable, or refuses the client (URL, TLS, credentials)
	exitInterrupted = 130 // interrupted (Ctrl-C): what was done is stored, run the command again to resume
)

// exitCodesHelp documents the exit codes in --help.
const exitCodesHelp = `Exit codes:
  0    succeeded
  1    failed: the operation failed (a savepoint failed, the job failed or is unhealthy)
  2    bad input: usage, flags, the job file, a job Flink does not know
  3    blocked by policy: refused, nothing unsafe was done (e.g. cancel of a job with state)
  4    timed out: --timeout or the operation's deadline passed
  5    cluster unreachable, or it refuses the client (check --flink-url)
  130  interrupted (Ctrl-C): progress is stored; run the command again to resume`

// exitError is an error with the exit code it ends the command with. Its
// message is one line that says what to do.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &exitError{code: exitBadInput, msg: fmt.Sprintf(format, args...)}
}

// outcomeCode is the exit code of an operation's outcome.
func outcomeCode(o lifecycle.Outcome) int {
	switch o {
	case lifecycle.OutcomeSucceeded, lifecycle.OutcomeNotNeeded:
		return exitOK
	case lifecycle.OutcomeBlocked, lifecycle.OutcomeLeftRunning:
		return exitBlocked
	case lifecycle.OutcomeTimedOut:
		return exitTimedOut
	}
	return exitFailed
}

// verdictCode is the exit code of apply for a status's verdict: 0 once
// Done, 3 Blocked (refused, nothing unsafe done), 2 Invalid, and 1
// Failed, or 4 for an action that failed by its deadline (outcome).
func verdictCode(v lifecycle.Verdict, outcome lifecycle.Outcome) int {
	switch v {
	case lifecycle.VerdictDone:
		return exitOK
	case lifecycle.VerdictBlocked:
		return exitBlocked
	case lifecycle.VerdictInvalid:
		return exitBadInput
	}
	if outcome == lifecycle.OutcomeTimedOut {
		return exitTimedOut
	}
	return exitFailed
}

// classify turns err into its exit code and the one line printed for it.
// url is the --flink-url, named when the cluster cannot be reached; resume
// is what to run to go on after an interruption.
func classify(err error, url, resume string) (int, string) {
	var ee *exitError
	var te *flinkapi.TransportError
	var tlsErr *flinkapi.TLSError
	msg := firstLine(strings.TrimPrefix(err.Error(), "flinkapi: "))
	switch {
	case errors.As(err, &ee):
		return ee.code, firstLine(ee.msg)
	case errors.Is(err, context.Canceled):
		if resume != "" {
			return exitInterrupted, "interrupted; what was done is stored: run `" + resume + "` to resume"
		}
		return exitInterrupted, "interrupted"
	case errors.As(err, &tlsErr):
		return exitUnreachable, msg + " (check --flink-url, --ca-file, --client-cert and --client-key)"
	case errors.Is(err, flinkapi.ErrMisconfigured):
		return exitUnreachable, msg + " (check --flink-url)"
	case errors.As(err, &te) && !errors.Is(te.Err, context.Canceled):
		return exitUnreachable, fmt.Sprintf("cannot reach the JobManager at %s (%s): check --flink-url and that the cluster runs", url, firstLine(te.Err.Error()))
	case errors.Is(err, context.DeadlineExceeded):
		return exitTimedOut, "gave up after --timeout: " + msg
	case flinkapi.IsJobNotFound(err):
		return exitBadInput, msg + " (see `flinkctl jobs`)"
	case errors.Is(err, flinkapi.ErrInvalidInput), errors.Is(err, lifecycle.ErrInvalidSpec), errors.Is(err, lifecycle.ErrStateRequired),
		errors.Is(err, lifecycle.ErrUnknownStrategy), errors.Is(err, lifecycle.ErrInvalidName):
		if errors.Is(err, lifecycle.ErrStateRequired) {
			return exitBlocked, msg
		}
		return exitBadInput, msg
	case errors.Is(err, flinkapi.ErrUnavailable):
		return exitUnreachable, msg + " (the JobManager is not ready: try again shortly)"
	}
	return exitFailed, msg
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
