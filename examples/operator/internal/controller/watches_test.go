package controller

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestAPIServerWatchesOwnedObjects: a manager on the real API server with
// a poll interval of 10 minutes runs an application-mode FlinkJob; once
// deployed and at rest, its JobManager dies and its Deployment is deleted. A reconcile follows
// within a second (only the watch of the owned Deployments can bring it:
// the job at rest is next polled 10 minutes later), finds the cluster
// gone and the job Lost (Degraded; with no state to restart from, it
// waits for one).
func TestAPIServerWatchesOwnedObjects(t *testing.T) {
	srv, flink := realTimeFlink(t)
	ns := namespace(t)
	_, c := kube(t)
	// The kubelet plays the application clusters' pods on the fake
	// JobManager, reading their objects from the API server.
	h := &harness{t: t, srv: srv, k8s: c, jar: counterJar(t), key: types.NamespacedName{Namespace: ns, Name: "app"}, r: &FlinkJobReconciler{}}
	k := newKubelet(h)
	m := startManager(t, managerConfig{ns: ns, flink: flink, poll: 10 * time.Minute, retry: 10 * time.Minute,
		wrap: func(rec reconcile.Reconciler) reconcile.Reconciler {
			rec.(*FlinkJobReconciler).ClusterURL = k.url
			return rec
		}})
	j := createJob(t, ns, h.key.Name, h.appSpec())
	// Deployed, running, at rest: it would become stable at the next
	// poll, 10 minutes away.
	up := func(j *v1alpha1.FlinkJob) bool {
		return j != nil && j.Status.JobID != "" && !j.Status.InFlight() && j.Status.State == policy.Running && j.Status.JobState == "RUNNING"
	}
	first := j.wait("running", up).Status

	// At rest: no reconcile until the poll, 10 minutes away.
	time.Sleep(500 * time.Millisecond)
	before := m.gets.Load()
	time.Sleep(time.Second)
	if n := m.gets.Load() - before; n != 0 {
		t.Fatalf("%d reconciles of the job at rest within a second; the poll is 10 minutes", n)
	}

	// The JobManager dies with its Deployment.
	k.mu.Lock()
	k.apps[first.Cluster.Name].Close()
	k.mu.Unlock()
	jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.Cluster.Name + "-jobmanager"}}
	deleted := time.Now()
	if err := c.Delete(context.Background(), jm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reconcile after the delete", time.Second, func() bool { return m.gets.Load() > before })
	t.Logf("first reconcile %v after the JobManager Deployment's delete", time.Since(deleted).Round(time.Millisecond))
	var job *v1alpha1.FlinkJob
	eventually(t, "the job seen lost", 5*time.Second, func() bool {
		job = j.get()
		return job.Status.State == policy.Lost
	})
	t.Logf("job lost %v after the delete, in %d reconciles", time.Since(deleted).Round(time.Millisecond), m.gets.Load()-before)
	if d := cond(job, ConditionDegraded); d.Status != metav1.ConditionTrue {
		t.Errorf("Degraded %+v once the job is lost", d)
	}
}

// TestOwnedGone: the watch of owned objects passes their deletion, and
// the update that starts it; not their creation, nor other updates.
func TestOwnedGone(t *testing.T) {
	p := ownedGone()
	now := metav1.Now()
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "jm", Generation: 1}}
	changed := live.DeepCopy()
	changed.Generation, changed.Status.ReadyReplicas = 2, 1
	going := live.DeepCopy()
	going.DeletionTimestamp = &now
	goingMore := going.DeepCopy()
	goingMore.Status.ReadyReplicas = 0
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"create", p.Create(event.CreateEvent{Object: live}), false},
		{"update", p.Update(event.UpdateEvent{ObjectOld: live, ObjectNew: changed}), false},
		{"generic", p.Generic(event.GenericEvent{Object: live}), false},
		{"update of one being deleted", p.Update(event.UpdateEvent{ObjectOld: going, ObjectNew: goingMore}), false},
		{"delete", p.Delete(event.DeleteEvent{Object: live}), true},
		{"update that starts the deletion", p.Update(event.UpdateEvent{ObjectOld: live, ObjectNew: going}), true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: passed %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestAPIServerWatchesOverview: a manager with the overview watch on
// (Resync 10 minutes) runs two FlinkJobs on a session cluster. At rest
// neither is reconciled while the overview is read once per poll
// (400ms; MaxAge is 200ms); when one
// job is cancelled from the Flink UI, that FlinkJob is reconciled within
// a second and sees it; the other is not reconciled.
func TestAPIServerWatchesOverview(t *testing.T) {
	srv, flink := realTimeFlink(t)
	ns := namespace(t)
	shared := &lifecycle.SharedObservation{Client: flink, MaxAge: 200 * time.Millisecond}
	m := startManager(t, managerConfig{ns: ns, flink: flink, shared: shared, poll: 400 * time.Millisecond,
		retry: 10 * time.Minute, resync: 10 * time.Minute})
	jar := counterJar(t)
	a, b := createJob(t, ns, "a", counterSpec(jar)), createJob(t, ns, "b", counterSpec(jar))
	atRest := func(j *v1alpha1.FlinkJob) bool {
		return j != nil && j.Status.Settled && j.Status.State == policy.Running && j.Status.JobState == "RUNNING"
	}
	ja, jb := a.wait("a at rest", atRest), b.wait("b at rest", atRest)

	// At rest: the overview is read, nothing is reconciled. The window is
	// measured: on a busy machine the test may wake up late, and the
	// polls it then counts are those of the longer window (at most one
	// per 400ms, and at least two in 1.5s).
	time.Sleep(500 * time.Millisecond)
	from := time.Now()
	gets, reads := m.gets.Load(), shared.Reads()
	time.Sleep(1500 * time.Millisecond)
	n, window := shared.Reads()-reads, time.Since(from)
	if n := m.gets.Load() - gets; n != 0 {
		t.Fatalf("%d reconciles at rest within %v; the resync is 10 minutes", n, window)
	}
	if most := int64(window/(400*time.Millisecond)) + 1; n < 2 || n > most {
		t.Fatalf("%d overview reads in %v; want one per 400ms poll (2 to %d)", n, window, most)
	}

	// Job a cancelled from the Flink UI.
	if err := flink.CancelJob(context.Background(), ja.Status.JobID); err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	var seen *v1alpha1.FlinkJob
	// Seen once Flink's cache of the job's details (3s) shows it too.
	eventually(t, "FlinkJob a sees its job cancelled", 5*time.Second, func() bool {
		seen = a.get()
		return seen.Status.JobID != ja.Status.JobID || seen.Status.JobState != "RUNNING"
	})
	t.Logf("cancelled job seen %v after the cancel, in %d reconciles; status %s %s", time.Since(cancelled).Round(time.Millisecond),
		m.gets.Load()-gets, seen.Status.State, seen.Status.Reason)
	if now := b.get(); now.Status.JobID != jb.Status.JobID || now.ResourceVersion != jb.ResourceVersion && !atRest(now) {
		t.Errorf("FlinkJob b changed: %+v", now.Status)
	}
	if j, ok := srv.Job(jb.Status.JobID); !ok || j.State != "RUNNING" {
		t.Errorf("b's job %+v, want it running", j)
	}
}
