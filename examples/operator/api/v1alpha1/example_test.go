package v1alpha1_test

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
)

// A FlinkJob as kubectl would apply it (config/samples/flinkjob.yaml): the
// policies are flinkkit's own types, durations written as strings, and
// they validate as the reconciler's decisions will check them.
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
	fmt.Println(job.Kind, job.Name, spec.EntryClass)
	fmt.Println("update:", spec.Update.Mode, "from state at most", spec.Update.MaxStateAge, "old; valid:", spec.Update.Validate() == nil)
	fmt.Println("restart:", spec.Restart.Mode, "after", spec.Restart.Backoff, "; valid:", spec.Restart.Validate() == nil)
	fmt.Println("savepoint every", spec.SavepointInterval)
	// Output:
	// FlinkJob counter dev.flinkkit.testjob.CounterJob
	// update: Savepoint from state at most 6h0m0s old; valid: true
	// restart: FromLatestState after 30s ; valid: true
	// savepoint every 1h0m0s
}
