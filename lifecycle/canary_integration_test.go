//go:build integration

package lifecycle_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealCanary checks the restore canary against a real session
// cluster of FLINK_VERSION (BlueGreenPolicy.Canary): a compatible change
// of the test job passes its canary beside the running job, which is
// then upgraded with a savepoint, the counts going on; a change of the
// counter's maximum parallelism (--max-parallelism, which no plan shows)
// fails its canary, and the old job runs on untouched, its counts going
// on. After the deploy and each verdict the bucket's listing under the
// deployment's directories is what the ledger says (storageLedger.check).
// It logs, per case, the time from the spec change to the verdict and
// the requests sent. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealCanary -v ./lifecycle/
func TestRealCanary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2, ObjectStore: true})
	rt := &countingTransport{}
	c, err := flinkapi.NewClient(cluster.URL, flinkapi.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	// The jobs retain their checkpoints, and the Controller removes a
	// cancelled canary's through the cluster's storage.
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "canary/counter",
		PollInterval: time.Second, RetryInterval: time.Minute, Storage: flinkfixture.StateStorage{}}
	sl := newStorageLedger(t, ctrl, cluster)
	out := cluster.OutDir("canary")
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass,
			Args:               []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "300"},
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Update:    policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		BlueGreen: lifecycle.BlueGreenPolicy{Enabled: true, Canary: true, Window: policy.Duration(2 * time.Minute)},
	}
	var st lifecycle.JobStatus
	var canaries []flinkapi.JobID
	t.Cleanup(func() {
		for _, id := range append(canaries, st.JobID) {
			if id != "" {
				_ = c.CancelJob(context.Background(), id)
			}
		}
	})
	realUntil(t, ctx, "deployed", ctrl, &spec, &st, 3*time.Minute, func() bool { return st.Converged(spec) })
	old := st.JobID
	atRest(t, ctx, "deployed", ctrl, &spec, &st)
	sl.check("deployed", spec, &st)

	r := &realCanary{t: t, ctx: ctx, c: c, rt: rt, ctrl: ctrl, spec: &spec, st: &st, canaries: &canaries, out: out, checkpoints: cluster.CheckpointURI, sl: sl}
	r.passes(old)
	r.fails()
}

// realCanary is TestRealCanary's cluster, controller and status.
type realCanary struct {
	t        *testing.T
	ctx      context.Context
	c        *flinkapi.Client
	rt       *countingTransport
	ctrl     *lifecycle.Controller
	spec     *lifecycle.JobSpec
	st       *lifecycle.JobStatus
	canaries *[]flinkapi.JobID
	out      string
	// checkpoints is the cluster's checkpoint folder.
	checkpoints string
	sl          *storageLedger
}

// untilCanary calls until the canary ended, noting the canary jobs.
func (r *realCanary) untilCanary(what string) {
	r.t.Helper()
	st := r.st
	realUntil(r.t, r.ctx, what, r.ctrl, r.spec, st, 3*time.Minute, func() bool {
		if st.Action == lifecycle.ActionCanary && st.Progress.Submit.NewJobID != "" && !containsID(*r.canaries, st.Progress.Submit.NewJobID) {
			*r.canaries = append(*r.canaries, st.Progress.Submit.NewJobID)
		}
		return st.Action == lifecycle.ActionCanary && st.Progress.Done()
	})
}

// passes: a compatible change passes its canary, then the upgrade.
func (r *realCanary) passes(old flinkapi.JobID) {
	t, ctx, c, st, spec := r.t, r.ctx, r.c, r.st, r.spec
	before, err := flinkfixture.ReadCounts(r.out)
	if err != nil {
		t.Fatal(err)
	}
	spec.Job.Args = append(spec.Job.Args, "--name", "counter-v2")
	begin, sent := time.Now(), r.rt.n.Load()
	r.untilCanary("canary passed")
	canaries := *r.canaries
	t.Logf("compatible change: canary %s after %v and %d requests: %s", st.Progress.Outcome, time.Since(begin).Round(time.Millisecond),
		r.rt.n.Load()-sent, st.Progress.Reason)
	if st.Progress.Outcome != lifecycle.OutcomeSucceeded || st.JobID != old || len(canaries) != 1 {
		t.Fatalf("canary: %s: %s (job %s, old %s, canaries %v)", st.Progress.Outcome, st.Progress.Reason, st.JobID, old, canaries)
	}
	canarySavepoint := st.Progress.Savepoint.Location
	if s, err := c.JobStatus(ctx, canaries[0]); err != nil || s != flinkapi.JobCanceled { // (the details are cached)
		t.Fatalf("the canary %s: %s (%v)", canaries[0], s, err)
	}
	if d, err := c.Job(ctx, old); err != nil || d.State != flinkapi.JobRunning {
		t.Fatalf("the old job after its canary: %+v (%v)", d, err)
	}
	r.sl.check("canary passed", *spec, st)
	canaryDir := strings.TrimSuffix(r.checkpoints, "/") + "/" + string(canaries[0])
	held, err := flinkfixture.ListChildren(ctx, canaryDir)
	if err != nil || len(held) == 0 {
		t.Fatalf("the cancelled canary retained nothing under %s: %v (%v)", canaryDir, held, err)
	}
	realUntil(t, ctx, "upgraded", r.ctrl, spec, st, 3*time.Minute, func() bool { return st.JobID != old && st.Converged(*spec) })
	t.Logf("compatible change: canary and upgrade after %v and %d requests in all; restored from %s (canary's %s)",
		time.Since(begin).Round(time.Millisecond), r.rt.n.Load()-sent, st.UpgradeFrom.Location, canarySavepoint)
	if st.Action != lifecycle.ActionUpgrade || st.UpgradeFrom.Location == "" || st.UpgradeFrom.Location == canarySavepoint {
		t.Fatalf("upgrade: action %s, from %q (canary's %q)", st.Action, st.UpgradeFrom.Location, canarySavepoint)
	}
	countsContinue(t, ctx, r.out, 2, before, 20)
	// The canary retained its checkpoints when it was cancelled: they are
	// removed once the new job completed a checkpoint of its own.
	realUntil(t, ctx, "the canary's checkpoints removed", r.ctrl, spec, st, time.Minute, func() bool {
		return !slices.ContainsFunc(st.Replaced, func(rj lifecycle.ReplacedJob) bool { return rj.JobID == canaries[0] })
	})
	left, err := flinkfixture.ListChildren(ctx, canaryDir)
	t.Logf("the canary's checkpoint directory %s: %d entries before, %d after", canaryDir, len(held), len(left))
	if err != nil || len(left) != 0 {
		t.Errorf("the canary %s's checkpoint directory holds %v (%v)", canaries[0], left, err)
	}
	atRest(t, ctx, "upgraded after the canary", r.ctrl, spec, st)
	r.sl.check("upgraded after the canary", *spec, st)
}

// fails: a changed maximum parallelism fails its canary, the job runs on.
func (r *realCanary) fails() {
	t, ctx, c, st := r.t, r.ctx, r.c, r.st
	running := st.JobID
	before, err := flinkfixture.ReadCounts(r.out)
	if err != nil {
		t.Fatal(err)
	}
	r.spec.Job.Args = append(r.spec.Job.Args, "--max-parallelism", "64")
	begin, sent := time.Now(), r.rt.n.Load()
	r.untilCanary("canary failed")
	t.Logf("max parallelism changed: canary %s after %v and %d requests: %s", st.Progress.Outcome, time.Since(begin).Round(time.Millisecond),
		r.rt.n.Load()-sent, st.Progress.Reason)
	if st.Progress.Outcome != lifecycle.OutcomeCanaryFailed || st.JobID != running || st.Progress.Submit.NewJobID != "" {
		t.Fatalf("canary: %s: %s (job %s, running %s)", st.Progress.Outcome, st.Progress.Reason, st.JobID, running)
	}
	for range 3 {
		realCall(t, ctx, r.ctrl, *r.spec, st, false)
	}
	if st.Reason != lifecycle.ReasonCanaryFailed || st.JobID != running {
		t.Errorf("after the canary: %s: %s (job %s)", st.Reason, st.Message, st.JobID)
	}
	r.sl.check("canary failed", *r.spec, st)
	if d, err := c.Job(ctx, running); err != nil || d.State != flinkapi.JobRunning {
		t.Fatalf("the job after the failed canary: %+v (%v)", d, err)
	}
	flinkfixture.WaitCounts(t, ctx, r.out, 2, 2*time.Minute, func(k string, n int64) bool { return n > before[k]+20 })
}

func containsID(ids []flinkapi.JobID, id flinkapi.JobID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
