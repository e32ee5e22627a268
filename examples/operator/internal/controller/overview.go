package controller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// jobIDField indexes the FlinkJobs in the manager's cache by the id of
// the job they run (status.jobID).
const jobIDField = "status.jobID"

// overviewWatch reads the overview of every session cluster the
// FlinkJobs run on (the default one, Shared, and each FlinkSessionCluster
// in use) once per interval, with lifecycle.SharedObservation.Changes,
// and reconciles at once the FlinkJobs whose job it shows changed: the
// informer of the JobManagers, as the manager's cache is the API
// server's. It runs on the leader only.
type overviewWatch struct {
	r        *FlinkJobReconciler
	cache    client.Reader
	interval time.Duration
	events   chan event.TypedGenericEvent[*v1alpha1.FlinkJob]
}

// watchOverviews makes b reconcile the FlinkJobs whose job a session
// cluster's overview shows changed (when r.Resync is set): it indexes
// the FlinkJobs by job id and adds the watch to mgr.
func (r *FlinkJobReconciler) watchOverviews(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	if r.Resync <= 0 || r.Shared == nil && r.Sessions == nil {
		return b, nil
	}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.FlinkJob{}, jobIDField, func(o client.Object) []string {
		if id := o.(*v1alpha1.FlinkJob).Status.JobID; id != "" {
			return []string{string(id)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Once per poll: while watched, the Controllers take an overview up
	// to two MaxAge old (SharedObservation.Changes).
	interval := r.PollInterval
	if interval <= 0 {
		interval = 2 * lifecycle.DefaultSharedMaxAge
	}
	w := &overviewWatch{r: r, cache: mgr.GetClient(), interval: interval,
		events: make(chan event.TypedGenericEvent[*v1alpha1.FlinkJob], 256)}
	if err := mgr.Add(w); err != nil {
		return nil, err
	}
	return b.WatchesRawSource(source.Channel(w.events, &handler.TypedEnqueueRequestForObject[*v1alpha1.FlinkJob]{})), nil
}

// Start reads the overviews every interval until ctx ends.
func (w *overviewWatch) Start(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		for _, s := range w.observations() {
			ids, err := s.Changes(ctx)
			if err != nil && ctx.Err() == nil {
				log.FromContext(ctx).V(1).Info("reading a session cluster's overview", "error", err.Error())
			}
			if err := w.reconcile(ctx, ids); err != nil {
				return nil // ctx ended
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// observations are the shared overviews of the session clusters in use.
func (w *overviewWatch) observations() []*lifecycle.SharedObservation {
	var all []*lifecycle.SharedObservation
	if w.r.Shared != nil {
		all = append(all, w.r.Shared)
	}
	if w.r.Sessions != nil {
		all = append(all, w.r.Sessions.observations()...)
	}
	return all
}

// reconcile queues the FlinkJobs that run the jobs ids; an error only
// when ctx ended.
func (w *overviewWatch) reconcile(ctx context.Context, ids []flinkapi.JobID) error {
	for _, id := range ids {
		var jobs v1alpha1.FlinkJobList
		if err := w.cache.List(ctx, &jobs, client.MatchingFields{jobIDField: string(id)}); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.FromContext(ctx).Error(err, "listing the FlinkJobs of a job", "job", id)
			continue
		}
		for i := range jobs.Items {
			select {
			case w.events <- event.TypedGenericEvent[*v1alpha1.FlinkJob]{Object: &jobs.Items[i]}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
