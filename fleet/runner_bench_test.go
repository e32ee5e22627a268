package fleet

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// BenchmarkRunnerPass measures a pass over a fleet at rest (every
// deployment due, as at each poll without a watch): the Runner's Pass
// against the baseline a user writes by hand, a loop over the records
// calling each one's Controller.Reconcile with one shared observation of
// the cluster and storing its record after the call. Both keep their
// records in the same in-memory Store and act on the same fake
// JobManager. FLINKKIT_BENCH_FLEET_MAX bounds the sizes (default 1000;
// 10000 adds the largest).
func BenchmarkRunnerPass(b *testing.B) {
	limit := 1000
	if v := os.Getenv("FLINKKIT_BENCH_FLEET_MAX"); v != "" {
		fmt.Sscan(v, &limit)
	}
	for _, n := range []int{10, 1000, 10000} {
		if n > limit {
			continue
		}
		f, r := restingFleet(b, n)
		b.Run(fmt.Sprintf("deployments=%d/impl=runner", n), func(b *testing.B) {
			srv := f.servers["main"]
			srv.ClearRequests()
			b.ReportAllocs()
			for b.Loop() {
				f.clock.Advance(30 * time.Second)
				if _, err := r.Pass(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(srv.Requests()))/float64(b.N), "requests/pass")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/deployment")
		})
		b.Run(fmt.Sprintf("deployments=%d/impl=loop", n), func(b *testing.B) {
			srv := f.servers["main"]
			env := r.Clusters["main"]
			shared := &lifecycle.SharedObservation{Client: env.Client, Clock: f.clock, MaxAge: 15 * time.Second}
			ctx := context.Background()
			recs, err := f.store.List(ctx)
			if err != nil {
				b.Fatal(err)
			}
			srv.ClearRequests()
			b.ReportAllocs()
			for b.Loop() {
				f.clock.Advance(30 * time.Second)
				for i := range recs {
					rec := &recs[i]
					ctrl := &lifecycle.Controller{Env: env, Name: rec.Name, PollInterval: 30 * time.Second, Shared: shared}
					if _, err := ctrl.Reconcile(ctx, rec.Spec, &rec.Status); err != nil {
						b.Fatal(err)
					}
					if err := f.store.Save(ctx, rec); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(srv.Requests()))/float64(b.N), "requests/pass")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/deployment")
		})
	}
}

// restingFleet is a fleet of n deployments on one fake cluster, all
// running at rest.
func restingFleet(b *testing.B, n int) (*fakeFleet, *Runner) {
	b.Helper()
	f := newFakeFleetTB(b, n, "main")
	r := f.runner()
	r.Parallel = 1
	var desired []Deployment
	for i := range n {
		desired = append(desired, f.deployment("main", fmt.Sprintf("job-%05d", i), 10))
	}
	if _, err := r.Sync(context.Background(), desired); err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		res, err := r.Pass(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if allDone(res) {
			// One more poll, so that every deployment is at rest.
			f.clock.Advance(30 * time.Second)
			if _, err := r.Pass(context.Background()); err != nil {
				b.Fatal(err)
			}
			return f, r
		}
		f.clock.Advance(nextWait(res, f.clock.Now()))
	}
	b.Fatalf("%d deployments did not come to rest", n)
	return nil, nil
}
