package flinkapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
)

// A program whose main method fails echoes its arguments in Flink's
// answer: the values a request marks secret are sent, but never reported
// in the error or the client's log lines, in any of the forms an echo
// takes; what callers decide by is kept.
func TestRequestSecretsAreNeverReported(t *testing.T) {
	const secret = `s3cr3t "pa ss"/word`
	var logs bytes.Buffer
	c, mt, rec := newTestClient(t, "1.20.1", WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	echo := flinkError(
		"org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: bad --password "+secret,
		"java.lang.IllegalArgumentException: bad --password "+secret+"\n\tat dev.Job.main(Job.java:10)\nquoted \\\""+strings.ReplaceAll(secret, `"`, `\"`)+"\\\"",
	)
	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/run", httpmock.NewStringResponder(500, echo))
	mt.RegisterResponder("POST", testBase+"/jars/"+string(testJar)+"/plan", httpmock.NewStringResponder(400, echo))
	ctx := context.Background()
	args := []string{"--password", secret}

	_, runErr := c.RunJar(ctx, testJar, RunJarRequest{ProgramArgs: args, Secrets: []string{secret}})
	_, planErr := c.JarPlan(ctx, testJar, JarPlanRequest{ProgramArgs: args, Secrets: []string{secret}})
	for name, err := range map[string]error{"RunJar": runErr, "JarPlan": planErr} {
		var ae *APIError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: %v, want an *APIError", name, err)
		}
		for _, text := range append([]string{err.Error(), ae.StackTrace, ae.Message()}, ae.Errors...) {
			if strings.Contains(text, "s3cr3t") {
				t.Errorf("%s reports the secret: %q", name, text)
			}
		}
		if !strings.Contains(err.Error(), "bad --password xxxxx") {
			t.Errorf("%s: %v, want the message with the secret replaced", name, err)
		}
	}
	if !errors.Is(planErr, ErrBadRequest) || IsRetryable(runErr) {
		t.Errorf("the redacted errors lost their class: plan %v, run retryable %v", errors.Is(planErr, ErrBadRequest), IsRetryable(runErr))
	}
	if strings.Contains(logs.String(), "s3cr3t") || !strings.Contains(logs.String(), "xxxxx") {
		t.Errorf("the client's log shows the secret or no redacted error:\n%s", logs.String())
	}
	// The value is sent as it is: the program needs it.
	sent := 0
	for _, r := range rec.all() {
		if r.Method == http.MethodPost && strings.Contains(r.Body, "s3cr3t") {
			sent++
		}
	}
	if sent != 2 {
		t.Errorf("%d requests carried the secret, want 2 (run and plan)", sent)
	}

	// Without Secrets, the same answer is reported whole: the redaction
	// is the request's, not a filter on every message.
	_, err := c.RunJar(ctx, testJar, RunJarRequest{ProgramArgs: args})
	if err == nil || !strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("RunJar without Secrets = %v, want Flink's message whole", err)
	}
}
