package policy

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestEvaluateAllocatesNothing checks that every decision on valid input
// allocates nothing: random policies, observations, restore requests and
// histories as the property tests make them (those that do not validate
// left out, as their decision carries the error's text), and histories
// far longer than Add keeps.
func TestEvaluateAllocatesNothing(t *testing.T) {
	check := func(what string, i int, f func()) {
		t.Helper()
		if n := testing.AllocsPerRun(5, f); n != 0 {
			t.Fatalf("%s (case %d): %v allocations per call, want 0", what, i, n)
		}
	}
	for i := range 400 {
		g := newGen(uint64(i))
		up, rp, hp := g.updatePolicy(), g.restartPolicy(), g.healthPolicy()
		obs := g.observations(time.Hour, 24*time.Hour)
		if g.chance(0.3) {
			obs.Restore = request(g.dur(48 * time.Hour))
			obs.Restore.CheckAge = g.chance(0.5)
		}
		h := g.healthHistory()
		if up.Validate() == nil && obs.Restore.Validate() == nil {
			check("EvaluateUpdate", i, func() { sink = EvaluateUpdate(up, obs, now) })
		}
		if rp.Validate() == nil {
			check("EvaluateRestart", i, func() { sink = EvaluateRestart(rp, obs, now) })
		}
		if hp.Validate() == nil {
			check("EvaluateHealth", i, func() { healthSink = EvaluateHealth(hp, h, obs, now) })
		}
	}
	for _, n := range []int{10, 1000, 10000} {
		h := HealthHistory{JobID: jobID, Started: ago(48 * time.Hour), CheckpointInterval: Duration(time.Minute), Samples: spreadSamples(n)}
		obs := withCheckpoint(observe(flinkapi.JobRunning), time.Minute)
		for _, p := range []HealthPolicy{{}, {Action: HealthRestartFromLatestState, MaxRestarts: 1}} {
			check("EvaluateHealth of a long history", n, func() { healthSink = EvaluateHealth(p, h, obs, now) })
		}
	}
	obs := RescaleObservations{FlinkVersion: flinkapi.Version{Major: 1, Minor: 20}, JobState: flinkapi.JobRunning,
		Vertices: []VertexParallelism{{ID: "a", Parallelism: 2, MaxParallelism: 128}, {ID: "b", Parallelism: 4, MaxParallelism: 128}}}
	for i, target := range []int{0, 4, 8, 200} {
		for _, s := range []Scheduler{SchedulerDefault, SchedulerAdaptive} {
			obs.Scheduler = s
			for _, p := range []RescalePolicy{{}, {InPlaceOnly: true}} {
				check("DecideRescale", i, func() { sinkRescale = DecideRescale(p, obs, target) })
			}
		}
	}
}

// TestThinSamplesAllocatesOnce checks that thinning allocates its scratch
// space once, whatever the number of samples dropped, and nothing when
// there is nothing to drop.
func TestThinSamplesAllocatesOnce(t *testing.T) {
	for _, c := range []struct{ n, want int }{{10, 0}, {MaxHealthSamples, 0}, {MaxHealthSamples + 2, 1}, {1000, 1}, {10000, 1}} {
		samples := spreadSamples(c.n)
		buf := make([]HealthSample, c.n)
		got := testing.AllocsPerRun(20, func() {
			copy(buf, samples)
			sinkSamples = thinSamples(buf, MaxHealthSamples)
		})
		if got != float64(c.want) {
			t.Errorf("thinning %d samples: %v allocations, want %d", c.n, got, c.want)
		}
	}
}
