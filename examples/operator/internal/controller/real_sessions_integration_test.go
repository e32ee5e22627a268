//go:build integration

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestRealSessionClusters runs FlinkJobs on two real session clusters of
// FLINK_VERSION: the operator's default (--flink-url: the suite's shared
// cluster) and a second one started for the test, which a
// FlinkSessionCluster names. A FlinkJob naming it runs there and only
// there through create, an upgrade with a savepoint (the counts go on)
// and delete (a final savepoint on the second cluster); a FlinkJob naming
// none runs on the default. The FlinkSessionCluster's reconciler reports
// the second JobManager reachable with its real version and its
// housekeeping deletes a jar no FlinkJob uses, keeps the FlinkJob's, and
// reports (does not stop) a job no FlinkJob runs:
//
//	KUBEBUILDER_ASSETS=$(../../scripts/kube-assets.sh) FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealSessionClusters -v ./internal/controller/
func TestRealSessionClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	cfg := flinkfixture.Config{Slots: 2, CacheDir: os.Getenv("FLINK_CACHE_DIR")}
	first := flinkfixture.SharedForTest(t, ctx, cfg)
	second := flinkfixture.StartForTest(t, ctx, cfg)
	t.Logf("second cluster started in %v", time.Since(start).Round(time.Millisecond))
	newClient := func(url string) *flinkapi.Client {
		c, err := flinkapi.NewClient(url, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	flink1, flink2 := newClient(first.URL), newClient(second.URL)

	_, k8s := kube(t)
	events := &eventLog{}
	sessions := &SessionClusters{Client: k8s, Options: []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)},
		SharedMaxAge: 500 * time.Millisecond}
	r := &FlinkJobReconciler{
		Client: k8s, Flink: flink1, Recorder: events, Sessions: sessions,
		Store:        &lifecycle.MemoryStore{},
		Shared:       &lifecycle.SharedObservation{Client: flink1, MaxAge: 500 * time.Millisecond},
		Timing:       lifecycle.Timing{Poll: 200 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute},
		PollInterval: time.Second, RetryInterval: 5 * time.Second,
		Jars: jarsIn(t, filepath.Dir(first.TestJobJar)),
	}
	ns := namespace(t)
	hk := v1alpha1.Housekeeping{Interval: policy.Duration(10 * time.Minute), JarGrace: policy.Duration(time.Millisecond),
		JobGrace: policy.Duration(time.Millisecond)}
	sc := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
		Spec: v1alpha1.FlinkSessionClusterSpec{URL: second.URL, Housekeeping: hk}}
	if err := k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}

	const keys = 3
	args := func(out, name string) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", "1",
			"--checkpoint-interval", "1000", "--name", name}
	}
	get := func(key types.NamespacedName) *v1alpha1.FlinkJob { return realGet(t, ctx, k8s, key) }
	until := func(key types.NamespacedName, what string, done func(*v1alpha1.FlinkJob) bool) *v1alpha1.FlinkJob {
		t.Helper()
		return realUntil(t, ctx, r, k8s, key, events, what, done)
	}
	ids := func(c *flinkapi.Client) []flinkapi.JobID {
		t.Helper()
		jobs, err := c.JobsOverview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []flinkapi.JobID
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	create := func(key types.NamespacedName, cluster, out string) {
		t.Helper()
		job := &v1alpha1.FlinkJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec: v1alpha1.FlinkJobSpec{SessionCluster: cluster, JobSpec: lifecycle.JobSpec{
				Job:    lifecycle.JobTemplate{JarFile: first.TestJobJar, EntryClass: first.TestJobClass, Args: args(out, key.Name)},
				Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
			}},
		}
		if err := k8s.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
	}

	// A FlinkJob naming the second cluster runs there, not on the default.
	onSecond := types.NamespacedName{Namespace: ns, Name: "on-second"}
	out1 := second.OutDir("on-second-v1")
	create(onSecond, "second", out1)
	job := until(onSecond, "create on the second cluster", runs)
	firstID := job.Status.JobID
	if s, err := flink2.JobStatus(ctx, firstID); err != nil || s != flinkapi.JobRunning {
		t.Fatalf("job %s on the second cluster: %s, %v; want RUNNING", firstID, s, err)
	}
	if slices.Contains(ids(flink1), firstID) {
		t.Fatalf("job %s is on the default cluster too", firstID)
	}
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 40 })

	// A FlinkJob naming none runs on the default cluster.
	onDefault := types.NamespacedName{Namespace: ns, Name: "on-default"}
	create(onDefault, "", first.OutDir("on-default"))
	defaultID := until(onDefault, "create on the default cluster", runs).Status.JobID
	if s, err := flink1.JobStatus(ctx, defaultID); err != nil || s != flinkapi.JobRunning {
		t.Fatalf("job %s on the default cluster: %s, %v; want RUNNING", defaultID, s, err)
	}
	if slices.Contains(ids(flink2), defaultID) {
		t.Fatalf("job %s is on the second cluster too", defaultID)
	}

	// Housekeeping of the second cluster: a stray jar and a job no FlinkJob
	// runs, beside the FlinkJob's own jar and job.
	stray, err := flink2.UploadJar(ctx, first.TestJobJar)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := flink2.RunJar(ctx, stray, flinkapi.RunJarRequest{EntryClass: first.TestJobClass,
		ProgramArgs: args(second.OutDir("foreign"), "foreign")})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the 1 ms graces
	sr := &SessionClusterReconciler{Client: k8s, Sessions: sessions, DefaultURL: first.URL, Recorder: events}
	scKey := types.NamespacedName{Namespace: ns, Name: "second"}
	if _, err := sr.Reconcile(ctx, ctrl.Request{NamespacedName: scKey}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, scKey, sc); err != nil {
		t.Fatal(err)
	}
	wantVersion := os.Getenv("FLINK_VERSION")
	if c := reachableCondition(sc); c == nil || c.Status != metav1.ConditionTrue || (wantVersion != "" && sc.Status.FlinkVersion != wantVersion) {
		t.Errorf("FlinkSessionCluster status %+v, want reachable, Flink %s", sc.Status, wantVersion)
	}
	jars, err := flink2.ListJars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []flinkapi.JarID
	for _, j := range jars {
		left = append(left, j.ID)
	}
	if used := job.Status.JarID; !slices.Equal(left, []flinkapi.JarID{used}) {
		t.Errorf("jars on the second cluster after the housekeeping %v, want only the FlinkJob's %s (not the stray %s)", left, used, stray)
	}
	if sc.Status.DeletedJars != 1 || !slices.Equal(sc.Status.UnclaimedJobs, []string{string(foreign)}) {
		t.Errorf("FlinkSessionCluster status %+v, want 1 jar deleted and %s unclaimed", sc.Status, foreign)
	}
	if s, err := flink2.JobStatus(ctx, foreign); err != nil || s != flinkapi.JobRunning {
		t.Errorf("the unclaimed job: %s, %v; want it left running", s, err)
	}
	if err := flink2.CancelJob(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	// Upgrade with a savepoint on the second cluster: the counts go on.
	job = get(onSecond)
	job.Spec.Job.Args = args(second.OutDir("on-second-v2"), onSecond.Name)
	if err := k8s.Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	job = until(onSecond, "upgrade on the second cluster", runs)
	st := job.Status
	if st.JobID == firstID || st.Latest.Reason != savepoint.ReasonUpdate || st.Latest.JobID != firstID ||
		st.Progress.Replace.RestoreFrom != st.Latest.Location || !flinkfixture.LocationExists(st.Latest.Location) {
		t.Fatalf("after the upgrade: job %s, savepoint %+v, progress %+v", st.JobID, st.Latest, st.Progress)
	}
	if s, err := flink2.JobStatus(ctx, firstID); err != nil || s != flinkapi.JobFinished {
		t.Errorf("old job %s: %s, %v; want FINISHED", firstID, s, err)
	}
	if s, err := flink2.JobStatus(ctx, st.JobID); err != nil || s != flinkapi.JobRunning {
		t.Errorf("new job %s on the second cluster: %s, %v; want RUNNING", st.JobID, s, err)
	}
	if slices.Contains(ids(flink1), st.JobID) {
		t.Errorf("the upgraded job %s is on the default cluster", st.JobID)
	}
	atStop, err := flinkfixture.ReadCounts(out1)
	if err != nil || len(atStop) != keys {
		t.Fatalf("counts at the stop %v, %v", atStop, err)
	}
	firstCounts := map[string]int64{}
	flinkfixture.WaitCounts(t, ctx, job.Spec.Job.Args[1], keys, countsTimeout, func(k string, n int64) bool {
		if _, ok := firstCounts[k]; !ok {
			firstCounts[k] = n
		}
		return n > atStop[k]+5
	})
	for k, n := range atStop {
		if firstCounts[k] < n {
			t.Errorf("key %s: first count %d after the upgrade, %d at the stop: state not restored", k, firstCounts[k], n)
		}
	}

	// Delete both: each ends with a final savepoint on its own cluster.
	for _, c := range []struct {
		key   types.NamespacedName
		flink *flinkapi.Client
	}{{onSecond, flink2}, {onDefault, flink1}} {
		before := get(c.key).Status.JobID
		if err := k8s.Delete(ctx, get(c.key)); err != nil {
			t.Fatal(err)
		}
		until(c.key, "delete "+c.key.Name, func(j *v1alpha1.FlinkJob) bool { return j == nil })
		if s, err := c.flink.JobStatus(ctx, before); err != nil || s != flinkapi.JobFinished {
			t.Errorf("%s: job %s after the delete: %s, %v; want FINISHED on its cluster", c.key.Name, before, s, err)
		}
		rec, ok, err := r.Store.Get(ctx, c.key.String())
		if err != nil || !ok || !flinkfixture.LocationExists(rec.Location) {
			t.Errorf("%s: restore point %+v, %v, %v; want the final savepoint on disk", c.key.Name, rec, ok, err)
		}
	}
	t.Logf("events:\n%s", events)
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
