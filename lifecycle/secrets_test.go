package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// secretWatch collects everything a Controller reports, to be searched
// for the values of secrets: its log, its transitions, its errors, the
// status and the plans it returned.
type secretWatch struct {
	t      *testing.T
	log    bytes.Buffer
	texts  []string
	values []string
}

func (w *secretWatch) add(what string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.t.Fatal(err)
	}
	w.texts = append(w.texts, what+": "+string(b))
}

// check fails the test if any output holds a secret's value, and returns
// all outputs as one text.
func (w *secretWatch) check() string {
	w.t.Helper()
	all := strings.Join(append(w.texts, w.log.String()), "\n")
	for _, v := range w.values {
		if i := strings.Index(all, v); i >= 0 {
			w.t.Fatalf("an output shows the secret %q: …%s…", v, all[max(0, i-300):min(len(all), i+100)])
		}
	}
	return all
}

// The values of secrets reach Flink in the jar run request and nowhere
// else: not in the status, not in the Controller's log or its errors, and
// not in what the status keeps of Flink's answers that echo them (a job's
// failure cause, a program's refusal of its arguments). A job whose
// secrets cannot be read is not stopped for an upgrade to it.
func TestSecretArgumentsStaySecret(t *testing.T) {
	const dir, flag = "s3cr3t-dir-4711", "n0t-a-b00l-s3cr3t"
	k := newCluster(t, true)
	w := &secretWatch{t: t, values: []string{dir, flag}}
	secrets := SecretMap{"tenant/dir": dir, "tenant/flag": flag}
	k.secrets = secrets
	k.logger = slog.New(slog.NewTextHandler(&w.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	call := func(spec JobSpec) (Result, error) {
		ctrl := k.controller()
		ctrl.OnTransition = func(tr Transition) { w.add("transition", tr) }
		plan, err := ctrl.Plan(ctx, spec, k.st)
		if err != nil {
			w.texts = append(w.texts, "plan error: "+err.Error())
		}
		w.add("plan", plan)
		res, err := ctrl.Reconcile(ctx, spec, &k.st)
		if err != nil {
			w.texts = append(w.texts, "error: "+err.Error())
		}
		w.add("status", k.st)
		k.srv.Clock().Advance(max(res.RequeueAfter, time.Second))
		return res, err
	}
	until := func(what string, spec JobSpec, done func(*JobStatus) bool) {
		t.Helper()
		for range 200 {
			if done(&k.st) {
				return
			}
			_, _ = call(spec)
		}
		t.Fatalf("%s: not reached: %+v", what, k.st)
	}

	spec := k.spec("/out/${secret:tenant/dir}", "--restart-attempts", "0")
	until("deployed", spec, func(st *JobStatus) bool { return st.State == policy.Running && !st.InFlight() && st.JobID != "" })
	job := k.st.JobID
	if info := k.job(); !slices.Contains(info.ProgramArgs, "/out/"+dir) {
		t.Fatalf("Flink got the arguments %q, want the secret's value in them", info.ProgramArgs)
	}
	if !slices.Contains(k.st.Deployed.Args, "/out/${secret:tenant/dir}") {
		t.Fatalf("the status's template %q, want the placeholder kept", k.st.Deployed.Args)
	}

	// The job fails with a cause that echoes its arguments: the status
	// keeps the cause, without the value.
	if err := k.srv.FailJob(job, "java.io.IOException: cannot write /out/"+dir+"/part-0"); err != nil {
		t.Fatal(err)
	}
	until("restarted", spec, func(st *JobStatus) bool { return st.Restarts > 0 && st.State == policy.Running && !st.InFlight() })
	if all := w.check(); !strings.Contains(all, "cannot write /out/xxxxx/part-0") {
		t.Fatalf("the failure cause is not in any output, so its redaction is not shown:\n%s", all)
	}

	// An upgrade to a template whose secret cannot be read: blocked
	// before the old job is touched.
	stops := count(k.srv, "POST /jobs/:jobid/stop") + count(k.srv, "PATCH /jobs/:jobid") + count(k.srv, "POST /jobs/:jobid/savepoints")
	missing := k.spec("/out/${secret:tenant/dir}", "--restart-attempts", "0", "--name", "${secret:tenant/gone}")
	plan, err := k.controller().Plan(ctx, missing, k.st)
	if err != nil || plan.Verdict != VerdictBlocked || !strings.Contains(plan.Blocked, `"tenant/gone"`) {
		t.Fatalf("Plan = %+v, %v; want Blocked naming the missing secret", plan, err)
	}
	res, err := call(missing)
	if err != nil || res.Outcome != OutcomeBlocked || k.st.Verdict != VerdictBlocked || !strings.Contains(k.st.Progress.Reason, `"tenant/gone"`) {
		t.Fatalf("upgrade to a missing secret: %+v, %v, status %s %s %q", res, err, k.st.Verdict, k.st.Progress.Outcome, k.st.Progress.Reason)
	}
	if n := count(k.srv, "POST /jobs/:jobid/stop") + count(k.srv, "PATCH /jobs/:jobid") + count(k.srv, "POST /jobs/:jobid/savepoints"); n != stops || k.job().State != flinkapi.JobRunning {
		t.Fatalf("the old job was touched: %d stop, cancel or savepoint requests, job %s", n-stops, k.job().State)
	}

	// The secret appears: the upgrade goes through once its retry is due.
	secrets["tenant/gone"] = "job-name-s3cr3t"
	w.values = append(w.values, "job-name-s3cr3t")
	until("upgraded", missing, func(st *JobStatus) bool {
		return st.State == policy.Running && !st.InFlight() && st.Deployed.equal(missing.Job) && st.Stable.equal(st.Deployed)
	})

	// Flink refuses the next template's arguments and its answer echoes
	// them: the upgrade fails, and nothing reports the value.
	// First the preflight's plan of the new job (Blocked, the job left
	// running), then, without a preflight, the jar run (SubmitFailed).
	refused := k.spec("/out/${secret:tenant/dir}", "--restart-attempts", "0", "--fail-once", "${secret:tenant/flag}")
	until("refused by the preflight", refused, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Done() && st.Progress.Outcome == OutcomeBlocked
	})
	refused.Preflight.Disabled = true
	until("refused by the jar run", refused, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Done() && st.Progress.Outcome == OutcomeSubmitFailed
	})
	if all := w.check(); strings.Count(all, "--fail-once must be true or false: xxxxx") < 2 || !strings.Contains(all, "preflight: Flink cannot build") {
		t.Fatalf("Flink's refusals are not in the outputs, so their redaction is not shown:\n%s", all)
	}
	// The client's own debug log saw the same answer.
	var clientLog bytes.Buffer
	c, err := flinkapi.NewClient(k.srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry),
		flinkapi.WithLogger(slog.New(slog.NewTextHandler(&clientLog, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	k.c = c
	_, _ = call(refused)
	w.texts = append(w.texts, clientLog.String())
	w.check()
}

// A spec that names secrets wrongly, or where they cannot go, is refused
// as invalid, by the index of the argument and never its text.
func TestSecretArgumentsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pw", "${secret:db"}, "job.args[1]: a ${secret: without its closing }"},
		{[]string{"--pw=${secret:../etc/passwd}"}, `job.args[0]: secret name "../etc/passwd"`},
		{[]string{"--x", "a", "--pw", "${secret:}"}, "job.args[3]: ${secret:} names no secret"},
		{[]string{"${secret:a b}"}, `job.args[0]: secret name "a b"`},
		{[]string{"${secret:ok}", "${secret:x/}"}, `job.args[1]: secret name "x/"`},
	} {
		spec := JobSpec{Job: JobTemplate{JarID: "x.jar", Args: append([]string{"hunter2"}, tc.args...)}}
		// (The index counts the leading argument.)
		want := strings.Replace(tc.want, fmt.Sprintf("args[%c]", tc.want[9]), fmt.Sprintf("args[%d]", int(tc.want[9]-'0')+1), 1)
		err := spec.Validate()
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Validate(%q) = %v, want ErrInvalidSpec with %q", tc.args, err, want)
		}
	}
	ok := JobSpec{Job: JobTemplate{JarID: "x.jar", Args: []string{"--pw=${secret:db/pw}${secret:db/pw2}", "${secret:a.b_c-d}"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate of well-formed references: %v", err)
	}

	// A Deployer would keep the values in the cluster it creates.
	k := newCluster(t, false)
	k.deployer = newAppDeployer(t, k.srv)
	k.secrets = SecretMap{"db/pw": "x"}
	spec := k.spec("/out", "--name", "${secret:db/pw}")
	_, err := k.controller().Reconcile(context.Background(), spec, &k.st)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "db/pw") || k.st.Reason != ReasonInvalidSpec {
		t.Errorf("Reconcile with a Deployer = %v (reason %s), want ErrInvalidSpec naming the secret", err, k.st.Reason)
	}

	// Without Env.Secrets, the deploy is blocked and says why.
	k = newCluster(t, false)
	spec = k.spec("/out", "--name", "${secret:db/pw}")
	res, err := k.controller().Reconcile(context.Background(), spec, &k.st)
	for i := 0; err == nil && res.Outcome == "" && i < 5; i++ {
		k.srv.Clock().Advance(res.RequeueAfter)
		res, err = k.controller().Reconcile(context.Background(), spec, &k.st)
	}
	if err != nil || res.Outcome != OutcomeBlocked || !strings.Contains(k.st.Progress.Reason, "no Env.Secrets") || len(k.srv.Jobs()) != 0 {
		t.Errorf("deploy without Env.Secrets: %+v, %v, reason %q, jobs %v", res, err, k.st.Progress.Reason, k.srv.Jobs())
	}
}

func TestSecretMap(t *testing.T) {
	m := SecretMap{"a": "1"}
	if v, err := m.Secret(context.Background(), "a"); v != "1" || err != nil {
		t.Errorf("Secret(a) = %q, %v", v, err)
	}
	if _, err := m.Secret(context.Background(), "b"); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("Secret(b) = %v, want an error naming b", err)
	}
}
