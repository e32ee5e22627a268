package controller

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// withStore gives the manager's reconciler store as its restore points.
func withStore(store lifecycle.RestorePointStore) func(reconcile.Reconciler) reconcile.Reconciler {
	return func(r reconcile.Reconciler) reconcile.Reconciler {
		r.(*FlinkJobReconciler).Store = store
		return r
	}
}

// TestAPIServerLeaderRestorePoint: two managers with leader election, each
// with a ConfigMapStore of its own on the API server. The leader tears
// down a deleted FlinkJob and records its final savepoint in the
// namespace's ConfigMap; then it stops (without giving up its lease, as a
// process that dies), the other becomes leader, the FlinkJob is created
// again, and its job starts from the savepoint the first leader recorded.
func TestAPIServerLeaderRestorePoint(t *testing.T) {
	ctx := context.Background()
	srv, flink := realTimeFlink(t)
	ns := namespace(t)
	leases := namespace(t)
	storeA, storeB := apiStore(t, nil), apiStore(t, nil)
	a := startManager(t, managerConfig{ns: ns, flink: flink, leaderNS: leases, wrap: withStore(storeA)})
	eventually(t, "a elected", waitTimeout, a.elected)
	b := startManager(t, managerConfig{ns: ns, flink: flink, leaderNS: leases, wrap: withStore(storeB)})

	spec := counterSpec(counterJar(t))
	j := createJob(t, ns, "counter", spec)
	old := j.wait("running", runs).Status.JobID
	if err := j.c.Delete(ctx, j.get()); err != nil {
		t.Fatal(err)
	}
	j.wait("gone", func(job *v1alpha1.FlinkJob) bool { return job == nil })
	if info, _ := srv.Job(old); info.State != flinkapi.JobFinished {
		t.Errorf("the deleted FlinkJob's job is %s, want FINISHED (stopped with a savepoint)", info.State)
	}
	rec, ok, err := storeB.Get(ctx, ns+"/counter")
	if !ok || err != nil || rec.Location == "" || rec.JobID != old {
		t.Fatalf("restore point as the second manager reads it: %+v, %v, %v; want the final savepoint of %s", rec, ok, err, old)
	}
	if exists, _ := srv.SavepointExists(rec.Location); !exists {
		t.Errorf("savepoint %s does not exist", rec.Location)
	}
	if cm := restorePoints(t, ns); len(cm.OwnerReferences) != 0 {
		t.Errorf("the restore points ConfigMap is owned: %v", cm.OwnerReferences)
	}
	if b.elected() || b.gets.Load() != 0 {
		t.Fatalf("b reconciled before a stopped: elected %v, %d reconciles", b.elected(), b.gets.Load())
	}

	a.stop()
	stopped := time.Now()
	eventually(t, "b elected", waitTimeout, b.elected)
	handover := time.Since(stopped)
	j = createJob(t, ns, "counter", spec)
	job := j.wait("running again", runs)
	t.Logf("b elected %v after a stopped (lease 2s); the re-created FlinkJob ran %v after that",
		handover.Round(time.Millisecond), (time.Since(stopped) - handover).Round(time.Millisecond))
	info, ok := srv.Job(job.Status.JobID)
	if !ok || job.Status.JobID == old || info.State != flinkapi.JobRunning || info.RestoredFrom != rec.Location {
		t.Errorf("re-created job %s %s restored from %q; want a new job restored from %s", info.ID, info.State, info.RestoredFrom, rec.Location)
	}
	if live := liveJobs(srv); len(live) != 1 {
		t.Errorf("%d live jobs, want 1", len(live))
	}
	if b.gets.Load() == 0 {
		t.Errorf("b never reconciled")
	}
}
