package savepoint

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

var sink Status

// Answers the derivation benchmarks and allocation tests feed.
var (
	answerAck        = flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: job, TriggerID: trig}
	answerInProgress = inProgress()
	answerCompleted  = completed(loc)
	unconfirmed404   = unconfirmedFrom(InFlight, false)
)

// zeroAllocPaths are the derivations that must not allocate.
var zeroAllocPaths = []struct {
	name string
	f    func() Status
}{
	{"trigger acknowledged", func() Status { return AfterTrigger(pending(), answerAck, nil, at(time.Second)) }},
	{"trigger 503", func() Status { return AfterTrigger(pending(), flinkapi.Operation{}, errLeader, at(time.Second)) }},
	{"trigger connection refused", func() Status { return AfterTrigger(pending(), flinkapi.Operation{}, errRefused, at(time.Second)) }},
	{"poll in progress", func() Status { return AfterPoll(inFlight(), answerInProgress, nil, at(time.Second)) }},
	{"poll completed", func() Status { return AfterPoll(inFlight(), answerCompleted, nil, at(time.Second)) }},
	{"poll 503", func() Status { return AfterPoll(inFlight(), nil, errLeader, at(time.Second)) }},
	{"poll 429", func() Status { return AfterPoll(inFlight(), nil, errBusy, at(time.Second)) }},
	{"poll 502", func() Status { return AfterPoll(inFlight(), nil, errBadGateway, at(time.Second)) }},
	{"poll connection refused", func() Status { return AfterPoll(inFlight(), nil, errRefused, at(time.Second)) }},
	{"poll connection reset", func() Status { return AfterPoll(inFlight(), nil, errReset, at(time.Second)) }},
	{"poll timeout", func() Status { return AfterPoll(inFlight(), nil, errDeadline, at(time.Second)) }},
	{"poll 500", func() Status { return AfterPoll(inFlight(), nil, errInternal, at(time.Second)) }},
	{"job list 503", func() Status { return AfterJobList(unconfirmed404, false, "", errLeader, at(time.Second)) }},
	{"job list connection refused", func() Status { return AfterJobList(unconfirmed404, false, "", errRefused, at(time.Second)) }},
	{"job list shows the job running", func() Status {
		return AfterJobList(unconfirmed404, true, flinkapi.JobRunning, nil, at(time.Second))
	}},
	{"job list shows the job ended", func() Status {
		return AfterJobList(unconfirmed404, true, flinkapi.JobFinished, nil, at(time.Second))
	}},
	{"job list without the job", func() Status { return AfterJobList(unconfirmed404, false, "", nil, at(time.Second)) }},
	{"deadline", func() Status { return CheckDeadline(inFlight(), at(time.Hour)) }},
}

func TestDeriveZeroAllocs(t *testing.T) {
	for _, p := range zeroAllocPaths {
		if n := testing.AllocsPerRun(100, func() { sink = p.f() }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", p.name, n)
		}
	}
}

func BenchmarkDeriveTriggerAck(b *testing.B) {
	prev := pending()
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterTrigger(prev, answerAck, nil, t0)
	}
}

func BenchmarkDerivePollInProgress(b *testing.B) {
	prev := inFlight()
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterPoll(prev, answerInProgress, nil, t0)
	}
}

func BenchmarkDerivePollCompleted(b *testing.B) {
	prev := inFlight()
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterPoll(prev, answerCompleted, nil, t0)
	}
}

func BenchmarkDerivePollTransient503(b *testing.B) {
	prev := inFlight()
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterPoll(prev, nil, errLeader, t0)
	}
}

func BenchmarkDerivePollConnectionRefused(b *testing.B) {
	prev := inFlight()
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterPoll(prev, nil, errRefused, t0)
	}
}

func BenchmarkDerivePollTriggerNotFound(b *testing.B) {
	prev := inFlight()
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterPoll(prev, nil, errTriggerGone, t0)
	}
}

func BenchmarkDerivePollFailed(b *testing.B) {
	prev := inFlight()
	res := failed("java.util.concurrent.CompletionException", traceExpired)
	b.ReportAllocs()
	for b.Loop() {
		sink = AfterPoll(prev, res, nil, t0)
	}
}

func BenchmarkRecover(b *testing.B) {
	prev := lost()
	h := make([]flinkapi.CheckpointStats, 10)
	for i := range h {
		h[i] = cp(int64(100-i), time.Duration(10-i)*time.Minute)
	}
	h[9] = sp(91, time.Second, flinkapi.CheckpointCompleted, loc)
	stats := history(h...)
	b.ReportAllocs()
	for b.Loop() {
		sink = Recover(prev, stats, t0)
	}
}

var sinkRecords []Record

func BenchmarkChooseDisposals1000(b *testing.B) {
	reasons := []Reason{ReasonScheduled, ReasonScheduled, ReasonScheduled, ReasonUpdate, ReasonUser, ReasonStop}
	var h []Record
	for i := range 1000 {
		h = append(h, Record{Location: fmt.Sprintf("s3://bucket/savepoints/savepoint-%04d", i), Time: at(time.Duration(i) * time.Hour), Reason: reasons[i%len(reasons)], JobID: job})
	}
	opts := RetentionOptions{MaxCount: 100, MaxAge: 30 * 24 * time.Hour, InUse: []string{"s3://bucket/savepoints/savepoint-0500"}}
	now := at(1000 * time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		sinkRecords = ChooseDisposals(h, opts, now)
	}
}
