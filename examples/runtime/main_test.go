package main

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
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
		deps, err := rt.Deploy(ctx, app, 1)
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
	again, err := rt.Deploy(ctx, b, 2)
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
	recs, err := fleet.NewDirStore(filepath.Join(earlier, "streamlets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := recs.Save(context.Background(), &fleet.Record{Name: "sensors/ingest", Cluster: cluster}); err != nil {
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

// TestRuntimeResumesAfterAKill stops the runtime (cancels its context) in
// the middle of the undeploy, while the stop with a savepoint of
// sensors/ingest is under way, and again in the middle of the redeploy,
// while the job of sensors/aggregate is being submitted, and runs it again
// on the same --state-dir and cluster each time, with the jar uploaded
// anew as a new process does. The undeploy carries on
// with the same stop, the redeploy with the same job: each streamlet ends
// up with one running job restored from its own savepoint, its counts
// continuing, and the fake's job list never shows two live jobs of one
// streamlet, nor a second job of one deployment.
func TestRuntimeResumesAfterAKill(t *testing.T) {
	cl, err := demo.Open(context.Background(), demo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	state := t.TempDir()

	// Watch the fake's job list while the runtime runs.
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

	// run runs the runtime on state, cancelling its context once kill says
	// so after a save of a streamlet's state. Like a new process, it
	// uploads the jar again: the jobs deployed before keep their spec.
	run := func(what string, kill func(fleet.Record) bool, onSave func(fleet.Record)) (int, string, result, bool) {
		t.Helper()
		jar, err := cl.Client.UploadJarReader(context.Background(), "flinkkit-counter.jar", bytes.NewReader(flinktest.MinimalJar(cl.EntryClass)))
		if err != nil {
			t.Fatal(err)
		}
		cl.JarID = jar
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var res result
		killed := false
		r := runner{cluster: cl, onDone: func(r result, _ *demo.Cluster) { res = r }, onSave: func(s fleet.Record) {
			if onSave != nil {
				onSave(s)
			}
			if kill != nil && !killed && kill(s) {
				killed = true
				cancel()
			}
		}}
		var stdout, stderr bytes.Buffer
		code := r.run(ctx, []string{"--state-dir", state}, &stdout, &stderr)
		t.Logf("%s: exit code %d, output:\n%s%s", what, code, stdout.String(), stderr.String())
		if killed && (code != 1 || !strings.HasPrefix(stderr.String(), "runtime: interrupted: ")) {
			t.Errorf("%s: killed, exit code %d, stderr %q", what, code, stderr.String())
		}
		return code, stdout.String(), res, killed
	}

	_, _, _, killed := run("first run", func(s fleet.Record) bool {
		st := s.Status
		return s.Name == "sensors/ingest" && st.Action == lifecycle.ActionTeardown && st.InFlight() &&
			st.Progress.Phase == lifecycle.PhaseSavepoint && st.Progress.Savepoint.Status.State == savepoint.InFlight
	}, nil)
	if !killed {
		t.Fatal("the first run was not killed in the undeploy")
	}
	_, out, _, killed := run("second run", func(s fleet.Record) bool {
		st := s.Status
		return s.Name == "sensors/aggregate" && numberOf(s.Spec) == 2 && st.Action == lifecycle.ActionDeploy && st.InFlight() &&
			st.Progress.Phase == lifecycle.PhaseWaitRunning
	}, nil)
	if !killed {
		t.Fatal("the second run was not killed in the redeploy")
	}
	if !strings.Contains(out, "\nresume     the last run stopped in step 2 of 4 (undeploy)") {
		t.Errorf("the second run does not say it resumes the undeploy")
	}
	// The last run: once each streamlet's redeploy is done, its job is the
	// one live job of the streamlet, and it runs.
	running := map[string]string{}
	code, out, res, _ := run("last run", nil, func(s fleet.Record) {
		name := s.Name
		if numberOf(s.Spec) != 2 || s.Status.InFlight() || s.Status.State != policy.Running || s.Status.Stable.IsZero() || running[name] != "" {
			return
		}
		var live []string
		for _, j := range cl.Fake.Jobs() {
			if !j.State.IsGloballyTerminal() && strings.HasPrefix(j.Name, jobName(name, 0)[:len(jobName(name, 0))-1]) {
				live = append(live, string(j.ID)+" "+string(j.State))
			}
		}
		running[name] = strings.Join(live, ", ")
		if want := string(s.Status.JobID) + " RUNNING"; running[name] != want {
			t.Errorf("%s redeployed: live jobs %q, want %q", name, running[name], want)
		}
	})
	if code != 0 || !strings.Contains(out, "\nresume     the last run stopped in step 3 of 4 (redeploy)") {
		t.Fatalf("last run: exit code %d; want 0 and a resume of the redeploy", code)
	}
	if len(running) != 2 || len(res.Second) != 2 {
		t.Fatalf("redeployed %v, %+v; want both streamlets", running, res.Second)
	}

	mu.Lock()
	if len(overlaps) > 0 {
		t.Errorf("two live jobs of one streamlet at once: %q", overlaps)
	}
	mu.Unlock()
	jobs := map[string]flinktest.JobInfo{}
	for _, j := range cl.Fake.Jobs() {
		if _, dup := jobs[j.Name]; dup {
			t.Errorf("a second job %s of %s", j.ID, j.Name)
		}
		jobs[j.Name] = j
	}
	if len(jobs) != 4 {
		t.Errorf("%d jobs on the fake, want 4: %v", len(jobs), jobs)
	}
	snapshots := cl.Fake.Snapshots()
	for _, d := range res.Second {
		first, second := jobs[jobName(d.Name, 1)], jobs[jobName(d.Name, 2)]
		// One stop of the first job, resumed or not: its savepoint is
		// what the second job restored from.
		var stops []flinktest.Snapshot
		for _, s := range snapshots {
			if s.Savepoint && s.Job == first.ID {
				stops = append(stops, s)
			}
		}
		if len(stops) != 1 || second.RestoredFrom != stops[0].Location || d.RestoreFrom != stops[0].Location || d.Job != second.ID {
			t.Errorf("%s: savepoints of the first job %+v; the second job %s restored from %q (deployment %+v)", d.Name, stops, second.ID, second.RestoredFrom, d)
		}
		if first.State != flinkapi.JobFinished || second.State != flinkapi.JobFinished {
			t.Errorf("%s: jobs %s and %s, want both FINISHED (stopped with a savepoint)", d.Name, first.State, second.State)
		}
		if first.Events == 0 || second.Events <= first.Events {
			t.Errorf("%s: %d events in the first job, %d in the second: the counts did not continue", d.Name, first.Events, second.Events)
		}
	}
}

// TestDeployAfterAnInterruptedUndeploy stops an undeploy while its stop
// with a savepoint is under way and deploys the application again: the
// undeploy ends first, recording its savepoint, and the new deployment
// starts from it.
func TestDeployAfterAnInterruptedUndeploy(t *testing.T) {
	ctx := context.Background()
	cl, err := demo.Open(ctx, demo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out bytes.Buffer
	rt := &Runtime{Cluster: cl, Store: &lifecycle.MemoryStore{}, StateDir: t.TempDir(), Out: demo.NewPlainPrinter(&out),
		Policy: policy.UpdatePolicy{MaxStateAge: policy.Duration(time.Hour)}}
	app := Application{Name: "app", Streamlets: []Streamlet{{Name: "counter"}}}
	first, err := rt.Deploy(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	kill, cancel := context.WithCancel(ctx)
	defer cancel()
	rt.saved = func(s fleet.Record) {
		if s.Status.Action == lifecycle.ActionTeardown && s.Status.Progress.Savepoint.Status.State == savepoint.InFlight {
			cancel()
		}
	}
	if _, err := rt.Undeploy(kill, app); !errors.Is(err, context.Canceled) {
		t.Fatalf("Undeploy = %v, want it stopped", err)
	}
	rt.saved = nil
	again, err := rt.Deploy(ctx, app, 2)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := rt.Store.Get(ctx, "app/counter")
	if err != nil || !ok || rec.JobID != first[0].Job {
		t.Fatalf("stored %+v, %v, %v; want the savepoint of job %s", rec, ok, err, first[0].Job)
	}
	old, _ := cl.Fake.Job(first[0].Job)
	info, _ := cl.Fake.Job(again[0].Job)
	if old.State != flinkapi.JobFinished || again[0].Number != 2 || again[0].RestoreFrom != rec.Location || info.RestoredFrom != rec.Location {
		t.Errorf("old job %s; deployment %+v, restored from %q; want the second, from %s", old.State, again[0], info.RestoredFrom, rec.Location)
	}
	if !strings.Contains(out.String(), "\nundeploy   app/counter: job "+demo.Short(first[0].Job)+" stopped after ") {
		t.Errorf("no line for the undeploy that ended in the deploy")
	}
}
