package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The objects of the Application mode's clusters (internal/appcluster),
// which the FlinkJob controls: the controller lists and watches them.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;delete

// ownedWatches makes b watch the objects of the application clusters the
// FlinkJobs own (their JobManager and TaskManager Deployments, the
// JobManager's Service, the configuration's ConfigMap): when one is
// deleted, or starts being deleted, its FlinkJob is reconciled at once
// rather than at its next poll, so that a JobManager Deployment deleted by
// hand is seen as the cluster gone (lifecycle's Deployer.Exists) within a
// reconcile. Their creation and their other changes (a Deployment's
// status as its pods come and go) trigger nothing: the operator creates
// them itself, and the job is observed through the JobManager's REST
// API at every poll.
func ownedWatches(b *builder.Builder) *builder.Builder {
	gone := builder.WithPredicates(ownedGone())
	return b.Owns(&appsv1.Deployment{}, gone).Owns(&corev1.Service{}, gone).Owns(&corev1.ConfigMap{}, gone)
}

// ownedGone passes the deletion of an object, and the update that sets
// its deletionTimestamp (a delete that waits for finalizers or for its
// dependents, under foreground propagation).
func ownedGone() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return deleting(e.ObjectNew) && !deleting(e.ObjectOld)
		},
	}
}

// deleting reports whether o is being deleted.
func deleting(o client.Object) bool {
	return o != nil && o.GetDeletionTimestamp() != nil
}
