//go:build integration

package lifecycle_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// countingTransport counts the requests sent through it.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// TestRealPreflight checks the preflight against a real session cluster
// of FLINK_VERSION: an upgrade to a version of the test job whose
// counter has another uid (--uid-suffix: Flink would not restore its
// state) is refused before the old job is touched, naming the counter's
// vertex with its state size in the job's newest snapshot, and the old
// job's counts go on; with AllowNonRestoredState the same upgrade goes
// ahead, its verdict saying which state is dropped and how large it is;
// a rescale beyond the cluster's task slots is refused before anything
// is stopped; a first deploy the cluster can never run is refused at
// once. It logs, per case, the time from the spec change to the verdict
// and the requests sent. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealPreflight -v ./lifecycle/
func TestRealPreflight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	rt := &countingTransport{}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "preflight/counter",
		PollInterval: time.Second, RetryInterval: time.Minute}
	out := cluster.OutDir("preflight")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args: []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "300"}},
		Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
	}
	var st lifecycle.JobStatus
	t.Cleanup(func() {
		if st.JobID != "" {
			_ = c.CancelJob(context.Background(), st.JobID)
		}
	})
	realUntil(t, ctx, "deployed", ctrl, &spec, &st, 3*time.Minute, func() bool { return st.Converged(spec) })
	old := st.JobID

	// verdict changes the spec and calls until the action it starts ends,
	// logging how long that took and the requests it sent.
	verdict := func(what string, change func(*lifecycle.JobSpec)) {
		t.Helper()
		change(&spec)
		begin, sent := time.Now(), rt.n.Load()
		realUntil(t, ctx, what, ctrl, &spec, &st, 2*time.Minute, func() bool {
			return st.Action != lifecycle.ActionDeploy && st.Progress.Done()
		})
		t.Logf("%s: %s after %v and %d requests: %s", what, st.Progress.Outcome, time.Since(begin).Round(time.Millisecond), rt.n.Load()-sent, st.Progress.Reason)
	}
	refused := func(what string, reason policy.PreflightReason) {
		t.Helper()
		p := st.Progress
		if p.Outcome != lifecycle.OutcomeBlocked || p.Replace.Decision != policy.ReasonPreflightRefused || p.Replace.Preflight == nil || p.Replace.Preflight.Verdict == nil ||
			!p.Replace.Preflight.Verdict.Has(reason) {
			t.Fatalf("%s: %s (%s): %s", what, p.Outcome, p.Replace.Decision, p.Reason)
		}
		d, err := c.Job(ctx, old)
		if err != nil || d.State != flinkapi.JobRunning || st.JobID != old {
			t.Fatalf("%s: the old job %s is %v (%v); the status names %s", what, old, d, err, st.JobID)
		}
	}

	before, err := flinkfixture.ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	verdict("uid changed", func(s *lifecycle.JobSpec) { s.Job.Args = append(s.Job.Args, "--uid-suffix", "-renamed") })
	refused("uid changed", policy.PreflightStateNotRestored)
	if !strings.Contains(st.Progress.Reason, "counter") {
		t.Errorf("the reason does not name the vertex: %s", st.Progress.Reason)
	}
	// The counter's vertex holds state in the job's newest snapshot, as
	// its details show it; the verdict names it with that size.
	pf := st.Progress.Replace.Preflight
	if !pf.StateRead || !pf.State.Known || pf.State.CheckpointID < 1 || len(pf.Verdict.Dropped) != 1 || !pf.Verdict.Dropped[0].SizeKnown ||
		pf.Verdict.Dropped[0].Bytes <= 0 || !strings.Contains(pf.Verdict.Dropped[0].Name, "counter") {
		t.Fatalf("uid changed: state read %+v, dropped %+v", pf.State, pf.Verdict.Dropped)
	}
	if d, err := c.CheckpointDetails(ctx, old, pf.State.CheckpointID); err != nil || d.Vertices[pf.Verdict.Dropped[0].ID].StateSize != pf.Verdict.Dropped[0].Bytes {
		t.Errorf("uid changed: dropped %+v; the details of snapshot %d: %+v, %v", pf.Verdict.Dropped, pf.State.CheckpointID, d, err)
	}
	t.Logf("uid changed: snapshot %d (savepoint %v), state by vertex %v; dropped %+v", pf.State.CheckpointID, pf.State.Savepoint, pf.State.Bytes, pf.Verdict.Dropped)
	flinkfixture.WaitCounts(t, ctx, out, 2, 2*time.Minute, func(k string, n int64) bool { return n > before[k]+20 })

	verdict("too many slots", func(s *lifecycle.JobSpec) {
		s.Job.Args = s.Job.Args[:len(s.Job.Args)-2]
		s.Job.Parallelism = 64
	})
	refused("too many slots", policy.PreflightNotEnoughSlots)

	first := &lifecycle.Controller{Env: realEnv(c), Name: "preflight/never", PollInterval: time.Second}
	never := lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Parallelism: 64,
		Args: []string{"--out", cluster.OutDir("preflight-never"), "--keys", "2"}}}
	var nst lifecycle.JobStatus
	begin, sent := time.Now(), rt.n.Load()
	realUntil(t, ctx, "never runs", first, &never, &nst, time.Minute, func() bool { return nst.Progress.Done() })
	t.Logf("first deploy that can never run: %s after %v and %d requests: %s", nst.Progress.Outcome, time.Since(begin).Round(time.Millisecond),
		rt.n.Load()-sent, nst.Progress.Reason)
	if nst.Progress.Outcome != lifecycle.OutcomeBlocked || nst.Progress.Replace.Decision != policy.ReasonPreflightRefused || nst.JobID != "" {
		t.Fatalf("first deploy of 64: %s (%s), job %q", nst.Progress.Outcome, nst.Progress.Replace.Decision, nst.JobID)
	}

	spec.Job.Parallelism = 0
	spec.Job.Args = append(spec.Job.Args, "--uid-suffix", "-renamed")
	spec.Update.AllowNonRestoredState = true
	begin, sent = time.Now(), rt.n.Load()
	realUntil(t, ctx, "upgraded", ctrl, &spec, &st, 3*time.Minute, func() bool { return st.JobID != old && st.Converged(spec) })
	t.Logf("uid changed, AllowNonRestoredState: upgraded after %v and %d requests; preflight %+v", time.Since(begin).Round(time.Millisecond),
		rt.n.Load()-sent, st.Progress.Replace.Preflight.Verdict)
	v := st.Progress.Replace.Preflight
	if v == nil || v.Verdict == nil || !v.Verdict.Allowed() {
		t.Fatalf("with AllowNonRestoredState the preflight: %+v", v)
	}
	if len(v.Verdict.Dropped) != 1 || v.Verdict.DroppedBytes() <= 0 || !strings.Contains(v.Verdict.Message(), "is dropped (allowNonRestoredState)") {
		t.Errorf("with AllowNonRestoredState the verdict does not say which state is dropped and how large it is: %+v", v.Verdict)
	}
}
