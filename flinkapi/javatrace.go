package flinkapi

import (
	"iter"
	"strings"
)

// JavaCause is one exception of the main cause chain of a Java stack trace.
type JavaCause struct {
	// Class is the exception's class name; empty when the line names none.
	Class string
	// Message is the exception's message without the class names that
	// wrapping exceptions put in front of it; empty when it has none.
	Message string
	// Line is the whole line, after "Caused by:".
	Line string
}

// CauseChain yields the exceptions of the main cause chain of a Java stack
// trace as Flink sends it, outermost first: the first line, then every
// "Caused by:" line indented like the first. Frames ("at ..."), "... n
// more", suppressed exceptions and their causes are skipped, and so are
// Flink's "<Exception on server side:" wrapper lines.
func CauseChain(trace string) iter.Seq[JavaCause] {
	return func(yield func(JavaCause) bool) {
		base := -1 // indentation of the first line
		for rest := trace; rest != ""; {
			var line string
			line, rest, _ = strings.Cut(rest, "\n")
			line = strings.TrimRight(line, " \t\r")
			text := strings.TrimLeft(line, " \t")
			if text == "" || text == serverSidePrefix || text == serverSideSuffix {
				continue
			}
			indent := len(line) - len(text)
			if base < 0 {
				base = indent
				text, _ = strings.CutPrefix(text, "Caused by:")
				if !yield(parseCauseLine(strings.TrimSpace(text))) {
					return
				}
				continue
			}
			if indent != base {
				continue
			}
			if c, ok := strings.CutPrefix(text, "Caused by:"); ok {
				if !yield(parseCauseLine(strings.TrimSpace(c))) {
					return
				}
			}
		}
	}
}

// RootCause returns a readable cause from a Java stack trace: the message of
// the innermost exception of the main cause chain, or its class name when it
// has no message. It returns "" for an empty trace.
func RootCause(trace string) string {
	var root JavaCause
	for c := range CauseChain(trace) {
		root = c
	}
	if root.Message != "" {
		return root.Message
	}
	return root.Class
}

// parseCauseLine splits "a.b.SomeException: message" into class and
// message, and removes the class names of wrapped exceptions that Java puts
// in front of a message ("CompletionException: a.b.CheckpointException:
// Checkpoint expired" gives class CompletionException and message
// "Checkpoint expired"). A line that does not start with a class name is
// all message.
func parseCauseLine(line string) JavaCause {
	c := JavaCause{Line: line}
	name, msg, ok := strings.Cut(line, ":")
	switch {
	case ok && IsJavaClassName(strings.TrimSpace(name)):
		c.Class, line = strings.TrimSpace(name), strings.TrimSpace(msg)
	case IsJavaClassName(line):
		c.Class = line
		return c
	}
	for {
		name, msg, ok := strings.Cut(line, ":")
		if !ok || !IsJavaClassName(strings.TrimSpace(name)) {
			break
		}
		next := strings.TrimSpace(msg)
		if next == "" {
			break // "...: a.b.Exception:" keeps the class as the message
		}
		line = next
	}
	if IsJavaClassName(line) && c.Class != "" {
		// The message is only the class of a wrapped exception: report
		// that class, which says more than the wrapper's.
		c.Class = line
		return c
	}
	c.Message = line
	return c
}
