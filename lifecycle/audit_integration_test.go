//go:build integration

package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealAudit audits a deployment on a real session cluster of
// FLINK_VERSION whose state is in an object store (the shared cluster
// of `make integration`, or one started with its own store): periodic
// savepoints with a retention of 2 and an upgrade from a savepoint, the
// job retaining its checkpoints, a foreign job's savepoint put beside
// the deployment's. Every savepoint of the history is found (Missing
// only for one whose disposal Flink finished, its record going at the
// next call), the running job's retained checkpoint is Retained, the
// foreign savepoint Foreign, and no entry of another job is counted as
// the deployment's. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run '^TestRealAudit$' -v ./lifecycle/
func TestRealAudit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2, ObjectStore: true})
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctrl := &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: "audit/counter",
		PollInterval: time.Second, RetryInterval: 5 * time.Second, Storage: flinkfixture.StateStorage{}}
	args := func(out string) []string {
		return []string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "1000"}
	}
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args(cluster.OutDir("audit-1")),
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Update:     policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		Savepoints: lifecycle.SavepointPolicy{Interval: policy.Duration(2 * time.Second), MaxCount: 2},
	}
	var st lifecycle.JobStatus
	jobs := map[flinkapi.JobID]bool{}
	t.Cleanup(func() {
		for id := range jobs {
			_ = c.CancelJob(context.Background(), id)
		}
	})
	realUntil(t, ctx, "deployed", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Converged(spec) })
	jobs[st.JobID] = true
	begin := time.Now()
	realUntil(t, ctx, "periodic savepoints", ctrl, &spec, &st, time.Minute, func() bool { return time.Since(begin) > 8*time.Second })
	spec.Job.Args = args(cluster.OutDir("audit-2"))
	realUntil(t, ctx, "upgraded", ctrl, &spec, &st, 2*time.Minute, func() bool { return st.Converged(spec) })
	jobs[st.JobID] = true
	begin = time.Now()
	realUntil(t, ctx, "periodic savepoints after the upgrade", ctrl, &spec, &st, time.Minute, func() bool {
		return time.Since(begin) > 6*time.Second && !st.InFlight()
	})

	// A foreign job's savepoint beside the deployment's.
	dir := cluster.SavepointURI
	if len(st.Savepoints.Records) > 0 {
		loc := st.Savepoints.Records[0].Location
		dir = loc[:strings.LastIndex(strings.TrimSuffix(loc, "/"), "/")]
	}
	foreign := dir + "/savepoint-f0f0f0-0123456789ab"
	key, ok := cluster.Store.Key(foreign + "/_metadata")
	if !ok {
		t.Fatalf("%s is not in the cluster's store", foreign)
	}
	if err := cluster.Store.Client().Put(ctx, cluster.Store.Bucket, key, []byte("not a savepoint of ours")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flinkfixture.DeleteLocation(context.Background(), foreign) })

	a, err := ctrl.Audit(ctx, spec, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: history of %d, latest %s\n%s", cluster.FlinkVersion, len(st.Savepoints.Records), st.Latest.Location, a)
	kinds := map[string]lifecycle.AuditKind{}
	for _, e := range a.Entries {
		kinds[strings.TrimSuffix(e.Path, "/")] = e.Kind
	}
	missing := 0
	for _, r := range st.Savepoints.Records {
		switch k := kinds[strings.TrimSuffix(r.Location, "/")]; {
		case k == lifecycle.AuditMissing && r.Location == st.Disposing.Location:
			missing++
		case k != lifecycle.AuditInHistory && k != lifecycle.AuditRestorePoint:
			t.Errorf("history record %s: %q, want it found", r.Location, k)
		}
	}
	if k := kinds[foreign]; k != lifecycle.AuditForeign {
		t.Errorf("the foreign savepoint %s: %q, want Foreign", foreign, k)
	}
	retained := 0
	for _, e := range a.Entries {
		ours := e.JobID != "" && (jobs[e.JobID] || strings.HasPrefix(e.Path, dir+"/savepoint-"+string(st.JobID)[:6]))
		switch {
		case e.Kind == lifecycle.AuditRetained && e.JobID == st.JobID && strings.Contains(e.Path, "/chk-"):
			retained++
		case e.Kind == lifecycle.AuditRetained:
		case e.Kind == lifecycle.AuditForeign && ours:
			t.Errorf("%s of the deployment's job %s: Foreign", e.Path, e.JobID)
		case e.Kind != lifecycle.AuditForeign && e.JobID != "" && !jobs[e.JobID]:
			t.Errorf("%s of job %s, not the deployment's: %s", e.Path, e.JobID, e.Kind)
		}
	}
	if retained == 0 {
		t.Errorf("no retained checkpoint of the running job %s", st.JobID)
	}
	if a.Count(lifecycle.AuditMissing) != missing || a.Count(lifecycle.AuditUnread) != 0 || a.Truncated {
		t.Errorf("totals %v, truncated %v: want nothing Missing (but %d being disposed of) or Unread", a.Totals, a.Truncated, missing)
	}
	if a.Requests > lifecycle.MaxAuditRequests || a.FlinkRequests > 1 {
		t.Errorf("%d storage requests, %d to Flink; want at most %d, and at most 1 (the checkpoint directory)", a.Requests, a.FlinkRequests, lifecycle.MaxAuditRequests)
	}
}
