package controller

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// withSessions gives h's reconciler FlinkSessionClusters, and returns a
// second flinktest JobManager on h's clock for them to name.
func withSessions(t *testing.T, h *harness) *flinktest.Server {
	t.Helper()
	srv2 := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithSeed(2), flinktest.WithClock(h.srv.Clock()))
	t.Cleanup(srv2.Close)
	h.r.Sessions = &SessionClusters{Client: h.k8s, Options: []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)},
		Clock: h.srv.Clock(), SharedMaxAge: 5 * time.Second}
	return srv2
}

// createSession creates a FlinkSessionCluster named name in h's namespace.
func (h *harness) createSession(name, url string, hk v1alpha1.Housekeeping) {
	h.t.Helper()
	sc := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: name},
		Spec: v1alpha1.FlinkSessionClusterSpec{URL: url, Housekeeping: hk}}
	if err := h.k8s.Create(context.Background(), sc); err != nil {
		h.t.Fatal(err)
	}
}

// jobIDs are the ids of jobs.
func jobIDs(jobs []flinktest.JobInfo) []flinkapi.JobID {
	var ids []flinkapi.JobID
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// TestAPIServerSessionClusterRunsThere: a FlinkJob naming a
// FlinkSessionCluster runs on its JobManager and on no other, while a
// FlinkJob naming none runs on the default one; every FlinkJob on a
// cluster shares its client until the cluster's spec changes.
func TestAPIServerSessionClusterRunsThere(t *testing.T) {
	h := newKubeHarness(t)
	srv2 := withSessions(t, h)
	h.createSession("second", srv2.URL, v1alpha1.Housekeeping{})

	spec := h.spec()
	spec.SessionCluster = "second"
	h.create(spec)
	on2 := h.running("on the second cluster").Status.JobID
	if got := jobIDs(liveJobs(srv2)); !slices.Equal(got, []flinkapi.JobID{on2}) {
		t.Errorf("the second cluster runs %v, want the FlinkJob's %s", got, on2)
	}
	if n := len(h.srv.Jobs()); n != 0 || h.count("POST /jars/upload") != 0 {
		t.Errorf("the default cluster got %d jobs and %d uploads, want none", n, h.count("POST /jars/upload"))
	}

	h.key.Name = "on-default"
	h.create(h.spec())
	onDefault := h.running("on the default cluster").Status.JobID
	if got := jobIDs(liveJobs(h.srv)); !slices.Equal(got, []flinkapi.JobID{onDefault}) {
		t.Errorf("the default cluster runs %v, want %s", got, onDefault)
	}
	if got := jobIDs(liveJobs(srv2)); !slices.Equal(got, []flinkapi.JobID{on2}) {
		t.Errorf("the second cluster runs %v, want only %s", got, on2)
	}
	if n := h.count("POST /jars/upload"); n != 1 {
		t.Errorf("%d uploads to the default cluster, want the one of its FlinkJob", n)
	}

	ctx := context.Background()
	s1, err := h.r.Sessions.Get(ctx, h.key.Namespace, "second")
	if err != nil {
		t.Fatal(err)
	}
	if s2, err := h.r.Sessions.Get(ctx, h.key.Namespace, "second"); err != nil || s2 != s1 {
		t.Errorf("a second Get built another client (%v)", err)
	}
	var sc v1alpha1.FlinkSessionCluster
	if err := h.k8s.Get(ctx, types.NamespacedName{Namespace: h.key.Namespace, Name: "second"}, &sc); err != nil {
		t.Fatal(err)
	}
	sc.Spec.RequestBudget = &v1alpha1.RequestBudget{QPS: 10}
	if err := h.k8s.Update(ctx, &sc); err != nil {
		t.Fatal(err)
	}
	if s3, err := h.r.Sessions.Get(ctx, h.key.Namespace, "second"); err != nil || s3 == s1 {
		t.Errorf("after a change of the spec, Get kept the old client (%v)", err)
	}
}

// TestAPIServerSessionClusterMissing: a FlinkJob naming a
// FlinkSessionCluster that does not exist, or naming none when the
// operator has no default cluster, sends no request anywhere and says
// why in its Ready condition; once the cluster exists, the job runs there.
func TestAPIServerSessionClusterMissing(t *testing.T) {
	h := newKubeHarness(t)
	srv2 := withSessions(t, h)
	spec := h.spec()
	spec.SessionCluster = "absent"
	h.create(spec)
	for range 2 {
		if res := h.reconcile(); res.RequeueAfter != h.r.RetryInterval {
			t.Errorf("RequeueAfter %v, want the retry interval %v", res.RequeueAfter, h.r.RetryInterval)
		}
	}
	job := h.get()
	c := findReady(job)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonSessionClusterNotFound || !strings.Contains(c.Message, `"absent"`) ||
		c.ObservedGeneration != job.Generation {
		t.Errorf("Ready %+v, want False, %s, naming the cluster", c, ReasonSessionClusterNotFound)
	}
	if job.Status.JobID != "" || job.Status.State != "" {
		t.Errorf("status %+v, want no job", job.Status.JobStatus)
	}
	if n, m := len(h.srv.Requests()), len(srv2.Requests()); n+m != 0 {
		t.Errorf("%d and %d requests to the JobManagers, want none", n, m)
	}
	if !h.events.has("Warning " + ReasonSessionClusterNotFound) {
		t.Errorf("no warning event:\n%s", h.events)
	}

	h.createSession("absent", srv2.URL, v1alpha1.Housekeeping{})
	id := h.running("the cluster exists").Status.JobID
	if got := jobIDs(liveJobs(srv2)); !slices.Equal(got, []flinkapi.JobID{id}) {
		t.Errorf("the named cluster runs %v, want %s", got, id)
	}
	if c := findReady(h.get()); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v, want True", c)
	}

	// No default cluster (--flink-url empty): a FlinkJob naming none.
	h.r.Flink, h.r.Shared = nil, nil
	h.key.Name = "no-cluster"
	h.create(h.spec())
	h.reconcile()
	if c := findReady(h.get()); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonNoSessionCluster {
		t.Errorf("Ready %+v, want False, %s", c, ReasonNoSessionCluster)
	}
	if n := len(h.srv.Requests()); n != 0 {
		t.Errorf("%d requests to the default JobManager, want none", n)
	}
}

// TestAPIServerSessionHousekeeping: the FlinkSessionCluster's reconciler
// reports its JobManager reachable with its version, and its housekeeping
// deletes the jars no FlinkJob uses once older than the jar grace, keeps
// the FlinkJobs' own, and reports (never stops) a job no FlinkJob runs.
// A cluster with the default cluster's URL counts the FlinkJobs that name
// none as its own.
func TestAPIServerSessionHousekeeping(t *testing.T) {
	ctx := context.Background()
	h := newKubeHarness(t)
	srv2 := withSessions(t, h)
	grace := policy.Duration(time.Minute)
	hk := v1alpha1.Housekeeping{Interval: policy.Duration(10 * time.Minute), JarGrace: grace, JobGrace: grace}
	h.createSession("second", srv2.URL, hk)
	h.createSession("default-alias", h.srv.URL+"/", hk)

	spec := h.spec()
	spec.SessionCluster = "second"
	h.create(spec)
	used := h.running("on the second cluster").Status.JarID
	h.key.Name = "on-default"
	h.create(h.spec())
	usedDefault := h.running("on the default cluster").Status.JarID
	if used == "" || usedDefault == "" {
		t.Fatalf("jars %q, %q: want the FlinkJobs' uploads recorded", used, usedDefault)
	}

	upload := func(srv *flinktest.Server, name string) (*flinkapi.Client, flinkapi.JarID) {
		c, err := flinkapi.NewClient(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.UploadJarReader(ctx, name, bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
		if err != nil {
			t.Fatal(err)
		}
		return c, id
	}
	c2, stray := upload(srv2, "stray.jar")
	_, other := upload(srv2, "other.jar")
	foreign, err := c2.RunJar(ctx, other, flinkapi.RunJarRequest{ProgramArgs: []string{"--out", "/out-foreign"}})
	if err != nil {
		t.Fatal(err)
	}
	_, strayDefault := upload(h.srv, "stray-default.jar")

	sr := &SessionClusterReconciler{Client: h.k8s, Sessions: h.r.Sessions, DefaultURL: h.srv.URL, Recorder: h.events, Clock: h.srv.Clock()}
	look := func(name string) *v1alpha1.FlinkSessionCluster {
		t.Helper()
		key := types.NamespacedName{Namespace: h.key.Namespace, Name: name}
		res, err := sr.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != hk.Interval.Std() {
			t.Errorf("%s: RequeueAfter %v, want the interval %v", name, res.RequeueAfter, hk.Interval)
		}
		var sc v1alpha1.FlinkSessionCluster
		if err := h.k8s.Get(ctx, key, &sc); err != nil {
			t.Fatal(err)
		}
		return &sc
	}

	// Within the grace: nothing deleted, nothing reported.
	sc := look("second")
	if got := srv2.JarIDs(); len(got) != 3 {
		t.Errorf("jars %v within the grace, want all 3", got)
	}
	if c := reachableCondition(sc); c == nil || c.Status != metav1.ConditionTrue || sc.Status.FlinkVersion != "1.20.5" ||
		sc.Status.ObservedGeneration != sc.Generation || len(sc.Status.UnclaimedJobs) != 0 || sc.Status.LastHousekeeping == nil {
		t.Errorf("status %+v, want reachable, Flink 1.20.5, nothing unclaimed", sc.Status)
	}

	h.srv.Clock().Advance(2 * grace.Std())
	sc = look("second")
	if got := srv2.JarIDs(); !slices.Equal(got, []flinkapi.JarID{used}) {
		t.Errorf("jars %v after the grace, want only the FlinkJob's %s (not %s, %s)", got, used, stray, other)
	}
	if sc.Status.DeletedJars != 2 || !slices.Equal(sc.Status.UnclaimedJobs, []string{string(foreign)}) {
		t.Errorf("status %+v, want 2 jars deleted and %s unclaimed", sc.Status, foreign)
	}
	if j, ok := srv2.Job(foreign); !ok || j.State != flinkapi.JobRunning {
		t.Errorf("the unclaimed job: %+v, want it left running", j)
	}
	for _, e := range []string{"Normal JarsDeleted", "Warning UnclaimedJobs"} {
		if !h.events.has(e) {
			t.Errorf("no %s event:\n%s", e, h.events)
		}
	}

	// The default cluster under another name: the FlinkJob naming none is
	// its claim.
	look("default-alias")
	if got := h.srv.JarIDs(); !slices.Equal(got, []flinkapi.JarID{usedDefault}) {
		t.Errorf("default cluster's jars %v, want only the FlinkJob's %s (not %s)", got, usedDefault, strayDefault)
	}

	// Turned off: nothing is deleted.
	_, late := upload(srv2, "late.jar")
	h.srv.Clock().Advance(2 * grace.Std())
	var off v1alpha1.FlinkSessionCluster
	if err := h.k8s.Get(ctx, client.ObjectKey{Namespace: h.key.Namespace, Name: "second"}, &off); err != nil {
		t.Fatal(err)
	}
	off.Spec.Housekeeping.Disabled = true
	if err := h.k8s.Update(ctx, &off); err != nil {
		t.Fatal(err)
	}
	look("second")
	if got := srv2.JarIDs(); !slices.Contains(got, late) {
		t.Errorf("jars %v with the housekeeping off, want %s kept", got, late)
	}
}

// reachableCondition is sc's Reachable condition, or nil.
func reachableCondition(sc *v1alpha1.FlinkSessionCluster) *metav1.Condition {
	for i := range sc.Status.Conditions {
		if sc.Status.Conditions[i].Type == ConditionReachable {
			return &sc.Status.Conditions[i]
		}
	}
	return nil
}

// tokenProxy is a TLS proxy in front of the JobManager at jobManager that
// wants the bearer token "s3cret", and the PEM of its certificate.
func tokenProxy(t *testing.T, jobManager string) (*httptest.Server, []byte) {
	t.Helper()
	target, err := url.Parse(jobManager)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
}

// TestAPIServerSessionClusterSecrets: a FlinkSessionCluster's client
// takes its CA and bearer token from the Secrets it names (the
// JobManager here behind a TLS proxy that wants the token): a missing
// Secret makes the cluster not Reachable, naming it; once there, the
// JobManager answers through the proxy; a changed Secret rebuilds the
// client. The API server refuses two kinds of credentials at once and a
// URL that is not http(s).
func TestAPIServerSessionClusterSecrets(t *testing.T) {
	ctx := context.Background()
	h := newKubeHarness(t)
	srv2 := withSessions(t, h)
	front, ca := tokenProxy(t, srv2.URL)

	sc := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: "behind-proxy"},
		Spec: v1alpha1.FlinkSessionClusterSpec{URL: front.URL, TLS: &v1alpha1.SessionTLS{CASecret: "flink-ca"},
			Auth: &v1alpha1.SessionAuth{BearerTokenSecret: "flink-token"}}}
	if err := h.k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sr := &SessionClusterReconciler{Client: h.k8s, Sessions: h.r.Sessions, Recorder: h.events, Clock: h.srv.Clock()}
	look := func() *metav1.Condition {
		t.Helper()
		if _, err := sr.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sc)}); err != nil {
			t.Fatal(err)
		}
		if err := h.k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			t.Fatal(err)
		}
		return reachableCondition(sc)
	}
	if c := look(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonSessionClusterInvalid || !strings.Contains(c.Message, `"flink-ca"`) {
		t.Errorf("without its Secrets: Reachable %+v, want False, %s, naming flink-ca", c, ReasonSessionClusterInvalid)
	}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: name, Labels: map[string]string{LabelSecret: "true"}}, Data: data}
		if err := h.k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	secret("flink-ca", map[string][]byte{"ca.crt": ca})
	token := secret("flink-token", map[string][]byte{"token": []byte("s3cret\n")})
	if c := look(); c == nil || c.Status != metav1.ConditionTrue || sc.Status.FlinkVersion != "1.20.5" {
		t.Errorf("with its Secrets: Reachable %+v, version %q, want True, 1.20.5", c, sc.Status.FlinkVersion)
	}
	token.Data["token"] = []byte("wrong")
	if err := h.k8s.Update(ctx, token); err != nil {
		t.Fatal(err)
	}
	if c := look(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonUnreachable {
		t.Errorf("with a wrong token: Reachable %+v, want False, %s", c, ReasonUnreachable)
	}
	if strings.Contains(sc.Status.Conditions[0].Message, "wrong") {
		t.Errorf("the condition shows the token: %s", sc.Status.Conditions[0].Message)
	}

	for name, spec := range map[string]v1alpha1.FlinkSessionClusterSpec{
		"two-kinds": {URL: "http://flink:8081", Auth: &v1alpha1.SessionAuth{BasicAuthSecret: "a", BearerTokenSecret: "b"}},
		"no-scheme": {URL: "flink:8081"},
		"no-qps":    {URL: "http://flink:8081", RequestBudget: &v1alpha1.RequestBudget{}},
	} {
		bad := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: name}, Spec: spec}
		if err := h.k8s.Create(ctx, bad); !apierrors.IsInvalid(err) {
			t.Errorf("%s: Create: %v, want refused as invalid", name, err)
		}
	}
}

// TestApplicationModeWithoutDefaultCluster: without --flink-url, a
// FlinkJob in the Application mode runs: its clients are its application
// cluster's.
func TestApplicationModeWithoutDefaultCluster(t *testing.T) {
	h := newHarness(t)
	h.r.Flink, h.r.Shared = nil, nil
	newKubelet(h)
	h.create(h.appSpec())
	if job := h.running("create"); job.Status.Cluster.Name == "" {
		t.Errorf("status %+v, want the job in an application cluster", job.Status.JobStatus)
	}
}

// TestAPIServerSessionSample: the sample FlinkSessionCluster and its
// FlinkJob are accepted by the API server as written, with no unknown
// field.
func TestAPIServerSessionSample(t *testing.T) {
	ns := namespace(t)
	_, c := kube(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "flinksessioncluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		if err := c.Create(context.Background(), u, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	var job v1alpha1.FlinkJob
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "counter-analytics"}, &job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.SessionCluster != "analytics" {
		t.Errorf("spec.sessionCluster %q, want analytics", job.Spec.SessionCluster)
	}
}

// TestAPIServerManagerSessionCluster: in a manager, a FlinkJob naming a
// FlinkSessionCluster not yet created waits with its Ready condition
// saying so; the cluster's creation (not a retry: the retry interval is
// an hour) has it reconciled, and it runs on that cluster, not on the
// default one.
func TestAPIServerManagerSessionCluster(t *testing.T) {
	ns := namespace(t)
	_, c := kube(t)
	srv1, flink1 := realTimeFlink(t)
	srv2, _ := realTimeFlink(t, flinktest.WithSeed(2))
	startManager(t, managerConfig{ns: ns, flink: flink1, retry: time.Hour, wrap: func(rec reconcile.Reconciler) reconcile.Reconciler {
		rec.(*FlinkJobReconciler).Sessions = &SessionClusters{Client: c, Options: []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)}}
		return rec
	}})
	spec := counterSpec(counterJar(t))
	spec.SessionCluster = "late"
	j := createJob(t, ns, "counter", spec)
	j.wait("waiting for its cluster", func(job *v1alpha1.FlinkJob) bool {
		c := findReady(job)
		return c != nil && c.Reason == ReasonSessionClusterNotFound
	})
	if err := c.Create(context.Background(), &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"},
		Spec: v1alpha1.FlinkSessionClusterSpec{URL: srv2.URL}}); err != nil {
		t.Fatal(err)
	}
	id := j.wait("running on its cluster", runs).Status.JobID
	if got := jobIDs(liveJobs(srv2)); !slices.Equal(got, []flinkapi.JobID{id}) {
		t.Errorf("the named cluster runs %v, want %s", got, id)
	}
	if n := len(srv1.Jobs()); n != 0 {
		t.Errorf("the default cluster runs %d jobs, want none", n)
	}
}

// TestAPIServerSessionSecretWatched: in a manager, a FlinkSessionCluster
// whose JobManager (behind a TLS proxy that wants a bearer token) refuses
// the token in its Secret is Unreachable; when the Secret is corrected it
// is looked at again at once (its retry is a minute away: only the watch
// of the Secrets it names brings it), Reachable, and a FlinkJob naming
// it runs there.
func TestAPIServerSessionSecretWatched(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	_, c := kube(t)
	_, flink1 := realTimeFlink(t)
	srv2, _ := realTimeFlink(t, flinktest.WithSeed(2))
	front, ca := tokenProxy(t, srv2.URL)
	for name, data := range map[string]map[string][]byte{"flink-ca": {"ca.crt": ca}, "flink-token": {"token": []byte("wrong")}} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelSecret: "true"}}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	startManager(t, managerConfig{ns: ns, flink: flink1, retry: time.Hour, setup: func(mgr ctrl.Manager, r *FlinkJobReconciler) error {
		sr := &SessionClusterReconciler{Client: mgr.GetClient(), Sessions: r.Sessions,
			Options: controller.Options{SkipNameValidation: ptr.To(true)}}
		return sr.SetupWithManager(mgr)
	}, wrap: func(rec reconcile.Reconciler) reconcile.Reconciler {
		rec.(*FlinkJobReconciler).Sessions = &SessionClusters{Client: c, Options: []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)}}
		return rec
	}})
	sc := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "behind-proxy"},
		Spec: v1alpha1.FlinkSessionClusterSpec{URL: front.URL, TLS: &v1alpha1.SessionTLS{CASecret: "flink-ca"},
			Auth: &v1alpha1.SessionAuth{BearerTokenSecret: "flink-token"}}}
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	reachable := func() *metav1.Condition {
		var got v1alpha1.FlinkSessionCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(sc), &got); err != nil {
			t.Fatal(err)
		}
		return reachableCondition(&got)
	}
	eventually(t, "the cluster unreachable with the wrong token", 10*time.Second, func() bool {
		r := reachable()
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == ReasonUnreachable
	})

	var token corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "flink-token"}, &token); err != nil {
		t.Fatal(err)
	}
	token.Data["token"] = []byte("s3cret")
	if err := c.Update(ctx, &token); err != nil {
		t.Fatal(err)
	}
	fixed := time.Now()
	eventually(t, "the cluster reachable once its Secret is corrected", 10*time.Second, func() bool {
		r := reachable()
		return r != nil && r.Status == metav1.ConditionTrue
	})
	t.Logf("reachable %v after the Secret's update", time.Since(fixed).Round(time.Millisecond))

	spec := counterSpec(counterJar(t))
	spec.SessionCluster = "behind-proxy"
	id := createJob(t, ns, "counter", spec).wait("running behind the proxy", runs).Status.JobID
	if got := jobIDs(liveJobs(srv2)); !slices.Equal(got, []flinkapi.JobID{id}) {
		t.Errorf("the named cluster runs %v, want %s", got, id)
	}
}
