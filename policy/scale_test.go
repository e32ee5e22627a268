package policy

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// thinByScan is the rule thinSamples implements, one scan per drop, on a
// copy of ss.
func thinByScan(ss []HealthSample, max int) []HealthSample {
	return thinInPlace(slices.Clone(ss), max)
}

// thinInPlace is the thinning written by hand: while there are too many
// samples, scan for the one closest to its predecessor and delete it.
func thinInPlace(ss []HealthSample, max int) []HealthSample {
	for len(ss) > max {
		drop, gap := 1, time.Duration(math.MaxInt64)
		for i := 1; i < len(ss)-1; i++ {
			if g := ss[i].Time.Sub(ss[i-1].Time); g < gap {
				drop, gap = i, g
			}
		}
		ss = append(ss[:drop], ss[drop+1:]...)
	}
	return ss
}

// thinSamples drops the samples the scan drops, for samples in time order
// and out of it, with equal gaps.
func TestThinSamplesIsTheScan(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for c := range 3000 {
		n := 3 + rng.Intn(80)
		ss := make([]HealthSample, n)
		tm := base
		for i := range ss {
			if c%5 == 0 {
				tm = base.Add(time.Duration(rng.Intn(40)) * time.Second) // out of order
			} else {
				tm = tm.Add(time.Duration(1+rng.Intn(4)) * time.Second)
			}
			ss[i] = HealthSample{Time: tm, Restarts: int64(i)}
		}
		max := 2 + rng.Intn(n)
		want := thinByScan(ss, max)
		got := thinSamples(slices.Clone(ss), max)
		if !slices.EqualFunc(want, got, func(a, b HealthSample) bool { return a.Time.Equal(b.Time) && a.Restarts == b.Restarts }) {
			t.Fatalf("case %d (n=%d, max=%d): got %v, want %v", c, n, max, got, want)
		}
	}
}

var sinkHealth HealthHistory

// BenchmarkHealthHistoryScale measures Add on a stored history of n samples
// (10, 1,000, 10,000), which it thins to MaxHealthSamples, against the
// simplest hand-written bound (impl=hand: keep the newest samples).
//
//	go test -run '^$' -bench HealthHistoryScale -benchmem -count 8 ./policy | benchstat -col /impl -
func BenchmarkHealthHistoryScale(b *testing.B) {
	job := flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := HealthPolicy{Window: Duration(1000 * time.Hour)}
	for _, n := range []int{10, 1000, 10000} {
		samples := make([]HealthSample, n)
		for i := range samples {
			samples[i] = HealthSample{Time: start.Add(time.Duration(i)*time.Second + time.Duration(i%7)*time.Millisecond), State: flinkapi.JobRunning}
		}
		next := HealthSample{Time: start.Add(time.Duration(n) * time.Second), State: flinkapi.JobRunning}
		b.Run(fmt.Sprintf("n=%d/impl=hand", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ss := append(slices.Clone(samples), next)
				if len(ss) > MaxHealthSamples {
					ss = ss[len(ss)-MaxHealthSamples:]
				}
				sinkHealth.Samples = ss
			}
		})
		b.Run(fmt.Sprintf("n=%d/impl=policy", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h := HealthHistory{JobID: job, Samples: slices.Clone(samples)}
				h.Add(job, start, next, p)
				sinkHealth = h
			}
		})
	}
}

// spreadSamples returns n samples of a running job, oldest first, ending
// at now, a second apart give or take up to 300ms, restarts counted
// every 100 samples.
func spreadSamples(n int) []HealthSample {
	rng := rand.New(rand.NewSource(int64(n)))
	ss := make([]HealthSample, n)
	for i := range ss {
		at := now.Add(-time.Duration(n-1-i)*time.Second + time.Duration(rng.Intn(300))*time.Millisecond)
		ss[i] = HealthSample{Time: at, State: flinkapi.JobRunning, Restarts: int64(i / 100),
			CompletedCheckpoints: int64(i / 30), LatestCheckpoint: at.Add(-10 * time.Second)}
	}
	return ss
}

var sinkSamples []HealthSample

// BenchmarkThinSamples measures thinning n samples (10, 1,000, 10,000) to
// MaxHealthSamples in place, against the thinning written by hand
// (impl=baseline: one scan and one delete per dropped sample). Each
// iteration copies the samples into a buffer allocated once.
//
//	go test -run '^$' -bench ThinSamples -benchmem -count 6 ./policy | benchstat -col /impl -
func BenchmarkThinSamples(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		samples := spreadSamples(n)
		buf := make([]HealthSample, n)
		for _, impl := range []struct {
			name string
			thin func([]HealthSample, int) []HealthSample
		}{{"baseline", thinInPlace}, {"policy", thinSamples}} {
			b.Run(fmt.Sprintf("n=%d/impl=%s", n, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copy(buf, samples)
					sinkSamples = impl.thin(buf, MaxHealthSamples)
				}
			})
		}
	}
}

// baselineHealth is the health check written by hand: a job is healthy
// while it runs and Flink restarted it at most 3 times in the last 10
// minutes, counted from the newest sample at or before that.
func baselineHealth(h *HealthHistory, now time.Time) bool {
	last := h.Samples[len(h.Samples)-1]
	base := h.Samples[0]
	cut := now.Add(-10 * time.Minute)
	for _, s := range h.Samples {
		if s.Time.After(cut) {
			break
		}
		base = s
	}
	return last.State == flinkapi.JobRunning && last.Restarts-base.Restarts <= 3
}

var sinkHealthy bool

// BenchmarkEvaluateHealthScale measures a health evaluation over a stored
// history of n samples (10, 1,000, 10,000; Add keeps MaxHealthSamples,
// but a history is data and may be longer), against the hand-written
// restart count (impl=baseline).
//
//	go test -run '^$' -bench EvaluateHealthScale -benchmem -count 6 ./policy | benchstat -col /impl -
func BenchmarkEvaluateHealthScale(b *testing.B) {
	obs := withCheckpoint(observe(flinkapi.JobRunning), time.Minute)
	for _, n := range []int{10, 1000, 10000} {
		h := HealthHistory{JobID: jobID, Started: ago(48 * time.Hour), CheckpointInterval: Duration(time.Minute), Samples: spreadSamples(n)}
		b.Run(fmt.Sprintf("n=%d/impl=baseline", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkHealthy = baselineHealth(&h, now)
			}
		})
		b.Run(fmt.Sprintf("n=%d/impl=policy", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				healthSink = EvaluateHealth(HealthPolicy{}, h, obs, now)
			}
		})
	}
}
