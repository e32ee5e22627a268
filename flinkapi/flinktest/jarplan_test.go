package flinktest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// The test job's vertex ids as real Flink gives them (recorded from
// 1.20.5 and 2.3.0): the uids flinkkit-key-source and flinkkit-counter.
const (
	realSourceID  = "b93d204074064b03a853367828fb3dfe"
	realCounterID = "0e3160945c69999b81da5f032a648b30"
)

// TestJarPlan: every personality answers the jar plan with the vertices
// the program's arguments give, and its errors as Flink does.
func TestJarPlan(t *testing.T) {
	for _, version := range []string{"1.15.4", "1.19.1", "1.20.5", "2.0.0", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			srv := flinktest.NewServer(flinktest.WithVersion(version))
			t.Cleanup(srv.Close)
			c, err := flinkapi.NewClient(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			jar, err := c.UploadJarReader(ctx, "job.jar", strings.NewReader(string(flinktest.MinimalJar(flinktest.CounterJobClass))))
			if err != nil {
				t.Fatal(err)
			}
			base := []string{"--out", "/out/p", "--name", "planned"}
			p, err := c.JarPlan(ctx, jar, flinkapi.JarPlanRequest{ProgramArgs: base, Parallelism: 3, JobID: "0123456789abcdef0123456789abcdef"})
			if err != nil {
				t.Fatal(err)
			}
			if p.JobID != "0123456789abcdef0123456789abcdef" || p.Name != "planned" || len(p.Nodes) != 2 {
				t.Fatalf("plan %+v", p)
			}
			src, okS := p.Node(realSourceID)
			cnt, okC := p.Node(realCounterID)
			if !okS || !okC || src.Parallelism != 3 || cnt.Parallelism != 3 || len(cnt.Inputs) != 1 || cnt.Inputs[0] != realSourceID {
				t.Errorf("nodes %+v", p.Nodes)
			}
			// --parallelism wins over the request's; --uid-suffix changes
			// the counter's id to the one Flink derives from the new uid.
			p, err = c.JarPlan(ctx, jar, flinkapi.JarPlanRequest{ProgramArgs: append(base, "--parallelism", "2", "--uid-suffix", "-v2", "--max-parallelism", "64"), Parallelism: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := p.Node(realCounterID); ok || len(p.Nodes) != 2 || p.Nodes[0].Parallelism != 2 {
				t.Errorf("with --uid-suffix: %+v", p.Nodes)
			}

			// A running job with the flags shows the counter's maximum
			// parallelism in its details.
			id, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{ProgramArgs: append(base, "--uid-suffix", "-v2", "--max-parallelism", "64")})
			if err != nil {
				t.Fatal(err)
			}
			running, err := c.JobPlanDetails(ctx, id)
			if err == nil && len(running.Nodes) == 2 {
				d, err := c.Job(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range d.Vertices {
					want := 128
					if v.ID != realSourceID {
						want = 64
					}
					if _, ok := running.Node(v.ID); !ok || v.MaxParallelism != want {
						t.Errorf("vertex %s: max parallelism %d, want %d; in the plan %v", v.Name, v.MaxParallelism, want, ok)
					}
				}
			}

			_, err = c.JarPlan(ctx, "00000000-0000-0000-0000-000000000000_gone.jar", flinkapi.JarPlanRequest{ProgramArgs: base})
			if !flinkapi.IsJarNotFound(err) || flinkapi.IsProgramError(err) {
				t.Errorf("missing jar: %v", err)
			}
			_, err = c.JarPlan(ctx, jar, flinkapi.JarPlanRequest{ProgramArgs: append(base, "--max-parallelism", "0")})
			if !flinkapi.IsProgramError(err) || flinkapi.IsJarNotFound(err) {
				t.Errorf("bad argument: %v", err)
			}
			_, err = c.JarPlan(ctx, jar, flinkapi.JarPlanRequest{EntryClass: "no.Such", ProgramArgs: base})
			if !flinkapi.IsProgramError(err) {
				t.Errorf("missing entry class: %v", err)
			}
		})
	}
}

// TestJarPlanStrictMapper: up to 1.19 a field the plan body does not
// declare (the jar run's savepointPath) is refused with 400; 1.20 and
// later ignore it.
func TestJarPlanStrictMapper(t *testing.T) {
	for version, want := range map[string]int{"1.19.1": 400, "1.20.5": 200, "2.3.0": 200} {
		srv := flinktest.NewServer(flinktest.WithVersion(version))
		c, _ := flinkapi.NewClient(srv.URL)
		jar, err := c.UploadJarReader(context.Background(), "job.jar", strings.NewReader(string(flinktest.MinimalJar(flinktest.CounterJobClass))))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL+"/jars/"+string(jar)+"/plan", "application/json",
			strings.NewReader(`{"programArgsList":["--out","/o"],"savepointPath":"/sp"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", version, resp.StatusCode, want)
		}
		srv.Close()
	}
}
