package flinkapi

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jarcoal/httpmock"
)

const testVertex = "0e3160945c69999b81da5f032a648b30"

// The answers below have the shape of Flink's AggregatedMetricsResponseBody
// (an array of {"id", "min", "max", "avg", "sum"} with doubles, NaN as a
// string) and of JobVertexBackPressureInfo.
func TestVertexLoad(t *testing.T) {
	c, mt, rec := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/vertices/"+testVertex+"/subtasks/metrics",
		httpmock.NewStringResponder(200, `[{"id":"busyTimeMsPerSecond","avg":750.5,"max":900,"sum":1501},
			{"id":"backPressuredTimeMsPerSecond","avg":0,"max":0,"sum":0},
			{"id":"idleTimeMsPerSecond","avg":249.5,"max":300,"sum":499},
			{"id":"numRecordsInPerSecond","avg":20,"max":25,"sum":40},
			{"id":"numRecordsOutPerSecond","avg":"NaN","max":"NaN","sum":"NaN"},
			{"id":"Source__src.pendingRecords","avg":5,"max":10,"sum":10}]`))
	l, err := c.VertexLoad(context.Background(), testJob, testVertex, "Source__src.pendingRecords")
	if err != nil {
		t.Fatal(err)
	}
	if l.BusyMsPerSecond != 750.5 || l.MaxBusyMsPerSecond != 900 || l.IdleMsPerSecond != 249.5 || l.RecordsInPerSecond != 40 ||
		!math.IsNaN(l.RecordsOutPerSecond) || l.PendingRecords != 10 || l.BackPressuredMsPerSecond != 0 {
		t.Errorf("VertexLoad = %+v", l)
	}
	if l.Complete() {
		t.Error("a load with a NaN rate is complete")
	}
	reqs := rec.all()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Query, "agg=avg%2Cmax%2Csum") ||
		!strings.Contains(reqs[0].Query, "get=busyTimeMsPerSecond%2CbackPressuredTimeMsPerSecond%2CidleTimeMsPerSecond%2CnumRecordsInPerSecond%2CnumRecordsOutPerSecond%2CSource__src.pendingRecords") {
		t.Errorf("requests %+v", reqs)
	}
}

func TestVertexMetricsInput(t *testing.T) {
	c, _, rec := newTestClient(t, "2.3.0")
	ctx := context.Background()
	for name, err := range map[string]error{
		"no names":      func() error { _, err := c.VertexMetrics(ctx, testJob, testVertex, nil); return err }(),
		"comma":         func() error { _, err := c.VertexMetrics(ctx, testJob, testVertex, []string{"a,b"}); return err }(),
		"bad agg":       func() error { _, err := c.VertexMetrics(ctx, testJob, testVertex, []string{"a"}, "median"); return err }(),
		"bad vertex":    func() error { _, err := c.VertexMetricNames(ctx, testJob, "../x"); return err }(),
		"upper vertex":  func() error { _, err := c.VertexBackpressure(ctx, testJob, strings.ToUpper(testVertex)); return err }(),
		"bad job":       func() error { _, err := c.JobPlan(ctx, "nope"); return err }(),
		"load bad vert": func() error { _, err := c.VertexLoad(ctx, testJob, "", ""); return err }(),
	} {
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("%d requests sent for invalid input", n)
	}
}

func TestVertexMetricNamesAndPending(t *testing.T) {
	c, mt, _ := newTestClient(t, "2.3.0")
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/vertices/"+testVertex+"/subtasks/metrics",
		httpmock.NewStringResponder(200, `[{"id":"busyTimeMsPerSecond"},{"id":"Source__b.pendingRecords"},{"id":"Source__a.pendingRecords"},{"id":"x.pendingRecordsTotal"}]`))
	names, err := c.VertexMetricNames(context.Background(), testJob, testVertex)
	if err != nil || len(names) != 4 {
		t.Fatalf("VertexMetricNames = %v, %v", names, err)
	}
	if got := PendingRecordsMetric(names); got != "Source__a.pendingRecords" {
		t.Errorf("PendingRecordsMetric = %q", got)
	}
	if got := PendingRecordsMetric([]string{"busyTimeMsPerSecond"}); got != "" {
		t.Errorf("PendingRecordsMetric without one = %q", got)
	}
}

func TestVertexBackpressure(t *testing.T) {
	path := testBase + "/jobs/" + string(testJob) + "/vertices/" + testVertex + "/backpressure"
	tests := []struct {
		name, body string
		want       *Backpressure
		err        string
	}{
		{name: "deprecated", body: `{"status":"deprecated"}`, want: &Backpressure{Status: BackpressureDeprecated}},
		{name: "ok", body: `{"status":"ok","backpressure-level":"high","end-timestamp":1700000000000,"subtasks":[
			{"subtask":0,"attempt-number":1,"backpressure-level":"high","ratio":0.9,"idleRatio":0.1,"busyRatio":0},
			{"subtask":1,"attempt-number":1,"backpressureLevel":"low","ratio":0.2,"idleRatio":"NaN","busyRatio":0.8}]}`,
			want: &Backpressure{Status: BackpressureOK, Level: BackpressureLevelHigh, EndTime: time.UnixMilli(1700000000000), Subtasks: []SubtaskBackpressure{
				{Subtask: 0, Attempt: 1, Level: BackpressureLevelHigh, Ratio: 0.9, IdleRatio: 0.1, BusyRatio: 0},
				{Subtask: 1, Attempt: 1, Level: BackpressureLevelLow, Ratio: 0.2, IdleRatio: math.NaN(), BusyRatio: 0.8}}}},
		{name: "unknown status", body: `{"status":"maybe"}`, err: `back-pressure status "maybe"`},
		{name: "bad number", body: `{"status":"ok","subtasks":[{"ratio":"lots"}]}`, err: `"lots" is not a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, mt, _ := newTestClient(t, "1.20.5")
			mt.RegisterResponder("GET", path, httpmock.NewStringResponder(200, tc.body))
			b, err := c.VertexBackpressure(context.Background(), testJob, testVertex)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("VertexBackpressure: %+v, %v; want an error with %q", b, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, b, cmp.Comparer(func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }),
				cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); d != "" {
				t.Errorf("VertexBackpressure (-want +got):\n%s", d)
			}
		})
	}
}

func TestJobPlan(t *testing.T) {
	c, mt, _ := newTestClient(t, "2.3.0")
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/plan",
		httpmock.NewStringResponder(200, `{"plan":{"jid":"x","name":"n","type":"STREAMING","nodes":[
			{"id":"`+testVertex+`","parallelism":2,"inputs":[{"num":0,"id":"b93d204074064b03a853367828fb3dfe","ship_strategy":"HASH"}]},
			{"id":"b93d204074064b03a853367828fb3dfe","parallelism":2}]}}`))
	nodes, err := c.JobPlan(context.Background(), testJob)
	if err != nil {
		t.Fatal(err)
	}
	want := []PlanNode{{ID: testVertex, Parallelism: 2, Inputs: []string{"b93d204074064b03a853367828fb3dfe"},
		InputEdges: []PlanInput{{ID: "b93d204074064b03a853367828fb3dfe", ShipStrategy: "HASH"}}}, {ID: "b93d204074064b03a853367828fb3dfe", Parallelism: 2}}
	if d := cmp.Diff(want, nodes); d != "" {
		t.Errorf("JobPlan (-want +got):\n%s", d)
	}
}

// FuzzVertexDecoders: the decoders of the vertex metrics, back-pressure
// and plan answers never panic, and what they accept converts.
func FuzzVertexDecoders(f *testing.F) {
	addRealSeeds(f)
	f.Add([]byte(`[{"id":"busyTimeMsPerSecond","min":"NaN","max":1e400,"avg":-0,"sum":"Infinity"}]`))
	f.Add([]byte(`{"status":"ok","backpressure-level":"low","subtasks":[{"subtask":0,"ratio":"-Infinity"}]}`))
	f.Add([]byte(`{"plan":{"nodes":[{"id":"a","inputs":[{"id":"b"}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var am []aggregatedMetricWire
		if json.Unmarshal(b, &am) == nil {
			for i := range am {
				_ = am[i].convert()
			}
		}
		var bp backpressureWire
		if json.Unmarshal(b, &bp) == nil {
			if got := bp.convert(); len(got.Subtasks) != len(bp.Subtasks) {
				t.Fatalf("%d subtasks converted to %d", len(bp.Subtasks), len(got.Subtasks))
			}
		}
		var pw planWire
		if json.Unmarshal(b, &pw) == nil {
			_, _ = pw.convert()
		}
	})
}
