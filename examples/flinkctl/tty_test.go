package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// buildBinary builds flinkctl into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flinkctl")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// slowSavepointJob serves a fake JobManager in real time from the test
// process, with savepoints that take d, and starts a job of 8 subtasks
// on it.
func slowSavepointJob(t *testing.T, d time.Duration) (*flinktest.Server, flinkapi.JobID) {
	t.Helper()
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithRealTime(), flinktest.WithSavepointDuration(d),
		flinktest.WithRefreshInterval(0))
	t.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	jar := filepath.Join(t.TempDir(), "counter.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	jarID, err := c.UploadJar(ctx, jar)
	if err != nil {
		t.Fatal(err)
	}
	id := flinkapi.NewJobID()
	if _, err := c.RunJar(ctx, jarID, flinkapi.RunJarRequest{JobID: id, Parallelism: 4, ProgramArgs: []string{"--out", "/out/tty", "--parallelism", "4"}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if jobs, err := c.JobsOverview(ctx); err == nil && len(jobs) == 1 && jobs[0].State == flinkapi.JobRunning &&
			jobs[0].Tasks.Total > 0 && jobs[0].Tasks.Running == jobs[0].Tasks.Total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s does not run", id)
		}
	}
	return srv, id
}

var progressLine = regexp.MustCompile(`^savepoint  Savepoint: (\d+)/8 subtasks \(\d+%\), [0-9.]+ [KMG]?i?B \(\d+\.\ds\)\s*$`)

// TestProgressLineInTerminal runs the built flinkctl in a real terminal
// (tmux) against a slow savepoint and reads the screen while it runs: one
// progress line, rewritten in place with more subtasks acknowledged,
// then the savepoint's location. On a pipe the same command writes
// plain lines, no carriage returns.
func TestProgressLineInTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("this test needs tmux (apt-get install tmux): %v", err)
	}
	bin := buildBinary(t)
	srv, id := slowSavepointJob(t, 6*time.Second)
	sock := fmt.Sprintf("flinkctl-test-%d", os.Getpid())
	state := t.TempDir()
	command := fmt.Sprintf("%s savepoint %s --flink-url %s --state-dir %s --poll 200ms; echo EXIT=$?; sleep 120", bin, id, srv.URL, state)
	if out, err := exec.Command("tmux", "-L", sock, "new-session", "-d", "-x", "120", "-y", "30", "-s", "t", command).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })

	type seen struct {
		row  int
		text string
	}
	var progress []seen
	var screen string
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(150 * time.Millisecond) {
		out, err := exec.Command("tmux", "-L", sock, "capture-pane", "-p", "-t", "t").Output()
		if err != nil {
			t.Fatalf("capture-pane: %v", err)
		}
		screen = string(out)
		lines := strings.Split(screen, "\n")
		n := 0
		for i, l := range lines {
			if progressLine.MatchString(l) {
				n++
				if len(progress) == 0 || progress[len(progress)-1].text != l {
					progress = append(progress, seen{i, l})
				}
			}
		}
		if n > 1 {
			t.Fatalf("%d progress lines on the screen, want one rewritten in place:\n%s", n, screen)
		}
		if strings.Contains(screen, "EXIT=") {
			break
		}
	}
	t.Logf("screen at the end:\n%s", screen)
	t.Logf("progress lines seen: %v", progress)
	if !strings.Contains(screen, "EXIT=0") || !regexp.MustCompile(`(?m)^savepoint  job `+string(id)+`: savepoint file:/\S+`).MatchString(screen) {
		t.Fatalf("no savepoint location, or not exit 0:\n%s", screen)
	}
	if len(progress) < 2 {
		t.Fatalf("the progress line was not seen changing: %v", progress)
	}
	var acks []string
	for _, p := range progress {
		if p.row != progress[0].row {
			t.Errorf("progress moved from row %d to row %d: not in place", progress[0].row, p.row)
		}
		acks = append(acks, progressLine.FindStringSubmatch(p.text)[1])
	}
	if acks[0] == acks[len(acks)-1] {
		t.Errorf("acknowledged subtasks did not grow: %v", acks)
	}
	if progressLine.MatchString(strings.Split(screen, "\n")[progress[0].row]) {
		t.Errorf("the progress line stayed after the end:\n%s", screen)
	}

	// On a pipe: plain lines.
	srv2, id2 := slowSavepointJob(t, 2*time.Second)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "savepoint", string(id2), "--flink-url", srv2.URL, "--state-dir", t.TempDir(), "--poll", "200ms")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("on a pipe: %v, %s", err, stderr.String())
	}
	out := stdout.String()
	t.Logf("on a pipe:\n%s", out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if strings.ContainsAny(out, "\r\x1b") || len(lines) < 2 || !strings.HasPrefix(lines[0], "  savepoint: Savepoint") ||
		!strings.HasPrefix(lines[len(lines)-1], "savepoint  job "+string(id2)+": savepoint ") {
		t.Errorf("pipe output is not plain lines: %q", out)
	}
}

// TestProgressLineAt80Columns runs the built flinkctl in an 80-column
// terminal (tmux) applying a job whose cluster went away: the progress
// line, longer than the terminal is wide (the unreachable cluster's
// error), is refreshed every second for 5 seconds and stays one row, cut
// to the width with the time elapsed in view; the error that ends apply
// replaces it on a row of its own.
func TestProgressLineAt80Columns(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("this test needs tmux (apt-get install tmux): %v", err)
	}
	bin := buildBinary(t)
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithRealTime(), flinktest.WithRefreshInterval(0))
	dir, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "counter.jar"), flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "counter.yaml")
	job := "name: counter\njob:\n  jarFile: counter.jar\n  args: [\"--out\", \"/out/c\", \"--checkpoint-interval\", \"200\"]\n"
	if err := os.WriteFile(file, []byte(job), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--flink-url", srv.URL, "--state-dir", state, "--poll", "200ms", "apply", "-f", file}, &out, &errb); code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out.String(), errb.String())
	}
	srv.Close() // the cluster goes away

	sock := fmt.Sprintf("flinkctl-test80-%d", os.Getpid())
	command := fmt.Sprintf("%s apply -f %s --flink-url %s --state-dir %s --poll 200ms --unreachable-timeout 5s; echo EXIT=$?; sleep 120", bin, file, srv.URL, state)
	if out, err := exec.Command("tmux", "-L", sock, "new-session", "-d", "-x", "80", "-y", "30", "-s", "t", command).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })

	progress := regexp.MustCompile(`^counter\s+JobManagerUnreachable: `)
	seen := map[string]bool{}
	var screen string
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, err := exec.Command("tmux", "-L", sock, "capture-pane", "-p", "-t", "t").Output()
		if err != nil {
			t.Fatalf("capture-pane: %v", err)
		}
		screen = string(b)
		if strings.Contains(screen, "EXIT=") {
			break
		}
		if strings.HasPrefix(screen, "flinkctl: ") {
			continue // the error is out, the exit code to come
		}
		rows := 0
		for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			rows++
			if progress.MatchString(l) {
				seen[strings.TrimRight(l, " ")] = true
			}
		}
		if rows > 1 {
			t.Fatalf("%d rows on the screen, want the one progress line:\n%s", rows, screen)
		}
	}
	t.Logf("screen at the end:\n%s", screen)
	t.Logf("progress lines seen: %v", seen)
	if len(seen) < 3 {
		t.Errorf("%d different progress lines seen, want one refresh a second for 5 seconds", len(seen))
	}
	for l := range seen {
		if n := utf8.RuneCountInString(l); n >= 80 || !regexp.MustCompile(`… \(\d+\.\ds\)$`).MatchString(l) {
			t.Errorf("progress line of %d columns, not cut to 80 with the time in view: %q", n, l)
		}
	}
	rows := strings.Split(screen, "\n")
	if !strings.Contains(screen, "EXIT=5") || !strings.HasPrefix(rows[0], "flinkctl: counter: the JobManager at ") {
		t.Fatalf("want the error on the first row, where the progress line was, and exit 5:\n%s", screen)
	}
	for _, l := range rows {
		if progress.MatchString(l) {
			t.Errorf("the progress line stayed after the error:\n%s", screen)
		}
	}
}
