//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// requestLog records the method and path of the requests sent through it.
type requestLog struct {
	mu   sync.Mutex
	sent []string
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.sent = append(l.sent, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// since is the requests sent after the first n.
func (l *requestLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent[n:]...)
}

func (l *requestLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent)
}

// TestRealAdoptAndDetach starts the test job through the REST API, as a
// user of the Flink UI would, takes a savepoint of it by hand, adopts it with a Controller whose spec names
// the same jar and arguments (no second job starts, and the adoption
// sends GETs only, and records the savepoint), upgrades it by a change of the spec (the counts
// continue across), then deletes it with OnDelete Detach: the new job is
// still RUNNING afterwards, and Delete sent nothing. It logs the time to
// adopt and the requests sent. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run 'TestRealAdoptAndDetach$' -v ./lifecycle/
func TestRealAdoptAndDetach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster, user := realSession(t, ctx, 2)
	log := &requestLog{}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry), flinkapi.WithHTTPClient(&http.Client{Transport: log}))
	if err != nil {
		t.Fatal(err)
	}
	const keys = 3
	retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	args := func(out string) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", "1",
			"--checkpoint-interval", "300", "--name", "adopt-test"}
	}

	// The user uploads the jar and runs it by hand.
	out1 := cluster.OutDir("adopt-by-hand")
	jar, err := user.UploadJar(ctx, cluster.TestJobJar)
	if err != nil {
		t.Fatal(err)
	}
	job, err := user.RunJar(ctx, jar, flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out1), FlinkConfiguration: retain})
	if err != nil {
		t.Fatal(err)
	}
	var st lifecycle.JobStatus
	t.Cleanup(func() {
		for _, id := range []flinkapi.JobID{job, st.JobID} {
			if id != "" {
				_ = user.CancelJob(context.Background(), id)
			}
		}
	})
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 20 })
	// The user takes a savepoint of it by hand, which its checkpoint
	// statistics show (Flink caches them for a few seconds).
	var taken lifecycle.Progress
	if res, err := lifecycle.Run(ctx, &lifecycle.TakeSavepoint{Env: realEnv(user), Job: job}, &taken, nil); err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("savepoint by hand: %+v, %v: %s", res, err, taken.Reason)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		stats, err := user.Checkpoints(ctx, job)
		if err == nil && stats.LatestSavepoint != nil && stats.LatestSavepoint.ExternalPath == taken.Savepoint.Location {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the savepoint %s is not in the job's checkpoint statistics: %+v, %v", taken.Savepoint.Location, stats, err)
		}
	}

	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "adopt/counter", PollInterval: time.Second, RetryInterval: time.Minute}
	spec := lifecycle.JobSpec{
		Job:   lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args(out1), FlinkConfiguration: retain},
		Adopt: job,
	}

	// The adoption: GETs only, the same job running alone. One call
	// adopts it, unless Flink answers the checkpoint statistics from its
	// cache with the latest checkpoint discarded (the job checkpoints
	// every 300 ms): then the next call, after the cache, reads them again.
	begin, sent := time.Now(), log.len()
	res := realCall(t, ctx, ctrl, spec, &st, false)
	calls := 1
	for ; res.Outcome == "" && st.Action == "" && calls < 10; calls++ {
		res = realCall(t, ctx, ctrl, spec, &st, false)
	}
	took, reqs := time.Since(begin), log.since(sent)
	t.Logf("ADOPT (Flink %s): job %s adopted in %v with %d calls, %d requests (%s): %s", cluster.FlinkVersion, job, took.Round(time.Millisecond),
		calls, len(reqs), strings.Join(reqs, ", "), st.Message)
	if res.Outcome != lifecycle.OutcomeSucceeded || st.Action != lifecycle.ActionAdopt || st.JobID != job || st.DeployedAt.IsZero() ||
		st.Latest.JobID != job || st.Latest.Location == "" || len(st.Savepoints.Records) != 1 || st.Savepoints.Records[0].Location != taken.Savepoint.Location {
		t.Fatalf("adopt: %+v; status %s %s: %s (job %s, latest %+v)", res, st.State, st.Reason, st.Message, st.JobID, st.Latest)
	}
	for _, r := range reqs {
		if !strings.HasPrefix(r, "GET ") {
			t.Errorf("the adoption sent %s", r)
		}
	}
	if live := liveJobs(t, ctx, cluster, user); len(live) != 1 || live[0] != job {
		t.Fatalf("live jobs %v, want only %s", live, job)
	}
	sent = log.len()
	realUntil(t, ctx, "adopted and stable", ctrl, &spec, &st, time.Minute, func() bool { return st.Converged(spec) })
	for _, r := range log.since(sent) {
		if !strings.HasPrefix(r, "GET ") {
			t.Errorf("at rest after the adoption, the Controller sent %s", r)
		}
	}
	if st.JobID != job {
		t.Errorf("adopted status: job %s", st.JobID)
	}

	// A change of the spec upgrades the adopted job: the counts continue.
	out2 := cluster.OutDir("adopt-upgraded")
	spec.Job.Args = args(out2)
	begin = time.Now()
	realUntil(t, ctx, "upgraded", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.JobID != job && st.Converged(spec) })
	t.Logf("upgrade of the adopted job (Flink %s): %v; from %s", cluster.FlinkVersion, time.Since(begin).Round(time.Millisecond), st.UpgradeFrom.Location)
	if st.UpgradeFrom.JobID != job || st.UpgradeFrom.Location == "" {
		t.Errorf("upgraded from %+v, want a savepoint of %s", st.UpgradeFrom, job)
	}
	if s, err := user.JobStatus(ctx, job); err != nil || s != flinkapi.JobFinished {
		t.Errorf("the adopted job is %s, %v after the upgrade", s, err)
	}
	c1, err := flinkfixture.ReadCounts(out1)
	if err != nil || len(c1) != keys {
		t.Fatalf("counts of the adopted job %v, %v", c1, err)
	}
	countsContinue(t, ctx, out2, keys, c1, 3)

	// Delete with OnDelete Detach: nothing is sent, the job runs on.
	upgraded := st.JobID
	spec.OnDelete = lifecycle.DeleteDetach
	sent = log.len()
	res = realCall(t, ctx, ctrl, spec, &st, true)
	if reqs := log.since(sent); !res.Done || len(reqs) != 0 || !st.Deleted || st.Detached != upgraded || st.Reason != lifecycle.ReasonDetached {
		t.Fatalf("detach: %+v, requests %v; status %s %s: %s", res, reqs, st.State, st.Reason, st.Message)
	}
	t.Logf("DETACH (Flink %s): %+v with 0 requests: %s", cluster.FlinkVersion, res, st.Message)
	before, err := flinkfixture.ReadCounts(out2)
	if err != nil {
		t.Fatal(err)
	}
	flinkfixture.WaitCounts(t, ctx, out2, keys, countsTimeout, func(k string, n int64) bool { return n > before[k]+3 })
	if s, err := user.JobStatus(ctx, upgraded); err != nil || s != flinkapi.JobRunning {
		t.Errorf("the detached job is %s, %v", s, err)
	}
	if live := liveJobs(t, ctx, cluster, user); len(live) != 1 || live[0] != upgraded {
		t.Errorf("live jobs %v, want only the detached %s", live, upgraded)
	}
}

// liveJobs lists the jobs of this test (named adopt-test) that have not
// ended.
func liveJobs(t *testing.T, ctx context.Context, cluster *flinkfixture.Cluster, c *flinkapi.Client) []flinkapi.JobID {
	t.Helper()
	all, err := c.JobsOverview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []flinkapi.JobID
	for _, j := range all {
		if !cluster.ExistedBefore(string(j.ID)) && j.Name == "adopt-test" && !j.State.IsGloballyTerminal() {
			out = append(out, j.ID)
		}
	}
	return out
}
