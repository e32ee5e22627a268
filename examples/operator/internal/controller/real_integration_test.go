//go:build integration

package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// countsTimeout bounds each wait for the test job's counts.
const countsTimeout = 90 * time.Second

// TestRealCluster runs the reconciler, on the real API server (envtest,
// KUBEBUILDER_ASSETS) and the wall clock, against a real Flink session
// cluster of FLINK_VERSION (or the one at FLINK_URL): it creates a FlinkJob, updates it with a savepoint
// and checks that the test job's counts continue, then deletes it and
// checks the final savepoint:
//
//	KUBEBUILDER_ASSETS=$(../../scripts/kube-assets.sh) FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealCluster -v ./internal/controller/
//
// The Flink jars are those scripts/flink.sh VERSION prepared in the
// repository's .cache/flink, or in FLINK_CACHE_DIR.
func TestRealCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	// flinkfixture finds the repository root above this module and
	// prepares the jars in its .cache/flink, or in FLINK_CACHE_DIR if set
	// (as scripts/flink.sh takes it).
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2, CacheDir: os.Getenv("FLINK_CACHE_DIR")})
	flink, err := flinkapi.NewClient(cluster.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	store, err := lifecycle.NewFileStore(filepath.Join(t.TempDir(), "restore-points"))
	if err != nil {
		t.Fatal(err)
	}
	_, k8s := kube(t)
	status := &statusLog{}
	r := &FlinkJobReconciler{
		Client: &recordingClient{Client: k8s, log: status}, Flink: flink, Recorder: events, Store: store,
		Shared:       &lifecycle.SharedObservation{Client: flink, MaxAge: 500 * time.Millisecond},
		Timing:       lifecycle.Timing{Poll: 200 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute},
		PollInterval: time.Second, RetryInterval: 5 * time.Second,
		Jars: jarsIn(t, filepath.Dir(cluster.TestJobJar)),
	}
	key := types.NamespacedName{Namespace: namespace(t), Name: "counter"}
	// The job's label and rate are secrets of a labelled Secret of the
	// FlinkJob's namespace: Flink gets them (the job runs only with a
	// number for a rate); no log line, event or stored status of the
	// operator shows the label.
	const label = "FLINKKIT-SECRET-operator-label-83b1"
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "job-secrets", Labels: map[string]string{LabelSecret: "true"}},
		Data: map[string][]byte{"label": []byte(label), "rate": []byte("40")}}); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	ctx = log.IntoContext(ctx, logs.logger())
	const keys = 3
	args := func(out string) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "${secret:job-secrets/rate}", "--parallelism", "1",
			"--checkpoint-interval", "1000", "--name", "operator-test", "--label", "${secret:job-secrets/label}"}
	}
	until := func(what string, done func(*v1alpha1.FlinkJob) bool) *v1alpha1.FlinkJob {
		t.Helper()
		return realUntil(t, ctx, r, k8s, key, events, what, done)
	}
	// running: the job runs the spec's job, stable (a checkpoint
	// completed after its start), and the FlinkJob is Ready.
	running := runs

	// Create.
	out1 := cluster.OutDir("operator-v1")
	job := &v1alpha1.FlinkJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: 1},
		Spec: v1alpha1.FlinkJobSpec{JobSpec: lifecycle.JobSpec{
			Job:    lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args(out1)},
			Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		}},
	}
	if err := k8s.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	job = until("create", running)
	first := job.Status.JobID
	if st, err := flink.JobStatus(ctx, first); err != nil || st != flinkapi.JobRunning {
		t.Fatalf("job %s is %s, %v", first, st, err)
	}
	flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 40 })

	// Update: stop with a savepoint, the new job starts from it.
	job.Spec.Job.Args = args(cluster.OutDir("operator-v2"))
	job.Generation++
	if err := k8s.Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	job = until("update", running)
	st := job.Status
	sp := st.Latest
	if st.JobID == first || st.Action != lifecycle.ActionUpgrade || sp.Reason != savepoint.ReasonUpdate || sp.JobID != first || !flinkfixture.LocationExists(sp.Location) {
		t.Fatalf("after the update: job %s, savepoint %+v; progress %+v", st.JobID, sp, st.Progress)
	}
	if st.Progress.Replace.RestoreFrom != sp.Location {
		t.Errorf("restored from %q, want %q", st.Progress.Replace.RestoreFrom, sp.Location)
	}
	if s, err := flink.JobStatus(ctx, first); err != nil || s != flinkapi.JobFinished {
		t.Errorf("old job %s, %v; want FINISHED", s, err)
	}
	atStop, err := flinkfixture.ReadCounts(out1)
	if err != nil || len(atStop) != keys {
		t.Fatalf("counts at the stop %v, %v", atStop, err)
	}
	firstCounts := map[string]int64{}
	out2 := job.Spec.Job.Args[1]
	flinkfixture.WaitCounts(t, ctx, out2, keys, countsTimeout, func(k string, n int64) bool {
		if _, ok := firstCounts[k]; !ok {
			firstCounts[k] = n
		}
		return n > atStop[k]+5
	})
	for k, n := range atStop {
		if firstCounts[k] < n {
			t.Errorf("key %s: first count %d after the update, %d at the stop: state not restored", k, firstCounts[k], n)
		}
	}
	t.Logf("counts at the stop %v, first after the update %v", atStop, firstCounts)

	// Delete: a final savepoint, then the finalizer goes.
	if err := k8s.Delete(ctx, job); err != nil {
		t.Fatal(err)
	}
	until("delete", func(j *v1alpha1.FlinkJob) bool {
		if j != nil && !controllerutil.ContainsFinalizer(j, Finalizer) {
			t.Fatalf("finalizer removed, FlinkJob still there: %+v", j.Status)
		}
		return j == nil
	})
	last, _, _ := status.stored()
	final := last.Status.Progress
	if last.Status.Action != lifecycle.ActionTeardown || final.Outcome != lifecycle.OutcomeSucceeded || !flinkfixture.LocationExists(final.Savepoint.Location) {
		t.Errorf("teardown %+v", final)
	}
	if s, err := flink.JobStatus(ctx, st.JobID); err != nil || s != flinkapi.JobFinished {
		t.Errorf("job after the delete: %s, %v; want FINISHED", s, err)
	}
	if rec, ok, err := store.Get(ctx, key.String()); err != nil || !ok || rec.Location != final.Savepoint.Location {
		t.Errorf("stored restore point %+v, %v, %v; want %s", rec, ok, err, final.Savepoint.Location)
	}
	t.Logf("events:\n%s", events)
	outputs := strings.Join(append(status.history(), events.String(), logs.String()), "\n")
	if len(status.history()) == 0 || logs.String() == "" {
		t.Fatalf("no stored status (%d) or log (%d bytes) to search for the secret", len(status.history()), len(logs.String()))
	}
	for _, v := range []string{label, base64.StdEncoding.EncodeToString([]byte(label))} {
		if strings.Contains(outputs, v) {
			t.Errorf("an output of the operator shows the secret label (%d bytes searched)", len(outputs))
		}
	}
	t.Logf("searched %d bytes of statuses, events and logs for the secret", len(outputs))
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// realGet returns the FlinkJob key, or nil once it is gone.
func realGet(t *testing.T, ctx context.Context, k8s client.Client, key types.NamespacedName) *v1alpha1.FlinkJob {
	t.Helper()
	var job v1alpha1.FlinkJob
	if err := k8s.Get(ctx, key, &job); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatal(err)
	}
	return &job
}

// realUntil reconciles the FlinkJob key with r as the controller's work
// queue would, waiting each RequeueAfter, until done holds; it fails the
// test, with the status and events, once ctx ends.
func realUntil(t *testing.T, ctx context.Context, r *FlinkJobReconciler, k8s client.Client, key types.NamespacedName,
	events *eventLog, what string, done func(*v1alpha1.FlinkJob) bool) *v1alpha1.FlinkJob {
	t.Helper()
	begin := time.Now()
	for n := 1; ; n++ {
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		if err != nil {
			t.Fatalf("%s: Reconcile: %v", what, err)
		}
		job := realGet(t, ctx, k8s, key)
		if done(job) {
			t.Logf("%s: %d reconciles, %v", what, n, time.Since(begin).Round(time.Millisecond))
			return job
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: not reached; status %+v\nevents:\n%s", what, job.Status, events)
		}
		time.Sleep(res.RequeueAfter)
	}
}

// history returns every status stored, as JSON.
func (l *statusLog) history() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.stores)
}
