package savepoint

import (
	"strings"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// maxMessageLen is the longest message, in bytes, that this package stores in
// Status.Failure and Status.LastError; longer ones are cut at a character
// boundary. It keeps Kubernetes status objects small.
const maxMessageLen = 1024

// Java class names of failure causes that decide the next state.
const (
	// jobNotFoundClass is how Flink reports a savepoint of a job it does not
	// know: triggers always acknowledge, the status call fails with it.
	jobNotFoundClass = "org.apache.flink.runtime.messages.FlinkJobNotFoundException"
	// stopFailedPrefix starts the message of Flink's
	// StopWithSavepointStoppingException (1.15+): the savepoint completed,
	// then the job failed while stopping.
	stopFailedPrefix = "A savepoint has been created at: "
	stopFailedSuffix = ", but the corresponding job "
)

// Messages of failures that carry no text of their own.
const (
	msgUnknownFailure      = "the operation failed without a cause"
	msgCompletedNoLocation = "Flink reported the savepoint as completed without a location"
)

// FailureMessage returns a readable, one-line cause of a failed operation:
// the message of the innermost "Caused by:" of the main cause chain of the
// Java stack trace, without exception class names. Suppressed exceptions
// (indented deeper than the trace's first line) and their causes are not
// part of the chain. An exception without a message gives its class name;
// a failure without a stack trace gives its class. The result is at most
// 1024 bytes of valid UTF-8 without control characters, and is
// never empty for a non-nil f.
func FailureMessage(f *flinkapi.FailureCause) string {
	if f == nil {
		return ""
	}
	msg := flinkapi.RootCause(f.StackTrace)
	if msg == "" {
		msg = strings.TrimSpace(f.Class)
	}
	msg = cleanMessage(msg)
	if msg == "" {
		return msgUnknownFailure
	}
	return msg
}

// hasCause reports whether class is in the main cause chain of trace, as
// an exception or as a wrapped exception named in a message.
func hasCause(trace, class string) bool {
	for c := range flinkapi.CauseChain(trace) {
		if strings.Contains(c.Line, class) {
			return true
		}
	}
	return false
}

// createdSavepoint returns the location in the message of Flink's
// StopWithSavepointStoppingException: "A savepoint has been created at:
// <location>, but the corresponding job <id> failed during stopping. ...".
// The savepoint is complete and consistent; the job failed after it.
// The exception may be anywhere in the cause chain, also as the message of
// a wrapping exception.
func createdSavepoint(trace string) string {
	for c := range flinkapi.CauseChain(trace) {
		if loc := createdSavepointIn(c.Message); loc != "" {
			return loc
		}
	}
	return ""
}

// createdSavepointIn returns the location in one exception message, or "".
func createdSavepointIn(msg string) string {
	rest, ok := strings.CutPrefix(msg, stopFailedPrefix)
	if !ok {
		return ""
	}
	loc, _, ok := strings.Cut(rest, stopFailedSuffix)
	if !ok {
		return ""
	}
	loc = strings.TrimSpace(loc)
	if loc == "" || strings.ContainsAny(loc, "\n\r") || !utf8.ValidString(loc) {
		return ""
	}
	return loc
}

// cleanMessage makes s fit a status field: valid UTF-8, control characters
// replaced by spaces, surrounding space removed, at most maxMessageLen bytes.
// It does not allocate when s is already clean.
func cleanMessage(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexFunc(s, isControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if isControl(r) {
				return ' '
			}
			return r
		}, s)
	}
	return strings.TrimSpace(clip(strings.TrimSpace(s), maxMessageLen))
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 }

// clip cuts s to at most n bytes at a character boundary, without
// allocating.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
