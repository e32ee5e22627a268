package policy_test

import (
	"fmt"

	"github.com/flinkkit/flinkkit/policy"
)

// ComparePlans checks an upgrade before the old job stops: here the new
// jar changed the counter's uid (its vertex id changed) and asks for more
// slots than the session cluster has. The old plan comes from the running
// job (JobPlanDetails and Job, through NewJobPlan), the new one from the
// jar plan, and the state of each old vertex from the details of the
// job's newest completed checkpoint (flinkapi.Client.CheckpointDetails).
func ExampleComparePlans() {
	old := policy.JobPlan{Vertices: []policy.PlanVertex{
		{ID: "b93d204074064b03a853367828fb3dfe", Name: "Source: key-source", Parallelism: 2, MaxParallelism: 128},
		{ID: "0e3160945c69999b81da5f032a648b30", Name: "counter", Parallelism: 2, MaxParallelism: 128},
	}}
	next := policy.JobPlan{Vertices: []policy.PlanVertex{
		{ID: "b93d204074064b03a853367828fb3dfe", Name: "Source: key-source", Parallelism: 4},
		{ID: "7d3c5e0ad5b1e4f6a2c9d8b7e6f5a4c3", Name: "counter", Parallelism: 4},
	}}
	// The old job stops first, so its slots count as available.
	free := 1
	state := policy.StateSizes{Known: true, CheckpointID: 12, Bytes: map[string]int64{
		"b93d204074064b03a853367828fb3dfe": 265, "0e3160945c69999b81da5f032a648b30": 3898}}
	v := policy.ComparePlans(old, next, policy.PreflightOptions{CheckSlots: true, AvailableSlots: free + policy.SlotsNeeded(old), OldState: state})
	fmt.Println("allowed:", v.Allowed())
	for _, d := range v.Dropped {
		fmt.Printf("dropped %s: %d bytes\n", d.Name, d.Bytes)
	}
	for _, f := range v.Findings {
		if f.Refuses {
			fmt.Printf("%s: %s\n", f.Reason, f.Message)
		}
	}
	// Output:
	// allowed: false
	// dropped counter: 3898 bytes
	// StateNotRestored: 1 vertex of the old job is not in the new plan and holds state (3.8 KiB in checkpoint 12), which would not be restored: "counter" (0e3160945c69999b81da5f032a648b30), 3.8 KiB (the new plan has "counter" under the id 7d3c5e0ad5b1e4f6a2c9d8b7e6f5a4c3: was the uid of its first operator changed?); keep the operators' uids, or allow non-restored state
	// NotEnoughSlots: the new job needs 4 task slots (its largest parallelism, 4) and 3 are available
}
