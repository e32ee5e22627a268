package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRuntimeOnTheFake runs the demo against the fake JobManager: each
// streamlet is redeployed from the savepoint recorded under its own name
// by the undeploy, and its count carries on.
func TestRuntimeOnTheFake(t *testing.T) {
	var res result
	jobs := map[flinkapi.JobID]flinktest.JobInfo{}
	r := runner{onDone: func(r result, cl *demo.Cluster) {
		res = r
		for _, j := range cl.Fake.Jobs() {
			jobs[j.ID] = j
		}
	}}
	state := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := r.run(context.Background(), []string{"--state-dir", state}, &stdout, &stderr)
	t.Logf("output:\n%s", stdout.String())
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	var phases []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(l, " ") {
			phases = append(phases, strings.Fields(l)[0])
		}
	}
	if got, want := strings.Join(phases, " "), "cluster deploy deploy running running undeploy undeploy deploy deploy running running undeploy undeploy done"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	if !regexp.MustCompile(`(?m)^deploy     sensors/ingest: job [0-9a-f]{8} \(sensors-ingest-2\) RUNNING from its savepoint file:/\S+ \(\d+\.\ds old\) after \d+\.\ds$`).MatchString(stdout.String()) {
		t.Errorf("no line for the redeploy of sensors/ingest")
	}

	if len(res.First) != 2 || len(res.Second) != 2 || len(jobs) != 4 {
		t.Fatalf("deployments %+v then %+v; jobs on the fake %v", res.First, res.Second, jobs)
	}
	seen := map[string]bool{}
	for i, first := range res.First {
		second, name := res.Second[i], first.Name
		rec := res.Undeployed[name]
		if second.Name != name || rec.Location == "" || seen[rec.Location] {
			t.Fatalf("%s: redeployed as %s, recorded %+v (one savepoint per name)", name, second.Name, rec)
		}
		seen[rec.Location] = true
		// The savepoint recorded under the name is the one of the job that
		// ran it, and the redeployed job restored from it: not from the
		// other streamlet's.
		if rec.JobID != first.Job {
			t.Errorf("%s: recorded savepoint of job %s, want %s", name, rec.JobID, first.Job)
		}
		if first.RestoreFrom != "" || jobs[first.Job].RestoredFrom != "" {
			t.Errorf("%s: the first deployment started from %q", name, jobs[first.Job].RestoredFrom)
		}
		if second.RestoreFrom != rec.Location || jobs[second.Job].RestoredFrom != rec.Location {
			t.Errorf("%s: redeployed from %q (fake: %q), want its own savepoint %q", name, second.RestoreFrom, jobs[second.Job].RestoredFrom, rec.Location)
		}
		if e1, e2 := jobs[first.Job].Events, jobs[second.Job].Events; e1 == 0 || e2 <= e1 {
			t.Errorf("%s: %d events in the first job, %d in the second: the count did not carry on", name, e1, e2)
		}
		for _, j := range []flinkapi.JobID{first.Job, second.Job} {
			if jobs[j].State != flinkapi.JobFinished {
				t.Errorf("%s: job %s is %s, want FINISHED (stopped with a savepoint)", name, j, jobs[j].State)
			}
		}
		// The last undeploy replaced the record, in the store's folder.
		got, ok, err := res.Store.Get(context.Background(), name)
		if err != nil || !ok || got.Location != res.Final[name].Location || got.JobID != second.Job {
			t.Errorf("%s: stored %+v, %v, %v; want the last undeploy's savepoint %+v", name, got, ok, err, res.Final[name])
		}
		file := filepath.Join(state, strings.ReplaceAll(name, "/", "~")+".json")
		if _, err := os.Stat(file); err != nil {
			t.Errorf("%s: no restore point file: %v", name, err)
		}
	}
}

// TestNamesAreNotMixedUp deploys two applications whose streamlets share a
// name, undeploys both, and redeploys one: it restores from its own
// application's savepoint, and the other's record stays as it was.
func TestNamesAreNotMixedUp(t *testing.T) {
	ctx := context.Background()
	cl, err := demo.Open(ctx, demo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	store := &lifecycle.MemoryStore{}
	rt := &Runtime{Cluster: cl, Store: store, StateDir: t.TempDir(), Out: demo.NewPlainPrinter(&bytes.Buffer{}),
		Policy: policy.UpdatePolicy{MaxStateAge: policy.Duration(time.Hour)}}
	a := Application{Name: "a", Streamlets: []Streamlet{{Name: "counter"}}}
	b := Application{Name: "b", Streamlets: []Streamlet{{Name: "counter"}}}
	var first []Deployment
	for _, app := range []Application{a, b} {
		deps, err := rt.Deploy(ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, deps...)
	}
	recs := map[string]string{}
	for _, app := range []Application{a, b} {
		r, err := rt.Undeploy(ctx, app)
		if err != nil {
			t.Fatal(err)
		}
		for n, rec := range r {
			recs[n] = rec.Location
		}
	}
	if len(recs) != 2 || recs["a/counter"] == recs["b/counter"] {
		t.Fatalf("recorded %v, want one savepoint per application", recs)
	}
	again, err := rt.Deploy(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := cl.Fake.Job(again[0].Job); again[0].RestoreFrom != recs["b/counter"] || info.RestoredFrom != recs["b/counter"] {
		t.Errorf("b/counter redeployed from %q (fake: %q), want %q", again[0].RestoreFrom, info.RestoredFrom, recs["b/counter"])
	}
	if rec, ok, err := store.Get(ctx, "a/counter"); err != nil || !ok || rec.Location != recs["a/counter"] || rec.JobID != first[0].Job {
		t.Errorf("a/counter: stored %+v, %v, %v; want %s of job %s", rec, ok, err, recs["a/counter"], first[0].Job)
	}
}

// TestBadInput checks that wrong flags, a wrong cluster and a state
// directory of an earlier run on a fake JobManager end with one line on
// stderr and a non-zero exit code.
func TestBadInput(t *testing.T) {
	// The state of a run on a fake JobManager that ended with it.
	earlier := t.TempDir()
	if err := writeJSON(filepath.Join(earlier, "streamlets", "sensors~ingest.json"), StreamletState{FormatVersion: StreamletFormat, Deployment: 1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--bogus"}, 2, "runtime: flag provided but not defined: -bogus (see --help)"},
		{[]string{"--flink-url", "http://127.0.0.1:1", "--jar", "/no/such.jar"}, 1, "runtime: --jar /no/such.jar: no such file or directory"},
		{[]string{"--flink-url", "127.0.0.1:8081", "--jar", "/no/such.jar"}, 1, `runtime: --flink-url "127.0.0.1:8081": base URL `},
		{[]string{"--flink-url", "http://127.0.0.1:1", "--jar", os.Args[0]}, 1, "runtime: no Flink JobManager answers at http://127.0.0.1:1: "},
		{[]string{"--state-dir", "/dev/null/x"}, 1, "runtime: --state-dir /dev/null/x: "},
		{[]string{"--state-dir", earlier}, 1, "runtime: --state-dir " + earlier + " holds the state of an earlier run on a fake JobManager"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		msg := stderr.String()
		if code != tc.code || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%q: exit code %d, stderr %q; want %d and one line containing %q", tc.args, code, msg, tc.code, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "-state-dir") {
		t.Errorf("--help: exit code %d, output %q", code, stdout.String())
	}
}
