package flinkapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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

// baselineJob is what a hand-written net/http + encoding/json client would
// decode: the same fields, with Flink's raw millisecond numbers.
type baselineJob struct {
	ID               string         `json:"jid"`
	Name             string         `json:"name"`
	State            string         `json:"state"`
	StartTime        int64          `json:"start-time"`
	EndTime          int64          `json:"end-time"`
	Duration         int64          `json:"duration"`
	LastModification int64          `json:"last-modification"`
	Tasks            map[string]int `json:"tasks"`
}

func baselineOverview(ctx context.Context, hc *http.Client, url string) ([]baselineJob, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/jobs/overview", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var out struct {
		Jobs []baselineJob `json:"jobs"`
	}
	return out.Jobs, json.Unmarshal(b, &out)
}

// BenchmarkJobsOverview200 compares JobsOverview over 200 jobs with a plain
// net/http + encoding/json baseline against the same local server:
//
//	go test -run '^$' -bench JobsOverview -benchmem -count 8 ./flinkapi | benchstat -col /impl -
func BenchmarkJobsOverview200(b *testing.B) {
	body := overviewBody(b, 200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	ctx := context.Background()

	b.Run("impl=nethttp", func(b *testing.B) {
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ReportAllocs()
		for b.Loop() {
			jobs, err := baselineOverview(ctx, hc, srv.URL)
			if err != nil || len(jobs) != 200 {
				b.Fatal(len(jobs), err)
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
			if err != nil || len(jobs) != 200 {
				b.Fatal(len(jobs), err)
			}
		}
	})
}

func TestOverviewBodyHas200Jobs(t *testing.T) {
	b := overviewBody(t, 200)
	if n := strings.Count(string(b), `"jid"`); n != 200 {
		t.Fatalf("%d jobs", n)
	}
}
