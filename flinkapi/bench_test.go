package flinkapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
//	go test -run '^$' -bench . -benchmem -count 8 ./flinkapi | benchstat -col /impl -

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

func benchOverview(b *testing.B, n int) {
	body := overviewBody(b, n)
	srv := benchServer(b, body)
	ctx := context.Background()
	b.Logf("body %d bytes", len(body))

	b.Run("impl=minimal", func(b *testing.B) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ReportAllocs()
		for b.Loop() {
			var out struct {
				Jobs []minimalJob `json:"jobs"`
			}
			if err := handGet(ctx, hc, srv.URL+"/jobs/overview", &out); err != nil || len(out.Jobs) != n {
				b.Fatal(len(out.Jobs), err)
			}
		}
	})
	b.Run("impl=samefields", func(b *testing.B) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ReportAllocs()
		for b.Loop() {
			var out struct {
				Jobs []sameFieldsJob `json:"jobs"`
			}
			if err := handGet(ctx, hc, srv.URL+"/jobs/overview", &out); err != nil || len(out.Jobs) != n {
				b.Fatal(len(out.Jobs), err)
			}
		}
	})
	b.Run("impl=flinkapi", func(b *testing.B) {
		c, err := NewClient(srv.URL, WithFlinkVersion("2.3.0"))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			jobs, err := c.JobsOverview(ctx)
			if err != nil || len(jobs) != n || jobs[0].Tasks.Total == 0 {
				b.Fatal(len(jobs), err)
			}
		}
	})
}

// BenchmarkJobsOverview200 is GET /jobs/overview of 200 jobs (82 KB).
func BenchmarkJobsOverview200(b *testing.B) { benchOverview(b, 200) }

// BenchmarkJobsOverview10000 is GET /jobs/overview of 10,000 jobs (4 MB).
func BenchmarkJobsOverview10000(b *testing.B) { benchOverview(b, 10000) }

// BenchmarkJob20Vertices is GET /jobs/:jobid of a job with 20 vertices.
func BenchmarkJob20Vertices(b *testing.B) {
	body := jobDetailsBody(b, 20)
	srv := benchServer(b, body)
	ctx := context.Background()
	job := JobID("d021839a16ca881e41a7585942c72e4b")
	b.Logf("body %d bytes", len(body))

	b.Run("impl=minimal", func(b *testing.B) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ReportAllocs()
		for b.Loop() {
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
			if err := handGet(ctx, hc, srv.URL+"/jobs/"+string(job), &out); err != nil || len(out.Vertices) != 20 {
				b.Fatal(len(out.Vertices), err)
			}
		}
	})
	b.Run("impl=flinkapi", func(b *testing.B) {
		c, err := NewClient(srv.URL, WithFlinkVersion("2.3.0"))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			d, err := c.Job(ctx, job)
			if err != nil || len(d.Vertices) != 20 || d.Vertices[0].Tasks.Running != 1 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheckpoints10 is GET /jobs/:jobid/checkpoints with 10 history
// entries.
func BenchmarkCheckpoints10(b *testing.B) {
	body := checkpointsBody(b, 10)
	srv := benchServer(b, body)
	ctx := context.Background()
	job := JobID("d021839a16ca881e41a7585942c72e4b")
	b.Logf("body %d bytes", len(body))

	type point struct {
		ID           int64  `json:"id"`
		Status       string `json:"status"`
		IsSavepoint  bool   `json:"is_savepoint"`
		TriggerTime  int64  `json:"trigger_timestamp"`
		ExternalPath string `json:"external_path"`
		NumSubtasks  int    `json:"num_subtasks"`
		NumAcked     int    `json:"num_acknowledged_subtasks"`
	}
	b.Run("impl=minimal", func(b *testing.B) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ReportAllocs()
		for b.Loop() {
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
			if err := handGet(ctx, hc, srv.URL+"/jobs/"+string(job)+"/checkpoints", &out); err != nil || len(out.History) != 10 {
				b.Fatal(len(out.History), err)
			}
		}
	})
	b.Run("impl=flinkapi", func(b *testing.B) {
		c, err := NewClient(srv.URL, WithFlinkVersion("2.3.0"))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			st, err := c.Checkpoints(ctx, job)
			if err != nil || len(st.History) != 10 {
				b.Fatal(err)
			}
		}
	})
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
