package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/examples/operator/internal/appcluster"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// kubelet plays the pods of the application clusters the operator
// creates: the first time the operator asks for a cluster's REST API
// (FlinkJobReconciler.ClusterURL), it starts the cluster's job on the fake
// JobManager as Flink's standalone-job entry point would, from the
// cluster's objects alone (the job id, restore path and parallelism of its
// ConfigMap, the entry class and arguments of its JobManager Deployment),
// and serves it from an application cluster's endpoint of its own
// (flinktest.Application).
type kubelet struct {
	h   *harness
	c   *flinkapi.Client // of the fake, to run the jobs
	jar flinkapi.JarID

	mu   sync.Mutex
	apps map[string]*flinktest.Application // by cluster name
	conf map[string]map[string]string      // the configuration each cluster started with
}

func newKubelet(h *harness) *kubelet {
	h.t.Helper()
	c, err := flinkapi.NewClient(h.srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		h.t.Fatal(err)
	}
	jar, err := c.UploadJar(context.Background(), h.jar)
	if err != nil {
		h.t.Fatal(err)
	}
	k := &kubelet{h: h, c: c, jar: jar, apps: map[string]*flinktest.Application{}, conf: map[string]map[string]string{}}
	h.t.Cleanup(func() {
		for _, a := range k.apps {
			a.Close()
		}
	})
	h.r.ClusterURL = k.url
	return k
}

func (k *kubelet) url(c lifecycle.Cluster) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a, ok := k.apps[c.Name]; ok {
		return a.URL, nil
	}
	ctx := context.Background()
	var cm corev1.ConfigMap
	var jm appsv1.Deployment
	if err := k.h.k8s.Get(ctx, client.ObjectKey{Namespace: k.h.key.Namespace, Name: c.Name + "-config"}, &cm); err != nil {
		return "", err
	}
	if err := k.h.k8s.Get(ctx, client.ObjectKey{Namespace: k.h.key.Namespace, Name: c.Name + "-jobmanager"}, &jm); err != nil {
		return "", err
	}
	var conf map[string]string
	if err := yaml.Unmarshal([]byte(cm.Data[appcluster.ConfigYAML]), &conf); err != nil {
		return "", err
	}
	// standalone-job --job-classname C --job-id ID [--jars J] ARGS...
	args := jm.Spec.Template.Spec.Containers[0].Args
	if len(args) < 5 || args[0] != "standalone-job" || args[1] != "--job-classname" || args[3] != "--job-id" || args[4] != conf["$internal.pipeline.job-id"] {
		return "", fmt.Errorf("jobmanager args %q, configuration job id %q", args, conf["$internal.pipeline.job-id"])
	}
	par, _ := strconv.Atoi(conf["parallelism.default"])
	id := flinkapi.JobID(args[4])
	// The entry point's savepoint options, as Flink reads them: they win
	// over the configuration.
	rest, restore, allow := args[5:], "", false
	if len(rest) >= 2 && rest[0] == "--fromSavepoint" {
		restore, rest = rest[1], rest[2:]
		if len(rest) > 0 && rest[0] == "--allowNonRestoredState" {
			allow, rest = true, rest[1:]
		}
	}
	if restore != conf["execution.state-recovery.path"] {
		return "", fmt.Errorf("jobmanager args restore from %q, the configuration from %q", restore, conf["execution.state-recovery.path"])
	}
	_, err := k.c.RunJar(ctx, k.jar, flinkapi.RunJarRequest{JobID: id, EntryClass: args[2], ProgramArgs: rest, Parallelism: par,
		SavepointPath: restore, AllowNonRestoredState: allow, FlinkConfiguration: conf})
	if err != nil && !flinkapi.IsDuplicateJob(err) {
		return "", err
	}
	a := k.h.srv.Application(id, conf[lifecycle.ShutdownOnFinish] != "false")
	k.apps[c.Name], k.conf[c.Name] = a, conf
	return a.URL, nil
}

// started returns the configuration cluster name started with.
func (k *kubelet) started(name string) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.conf[name]
}

// appSpec is the counter job in an application cluster of its own.
func (h *harness) appSpec() v1alpha1.FlinkJobSpec {
	spec := h.spec()
	spec.Mode = v1alpha1.ModeApplication
	spec.Application = &v1alpha1.ApplicationCluster{Image: "example.com/flink-counter:1.20.5"}
	spec.Job.JarFile = "/opt/flink/usrlib/counter.jar"
	spec.Job.EntryClass = flinktest.CounterJobClass
	return spec
}

// clusterObjects returns which of cluster name's objects exist.
func (h *harness) clusterObjects(name string) []string {
	h.t.Helper()
	var out []string
	for _, o := range []struct {
		obj    client.Object
		suffix string
	}{{&corev1.ConfigMap{}, "-config"}, {&corev1.Service{}, "-jobmanager"}, {&appsv1.Deployment{}, "-jobmanager"}, {&appsv1.Deployment{}, "-taskmanager"}} {
		err := h.k8s.Get(context.Background(), client.ObjectKey{Namespace: h.key.Namespace, Name: name + o.suffix}, o.obj)
		switch {
		case err == nil:
			out = append(out, fmt.Sprintf("%T %s", o.obj, o.obj.GetName()))
		case !apierrors.IsNotFound(err):
			h.t.Fatal(err)
		}
	}
	return out
}

// TestApplicationMode: a FlinkJob in the Application mode runs its job in
// an application cluster the operator creates (ConfigMap, JobManager
// Deployment and Service, TaskManager Deployment, owned by the FlinkJob);
// an update stops it with a savepoint and starts a new cluster from it,
// whose ConfigMap carries the restore path, and deletes the old cluster;
// deleting the FlinkJob records the final savepoint and deletes the
// cluster before the finalizer goes.
func TestApplicationMode(t *testing.T) {
	h := newHarness(t)
	k := newKubelet(h)
	h.create(h.appSpec())
	job := h.running("create")
	st := job.Status
	first := st.Cluster
	if first.Name != appcluster.ClusterName(h.key.Name, st.JobID) || first.JobID != st.JobID ||
		first.URL != "http://"+first.Name+"-jobmanager.streaming.svc:8081" {
		t.Fatalf("cluster %+v of job %s", first, st.JobID)
	}
	if got := h.clusterObjects(first.Name); len(got) != 4 {
		t.Fatalf("objects of the first cluster: %v", got)
	}
	var jm appsv1.Deployment
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Namespace: h.key.Namespace, Name: first.Name + "-jobmanager"}, &jm); err != nil {
		t.Fatal(err)
	}
	if ref := jm.OwnerReferences; len(ref) != 1 || ref[0].Kind != "FlinkJob" || ref[0].UID != job.UID {
		t.Errorf("jobmanager owner references %+v", ref)
	}
	if img := jm.Spec.Template.Spec.Containers[0].Image; img != job.Spec.Application.Image {
		t.Errorf("jobmanager image %q", img)
	}
	conf := k.started(first.Name)
	if conf[lifecycle.ShutdownOnFinish] != "false" || conf["execution.savepoint.path"] != "" ||
		conf["execution.checkpointing.externalized-checkpoint-retention"] != "RETAIN_ON_CANCELLATION" {
		t.Errorf("first cluster's configuration %v", conf)
	}
	info, ok := h.srv.Job(st.JobID)
	if !ok || info.State != flinkapi.JobRunning || !slices.Equal(info.ProgramArgs, job.Spec.Job.Args) {
		t.Fatalf("job %s on the fake: %+v, %v", st.JobID, info, ok)
	}
	// The session cluster is not used: the only jar upload and run are
	// the kubelet's.
	if up, run := h.count("POST /jars/upload"), h.count("POST /jars/:jarid/run"); up != 1 || run != 1 {
		t.Errorf("%d jar uploads, %d jar runs: want the kubelet's one each", up, run)
	}

	// Update: a new cluster from the upgrade's savepoint, the old one deleted.
	h.srv.Clock().Advance(10 * time.Second)
	old := st.JobID
	h.edit(func(s *v1alpha1.FlinkJobSpec) {
		s.Job.Args = append(s.Job.Args, "--name", "v2")
		s.Job.Parallelism = 2
	})
	job = h.running("update")
	st = job.Status
	second := st.Cluster
	if st.JobID == old || second.Name == first.Name || second.JobID != st.JobID || st.Action != lifecycle.ActionUpgrade {
		t.Fatalf("status after the update: %s", h.statusJSON())
	}
	sp := st.Latest
	if sp.Location == "" || sp.Reason != savepoint.ReasonUpdate || sp.JobID != old {
		t.Errorf("latest savepoint %+v", sp)
	}
	conf = k.started(second.Name)
	if conf["execution.savepoint.path"] != sp.Location || conf["execution.state-recovery.path"] != sp.Location ||
		conf["$internal.pipeline.job-id"] != string(st.JobID) || conf["parallelism.default"] != "2" {
		t.Errorf("second cluster's configuration %v, want the restore path %s", conf, sp.Location)
	}
	if info, _ := h.srv.Job(st.JobID); info.RestoredFrom != sp.Location || info.State != flinkapi.JobRunning {
		t.Errorf("new job %+v, want RUNNING from %s", info, sp.Location)
	}
	if info, _ := h.srv.Job(old); info.State != flinkapi.JobFinished {
		t.Errorf("old job %s", info.State)
	}
	if got := h.clusterObjects(first.Name); len(got) != 0 {
		t.Errorf("objects of the old cluster left: %v", got)
	}
	if got := h.clusterObjects(second.Name); len(got) != 4 {
		t.Errorf("objects of the new cluster: %v", got)
	}
	if !h.events.has("Normal UpgradeSucceeded") {
		t.Errorf("no UpgradeSucceeded event:\n%s", h.events)
	}

	// Delete: the final savepoint recorded, the cluster gone, then the finalizer.
	h.srv.Clock().Advance(10 * time.Second)
	if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
		t.Fatal(err)
	}
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, func(j *v1alpha1.FlinkJob) {
		if j != nil && !controllerutil.ContainsFinalizer(j, Finalizer) {
			t.Fatalf("the finalizer went first: %s", h.statusJSON())
		}
	})
	last, _, _ := h.status.stored()
	st = last.Status
	rec, stored, _ := h.store.Get(context.Background(), h.key.String())
	if !stored || rec.Location == "" || rec.Location == sp.Location || st.Latest.Location != rec.Location || !st.Cluster.IsZero() {
		t.Errorf("stored %+v (%v); last status: latest %+v, cluster %+v", rec, stored, st.Latest, st.Cluster)
	}
	if info, _ := h.srv.Job(second.JobID); info.State != flinkapi.JobFinished {
		t.Errorf("the job is %s after the delete", info.State)
	}
	if got := h.clusterObjects(second.Name); len(got) != 0 {
		t.Errorf("objects of the cluster left after the delete: %v", got)
	}
	if !h.events.has("Normal TeardownSucceeded") || h.events.has("Warning") {
		t.Errorf("no TeardownSucceeded event, or a warning:\n%s", h.events)
	}
}

// TestApplicationRestart: a job that fails in its application cluster is
// started again from its retained checkpoint in a new cluster, whose
// ConfigMap carries the checkpoint as its restore path; the failed job's
// cluster is deleted.
func TestApplicationRestart(t *testing.T) {
	h := newHarness(t)
	k := newKubelet(h)
	h.create(h.appSpec())
	first := h.running("create").Status
	h.srv.Clock().Advance(10 * time.Second)
	if err := h.srv.FailJob(first.JobID, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	job := h.until("restart", func(j *v1alpha1.FlinkJob) bool { return j.Status.JobID != first.JobID && runs(j) }, nil)
	st := job.Status
	if st.Action != lifecycle.ActionRestart || st.Restarts != 1 || st.Cluster.IsZero() || st.Cluster.Name == first.Cluster.Name {
		t.Fatalf("status after the restart: %s", h.statusJSON())
	}
	from := st.Progress.Replace.RestoreFrom
	if conf := k.started(st.Cluster.Name); from == "" || conf["execution.savepoint.path"] != from {
		t.Errorf("new cluster's restore path %q, want the restart's %q", conf["execution.savepoint.path"], from)
	}
	if info, _ := h.srv.Job(st.JobID); info.RestoredFrom != from || info.State != flinkapi.JobRunning {
		t.Errorf("new job %+v, want RUNNING from %s", info, from)
	}
	if got := h.clusterObjects(first.Cluster.Name); len(got) != 0 {
		t.Errorf("objects of the failed job's cluster left: %v", got)
	}
}
