package contract

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// eventsAccumulator is the test job's accumulator of the events counted.
const eventsAccumulator = "events"

// javaStream starts every Java serialization stream.
var javaStream = []byte{0xac, 0xed, 0x00, 0x05}

// executionResultRunning: the main job, running, has no result yet
// (IN_PROGRESS) and its events accumulator counts.
func (s *suite) executionResultRunning(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	r, err := s.c.JobExecutionResult(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed() || r.Status != flinkapi.StatusInProgress {
		t.Errorf("result of the running job: %+v, want IN_PROGRESS", r)
	}
	s.waitFor(t, ctx, "the events accumulator of the main job above 0", func() (bool, string) {
		accs, err := s.c.JobAccumulators(ctx, s.main.id)
		if err != nil {
			return false, err.Error()
		}
		a, ok := flinkapi.AccumulatorByName(accs, eventsAccumulator)
		n, isInt := a.Int64()
		return ok && isInt && n > 0, fmt.Sprintf("%+v", accs)
	})
	if _, err := s.c.JobExecutionResult(ctx, flinkapi.NewJobID()); !flinkapi.IsJobNotFound(err) {
		t.Errorf("result of an unknown job: %v, want IsJobNotFound", err)
	}
	if _, err := s.c.JobAccumulators(ctx, flinkapi.NewJobID()); !flinkapi.IsJobNotFound(err) {
		t.Errorf("accumulators of an unknown job: %v, want IsJobNotFound", err)
	}
}

// executionResultBounded: a bounded job (--records) ends FINISHED by
// itself; its result is SUCCEEDED with its net runtime and its serialized
// accumulator, and its accumulators say it counted every record.
func (s *suite) executionResultBounded(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	const records, keys = 30, 3
	j := s.submit(t, t, ctx, s.c, s.jar, jobSpec{name: "contract-bounded", keys: keys, rate: 60, checkpointInterval: time.Second, records: records})
	s.waitState(t, ctx, s.c, j.id, flinkapi.JobFinished)
	ended := s.tg.Now()
	r, err := s.c.JobExecutionResult(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Succeeded() || r.JobID != j.id || r.ApplicationStatus != flinkapi.AppSucceeded || r.Failure != nil {
		t.Fatalf("result of the finished job: %+v", r)
	}
	if r.NetRuntime <= 0 || r.NetRuntime > ended.Sub(j.submitted)+clockSkew {
		t.Errorf("net runtime %v, want within the %v from submit to end", r.NetRuntime, ended.Sub(j.submitted))
	}
	if b := r.Accumulators[eventsAccumulator]; !bytes.HasPrefix(b, javaStream) {
		t.Errorf("accumulator %s = %q, want a Java serialization stream", eventsAccumulator, b)
	}
	accs, err := s.c.JobAccumulators(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := flinkapi.AccumulatorByName(accs, eventsAccumulator); a.Value != fmt.Sprint(records) || a.Type != "LongCounter" {
		t.Errorf("accumulators of the finished job: %+v, want %s = %d (LongCounter)", accs, eventsAccumulator, records)
	}
	s.waitCounts(t, ctx, j.out, keys, "every record counted", func(_ string, n int64) bool { return n == records/keys })
}

// executionResultFailed: a failed job's result is FAILED with the
// exception the job ended with.
func (s *suite) executionResultFailed(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	j := s.submit(t, t, ctx, s.c, s.jar, jobSpec{name: "contract-result-failed", keys: 1, rate: 40, failAt: 3})
	s.waitState(t, ctx, s.c, j.id, flinkapi.JobFailed)
	r, err := s.c.JobExecutionResult(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Completed() || r.Succeeded() || r.ApplicationStatus != flinkapi.AppFailed || r.Failure == nil {
		t.Fatalf("result of the failed job: %+v", r)
	}
	if !flinkapi.IsJavaClassName(r.Failure.Class) || !strings.Contains(r.Failure.StackTrace, "(--fail-at 3)") {
		t.Errorf("failure %s: %.300s; want the test job's exception in the trace", r.Failure.Class, r.Failure.StackTrace)
	}
}
