package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestClustersFile: with --clusters, plan, apply, run and delete act on
// several clusters, each job file naming its cluster: each job runs on
// its own fake JobManager, its record names its cluster, and a job file
// naming no cluster, or one the file does not list, and a clusters file
// that does not decode are bad input naming what to fix.
func TestClustersFile(t *testing.T) {
	f := newFixture(t, flinktest.WithRealTime())
	us := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithRealTime())
	defer us.Close()
	clusters := filepath.Join(f.dir, "clusters.yaml")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(clusters, fmt.Sprintf("clusters:\n  - name: eu\n    url: %s\n  - name: us\n    url: %s\n", f.srv.URL, us.URL))
	dir := filepath.Join(f.dir, "jobs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(f.jar, filepath.Join(dir, "counter.jar")); err != nil {
		t.Fatal(err)
	}
	for name, cluster := range map[string]string{"a": "eu", "b": "us"} {
		write(filepath.Join(dir, name+".yaml"), fmt.Sprintf("name: %s\ncluster: %s\njob:\n  jarFile: counter.jar\n  args: [--out, /out/%s]\n", name, cluster, name))
	}
	run := func(args ...string) result {
		return f.runCtx(context.Background(), nil, append([]string{"--clusters", clusters}, args...)...)
	}
	live := func(srv *flinktest.Server) []string {
		var names []string
		for _, j := range srv.Jobs() {
			if !j.State.IsGloballyTerminal() {
				names = append(names, j.Name)
			}
		}
		return names
	}

	r := run("plan", "-f", dir)
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "Added     a on eu") || !strings.Contains(r.stdout, "Added     b on us") {
		t.Fatalf("plan: %q", r.stdout)
	}
	wantCode(t, run("apply", "-f", dir), exitOK, "")
	if eu, us := live(f.srv), live(us); len(eu) != 1 || len(us) != 1 {
		t.Fatalf("jobs running on eu %q, on us %q; want one each", eu, us)
	}
	for name, cluster := range map[string]string{"a": "eu", "b": "us"} {
		if d := f.deployment(name); d.Cluster != cluster || d.Status.JobID == "" {
			t.Errorf("%s: record of cluster %q, job %q; want %s", name, d.Cluster, d.Status.JobID, cluster)
		} else if _, ok := map[string]*flinktest.Server{"eu": f.srv, "us": us}[cluster].Job(d.Status.JobID); !ok {
			t.Errorf("%s: job %s is not on cluster %s", name, d.Status.JobID, cluster)
		}
	}
	r = run("status")
	wantCode(t, r, exitOK, "")
	if !regexp.MustCompile(`(?m)^a +eu +[0-9a-f]{32} +Running `).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^b +us +[0-9a-f]{32} +Running `).MatchString(r.stdout) {
		t.Errorf("status lists no cluster of a and b: %q", r.stdout)
	}
	time.Sleep(time.Second) // a checkpoint of b
	wantCode(t, run("delete", "b"), exitOK, "")
	if eu, us := live(f.srv), live(us); len(eu) != 1 || len(us) != 0 {
		t.Errorf("after delete b: jobs running on eu %q, on us %q; want a alone", eu, us)
	}

	// run -f DIR: the daemon deploys b again, on its cluster.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- f.runCtx(ctx, nil, "--clusters", clusters, "run", "-f", dir, "--interval", "200ms") }()
	for end := time.Now().Add(30 * time.Second); len(live(us)) != 1 && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
	}
	cancel()
	r = <-done
	if len(live(us)) != 1 || !strings.Contains(r.stdout, "on the clusters of "+clusters) {
		t.Errorf("run: jobs on us %q; output %q", live(us), r.stdout)
	}

	write(filepath.Join(dir, "c.yaml"), "name: c\njob: {jarFile: counter.jar}\n")
	wantCode(t, run("plan", "-f", dir), exitBadInput, "c.yaml: set cluster: one of the clusters of --clusters (eu, us)")
	write(filepath.Join(dir, "c.yaml"), "name: c\ncluster: asia\njob: {jarFile: counter.jar}\n")
	wantCode(t, run("apply", "-f", dir), exitBadInput, `c.yaml: cluster "asia" is none of the clusters (eu, us)`)
	write(clusters, "clusters:\n  - name: eu\n    url: localhost:8081\n")
	wantCode(t, run("plan", "-f", dir), exitBadInput, "--clusters "+clusters+":3: clusters[0].url: ")
	write(clusters, "clusters: []\n")
	wantCode(t, run("plan", "-f", dir), exitBadInput, "lists no cluster")

	// Without --clusters, the one cluster of --flink-url is the default,
	// and a job file may name it.
	for _, n := range []string{"a", "b"} {
		if err := os.Remove(filepath.Join(dir, n+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "d.yaml"), "name: d\njob: {jarFile: counter.jar}\n")
	write(filepath.Join(dir, "c.yaml"), "name: c\ncluster: default\njob: {jarFile: counter.jar}\n")
	r = f.runCtx(context.Background(), nil, "plan", "-f", dir, "-o", "json")
	var p struct {
		Deployments []struct{ Name, Cluster string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || len(p.Deployments) != 2 {
		t.Fatalf("plan -o json: %v, %q", err, r.stdout)
	}
	for _, d := range p.Deployments {
		if d.Cluster != "default" {
			t.Errorf("without --clusters: %s planned on %q", d.Name, d.Cluster)
		}
	}
}

// TestWriteJSON: the files of operations, savepoint histories and health
// samples are replaced whole: indented JSON ending in a newline, in a
// directory created as needed, no temporary file left beside them, and
// an error naming the path when it cannot be written.
func TestWriteJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "operations", "job.json")
	for _, v := range []map[string]int{{"phase": 1}, {"phase": 2}} {
		if err := writeJSON(path, v); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustRead(t, path); got != "{\n  \"phase\": 2\n}\n" {
		t.Errorf("file %q, want the second value, indented", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "operations", ".*")); len(left) != 0 {
		t.Errorf("files left beside it: %q", left)
	}
	if err := writeJSON(filepath.Join(path, "under-a-file.json"), 1); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("write under a file: %v, want an error naming %s", err, path)
	}
}
