package controller

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// timedReconciler records how long each reconcile took.
type timedReconciler struct {
	reconcile.Reconciler
	mu   sync.Mutex
	took []time.Duration
}

func (r *timedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	res, err := r.Reconciler.Reconcile(ctx, req)
	r.mu.Lock()
	r.took = append(r.took, time.Since(start))
	r.mu.Unlock()
	return res, err
}

// take returns the durations recorded since the last take.
func (r *timedReconciler) take() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.took
	r.took = nil
	return out
}

// quantile returns the q-quantile of d (sorted in place); 0 for none.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// scaleJobs is how many FlinkJobs TestAPIServerScale reconciles:
// FLINKKIT_SCALE_JOBS, or 20 (make test stays fast; make -C
// examples/operator scale runs 500).
func scaleJobs(t *testing.T) int {
	v := os.Getenv("FLINKKIT_SCALE_JOBS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("FLINKKIT_SCALE_JOBS=%q: want a positive number of FlinkJobs", v)
	}
	return n
}

// scaleOthers creates FLINKKIT_SCALE_OTHERS (default 0) Secrets and as
// many ConfigMaps of 8 KiB each in ns, none of them the operator's, as
// other applications have them; with FLINKKIT_SCALE_WIDE_CACHE=1 the
// manager caches them all (wide), as before CacheByObject.
func scaleOthers(t *testing.T, ns string) (int, bool) {
	k := 0
	if v := os.Getenv("FLINKKIT_SCALE_OTHERS"); v != "" {
		var err error
		if k, err = strconv.Atoi(v); err != nil || k < 0 {
			t.Fatalf("FLINKKIT_SCALE_OTHERS=%q: want a number", v)
		}
	}
	_, c := kube(t)
	blob := make([]byte, 8<<10)
	for i := range k {
		meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("other-%04d", i)}
		if err := c.Create(context.Background(), &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"key": blob}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: meta, BinaryData: map[string][]byte{"data": blob}}); err != nil {
			t.Fatal(err)
		}
	}
	return k, os.Getenv("FLINKKIT_SCALE_WIDE_CACHE") == "1"
}

// TestAPIServerScale: one manager, MaxConcurrentReconciles 8, reconciles
// many FlinkJobs on one flinktest JobManager through the real API server.
// It measures the reconcile latency while the jobs are deployed and at
// rest, the REST requests per job per poll interval at rest, the
// API-server writes at rest (none: a status is written only when it
// changed) and the heap of the process; the figures are logged:
//
//	make -C examples/operator scale   # 500 FlinkJobs, -v
func TestAPIServerScale(t *testing.T) {
	n := scaleJobs(t)
	const poll = 5 * time.Second
	srv, flink := realTimeFlink(t, flinktest.WithSlots(n))
	ns := namespace(t)
	others, wide := scaleOthers(t, ns)
	timed := &timedReconciler{}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	m := startManager(t, managerConfig{ns: ns, flink: flink, concurrent: 8, poll: poll, retry: 2 * time.Second, wideCache: wide,
		wrap: func(r reconcile.Reconciler) reconcile.Reconciler {
			// The session clusters' Secret watch, as cmd/operator has it.
			r.(*FlinkJobReconciler).Sessions = &SessionClusters{Client: r.(*FlinkJobReconciler).Client}
			timed.Reconciler = r
			return timed
		},
		setup: func(mgr ctrl.Manager, r *FlinkJobReconciler) error {
			sr := &SessionClusterReconciler{Client: mgr.GetClient(), Sessions: r.Sessions,
				Options: controller.Options{SkipNameValidation: ptr.To(true)}}
			return sr.SetupWithManager(mgr)
		}})

	jar := counterJar(t)
	start := time.Now()
	for i := range n {
		createJob(t, ns, fmt.Sprintf("job-%04d", i), counterSpec(jar))
	}
	_, c := kube(t)
	running := func() int {
		var list v1alpha1.FlinkJobList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		k := 0
		for i := range list.Items {
			if runs(&list.Items[i]) {
				k++
			}
		}
		return k
	}
	eventually(t, fmt.Sprintf("%d FlinkJobs running", n), 10*time.Minute, func() bool { return running() == n })
	deployed := time.Since(start)
	busy := timed.take()
	if live := liveJobs(srv); len(live) != n {
		t.Fatalf("%d live jobs on flinktest, want %d", len(live), n)
	}

	// At rest: every job has been requeued once before the window.
	time.Sleep(poll)
	timed.take()
	srv.ClearRequests()
	writes0, gets0 := m.writes.Load(), m.gets.Load()
	const window = 3 * poll
	time.Sleep(window)
	requests := len(srv.Requests())
	writes, reconciles := m.writes.Load()-writes0, m.gets.Load()-gets0
	rest := timed.take()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	perPoll := float64(requests) / float64(n) / float64(window/poll)
	t.Logf("%d FlinkJobs, MaxConcurrentReconciles 8, PollInterval %v: all running %v after the first create", n, poll, deployed.Round(time.Millisecond))
	t.Logf("reconcile latency while deploying (%d reconciles): p50 %v, p99 %v", len(busy),
		quantile(busy, 0.5).Round(time.Microsecond), quantile(busy, 0.99).Round(time.Microsecond))
	t.Logf("reconcile latency at rest (%d reconciles): p50 %v, p99 %v", len(rest),
		quantile(rest, 0.5).Round(time.Microsecond), quantile(rest, 0.99).Round(time.Microsecond))
	t.Logf("at rest over %v: %d reconciles (%.2f per job per poll interval), %d REST requests (%.2f per job per poll interval), %d API-server writes (%.2f per job per minute)",
		window, reconciles, float64(reconciles)/float64(n)/float64(window/poll), requests, perPoll, writes,
		float64(writes)/float64(n)/window.Minutes())
	t.Logf("heap in use after GC: %.1f MiB before the manager started, %.1f MiB at rest (manager, its cache, flinktest with %d jobs; %d Secrets and %d ConfigMaps of others in the namespace, wide cache %v); %d goroutines",
		float64(before.HeapInuse)/(1<<20), float64(after.HeapInuse)/(1<<20), n, others, others, wide, runtime.NumGoroutine())

	if writes != 0 {
		t.Errorf("%d API-server writes at rest, want none", writes)
	}
	if perPoll > float64(lifecycle.MaxRequestsPerCall) || requests == 0 {
		t.Errorf("%.2f REST requests per job per poll interval at rest; want some, at most %d", perPoll, lifecycle.MaxRequestsPerCall)
	}
	if reconciles < int64(n) {
		t.Errorf("%d reconciles at rest over %v for %d jobs polled every %v", reconciles, window, n, poll)
	}
}
