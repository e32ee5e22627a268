//go:build integration

package lifecycle_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestRealActionRequests carries out one-shot requests (JobSpec.Requests)
// on a real session cluster of FLINK_VERSION: a Savepoint token takes one
// savepoint of the running job (in the history and on disk), the same
// token again takes none; a Checkpoint token completes a new checkpoint;
// a Restart token stops the job with a savepoint and starts it again
// from it (a new job id, the counts continue). It logs, per request, the
// time from the token to the action's end and the requests sent:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run 'TestRealActionRequests$' -v ./lifecycle/
func TestRealActionRequests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	rt := &countingTransport{}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "requests/counter",
		PollInterval: time.Second, RetryInterval: time.Minute}
	const keys = 2
	out := cluster.OutDir("requests")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args: []string{"--out", out, "--keys", "2", "--rate", "40", "--parallelism", "1", "--checkpoint-interval", "1000", "--name", "requests-test"}},
		Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
	}
	var st lifecycle.JobStatus
	t.Cleanup(func() {
		if st.JobID != "" {
			_ = c.CancelJob(context.Background(), st.JobID)
		}
	})
	realUntil(t, ctx, "deployed", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Converged(spec) })
	flinkfixture.WaitCounts(t, ctx, out, keys, countsTimeout, func(_ string, n int64) bool { return n >= 20 })

	// request sets a token and calls until its action ended, logging the
	// time and the requests it took.
	request := func(kind lifecycle.RequestKind, token string, done func() bool) {
		t.Helper()
		setToken(&spec.Requests, kind, token)
		begin, sent := time.Now(), rt.n.Load()
		realUntil(t, ctx, string(kind)+" request", ctrl, &spec, &st, 90*time.Second, func() bool {
			ok := done() // called after every call
			return handledToken(st.RequestsHandled, kind) == token && !st.InFlight() && ok
		})
		t.Logf("Flink %s: %s request %q: %s %s after %v and %d requests: %s", v, kind, token, st.Action, st.Progress.Outcome,
			time.Since(begin).Round(time.Millisecond), rt.n.Load()-sent, st.Progress.Reason)
		if st.Progress.Outcome != lifecycle.OutcomeSucceeded {
			t.Fatalf("%s request: %s (%s)", kind, st.Progress.Outcome, st.Progress.Reason)
		}
	}

	// Savepoint: one new savepoint, in the history and in the savepoint
	// folder (on disk, or in the object store).
	job := st.JobID
	dirs := savepointDirs(t, cluster.SavepointURI, job)
	history := len(st.Savepoints.Records)
	request(lifecycle.RequestSavepoint, "sp-1", func() bool { return st.Action == lifecycle.ActionSavepointRequest })
	if got := savepointDirs(t, cluster.SavepointURI, job); got != dirs+1 {
		t.Errorf("savepoint dirs of job %s: %d, then %d", job, dirs, got)
	}
	if len(st.Savepoints.Records) != history+1 || st.Latest.Reason != savepoint.ReasonUser || !flinkfixture.LocationExists(st.Latest.Location) ||
		st.JobID != job {
		t.Errorf("history %d -> %d, latest %+v, job %s", history, len(st.Savepoints.Records), st.Latest, st.JobID)
	}
	// The same token again: nothing.
	sent := rt.n.Load()
	for range 5 {
		realCall(t, ctx, ctrl, spec, &st, false)
	}
	if got := savepointDirs(t, cluster.SavepointURI, job); got != dirs+1 || st.Action != lifecycle.ActionSavepointRequest || len(st.Savepoints.Records) != history+1 {
		t.Errorf("the same token again: savepoint dirs %d, action %s, history %d", got, st.Action, len(st.Savepoints.Records))
	}
	t.Logf("Flink %s: the same Savepoint token again: 5 calls, %d requests, no savepoint", v, rt.n.Load()-sent)

	// Checkpoint: a new completed checkpoint.
	stats, err := c.Checkpoints(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	var latest int64
	if stats.LatestCompleted != nil {
		latest = stats.LatestCompleted.ID
	}
	request(lifecycle.RequestCheckpoint, "cp-1", func() bool { return st.Action == lifecycle.ActionCheckpointRequest })
	if id := st.Checkpoint.CheckpointID; id <= latest || st.Progress.Checkpoint.ID != id {
		t.Errorf("checkpoint %d (progress %d), latest before %d", id, st.Progress.Checkpoint.ID, latest)
	}

	// Restart: stopped with a savepoint, started again from it; the
	// counts continue. The counts of the stopped job are removed before
	// the new job starts, so that the first ones read are the new job's.
	before, err := flinkfixture.ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	cleared := false
	request(lifecycle.RequestRestart, "restart-1", func() bool {
		p := st.Progress
		if !cleared && st.Action == lifecycle.ActionRestartRequest && p.Submit.NewJobID == "" && p.Phase == lifecycle.PhaseSubmit {
			// The old job was seen stopped; the new one is not submitted.
			clearCounts(t, out)
			cleared = true
		}
		return st.Action == lifecycle.ActionRestartRequest && st.JobID != job
	})
	if !cleared || st.Progress.Replace.RestoreFrom == "" || st.Progress.Replace.RestoreKind != policy.KindSavepoint {
		t.Errorf("restart: counts cleared %v, restored from %q (%s)", cleared, st.Progress.Replace.RestoreFrom, st.Progress.Replace.RestoreKind)
	}
	// The old job FINISHED (stopped with the savepoint); Flink's answers
	// may come from a cache filled before.
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		state, err := c.JobStatus(ctx, job)
		if err == nil && state == flinkapi.JobFinished {
			break
		}
		if time.Now().After(end) {
			t.Errorf("the old job %s: %s, %v", job, state, err)
			break
		}
	}
	countsContinue(t, ctx, out, keys, before, 20)
}

// savepointDirs counts the savepoint folders of job in the savepoint
// folder dir, a file: or s3:// URI (Flink names them savepoint-<the job
// id's first 6 characters>-<random>).
func savepointDirs(t *testing.T, dir string, job flinkapi.JobID) int {
	t.Helper()
	names, err := flinkfixture.ListChildren(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, "savepoint-"+string(job)[:6]+"-") {
			n++
		}
	}
	return n
}

// clearCounts removes the test job's count files in dir.
func clearCounts(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.count"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
}

func setToken(r *lifecycle.ActionRequests, kind lifecycle.RequestKind, token string) {
	switch kind {
	case lifecycle.RequestSavepoint:
		r.Savepoint = token
	case lifecycle.RequestCheckpoint:
		r.Checkpoint = token
	case lifecycle.RequestRestart:
		r.Restart = token
	case lifecycle.RequestRollback:
		r.Rollback = token
	}
}

func handledToken(r lifecycle.ActionRequests, kind lifecycle.RequestKind) string {
	switch kind {
	case lifecycle.RequestSavepoint:
		return r.Savepoint
	case lifecycle.RequestCheckpoint:
		return r.Checkpoint
	case lifecycle.RequestRestart:
		return r.Restart
	case lifecycle.RequestRollback:
		return r.Rollback
	}
	return ""
}
