//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// countsTimeout bounds each wait for the test job's counts.
const countsTimeout = 90 * time.Second

// TestRealFlink runs the built flinkctl against a real Flink session
// cluster of FLINK_VERSION: apply, jobs, savepoint, health, a refused
// cancel, an upgrade interrupted by SIGINT and applied again (one job, the
// counts continue), delete with a final savepoint, apply again from it,
// stop, savepoints dispose, and cancel --force:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v .
func TestRealFlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	begin := time.Now()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 4, CacheDir: os.Getenv("FLINK_CACHE_DIR")})
	flink, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	work := t.TempDir()
	state := filepath.Join(work, "state")
	// The job files name the fixture's test jar, outside their folder,
	// and secrets of --secret-dir: the rate (which the job must get as a
	// number) and a label, whose values no output or stored file may show.
	const rate, label = "40.000917", "FLINKKIT-SECRET-flinkctl-label-5e02"
	secrets := filepath.Join(work, "secrets")
	if err := os.MkdirAll(filepath.Join(secrets, "counter"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"rate": rate, "label": label} {
		if err := os.WriteFile(filepath.Join(secrets, "counter", name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var outputs []string
	base := []string{"--flink-url", cluster.URL, "--state-dir", state, "--poll", "500ms", "--timeout", "4m", "--jar-root", filepath.Dir(cluster.TestJobJar),
		"--secret-dir", secrets}
	ctl := func(want int, args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, stdout.String(), stderr.String())
		if strings.Contains(stdout.String()+stderr.String(), label) {
			t.Fatalf("flinkctl %s shows the secret label", strings.Join(args, " "))
		}
		t.Logf("flinkctl %s: exit %d in %v\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), stdout.String(), stderr.String())
		if code != want {
			t.Fatalf("flinkctl %s: exit %d, want %d: %s", strings.Join(args, " "), code, want, stderr.String())
		}
		return stdout.String()
	}
	const keys = 3
	jobFile := func(name, out string) string {
		y := fmt.Sprintf(`name: %s
job:
  jarFile: %s
  entryClass: %s
  args: ["--out", "%s", "--keys", "%d", "--rate", "${secret:counter/rate}", "--label", "${secret:counter/label}", "--parallelism", "1", "--checkpoint-interval", "1000", "--name", "flinkctl-%s"]
update:
  mode: Savepoint
`, name, cluster.TestJobJar, cluster.TestJobClass, out, keys, name)
		p := filepath.Join(work, name+".yaml")
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	load := func(name string) deployment {
		d, _, err := stateDir{root: state}.loadDeployment(name)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	live := func() []flinkapi.JobID {
		jobs, err := flink.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []flinkapi.JobID
		for _, j := range jobs {
			if !j.Status.IsGloballyTerminal() && !cluster.ExistedBefore(string(j.ID)) {
				out = append(out, j.ID)
			}
		}
		return out
	}
	// continues waits until the job writing next counts on from the
	// counts prev had when it stopped.
	continues := func(prev, next string) {
		t.Helper()
		atStop, err := flinkfixture.ReadCounts(prev)
		if err != nil || len(atStop) != keys {
			t.Fatalf("counts at the stop %v, %v", atStop, err)
		}
		first := map[string]int64{}
		flinkfixture.WaitCounts(t, ctx, next, keys, countsTimeout, func(k string, n int64) bool {
			if _, ok := first[k]; !ok {
				first[k] = n
			}
			return n > atStop[k]+5
		})
		for k, n := range atStop {
			if first[k] < n {
				t.Errorf("key %s: first count %d after, %d at the stop: state not restored", k, first[k], n)
			}
		}
		t.Logf("counts at the stop %v, first after %v", atStop, first)
	}

	// apply
	out1 := cluster.OutDir("flinkctl-v1")
	ctl(exitOK, "apply", "-f", jobFile("counter", out1))
	first := load("counter").Status.JobID
	if l := live(); len(l) != 1 || l[0] != first {
		t.Fatalf("live jobs %v, want %s", l, first)
	}
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 40 })
	if out := ctl(exitOK, "jobs"); !strings.Contains(out, string(first)) || !strings.Contains(out, "RUNNING") {
		t.Fatalf("jobs: %s", out)
	}
	var sp opResult
	if err := json.Unmarshal([]byte(ctl(exitOK, "savepoint", "counter", "-o", "json")), &sp); err != nil || !flinkfixture.LocationExists(sp.Location) {
		t.Fatalf("savepoint %+v, %v", sp, err)
	}
	ctl(exitOK, "health", "counter")
	ctl(exitBlocked, "cancel", "counter")
	if s, _ := flink.JobStatus(ctx, first); s != flinkapi.JobRunning {
		t.Fatalf("job %s after a refused cancel", s)
	}

	// upgrade applies file in the background, sends SIGINT once the stored
	// upgrade is in one of phases, and applies file again: one job is
	// left, the new one, and its counts continue from prev's.
	upgrade := func(file, prev, next string, phases ...lifecycle.Phase) {
		t.Helper()
		before := load("counter").Status.JobID
		cmd := exec.CommandContext(ctx, bin, append(base, "apply", "-f", file)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var mid deployment
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			d, ok, err := stateDir{root: state}.loadDeployment("counter")
			if err == nil && ok && d.Status.InFlight() && d.Status.Action == lifecycle.ActionUpgrade && slices.Contains(phases, d.Status.Progress.Phase) {
				mid = d
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the upgrade did not reach %v; stderr %s", phases, stderr.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		var ee *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || !strings.Contains(stderr.String(), "to resume") {
			t.Fatalf("interrupted apply: %v, stderr %q", err, stderr.String())
		}
		stopped := load("counter")
		if slices.Contains(phases, lifecycle.PhaseWaitRunning) && stopped.Status.Progress.Submit.NewJobID == "" {
			t.Fatalf("interrupted after the submission, but no new job recorded: %+v", stopped.Status.Progress)
		}
		t.Logf("interrupted in phase %s (stored: %s, %s; new job %s)", mid.Status.Progress.Phase, stopped.Status.Action, stopped.Status.Progress.Phase,
			stopped.Status.Progress.Submit.NewJobID)
		ctl(exitOK, "apply", "-f", file)
		up := load("counter").Status
		if l := live(); len(l) != 1 || l[0] != up.JobID || up.JobID == before {
			t.Fatalf("after the resumed upgrade: live jobs %v, status job %s (before %s)", l, up.JobID, before)
		}
		if s, _ := flink.JobStatus(ctx, before); s != flinkapi.JobFinished {
			t.Errorf("old job %s, want FINISHED", s)
		}
		continues(prev, next)
	}
	// Interrupted before or during the stop with a savepoint, then after
	// the new job was submitted.
	out2 := cluster.OutDir("flinkctl-v2")
	upgrade(jobFile("counter", out2), out1, out2, lifecycle.PhaseSavepoint)
	out2b := cluster.OutDir("flinkctl-v2b")
	upgrade(jobFile("counter", out2b), out2, out2b, lifecycle.PhaseWaitRunning)

	// delete, then apply again from the final savepoint.
	ctl(exitOK, "delete", "counter")
	restorePoints, err := stateDir{root: state}.restorePoints()
	if err != nil {
		t.Fatal(err)
	}
	rp, recorded, err := restorePoints.Get(ctx, "counter")
	final := rp.Location
	if _, kept, _ := (stateDir{root: state}).loadDeployment("counter"); kept || err != nil || !recorded || !flinkfixture.LocationExists(final) || len(live()) != 0 {
		t.Fatalf("after delete: record kept %v, restore point %+v %v %v, live %v", kept, rp, recorded, err, live())
	}
	out3 := cluster.OutDir("flinkctl-v3")
	ctl(exitOK, "apply", "-f", jobFile("counter", out3))
	again := load("counter").Status
	stats, err := flink.Checkpoints(ctx, again.JobID)
	if err != nil || stats.LatestRestored == nil || stats.LatestRestored.ExternalPath != final {
		t.Fatalf("the new job restored %+v, %v; want %s", stats, err, final)
	}
	continues(out2b, out3)

	// savepoints, stop, dispose.
	ctl(exitOK, "savepoint", "counter")
	ctl(exitOK, "savepoint", "counter")
	if out := ctl(exitOK, "stop", "counter"); !strings.Contains(out, "StopWithSavepoint") {
		t.Errorf("stop: %s", out)
	}
	if s, _ := flink.JobStatus(ctx, again.JobID); s != flinkapi.JobFinished {
		t.Fatalf("job %s after stop", s)
	}
	h, _ := stateDir{root: state}.history(again.JobID)
	if len(h.Records) != 3 {
		t.Fatalf("history %+v", h)
	}
	ctl(exitOK, "savepoints", "dispose", "--job", string(again.JobID), "--keep", "1")
	for _, r := range h.Records {
		if !flinkfixture.LocationExists(r.Location) {
			t.Fatalf("a dry run disposed of %s", r.Location)
		}
	}
	ctl(exitOK, "savepoints", "dispose", "--job", string(again.JobID), "--keep", "1", "--yes")
	for i, r := range h.Records {
		if flinkfixture.LocationExists(r.Location) != (i == 2) {
			t.Errorf("savepoint %d %s exists %v after dispose --keep 1", i, r.Location, flinkfixture.LocationExists(r.Location))
		}
	}

	// cancel --force
	ctl(exitOK, "apply", "-f", jobFile("scratch", cluster.OutDir("flinkctl-scratch")))
	scratch := load("scratch").Status.JobID
	ctl(exitOK, "cancel", "scratch", "--force")
	if s, _ := flink.JobStatus(ctx, scratch); s != flinkapi.JobCanceled {
		t.Fatalf("job %s after cancel --force", s)
	}
	// Flink got the secrets' values (the jobs ran at the rate); nothing
	// flinkctl printed or stored shows them.
	if len(outputs) == 0 {
		t.Fatal("no output collected")
	}
	err = filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(label)) {
			t.Errorf("the stored file %s shows the secret label", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Flink %s: total %v", cluster.FlinkVersion, time.Since(begin).Round(time.Millisecond))
}
