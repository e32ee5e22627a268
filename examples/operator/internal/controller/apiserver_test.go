package controller

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// The tests in the *apiserver*_test.go files run against a real
// kube-apiserver and etcd, started once per test binary by
// controller-runtime's envtest from the binaries in KUBEBUILDER_ASSETS
// (scripts/kube-assets.sh builds them; the Makefile sets the variable).
// Without them those tests fail: they are never skipped.

var apiServer struct {
	once   sync.Once
	env    *envtest.Environment
	cfg    *rest.Config
	client client.Client
	err    error
	nsSeq  atomic.Int64
	scheme *runtime.Scheme
}

func TestMain(m *testing.M) {
	code := m.Run()
	os.RemoveAll(testJarRoot())
	if apiServer.env != nil {
		if err := apiServer.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}
	os.Exit(code)
}

// kubeVersion is the Kubernetes release whose staging modules this
// module requires, as scripts/kube-assets.sh reads it: k8s.io/api v0.37.2
// is Kubernetes 1.37.2.
func kubeVersion() string {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/api" && strings.HasPrefix(f[1], "v0.") {
			return "1." + strings.TrimPrefix(f[1], "v0.")
		}
	}
	return ""
}

// assetsDir is the folder with kube-apiserver and etcd: KUBEBUILDER_ASSETS,
// or the folder scripts/kube-assets.sh builds them into by default.
func assetsDir() (string, error) {
	hint := "run scripts/kube-assets.sh (from the repository root; it builds kube-apiserver and etcd from the Go module proxy) and set KUBEBUILDER_ASSETS to the folder it prints, or use make -C examples/operator unit, which does both"
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		v := kubeVersion()
		cache := os.Getenv("KUBE_CACHE_DIR")
		if cache == "" {
			cache = filepath.Join("..", "..", "..", "..", ".cache", "kube")
		}
		dir = filepath.Join(cache, v)
		if v == "" {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and the k8s.io/api version is unknown: %s", hint)
		}
		if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and %s has no kube-apiserver: %s", dir, hint)
		}
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, bin)); err != nil || fi.IsDir() {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s binary: %s", dir, bin, hint)
		}
	}
	return filepath.Abs(dir)
}

// kube starts the API server once and returns its configuration and a
// client (no cache) for the tests' own reads and writes.
func kube(t testing.TB) (*rest.Config, client.Client) {
	t.Helper()
	apiServer.once.Do(func() {
		dir, err := assetsDir()
		if err != nil {
			apiServer.err = err
			return
		}
		// envtest reads the variable itself, before BinaryAssetsDirectory.
		if err := os.Setenv("KUBEBUILDER_ASSETS", dir); err != nil {
			apiServer.err = err
			return
		}
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			apiServer.err = err
			return
		}
		if err := v1alpha1.AddToScheme(scheme); err != nil {
			apiServer.err = err
			return
		}
		env := &envtest.Environment{
			BinaryAssetsDirectory: dir,
			CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd")},
			ErrorIfCRDPathMissing: true,
			Scheme:                scheme,
		}
		start := time.Now()
		cfg, err := env.Start()
		if err != nil {
			apiServer.err = fmt.Errorf("starting kube-apiserver and etcd from %s: %w", dir, err)
			return
		}
		fmt.Fprintf(os.Stderr, "kube-apiserver and etcd from %s started in %v\n", dir, time.Since(start).Round(time.Millisecond))
		// The tests write quickly; the default limits (5 per second)
		// would make them wait on the client, not the server.
		cfg.QPS, cfg.Burst = 1000, 2000
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			apiServer.err = err
			_ = env.Stop()
			return
		}
		apiServer.env, apiServer.cfg, apiServer.client, apiServer.scheme = env, cfg, c, scheme
	})
	if apiServer.err != nil {
		t.Fatal(apiServer.err)
	}
	return rest.CopyConfig(apiServer.cfg), apiServer.client
}

// namespace creates a namespace of its own for the test.
func namespace(t testing.TB) string {
	t.Helper()
	_, c := kube(t)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), apiServer.nsSeq.Add(1))
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// newKubeHarness is newHarness with the real API server in place of the
// fake client: the FlinkJob lives in a namespace of the test's own, and
// the test still drives each reconcile on flinktest's manual clock.
func newKubeHarness(t *testing.T, opts ...flinktest.Option) *harness {
	t.Helper()
	h := newHarness(t, opts...)
	_, c := kube(t)
	h.k8s = c
	h.r.Client = &recordingClient{Client: c, log: h.status}
	h.key.Namespace = namespace(t)
	return h
}

// testManager is a controller-runtime manager on the API server running
// the reconciler, as cmd/operator runs it, against flinktest on the wall
// clock.
type testManager struct {
	mgr     ctrl.Manager
	cancel  context.CancelFunc
	done    chan error
	gets    atomic.Int64 // the reconciles it ran: each starts with a Get
	writes  atomic.Int64 // the reconciler's writes to the API server
	metrics string       // its metrics endpoint, if asked for
}

type managerConfig struct {
	ns          string // the namespace whose FlinkJobs it reconciles
	flink       lifecycle.API
	leaderNS    string // set: leader election, leases in this namespace
	metrics     bool
	concurrent  int
	recorder    bool
	poll, retry time.Duration
	// shared and resync, if set, are the reconciler's Shared and Resync
	// (the watch of the overview).
	shared *lifecycle.SharedObservation
	resync time.Duration
	// logger, if set, is the manager's logger (and its reconcilers').
	logger *logr.Logger
	// wideCache caches every Secret, ConfigMap, Service and Deployment
	// of the namespace, as the operator did before CacheByObject.
	wideCache bool
	// wrap, if set, wraps the reconciler the manager runs.
	wrap func(reconcile.Reconciler) reconcile.Reconciler
	// setup, if set, registers more with the manager before it starts.
	setup func(ctrl.Manager, *FlinkJobReconciler) error
}

// startManager starts a manager, and stops it when the test ends.
func startManager(t testing.TB, mc managerConfig) *testManager {
	t.Helper()
	cfg, _ := kube(t)
	tm := &testManager{done: make(chan error, 1)}
	opts := ctrl.Options{
		Scheme:                 apiServer.scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The namespaces of other tests keep their FlinkJobs.
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{mc.ns: {}}, ByObject: CacheByObject()},
	}
	if mc.wideCache {
		opts.Cache.ByObject = nil
	}
	if mc.logger != nil {
		opts.Logger = *mc.logger
	}
	if mc.ns == "" {
		t.Fatal("startManager: no namespace")
	}
	if mc.metrics {
		tm.metrics = freeAddress(t)
		opts.Metrics.BindAddress = tm.metrics
	}
	if mc.leaderNS != "" {
		opts.LeaderElection = true
		opts.LeaderElectionID = "flinkjob.flinkkit.dev"
		opts.LeaderElectionNamespace = mc.leaderNS
		opts.LeaseDuration = ptr.To(2 * time.Second)
		opts.RenewDeadline = ptr.To(1500 * time.Millisecond)
		opts.RetryPeriod = ptr.To(200 * time.Millisecond)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if mc.poll == 0 {
		mc.poll = 500 * time.Millisecond
	}
	if mc.retry == 0 {
		mc.retry = time.Second
	}
	r := &FlinkJobReconciler{
		Client: &countingClient{Client: mgr.GetClient(), gets: &tm.gets, writes: &tm.writes}, Flink: mc.flink,
		Timing:       lifecycle.Timing{Poll: 50 * time.Millisecond, Savepoint: 30 * time.Second, Stop: 30 * time.Second, Submit: 30 * time.Second},
		PollInterval: mc.poll, RetryInterval: mc.retry, Shared: mc.shared, Resync: mc.resync,
		Options: controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: max(mc.concurrent, 1)},
		Jars:    testJars(t),
	}
	if mc.recorder {
		r.Recorder = mgr.GetEventRecorder("flinkjob-controller")
	}
	var rec reconcile.Reconciler = r
	if mc.wrap != nil {
		rec = mc.wrap(r)
	}
	if err := r.setup(mgr, rec); err != nil {
		t.Fatal(err)
	}
	if mc.setup != nil {
		if err := mc.setup(mgr, r); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	tm.mgr, tm.cancel = mgr, cancel
	go func() { tm.done <- mgr.Start(ctx) }()
	t.Cleanup(tm.stop)
	return tm
}

// stop stops the manager and waits until it has (a second stop is a no-op).
func (tm *testManager) stop() {
	tm.cancel()
	if err, ok := <-tm.done; ok {
		close(tm.done)
		if err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}
}

// elected reports whether the manager leads.
func (tm *testManager) elected() bool {
	select {
	case <-tm.mgr.Elected():
		return true
	default:
		return false
	}
}

// countingClient counts the reconciler's Gets of FlinkJobs and its
// writes.
type countingClient struct {
	client.Client
	gets, writes *atomic.Int64
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.writes.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.writes.Add(1)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return &countingStatus{SubResourceWriter: c.Client.Status(), writes: c.writes}
}

type countingStatus struct {
	client.SubResourceWriter
	writes *atomic.Int64
}

func (w *countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.writes.Add(1)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.writes.Add(1)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*v1alpha1.FlinkJob); ok {
		c.gets.Add(1)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// freeAddress is a loopback address with a port nothing listens on.
func freeAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// realTimeFlink is a flinktest JobManager on the wall clock, for the
// tests that run a manager, and a client of it.
func realTimeFlink(t testing.TB, opts ...flinktest.Option) (*flinktest.Server, *flinkapi.Client) {
	t.Helper()
	opts = append([]flinktest.Option{flinktest.WithVersion("1.20.5"), flinktest.WithRealTime(), flinktest.WithSeed(1),
		flinktest.WithSavepointDuration(200 * time.Millisecond)}, opts...)
	srv := flinktest.NewServer(opts...)
	t.Cleanup(srv.Close)
	flink, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	return srv, flink
}

// eventually polls cond every 20ms until it holds or timeout passes.
func eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
