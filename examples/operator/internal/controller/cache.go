package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/examples/operator/internal/appcluster"
)

// LabelSecret marks the Secrets the operator may read: a Secret a
// FlinkSessionCluster names (its CA, client certificate, credentials)
// must carry the label flinkkit.dev/secret: "true". The manager's cache
// holds only those (CacheByObject), so a Secret without it is, to the
// operator, not found.
const LabelSecret = "flinkkit.dev/secret"

// CacheByObject limits the manager's cache (cache.Options.ByObject) to
// the objects the operator manages, so that it does not hold every Secret
// and ConfigMap of the cluster in memory: the Secrets labelled
// LabelSecret "true", and the Deployments, Services and ConfigMaps
// labelled app.kubernetes.io/managed-by: flinkkit-operator (the
// application clusters' objects and the restore points' ConfigMaps, which
// the operator labels so when it creates them). FlinkJobs and
// FlinkSessionClusters are cached whole.
func CacheByObject() map[client.Object]cache.ByObject {
	secrets := labels.SelectorFromSet(labels.Set{LabelSecret: "true"})
	owned := labels.SelectorFromSet(labels.Set{appcluster.LabelManagedBy: appcluster.ManagedBy})
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}:     {Label: secrets},
		&corev1.ConfigMap{}:  {Label: owned},
		&corev1.Service{}:    {Label: owned},
		&appsv1.Deployment{}: {Label: owned},
	}
}
