package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// configDir is the operator's config folder, from this package's.
var configDir = filepath.Join("..", "..", "config")

// fieldManager owns the fields the tests apply from config/.
const fieldManager = "flinkkit-config-test"

// kustomization is the part of a kustomization.yaml the tests render
// themselves; a field beyond these (images, patches, ...) fails the
// rendering, so that the tests never check less than kubectl apply -k
// would apply.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace,omitempty"`
	Resources  []string `json:"resources"`
}

// rendered is a kustomization's objects, as kubectl apply -k would apply
// them, and the files they came from.
type rendered struct {
	namespace string
	objects   []*unstructured.Unstructured
	files     []string
}

// render reads dir's kustomization.yaml and, recursively, the
// kustomizations and files its resources name; the namespace of the
// outermost kustomization that sets one goes on every namespaced object
// and on the ServiceAccount subjects of the bindings. The objects are in
// kustomize's order for applying: Namespaces, CRDs, ServiceAccounts,
// roles, bindings, then the rest.
func render(t testing.TB, c client.Client, dir string) *rendered {
	t.Helper()
	out := &rendered{}
	renderInto(t, dir, out)
	for _, u := range out.objects {
		if out.namespace == "" {
			continue
		}
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if namespaced {
			u.SetNamespace(out.namespace)
		}
		if u.GetKind() == "Namespace" {
			u.SetName(out.namespace)
		}
		if u.GetKind() == "RoleBinding" || u.GetKind() == "ClusterRoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
					m["namespace"] = out.namespace
				}
			}
			if err := unstructured.SetNestedSlice(u.Object, subjects, "subjects"); err != nil {
				t.Fatal(err)
			}
		}
	}
	order := []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}
	rank := func(u *unstructured.Unstructured) int {
		if i := slices.Index(order, u.GetKind()); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(out.objects, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return out
}

func renderInto(t testing.TB, dir string, out *rendered) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v (the test renders apiVersion, kind, namespace and resources only)", dir, err)
	}
	if k.Kind != "Kustomization" || len(k.Resources) == 0 {
		t.Fatalf("%s/kustomization.yaml: kind %q, %d resources", dir, k.Kind, len(k.Resources))
	}
	if out.namespace == "" {
		out.namespace = k.Namespace
	}
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s/kustomization.yaml names %s: %v", dir, r, err)
		}
		if fi.IsDir() {
			renderInto(t, p, out)
			continue
		}
		out.files = append(out.files, filepath.Clean(p))
		out.objects = append(out.objects, readManifests(t, p)...)
	}
}

// readManifests reads the objects of a YAML file of one or more documents.
func readManifests(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			t.Fatalf("%s: an object without kind, apiVersion or name: %v", path, u.Object)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatalf("%s: no objects", path)
	}
	return objs
}

// apply applies u server-side, as fieldManager, taking over fields other
// managers own (envtest installed the CRD). Apply requests are validated
// strictly: a field the schema does not declare is an error.
func apply(ctx context.Context, c client.Client, u *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append([]client.ApplyOption{client.FieldOwner(fieldManager), client.ForceOwnership}, opts...)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
		return fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// applyBase renders config/default and applies every object of it.
func applyBase(t testing.TB) *rendered {
	t.Helper()
	_, c := kube(t)
	base := render(t, c, filepath.Join(configDir, "default"))
	for _, u := range base.objects {
		if err := apply(context.Background(), c, u); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// find returns the rendered object of that kind and name, failing without.
func (r *rendered) find(t testing.TB, kind, name string, into any) {
	t.Helper()
	for _, u := range r.objects {
		if u.GetKind() == kind && u.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("config/default has no %s %s", kind, name)
}

// TestAPIServerManifests: every manifest under config/ applies
// server-side, with strict field validation, to the real API server:
// config/default's objects as its kustomization renders them (every file
// of config/ but the samples is in it), then the sample FlinkJobs in a
// namespace of their own. An unknown field is an error, as the apply of
// a ServiceAccount with one shows first. The manager Deployment runs the
// generated ClusterRole's ServiceAccount with leader election, the probes
// and the metrics port.
func TestAPIServerManifests(t *testing.T) {
	ctx := context.Background()
	_, c := kube(t)

	// Strict: an unknown field fails the apply.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata":  map[string]any{"name": "unknown-field", "namespace": "default"},
		"automount": true,
	}}
	if err := apply(ctx, c, bad); err == nil || !strings.Contains(err.Error(), "automount") {
		t.Fatalf("an unknown field applied: %v", err)
	}

	base := applyBase(t)
	if base.namespace == "" {
		t.Fatal("config/default sets no namespace")
	}
	kinds := map[string]int{}
	for _, u := range base.objects {
		kinds[u.GetKind()]++
	}
	t.Logf("config/default: %d objects in %s: %v", len(base.objects), base.namespace, kinds)
	for kind, n := range map[string]int{"Namespace": 1, "CustomResourceDefinition": 2, "ServiceAccount": 1, "ClusterRole": 1,
		"ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1, "Deployment": 1} {
		if kinds[kind] != n {
			t.Errorf("config/default: %d %s, want %d", kinds[kind], kind, n)
		}
	}

	// Every manifest under config/ is in config/default or a sample.
	var samples []string
	err := filepath.WalkDir(configDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == "kustomization.yaml" {
			return err
		}
		switch {
		case filepath.Dir(p) == filepath.Join(configDir, "samples"):
			samples = append(samples, p)
		case !slices.Contains(base.files, filepath.Clean(p)):
			t.Errorf("%s is in no kustomization of config/default", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) == 0 {
		t.Fatal("no samples")
	}
	ns := namespace(t)
	for _, p := range samples {
		for _, u := range readManifests(t, p) {
			u.SetNamespace(ns)
			if err := apply(ctx, c, u); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
	}
	var jobs v1alpha1.FlinkJobList
	if err := c.List(ctx, &jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != len(samples) {
		t.Errorf("%d sample FlinkJobs stored, want %d (%v)", len(jobs.Items), len(samples), err)
	}

	// What the applied objects say.
	var sa corev1.ServiceAccount
	var crb rbacv1.ClusterRoleBinding
	var cr rbacv1.ClusterRole
	var dep appsv1.Deployment
	base.find(t, "ServiceAccount", "flinkkit-operator", &sa)
	base.find(t, "ClusterRoleBinding", "flinkkit-operator", &crb)
	base.find(t, "ClusterRole", "flinkkit-operator", &cr)
	base.find(t, "Deployment", "flinkkit-operator", &dep)
	if crb.RoleRef.Name != cr.Name || len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa.Name || crb.Subjects[0].Namespace != base.namespace {
		t.Errorf("ClusterRoleBinding %+v, %+v", crb.RoleRef, crb.Subjects)
	}
	var stored appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(&dep), &stored); err != nil {
		t.Fatal(err)
	}
	pod := stored.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || len(pod.Containers) != 1 {
		t.Fatalf("the Deployment's pod: service account %q, %d containers", pod.ServiceAccountName, len(pod.Containers))
	}
	m := pod.Containers[0]
	if !slices.Contains(m.Args, "--leader-elect") || !slices.Contains(m.Args, "--health-probe-bind-address=:8081") ||
		!slices.Contains(m.Args, "--metrics-bind-address=:8080") || !slices.ContainsFunc(m.Args, func(a string) bool { return strings.HasPrefix(a, "--flink-url=") }) {
		t.Errorf("manager args %q", m.Args)
	}
	if p := m.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.IntValue() != 8081 {
		t.Errorf("liveness probe %+v", p)
	}
	if p := m.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.IntValue() != 8081 {
		t.Errorf("readiness probe %+v", p)
	}
	if !slices.ContainsFunc(m.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8080 }) {
		t.Errorf("ports %+v", m.Ports)
	}
	if m.Resources.Requests.Cpu().IsZero() || m.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests %v", m.Resources.Requests)
	}
	if sc := pod.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) ||
		m.SecurityContext == nil || ptr.Deref(m.SecurityContext.AllowPrivilegeEscalation, true) {
		t.Errorf("security context: pod %+v, container %+v", sc, m.SecurityContext)
	}
}

// forbiddenClient records every Forbidden answer to the manager's own
// requests through it, which a reconcile might otherwise turn into a
// status message and a retry.
type forbiddenClient struct {
	client.Client
	mu   sync.Mutex
	errs []string
}

func (c *forbiddenClient) check(op string, obj any, err error) error {
	if apierrors.IsForbidden(err) {
		c.mu.Lock()
		c.errs = append(c.errs, fmt.Sprintf("%s %T: %v", op, obj, err))
		c.mu.Unlock()
	}
	return err
}

func (c *forbiddenClient) forbidden() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

func (c *forbiddenClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.check("get", obj, c.Client.Get(ctx, key, obj, opts...))
}

func (c *forbiddenClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.check("list", list, c.Client.List(ctx, list, opts...))
}

func (c *forbiddenClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.check("create", obj, c.Client.Create(ctx, obj, opts...))
}

func (c *forbiddenClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.check("update", obj, c.Client.Update(ctx, obj, opts...))
}

func (c *forbiddenClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.check("patch", obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *forbiddenClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.check("delete", obj, c.Client.Delete(ctx, obj, opts...))
}

func (c *forbiddenClient) Status() client.SubResourceWriter {
	return &forbiddenStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type forbiddenStatus struct {
	client.SubResourceWriter
	c *forbiddenClient
}

func (w *forbiddenStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return w.c.check("update status", obj, w.SubResourceWriter.Update(ctx, obj, opts...))
}

func (w *forbiddenStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return w.c.check("patch status", obj, w.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}

// TestAPIServerLeastPrivilege: the manager runs with only the permissions
// config/ gives its ServiceAccount (the generated ClusterRole and the
// leader election Role): config/default applied, the manager's requests
// impersonate the ServiceAccount, with leader election in the operator's
// namespace and a cache of FlinkJobs across all namespaces, as
// cmd/operator runs. A FlinkJob in the Session mode and one in the
// Application mode (the kubelet plays the application clusters' pods)
// each go through create, upgrade, delete and re-create, which starts
// from the deleted job's final savepoint. No request is Forbidden, no
// status says so, and the events of the reconciler and of the leader
// election are on the API server.
func TestAPIServerLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	admin, c := kube(t)
	base := applyBase(t)
	var sa corev1.ServiceAccount
	base.find(t, "ServiceAccount", "flinkkit-operator", &sa)
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name}

	// The impersonation holds: what the roles do not grant is Forbidden.
	sac, err := client.New(cfg, client.Options{Scheme: apiServer.scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := sac.List(ctx, &corev1.PodList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount lists Pods: %v, want Forbidden", err)
	}

	srv, flink := realTimeFlink(t)
	ns := namespace(t)
	h := &harness{t: t, srv: srv, k8s: c, key: types.NamespacedName{Namespace: ns}, jar: counterJar(t), r: &FlinkJobReconciler{}}
	k := newKubelet(h)

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  apiServer.scheme,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "flinkjob.flinkkit.dev",
		LeaderElectionNamespace: sa.Namespace,
		LeaseDuration:           ptr.To(2 * time.Second),
		RenewDeadline:           ptr.To(1500 * time.Millisecond),
		RetryPeriod:             ptr.To(200 * time.Millisecond),
		Cache:                   cache.Options{ByObject: CacheByObject()}, // as cmd/operator
	})
	if err != nil {
		t.Fatal(err)
	}
	fc := &forbiddenClient{Client: mgr.GetClient()}
	store := &lifecycle.MemoryStore{}
	r := &FlinkJobReconciler{
		Client: fc, Flink: flink, ClusterURL: k.url, Recorder: mgr.GetEventRecorder("flinkjob-controller"),
		Shared:       &lifecycle.SharedObservation{Client: flink, MaxAge: 250 * time.Millisecond},
		Store:        store,
		Timing:       lifecycle.Timing{Poll: 50 * time.Millisecond, Savepoint: 30 * time.Second, Stop: 30 * time.Second, Submit: 30 * time.Second},
		PollInterval: 500 * time.Millisecond, RetryInterval: time.Second,
		Options: controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 2},
		Jars:    testJars(t),
	}
	// The FlinkSessionClusters' reconciler, and with it the watch of the
	// labelled Secrets, as cmd/operator registers them.
	r.Sessions = &SessionClusters{Client: fc, Options: []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)}}
	sr := &SessionClusterReconciler{Client: fc, Sessions: r.Sessions, Options: controller.Options{SkipNameValidation: ptr.To(true)}}
	if err := sr.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	for name, lbl := range map[string]map[string]string{"labelled": {LabelSecret: "true"}, "unlabelled": nil} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
			Data: map[string][]byte{"token": []byte("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	// The cache holds every namespace's FlinkJobs (the ClusterRole's
	// list and watch); the reconciler leaves those of other tests alone.
	only := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Namespace != ns {
			return reconcile.Result{}, nil
		}
		return r.Reconcile(ctx, req)
	})
	if err := r.setup(mgr, only); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("manager: %v", err) // a lease not given up in time at the stop
		}
	})
	eventually(t, "elected", waitTimeout, func() bool {
		select {
		case <-mgr.Elected():
			return true
		default:
			return false
		}
	})

	// The cache holds the labelled Secrets only, listed and watched with
	// the ServiceAccount's rights.
	eventually(t, "the labelled Secret in the cache", waitTimeout, func() bool {
		var list corev1.SecretList
		if err := mgr.GetCache().List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatalf("listing the cached Secrets: %v", err)
		}
		for _, s := range list.Items {
			if s.Name != "labelled" {
				t.Fatalf("the cache holds the Secret %s, which has no %s label", s.Name, LabelSecret)
			}
		}
		return len(list.Items) == 1
	})

	app := h.appSpec()
	for _, tc := range []struct {
		name string
		spec v1alpha1.FlinkJobSpec
	}{{"session", counterSpec(h.jar)}, {"application", app}} {
		t.Run(tc.name, func(t *testing.T) {
			lifecycleRun(t, srv, store, fc, ns, tc.name, tc.spec)
		})
	}
	if errs := fc.forbidden(); len(errs) > 0 || t.Failed() {
		t.Fatalf("Forbidden requests:\n%s", strings.Join(errs, "\n"))
	}

	// The events: the reconciler's (events.k8s.io) in the FlinkJobs'
	// namespace, the leader election's (core) in the operator's.
	eventually(t, "events", waitTimeout, func() bool {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, e := range list.Items {
			seen[e.Regarding.Name+" "+e.Reason]++
		}
		for _, name := range []string{"session", "application"} {
			for _, reason := range []string{"DeploySucceeded", "UpgradeSucceeded", "TeardownSucceeded"} {
				if seen[name+" "+reason] == 0 {
					return false
				}
			}
		}
		return true
	})
	eventually(t, "leader election event", waitTimeout, func() bool {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace(sa.Namespace)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(list.Items, func(e corev1.Event) bool { return e.Reason == "LeaderElection" })
	})
}

// lifecycleRun creates the FlinkJob name in ns, upgrades, deletes and
// creates it again, checking each step on flinktest and the store, and
// that no status says Forbidden.
func lifecycleRun(t *testing.T, srv *flinktest.Server, store *lifecycle.MemoryStore, fc *forbiddenClient, ns, name string, spec v1alpha1.FlinkJobSpec) {
	ctx := context.Background()
	wait := func(j *kubeJob, what string, cond func(*v1alpha1.FlinkJob) bool) *v1alpha1.FlinkJob {
		t.Helper()
		return j.wait(what, func(job *v1alpha1.FlinkJob) bool {
			if job != nil && strings.Contains(strings.ToLower(job.Status.Message), "forbidden") {
				t.Fatalf("%s: status %s: %s", what, job.Status.Reason, job.Status.Message)
			}
			if errs := fc.forbidden(); len(errs) > 0 {
				t.Fatalf("%s: Forbidden: %s", what, errs[0])
			}
			return cond(job)
		})
	}
	j := createJob(t, ns, name, spec)
	first := wait(j, "running", runs).Status
	if app := spec.Mode == v1alpha1.ModeApplication; app == first.Cluster.IsZero() {
		t.Fatalf("created: mode %q, cluster %+v", spec.Mode, first.Cluster)
	}

	j.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	up := wait(j, "upgraded", upgraded).Status
	if info, ok := srv.Job(up.JobID); !ok || up.JobID == first.JobID || up.Latest.Location == "" || info.RestoredFrom != up.Latest.Location {
		t.Fatalf("upgraded: job %s (first %s) restored from %q, latest savepoint %q", up.JobID, first.JobID, info.RestoredFrom, up.Latest.Location)
	}
	if info, _ := srv.Job(first.JobID); info.State != flinkapi.JobFinished {
		t.Errorf("the first job is %s after the upgrade", info.State)
	}

	if err := j.c.Delete(ctx, j.get()); err != nil {
		t.Fatal(err)
	}
	wait(j, "deleted", func(job *v1alpha1.FlinkJob) bool { return job == nil })
	rec, ok, err := store.Get(ctx, ns+"/"+name)
	if err != nil || !ok || rec.Location == "" || rec.Location == up.Latest.Location {
		t.Fatalf("restore point after the delete: %+v, %v, %v", rec, ok, err)
	}
	if info, _ := srv.Job(up.JobID); info.State != flinkapi.JobFinished {
		t.Errorf("the job is %s after the delete", info.State)
	}
	if !up.Cluster.IsZero() {
		var jm appsv1.Deployment
		err := j.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: up.Cluster.Name + "-jobmanager"}, &jm)
		if !apierrors.IsNotFound(err) {
			t.Errorf("the application cluster's JobManager after the delete: %v", err)
		}
	}

	j = createJob(t, ns, name, spec)
	again := wait(j, "running again", runs).Status
	if info, ok := srv.Job(again.JobID); !ok || again.JobID == up.JobID || info.RestoredFrom != rec.Location {
		t.Errorf("created again: job %s restored from %q, want %q", again.JobID, info.RestoredFrom, rec.Location)
	}
	t.Logf("%s: jobs %s, %s (upgrade), %s (re-created from %s)", name, first.JobID, up.JobID, again.JobID, rec.Location)
}
