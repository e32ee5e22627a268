package v1alpha1_test

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
)

// A FlinkJob as kubectl would apply it (config/samples/flinkjob.yaml): the
// spec is flinkkit's lifecycle.JobSpec, durations written as strings, and
// it validates as the controller will check it.
func Example() {
	b, err := os.ReadFile("../../config/samples/flinkjob.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	var job v1alpha1.FlinkJob
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		fmt.Println(err)
		return
	}
	spec := job.Spec
	fmt.Println(job.Kind, job.Name, spec.Job.EntryClass, "parallelism", spec.Job.Parallelism, spec.State)
	fmt.Println("update:", spec.Update.Mode, "from state at most", spec.Update.MaxStateAge, "old")
	fmt.Println("restart:", spec.Restart.Mode, "after", spec.Restart.Backoff)
	fmt.Println("savepoint every", spec.Savepoints.Interval, "keeping", spec.Savepoints.MaxCount)
	fmt.Println("rollback:", spec.Rollback.Enabled, "unless stable within", spec.Rollback.ReadinessTimeout)
	fmt.Println("valid:", spec.Validate() == nil)
	// Output:
	// FlinkJob counter dev.flinkkit.testjob.CounterJob parallelism 2 Running
	// update: Savepoint from state at most 6h0m0s old
	// restart: FromLatestState after 30s
	// savepoint every 1h0m0s keeping 5
	// rollback: true unless stable within 5m0s
	// valid: true
}

// A FlinkJob in the Application mode (config/samples/flinkjob-application.yaml):
// the image of its application clusters and the job's jar inside it.
func Example_application() {
	b, err := os.ReadFile("../../config/samples/flinkjob-application.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	var job v1alpha1.FlinkJob
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		fmt.Println(err)
		return
	}
	spec := job.Spec
	fmt.Println(job.Name, spec.Mode, spec.Application.Image)
	fmt.Println(spec.Job.JarFile, spec.Job.EntryClass, "parallelism", spec.Job.Parallelism)
	fmt.Println("valid:", spec.Validate() == nil)
	// Output:
	// counter-app Application registry.example.com/flinkkit-testjob:1.20.5
	// /opt/flink/usrlib/flinkkit-testjob.jar dev.flinkkit.testjob.CounterJob parallelism 2
	// valid: true
}
