package appcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

const image = "example.com/flink-counter:1.20.5"

func newDeployer(t *testing.T, objs ...client.Object) *Deployer {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	job := &v1alpha1.FlinkJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FlinkJob"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "streaming", Name: "counter", UID: "uid-counter"},
		Spec:       v1alpha1.FlinkJobSpec{Mode: v1alpha1.ModeApplication, Application: &v1alpha1.ApplicationCluster{Image: image}},
	}
	k8s := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return &Deployer{Kube: k8s, Job: job}
}

// request is a deploy from a savepoint, its configuration as the
// lifecycle operations pass it (ApplicationConfiguration's).
func request() lifecycle.DeployRequest {
	req := lifecycle.DeployRequest{
		JobID: "0123456789abcdef0123456789abcdef", JarFile: "/opt/flink/usrlib/counter.jar", EntryClass: flinktest.CounterJobClass,
		Args: []string{"--out", "/out"}, Parallelism: 3, RestorePath: "file:/savepoints/savepoint-1", AllowNonRestoredState: true,
		FlinkConfiguration: map[string]string{slotsKey: "2", "state.checkpoints.dir": "file:/checkpoints"},
	}
	req.FlinkConfiguration = lifecycle.ApplicationConfiguration(req)
	return req
}

// objects reads the cluster's four objects; nil for those that do not exist.
func objects(t *testing.T, d *Deployer, c lifecycle.Cluster) (*corev1.ConfigMap, *corev1.Service, *appsv1.Deployment, *appsv1.Deployment) {
	t.Helper()
	cm, svc, jm, tm := &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.Deployment{}, &appsv1.Deployment{}
	get := func(suffix string, o client.Object) bool {
		err := d.Kube.Get(context.Background(), client.ObjectKey{Namespace: "streaming", Name: c.Name + suffix}, o)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !get("-config", cm) {
		cm = nil
	}
	if !get("-jobmanager", svc) {
		svc = nil
	}
	if !get("-jobmanager", jm) {
		jm = nil
	}
	if !get("-taskmanager", tm) {
		tm = nil
	}
	return cm, svc, jm, tm
}

// TestDeploy: Deploy creates the ConfigMap, the JobManager Deployment and
// Service and the TaskManager Deployment of the job's cluster, named
// after the FlinkJob and the job id, labelled and owned by the FlinkJob,
// with the job's id and restore path in the configuration.
func TestDeploy(t *testing.T) {
	d := newDeployer(t)
	req := request()
	c, err := d.Deploy(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := lifecycle.Cluster{Name: "counter-0123456789ab", URL: "http://counter-0123456789ab-jobmanager.streaming.svc:8081", JobID: req.JobID}
	if c != want {
		t.Fatalf("cluster %+v, want %+v", c, want)
	}
	cm, svc, jm, tm := objects(t, d, c)
	if cm == nil || svc == nil || jm == nil || tm == nil {
		t.Fatalf("objects: config %v, service %v, jobmanager %v, taskmanager %v", cm != nil, svc != nil, jm != nil, tm != nil)
	}
	for _, o := range []client.Object{cm, svc, jm, tm} {
		l := o.GetLabels()
		if l[LabelFlinkJob] != "counter" || l[LabelCluster] != c.Name || l[LabelJobID] != string(req.JobID) || l[LabelManagedBy] != ManagedBy {
			t.Errorf("%s labels %v", o.GetName(), l)
		}
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != "FlinkJob" || refs[0].Name != "counter" || refs[0].UID != "uid-counter" ||
			refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%s owner references %+v", o.GetName(), refs)
		}
	}

	// The configuration: the request's, the restore path under both keys,
	// the JobManager's address and ports; the same in both files.
	var conf map[string]string
	if err := yaml.Unmarshal([]byte(cm.Data[ConfigYAML]), &conf); err != nil {
		t.Fatalf("config.yaml: %v\n%s", err, cm.Data[ConfigYAML])
	}
	for k, v := range map[string]string{
		"$internal.pipeline.job-id": string(req.JobID), "execution.savepoint.path": req.RestorePath,
		"execution.state-recovery.path": req.RestorePath, "execution.savepoint.ignore-unclaimed-state": "true",
		"execution.state-recovery.ignore-unclaimed-state": "true", lifecycle.ShutdownOnFinish: "false",
		"jobmanager.rpc.address": svc.Name, "jobmanager.rpc.port": "6123", "blob.server.port": "6124", "rest.port": "8081",
		slotsKey: "2", "parallelism.default": "3", "state.checkpoints.dir": "file:/checkpoints",
	} {
		if conf[k] != v {
			t.Errorf("config.yaml %s: %q, want %q", k, conf[k], v)
		}
		if line := k + ": " + v + "\n"; !strings.Contains(cm.Data[LegacyConfigYAML], line) {
			t.Errorf("flink-conf.yaml has no line %q:\n%s", line, cm.Data[LegacyConfigYAML])
		}
	}
	if cm.Data[Log4jConsole] == "" {
		t.Error("no logging configuration")
	}

	// The JobManager: one, the job's entry point and arguments, the ports,
	// the configuration mounted.
	if jm.Name != c.Name+"-jobmanager" || *jm.Spec.Replicas != 1 || jm.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("jobmanager %s: %d replicas, strategy %s", jm.Name, *jm.Spec.Replicas, jm.Spec.Strategy.Type)
	}
	wantArgs := []string{"standalone-job", "--job-classname", flinktest.CounterJobClass, "--job-id", string(req.JobID), "--out", "/out"}
	ctr := checkPod(t, jm, c, "jobmanager")
	if !slices.Equal(ctr.Args, wantArgs) {
		t.Errorf("jobmanager args %q, want %q", ctr.Args, wantArgs)
	}
	var ports []int32
	for _, p := range ctr.Ports {
		ports = append(ports, p.ContainerPort)
	}
	if !slices.Equal(ports, []int32{6123, 6124, 8081}) {
		t.Errorf("jobmanager ports %v", ports)
	}
	// The Service: the JobManager's pods, rpc, blob and rest.
	if svc.Spec.Selector[LabelCluster] != c.Name || svc.Spec.Selector[LabelComponent] != "jobmanager" {
		t.Errorf("service selector %v", svc.Spec.Selector)
	}
	var sports []string
	for _, p := range svc.Spec.Ports {
		sports = append(sports, fmt.Sprintf("%s:%d->%s", p.Name, p.Port, p.TargetPort.String()))
	}
	if !slices.Equal(sports, []string{"rpc:6123->rpc", "blob:6124->blob", "rest:8081->rest"}) {
		t.Errorf("service ports %v", sports)
	}
	if !jmSelects(jm, svc) {
		t.Errorf("the service selector %v does not select the jobmanager's pods %v", svc.Spec.Selector, jm.Spec.Template.Labels)
	}
	// The TaskManagers: parallelism 3 over 2 slots each.
	if tm.Name != c.Name+"-taskmanager" || *tm.Spec.Replicas != 2 {
		t.Errorf("taskmanager %s: %d replicas, want 2", tm.Name, *tm.Spec.Replicas)
	}
	if ctr := checkPod(t, tm, c, "taskmanager"); !slices.Equal(ctr.Args, []string{"taskmanager"}) {
		t.Errorf("taskmanager args %q", ctr.Args)
	}
}

// checkPod checks the pod template of dep, the Deployment of c's
// component, and returns its container.
func checkPod(t *testing.T, dep *appsv1.Deployment, c lifecycle.Cluster, component string) corev1.Container {
	t.Helper()
	tpl := dep.Spec.Template
	if dep.Spec.Selector.MatchLabels[LabelComponent] != component || tpl.Labels[LabelComponent] != component ||
		dep.Spec.Selector.MatchLabels[LabelCluster] != c.Name || tpl.Labels[LabelCluster] != c.Name {
		t.Errorf("%s selector %v, pod labels %v", dep.Name, dep.Spec.Selector.MatchLabels, tpl.Labels)
	}
	if len(tpl.Spec.Containers) != 1 || len(tpl.Spec.Volumes) != 1 {
		t.Fatalf("%s pod %+v", dep.Name, tpl.Spec)
	}
	ctr, vol := tpl.Spec.Containers[0], tpl.Spec.Volumes[0]
	if ctr.Image != image || len(ctr.VolumeMounts) != 1 || ctr.VolumeMounts[0].MountPath != "/opt/flink/conf" ||
		ctr.VolumeMounts[0].Name != vol.Name || vol.ConfigMap == nil || vol.ConfigMap.Name != c.Name+"-config" {
		t.Errorf("%s container %+v, volume %+v", dep.Name, ctr, vol)
	}
	return ctr
}

func jmSelects(jm *appsv1.Deployment, svc *corev1.Service) bool {
	for k, v := range svc.Spec.Selector {
		if jm.Spec.Template.Labels[k] != v {
			return false
		}
	}
	return len(svc.Spec.Selector) > 0
}

// TestDeployAgain: Deploy for the same job id returns the same cluster
// and changes nothing; objects of a missing kind are created.
func TestDeployAgain(t *testing.T) {
	d := newDeployer(t)
	ctx := context.Background()
	req := request()
	c, err := d.Deploy(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	versions := func() []string {
		cm, svc, jm, tm := objects(t, d, c)
		var out []string
		for _, o := range []client.Object{cm, svc, jm, tm} {
			if o.GetName() == "" {
				out = append(out, "-")
				continue
			}
			out = append(out, o.GetResourceVersion())
		}
		return out
	}
	before := versions()
	again, err := d.Deploy(ctx, req)
	if err != nil || again != c {
		t.Fatalf("second Deploy: %+v, %v; want %+v", again, err, c)
	}
	if after := versions(); !slices.Equal(after, before) {
		t.Errorf("resource versions %v after the second Deploy, %v before", after, before)
	}
	var cms corev1.ConfigMapList
	var deps appsv1.DeploymentList
	var svcs corev1.ServiceList
	for _, l := range []client.ObjectList{&cms, &deps, &svcs} {
		if err := d.Kube.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if len(cms.Items) != 1 || len(deps.Items) != 2 || len(svcs.Items) != 1 {
		t.Errorf("%d config maps, %d deployments, %d services after two Deploys", len(cms.Items), len(deps.Items), len(svcs.Items))
	}

	// A Deploy that stopped halfway is completed.
	if err := d.Kube.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "streaming", Name: c.Name + "-taskmanager"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Deploy(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, _, _, tm := objects(t, d, c); tm == nil {
		t.Error("the missing taskmanager Deployment was not created again")
	}
}

// TestDeployRefused: objects of the cluster's name that belong to another
// job, and a FlinkJob without an image, refuse the deploy for good.
func TestDeployRefused(t *testing.T) {
	req := request()
	name := ClusterName("counter", req.JobID)
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "streaming", Name: name + "-jobmanager",
		Labels: map[string]string{LabelJobID: "0123456789abffffffffffffffffffff"}}}
	d := newDeployer(t, other)
	if _, err := d.Deploy(context.Background(), req); !errors.Is(err, lifecycle.ErrDeployRefused) || !strings.Contains(err.Error(), "belongs to job") {
		t.Errorf("Deploy over another job's objects: %v", err)
	}
	d = newDeployer(t)
	d.Job.Spec.Application = nil
	if _, err := d.Deploy(context.Background(), req); !errors.Is(err, lifecycle.ErrDeployRefused) {
		t.Errorf("Deploy without an image: %v", err)
	}
	d = newDeployer(t)
	req.FlinkConfiguration[slotsKey] = "none"
	if _, err := d.Deploy(context.Background(), req); !errors.Is(err, lifecycle.ErrDeployRefused) {
		t.Errorf("Deploy with slots %q: %v", "none", err)
	}
}

// TestDeleteAndExists: Exists follows the JobManager Deployment; Delete
// removes every object of the cluster, and again is no error.
func TestDeleteAndExists(t *testing.T) {
	d := newDeployer(t)
	ctx := context.Background()
	c, err := d.Deploy(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Exists(ctx, c); !ok || err != nil {
		t.Errorf("Exists after Deploy: %v, %v", ok, err)
	}
	for range 2 {
		if err := d.Delete(ctx, c); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if cm, svc, jm, tm := objects(t, d, c); cm != nil || svc != nil || jm != nil || tm != nil {
		t.Errorf("objects left after Delete: config %v, service %v, jobmanager %v, taskmanager %v", cm != nil, svc != nil, jm != nil, tm != nil)
	}
	if ok, err := d.Exists(ctx, c); ok || err != nil {
		t.Errorf("Exists after Delete: %v, %v", ok, err)
	}

	// A JobManager Deployment being deleted (held by a finalizer) no longer
	// counts.
	held := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "streaming", Name: c.Name + "-jobmanager", Finalizers: []string{"example.com/hold"}}}
	if err := d.Kube.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	if ok, _ := d.Exists(ctx, c); !ok {
		t.Error("Exists of a JobManager Deployment: false")
	}
	if err := d.Kube.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Exists(ctx, c); ok || err != nil {
		t.Errorf("Exists of a JobManager Deployment being deleted: %v, %v", ok, err)
	}
}

// TestClusterName: stable, a DNS label starting with a letter, and every
// object name within 63 characters, whatever the FlinkJob's name.
func TestClusterName(t *testing.T) {
	id := flinkapi.JobID("ABCDEF0123456789abcdef0123456789")
	for name, want := range map[string]string{
		"counter":                      "counter-abcdef012345",
		"9lives":                       "flink-9lives-abcdef012345",
		"a.b.c":                        "a-b-c-abcdef012345",
		strings.Repeat("x", 40) + ".y": strings.Repeat("x", 38) + "-abcdef012345",
		strings.Repeat("x", 37) + ".y": strings.Repeat("x", 37) + "-abcdef012345", // no dash left at the cut
		strings.Repeat("z", 253):       strings.Repeat("z", 38) + "-abcdef012345",
	} {
		got := ClusterName(name, id)
		if got != want {
			t.Errorf("ClusterName(%q) = %q, want %q", name, got, want)
		}
		if got != ClusterName(name, id) {
			t.Errorf("ClusterName(%q) is not stable", name)
		}
		for _, suffix := range []string{"-config", "-jobmanager", "-taskmanager"} {
			if errs := validation.IsDNS1035Label(got + suffix); len(errs) > 0 {
				t.Errorf("%s: %v", got+suffix, errs)
			}
		}
	}
}

// TestClient: the client talks to the cluster's URL, or to the one the
// URL hook gives.
func TestClient(t *testing.T) {
	srv := flinktest.NewServer(flinktest.WithVersion("2.3.0"))
	t.Cleanup(srv.Close)
	d := newDeployer(t)
	c := d.Cluster(request().JobID)
	var asked lifecycle.Cluster
	d.URL = func(c lifecycle.Cluster) (string, error) { asked = c; return srv.URL, nil }
	api, err := d.Client(c)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := api.Version(context.Background()); err != nil || v.String() != "2.3.0" || asked != c {
		t.Errorf("Version through the hook: %v, %v (hook asked for %+v)", v, err, asked)
	}
	d.URL = func(lifecycle.Cluster) (string, error) { return "", errors.New("no route") }
	if _, err := d.Client(c); err == nil || err.Error() != "no route" {
		t.Errorf("Client with a failing hook: %v", err)
	}
}
