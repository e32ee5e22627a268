package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestNamesWithSlash: a name of segments (app/streamlet), the library's
// own naming, is applied, listed, stopped, deleted and applied again; its
// files in the state directory have '~' for '/'. Unsafe names are
// refused, naming the problem.
func TestNamesWithSlash(t *testing.T) {
	f := newFixture(t)
	file := f.jobFile("shop-ingest", "/out/ingest", "")
	y := strings.Replace(mustRead(t, file), "name: shop-ingest", "name: shop/ingest", 1)
	if err := os.WriteFile(file, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	state := filepath.Join(f.dir, "state")
	if _, err := os.Stat(filepath.Join(state, "records", "shop~ingest.json")); err != nil {
		t.Fatalf("the deployment's file: %v", err)
	}
	d := f.deployment("shop/ingest")
	r := f.run("status", "shop/ingest")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "name:") || !strings.Contains(r.stdout, "shop/ingest") || !strings.Contains(r.stdout, string(d.Status.JobID)) {
		t.Errorf("status shop/ingest: %q", r.stdout)
	}
	r = f.run("status")
	if !strings.Contains(r.stdout, "shop/ingest ") || strings.Contains(r.stdout, "~") {
		t.Errorf("status list: %q", r.stdout)
	}
	r = f.run("jobs")
	if !strings.HasSuffix(strings.TrimSpace(r.stdout), "shop/ingest") {
		t.Errorf("jobs does not name the applied job: %q", r.stdout)
	}
	f.srv.Clock().Advance(2 * time.Second)
	wantCode(t, f.run("savepoint", "shop/ingest"), exitOK, "")
	wantCode(t, f.run("savepoints", "dispose", "shop/ingest", "--keep", "1"), exitOK, "")
	latest := f.deployment("shop/ingest").Status.Latest.Location
	wantCode(t, f.run("delete", "shop/ingest"), exitOK, "")
	store, _ := lifecycle.NewFileStore(filepath.Join(state, "restore-points"))
	rec, ok, err := store.Get(context.Background(), "shop/ingest")
	if err != nil || !ok || rec.Location == "" || rec.Location == latest {
		t.Fatalf("restore point of shop/ingest: %+v %v %v", rec, ok, err)
	}
	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	if run := f.running(); len(run) != 1 || run[0].RestoredFrom != rec.Location {
		t.Fatalf("applied again: %+v, want restored from %s", run, rec.Location)
	}

	for _, c := range []struct{ name, says string }{
		{"../etc", `a ".." segment`},
		{"a/../b", `a ".." segment`},
		{"a/./b", `a "." segment`},
		{"a//b", "empty segment"},
		{"/a", "empty segment"},
		{"a/", "empty segment"},
		{"a\x1bb", "control character U+001B"},
		{"a\nb", "control character U+000A"},
		{"my app", "the character ' '"},
		{"a:b", "the character ':'"},
		{"a~b", "the character '~'"},
		{"a/-b", `segment "-b" does not start with a letter or digit`},
		{strings.Repeat("a", 201), "201 bytes long, more than 200"},
	} {
		r := f.run("status", c.name)
		wantCode(t, r, exitBadInput, c.says)
		if !strings.Contains(r.stderr, "segments separated by '/'") {
			t.Errorf("status %q: the message does not say what a name is: %q", c.name, r.stderr)
		}
	}
}

// TestJobsAndStatusJSON: jobs -o json writes the JSON style of the
// stored status (status -o json): the same names for the same facts
// (jobID, jobState, name), lowerCamel names, durations as strings.
func TestJobsAndStatusJSON(t *testing.T) {
	f := newFixture(t)
	f.startJob("counter")
	f.srv.Clock().Advance(90 * time.Second)
	var jobs []map[string]any
	r := f.run("jobs", "-o", "json")
	wantCode(t, r, exitOK, "")
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("jobs -o json: %v %q", err, r.stdout)
	}
	var status struct {
		Name   string         `json:"name"`
		Status map[string]any `json:"status"`
	}
	r = f.run("status", "counter", "-o", "json")
	wantCode(t, r, exitOK, "")
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil {
		t.Fatalf("status -o json: %v %q", err, r.stdout)
	}
	job := jobs[0]
	for _, k := range []string{"jobID", "jobState"} {
		if job[k] == nil || job[k] != status.Status[k] {
			t.Errorf("%s: jobs says %v, status says %v", k, job[k], status.Status[k])
		}
	}
	if job["name"] != status.Name {
		t.Errorf("name: jobs says %v, status says %v", job["name"], status.Name)
	}
	for k := range job {
		if k[0] < 'a' || k[0] > 'z' {
			t.Errorf("jobs -o json has the field %q: not the status's lowerCamel style", k)
		}
	}
	d, ok := job["duration"].(string)
	if pd, err := time.ParseDuration(d); !ok || err != nil || pd < 90*time.Second {
		t.Errorf("duration %v: want a duration string such as \"1m30s\"", job["duration"])
	}
	if _, err := time.Parse(time.RFC3339, fmt.Sprint(job["startTime"])); err != nil {
		t.Errorf("startTime %v: %v", job["startTime"], err)
	}
}

// TestStopManagedJob: stop of a job that apply manages records the stop
// in its status (suspended, the stop's savepoint its newest state), so
// that status says so at once; apply of a job file that says Suspended
// finds it done, apply of one that says Running starts it again from
// that savepoint.
func TestStopManagedJob(t *testing.T) {
	f := newFixture(t)
	id := f.startJob("counter")
	f.srv.Clock().Advance(2 * time.Second)
	r := f.run("stop", string(id)) // by id: the applied job is found
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "recorded in counter's status as suspended") {
		t.Errorf("stop does not say it recorded the stop: %q", r.stdout)
	}
	h, _ := stateDir{root: filepath.Join(f.dir, "state")}.history(id)
	loc := h.Records[len(h.Records)-1].Location
	d := f.deployment("counter")
	st := d.Status
	if !st.Suspended || st.State != policy.Suspended || st.JobState != flinkapi.JobFinished || st.Latest.Location != loc ||
		!strings.Contains(st.Message, "flinkctl stop") || st.Converged(d.Spec) {
		t.Fatalf("status after stop: %+v", st)
	}
	r = f.run("status", "counter")
	if !strings.Contains(r.stdout, "Suspended") || !strings.Contains(r.stdout, "latest savepoint:  "+loc) {
		t.Errorf("status after stop: %q", r.stdout)
	}

	// A job file that says Suspended: converged, nothing started.
	suspended := f.jobFile("counter", "/out/counter", "state: Suspended\n")
	wantCode(t, f.run("apply", "-f", suspended), exitOK, "")
	if run := f.running(); len(run) != 0 {
		t.Fatalf("apply of state Suspended started %+v", run)
	}
	// Running: started again from the stop's savepoint.
	f.srv.Clock().Advance(2 * time.Second)
	wantCode(t, f.run("apply", "-f", f.jobFile("counter", "/out/counter", "")), exitOK, "")
	if run := f.running(); len(run) != 1 || run[0].RestoredFrom != loc || run[0].ID != f.deployment("counter").Status.JobID {
		t.Fatalf("apply after the stop: running %+v, want one job restored from %s", run, loc)
	}

	// Without a savepoint: refused for an applied job, nothing done.
	id = f.deployment("counter").Status.JobID
	wantCode(t, f.run("stop", "counter", "--mode", "Stateless"), exitBlocked, "`flinkctl delete counter` ends it")
	if st, _ := f.c.JobStatus(context.Background(), id); st != flinkapi.JobRunning {
		t.Fatalf("job %s after a refused stop", st)
	}
	// Not while apply acts on it.
	unlock, err := stateDir{root: filepath.Join(f.dir, "state")}.lock(fleetLock)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.run("stop", "counter"), exitBlocked, "another flinkctl")
	unlock()
}

// TestDeleteSaysReasonOnce: delete of a job that had ended without a
// savepoint says why once.
func TestDeleteSaysReasonOnce(t *testing.T) {
	f := newFixture(t)
	id := f.startJob("counter")
	wantCode(t, f.run("cancel", string(id), "--force"), exitOK, "")
	f.srv.Clock().Advance(4 * time.Second)
	r := f.run("delete", "counter")
	wantCode(t, r, exitOK, "")
	var last string
	for l := range strings.SplitSeq(strings.TrimSpace(r.stdout), "\n") {
		last = l
	}
	if !strings.HasPrefix(last, "deleted ") {
		t.Fatalf("no final line: %q", r.stdout)
	}
	const reason = "no restore point is recorded"
	if n := strings.Count(last, reason); n != 1 {
		t.Errorf("the final line says %q %d times: %q", reason, n, last)
	}
}

// TestProgressLineFits: on a terminal the progress line is cut to the
// terminal's width (the time elapsed kept in view), and an error clears
// it first, so that it starts a row of its own.
func TestProgressLineFits(t *testing.T) {
	for _, c := range []struct {
		width int
		text  string
		want  string
	}{
		{80, "short", "name       short (1.0s)"},
		{25, "a long status text", "name       a lon… (1.0s)"},
		{20, "a long status text", "name       a long …"}, // no room for the time
		{12, "a long status text", "name      …"},
		{1, "x", "…"},
	} {
		got := fitLine(fmt.Sprintf("%-10s ", "name"), c.text, " (1.0s)", c.width)
		if got != c.want || utf8.RuneCountInString(got) >= max(c.width, 2) {
			t.Errorf("fitLine at %d columns: %q, want %q", c.width, got, c.want)
		}
	}
	width := 80
	var buf bytes.Buffer
	p := &printer{w: &buf, tty: true, width: func() int { return width }}
	long := strings.Repeat("the JobManager does not answer ", 10) + "\nsecond line"
	p.Progress("counter", long, time.Second)
	width = 40 // the window was made narrower
	p.Progress("counter", long, 2*time.Second)
	for i, l := range strings.Split(buf.String(), "\r\x1b[K")[1:] {
		if n := utf8.RuneCountInString(l); n >= []int{80, 40}[i] || strings.ContainsAny(l, "\n\r") || !strings.HasSuffix(l, "… ("+[]string{"1.0s", "2.0s"}[i]+")") {
			t.Errorf("refresh %d: %q (%d columns)", i, l, n)
		}
	}

	// An error after progress: the line is cleared before stderr is
	// written.
	f := newFixture(t)
	file := f.jobFile("counter", "/out/x", "")
	wantCode(t, f.run("apply", "-f", file), exitOK, "")
	f.srv.Close()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, clock: f.srv.Clock()}
	a.out = &printer{w: &out, tty: true, width: func() int { return 80 }}
	code := a.main(context.Background(), []string{"--flink-url", f.srv.URL, "--state-dir", filepath.Join(f.dir, "state"), "apply", "-f", file, "--unreachable-timeout", "10s"})
	if code != exitUnreachable || !strings.HasSuffix(out.String(), "(10.0s)\r\x1b[K") {
		t.Fatalf("exit %d; stdout does not end with the progress line cleared: %q", code, out.String())
	}
	if strings.Contains(out.String(), "\n") {
		t.Errorf("progress lines are not rewritten in place: %q", out.String())
	}
}

// freePort is a TCP port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two
// goroutines.
type syncBuffer struct {
	mu chan struct{}
	b  bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.String()
}

// TestFake: flinkctl fake serves a fake JobManager on the port asked for,
// playing the version asked for, in real time, with an example job file;
// apply and status work against it; it ends when interrupted.
func TestFake(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	example := t.TempDir()
	out, errb := newSyncBuffer(), newSyncBuffer()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"fake", "--port", fmt.Sprint(port), "--flink-version", "1.19.1", "--example-dir", example}, out, errb)
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "Ctrl-C"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fake did not start: %q %q", out.String(), errb.String())
		}
	}
	if !strings.Contains(out.String(), "playing Flink 1.19.1 at "+url) || !strings.Contains(out.String(), "apply -f "+filepath.Join(example, "counter.yaml")) {
		t.Errorf("fake says %q", out.String())
	}
	resp, err := http.Get(url + "/config")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version string `json:"flink-version"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&cfg)
	resp.Body.Close()
	if cfg.Version != "1.19.1" {
		t.Errorf("the fake plays %q, want 1.19.1", cfg.Version)
	}

	state := t.TempDir()
	ctl := func(args ...string) result {
		var o, e bytes.Buffer
		code := run(context.Background(), append([]string{"--flink-url", url, "--state-dir", state, "--poll", "200ms", "--timeout", "2m"}, args...), &o, &e)
		t.Logf("flinkctl %s: exit %d\n%s%s", strings.Join(args, " "), code, o.String(), e.String())
		return result{code: code, stdout: o.String(), stderr: e.String()}
	}
	wantCode(t, ctl("apply", "-f", filepath.Join(example, "counter.yaml")), exitOK, "")
	r := ctl("status", "counter")
	wantCode(t, r, exitOK, "")
	if !strings.Contains(r.stdout, "RUNNING") || !strings.Contains(r.stdout, "converged:    true") {
		t.Errorf("status: %q", r.stdout)
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("fake ended with exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fake did not end when interrupted")
	}

	// A version the fake does not play, a port in use.
	var o, e bytes.Buffer
	if code := run(context.Background(), []string{"fake", "--flink-version", "3.0.0"}, &o, &e); code != exitBadInput || !strings.Contains(e.String(), "--flink-version") {
		t.Errorf("fake --flink-version 3.0.0: exit %d, %q", code, e.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e.Reset()
	busy := ln.Addr().(*net.TCPAddr).Port
	if code := run(context.Background(), []string{"fake", "--port", fmt.Sprint(busy), "--example-dir", t.TempDir()}, &o, &e); code != exitFailed || !strings.Contains(e.String(), "--port") {
		t.Errorf("fake on a port in use: exit %d, %q", code, e.String())
	}
}
