package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// fixture is a fake JobManager, a state directory and a jar.
type fixture struct {
	t   *testing.T
	srv *flinktest.Server
	dir string
	jar string
	c   *flinkapi.Client
}

func newFixture(t *testing.T, opts ...flinktest.Option) *fixture {
	t.Helper()
	srv := flinktest.NewServer(append([]flinktest.Option{flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1)}, opts...)...)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	jar := filepath.Join(dir, "counter.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := flinkapi.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, srv: srv, dir: dir, jar: jar, c: c}
}

// result is what one run of flinkctl did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs flinkctl with args on the fake's clock.
func (f *fixture) run(args ...string) result {
	return f.runCtx(context.Background(), f.srv.Clock(), args...)
}

func (f *fixture) runCtx(ctx context.Context, clock lifecycle.Clock, args ...string) result {
	f.t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, clock: clock}
	code := a.main(ctx, append([]string{"--flink-url", f.srv.URL, "--state-dir", filepath.Join(f.dir, "state"), "--poll", "200ms"}, args...))
	r := result{code: code, stdout: out.String(), stderr: errb.String()}
	f.t.Logf("flinkctl %s: exit %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, r.stdout, r.stderr)
	return r
}

// jobFile writes a job file of the counter job named name, writing its
// counts to out, and returns its path.
func (f *fixture) jobFile(name, out string, extra string) string {
	f.t.Helper()
	y := fmt.Sprintf(`name: %s
job:
  jarFile: counter.jar
  args: ["--out", "%s", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"]
update:
  mode: Savepoint
restart:
  mode: FromLatestState
%s`, name, out, extra)
	p := filepath.Join(f.dir, name+".yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) deployment(name string) deployment {
	f.t.Helper()
	d, ok, err := stateDir{root: filepath.Join(f.dir, "state")}.loadDeployment(name)
	if err != nil || !ok {
		f.t.Fatalf("deployment %s: %v, %v", name, ok, err)
	}
	return d
}

// running lists the fake's jobs that are not in a terminal state.
func (f *fixture) running() []flinktest.JobInfo {
	var out []flinktest.JobInfo
	for _, j := range f.srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			out = append(out, j)
		}
	}
	return out
}

func wantCode(t *testing.T, r result, code int, stderr string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d; stderr %q", r.code, code, r.stderr)
	}
	if stderr != "" && !strings.Contains(r.stderr, stderr) {
		t.Fatalf("stderr %q does not say %q", r.stderr, stderr)
	}
	if n := strings.Count(r.stderr, "\n"); n > 1 {
		t.Errorf("stderr has %d lines, want one: %q", n, r.stderr)
	}
}

// TestApplyUpgradeDeleteReapply applies a job, changes it (an upgrade
// with a savepoint), deletes it (a final savepoint under its name) and
// applies it again (restored from that savepoint).
func TestApplyUpgradeDeleteReapply(t *testing.T) {
	f := newFixture(t)
	file := f.jobFile("counter", "/out/v1", "")
	r := f.run("apply", "-f", file)
	wantCode(t, r, exitOK, "")
	d1 := f.deployment("counter")
	if !d1.Status.Converged(d1.Spec) || len(f.running()) != 1 || f.running()[0].ID != d1.Status.JobID {
		t.Fatalf("after apply: status %+v, running %+v", d1.Status, f.running())
	}
	if !strings.Contains(r.stdout, "job "+string(d1.Status.JobID)+" runs the spec's job stably") {
		t.Errorf("apply output does not name the job: %q", r.stdout)
	}

	// status, text and JSON.
	r = f.run("status", "counter")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, string(d1.Status.JobID)) || !strings.Contains(r.stdout, "converged:") {
		t.Errorf("status: %q", r.stdout)
	}
	r = f.run("status", "-o", "json")
	var list []deployment
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].Status.JobID != d1.Status.JobID {
		t.Fatalf("status -o json: %v %+v", err, list)
	}

	// An upgrade: stop with a savepoint, the new job starts from it.
	f.srv.Clock().Advance(3 * time.Second)
	file = f.jobFile("counter", "/out/v2", "")
	r = f.run("apply", "-f", file, "-o", "json")
	wantCode(t, r, exitOK, "")
	d2 := f.deployment("counter")
	var printed deployment
	if err := json.Unmarshal([]byte(r.stdout), &printed); err != nil || printed.Status.JobID != d2.Status.JobID || !printed.Status.Converged(printed.Spec) {
		t.Fatalf("apply -o json printed %q: %v", r.stdout, err)
	}
	first, _ := f.srv.Job(d1.Status.JobID)
	second, _ := f.srv.Job(d2.Status.JobID)
	if d2.Status.JobID == d1.Status.JobID || first.State != flinkapi.JobFinished || d2.Status.Latest.Reason != savepoint.ReasonUpdate ||
		second.RestoredFrom != d2.Status.Latest.Location || len(f.running()) != 1 {
		t.Fatalf("after the upgrade: first %+v, second %+v, latest %+v", first, second, d2.Status.Latest)
	}

	// Delete: a final savepoint recorded under the name.
	f.srv.Clock().Advance(3 * time.Second)
	r = f.run("delete", "counter")
	wantCode(t, r, exitOK, "")
	_, found, _ := stateDir{root: filepath.Join(f.dir, "state")}.loadDeployment("counter")
	store, _ := lifecycle.NewFileStore(filepath.Join(f.dir, "state", "restore-points"))
	rec, ok, err := store.Get(context.Background(), "counter")
	final := rec.Location
	if found || err != nil || !ok || final == "" || rec.JobID != d2.Status.JobID || len(f.running()) != 0 || !strings.Contains(r.stdout, final) {
		t.Fatalf("after delete: record kept %v, restore point %+v %v %v, running %d", found, rec, ok, err, len(f.running()))
	}
	wantCode(t, f.run("delete", "counter"), exitOK, "") // again: nothing to do

	// Apply again: a new job from the final savepoint.
	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	d4 := f.deployment("counter")
	third, _ := f.srv.Job(d4.Status.JobID)
	if third.RestoredFrom != final || len(f.running()) != 1 {
		t.Fatalf("after the second apply: job %+v, want restored from %s", third, final)
	}
}

// cancelAfter is a clock that cancels a context on its n-th sleep, as a
// user's Ctrl-C in the middle of a command.
type cancelAfter struct {
	*flinktest.Clock
	n      int32
	cancel context.CancelFunc
	when   func() bool
}

func (c *cancelAfter) Sleep(ctx context.Context, d time.Duration) error {
	if c.when() && atomic.AddInt32(&c.n, -1) <= 0 {
		c.cancel()
	}
	return c.Clock.Sleep(ctx, d)
}

// TestApplyInterruptedResumes interrupts an upgrade in its savepoint
// phase, and once the new job was submitted: apply exits 130 with the
// action stored, and apply again ends it with one job, restored from the
// one savepoint the upgrade took (the resumed upgrade sent the same
// trigger id, and adopted the job it had submitted).
func TestApplyInterruptedResumes(t *testing.T) {
	for _, phase := range []lifecycle.Phase{lifecycle.PhaseSavepoint, lifecycle.PhaseWaitRunning} {
		t.Run(string(phase), func(t *testing.T) {
			f := newFixture(t, flinktest.WithSavepointDuration(5*time.Second))
			wantCode(t, f.run("apply", "-f", f.jobFile("counter", "/out/v1", "")), exitOK, "")
			f.srv.Clock().Advance(3 * time.Second)
			file := f.jobFile("counter", "/out/v2", "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			state := filepath.Join(f.dir, "state")
			clock := &cancelAfter{Clock: f.srv.Clock(), n: 2, cancel: cancel, when: func() bool {
				d, ok, _ := stateDir{root: state}.loadDeployment("counter")
				return ok && d.Status.InFlight() && d.Status.Progress.Phase == phase
			}}
			r := f.runCtx(ctx, clock, "apply", "-f", file)
			wantCode(t, r, exitInterrupted, "run `flinkctl apply -f "+file+"` to resume")
			mid := f.deployment("counter")
			if !mid.Status.InFlight() || mid.Status.Action != lifecycle.ActionUpgrade || mid.Status.Progress.Phase != phase {
				t.Fatalf("interrupted status %+v, want the upgrade in flight", mid.Status)
			}
			trigger := mid.Status.Progress.Savepoint.Status.TriggerID
			r = f.run("apply", "-f", file)
			wantCode(t, r, exitOK, "")
			if !strings.Contains(r.stdout, "resuming Upgrade") {
				t.Errorf("apply does not say it resumes: %q", r.stdout)
			}
			d := f.deployment("counter")
			run := f.running()
			if len(run) != 1 || run[0].ID != d.Status.JobID || run[0].RestoredFrom != d.Status.Latest.Location || len(f.srv.Jobs()) != 2 {
				t.Fatalf("jobs %+v, status %+v", f.srv.Jobs(), d.Status)
			}
			var sps int
			for _, s := range f.srv.Snapshots() {
				if s.TriggerID != "" {
					sps++
					if s.TriggerID != trigger {
						t.Errorf("savepoint of trigger %s, want %s", s.TriggerID, trigger)
					}
				}
			}
			if sps != 1 {
				t.Errorf("%d savepoints, want 1", sps)
			}
		})
	}
}

// TestApplyBadInput: a job file that is not valid is refused, exit 2,
// naming the field; nothing is stored or sent.
func TestApplyBadInput(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ yaml, want string }{
		{"name: x\njob: {jarFile: counter.jar}\nupdate: {mode: Sometimes}\n", "mode"},
		{"name: x\njob: {jarFile: counter.jar}\nunknownField: 1\n", "unknownField"},
		{"job: {jarFile: counter.jar}\n", "set name"},
		{"name: a/../b\njob: {jarFile: counter.jar}\n", `bad.yaml:1: name: "a/../b" is not a valid name`},
		{"name: x\njob: {jarFile: missing.jar}\n", "missing.jar"},
		{"name: x\njob: {jarFile: counter.jar, parallelism: -1}\n", "parallelism"},
	} {
		p := filepath.Join(f.dir, "bad.yaml")
		if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		wantCode(t, f.run("apply", "-f", p), exitBadInput, c.want)
	}
	wantCode(t, f.run("apply"), exitBadInput, "-f FILE")
	wantCode(t, f.run("apply", "-f", filepath.Join(f.dir, "nope.yaml")), exitBadInput, "nope.yaml")
	wantCode(t, f.run("nosuch"), exitBadInput, "unknown command")
	wantCode(t, f.run("jobs", "--nosuch"), exitBadInput, "unknown flag")
	wantCode(t, f.run("savepoint"), exitBadInput, "takes JOB")
	wantCode(t, f.run("savepoint", "zzz"), exitBadInput, "neither a job id")
	wantCode(t, f.run("status", "nobody"), exitBadInput, "no job named")
	wantCode(t, f.run("jobs", "-o", "yaml"), exitBadInput, "want text or json")
	if len(f.srv.Jobs()) != 0 {
		t.Errorf("jobs started by bad input: %+v", f.srv.Jobs())
	}
}

// TestUnreachable: a cluster that does not answer is exit 5, saying to
// check --flink-url.
func TestUnreachable(t *testing.T) {
	f := newFixture(t)
	url := f.srv.URL
	f.srv.Close()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	code := a.main(context.Background(), []string{"--flink-url", url, "--state-dir", t.TempDir(), "jobs"})
	if code != exitUnreachable || !strings.Contains(errb.String(), "check --flink-url") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// startJob starts a counter job through apply and returns its id.
func (f *fixture) startJob(name string) flinkapi.JobID {
	f.t.Helper()
	wantCode(f.t, f.run("apply", "-f", f.jobFile(name, "/out/"+name, "")), exitOK, "")
	return f.deployment(name).Status.JobID
}

// TestJobs lists the jobs, in a table and as JSON.
func TestJobs(t *testing.T) {
	f := newFixture(t)
	id := f.startJob("counter")
	r := f.run("jobs")
	wantCode(t, r, exitOK, "")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "JOB ID") || !strings.Contains(lines[1], string(id)) ||
		!strings.Contains(lines[1], "RUNNING") || !strings.HasSuffix(lines[1], "counter") {
		t.Fatalf("jobs table:\n%s", r.stdout)
	}
	r = f.run("jobs", "-o", "json")
	var jobs []jobRow
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil || len(jobs) != 1 || jobs[0].JobID != id || jobs[0].Name != "counter" {
		t.Fatalf("jobs -o json: %v %+v", err, jobs)
	}
}

// TestSavepointStopCancel takes a savepoint (by name), stops a job with
// the strategy of its version, and refuses to cancel a job with state
// unless --force.
func TestSavepointStopCancel(t *testing.T) {
	f := newFixture(t)
	id := f.startJob("counter")
	f.srv.Clock().Advance(2 * time.Second)
	r := f.run("savepoint", "counter", "-o", "json")
	wantCode(t, r, exitOK, "")
	var res opResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Job != id || res.Outcome != lifecycle.OutcomeSucceeded || res.Location == "" {
		t.Fatalf("savepoint: %v %+v", err, res)
	}
	if ok, err := f.srv.SavepointExists(res.Location); !ok || err != nil {
		t.Fatalf("savepoint %s not on the fake's disk: %v", res.Location, err)
	}
	h, _ := stateDir{root: filepath.Join(f.dir, "state")}.history(id)
	if len(h.Records) != 1 || h.Records[0].Location != res.Location || h.Records[0].Reason != savepoint.ReasonUser {
		t.Fatalf("history %+v", h)
	}
	if st, _ := f.c.JobStatus(context.Background(), id); st != flinkapi.JobRunning {
		t.Fatalf("job %s after a savepoint", st)
	}

	// cancel: refused, the job has state.
	r = f.run("cancel", string(id))
	wantCode(t, r, exitBlocked, "it has state (it checkpoints every 1s)")
	if st, _ := f.c.JobStatus(context.Background(), id); st != flinkapi.JobRunning {
		t.Fatalf("job %s after a refused cancel", st)
	}
	// A forced CancelWithoutState needs the Stateless mode.
	wantCode(t, f.run("stop", string(id), "--strategy", "CancelWithoutState"), exitBlocked, "may not be stopped without a savepoint")

	// stop: StopWithSavepoint on 1.20.
	r = f.run("stop", string(id))
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "with StopWithSavepoint (Flink 1.20.5)") || !strings.Contains(r.stdout, "stopped (StopWithSavepoint); savepoint ") {
		t.Errorf("stop output %q", r.stdout)
	}
	if st, _ := f.c.JobStatus(context.Background(), id); st != flinkapi.JobFinished {
		t.Fatalf("job %s after stop", st)
	}
	h, _ = stateDir{root: filepath.Join(f.dir, "state")}.history(id)
	if len(h.Records) != 2 {
		t.Fatalf("history after the stop %+v", h)
	}

	// cancel --force of another job.
	other := f.startJob("other")
	wantCode(t, f.run("cancel", string(other), "--force"), exitOK, "")
	if st, _ := f.c.JobStatus(context.Background(), other); st != flinkapi.JobCanceled {
		t.Fatalf("job %s after cancel --force", st)
	}
	// A forced strategy.
	third := f.startJob("third")
	f.srv.Clock().Advance(2 * time.Second)
	r = f.run("stop", "third", "--strategy", "CancelWithSavepoint", "-o", "json")
	wantCode(t, r, exitOK, "")
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Strategy != lifecycle.CancelWithSavepoint || res.Location == "" {
		t.Fatalf("stop --strategy CancelWithSavepoint: %v %+v", err, res)
	}
	if st, _ := f.c.JobStatus(context.Background(), third); st != flinkapi.JobCanceled {
		t.Fatalf("job %s after a CancelWithSavepoint", st)
	}
	wantCode(t, f.run("stop", "third", "--strategy", "Gently"), exitBadInput, "unknown stop strategy")
	entries, _ := os.ReadDir(filepath.Join(f.dir, "state", "operations"))
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("operation left stored after its end: %s", e.Name())
		}
	}
}

// TestSavepointFailsKeepsRunning: a savepoint that fails is exit 1 and
// the job runs on.
func TestSavepointFailsKeepsRunning(t *testing.T) {
	f := newFixture(t)
	id := f.startJob("counter")
	if err := f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Times: 1}); err != nil {
		t.Fatal(err)
	}
	r := f.run("savepoint", string(id))
	wantCode(t, r, exitFailed, "SavepointFailed")
	if st, _ := f.c.JobStatus(context.Background(), id); st != flinkapi.JobRunning {
		t.Fatalf("job %s", st)
	}
}

// TestCancelStateless cancels a job without checkpointing without
// --force.
func TestCancelStateless(t *testing.T) {
	f := newFixture(t, flinktest.WithCheckpointInterval(0))
	ctx := context.Background()
	jar, err := f.c.UploadJar(ctx, f.jar)
	if err != nil {
		t.Fatal(err)
	}
	id := flinkapi.NewJobID()
	if _, err := f.c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: []string{"--out", "/out/x", "--checkpoint-interval", "0"}}); err != nil {
		t.Fatal(err)
	}
	f.srv.Clock().Advance(2 * time.Second)
	wantCode(t, f.run("cancel", string(id)), exitOK, "")
	if st, _ := f.c.JobStatus(ctx, id); st != flinkapi.JobCanceled {
		t.Fatalf("job %s", st)
	}
}

// TestDispose: a dry run lists what --keep would dispose of and disposes
// of nothing; --yes disposes of it and removes it from the history.
func TestDispose(t *testing.T) {
	f := newFixture(t)
	id := f.startJob("counter")
	var locs []string
	for range 4 {
		f.srv.Clock().Advance(2 * time.Second)
		r := f.run("savepoint", string(id), "-o", "json")
		wantCode(t, r, exitOK, "")
		var res opResult
		_ = json.Unmarshal([]byte(r.stdout), &res)
		locs = append(locs, res.Location)
	}
	wantCode(t, f.run("savepoints", "dispose", "--job", string(id)), exitBadInput, "--keep")
	wantCode(t, f.run("savepoints", "dispose", "counter", "--job", string(id), "--keep", "1"), exitBadInput, "not both")
	r := f.run("savepoints", "dispose", "--job", string(id), "--keep", "2")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "would dispose of 2 of 4") || !strings.Contains(r.stdout, locs[0]) || !strings.Contains(r.stdout, locs[1]) ||
		strings.Contains(r.stdout, locs[2]) || !strings.Contains(r.stdout, "--yes") {
		t.Fatalf("dry run: %q", r.stdout)
	}
	for _, l := range locs {
		if ok, _ := f.srv.SavepointExists(l); !ok {
			t.Fatalf("dry run disposed of %s", l)
		}
	}
	r = f.run("savepoints", "dispose", "--job", string(id), "--keep", "2", "--yes", "-o", "json")
	wantCode(t, r, exitOK, "")
	var res disposeResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.DryRun || len(res.Disposed) != 2 {
		t.Fatalf("dispose: %v %+v", err, res)
	}
	for i, l := range locs {
		if ok, _ := f.srv.SavepointExists(l); ok != (i >= 2) {
			t.Errorf("savepoint %d (%s) exists %v", i, l, ok)
		}
	}
	h, _ := stateDir{root: filepath.Join(f.dir, "state")}.history(id)
	if len(h.Records) != 2 || h.Records[0].Location != locs[2] {
		t.Fatalf("history after dispose %+v", h)
	}

	// The applied job's history: its upgrade savepoint and the one it
	// runs from are kept.
	f.srv.Clock().Advance(2 * time.Second)
	wantCode(t, f.run("apply", "-f", f.jobFile("counter", "/out/v2", "")), exitOK, "")
	r = f.run("savepoints", "dispose", "counter", "--keep", "1", "--dispose-update")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "would dispose of 0 of 1") {
		t.Fatalf("dispose of the running job's restore point: %q", r.stdout)
	}
}

// TestHealth judges a running job healthy, and one restarting too often
// unhealthy (exit 1).
func TestHealth(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	jar, err := f.c.UploadJar(ctx, f.jar)
	if err != nil {
		t.Fatal(err)
	}
	id := flinkapi.NewJobID()
	if _, err := f.c.RunJar(ctx, jar, flinkapi.RunJarRequest{JobID: id, ProgramArgs: []string{"--out", "/out/x", "--restart-attempts", "10", "--restart-delay", "1000"}}); err != nil {
		t.Fatal(err)
	}
	f.srv.Clock().Advance(time.Minute)
	r := f.run("health", string(id), "--window", "30s", "--transition-timeout", "10s")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "RUNNING: Healthy") {
		t.Fatalf("health: %q", r.stdout)
	}
	for range 3 {
		if err := f.srv.FailJob(id, "injected by the test"); err != nil {
			t.Fatal(err)
		}
		f.srv.Clock().Advance(5 * time.Second)
	}
	r = f.run("health", string(id), "--window", "30s", "--max-restarts", "1", "-o", "json")
	wantCode(t, r, exitFailed, "unhealthy")
	var res healthResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Problem != "TooManyRestarts" || res.Restarts < 2 {
		t.Fatalf("health -o json: %v %+v", err, res)
	}
}

// TestCompletionAndHelp: completion scripts for the shells, and --help
// documents the exit codes.
func TestCompletionAndHelp(t *testing.T) {
	f := newFixture(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := f.run("completion", sh)
		wantCode(t, r, exitOK, "")
		if !strings.Contains(r.stdout, "flinkctl") || len(r.stdout) < 500 {
			t.Errorf("completion %s: %d bytes", sh, len(r.stdout))
		}
	}
	for _, cmd := range []string{"apply", "cancel", "stop", "savepoint", "health", "delete", "fake"} {
		r := f.run(cmd, "--help")
		wantCode(t, r, exitOK, "")
		if !strings.Contains(r.stdout, "130  interrupted") || !strings.Contains(r.stdout, "3    blocked by policy") {
			t.Errorf("%s --help does not list the exit codes", cmd)
		}
	}
	// Completion of applied names.
	f.startJob("counter")
	r := f.run("__complete", "status", "")
	if !strings.Contains(r.stdout, "counter") {
		t.Errorf("completion of names: %q", r.stdout)
	}
}

// TestLock: a second command on the same name while one holds it is
// refused at once.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	s := stateDir{root: dir}
	unlock, err := s.lock("counter")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.lock("counter"); err == nil || !strings.Contains(err.Error(), "another flinkctl") {
		t.Fatalf("second lock: %v", err)
	}
	unlock()
	u2, err := s.lock("counter")
	if err != nil {
		t.Fatal(err)
	}
	u2()
}

// TestApplyBlocked: an upgrade whose savepoints fail ends Blocked by the
// Savepoint policy, exit 3, with the old job running on; a job that
// fails under a restart policy of Never ends apply with exit 1.
func TestApplyBlocked(t *testing.T) {
	f := newFixture(t)
	first := f.startJob("counter")
	f.srv.Clock().Advance(3 * time.Second)
	if err := f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Times: 100}); err != nil {
		t.Fatal(err)
	}
	r := f.run("apply", "-f", f.jobFile("counter", "/out/v2", ""))
	wantCode(t, r, exitBlocked, "Upgrade Blocked")
	if run := f.running(); len(run) != 1 || run[0].ID != first {
		t.Fatalf("running %+v, want the old job %s", run, first)
	}

	g := newFixture(t)
	file := g.jobFile("once", "/out/once", "")
	once := strings.Replace(mustRead(t, file), `"1000"]`, `"1000", "--restart-attempts", "0"]`, 1)
	once = strings.Replace(once, "mode: FromLatestState", "mode: Never", 1)
	if err := os.WriteFile(file, []byte(once), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode(t, g.run("apply", "-f", file), exitOK, "")
	if err := g.srv.FailJob(g.deployment("once").Status.JobID, "injected by the test"); err != nil {
		t.Fatal(err)
	}
	g.srv.Clock().Advance(4 * time.Second) // past Flink's cache of the job's details
	wantCode(t, g.run("apply", "-f", file), exitFailed, "RestartDisabled")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDeletePlan: delete --plan prints the teardown delete would start,
// sends no change and leaves the job running; delete then deletes it,
// and delete --plan of the deleted job starts nothing.
func TestDeletePlan(t *testing.T) {
	f := newFixture(t, flinktest.WithSlots(4))
	wantCode(t, f.run("apply", "-f", f.jobFile("counter", "/out/v1", "")), exitOK, "")
	before := len(f.srv.Requests())
	r := f.run("delete", "--plan", "counter")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "Removed   counter on default: ") || !strings.Contains(r.stdout, "situation Running, start Teardown") {
		t.Fatalf("delete --plan: %q", r.stdout)
	}
	for _, q := range f.srv.Requests()[before:] {
		if q.Method != "GET" {
			t.Errorf("delete --plan sent %s %s", q.Method, q.Route)
		}
	}
	wantCode(t, f.run("delete", "counter"), exitOK, "")
	// Deleted, the job is no longer applied: nothing to plan.
	wantCode(t, f.run("delete", "--plan", "counter", "-o", "json"), exitBadInput, `no job named "counter"`)
}

// TestApplyPlan: apply --plan prints what apply would do, sends no
// change and stores nothing; a blocked plan exits 3.
func TestApplyPlan(t *testing.T) {
	f := newFixture(t, flinktest.WithSlots(4))
	file := f.jobFile("counter", "/out/v1", "")
	r := f.run("apply", "--plan", "-f", file)
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "situation NeverDeployed, start Deploy") || len(f.srv.Jobs()) != 0 {
		t.Fatalf("plan of a new job: %q; jobs %d", r.stdout, len(f.srv.Jobs()))
	}
	_ = filepath.WalkDir(f.dir, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".json") {
			t.Errorf("the plan stored %s", path)
		}
		return nil
	})
	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	before := len(f.srv.Requests())
	r = f.run("apply", "--plan", "-f", f.jobFile("counter", "/out/v2", ""), "-o", "json")
	wantCode(t, r, exitOK, "")
	var cp fleet.ChangePlan
	err := json.Unmarshal([]byte(r.stdout), &cp)
	if err == nil && (len(cp.Deployments) != 1 || cp.Deployments[0].Change != fleet.Changed) {
		t.Fatalf("plan of an upgrade: %+v", cp)
	}
	p := cp.Deployments[0].Plan
	if err != nil || p.Situation != lifecycle.SituationRunning ||
		p.Action != lifecycle.ActionUpgrade || !p.NewSavepoint || p.Preflight == nil || p.Preflight.Verdict == nil || !p.Preflight.Verdict.Allowed() {
		t.Fatalf("plan of an upgrade: %q (%v)", r.stdout, err)
	}
	// An upgrade to a job whose counter has another uid: the preflight
	// says its state would not be restored, and the plan is blocked.
	renamed := f.jobFile("counter", "/out/v2", "")
	y, _ := os.ReadFile(renamed)
	if err := os.WriteFile(renamed, bytes.Replace(y, []byte(`"--checkpoint-interval"`), []byte(`"--uid-suffix", "-x", "--checkpoint-interval"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	r = f.run("apply", "--plan", "-f", renamed)
	wantCode(t, r, exitBlocked, "preflight")
	if !strings.Contains(r.stdout, "blocked: preflight") {
		t.Errorf("plan of an upgrade that loses state: %q", r.stdout)
	}
	for _, req := range f.srv.Requests()[before:] {
		if req.Method != "GET" && req.Route != "POST /jars/:jarid/plan" {
			t.Errorf("the plan sent %s %s", req.Method, req.Path)
		}
	}
}

// TestApplyJarRoot: a job file's jar is read only from --jar-root, by
// default the job file's directory: a jar elsewhere (by "..", by an
// absolute path, by a symbolic link) is refused, exit 2, naming the jar
// and the root; nothing is uploaded. With --jar-root over it, it is
// deployed.
func TestApplyJarRoot(t *testing.T) {
	f := newFixture(t)
	jobs := filepath.Join(f.dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../counter.jar", filepath.Join(jobs, "link.jar")); err != nil {
		t.Fatal(err)
	}
	for _, jar := range []string{"../counter.jar", f.jar, "link.jar"} {
		p := filepath.Join(jobs, "x.yaml")
		if err := os.WriteFile(p, []byte("name: x\njob: {jarFile: "+jar+", args: [--out, /out/x]}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := f.run("apply", "-f", p)
		wantCode(t, r, exitBadInput, jobs)
		if !strings.Contains(r.stderr, "job.jarFile") {
			t.Fatalf("stderr %q does not name the jar", r.stderr)
		}
		for _, req := range f.srv.Requests() {
			// The runner's housekeeping may list the jars; nothing is
			// uploaded, run or deleted.
			if strings.HasPrefix(req.Path, "/jars") && req.Method != "GET" {
				t.Fatalf("%s: request %s %s sent", jar, req.Method, req.Path)
			}
		}
	}
	p := filepath.Join(jobs, "x.yaml")
	wantCode(t, f.run("--jar-root", f.dir, "apply", "-f", p, "--timeout", "1m"), exitOK, "")
	if d := f.deployment("x"); d.Status.JarID == "" || d.Status.JarDigest == "" {
		t.Fatalf("deployed with --jar-root: %+v", d.Status)
	}
}

// TestSavepointsAudit shows an applied job's history beside what lies
// under --storage-dir: the fake's savepoints and checkpoints laid out
// there as Flink writes them, a savepoint of the job the history lacks,
// an incomplete one and a foreign job's savepoint; it reads only under
// the directory and removes nothing.
func TestSavepointsAudit(t *testing.T) {
	storage := t.TempDir()
	sp, ck := filepath.Join(storage, "savepoints"), filepath.Join(storage, "checkpoints")
	f := newFixture(t, flinktest.WithSavepointDir(sp), flinktest.WithCheckpointDir(ck))
	f.startJob("counter")
	f.srv.Clock().Advance(3 * time.Second)
	wantCode(t, f.run("apply", "-f", f.jobFile("counter", "/out/v2", "")), exitOK, "")
	d := f.deployment("counter")
	if d.Status.Latest.Location == "" {
		t.Fatalf("no savepoint after the upgrade: %+v", d.Status)
	}
	write := func(dir string, metadata bool) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if metadata {
			if err := os.WriteFile(filepath.Join(dir, "_metadata"), make([]byte, 2048), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range f.srv.Snapshots() {
		if !s.Removed {
			write(strings.TrimPrefix(s.Location, "file:"), true)
		}
	}
	job := string(d.Status.JobID)
	unrecorded := filepath.Join(sp, "savepoint-"+job[:6]+"-0000000000aa")
	incomplete := filepath.Join(sp, "savepoint-"+job[:6]+"-0000000000bb")
	foreign := filepath.Join(sp, "savepoint-ffffff-0000000000cc")
	write(unrecorded, true)
	write(incomplete, false)
	write(foreign, true)

	r := f.run("savepoints", "counter")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, d.Status.Latest.Location+"  (latest)") || strings.Contains(r.stdout, "storage audit") {
		t.Errorf("savepoints without --storage-dir: %q", r.stdout)
	}
	r = f.run("savepoints", "counter", "--storage-dir", storage)
	wantCode(t, r, exitOK, "")
	for _, want := range []string{"storage audit:", "Unrecorded    file:" + unrecorded, "Incomplete    file:" + incomplete, "RestorePoint", "Retained", "2.0 KiB"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("savepoints --storage-dir does not show %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, foreign) || strings.Contains(r.stdout, "Missing") {
		t.Errorf("savepoints --storage-dir lists the foreign savepoint or a missing one:\n%s", r.stdout)
	}
	r = f.run("savepoints", "counter", "--storage-dir", storage, "-o", "json")
	wantCode(t, r, exitOK, "")
	var res savepointsResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Audit == nil {
		t.Fatalf("-o json: %v %q", err, r.stdout)
	}
	if res.Audit.Count(lifecycle.AuditUnrecorded) != 1 || res.Audit.Count(lifecycle.AuditIncomplete) != 1 || res.Audit.Count(lifecycle.AuditForeign) != 1 {
		t.Errorf("audit totals %+v", res.Audit.Totals)
	}
	for _, p := range []string{unrecorded, incomplete, foreign} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// Outside --storage-dir nothing is read: the history's savepoints
	// are Unread, never Missing.
	other := t.TempDir()
	r = f.run("savepoints", "counter", "--storage-dir", other)
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "Unread") || strings.Contains(r.stdout, "Missing") {
		t.Errorf("--storage-dir elsewhere: %q", r.stdout)
	}
	wantCode(t, f.run("savepoints", "counter", "--storage-dir", filepath.Join(other, "none")), exitBadInput, "not a directory")
}
