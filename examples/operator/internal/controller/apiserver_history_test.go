package controller

import (
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestAPIServerKeepsCompactHistory: the savepoint history in its compact
// form (the job, the reason and the location prefix its records share
// written once, fields the Go type does not have) goes through the
// status subresource and comes back whole: the CRD keeps the fields it
// does not describe instead of pruning them.
func TestAPIServerKeepsCompactHistory(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	_, c := kube(t)
	job := &v1alpha1.FlinkJob{}
	job.Name, job.Namespace = "history", ns
	job.Spec.Job.JarFile = "/jars/counter.jar"
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var h savepoint.History
	for i := range 6 {
		r := savepoint.Record{Location: "s3://bucket/savepoints/savepoint-a1b2c3-00000000000" + string(rune('0'+i)), Time: t0.Add(time.Duration(i) * 10 * time.Minute),
			Reason: savepoint.ReasonScheduled, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
		if i == 2 {
			r.Reason, r.JobID = savepoint.ReasonUpdate, "0123456789abcdef0123456789abcdef"
			r.SetOnDelete(savepoint.OnDeleteKeep)
			r.SetDisposal(savepoint.Disposal{Attempts: 1, Error: savepoint.DisposalRefused, RetryAt: t0.Add(time.Hour)})
		}
		h = h.Add(r)
	}
	job.Status.Savepoints = h
	if err := c.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.FlinkJob
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "history"}, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, got.Status.Savepoints) {
		t.Errorf("history stored and read back:\n%+v\nsent:\n%+v", got.Status.Savepoints, h)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("FlinkJob"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "history"}, u); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"jobID", "reason", "prefix"} {
		if v, ok, _ := unstructured.NestedString(u.Object, "status", "savepoints", f); !ok || v == "" {
			t.Errorf("status.savepoints.%s not stored: %q", f, v)
		}
	}
}
