package flinkapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// TestHeaderFloodIsNotRetried: an answer whose headers run past
// maxResponseHeaderBytes is read no further and not retried: one
// attempt, an error matching ErrDecode.
func TestHeaderFloodIsNotRetried(t *testing.T) {
	var attempts atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			attempts.Add(1)
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				w := bufio.NewWriter(conn)
				w.WriteString("HTTP/1.1 200 OK\r\n")
				pad := strings.Repeat("x", 1000)
				for i := 0; i < 10*1024; i++ { // 10 MiB of headers
					if _, err := fmt.Fprintf(w, "X-Flood-%d: %s\r\n", i, pad); err != nil {
						return
					}
				}
				w.WriteString("\r\n{}")
				w.Flush()
			}()
		}
	}()
	c, err := NewClient("http://"+ln.Addr().String(), WithRetryPolicy(RetryPolicy{MaxAttempts: 6, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Overview(context.Background())
	var te *TransportError
	if !errors.Is(err, ErrDecode) || !errors.As(err, &te) || !te.Unreadable || IsRetryable(err) {
		t.Fatalf("Overview = %v; want an unreadable answer matching ErrDecode, not retryable", err)
	}
	if n := attempts.Load(); n != 1 {
		t.Errorf("%d attempts; an unreadable answer is not retried", n)
	}
}

// TestErrorBodyIsBounded: a 7 MiB error message, a thousand messages and
// a long stack trace end up in an APIError bounded in size.
func TestErrorBodyIsBounded(t *testing.T) {
	long := strings.Repeat("é", 7<<20/2) // a 7 MiB message of two-byte characters
	trace := "java.lang.RuntimeException: boom\n" + strings.Repeat("\tat x.Y.z(Y.java:1)\n", 1<<16)
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf(`"message %d"`, i)
	}
	for name, body := range map[string]string{
		"long message": `{"errors":["` + long + `"]}`,
		"many":         `{"errors":[` + strings.Join(many, ",") + `]}`,
		"long trace":   `{"errors":[` + fmt.Sprintf("%q", trace) + `]}`,
		"not json":     long,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(500)
				w.Write([]byte(body))
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL, WithRetryPolicy(NoRetry), WithMaxResponseSize(16<<20))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Overview(context.Background())
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Overview = %v, want an APIError", err)
			}
			if n := len(err.Error()); n > 16<<10 {
				t.Errorf("the error's message is %d bytes", n)
			}
			if n := len(ae.StackTrace); n > maxStackTrace+3 {
				t.Errorf("the stack trace is %d bytes", n)
			}
			if n := len(ae.Errors); n > maxErrorMessages+1 {
				t.Errorf("%d messages", n)
			}
			if name == "many" && ae.Errors[len(ae.Errors)-1] != "(992 more)" {
				t.Errorf("last message %q, want the count of those left out", ae.Errors[len(ae.Errors)-1])
			}
			if !utf8.ValidString(err.Error()) {
				t.Errorf("the message is not valid UTF-8")
			}
		})
	}
}

// TestStoragePathsAreChecked: a savepoint path or target directory with a
// ".." segment, a control character or over MaxStoragePath bytes is
// refused before anything is sent.
func TestStoragePathsAreChecked(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.WriteHeader(500)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithRetryPolicy(NoRetry), WithFlinkVersion("1.20.1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bad := map[string]string{
		"parent":  strings.Repeat("../", 4) + "etc", // a path sent to Flink, never read here
		"inside":  "s3://bucket/savepoints/../other",
		"windows": `C:\savepoints\..\x`,
		"control": "file:/tmp/sp\x1b[2J",
		"long":    "file:/" + strings.Repeat("a", MaxStoragePath),
	}
	for name, p := range bad {
		if _, err := c.DisposeSavepoint(ctx, p); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: DisposeSavepoint = %v, want ErrInvalidInput", name, err)
		}
		job := JobID("0123456789abcdef0123456789abcdef")
		if _, err := c.TriggerSavepoint(ctx, job, SavepointRequest{TargetDirectory: p}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: TriggerSavepoint = %v, want ErrInvalidInput", name, err)
		}
		if _, err := c.StopWithSavepoint(ctx, job, StopRequest{TargetDirectory: p}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: StopWithSavepoint = %v, want ErrInvalidInput", name, err)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	for _, ok := range []string{"s3://bucket/savepoints/savepoint-1a2b3c", "file:/tmp/a..b/..c", "hdfs:///flink/sp"} {
		if err := checkStoragePath("savepoint path", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}
