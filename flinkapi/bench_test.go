package flinkapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// The benchmarks compare the client with two baselines against the same
// local server, in the same run (benchstat -col /impl):
//
//   - impl=minimal: the simplest net/http + encoding/json client a
//     competent user would write by hand: io.ReadAll, json.Unmarshal, and
//     only the fields a lifecycle tool reads (task counts as the two
//     numbers it needs, Flink's raw milliseconds);
//   - impl=samefields (overview only): the same, decoding the fields the
//     client decodes, task counts as map[string]int, as the client did
//     before it decoded them into TaskCounts;
//   - impl=flinkapi: the client.
//
// Each runs at n=10, 1,000 and 10,000, pool=warm and pool=cold (see
// benchCold), the implementations side by side:
//
//	go test -run '^$' -bench . -benchmem -count 6 ./flinkapi | benchstat -col /impl -

// overviewBody builds a GET /jobs/overview answer with n jobs, shaped like
// the answer recorded from Flink 2.3.0.
func overviewBody(tb testing.TB, n int) []byte {
	tb.Helper()
	var rec struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(real(tb, "2.3.0", "jobs_overview.json")), &rec); err != nil || len(rec.Jobs) == 0 {
		tb.Fatalf("recorded overview: %v", err)
	}
	jobs := make([]map[string]any, n)
	for i := range jobs {
		j := map[string]any{}
		for k, v := range rec.Jobs[0] {
			j[k] = v
		}
		j["jid"] = fmt.Sprintf("%032x", i+1)
		j["name"] = fmt.Sprintf("streaming-job-%d", i)
		jobs[i] = j
	}
	b, err := json.Marshal(map[string]any{"jobs": jobs})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// jobDetailsBody builds a GET /jobs/:jobid answer with n vertices (and a
// plan of n nodes), shaped like the answer recorded from Flink 2.3.0.
func jobDetailsBody(tb testing.TB, n int) []byte {
	tb.Helper()
	var rec map[string]any
	if err := json.Unmarshal([]byte(real(tb, "2.3.0", "job_details.json")), &rec); err != nil {
		tb.Fatal(err)
	}
	v0 := rec["vertices"].([]any)[0].(map[string]any)
	plan := rec["plan"].(map[string]any)
	n0 := plan["nodes"].([]any)[0].(map[string]any)
	vertices, nodes := make([]any, n), make([]any, n)
	for i := range n {
		id := fmt.Sprintf("%032x", 1000+i)
		v := map[string]any{}
		for k, x := range v0 {
			v[k] = x
		}
		v["id"], v["name"] = id, fmt.Sprintf("operator-%d -> chained-%d", i, i)
		vertices[i] = v
		nd := map[string]any{}
		for k, x := range n0 {
			nd[k] = x
		}
		nd["id"] = id
		nodes[i] = nd
	}
	rec["vertices"], plan["nodes"] = vertices, nodes
	b, err := json.Marshal(rec)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkpointsBody builds a GET /jobs/:jobid/checkpoints answer with n
// history entries, shaped like the answer recorded from Flink 2.3.0.
func checkpointsBody(tb testing.TB, n int) []byte {
	tb.Helper()
	var rec map[string]any
	if err := json.Unmarshal([]byte(real(tb, "2.3.0", "checkpoints.json")), &rec); err != nil {
		tb.Fatal(err)
	}
	h0 := rec["history"].([]any)[0].(map[string]any)
	hist := make([]any, n)
	for i := range n {
		e := map[string]any{}
		for k, x := range h0 {
			e[k] = x
		}
		e["id"] = n - i
		e["external_path"] = "file:/tmp/flinkkit/checkpoints/d021839a16ca881e41a7585942c72e4b/chk-" + strconv.Itoa(n-i)
		hist[i] = e
	}
	rec["history"] = hist
	latest := rec["latest"].(map[string]any)
	latest["savepoint"] = hist[n/2]
	b, err := json.Marshal(rec)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// benchServer answers every request with body, as Flink does: with a
// Content-Length.
func benchServer(tb testing.TB, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// handGet is the hand-written client's GET: io.ReadAll, then
// json.Unmarshal.
func handGet(ctx context.Context, hc *http.Client, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return json.Unmarshal(b, out)
}

// minimalJob is what a lifecycle tool reads of a job overview.
type minimalJob struct {
	ID        string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`
	Tasks     struct {
		Running int `json:"running"`
		Total   int `json:"total"`
	} `json:"tasks"`
}

// sameFieldsJob decodes the fields the client decodes, task counts as a map.
type sameFieldsJob struct {
	ID               string         `json:"jid"`
	Name             string         `json:"name"`
	State            string         `json:"state"`
	StartTime        int64          `json:"start-time"`
	EndTime          int64          `json:"end-time"`
	Duration         int64          `json:"duration"`
	LastModification int64          `json:"last-modification"`
	Tasks            map[string]int `json:"tasks"`
}

// benchSizes are the numbers of jobs, vertices or history entries each
// benchmark is run with.
var benchSizes = []int{10, 1000, 10000}

// benchImpls runs each implementation of impls, in the order given, under
// n=<size>/pool=<warm|cold>/impl=<name>.
func benchImpls(b *testing.B, n int, impls []benchImpl) {
	b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
		for _, pool := range []string{"warm", "cold"} {
			b.Run("pool="+pool, func(b *testing.B) {
				for _, im := range impls {
					b.Run("impl="+im.name, func(b *testing.B) {
						if pool == "warm" {
							benchWarm(b, im.op)
						} else {
							benchCold(b, im.op)
						}
					})
				}
			})
		}
	})
}

type benchImpl struct {
	name string
	op   func() (any, error)
}

// benchWarm calls op back to back, as a loop polling without pause would:
// the pools of the client and of net/http stay full.
func benchWarm(b *testing.B, op func() (any, error)) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCold runs two garbage collections, untimed, before each call of
// op, so that every sync.Pool is empty, as it is for an operator that
// polls every 30 s. It also reports held-B/op: the bytes of live objects
// after one more collection that follows the call, with its result still
// referenced, less those before it (runtime/metrics' /gc/heap/live:bytes,
// exact to the byte, where the heap's in-use spans would count whole
// pages); that is the result and whatever the call left in pools or
// caches.
func benchCold(b *testing.B, op func() (any, error)) {
	b.ReportAllocs()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var held, ops int64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		runtime.GC()
		metrics.Read(live)
		before := int64(live[0].Value.Uint64())
		b.StartTimer()
		r, err := op()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		metrics.Read(live)
		held += int64(live[0].Value.Uint64()) - before
		ops++
		runtime.KeepAlive(r)
		b.StartTimer()
	}
	b.ReportMetric(float64(held)/float64(ops), "held-B/op")
}

// newBenchClients returns a client of srv and a net/http client for the
// hand-written baselines.
func newBenchClients(b *testing.B, srv *httptest.Server) (*Client, *http.Client) {
	// 10,000 vertices and their plan are 11 MB, above the default limit.
	c, err := NewClient(srv.URL, WithFlinkVersion("2.3.0"), WithMaxResponseSize(64<<20))
	if err != nil {
		b.Fatal(err)
	}
	return c, &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// BenchmarkJobsOverview is GET /jobs/overview of n jobs (10,000 jobs:
// 4 MB).
func BenchmarkJobsOverview(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		srv := benchServer(b, overviewBody(b, n))
		c, hc := newBenchClients(b, srv)
		benchImpls(b, n, []benchImpl{
			{"minimal", func() (any, error) {
				var out struct {
					Jobs []minimalJob `json:"jobs"`
				}
				err := handGet(ctx, hc, srv.URL+"/jobs/overview", &out)
				if err == nil && len(out.Jobs) != n {
					err = fmt.Errorf("%d jobs", len(out.Jobs))
				}
				return out.Jobs, err
			}},
			{"samefields", func() (any, error) {
				var out struct {
					Jobs []sameFieldsJob `json:"jobs"`
				}
				err := handGet(ctx, hc, srv.URL+"/jobs/overview", &out)
				if err == nil && len(out.Jobs) != n {
					err = fmt.Errorf("%d jobs", len(out.Jobs))
				}
				return out.Jobs, err
			}},
			{"flinkapi", func() (any, error) {
				jobs, err := c.JobsOverview(ctx)
				if err == nil && (len(jobs) != n || jobs[0].Tasks.Total == 0) {
					err = fmt.Errorf("%d jobs", len(jobs))
				}
				return jobs, err
			}},
		})
	}
}

// BenchmarkJobDetails is GET /jobs/:jobid of a job with n vertices (and a
// plan of n nodes).
func BenchmarkJobDetails(b *testing.B) {
	ctx := context.Background()
	job := JobID("d021839a16ca881e41a7585942c72e4b")
	for _, n := range benchSizes {
		srv := benchServer(b, jobDetailsBody(b, n))
		c, hc := newBenchClients(b, srv)
		benchImpls(b, n, []benchImpl{
			{"minimal", func() (any, error) {
				var out struct {
					ID         string           `json:"jid"`
					Name       string           `json:"name"`
					State      string           `json:"state"`
					StartTime  int64            `json:"start-time"`
					EndTime    int64            `json:"end-time"`
					Now        int64            `json:"now"`
					Timestamps map[string]int64 `json:"timestamps"`
					Vertices   []struct {
						ID          string `json:"id"`
						Parallelism int    `json:"parallelism"`
						Status      string `json:"status"`
						Tasks       struct {
							Running int `json:"RUNNING"`
						} `json:"tasks"`
					} `json:"vertices"`
				}
				err := handGet(ctx, hc, srv.URL+"/jobs/"+string(job), &out)
				if err == nil && len(out.Vertices) != n {
					err = fmt.Errorf("%d vertices", len(out.Vertices))
				}
				return &out, err
			}},
			{"flinkapi", func() (any, error) {
				d, err := c.Job(ctx, job)
				if err == nil && (len(d.Vertices) != n || d.Vertices[0].Tasks.Running != 1) {
					err = fmt.Errorf("%+v", d)
				}
				return d, err
			}},
		})
	}
}

// BenchmarkCheckpoints is GET /jobs/:jobid/checkpoints with n history
// entries (Flink keeps web.checkpoints.history of them, 10 by default).
func BenchmarkCheckpoints(b *testing.B) {
	ctx := context.Background()
	job := JobID("d021839a16ca881e41a7585942c72e4b")
	type point struct {
		ID           int64  `json:"id"`
		Status       string `json:"status"`
		IsSavepoint  bool   `json:"is_savepoint"`
		TriggerTime  int64  `json:"trigger_timestamp"`
		ExternalPath string `json:"external_path"`
		NumSubtasks  int    `json:"num_subtasks"`
		NumAcked     int    `json:"num_acknowledged_subtasks"`
	}
	for _, n := range benchSizes {
		srv := benchServer(b, checkpointsBody(b, n))
		c, hc := newBenchClients(b, srv)
		benchImpls(b, n, []benchImpl{
			{"minimal", func() (any, error) {
				var out struct {
					Counts struct {
						Completed int64 `json:"completed"`
					} `json:"counts"`
					Latest struct {
						Completed *point `json:"completed"`
						Savepoint *point `json:"savepoint"`
						Restored  *struct {
							ID           int64  `json:"id"`
							ExternalPath string `json:"external_path"`
						} `json:"restored"`
					} `json:"latest"`
					History []point `json:"history"`
				}
				err := handGet(ctx, hc, srv.URL+"/jobs/"+string(job)+"/checkpoints", &out)
				if err == nil && len(out.History) != n {
					err = fmt.Errorf("%d entries", len(out.History))
				}
				return &out, err
			}},
			{"flinkapi", func() (any, error) {
				st, err := c.Checkpoints(ctx, job)
				if err == nil && (len(st.History) != n || st.LatestSavepoint == nil) {
					err = fmt.Errorf("%+v", st)
				}
				return st, err
			}},
		})
	}
}

func TestBenchBodies(t *testing.T) {
	if n := strings.Count(string(overviewBody(t, 200)), `"jid"`); n != 200 {
		t.Fatalf("%d jobs", n)
	}
	srv := benchServer(t, jobDetailsBody(t, 20))
	c, err := NewClient(srv.URL, WithFlinkVersion("2.3.0"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Job(context.Background(), "d021839a16ca881e41a7585942c72e4b")
	if err != nil || len(d.Vertices) != 20 || d.Vertices[19].Tasks != (TaskCounts{Running: 1, Total: 1}) || d.Timestamps[JobRunning].IsZero() {
		t.Fatalf("%+v, %v", d, err)
	}
	srv = benchServer(t, checkpointsBody(t, 10))
	c, _ = NewClient(srv.URL, WithFlinkVersion("2.3.0"))
	st, err := c.Checkpoints(context.Background(), "d021839a16ca881e41a7585942c72e4b")
	if err != nil || len(st.History) != 10 || st.LatestSavepoint == nil {
		t.Fatalf("%+v, %v", st, err)
	}
}
