//go:build integration

package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealSecretArgs runs the test job with secret arguments on a real
// session cluster: Flink gets their values (the job runs with a rate only
// a resolved argument gives), and nothing the Controller or the client
// reports shows them, where Flink's answers echo them: the preflight's
// plan and the jar run of a program that refuses an argument, and the
// exception of a job that fails with a message naming one. Everything
// the call returns, logs, reports as a transition or stores in the status
// is searched for the values.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealSecretArgs -v ./lifecycle/
func TestRealSecretArgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cluster, _ := realSession(t, ctx, 2)
	const (
		rate  = "17.000431"                     // a rate: the placeholder itself is not a number
		label = "FLINKKIT-SECRET-label-6c1e93"  // named by the job's failure
		flag  = "FLINKKIT-SECRET-flag-0d44a7"   // refused by the program: not a boolean
		gone  = "FLINKKIT-SECRET-never-sent-31" // not read: for the watch alone
	)
	values := []string{label, flag, gone}
	w := &outputWatch{}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry), flinkapi.WithLogger(w.logger()))
	if err != nil {
		t.Fatal(err)
	}
	record := w.add
	env := realEnv(c)
	env.Logger = w.logger()
	env.Secrets = lifecycle.SecretMap{"job/rate": rate, "job/label": label, "job/flag": flag}
	env.OnTransition = func(tr lifecycle.Transition) { record("transition", tr) }
	ctrl := &lifecycle.Controller{Env: env, Name: "app/secrets", PollInterval: time.Second, RetryInterval: 2 * time.Second}
	out := cluster.OutDir("secrets")
	args := func(extra ...string) []string {
		return append([]string{"--out", out, "--keys", "1", "--rate", "${secret:job/rate}", "--checkpoint-interval", "300",
			"--label", "${secret:job/label}", "--restart-attempts", "0"}, extra...)
	}
	spec := lifecycle.JobSpec{
		Job:     lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args()},
		Restart: policy.RestartPolicy{Mode: policy.RestartNever},
	}
	var st lifecycle.JobStatus
	call := func() lifecycle.Result {
		t.Helper()
		if plan, err := ctrl.Plan(ctx, spec, st); err == nil {
			record("plan", plan)
		} else {
			record("plan error", err.Error())
		}
		res, err := ctrl.Reconcile(ctx, spec, &st)
		if err != nil {
			record("error", err.Error())
			if ctx.Err() != nil {
				t.Fatal(err)
			}
		}
		record("status", st)
		time.Sleep(min(res.RequeueAfter, time.Second))
		return res
	}
	until := func(what string, done func() bool) {
		t.Helper()
		for begin := time.Now(); !done(); call() {
			if time.Since(begin) > 2*time.Minute {
				t.Fatalf("%s: not reached: %s %s: %s (action %s %s: %s)", what, st.State, st.Reason, st.Message, st.Action, st.Progress.Outcome, st.Progress.Reason)
			}
		}
	}
	check := func() string {
		t.Helper()
		return w.check(t, values...)
	}

	until("running", func() bool { return !st.InFlight() && st.State == policy.Running && st.JobID != "" })
	job := st.JobID

	// The program refuses an argument and names its value: first the
	// preflight (the job is left running), then the jar run.
	spec.Job.Args = args("--fail-once", "${secret:job/flag}")
	until("refused by the preflight", func() bool {
		return st.Action == lifecycle.ActionUpgrade && st.Progress.Done() && st.Progress.Outcome == lifecycle.OutcomeBlocked
	})
	if s, err := c.JobStatus(ctx, job); err != nil || s != flinkapi.JobRunning {
		t.Fatalf("the old job is %s (%v) after the preflight refused the new one", s, err)
	}
	spec.Preflight.Disabled = true
	until("refused by the jar run", func() bool {
		return st.Action == lifecycle.ActionUpgrade && st.Progress.Done() && st.Progress.Outcome == lifecycle.OutcomeSubmitFailed
	})
	if all := check(); strings.Count(all, "must be true or false: xxxxx") < 2 {
		t.Fatalf("Flink's refusals are not in the outputs, so their redaction is not shown:\n%s", all)
	}

	// A job that fails with a message naming an argument: the status
	// keeps the cause, without the value.
	spec.Job.Args = args("--fail-at", "40")
	until("failed", func() bool { return st.State == policy.Failed && st.Failure != "" })
	if all := check(); !strings.Contains(st.Failure, "label xxxxx") || !strings.Contains(all, "(--fail-at 40) label xxxxx") {
		t.Fatalf("the failure %q does not show the redacted label", st.Failure)
	}
	t.Logf("failure kept: %s", st.Failure)
}

// outputWatch collects what a test's Controllers and clients report (a
// debug log, transitions, errors, statuses, plans), to be searched for the
// secrets the test uses.
type outputWatch struct {
	mu    sync.Mutex
	log   bytes.Buffer
	texts []string
}

// logger is a debug logger writing into the watch.
func (w *outputWatch) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Write appends to the log.
func (w *outputWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.Write(p)
}

// add records v, as JSON, under what.
func (w *outputWatch) add(what string, v any) {
	b, _ := json.Marshal(v)
	w.mu.Lock()
	w.texts = append(w.texts, what+": "+string(b))
	w.mu.Unlock()
}

// check fails the test if anything collected shows one of the secrets,
// and returns all of it as one text.
func (w *outputWatch) check(t *testing.T, secrets ...string) string {
	t.Helper()
	w.mu.Lock()
	all := strings.Join(append(slices.Clone(w.texts), w.log.String()), "\n")
	w.mu.Unlock()
	if len(all) < 100 {
		t.Fatalf("the watch collected almost nothing (%d bytes): nothing is shown to hold no secret", len(all))
	}
	for _, v := range secrets {
		if i := strings.Index(all, v); i >= 0 {
			t.Fatalf("an output shows the secret %q: …%s…", v, all[max(0, i-400):min(len(all), i+100)])
		}
	}
	return all
}
