package savepoint

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
)

func TestFailureMessage(t *testing.T) {
	long := strings.Repeat("é", maxMessageLen) // 2 bytes each
	tests := []struct {
		name string
		f    *flinkapi.FailureCause
		want string
	}{
		{"nil", nil, ""},
		{"empty", &flinkapi.FailureCause{}, msgUnknownFailure},
		{"class only", &flinkapi.FailureCause{Class: " org.apache.flink.util.FlinkException "}, "org.apache.flink.util.FlinkException"},
		{"nested causes", &flinkapi.FailureCause{StackTrace: traceExpired}, "Checkpoint expired before completing."},
		{"suppressed causes skipped", &flinkapi.FailureCause{StackTrace: traceNotRunning},
			"Checkpoint triggering task Source: numbers (1/2) of job a1b2c3d4e5f60718293a4b5c6d7e8f90 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running."},
		{"no cause: first line without class", &flinkapi.FailureCause{StackTrace: "org.apache.flink.util.FlinkException: Savepoint failed.\n\tat a.b.C.d(C.java:1)\n"}, "Savepoint failed."},
		{"no cause: wrapped class names removed", &flinkapi.FailureCause{StackTrace: "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.\n"},
			"Checkpoint Coordinator is suspending."},
		{"root without message: its class", &flinkapi.FailureCause{StackTrace: "a.b.OuterException: outer\nCaused by: java.lang.NullPointerException\n\tat a.b.C.d(C.java:1)\n"},
			"java.lang.NullPointerException"},
		{"root with empty message: its class", &flinkapi.FailureCause{StackTrace: "a.b.OuterException: outer\nCaused by: java.lang.NullPointerException: \n"},
			"java.lang.NullPointerException"},
		{"message is a wrapped class", &flinkapi.FailureCause{StackTrace: "java.util.concurrent.CompletionException: java.lang.NullPointerException\n"},
			"java.lang.NullPointerException"},
		{"message with colons", &flinkapi.FailureCause{StackTrace: "a.b.OuterException: x\nCaused by: java.io.IOException: Could not write s3://bucket/x: Access Denied\n"},
			"Could not write s3://bucket/x: Access Denied"},
		{"multi-line message: first line", &flinkapi.FailureCause{StackTrace: "a.b.OuterException: x\nCaused by: a.b.RootException: first line\nsecond line\nCaused: not a cause\n\tat a.b.C.d(C.java:1)\n"},
			"first line"},
		{"CRLF line ends", &flinkapi.FailureCause{StackTrace: "a.b.OuterException: x\r\n\tat a.b.C.d(C.java:1)\r\nCaused by: a.b.RootException: the root\r\n"}, "the root"},
		{"whole trace indented", &flinkapi.FailureCause{StackTrace: "\ta.b.OuterException: x\n\t\tat a.b.C.d(C.java:1)\n\tCaused by: a.b.RootException: the root\n\t\tSuppressed: a.b.S: s\n"}, "the root"},
		{"server-side wrapper", &flinkapi.FailureCause{StackTrace: "<Exception on server side:\norg.apache.flink.runtime.rest.handler.RestHandlerException: Savepoint failed.\n\tat a.b.C.d(C.java:1)\nCaused by: a.b.RootException: the root\n\nEnd of exception on server side>"}, "the root"},
		{"not a Java trace", &flinkapi.FailureCause{StackTrace: "  something went wrong  \n"}, "something went wrong"},
		{"control characters", &flinkapi.FailureCause{StackTrace: "a.b.E: bell\a and\ttab\x7f"}, "bell  and tab"},
		{"invalid UTF-8", &flinkapi.FailureCause{StackTrace: "a.b.E: bad \xff byte"}, "bad \uFFFD byte"},
		{"long message clipped at a character", &flinkapi.FailureCause{StackTrace: "a.b.E: " + long}, long[:maxMessageLen]},
		{"blank trace: the class", &flinkapi.FailureCause{Class: "a.b.E", StackTrace: " \n\t\n"}, "a.b.E"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailureMessage(tt.f); got != tt.want {
				t.Errorf("FailureMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCreatedSavepoint(t *testing.T) {
	const msg = ", but the corresponding job a1b2c3d4e5f60718293a4b5c6d7e8f90 failed during stopping. The savepoint is consistent."
	tests := []struct {
		name, trace, want string
	}{
		{"Flink's trace", traceStopFailed, loc},
		{"only the cause line", "a.b.OuterException: x\nCaused by: org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException: A savepoint has been created at: file:/tmp/sp-1" + msg + "\n", "file:/tmp/sp-1"},
		{"path with a comma", "a.b.StopWithSavepointStoppingException: A savepoint has been created at: hdfs://nn:8020/a,b/sp-1" + msg, "hdfs://nn:8020/a,b/sp-1"},
		{"other failure", traceExpired, ""},
		{"no suffix", "a.b.StopWithSavepointStoppingException: A savepoint has been created at: file:/tmp/sp-1", ""},
		{"empty path", "a.b.StopWithSavepointStoppingException: A savepoint has been created at: " + msg, ""},
		{"in a suppressed exception", "a.b.OuterException: x\n\tSuppressed: a.b.StopWithSavepointStoppingException: A savepoint has been created at: file:/tmp/sp-1" + msg, ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := createdSavepoint(tt.trace); got != tt.want {
				t.Errorf("createdSavepoint = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"}, {"abcd", 3, "abc"}, {"aé", 2, "a"}, {"é", 1, ""}, {"", 0, ""}, {"€x", 3, "€"},
	} {
		if got := clip(tt.s, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// checkMessage reports what is wrong with a message meant for a status.
func checkMessage(t *testing.T, what, msg string) {
	t.Helper()
	switch {
	case len(msg) > maxMessageLen:
		t.Errorf("%s: %d bytes, more than %d", what, len(msg), maxMessageLen)
	case !utf8.ValidString(msg):
		t.Errorf("%s: invalid UTF-8 %q", what, msg)
	case strings.IndexFunc(msg, isControl) >= 0:
		t.Errorf("%s: control character in %q", what, msg)
	case msg != strings.TrimSpace(msg):
		t.Errorf("%s: surrounding space in %q", what, msg)
	}
}

func FuzzFailureMessage(f *testing.F) {
	for _, tr := range []string{traceExpired, traceNotRunning, traceJobNotFound, traceStopFailed, "", "\n", "a.b.C:", "Caused by:", "<Exception on server side:\nEnd of exception on server side>", "\t\tCaused by: x.Y: z\n"} {
		f.Add("java.lang.Exception", tr)
	}
	f.Fuzz(func(t *testing.T, class, trace string) {
		msg := FailureMessage(&flinkapi.FailureCause{Class: class, StackTrace: trace})
		if msg == "" {
			t.Fatalf("FailureMessage is empty for class %q, trace %q", class, trace)
		}
		checkMessage(t, "FailureMessage", msg)
		if loc := createdSavepoint(trace); strings.ContainsAny(loc, "\r\n") || loc != strings.TrimSpace(loc) {
			t.Errorf("createdSavepoint = %q", loc)
		}
		_ = hasCause(trace, jobNotFoundClass)
	})
}

// FuzzRootCause builds Java stack traces around a root message and checks
// that it comes back.
func FuzzRootCause(f *testing.F) {
	f.Add("Checkpoint expired before completing.", "outer", true, 2)
	f.Add("x", "", false, 0)
	f.Add("Could not write s3://b/x: Access Denied", "a.b.C: wrapped", true, 5)
	f.Fuzz(func(t *testing.T, root, outer string, suppressed bool, depth int) {
		root = strings.TrimSpace(root)
		if root == "" || strings.ContainsAny(root, "\r\n") || !utf8.ValidString(root) || strings.IndexFunc(root, isControl) >= 0 || len(root) > maxMessageLen {
			t.Skip()
		}
		if name, _, ok := strings.Cut(root, ":"); ok && flinkapi.IsJavaClassName(strings.TrimSpace(name)) || flinkapi.IsJavaClassName(root) {
			t.Skip() // a message that starts with a class name loses it
		}
		outer = strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, outer)
		var b strings.Builder
		b.WriteString("org.apache.flink.util.FlinkException: " + outer + "\n\tat a.b.C.d(C.java:1)\n")
		for i := range depth % 8 {
			b.WriteString("Caused by: java.util.concurrent.CompletionException: level " + strings.Repeat("x", i) + "\n\t... 3 more\n")
		}
		b.WriteString("Caused by: org.apache.flink.runtime.checkpoint.CheckpointException: " + root + "\n\tat a.b.C.e(C.java:2)\n")
		if suppressed {
			b.WriteString("\tSuppressed: java.lang.IllegalStateException: cleanup\n\t\tCaused by: java.io.IOException: not the root\n")
		}
		if got := FailureMessage(&flinkapi.FailureCause{StackTrace: b.String()}); got != root {
			t.Errorf("FailureMessage = %q, want %q\ntrace:\n%s", got, root, b.String())
		}
	})
}

// FuzzCreatedSavepoint puts a location into Flink's message of a stop that
// failed after its savepoint completed, and checks that it comes back.
func FuzzCreatedSavepoint(f *testing.F) {
	f.Add("s3://bucket/savepoints/savepoint-1", true)
	f.Add("hdfs://nn:8020/a, b/sp", false)
	f.Fuzz(func(t *testing.T, location string, wrapped bool) {
		location = strings.TrimSpace(location)
		if location == "" || strings.ContainsAny(location, "\r\n") || strings.Contains(location, stopFailedSuffix) || !utf8.ValidString(location) {
			t.Skip()
		}
		msg := stopFailedPrefix + location + stopFailedSuffix + string(job) + " failed during stopping."
		trace := "org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException: " + msg + "\n\tat a.b.C.d(C.java:1)\n"
		if wrapped {
			trace = "java.util.concurrent.CompletionException: org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException: " + msg + "\nCaused by: org.apache.flink.util.FlinkException: Inconsistent execution state\n"
		}
		if got := createdSavepoint(trace); got != location {
			t.Errorf("createdSavepoint = %q, want %q", got, location)
		}
	})
}
