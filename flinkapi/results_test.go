package flinkapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
)

// TestRealExecutionResultsDecode decodes the execution results and
// accumulators real clusters answered for a running, a canceled, a
// bounded (FINISHED after 30 events) and a failed test job.
func TestRealExecutionResultsDecode(t *testing.T) {
	javaStream := []byte{0xac, 0xed, 0x00, 0x05}
	for _, version := range realVersions(t) {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			c, mt, _ := newTestClient(t, version)
			jp := "/jobs/" + string(testJob)
			v2 := strings.HasPrefix(version, "2.")

			replay(t, mt, version, "GET", jp+"/execution-result", "results_execution_running.json")
			r, err := c.JobExecutionResult(ctx, testJob)
			if err != nil || r.Completed() || r.Status != StatusInProgress || r.JobID != "" || r.Accumulators != nil {
				t.Errorf("running: %+v, %v", r, err)
			}
			replay(t, mt, version, "GET", jp+"/accumulators", "results_accumulators_running.json")
			accs, err := c.JobAccumulators(ctx, testJob)
			a, ok := AccumulatorByName(accs, "events")
			if n, isInt := a.Int64(); err != nil || !ok || !isInt || n <= 0 || a.Type != "LongCounter" {
				t.Errorf("running accumulators: %+v, %v", accs, err)
			}

			for _, tc := range []struct {
				file    string
				status  ApplicationStatus
				failure bool
			}{
				{"results_execution_finished.json", AppSucceeded, false},
				{"results_execution_canceled.json", AppCanceled, false},
				{"results_execution_failed.json", AppFailed, true},
			} {
				replay(t, mt, version, "GET", jp+"/execution-result", tc.file)
				r, err := c.JobExecutionResult(ctx, testJob)
				if err != nil {
					t.Fatalf("%s: %v", tc.file, err)
				}
				if !r.Completed() || r.ApplicationStatus != tc.status || r.JobID.Validate() != nil || r.NetRuntime <= 0 ||
					r.Succeeded() != (tc.status == AppSucceeded) || (r.Failure != nil) != tc.failure {
					t.Errorf("%s: %+v", tc.file, r)
				}
				if b := r.Accumulators["events"]; !bytes.HasPrefix(b, javaStream) {
					t.Errorf("%s: accumulator events = %q, want a Java serialization stream", tc.file, b)
				}
				if tc.failure && (!strings.Contains(r.Failure.StackTrace, "--fail-at") || r.Failure.Class == "" || r.Failure.Message() == "") {
					t.Errorf("%s: failure %+v", tc.file, r.Failure)
				}
				if v2 != (r.JobName != "") || v2 != recent(r.StartTime) || v2 != !r.EndTime.Before(r.StartTime.Add(r.NetRuntime/2)) {
					t.Errorf("%s: name %q, start %v, end %v on %s", tc.file, r.JobName, r.StartTime, r.EndTime, version)
				}
			}

			replay(t, mt, version, "GET", jp+"/accumulators", "results_accumulators_finished.json")
			accs, err = c.JobAccumulators(ctx, testJob)
			if a, ok := AccumulatorByName(accs, "events"); err != nil || !ok || a.Value != "30" {
				t.Errorf("accumulators of the bounded job: %+v, %v; want events = 30", accs, err)
			}
			replay(t, mt, version, "GET", jp+"/execution-result", "results_execution_not_found.json")
			if _, err := c.JobExecutionResult(ctx, testJob); !IsJobNotFound(err) {
				t.Errorf("unknown job: %v, want IsJobNotFound", err)
			}
			replay(t, mt, version, "GET", jp+"/accumulators", "results_accumulators_not_found.json")
			if _, err := c.JobAccumulators(ctx, testJob); !IsJobNotFound(err) {
				t.Errorf("unknown job accumulators: %v, want IsJobNotFound", err)
			}
		})
	}
}

// TestExecutionResultBadAnswers: an answer that is not a result is a
// DecodeError naming what was wrong.
func TestExecutionResultBadAnswers(t *testing.T) {
	for body, want := range map[string]string{
		`{"status":{"id":"DONE"}}`:      `unknown queue status "DONE"`,
		`{"status":{"id":"COMPLETED"}}`: `without a job-execution-result`,
		`{"status":{"id":"COMPLETED"},"job-execution-result":{"accumulator-results":{"a":"%%"}}}`: `accumulator "a"`,
	} {
		var w executionResultWire
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			t.Fatal(err)
		}
		_, err := w.convert()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	c, mt, _ := newTestClient(t, "1.20.5")
	mt.RegisterResponder("GET", testBase+"/jobs/"+string(testJob)+"/execution-result", httpmock.NewStringResponder(200, `{"status":{"id":"DONE"}}`))
	_, err := c.JobExecutionResult(context.Background(), testJob)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Errorf("JobExecutionResult of a bad answer: %v, want a DecodeError", err)
	}
}

func TestAccumulatorInt64(t *testing.T) {
	for _, tc := range []struct {
		a    Accumulator
		n    int64
		isOK bool
	}{
		{Accumulator{Type: "LongCounter", Value: "42"}, 42, true},
		{Accumulator{Type: "IntCounter", Value: "-7"}, -7, true},
		{Accumulator{Type: "DoubleCounter", Value: "1.5"}, 0, false},
		{Accumulator{Type: "LongCounter", Value: "x"}, 0, false},
	} {
		if n, ok := tc.a.Int64(); n != tc.n || ok != tc.isOK {
			t.Errorf("%+v.Int64() = %d, %v; want %d, %v", tc.a, n, ok, tc.n, tc.isOK)
		}
	}
	if _, ok := AccumulatorByName(nil, "events"); ok {
		t.Error("found an accumulator in nil")
	}
}
