// Package appcluster is the lifecycle.Deployer of the Application mode: it
// runs each job of a FlinkJob in a Flink application cluster of its own,
// made of Kubernetes objects owned by the FlinkJob.
//
// For a job id, Deploy creates
//
//	<cluster>-config       ConfigMap: config.yaml (Flink 1.19+ and 2.x) and
//	                       flink-conf.yaml (Flink 1.x), the same configuration
//	<cluster>-jobmanager   Deployment, 1 replica: standalone-job --job-classname
//	                       <entry class> --job-id <id> [--jars <jar>] [args...]
//	<cluster>-jobmanager   Service: rpc 6123, blob 6124, rest 8081
//	<cluster>-taskmanager  Deployment: taskmanager, parallelism over
//	                       taskmanager.numberOfTaskSlots replicas
//
// where <cluster>, the lifecycle.Cluster's Name, is the FlinkJob's name
// and the start of the job id (ClusterName). The configuration is the
// DeployRequest's (the job's own, with lifecycle.ApplicationConfiguration's
// job id, restore path and execution.shutdown-on-application-finish:
// false), the restore path also under Flink 2's key
// (execution.state-recovery.path), and the cluster's wiring:
// jobmanager.rpc.address (the Service), the ports, the slots and the
// parallelism. Every object carries the labels of the FlinkJob, the
// cluster and the job id, and the FlinkJob as its controller owner, so
// that deleting the FlinkJob collects whatever its teardown left.
package appcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// The JobManager's ports.
const (
	RPCPort  = 6123
	BlobPort = 6124
	RESTPort = 8081
)

// Labels of the objects of an application cluster.
const (
	LabelFlinkJob  = "flinkkit.dev/flinkjob"
	LabelCluster   = "flinkkit.dev/cluster"
	LabelJobID     = "flinkkit.dev/job-id"
	LabelComponent = "flinkkit.dev/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "flinkkit-operator"
)

// Keys of the configuration ConfigMap.
const (
	ConfigYAML       = "config.yaml"
	LegacyConfigYAML = "flink-conf.yaml"
	Log4jConsole     = "log4j-console.properties"
)

const (
	confDir   = "/opt/flink/conf"
	usrlib    = "/opt/flink/usrlib/"
	slotsKey  = "taskmanager.numberOfTaskSlots"
	idLength  = 12                                      // of the job id, in the cluster's name
	maxPrefix = 63 - len("-taskmanager") - 1 - idLength // the longest object name is a DNS label
)

// Deployer is the lifecycle.Deployer of one FlinkJob's application
// clusters, in its namespace. Build it for each reconcile.
type Deployer struct {
	// Kube creates, reads and deletes the cluster's objects; its scheme
	// knows FlinkJobs and the core and apps types.
	Kube client.Client
	// Job is the FlinkJob the clusters run for: their namespace, owner,
	// image (Spec.Application.Image) and name.
	Job *v1alpha1.FlinkJob
	// URL, if set, is the address the operator reaches a cluster's REST
	// API at (a port-forward, a test's fake JobManager); nil: the
	// cluster's URL, its Service inside the Kubernetes cluster.
	URL func(lifecycle.Cluster) (string, error)
	// Timeout bounds each REST request; zero: 10s.
	Timeout time.Duration
}

var _ lifecycle.Deployer = (*Deployer)(nil)

// ClusterName is the name of the application cluster of job id of the
// FlinkJob named job: the name made a DNS label that starts with a letter
// and cut short enough for every object name ("-taskmanager" the
// longest) to stay within 63 characters, a dash and the first 12
// characters of the job id.
func ClusterName(job string, id flinkapi.JobID) string {
	base := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(job)), "-")
	if base == "" || base[0] < 'a' {
		base = "flink-" + base
	}
	if len(base) > maxPrefix {
		base = base[:maxPrefix]
	}
	sfx := strings.ToLower(string(id))
	if len(sfx) > idLength {
		sfx = sfx[:idLength]
	}
	return strings.TrimRight(base, "-") + "-" + sfx
}

// Cluster is the application cluster of job id.
func (d *Deployer) Cluster(id flinkapi.JobID) lifecycle.Cluster {
	name := ClusterName(d.Job.Name, id)
	return lifecycle.Cluster{Name: name, JobID: id,
		URL: fmt.Sprintf("http://%s-jobmanager.%s.svc:%d", name, d.Job.Namespace, RESTPort)}
}

// Deploy creates the objects of req's cluster that do not exist yet and
// returns the cluster. Objects of that name for another job id refuse the
// deploy.
func (d *Deployer) Deploy(ctx context.Context, req lifecycle.DeployRequest) (lifecycle.Cluster, error) {
	if req.JobID == "" || d.Job.Spec.Application == nil || d.Job.Spec.Application.Image == "" {
		return lifecycle.Cluster{}, fmt.Errorf("%w: an application cluster needs a job id and spec.application.image", lifecycle.ErrDeployRefused)
	}
	c := d.Cluster(req.JobID)
	objs, err := d.objects(c, req)
	if err != nil {
		return lifecycle.Cluster{}, err
	}
	for _, o := range objs {
		if err := controllerutil.SetControllerReference(d.Job, o, d.Kube.Scheme()); err != nil {
			return lifecycle.Cluster{}, fmt.Errorf("%w: %v", lifecycle.ErrDeployRefused, err)
		}
		err := d.Kube.Create(ctx, o)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return lifecycle.Cluster{}, err
			}
			continue
		}
		old := o.DeepCopyObject().(client.Object)
		if err := d.Kube.Get(ctx, client.ObjectKeyFromObject(o), old); err != nil {
			return lifecycle.Cluster{}, err
		}
		if got := old.GetLabels()[LabelJobID]; got != string(req.JobID) {
			return lifecycle.Cluster{}, fmt.Errorf("%w: %s %s belongs to job %q, not %s",
				lifecycle.ErrDeployRefused, kind(o), o.GetName(), got, req.JobID)
		}
	}
	return c, nil
}

// Delete deletes the objects of c; those already gone are no error.
func (d *Deployer) Delete(ctx context.Context, c lifecycle.Cluster) error {
	var errs []error
	for _, o := range d.named(c) {
		err := d.Kube.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Exists reports whether c's JobManager Deployment exists and is not
// being deleted.
func (d *Deployer) Exists(ctx context.Context, c lifecycle.Cluster) (bool, error) {
	var jm appsv1.Deployment
	err := d.Kube.Get(ctx, client.ObjectKey{Namespace: d.Job.Namespace, Name: c.Name + "-jobmanager"}, &jm)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && jm.DeletionTimestamp.IsZero(), err
}

// Client returns the client of c's REST API, without retries: the
// controller retries through its requeues.
func (d *Deployer) Client(c lifecycle.Cluster) (lifecycle.API, error) {
	url := c.URL
	if d.URL != nil {
		var err error
		if url, err = d.URL(c); err != nil {
			return nil, err
		}
	}
	timeout := d.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	return flinkapi.NewClient(url, flinkapi.WithRetryPolicy(flinkapi.NoRetry), flinkapi.WithTimeout(timeout))
}

// named are c's objects, by name only.
func (d *Deployer) named(c lifecycle.Cluster) []client.Object {
	m := func(suffix string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: d.Job.Namespace, Name: c.Name + suffix}
	}
	return []client.Object{&corev1.ConfigMap{ObjectMeta: m("-config")}, &corev1.Service{ObjectMeta: m("-jobmanager")},
		&appsv1.Deployment{ObjectMeta: m("-jobmanager")}, &appsv1.Deployment{ObjectMeta: m("-taskmanager")}}
}

// objects are the objects of cluster c running req, in the order they
// are created: the configuration first, the TaskManagers last.
func (d *Deployer) objects(c lifecycle.Cluster, req lifecycle.DeployRequest) ([]client.Object, error) {
	conf := Configuration(c, req)
	slots, err := strconv.Atoi(conf[slotsKey])
	if err != nil || slots < 1 {
		return nil, fmt.Errorf("%w: %s %q is not a positive number", lifecycle.ErrDeployRefused, slotsKey, conf[slotsKey])
	}
	full, err := yaml.Marshal(conf)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", lifecycle.ErrDeployRefused, err)
	}
	var legacy strings.Builder // Flink 1.x's flink-conf.yaml: "key: value", unquoted
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if strings.ContainsAny(k+conf[k], "\n\r") {
			return nil, fmt.Errorf("%w: configuration %q: a line break", lifecycle.ErrDeployRefused, k)
		}
		fmt.Fprintf(&legacy, "%s: %s\n", k, conf[k])
	}
	objs := d.named(c)
	labels := map[string]string{LabelFlinkJob: d.Job.Name, LabelCluster: c.Name, LabelJobID: string(c.JobID), LabelManagedBy: ManagedBy}
	for _, o := range objs {
		o.SetLabels(maps.Clone(labels))
	}
	objs[0].(*corev1.ConfigMap).Data = map[string]string{ConfigYAML: string(full), LegacyConfigYAML: legacy.String(), Log4jConsole: log4j}

	objs[1].(*corev1.Service).Labels[LabelComponent] = "jobmanager"
	objs[1].(*corev1.Service).Spec = corev1.ServiceSpec{Selector: selector(c, "jobmanager"), Ports: []corev1.ServicePort{
		{Name: "rpc", Port: RPCPort, TargetPort: intstr.FromString("rpc")},
		{Name: "blob", Port: BlobPort, TargetPort: intstr.FromString("blob")},
		{Name: "rest", Port: RESTPort, TargetPort: intstr.FromString("rest")},
	}}
	args := []string{"standalone-job"}
	if req.EntryClass != "" {
		args = append(args, "--job-classname", req.EntryClass)
	}
	args = append(args, "--job-id", string(req.JobID))
	if req.JarFile != "" && !strings.HasPrefix(req.JarFile, usrlib) {
		args = append(args, "--jars", req.JarFile)
	}
	d.deployment(objs[2].(*appsv1.Deployment), c, "jobmanager", 1, append(args, req.Args...),
		corev1.ContainerPort{Name: "rpc", ContainerPort: RPCPort}, corev1.ContainerPort{Name: "blob", ContainerPort: BlobPort},
		corev1.ContainerPort{Name: "rest", ContainerPort: RESTPort})
	tms := int32((max(req.Parallelism, 1) + slots - 1) / slots)
	d.deployment(objs[3].(*appsv1.Deployment), c, "taskmanager", tms, []string{"taskmanager"})
	return objs, nil
}

// deployment fills in the spec of dep, the Deployment of cluster c's
// component: replicas pods with the cluster's labels, whose one container
// runs the image with args and the configuration mounted.
func (d *Deployer) deployment(dep *appsv1.Deployment, c lifecycle.Cluster, component string, replicas int32, args []string, ports ...corev1.ContainerPort) {
	dep.Labels[LabelComponent] = component
	dep.Spec = appsv1.DeploymentSpec{
		Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: selector(c, component)},
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, // never two JobManagers
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(dep.Labels)},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: component, Image: d.Job.Spec.Application.Image, Args: args, Ports: ports,
					VolumeMounts: []corev1.VolumeMount{{Name: "flink-config", MountPath: confDir}}}},
				Volumes: []corev1.Volume{{Name: "flink-config", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: c.Name + "-config"}}}}},
			},
		},
	}
}

// selector selects the pods of cluster c's component.
func selector(c lifecycle.Cluster, component string) map[string]string {
	return map[string]string{LabelCluster: c.Name, LabelComponent: component}
}

// Configuration is the Flink configuration of cluster c running req:
// req.FlinkConfiguration (lifecycle.ApplicationConfiguration's settings
// included), the restore path and allowNonRestoredState also under Flink
// 2's keys, the JobManager's address and ports, the TaskManagers' slots
// (taskmanager.numberOfTaskSlots, 1 unless the job's configuration says)
// and the job's parallelism.
func Configuration(c lifecycle.Cluster, req lifecycle.DeployRequest) map[string]string {
	conf := lifecycle.ApplicationConfiguration(req) // idempotent on a request that holds its settings
	if p := conf["execution.savepoint.path"]; p != "" {
		conf["execution.state-recovery.path"] = p
		if v, ok := conf["execution.savepoint.ignore-unclaimed-state"]; ok {
			conf["execution.state-recovery.ignore-unclaimed-state"] = v
		}
	}
	conf["jobmanager.rpc.address"] = c.Name + "-jobmanager"
	conf["jobmanager.rpc.port"] = strconv.Itoa(RPCPort)
	conf["blob.server.port"] = strconv.Itoa(BlobPort)
	conf["rest.port"] = strconv.Itoa(RESTPort)
	if conf[slotsKey] == "" {
		conf[slotsKey] = "1"
	}
	if req.Parallelism > 0 {
		conf["parallelism.default"] = strconv.Itoa(req.Parallelism)
	}
	return conf
}

// log4j is the logging configuration of the cluster's containers, as
// Flink's image has it: to the console, at INFO.
const log4j = `rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
`

func kind(o client.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Service:
		return "Service"
	}
	return "Deployment"
}
