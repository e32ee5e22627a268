package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/examples/operator/internal/controller"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// The reconciler deploys a FlinkJob, then updates it with a savepoint. A
// fake Kubernetes API and a fake JobManager on a manual clock stand in
// for the real ones; the loop plays the controller's work queue, moving
// the clock by each RequeueAfter instead of waiting.
func Example() {
	ctx := context.Background()
	srv := flinktest.NewServer()
	defer srv.Close()
	flink, _ := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	dir, _ := os.MkdirTemp("", "operator-example")
	defer os.RemoveAll(dir)
	jar := filepath.Join(dir, "counter.jar")
	_ = os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600)

	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	k8s := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.FlinkJob{}).Build()
	jars, _ := lifecycle.JarDir(dir) // the only directory jars are read from (--jar-root)
	r := &controller.FlinkJobReconciler{Client: k8s, Flink: flink, Clock: srv.Clock(), Jars: jars}

	key := types.NamespacedName{Namespace: "default", Name: "counter"}
	_ = k8s.Create(ctx, &v1alpha1.FlinkJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: 1},
		Spec: v1alpha1.FlinkJobSpec{JobSpec: lifecycle.JobSpec{
			Job:    lifecycle.JobTemplate{JarFile: jar, Args: []string{"--out", "/out/counter", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"}},
			Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		}},
	})
	// settle reconciles until the job runs the current spec, stable.
	settle := func() *v1alpha1.FlinkJob {
		var job v1alpha1.FlinkJob
		for range 100 {
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			if err != nil {
				fmt.Println(err)
				return nil
			}
			_ = k8s.Get(ctx, key, &job)
			st := job.Status
			if st.ObservedGeneration == job.Generation && !st.InFlight() && st.Reason == string(policy.Running) {
				break
			}
			srv.Clock().Advance(res.RequeueAfter)
		}
		return &job
	}

	job := settle()
	fmt.Println(job.Status.Action, job.Status.Progress.Outcome, job.Status.State)

	job.Spec.Job.Args = append(job.Spec.Job.Args, "--name", "v2")
	job.Generation++ // the API server's part
	_ = k8s.Update(ctx, job)
	job = settle()
	st := job.Status
	fmt.Println(st.Action, st.Progress.Outcome, st.State)
	fmt.Println("restored from the", st.Latest.Reason, "savepoint:", st.Progress.Replace.RestoreFrom == st.Latest.Location)
	fmt.Println(st.Conditions[0].Type, st.Conditions[0].Status)
	// Output:
	// Deploy Succeeded Running
	// Upgrade Succeeded Running
	// restored from the Update savepoint: true
	// Ready True
}
