package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// watched is the fleet's store, calling saved after every record stored.
type watched struct {
	fleet.Store
	saved func(fleet.Record)
}

func (s watched) Save(ctx context.Context, rec *fleet.Record) error {
	err := s.Store.Save(ctx, rec)
	if err == nil {
		s.saved(*rec)
	}
	return err
}

// runOn runs the runtime on cl and state, cancelling its context once
// kill says so of a record stored. Like a new process, it uploads the
// jar again first: the jobs deployed before keep their spec.
func runOn(t *testing.T, cl *demo.Cluster, state string, kill func(fleet.Record) bool, args ...string) (int, string) {
	t.Helper()
	jar, err := cl.Client.UploadJarReader(context.Background(), "flinkkit-counter.jar", bytes.NewReader(flinktest.MinimalJar(cl.EntryClass)))
	if err != nil {
		t.Fatal(err)
	}
	cl.JarID = jar
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	killed := false
	h := hooks{cluster: cl, store: func(s fleet.Store) fleet.Store {
		return watched{s, func(rec fleet.Record) {
			mu.Lock()
			defer mu.Unlock()
			if kill != nil && !killed && kill(rec) {
				killed = true
				cancel()
			}
		}}
	}}
	var stdout, stderr bytes.Buffer
	// A bound for a run that hangs, far above the seconds a run takes,
	// so that a loaded machine does not fail it.
	code := run(ctx, append([]string{"--state-dir", state, "--timeout", "5m"}, args...), &stdout, &stderr, h)
	t.Logf("exit code %d, output:\n%s%s", code, stdout.String(), stderr.String())
	if kill != nil && (!killed || code != 1 || !strings.HasPrefix(stderr.String(), "runtime: interrupted: ")) {
		t.Fatalf("killed %v, exit code %d, stderr %q; want a run stopped by the kill", killed, code, stderr.String())
	}
	return code, stdout.String()
}

// phases are the names of the phases out shows, one per line.
func phases(out string) string {
	var names []string
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, " ") {
			names = append(names, strings.Fields(l)[0])
		}
	}
	return strings.Join(names, " ")
}

// checkJobs checks what the jobs of the fake did: one job of each version
// of each streamlet, version 2 restored from the one savepoint that
// stopped version 1, its counts carrying on, both stopped with a
// savepoint, and the last one's savepoint recorded under the streamlet's
// name in the restore points of state.
func checkJobs(t *testing.T, cl *demo.Cluster, state string) {
	t.Helper()
	jobs := map[string]flinktest.JobInfo{}
	for _, j := range cl.Fake.Jobs() {
		if _, dup := jobs[j.Name]; dup {
			t.Errorf("a second job %s of %s", j.ID, j.Name)
		}
		jobs[j.Name] = j
	}
	if len(jobs) != 4 {
		t.Fatalf("jobs on the fake %v, want the two versions of two streamlets", jobs)
	}
	points, err := lifecycle.NewFileStore(state)
	if err != nil {
		t.Fatal(err)
	}
	stops := map[flinkapi.JobID][]string{}
	for _, s := range cl.Fake.Snapshots() {
		if s.Savepoint {
			stops[s.Job] = append(stops[s.Job], s.Location)
		}
	}
	for _, s := range streamlets {
		name := application + "/" + s.name
		v1, v2 := jobs[jobName(name, 1)], jobs[jobName(name, 2)]
		if v1.RestoredFrom != "" || len(stops[v1.ID]) != 1 || v2.RestoredFrom != stops[v1.ID][0] {
			t.Errorf("%s: version 1 restored from %q, stopped with %q; version 2 restored from %q", name, v1.RestoredFrom, stops[v1.ID], v2.RestoredFrom)
		}
		if v1.Events == 0 || v2.Events <= v1.Events {
			t.Errorf("%s: %d events in version 1, %d in version 2: the counts did not carry on", name, v1.Events, v2.Events)
		}
		if v1.State != flinkapi.JobFinished || v2.State != flinkapi.JobFinished {
			t.Errorf("%s: jobs %s and %s, want both FINISHED (stopped with a savepoint)", name, v1.State, v2.State)
		}
		rec, ok, err := points.Get(context.Background(), name)
		if err != nil || !ok || rec.JobID != v2.ID || len(stops[v2.ID]) != 1 || rec.Location != stops[v2.ID][0] {
			t.Errorf("%s: recorded %+v, %v, %v; want the savepoint %q of version 2", name, rec, ok, err, stops[v2.ID])
		}
	}
	if left, err := filepath.Glob(filepath.Join(state, "streamlets", "*.json")); err != nil || len(left) != 0 {
		t.Errorf("records left after the removal: %v, %v", left, err)
	}
}

// TestRuntimeOnTheFake runs the runtime against the fake JobManager: it
// deploys the application, upgrades each streamlet from a savepoint and
// removes it, recording each one's final savepoint under its name; run
// again, it deploys the application from those savepoints.
func TestRuntimeOnTheFake(t *testing.T) {
	cl, err := demo.Open(context.Background(), demo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	state := t.TempDir()
	metrics := filepath.Join(state, "metrics.txt")
	code, out := runOn(t, cl, state, nil, "--metrics", metrics)
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got, want := phases(out), "cluster deploy deploy upgrade upgrade remove remove"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	if !regexp.MustCompile(`(?m)^upgrade    sensors/ingest: job [0-9a-f]{8} \(sensors-ingest-2\) RUNNING from the savepoint file:/\S+; \d+ events, version 1 had counted \d+$`).MatchString(out) {
		t.Errorf("no line for the upgrade of sensors/ingest")
	}
	checkJobs(t, cl, state)
	if b, err := os.ReadFile(metrics); err != nil || !strings.Contains(string(b), "\nflinkkit_fleet_calls_total{cluster=\"main\"} ") {
		t.Errorf("metrics %q, %v; want the Runner's", b, err)
	}

	// Run again, it deploys each streamlet from the savepoint recorded
	// under its name.
	points, err := lifecycle.NewFileStore(state)
	if err != nil {
		t.Fatal(err)
	}
	_, out = runOn(t, cl, state, func(rec fleet.Record) bool { return rec.Status.Action == lifecycle.ActionUpgrade })
	for _, s := range streamlets {
		name := application + "/" + s.name
		rec, _, _ := points.Get(context.Background(), name)
		if !strings.Contains(out, "("+jobName(name, 1)+") RUNNING from the savepoint "+rec.Location+";") {
			t.Errorf("%s: not deployed again from %q", name, rec.Location)
		}
		n := 0
		for _, j := range cl.Fake.Jobs() {
			if j.Name == jobName(name, 1) && j.RestoredFrom == rec.Location {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d jobs restored from %s, want 1", name, n, rec.Location)
		}
	}
}

// TestRuntimeResumesAfterAKill stops the runtime (cancels its context) in
// the middle of the upgrade, while the new job of sensors/aggregate is
// being submitted, and again in the middle of the removal, while the stop
// with a savepoint of sensors/ingest is under way, and runs it again on
// the same --state-dir and cluster each time. Each run carries on with
// the step the records show: the upgrade with the same job, the removal
// with the same stop. The fake never shows two live jobs of one
// streamlet, nor a second job of one version.
func TestRuntimeResumesAfterAKill(t *testing.T) {
	cl, err := demo.Open(context.Background(), demo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	state := t.TempDir()

	var mu sync.Mutex
	var overlaps []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			live := map[string][]string{}
			for _, j := range cl.Fake.Jobs() {
				if !j.State.IsGloballyTerminal() {
					streamlet := j.Name[:strings.LastIndex(j.Name, "-")]
					live[streamlet] = append(live[streamlet], j.Name+" "+string(j.State))
				}
			}
			mu.Lock()
			for _, jobs := range live {
				if len(jobs) > 1 && len(overlaps) < 5 {
					overlaps = append(overlaps, strings.Join(jobs, ", "))
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	_, out := runOn(t, cl, state, func(rec fleet.Record) bool {
		st := &rec.Status
		return rec.Name == "sensors/aggregate" && st.Action == lifecycle.ActionUpgrade && st.InFlight() && st.Progress.Phase == lifecycle.PhaseWaitRunning
	})
	if got := phases(out); got != "cluster deploy deploy" {
		t.Errorf("first run: phases %q, want the deploy and then the kill", got)
	}
	_, out = runOn(t, cl, state, func(rec fleet.Record) bool {
		st := &rec.Status
		return rec.Name == "sensors/ingest" && st.Action == lifecycle.ActionTeardown && st.InFlight() &&
			st.Progress.Phase == lifecycle.PhaseSavepoint && st.Progress.Savepoint.Status.State == savepoint.InFlight
	})
	if got := phases(out); got != "cluster upgrade upgrade" {
		t.Errorf("second run: phases %q, want the upgrade carried on and then the kill", got)
	}
	code, out := runOn(t, cl, state, nil)
	if got := phases(out); code != 0 || got != "cluster remove remove" {
		t.Errorf("last run: exit code %d, phases %q; want the removal carried on", code, got)
	}
	checkJobs(t, cl, state)
	mu.Lock()
	defer mu.Unlock()
	if len(overlaps) > 0 {
		t.Errorf("two live jobs of one streamlet at once: %q", overlaps)
	}
}

// TestBadInput checks that wrong flags, a wrong cluster and a state
// directory of an earlier run on a fake JobManager end with one line on
// stderr and a non-zero exit code.
func TestBadInput(t *testing.T) {
	// The state of a run on a fake JobManager that ended with it.
	earlier := t.TempDir()
	recs, err := fleet.NewDirStore(filepath.Join(earlier, "streamlets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := recs.Save(context.Background(), &fleet.Record{Name: "sensors/ingest", Cluster: "main"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--bogus"}, 2, "runtime: flag provided but not defined: -bogus (see --help)"},
		{[]string{"extra"}, 2, `runtime: unexpected argument "extra" (see --help)`},
		{[]string{"--timeout", "0s"}, 2, "runtime: --timeout must be positive, got 0s"},
		{[]string{"--flink-url", "http://127.0.0.1:1", "--jar", "/no/such.jar"}, 1, "runtime: --jar /no/such.jar: no such file or directory"},
		{[]string{"--flink-url", "127.0.0.1:8081", "--jar", "/no/such.jar"}, 1, `runtime: --flink-url "127.0.0.1:8081": base URL `},
		{[]string{"--flink-url", "http://127.0.0.1:1", "--jar", os.Args[0]}, 1, "runtime: no Flink JobManager answers at http://127.0.0.1:1: "},
		{[]string{"--state-dir", "/dev/null/x"}, 1, "runtime: --state-dir /dev/null/x: "},
		{[]string{"--state-dir", earlier}, 1, "runtime: --state-dir " + earlier + " holds the records of an earlier run on a fake JobManager"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr, hooks{})
		msg := stderr.String()
		if code != tc.code || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%q: exit code %d, stderr %q; want %d and one line containing %q", tc.args, code, msg, tc.code, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &stdout, &stderr, hooks{}); code != 0 || !strings.Contains(stdout.String(), "-state-dir") {
		t.Errorf("--help: exit code %d, output %q", code, stdout.String())
	}
}
