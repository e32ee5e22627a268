package policy

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var scaleSink ScaleRecommendation

// chainJob is a pipeline of n vertices, each reading the one before, with
// 11 samples each over 5 minutes.
func chainJob(n int) ScaleInput {
	in := ScaleInput{Since: now.Add(-time.Hour)}
	for i := range n {
		v := ScaleVertex{ID: fmt.Sprintf("v%05d", i), Parallelism: 4, MaxParallelism: 128}
		if i > 0 {
			v.Inputs = []string{in.Vertices[i-1].ID}
		}
		for s := 10; s >= 0; s-- {
			v.Samples = append(v.Samples, ScaleSample{Time: now.Add(-time.Duration(s) * 30 * time.Second), BusyMicrosPerSecond: 400_000 + i%500_000,
				RecordsInMilli: 100_000, RecordsOutMilli: 100_000})
		}
		in.Vertices = append(in.Vertices, v)
	}
	return in
}

// baselineScale is the simplest hand-written alternative: each vertex's
// own busy share over the window, scaled to the target utilisation,
// without graph, bounds or stabilisation.
func baselineScale(in ScaleInput) int {
	target := 0
	for _, v := range in.Vertices {
		busy := 0.0
		for _, s := range v.Samples {
			busy += float64(s.BusyMicrosPerSecond) / 1e6
		}
		busy /= float64(len(v.Samples))
		target = max(target, int(math.Ceil(float64(v.Parallelism)*busy/0.7)))
	}
	return target
}

// BenchmarkRecommendScale measures a recommendation for a chain of 10,
// 1,000 and 10,000 vertices, beside the baseline over the same samples.
func BenchmarkRecommendScale(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		in := chainJob(n)
		b.Run(fmt.Sprintf("RecommendScale/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scaleSink = RecommendScale(AutoscalePolicy{}, in, now)
			}
		})
		b.Run(fmt.Sprintf("Baseline/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scaleSink.Target = baselineScale(in)
			}
		})
	}
}
