package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// maxTestSteps bounds every operation in the tests: each must end well
// within it.
const maxTestSteps = 200

type env struct {
	srv *flinktest.Server
	c   *flinkapi.Client
	jar flinkapi.JarID
	job flinkapi.JobID
}

// newEnv starts a fake cluster with a running counter job. The client does
// not retry, so injected faults reach the operations.
func newEnv(t *testing.T, opts ...flinktest.Option) *env {
	t.Helper()
	opts = append([]flinktest.Option{flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1)}, opts...)
	srv := flinktest.NewServer(opts...)
	t.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	jar, err := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		t.Fatal(err)
	}
	job := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	if _, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: job, ProgramArgs: counterArgs()}); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(5 * time.Second)
	srv.ClearRequests()
	return &env{srv: srv, c: c, jar: jar, job: job}
}

func counterArgs() []string { return []string{"--out", "/out", "--keys", "2", "--rate", "10"} }

func (e *env) inject(t *testing.T, f flinktest.Fault) {
	t.Helper()
	if err := e.srv.Inject(f); err != nil {
		t.Fatal(err)
	}
}

// writeJar writes the counter job's jar to a file.
func writeJar(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(f, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// jarsOf is a Jars reading the directory of file.
func jarsOf(tb testing.TB, file string) *Jars {
	tb.Helper()
	j, err := JarDir(filepath.Dir(file))
	if err != nil {
		tb.Fatal(err)
	}
	return j
}

// drive runs an operation to its end. With resume, after every Step the
// Progress goes through JSON and a fresh operation is built, as by a caller
// that restarts after each step. Waits move the server's clock.
func drive(t *testing.T, e *env, mk func() Stepper, resume bool) (Progress, Result) {
	t.Helper()
	return driveChecking(t, e, mk, resume, nil)
}

// driveChecking is drive with check, if not nil, called after every Step.
func driveChecking(t *testing.T, e *env, mk func() Stepper, resume bool, check func(Progress)) (Progress, Result) {
	t.Helper()
	ctx := context.Background()
	var p Progress
	op := mk()
	for range maxTestSteps {
		res, err := op.Step(ctx, &p)
		if err != nil {
			t.Fatalf("Step: %v (progress %+v)", err, p)
		}
		if check != nil {
			check(p)
		}
		if res.Done {
			if res.Outcome != p.Outcome || p.Phase != PhaseDone {
				t.Fatalf("Result %+v does not match Progress %+v", res, p)
			}
			return p, res
		}
		if resume {
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			p = Progress{}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			op = mk()
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	t.Fatalf("operation did not end within %d steps: %+v", maxTestSteps, p)
	return p, Result{}
}

// triggerIDs returns the distinct trigger ids of the savepoint and stop
// requests in the server's log, and how many such requests there were.
func triggerIDs(t *testing.T, srv *flinktest.Server) (ids []string, requests int) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range srv.Requests() {
		if r.Route != "POST /jobs/:jobid/savepoints" && r.Route != "POST /jobs/:jobid/stop" {
			continue
		}
		requests++
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("trigger body %q: %v", r.Body, err)
		}
		if !seen[body.TriggerID] {
			seen[body.TriggerID] = true
			ids = append(ids, body.TriggerID)
		}
	}
	return ids, requests
}

// routes lists the routes of the logged requests, with their statuses.
func routes(srv *flinktest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		s := r.Route
		if r.Fault != "" {
			s += " [" + r.Fault + "]"
		}
		out = append(out, s)
	}
	return out
}

func count(srv *flinktest.Server, route string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Route == route {
			n++
		}
	}
	return n
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// failedRetainingJob runs the counter job under id job, writing to out,
// with its checkpoints retained on cancellation, lets it checkpoint for
// 10 s, fails it, and moves the clock 10 s on.
func (e *env) failedRetainingJob(t *testing.T, job flinkapi.JobID, out string) {
	t.Helper()
	if _, err := e.c.RunJar(context.Background(), e.jar, flinkapi.RunJarRequest{JobID: job,
		ProgramArgs:        []string{"--out", out, "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"},
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(10 * time.Second)
	if err := e.srv.FailJob(job, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(10 * time.Second)
}

// ranOnRun is the run of the counter job under job, writing to out, that
// a teardown's stop sees run on: it checkpoints every second, retains its
// checkpoints on cancellation, and Flink restarts it once when it fails.
func ranOnRun(job flinkapi.JobID, out string) flinkapi.RunJarRequest {
	return flinkapi.RunJarRequest{JobID: job,
		ProgramArgs:        []string{"--out", out, "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000", "--restart-attempts", "1"},
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}
}

// ranOnTeardown is a teardown with savepoint whose job fails while
// stopping, once its savepoint completed, and runs on: Flink restarts it.
type ranOnTeardown struct {
	e     *env
	job   flinkapi.JobID
	store *MemoryStore
	td    *Teardown
	p     Progress
	away  bool // the caller was away while the teardown was under way
}

// startRanOn runs run (its JobID set) on e's cluster for 10 s, arms its
// job to fail while stopping, once, and returns its teardown, recording
// under name.
func startRanOn(t *testing.T, e *env, run flinkapi.RunJarRequest, name string) *ranOnTeardown {
	t.Helper()
	if _, err := e.c.RunJar(context.Background(), e.jar, run); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(10 * time.Second)
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping, Job: run.JobID, Times: 1})
	store := &MemoryStore{}
	return &ranOnTeardown{e: e, job: run.JobID, store: store,
		td: &Teardown{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: run.JobID, Mode: policy.UpgradeSavepoint, Store: store, Name: name}}
}

// drive steps the teardown to its end; the first time awayWhen holds of
// its progress, the caller is away for away.
func (r *ranOnTeardown) drive(t *testing.T, awayWhen func(*Progress) bool, away time.Duration) {
	t.Helper()
	for range 500 {
		res, err := r.td.Step(context.Background(), &r.p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			return
		}
		if !r.away && awayWhen(&r.p) {
			r.away = true
			r.e.srv.Clock().Advance(away)
		}
		r.e.srv.Clock().Advance(res.RequeueAfter)
	}
	t.Fatalf("the teardown did not end in 500 steps: %+v", r.p)
}

// recorded is the teardown's record in its store.
func (r *ranOnTeardown) recorded(t *testing.T) (savepoint.Record, bool) {
	t.Helper()
	rec, ok, err := r.store.Get(context.Background(), r.td.Name)
	if err != nil {
		t.Fatal(err)
	}
	return rec, ok
}
