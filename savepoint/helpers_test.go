package savepoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Fixed inputs of the tests.
var (
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job     = flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	trig    = flinkapi.TriggerID("0123456789abcdef0123456789abcdef")
	trigNew = flinkapi.TriggerID("fedcba9876543210fedcba9876543210")
	loc     = "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab"
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// pending is a Status just begun, with a deadline 10 minutes on.
func pending() Status {
	return Begin(flinkapi.OpSavepoint, job, trig, ReasonUpdate, t0, at(10*time.Minute))
}

// with returns s changed by f.
func with(s Status, f func(*Status)) Status {
	f(&s)
	return s
}

func inFlight() Status {
	return with(pending(), func(s *Status) { s.State = InFlight })
}

func lost() Status {
	return with(pending(), func(s *Status) { s.State = Lost })
}

// unconfirmedFrom is a status that Flink said it did not know the job of, in
// state before: after a 404 for the job, or with failed after an
// operation that completed with FlinkJobNotFoundException.
func unconfirmedFrom(before State, failed bool) Status {
	return with(pending(), func(s *Status) {
		s.State, s.Before, s.OperationFailed = Unconfirmed, before, failed
		s.Failure = "Job " + string(job) + " not found"
		if failed {
			s.Failure = "Could not find Flink job (" + string(job) + ")"
		}
	})
}

func pollPath() string { return "/jobs/" + string(job) + "/savepoints/" + string(trig) }

func apiErr(code int, path string, msgs ...string) error {
	return &flinkapi.APIError{StatusCode: code, Method: "GET", Path: path, Errors: msgs}
}

// Errors as flinkapi returns them for the situations of Flink's REST API.
var (
	errTriggerGone = apiErr(404, pollPath(), fmt.Sprintf("There is no savepoint operation with triggerId=%s for job %s.", trig, job))
	errTriggerOld  = apiErr(404, pollPath(), "Operation not found under key: org.apache.flink.runtime.rest.handler.job.AsynchronousJobOperationKey@1234")
	errJobGone     = apiErr(404, "/jobs/"+string(job)+"/savepoints", "Job "+string(job)+" not found")
	errRoute       = apiErr(404, "/jobs/"+string(job)+"/stop", "Not found: /jobs/"+string(job)+"/stop")
	errJobGone500  = apiErr(500, pollPath(), msgJobGone500)
	errTerminal    = apiErr(409, "/jobs/"+string(job), "The job "+string(job)+" already reached another terminal state (FAILED).")
	errNoTarget    = apiErr(400, "/jobs/"+string(job)+"/savepoints", "Config key [state.savepoints.dir] is not set. Property [target-directory] must be provided.")
	errLeader      = apiErr(503, pollPath(), "Service temporarily unavailable due to an ongoing leader election. Please refresh.")
	errBusy        = apiErr(429, pollPath())
	errBadGateway  = apiErr(502, pollPath(), "<html><head><title>502 Bad Gateway</title></head>")
	errGWTimeout   = apiErr(504, pollPath())
	errInternal    = apiErr(500, pollPath(), "Internal server error.")
	errHTTPTimeout = apiErr(408, pollPath(), "Operation timed out.")
	errRefused     = &flinkapi.TransportError{Method: "GET", Path: pollPath(), Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	errReset       = &flinkapi.TransportError{Method: "GET", Path: pollPath(), Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	errDeadline    = &flinkapi.TransportError{Method: "GET", Path: pollPath(), Err: fmt.Errorf("request timed out after 10s: %w", context.DeadlineExceeded)}
	errCanceled    = &flinkapi.TransportError{Method: "GET", Path: pollPath(), Err: context.Canceled}
	errDecode      = fmt.Errorf("flinkapi: GET %s: decoding answer: %w", pollPath(), errors.New("unexpected EOF"))
	errInvalid     = fmt.Errorf("wrapped: %w", flinkapi.ErrInvalidInput)
	errUnsupported = fmt.Errorf("flinkapi: trigger id needs Flink 1.15, cluster runs 1.14: %w", flinkapi.ErrUnsupported)
)

// msgJobGone500 is the message of errJobGone500, a 500 that names
// FlinkJobNotFoundException's message.
const msgJobGone500 = "Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)"

// transientErrors are answers that say nothing definite, with the LastError
// and LastErrorCode each gives.
var transientErrors = []struct {
	name string
	err  error
	msg  string
	code int
}{
	{"503 leader election", errLeader, "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503},
	{"429 no body", errBusy, "Too Many Requests", 429},
	{"502 proxy page", errBadGateway, "<html><head><title>502 Bad Gateway</title></head>", 502},
	{"504 no body", errGWTimeout, "Gateway Timeout", 504},
	{"500", errInternal, "Internal server error.", 500},
	{"408", errHTTPTimeout, "Operation timed out.", 408},
	{"connection refused", errRefused, "connection refused", 0},
	{"connection reset", errReset, "connection reset by peer", 0},
	{"request timeout", errDeadline, "context deadline exceeded", 0},
	{"context canceled", errCanceled, "context canceled", 0},
	{"undecodable answer", errDecode, "flinkapi: GET " + pollPath() + ": decoding answer: unexpected EOF", 0},
	{"joined", errors.Join(errors.New("first"), errLeader), "Service temporarily unavailable due to an ongoing leader election. Please refresh.", 503},
}

// Java stack traces as Flink reports them in failure causes.
const (
	traceExpired = `java.util.concurrent.CompletionException: java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.
	at org.apache.flink.runtime.scheduler.SchedulerBase.lambda$triggerSavepoint$5(SchedulerBase.java:1001)
	at java.base/java.util.concurrent.CompletableFuture.uniHandle(CompletableFuture.java:934)
Caused by: java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.
	at java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)
	... 12 more
Caused by: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.
	at org.apache.flink.runtime.checkpoint.CheckpointCoordinator$CheckpointCanceller.run(CheckpointCoordinator.java:2216)
	... 7 more
`
	traceNotRunning = `org.apache.flink.runtime.rest.handler.RestHandlerException: Savepoint failed.
	at org.apache.flink.runtime.rest.handler.job.savepoints.SavepointHandlers.lambda$handleRequest$0(SavepointHandlers.java:123)
Caused by: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source: numbers (1/2) of job a1b2c3d4e5f60718293a4b5c6d7e8f90 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.
	at org.apache.flink.runtime.checkpoint.DefaultCheckpointPlanCalculator.checkTasksStarted(DefaultCheckpointPlanCalculator.java:143)
	Suppressed: java.lang.IllegalStateException: cleanup failed
		at org.apache.flink.Foo.bar(Foo.java:1)
		Caused by: java.io.IOException: disk full
			at org.apache.flink.Foo.baz(Foo.java:2)
`
	traceJobNotFound = `java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)
	at java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:331)
Caused by: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)
	at org.apache.flink.runtime.dispatcher.Dispatcher.getJobMasterGateway(Dispatcher.java:1500)
	... 30 more
`
	traceStopFailed = `java.util.concurrent.CompletionException: org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException: A savepoint has been created at: s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab, but the corresponding job a1b2c3d4e5f60718293a4b5c6d7e8f90 failed during stopping. The savepoint is consistent, but might have uncommitted transactions. If you want to commit the transaction please restart a job from this savepoint.
	at java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:331)
Caused by: org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException: A savepoint has been created at: s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab, but the corresponding job a1b2c3d4e5f60718293a4b5c6d7e8f90 failed during stopping. The savepoint is consistent, but might have uncommitted transactions. If you want to commit the transaction please restart a job from this savepoint.
	at org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointTerminationHandlerImpl.terminateExceptionallyWithGlobalFailover(StopWithSavepointTerminationHandlerImpl.java:211)
Caused by: org.apache.flink.util.FlinkException: Inconsistent execution state after stopping with savepoint. At least one execution is still in one of the following states: FAILED.
	... 45 more
`
)

func inProgress() *flinkapi.OperationResult {
	return &flinkapi.OperationResult{Status: flinkapi.StatusInProgress}
}

func completed(location string) *flinkapi.OperationResult {
	return &flinkapi.OperationResult{Status: flinkapi.StatusCompleted, Location: location}
}

func failed(class, trace string) *flinkapi.OperationResult {
	return &flinkapi.OperationResult{Status: flinkapi.StatusCompleted, Failure: &flinkapi.FailureCause{Class: class, StackTrace: trace}}
}
