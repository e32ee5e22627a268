package flinkapi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
)

// The answers below have the shape of Flink's MetricCollectionResponseBody:
// an array of {"id", "value"} with values as strings, and an empty array
// while the metric fetcher has not fetched the job's metrics yet.
func TestJobRestarts(t *testing.T) {
	metrics := testBase + "/jobs/" + string(testJob) + "/metrics"
	tests := []struct {
		name    string
		status  int
		body    string
		n       int64
		ok      bool
		wantErr func(error) bool
	}{
		{name: "count", status: 200, body: `[{"id":"numRestarts","value":"3"}]`, n: 3, ok: true},
		{name: "zero", status: 200, body: `[{"id":"numRestarts","value":"0"}]`, n: 0, ok: true},
		{name: "not fetched yet", status: 200, body: `[]`},
		{name: "not a number", status: 200, body: `[{"id":"numRestarts","value":"NaN"}]`,
			wantErr: func(err error) bool { return strings.Contains(err.Error(), `metric numRestarts is "NaN"`) }},
		{name: "negative", status: 200, body: `[{"id":"numRestarts","value":"-1"}]`,
			wantErr: func(err error) bool { return strings.Contains(err.Error(), "not a count") }},
		{name: "unknown job", status: 404, body: flinkError("org.apache.flink.runtime.rest.NotFoundException: Job a1b2c3d4e5f60718293a4b5c6d7e8f90 not found"),
			wantErr: func(err error) bool { return errors.Is(err, ErrNotFound) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, mt, rec := newTestClient(t, "1.20.5")
			mt.RegisterResponder("GET", metrics, httpmock.NewStringResponder(tc.status, tc.body))
			n, ok, err := c.JobRestarts(context.Background(), testJob)
			switch {
			case tc.wantErr != nil:
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("JobRestarts: %d, %v, %v; want a matching error", n, ok, err)
				}
			case err != nil || n != tc.n || ok != tc.ok:
				t.Fatalf("JobRestarts: %d, %v, %v; want %d, %v", n, ok, err, tc.n, tc.ok)
			}
			reqs := rec.all()
			if len(reqs) == 0 || reqs[0].Query != "get=numRestarts" {
				t.Errorf("requests %+v, want one with get=numRestarts", reqs)
			}
		})
	}
}

func TestJobMetrics(t *testing.T) {
	c, mt, rec := newTestClient(t, "2.3.0")
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/metrics",
		httpmock.NewStringResponder(200, `[{"id":"numRestarts","value":"1"},{"id":"uptime","value":"123456"}]`))
	m, err := c.JobMetrics(context.Background(), testJob, "numRestarts", "uptime", "downtime")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["numRestarts"] != "1" || m["uptime"] != "123456" {
		t.Errorf("metrics %v", m)
	}
	if q := rec.all()[0].Query; q != "get=numRestarts%2Cuptime%2Cdowntime" {
		t.Errorf("query %q", q)
	}
	for _, names := range [][]string{nil, {""}, {"a,b"}} {
		if _, err := c.JobMetrics(context.Background(), testJob, names...); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("JobMetrics(%q): %v, want ErrInvalidInput", names, err)
		}
	}
	if _, err := c.JobMetrics(context.Background(), "nope", "numRestarts"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad job id: %v", err)
	}
	if n := len(rec.all()); n != 1 {
		t.Errorf("%d requests; bad input must send nothing", n)
	}
}
