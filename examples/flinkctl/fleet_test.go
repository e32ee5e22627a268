package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// TestLegacyStateDirMigrates: a deployments/NAME.json written in the
// format of releases before the fleet runner is read as the job's record
// (status lists it, without writing anything); the next apply carries on
// with its job (no new deployment) and moves it into the fleet's
// records, keeping the old file as NAME.json.migrated; delete then tears
// the job down with its final savepoint. A deleted one is not listed.
func TestLegacyStateDirMigrates(t *testing.T) {
	f := newFixture(t)
	file := f.jobFile("counter", "/out/counter", "")
	id := f.startJob("counter")
	d := f.deployment("counter")
	state := filepath.Join(f.dir, "state")
	spec, _ := json.MarshalIndent(d.Spec, "  ", "  ")
	status, _ := json.MarshalIndent(d.Status, "  ", "  ")
	legacy := fmt.Sprintf("{\n  \"formatVersion\": 1,\n  \"name\": \"counter\",\n  \"spec\": %s,\n  \"status\": %s\n}\n", spec, status)
	if err := os.MkdirAll(filepath.Join(state, "deployments"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"counter.json": legacy,
		"gone.json":    `{"formatVersion": 1, "name": "gone", "spec": {"job": {"jarFile": "/x.jar"}}, "status": {}, "deleted": true}`,
	} {
		if err := os.WriteFile(filepath.Join(state, "deployments", name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(state, "records", "counter.json")); err != nil {
		t.Fatal(err)
	}

	r := f.run("status")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "counter") || !strings.Contains(r.stdout, string(id)) || strings.Contains(r.stdout, "gone") {
		t.Fatalf("status of the old state directory: %q", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(state, "records", "counter.json")); err == nil {
		t.Fatalf("status wrote a record")
	}

	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	if _, err := os.Stat(filepath.Join(state, "deployments", "counter.json.migrated")); err != nil {
		t.Errorf("the old file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "deployments", "counter.json")); err == nil {
		t.Errorf("the old file is still read")
	}
	if got := f.deployment("counter"); got.Status.JobID != id || got.Cluster != defaultCluster || got.Applied == nil || len(f.running()) != 1 {
		t.Fatalf("migrated: job %s (was %s), cluster %q, running %d", got.Status.JobID, id, got.Cluster, len(f.running()))
	}

	f.srv.Clock().Advance(3 * time.Second)
	r = f.run("delete", "counter")
	wantCode(t, r, exitOK, "")
	store, _ := lifecycle.NewFileStore(filepath.Join(state, "restore-points"))
	rec, ok, err := store.Get(context.Background(), "counter")
	if err != nil || !ok || rec.JobID != id || len(f.running()) != 0 {
		t.Fatalf("after delete: restore point %+v %v %v, running %d", rec, ok, err, len(f.running()))
	}
}

// TestPlanDirExitCode: plan -f DIR plans every job file and exits 0 when
// each can be carried out, 2 when a file does not decode (naming its
// line and field); with --prune an applied job whose file is gone is
// planned as removed.
func TestPlanDirExitCode(t *testing.T) {
	f := newFixture(t, flinktest.WithSlots(4))
	dir := filepath.Join(f.dir, "jobs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.startJob("old")
	for _, n := range []string{"a", "b"} {
		if err := os.Rename(f.jobFile(n, "/out/"+n, ""), filepath.Join(dir, n+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(f.jar, filepath.Join(dir, "counter.jar")); err != nil {
		t.Fatal(err)
	}
	r := f.run("plan", "-f", dir)
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "Added     a on default") || !strings.Contains(r.stdout, "Added     b on default") || strings.Contains(r.stdout, "old") {
		t.Fatalf("plan: %q", r.stdout)
	}
	r = f.run("plan", "--prune", "-f", dir)
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "Removed   old on default") {
		t.Fatalf("plan --prune: %q", r.stdout)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("name: c\njob: {jarFile: counter.jar}\nparallelism: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = f.run("plan", "-f", dir)
	wantCode(t, r, exitBadInput, "c.yaml:3: parallelism: unknown field")
}

// TestRunDaemon: run -f DIR deploys the directory's jobs, deploys a file
// added while it runs, tears down the job of a file removed (its final
// savepoint recorded under its name), serves /metrics, lets status read
// the records meanwhile, and ends with exit 0 when stopped.
func TestRunDaemon(t *testing.T) {
	f := newFixture(t, flinktest.WithRealTime(), flinktest.WithSlots(8))
	dir := filepath.Join(f.dir, "jobs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(f.jar, filepath.Join(dir, "counter.jar")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.jobFile("a", "/out/a", ""), filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- f.runCtx(ctx, nil, "run", "-f", dir, "--interval", "200ms", "--metrics-addr", addr) }()
	jobOf := func(name string) (flinkapi.JobID, bool) {
		d, ok, _ := stateDir{root: filepath.Join(f.dir, "state")}.loadDeployment(name)
		return d.Status.JobID, ok && d.Status.Verdict == lifecycle.VerdictDone && !d.Removed
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				cancel()
				r := <-done
				t.Fatalf("%s: not within 30s; run said:\n%s%s", what, r.stdout, r.stderr)
			}
		}
	}
	waitFor("a running", func() bool { _, ok := jobOf("a"); return ok })
	a, _ := jobOf("a")
	if r := f.runCtx(context.Background(), nil, "status"); r.code != exitOK || !strings.Contains(r.stdout, string(a)) {
		t.Errorf("status while run runs: exit %d, %q", r.code, r.stdout)
	}
	if err := os.Rename(f.jobFile("b", "/out/b", ""), filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("b running", func() bool { _, ok := jobOf("b"); return ok })
	time.Sleep(1500 * time.Millisecond) // a checkpoint of a
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("a torn down", func() bool {
		_, ok, _ := stateDir{root: filepath.Join(f.dir, "state")}.loadDeployment("a")
		return !ok
	})
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `flinkkit_fleet_deployments{cluster="default",verdict="Done"} 1`) {
		t.Errorf("metrics:\n%s", body)
	}
	cancel()
	r := <-done
	wantCode(t, r, exitOK, "")
	store, _ := lifecycle.NewFileStore(filepath.Join(f.dir, "state", "restore-points"))
	if rec, ok, err := store.Get(context.Background(), "a"); err != nil || !ok || rec.JobID != a {
		t.Errorf("restore point of a: %+v %v %v", rec, ok, err)
	}
	for _, want := range []string{"added: a", "added: b", "removed: a", "a: torn down", "stopped"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run's output lacks %q", want)
		}
	}
}

// TestPlanCode: the exit code of a plan is its worst verdict: Invalid
// (2) before Blocked (3) before Failed or not planned (1).
func TestPlanCode(t *testing.T) {
	dp := func(name string, v lifecycle.Verdict, blocked, err string) fleet.DeploymentPlan {
		return fleet.DeploymentPlan{Name: name, Plan: lifecycle.Plan{Verdict: v, Blocked: blocked}, Error: err}
	}
	for _, tc := range []struct {
		plans []fleet.DeploymentPlan
		code  int
		says  string
	}{
		{[]fleet.DeploymentPlan{dp("a", lifecycle.VerdictDone, "", ""), dp("b", lifecycle.VerdictProgressing, "", "")}, exitOK, ""},
		{[]fleet.DeploymentPlan{dp("a", lifecycle.VerdictFailed, "", ""), dp("b", lifecycle.VerdictProgressing, "preflight refuses", "")}, exitBlocked, "b: blocked: preflight refuses"},
		{[]fleet.DeploymentPlan{dp("a", lifecycle.VerdictBlocked, "x", ""), dp("b", lifecycle.VerdictInvalid, "", "")}, exitBadInput, "b: invalid"},
		{[]fleet.DeploymentPlan{dp("a", "", "", "no cluster"), dp("b", lifecycle.VerdictWaiting, "", "")}, exitFailed, "a: cannot be planned: no cluster"},
	} {
		code, says := planCode(fleet.ChangePlan{Deployments: tc.plans})
		if code != tc.code || !strings.HasPrefix(says, tc.says) {
			t.Errorf("%+v: %d %q, want %d %q", tc.plans, code, says, tc.code, tc.says)
		}
	}
}
