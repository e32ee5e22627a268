package policy_test

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/policy"
)

// A source feeding a keyed counter at parallelism 2: the counter is busy
// 900 ms of every second processing 180 records/s, so it could process
// 200; the source's backlog grows by 20 records/s. At a target
// utilisation of 70% the counter needs 4 subtasks.
func ExampleRecommendScale() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var src, counter []policy.ScaleSample
	for i := 0; i <= 10; i++ {
		at := now.Add(time.Duration(i-10) * 30 * time.Second)
		src = append(src, policy.ScaleSample{Time: at, BusyMicrosPerSecond: 5_000, RecordsOutMilli: 180_000,
			HasPending: true, PendingRecords: int64(i) * 600})
		counter = append(counter, policy.ScaleSample{Time: at, BusyMicrosPerSecond: 900_000, RecordsInMilli: 180_000})
	}
	in := policy.ScaleInput{
		Since: now.Add(-time.Hour),
		Vertices: []policy.ScaleVertex{
			{ID: "source", Parallelism: 2, MaxParallelism: 128, Samples: src},
			{ID: "counter", Inputs: []string{"source"}, Parallelism: 2, MaxParallelism: 128, Samples: counter},
		},
	}
	r := policy.RecommendScale(policy.AutoscalePolicy{Enabled: true}, in, now)
	fmt.Println(r.Reason, r.Current, "->", r.Target)
	fmt.Println(r.Message())

	// Rescaled a minute ago: the cool-down holds the parallelism.
	in.LastScale = now.Add(-time.Minute)
	r = policy.RecommendScale(policy.AutoscalePolicy{Enabled: true}, in, now)
	fmt.Println(r.Reason, r.Change())
	// Output:
	// ScaleUp 2 -> 4
	// scale up from 2 to 4: vertex counter needs 110% of its capacity at 2 (220.0 of 200.0 records/s)
	// ScaleCoolDown false
}
