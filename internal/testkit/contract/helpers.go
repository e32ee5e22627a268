package contract

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// clockSkew is how far a timestamp of the JobManager may lie outside the
// window the suite expects it in.
const clockSkew = time.Minute

// jobSpec describes one run of the test job.
type jobSpec struct {
	name               string
	keys               int
	rate               int           // events per second, all keys together
	checkpointInterval time.Duration // 0: no checkpointing
	failAt             int           // 0: never fail
	restartAttempts    int
	savepointPath      string // restore from here; empty: start without state
	records            int    // a bounded job: it FINISHES after this many events; 0: never
	uidSuffix          string // --uid-suffix: appended to the counter's uid
	maxParallelism     int    // --max-parallelism of the counter; 0: Flink's default
}

// args returns the test job's program arguments.
func (sp jobSpec) args(out string) []string {
	a := []string{
		"--out", out,
		"--keys", strconv.Itoa(sp.keys),
		"--rate", strconv.Itoa(sp.rate),
		"--parallelism", "1",
		"--checkpoint-interval", strconv.FormatInt(sp.checkpointInterval.Milliseconds(), 10),
		"--name", sp.name,
	}
	if sp.failAt > 0 {
		a = append(a, "--fail-at", strconv.Itoa(sp.failAt))
	}
	if sp.restartAttempts > 0 {
		a = append(a, "--restart-attempts", strconv.Itoa(sp.restartAttempts), "--restart-delay", "200")
	}
	if sp.records > 0 {
		a = append(a, "--records", strconv.Itoa(sp.records))
	}
	if sp.uidSuffix != "" {
		a = append(a, "--uid-suffix", sp.uidSuffix)
	}
	if sp.maxParallelism > 0 {
		a = append(a, "--max-parallelism", strconv.Itoa(sp.maxParallelism))
	}
	return a
}

// job is a submitted run of the test job.
type job struct {
	id        flinkapi.JobID
	spec      jobSpec
	out       string
	submitted time.Time // on the target's clock, just before RunJar
}

// ctx returns a context for one subtest, bounded well beyond its waits.
func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*s.tg.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls check until it reports done, and fails the test when
// poll gives up. check returns a description of the current state for the
// failure message.
func (s *suite) waitFor(t *testing.T, ctx context.Context, what string, check func() (done bool, state string)) {
	t.Helper()
	if err := s.poll(ctx, check); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// poll calls check until it reports done, sleeping PollInterval between
// calls. It gives up when Timeout passes on the target's clock, after
// Timeout/PollInterval+1 calls (so that a clock that does not move cannot
// make it loop forever), or when ctx ends.
func (s *suite) poll(ctx context.Context, check func() (done bool, state string)) error {
	deadline := s.tg.Now().Add(s.tg.Timeout)
	maxPolls := int(s.tg.Timeout/s.tg.PollInterval) + 1
	for n := 1; ; n++ {
		done, state := check()
		if done {
			return nil
		}
		if n >= maxPolls || !s.tg.Now().Before(deadline) {
			return fmt.Errorf("not reached within %v (%d polls); last: %s", s.tg.Timeout, n, state)
		}
		if err := s.tg.Sleep(ctx, s.tg.PollInterval); err != nil {
			return fmt.Errorf("%w; last: %s", err, state)
		}
	}
}

// waiter returns a flinkapi.Waiter that polls at the target's pace.
func (s *suite) waiter(c *flinkapi.Client) *flinkapi.Waiter {
	return flinkapi.NewWaiter(c, func(o *flinkapi.WaiterOptions) {
		o.MinDelay = s.tg.PollInterval
		o.MaxDelay = max(s.tg.PollInterval, time.Second)
	})
}

// submit runs the test job with a client-chosen job id and checks that
// Flink answered that id, and on Flink 2.3+ the application id of its
// SingleJobApplication, which is the job's. The job is cancelled when owner ends, unless it
// reached a terminal state.
func (s *suite) submit(t, owner *testing.T, ctx context.Context, c *flinkapi.Client, jar flinkapi.JarID, spec jobSpec) *job {
	t.Helper()
	j := &job{id: flinkapi.NewJobID(), spec: spec, out: s.tg.OutDir(spec.name)}
	req := flinkapi.RunJarRequest{
		EntryClass:    s.tg.EntryClass,
		ProgramArgs:   spec.args(j.out),
		JobID:         j.id,
		SavepointPath: spec.savepointPath,
	}
	j.submitted = s.tg.Now()
	got, app, err := c.RunJarIDs(ctx, jar, req)
	s.cancelAtEnd(owner, c, j.id)
	if err != nil {
		t.Fatalf("RunJar (%s, job id %s): %v", spec.name, j.id, err)
	}
	if got != j.id {
		t.Fatalf("RunJar (%s) answered job id %s, want the client-chosen %s", spec.name, got, j.id)
	}
	if s.v.AtLeast(2, 3) && app != flinkapi.ApplicationID(j.id) {
		t.Errorf("RunJar (%s) answered application id %q, want the job's %s", spec.name, app, j.id)
	}
	return j
}

// cancelAtEnd cancels the job when owner ends, unless it is already
// terminal or unknown, and waits a bounded time for it to end.
func (s *suite) cancelAtEnd(owner *testing.T, c *flinkapi.Client, id flinkapi.JobID) {
	owner.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.tg.Timeout)
		defer cancel()
		st, err := c.JobStatus(ctx, id)
		if err != nil || st.IsGloballyTerminal() {
			return
		}
		if err := c.CancelJob(ctx, id); err != nil {
			owner.Logf("cleanup: cancel job %s: %v", id, err)
			return
		}
		for range 100 {
			if st, err := c.JobStatus(ctx, id); err != nil || st.IsGloballyTerminal() {
				return
			}
			if s.tg.Sleep(ctx, s.tg.PollInterval) != nil {
				break
			}
		}
		owner.Logf("cleanup: job %s did not end after cancel", id)
	})
}

// waitState polls JobStatus until the job is in one of states. It fails at
// once when the job reaches another globally terminal state.
func (s *suite) waitState(t *testing.T, ctx context.Context, c *flinkapi.Client, id flinkapi.JobID, states ...flinkapi.JobState) flinkapi.JobState {
	t.Helper()
	var got flinkapi.JobState
	s.waitFor(t, ctx, fmt.Sprintf("job %s in %v", id, states), func() (bool, string) {
		st, err := c.JobStatus(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		got = st
		for _, want := range states {
			if st == want {
				return true, ""
			}
		}
		if st.IsGloballyTerminal() {
			t.Fatalf("job %s ended %s while waiting for %v%s", id, st, states, s.firstException(ctx, c, id))
		}
		return false, string(st)
	})
	return got
}

// waitRunning polls Job until the job and every vertex are RUNNING, which
// is when checkpoints and savepoints can be taken.
func (s *suite) waitRunning(t *testing.T, ctx context.Context, c *flinkapi.Client, id flinkapi.JobID) *flinkapi.JobDetails {
	t.Helper()
	var d *flinkapi.JobDetails
	s.waitFor(t, ctx, "all tasks of job "+string(id)+" running", func() (bool, string) {
		var err error
		d, err = c.Job(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		if d.State.IsGloballyTerminal() {
			t.Fatalf("job %s ended %s while starting%s", id, d.State, s.firstException(ctx, c, id))
		}
		if d.State != flinkapi.JobRunning || len(d.Vertices) == 0 {
			return false, string(d.State)
		}
		for _, v := range d.Vertices {
			if v.Status != string(flinkapi.JobRunning) {
				return false, v.Name + " " + v.Status
			}
		}
		return true, ""
	})
	return d
}

// firstException returns ": <exception>" for a failure message, or "".
func (s *suite) firstException(ctx context.Context, c *flinkapi.Client, id flinkapi.JobID) string {
	ex, err := c.JobExceptions(ctx, id, 1)
	if err != nil || len(ex.Entries) == 0 {
		return ""
	}
	return ": " + ex.Entries[0].ExceptionName + ": " + ex.Entries[0].Message
}

// waitCounts polls the test job's counts in dir until every one of keys
// keys has a count accepted by ok, and returns the counts read.
func (s *suite) waitCounts(t *testing.T, ctx context.Context, dir string, keys int, what string, ok func(key string, n int64) bool) map[string]int64 {
	t.Helper()
	var counts map[string]int64
	s.waitFor(t, ctx, what, func() (bool, string) {
		var err error
		counts, err = s.tg.ReadCounts(dir)
		if err != nil {
			return false, err.Error()
		}
		if len(counts) < keys {
			return false, formatCounts(counts)
		}
		for k, n := range counts {
			if !ok(k, n) {
				return false, formatCounts(counts)
			}
		}
		return true, ""
	})
	return counts
}

// firstCounts polls dir until keys keys have a count and returns, for each
// key, the first count seen.
func (s *suite) firstCounts(t *testing.T, ctx context.Context, dir string, keys int) map[string]int64 {
	t.Helper()
	first := map[string]int64{}
	s.waitFor(t, ctx, fmt.Sprintf("%d keys counted in %s", keys, dir), func() (bool, string) {
		counts, err := s.tg.ReadCounts(dir)
		if err != nil {
			return false, err.Error()
		}
		for k, n := range counts {
			if _, seen := first[k]; !seen {
				first[k] = n
			}
		}
		return len(first) >= keys, formatCounts(counts)
	})
	return first
}

func formatCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// apiError returns err as an *APIError or fails the test.
func apiError(t *testing.T, call string, err error) *flinkapi.APIError {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want an answer of Flink's with an error status", call)
	}
	var ae *flinkapi.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: %T %v, want an *flinkapi.APIError", call, err, err)
	}
	return ae
}

// wantStatus fails the test unless ae has the status code want.
func wantStatus(t *testing.T, call string, ae *flinkapi.APIError, want int) {
	t.Helper()
	if ae.StatusCode != want {
		t.Errorf("%s: status %d (%s), want %d", call, ae.StatusCode, ae.Message(), want)
	}
}

// checkTime fails the test unless ts lies between notBefore and the
// target's now, give or take clockSkew.
func (s *suite) checkTime(t *testing.T, what string, ts, notBefore time.Time) {
	t.Helper()
	now := s.tg.Now()
	switch {
	case ts.IsZero():
		t.Errorf("%s is zero", what)
	case ts.Before(notBefore.Add(-clockSkew)):
		t.Errorf("%s is %v, before %v", what, ts, notBefore)
	case ts.After(now.Add(clockSkew)):
		t.Errorf("%s is %v, after now (%v)", what, ts, now)
	}
}

// checkReadable fails the test unless msg is one readable line: no stack
// trace, no line breaks.
func checkReadable(t *testing.T, what, msg string) {
	t.Helper()
	switch {
	case strings.TrimSpace(msg) == "":
		t.Errorf("%s is empty", what)
	case strings.Contains(msg, "\tat ") || strings.Contains(msg, "\n"):
		t.Errorf("%s holds a stack trace or several lines: %q", what, msg)
	}
}

// maxCheckpointID returns the highest id in the statistics' history.
func maxCheckpointID(st *flinkapi.CheckpointStatistics) int64 {
	var id int64
	for _, h := range st.History {
		id = max(id, h.ID)
	}
	if st.LatestCompleted != nil {
		id = max(id, st.LatestCompleted.ID)
	}
	return id
}

// minCheckpointID returns the lowest id in the statistics' history, or 0.
func minCheckpointID(st *flinkapi.CheckpointStatistics) int64 {
	var id int64
	for i, h := range st.History {
		if i == 0 || h.ID < id {
			id = h.ID
		}
	}
	return id
}
