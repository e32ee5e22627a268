package flinktest_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// BenchmarkCatchUp measures the first request after the clock advances
// 10 s over a cluster of n running jobs checkpointing every second (about
// 20 events per job), through the client with its default timeout:
// impl=steady is the same request with nothing to catch up (the
// baseline), impl=catchup the request after the advance.
//
//	go test -run '^$' -bench CatchUp -benchmem -count 8 ./flinkapi/flinktest | benchstat -col /impl -
func BenchmarkCatchUp(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			if n > 1000 && testing.Short() {
				b.Skip("short")
			}
			srv, c := runningJobs(b, n)
			ctx := context.Background()
			b.Run("impl=steady", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if jobs, err := c.JobsOverview(ctx); err != nil || len(jobs) != n {
						b.Fatal(len(jobs), err)
					}
				}
			})
			b.Run("impl=catchup", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					srv.Clock().Advance(10 * time.Second)
					if jobs, err := c.JobsOverview(ctx); err != nil || len(jobs) != n {
						b.Fatal(len(jobs), err)
					}
				}
			})
		})
	}
}

// runningJobs starts n running jobs on one fake cluster.
func runningJobs(tb testing.TB, n int) (*flinktest.Server, *flinkapi.Client) {
	tb.Helper()
	srv := flinktest.NewServer(flinktest.WithSlots(n), flinktest.WithCheckpointInterval(time.Second))
	tb.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL) // the default timeout
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	jar, err := c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if _, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{ProgramArgs: []string{"--out", fmt.Sprintf("/out/%d", i)}}); err != nil {
			tb.Fatal(err)
		}
	}
	srv.Clock().Advance(5 * time.Second)
	jobs, err := c.JobsOverview(ctx)
	if err != nil || len(jobs) != n {
		tb.Fatal(len(jobs), err)
	}
	for _, j := range jobs {
		if j.State != flinkapi.JobRunning {
			tb.Fatalf("job %s %s", j.ID, j.State)
		}
	}
	return srv, c
}

// BenchmarkFleet measures one request to a cluster of n running jobs
// through the client with its default timeout, the clock standing still:
// get=job is GET /jobs/:jobid, whose cost should not grow with n;
// get=overview is GET /jobs/overview, which lists every job. There is no
// other implementation to compare with: read the growth from n=10 to
// n=10000.
//
//	go test -run '^$' -bench Fleet -benchmem -count 6 ./flinkapi/flinktest | benchstat -col /impl -
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{10, 1000, 5000, 10000} {
		if n > 1000 && testing.Short() {
			continue
		}
		srv, c := runningJobs(b, n)
		ctx := context.Background()
		jobs, err := c.JobsOverview(ctx)
		if err != nil {
			b.Fatal(err)
		}
		id := jobs[len(jobs)/2].ID
		b.Run(fmt.Sprintf("get=job/impl=flinktest/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, err := c.Job(ctx, id); err != nil || d.State != flinkapi.JobRunning {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("get=overview/impl=flinktest/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if jobs, err := c.JobsOverview(ctx); err != nil || len(jobs) != n {
					b.Fatal(len(jobs), err)
				}
			}
		})
		srv.Close()
	}
}
