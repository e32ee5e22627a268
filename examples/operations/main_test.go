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
// checks each phase's line, and what the fake saw: the upgraded job
// restored from the upgrade's savepoint, a failed job restarted from its
// latest retained checkpoint, the first and the last job stopped with a
// savepoint.
func TestDemoOnTheFake(t *testing.T) {
	var res result
	var jobs map[flinkapi.JobID]flinktest.JobInfo
	r := runner{onDone: func(r result, cl *demo.Cluster) {
		res = r
		jobs = map[flinkapi.JobID]flinktest.JobInfo{}
		for _, j := range cl.Fake.Jobs() {
			jobs[j.ID] = j
		}
	}}
	var stdout, stderr bytes.Buffer
	code := r.run(context.Background(), nil, &stdout, &stderr)
	t.Logf("output:\n%s", stdout.String())
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}

	lines := phaseLines(stdout.String())
	want := []string{
		`^cluster    fake JobManager \(flinktest\) playing Flink 1\.20\.5 at http://127\.0\.0\.1:\d+, jar uploaded$`,
		`^submit     job [0-9a-f]{8} \(counter-v1\) RUNNING after \d+\.\ds$`,
		`^savepoint  scheduled savepoint of job [0-9a-f]{8} at file:/\S+ after \d+\.\ds \(due every 3s from the job's start\)$`,
		`^upgrade    job [0-9a-f]{8} stopped with savepoint file:/\S+ \(StopWithSavepoint\); job [0-9a-f]{8} \(counter-v2\) RUNNING from it after \d+\.\ds$`,
		`^restored   Flink reports job [0-9a-f]{8} restored from file:/\S+ after \d+\.\ds; counter-v1 had counted \d+ events, counter-v2 is at \d+$`,
		`^fail       job [0-9a-f]{8} FAILED after \d+\.\ds: failure injected by the demo$`,
		`^restart    RestartFailedJob: job [0-9a-f]{8} \(counter-v2-restarted\) RUNNING from checkpoint file:/\S+/chk-\d+, the newest state \(\d+\.\ds old\), after \d+\.\ds; restart 1 of 3 within 1h0m0s$`,
		`^restored   Flink reports job [0-9a-f]{8} restored from file:/\S+ after \d+\.\ds; counter-v2 had counted \d+ events, counter-v2-restarted is at \d+$`,
		`^teardown   job [0-9a-f]{8} stopped with a final savepoint file:/\S+ after \d+\.\ds$`,
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
	for i, s := range map[int]string{1: demo.Short(res.First), 2: res.Periodic.Location, 3: res.Upgrade.Location, 4: res.Upgrade.Location,
		6: res.RestartFrom, 7: res.RestartFrom, 8: res.Final} {
		if s == "" || !strings.Contains(lines[i], s) {
			t.Errorf("line %d does not name %q: %s", i+1, s, lines[i])
		}
	}

	first, upgraded, restarted := jobs[res.First], jobs[res.Upgraded], jobs[res.Restarted]
	if len(jobs) != 3 || res.First == res.Upgraded || res.Upgraded == res.Restarted {
		t.Fatalf("jobs on the fake %v, result %+v", jobs, res)
	}
	if first.State != flinkapi.JobFinished || first.RestoredFrom != "" {
		t.Errorf("first job: %+v, want FINISHED (stopped with a savepoint), started without state", first)
	}
	if res.Periodic.Location == "" || res.Periodic.Location == res.Upgrade.Location || res.Periodic.Reason != "Scheduled" {
		t.Errorf("periodic savepoint %+v, upgrade's %+v", res.Periodic, res.Upgrade)
	}
	if upgraded.RestoredFrom == "" || upgraded.RestoredFrom != res.Upgrade.Location || upgraded.State != flinkapi.JobFailed {
		t.Errorf("upgraded job: %+v, want FAILED, restored from the upgrade's savepoint %s", upgraded, res.Upgrade.Location)
	}
	if res.RestartKind != policy.KindCheckpoint || restarted.RestoredFrom != res.RestartFrom ||
		!strings.Contains(res.RestartFrom, string(res.Upgraded)) {
		t.Errorf("restarted job: %+v from %s %s, want the upgraded job's retained checkpoint", restarted, res.RestartKind, res.RestartFrom)
	}
	if restarted.State != flinkapi.JobFinished || res.Final == "" {
		t.Errorf("restarted job: %+v, final savepoint %q: want it stopped with a savepoint", restarted, res.Final)
	}
	// The counter carries on: every job after the first starts from the
	// state of the one before it.
	if !(first.Events > 0 && upgraded.Events > first.Events && restarted.Events > first.Events) {
		t.Errorf("events: first %d, upgraded %d, restarted %d: the state was not carried on", first.Events, upgraded.Events, restarted.Events)
	}
}

// TestBadInput checks that a wrong command line, URL, cluster or jar ends
// with one line on stderr, naming what is wrong, and a non-zero exit code.
func TestBadInput(t *testing.T) {
	jar := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(jar, []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--bogus"}, 2, "operations: flag provided but not defined: -bogus (see --help)"},
		{"stray argument", []string{"now"}, 2, `operations: unexpected argument "now" (see --help)`},
		{"bad interval", []string{"--savepoint-interval", "0s"}, 2, "operations: --savepoint-interval must be positive, got 0s"},
		{"no scheme", []string{"--flink-url", "localhost:8081", "--jar", jar}, 1, `operations: --flink-url "localhost:8081": base URL must start with http:// or https://, got scheme "localhost"`},
		{"credentials", []string{"--flink-url", "http://u:p@localhost:8081", "--jar", jar}, 1, `operations: --flink-url "http://xxxxx@localhost:8081": base URL "http://xxxxx@localhost:8081" must not contain credentials`},
		{"missing jar", []string{"--flink-url", "http://127.0.0.1:1", "--jar", "/no/such.jar"}, 1, "operations: --jar /no/such.jar: no such file or directory"},
		{"jar is a folder", []string{"--flink-url", "http://127.0.0.1:1", "--jar", t.TempDir()}, 1, "is a directory, not a jar file"},
		{"no jar", []string{"--flink-url", "http://127.0.0.1:1"}, 1, "operations: --flink-url needs --jar PATH"},
		{"jar without url", []string{"--jar", jar}, 1, "operations: --jar needs --flink-url"},
		{"unreachable", []string{"--flink-url", "http://127.0.0.1:1", "--jar", jar}, 1, "operations: no Flink JobManager answers at http://127.0.0.1:1: "},
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
	for _, f := range []string{"-flink-url", "-jar", "-entry-class", "-out", "-savepoint-dir", "-savepoint-interval", "-timeout", "Usage:"} {
		if !strings.Contains(stdout.String(), f) {
			t.Errorf("--help does not mention %s:\n%s", f, stdout.String())
		}
	}
}

// TestTimeout checks that a demo that cannot finish in --timeout ends with
// one line saying so.
func TestTimeout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--timeout", "1s", "--savepoint-interval", "1h"}, &stdout, &stderr)
	if code != 1 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "operations: gave up after --timeout 1s: ") {
		t.Errorf("exit code %d, stderr %q", code, stderr.String())
	}
}
