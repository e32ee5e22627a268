package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// phaseLines returns the lines of out that are not progress lines (those
// are indented).
func phaseLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestDemoOnTheFake runs the whole demo against the fake JobManager and
// checks each phase's line, and what the fake saw: the first job stopped
// with a savepoint, the upgraded job restored from it, the failed job
// restarted from its latest retained checkpoint, the counts carried on
// from job to job, the last job stopped with a final savepoint that the
// store keeps under the job's name, and the status file holding the
// status of the last call.
func TestDemoOnTheFake(t *testing.T) {
	var res result
	var jobs map[flinkapi.JobID]flinktest.JobInfo
	var finalExists bool
	r := runner{onDone: func(r result, cl *demo.Cluster) {
		res = r
		finalExists, _ = cl.Fake.SavepointExists(r.Final.Location)
		jobs = map[flinkapi.JobID]flinktest.JobInfo{}
		for _, j := range cl.Fake.Jobs() {
			jobs[j.ID] = j
		}
	}}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := r.run(context.Background(), []string{"--state-dir", dir}, &stdout, &stderr)
	t.Logf("output:\n%s", stdout.String())
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}

	lines := phaseLines(stdout.String())
	loc := `file:/\S+`
	want := []string{
		`^cluster    fake JobManager \(flinktest\) playing Flink 1\.20\.5 at http://127\.0\.0\.1:\d+, jar uploaded; the job's status in \S+/counter\.json$`,
		`^deploy     job [0-9a-f]{8} \(counter-v1\) RUNNING stably after \d+\.\ds; status: Running, Deploy Succeeded, restore point none$`,
		`^savepoint  scheduled savepoint of job [0-9a-f]{8} after \d+\.\ds \(every 3s from the job's start and its latest savepoint\); status: Running, Savepoint Succeeded, restore point savepoint ` + loc + `$`,
		`^plan       situation Running, start Upgrade, from a new savepoint, preflight passed \(\d+ task slots needed\)$`,
		`^upgrade    job [0-9a-f]{8} stopped with a savepoint, job [0-9a-f]{8} \(counter-v2\) RUNNING stably from it after \d+\.\ds; status: Running, Upgrade Succeeded, restore point savepoint ` + loc + `$`,
		`^restored   Flink reports job [0-9a-f]{8} restored from ` + loc + ` after \d+\.\ds; counter-v1 had counted \d+ events, job [0-9a-f]{8} is at \d+$`,
		`^fail       job [0-9a-f]{8} FAILED after \d+\.\ds: failure injected by the demo$`,
		`^restart    RestartFailedJob: job [0-9a-f]{8} \(counter-v2\) RUNNING stably from the newest state after \d+\.\ds, restart 1 of 3 within 1h0m0s; status: Running, Restart Succeeded, restore point checkpoint ` + loc + `/chk-\d+$`,
		`^restored   Flink reports job [0-9a-f]{8} restored from ` + loc + `/chk-\d+ after \d+\.\ds; the failed job had counted \d+ events, job [0-9a-f]{8} is at \d+$`,
		`^delete     job [0-9a-f]{8} stopped with a final savepoint after \d+\.\ds, kept under "counter": ` + loc + `; status: \w+, Teardown Succeeded, restore point savepoint ` + loc + `$`,
		`^done       in \d+\.\ds$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d phase lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d:\n%s\nwant it to match\n%s", i+1, lines[i], re)
		}
	}
	// Each line names the ids and locations of what happened.
	for i, s := range map[int]string{1: demo.Short(res.First), 2: res.Periodic.Location, 4: res.UpgradeFrom.Location, 5: res.UpgradeFrom.Location,
		7: res.RestartFrom, 8: res.RestartFrom, 9: res.Final.Location} {
		if s == "" || !strings.Contains(lines[i], s) {
			t.Errorf("line %d does not name %q: %s", i+1, s, lines[i])
		}
	}

	// What the fake saw: three jobs, each started from the state of the
	// one before it.
	first, upgraded, restarted := jobs[res.First], jobs[res.Upgraded], jobs[res.Restarted]
	if len(jobs) != 3 || res.First == res.Upgraded || res.Upgraded == res.Restarted {
		t.Fatalf("jobs on the fake %v, result %+v", jobs, res)
	}
	if first.State != flinkapi.JobFinished || first.RestoredFrom != "" {
		t.Errorf("first job: %+v, want FINISHED (stopped with a savepoint), started without state", first)
	}
	if res.Periodic.Location == "" || res.Periodic.Location == res.UpgradeFrom.Location || res.Periodic.Reason != "Scheduled" {
		t.Errorf("periodic savepoint %+v, upgrade's %+v", res.Periodic, res.UpgradeFrom)
	}
	if upgraded.RestoredFrom == "" || upgraded.RestoredFrom != res.UpgradeFrom.Location || upgraded.State != flinkapi.JobFailed {
		t.Errorf("upgraded job: %+v, want FAILED, restored from the upgrade's savepoint %s", upgraded, res.UpgradeFrom.Location)
	}
	if res.RestartKind != policy.KindCheckpoint || restarted.RestoredFrom != res.RestartFrom ||
		!strings.Contains(res.RestartFrom, string(res.Upgraded)) {
		t.Errorf("restarted job: %+v from %s %s, want the upgraded job's retained checkpoint", restarted, res.RestartKind, res.RestartFrom)
	}
	if restarted.State != flinkapi.JobFinished || res.Final.Location == "" {
		t.Errorf("restarted job: %+v, final savepoint %+v: want it stopped with a savepoint", restarted, res.Final)
	}
	if !(first.Events > 0 && upgraded.Events > first.Events && restarted.Events > first.Events) {
		t.Errorf("events: first %d, upgraded %d, restarted %d: the state was not carried on", first.Events, upgraded.Events, restarted.Events)
	}

	// The status file holds the last call's status, and the store the
	// final savepoint under the job's name.
	st := res.Status
	if !st.Deleted || st.JobID != res.Restarted || st.Restarts != 1 || st.Name != jobName {
		t.Errorf("final status: deleted %v, job %s, %d restarts, name %q", st.Deleted, st.JobID, st.Restarts, st.Name)
	}
	f, err := lifecycle.OpenStatusFile(filepath.Join(dir, "counter.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved, ok, err := f.Load()
	if err != nil || !ok || !saved.Deleted || saved.JobID != res.Restarted || saved.Progress.Savepoint.Location != res.Final.Location {
		t.Errorf("status file: %+v, %v, %v", saved, ok, err)
	}
	store, err := lifecycle.NewFileStore(filepath.Join(dir, "restore-points"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := store.Get(context.Background(), jobName); err != nil || !ok || rec.Location != res.Final.Location ||
		!finalExists || rec.Location == res.UpgradeFrom.Location || rec.Location == res.Periodic.Location {
		t.Errorf("store: %+v, %v, %v (on the fake's disk: %v); want the final savepoint", rec, ok, err, finalExists)
	}
}

// TestBadInput checks that a wrong command line, URL, cluster or jar ends
// with one line on stderr, naming what is wrong, and a non-zero exit code.
func TestBadInput(t *testing.T) {
	jar := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(jar, []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "counter.json"), []byte(`{"name":"counter","jobID":"0123456789abcdef0123456789abcdef"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--bogus"}, 2, "upgrade: flag provided but not defined: -bogus (see --help)"},
		{"stray argument", []string{"now"}, 2, `upgrade: unexpected argument "now" (see --help)`},
		{"bad interval", []string{"--savepoint-interval", "0s"}, 2, "upgrade: --savepoint-interval must be positive, got 0s"},
		{"state dir is a file", []string{"--state-dir", jar}, 1, "upgrade: --state-dir " + jar + ": "},
		{"status of a job not deleted", []string{"--state-dir", busy}, 1, "records a job that was not deleted (0123456789abcdef0123456789abcdef): use another --state-dir"},
		{"no scheme", []string{"--flink-url", "localhost:8081", "--jar", jar}, 1, `upgrade: --flink-url "localhost:8081": base URL must start with http:// or https://, got scheme "localhost"`},
		{"credentials", []string{"--flink-url", "http://u:p@localhost:8081", "--jar", jar}, 1, `upgrade: --flink-url "http://xxxxx@localhost:8081": base URL "http://xxxxx@localhost:8081" must not contain credentials`},
		{"missing jar", []string{"--flink-url", "http://127.0.0.1:1", "--jar", "/no/such.jar"}, 1, "upgrade: --jar /no/such.jar: no such file or directory"},
		{"jar is a folder", []string{"--flink-url", "http://127.0.0.1:1", "--jar", t.TempDir()}, 1, "is a directory, not a jar file"},
		{"no jar", []string{"--flink-url", "http://127.0.0.1:1"}, 1, "upgrade: --flink-url needs --jar PATH"},
		{"jar without url", []string{"--jar", jar}, 1, "upgrade: --jar needs --flink-url"},
		{"unreachable", []string{"--flink-url", "http://127.0.0.1:1", "--jar", jar}, 1, "upgrade: no Flink JobManager answers at http://127.0.0.1:1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q, want one line containing %q", msg, tc.want)
			}
			if strings.Contains(msg, "goroutine") || strings.Contains(msg, "panic") {
				t.Errorf("stderr has a stack trace: %q", msg)
			}
			if strings.Contains(msg, "u:p") {
				t.Errorf("stderr shows the credentials of the URL: %q", msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestHelp checks that --help explains every flag and exits 0.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	for _, f := range []string{"-flink-url", "-jar", "-entry-class", "-out", "-savepoint-dir", "-savepoint-interval", "-state-dir", "-timeout", "Usage:"} {
		if !strings.Contains(stdout.String(), f) {
			t.Errorf("--help does not mention %s:\n%s", f, stdout.String())
		}
	}
}

// TestTimeout checks that a demo that cannot finish in --timeout ends with
// one line saying so.
func TestTimeout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--timeout", "1s", "--savepoint-interval", "1h", "--state-dir", t.TempDir()}, &stdout, &stderr)
	if code != 1 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "upgrade: gave up after --timeout 1s: ") {
		t.Errorf("exit code %d, stderr %q", code, stderr.String())
	}
}
