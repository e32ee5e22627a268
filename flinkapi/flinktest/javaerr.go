package flinktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Java classes of the exceptions the fake reports, as Flink names them.
const (
	classRestHandler       = "org.apache.flink.runtime.rest.handler.RestHandlerException"
	classNotFound          = "org.apache.flink.runtime.rest.NotFoundException"
	classJobNotFound       = "org.apache.flink.runtime.messages.FlinkJobNotFoundException"
	classCompletion        = "java.util.concurrent.CompletionException"
	classCheckpoint        = "org.apache.flink.runtime.checkpoint.CheckpointException"
	classStopping          = "org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException"
	classFlinkException    = "org.apache.flink.util.FlinkException"
	classFlinkRuntime      = "org.apache.flink.util.FlinkRuntimeException"
	classFileNotFound      = "java.io.FileNotFoundException"
	classRuntime           = "java.lang.RuntimeException"
	classIllegalState      = "java.lang.IllegalStateException"
	classIllegalArgument   = "java.lang.IllegalArgumentException"
	classJobException      = "org.apache.flink.runtime.JobException"
	classJobInit           = "org.apache.flink.runtime.client.JobInitializationException"
	classDuplicateJob      = "org.apache.flink.runtime.client.DuplicateJobSubmissionException"
	classProgramInvocation = "org.apache.flink.client.program.ProgramInvocationException"
	classUnsupportedOp     = "java.lang.UnsupportedOperationException"
	classUnavailableOp     = "org.apache.flink.runtime.dispatcher.UnavailableDispatcherOperationException"
	classNoResource        = "org.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException"
	classJSONMapping       = "org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonMappingException"
	classJSONUnrecognized  = "org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException"
	classJSONParse         = "org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParseException"
)

// jexc is one exception of a Java cause chain: its class, its message and
// the frames of its stack.
type jexc struct {
	class  string
	msg    string
	frames []string
}

// String returns the exception's first line, as Java's Throwable.toString.
func (e jexc) String() string {
	if e.msg == "" {
		return e.class
	}
	return e.class + ": " + e.msg
}

// Frames of the places Flink throws from; a few lines each, enough to look
// like the traces Flink sends and to be told apart.
var (
	framesRestHandler = []string{
		"org.apache.flink.runtime.rest.handler.AbstractRestHandler.respondToRequest(AbstractRestHandler.java:83)",
		"org.apache.flink.runtime.rest.handler.AbstractHandler.respondAsLeader(AbstractHandler.java:196)",
		"org.apache.flink.runtime.rest.handler.LeaderRetrievalHandler.lambda$channelRead0$0(LeaderRetrievalHandler.java:88)",
		"java.base/java.util.Optional.ifPresent(Optional.java:178)",
		"org.apache.flink.runtime.rest.handler.LeaderRetrievalHandler.channelRead0(LeaderRetrievalHandler.java:85)",
	}
	framesRequestParsing = []string{
		"org.apache.flink.runtime.rest.handler.AbstractHandler.respondAsLeader(AbstractHandler.java:165)",
		"org.apache.flink.runtime.rest.handler.LeaderRetrievalHandler.lambda$channelRead0$0(LeaderRetrievalHandler.java:88)",
		"java.base/java.util.Optional.ifPresent(Optional.java:178)",
	}
	framesGraphHandler = []string{
		"org.apache.flink.runtime.rest.handler.job.AbstractExecutionGraphHandler.lambda$handleRequest$1(AbstractExecutionGraphHandler.java:99)",
		"java.base/java.util.concurrent.CompletableFuture.uniExceptionally(CompletableFuture.java:990)",
		"java.base/java.util.concurrent.CompletableFuture$UniExceptionally.tryFire(CompletableFuture.java:974)",
	}
	framesResultHandler = []string{
		"org.apache.flink.runtime.rest.handler.job.JobExecutionResultHandler.propagateException(JobExecutionResultHandler.java:94)",
		"org.apache.flink.runtime.rest.handler.job.JobExecutionResultHandler.lambda$handleRequest$1(JobExecutionResultHandler.java:84)",
		"java.base/java.util.concurrent.CompletableFuture.uniExceptionally(CompletableFuture.java:990)",
	}
	framesStatsHandler = []string{
		"org.apache.flink.runtime.rest.handler.job.checkpoints.AbstractCheckpointStatsHandler.lambda$handleRequest$2(AbstractCheckpointStatsHandler.java:102)",
		"java.base/java.util.concurrent.CompletableFuture.uniExceptionally(CompletableFuture.java:990)",
		"java.base/java.util.concurrent.CompletableFuture$UniExceptionally.tryFire(CompletableFuture.java:974)",
	}
	framesDispatcher = []string{
		"org.apache.flink.runtime.dispatcher.Dispatcher.getJobMasterGateway(Dispatcher.java:1498)",
		"org.apache.flink.runtime.dispatcher.Dispatcher.performOperationOnJobMasterGateway(Dispatcher.java:1513)",
	}
	framesCompletion = []string{
		"java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)",
		"java.base/java.util.concurrent.CompletableFuture.uniComposeStage(CompletableFuture.java:1177)",
		"java.base/java.util.concurrent.CompletableFuture.thenCompose(CompletableFuture.java:2309)",
		"org.apache.flink.runtime.dispatcher.DispatcherCachedOperationsHandler.registerOperationIdempotently(DispatcherCachedOperationsHandler.java:149)",
	}
	framesCheckpoint = []string{
		"org.apache.flink.runtime.checkpoint.CheckpointCoordinator.abortPendingCheckpoint(CheckpointCoordinator.java:2170)",
		"org.apache.flink.runtime.checkpoint.CheckpointCoordinator.abortPendingCheckpoints(CheckpointCoordinator.java:2113)",
	}
	framesTasksNotRunning = []string{
		"org.apache.flink.runtime.checkpoint.DefaultCheckpointPlanCalculator.checkTasksStarted(DefaultCheckpointPlanCalculator.java:143)",
		"org.apache.flink.runtime.checkpoint.DefaultCheckpointPlanCalculator.lambda$calculateCheckpointPlan$1(DefaultCheckpointPlanCalculator.java:105)",
	}
	framesStopping = []string{
		"org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointTerminationHandlerImpl.terminateExceptionallyWithGlobalFailover(StopWithSavepointTerminationHandlerImpl.java:211)",
		"org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointTerminationHandlerImpl.handleAnyExecutionNotFinished(StopWithSavepointTerminationHandlerImpl.java:185)",
	}
	framesFailover = []string{
		"org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure(ExecutionFailureHandler.java:219)",
		"org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailureAndReport(ExecutionFailureHandler.java:166)",
		"org.apache.flink.runtime.scheduler.DefaultScheduler.recordTaskFailure(DefaultScheduler.java:281)",
		"org.apache.flink.runtime.scheduler.DefaultScheduler.handleTaskFailure(DefaultScheduler.java:272)",
	}
	framesCounter = []string{
		"dev.flinkkit.testjob.CounterJob$CountingFunction.processElement(CounterJob.java:157)",
		"dev.flinkkit.testjob.CounterJob$CountingFunction.processElement(CounterJob.java:130)",
		"org.apache.flink.streaming.api.operators.KeyedProcessOperator.processElement(KeyedProcessOperator.java:83)",
		"org.apache.flink.streaming.runtime.tasks.StreamTask.processInput(StreamTask.java:638)",
		"org.apache.flink.runtime.taskmanager.Task.run(Task.java:575)",
		"java.base/java.lang.Thread.run(Thread.java:840)",
	}
	framesTask = []string{
		"org.apache.flink.streaming.runtime.tasks.StreamTask.processInput(StreamTask.java:638)",
		"org.apache.flink.streaming.runtime.tasks.StreamTask.runMailboxLoop(StreamTask.java:973)",
		"org.apache.flink.runtime.taskmanager.Task.run(Task.java:575)",
		"java.base/java.lang.Thread.run(Thread.java:840)",
	}
	framesJarRun = []string{
		"org.apache.flink.runtime.webmonitor.handlers.JarRunHandler.lambda$handleRequest$1(JarRunHandler.java:114)",
		"java.base/java.util.concurrent.CompletableFuture.uniHandle(CompletableFuture.java:934)",
		"java.base/java.util.concurrent.CompletableFuture$UniHandle.tryFire(CompletableFuture.java:911)",
	}
	framesJarHandler = []string{
		"org.apache.flink.runtime.webmonitor.handlers.utils.JarHandlerUtils$JarHandlerContext.toPackagedProgram(JarHandlerUtils.java:181)",
		"org.apache.flink.runtime.webmonitor.handlers.utils.JarHandlerUtils$JarHandlerContext.applyToConfiguration(JarHandlerUtils.java:141)",
		"org.apache.flink.runtime.webmonitor.handlers.JarRunHandler.handleRequest(JarRunHandler.java:93)",
	}
	framesDisposal = []string{
		"org.apache.flink.runtime.dispatcher.Dispatcher.lambda$disposeSavepoint$11(Dispatcher.java:806)",
		"java.base/java.util.concurrent.CompletableFuture$AsyncSupply.run(CompletableFuture.java:1768)",
		"java.base/java.lang.Thread.run(Thread.java:840)",
	}
	framesJobMaster = []string{
		"org.apache.flink.runtime.jobmaster.DefaultJobMasterServiceProcess.lambda$new$0(DefaultJobMasterServiceProcess.java:97)",
		"java.base/java.util.concurrent.CompletableFuture.uniWhenComplete(CompletableFuture.java:863)",
	}
	framesRestore = []string{
		"org.apache.flink.runtime.checkpoint.Checkpoints.loadAndValidateCheckpoint(Checkpoints.java:185)",
		"org.apache.flink.runtime.checkpoint.CheckpointCoordinator.restoreSavepoint(CheckpointCoordinator.java:1943)",
		"org.apache.flink.runtime.scheduler.DefaultExecutionGraphFactory.tryRestoreExecutionGraphFromSavepoint(DefaultExecutionGraphFactory.java:223)",
	}
	framesScheduler = []string{
		"org.apache.flink.runtime.scheduler.SchedulerNG.requestJobResourceRequirements(SchedulerNG.java:216)",
		"org.apache.flink.runtime.jobmaster.JobMaster.requestJobResourceRequirements(JobMaster.java:1121)",
		"org.apache.flink.runtime.rpc.pekko.PekkoRpcActor.handleRpcInvocation(PekkoRpcActor.java:316)",
	}
	framesFileSystem = []string{
		"org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess.resolveCheckpointPointer(AbstractFsCheckpointStorageAccess.java:275)",
		"org.apache.flink.runtime.checkpoint.Checkpoints.loadAndValidateCheckpoint(Checkpoints.java:127)",
	}
)

// trace renders a Java cause chain, outermost exception first, the way
// Throwable.printStackTrace does: "class: message", the frames, then
// "Caused by: ..." for each cause with "... n more" in place of the frames
// it shares with the exception above.
func trace(chain ...jexc) string {
	var b strings.Builder
	for i, e := range chain {
		if i > 0 {
			b.WriteString("Caused by: ")
		}
		b.WriteString(e.String())
		b.WriteByte('\n')
		for _, f := range e.frames {
			b.WriteString("\tat ")
			b.WriteString(f)
			b.WriteByte('\n')
		}
		if i > 0 {
			fmt.Fprintf(&b, "\t... %d more\n", 20+3*len(chain)-3*i)
		}
	}
	return b.String()
}

// wrapped returns e as the message of a wrapping exception: Java puts the
// cause's toString() into the message of exceptions such as
// CompletionException.
func wrapped(class string, cause jexc, frames []string) jexc {
	return jexc{class: class, msg: cause.String(), frames: frames}
}

// restError is an error answer of the fake: a status code and Flink's
// {"errors": [...]} body.
type restError struct {
	status int
	errors []string
}

// handlerError is Flink's answer for a RestHandlerException (or one of its
// subclasses) thrown by a REST handler: the whole stack trace as the only
// message.
func handlerError(status int, chain ...jexc) *restError {
	return &restError{status: status, errors: []string{trace(chain...)}}
}

// serverError is Flink's answer for an exception a handler did not map to a
// status: 500 with "Internal server error." and the trace wrapped in
// "<Exception on server side: ... End of exception on server side>".
func serverError(chain ...jexc) *restError {
	return &restError{status: http.StatusInternalServerError, errors: []string{
		"Internal server error.",
		"<Exception on server side:\n" + trace(chain...) + "\nEnd of exception on server side>",
	}}
}

// plainError is an answer with one message and no trace, as Flink's
// router and leader retrieval send them.
func plainError(status int, msg string) *restError {
	return &restError{status: status, errors: []string{msg}}
}

// badFormat is Flink's 400 for a body its JSON mapper rejects.
func badFormat(class string, cause jexc) *restError {
	return handlerError(http.StatusBadRequest,
		jexc{class: classRestHandler, msg: "Request did not match expected format " + class + ".", frames: framesRequestParsing},
		cause)
}

// badParameter is Flink's 400 for a path or query parameter it cannot parse.
func badParameter(msg string) *restError {
	return handlerError(http.StatusBadRequest,
		jexc{class: classRestHandler, msg: "Bad request, could not parse parameters: " + msg, frames: framesRequestParsing})
}

// jobNotFoundError is the 404 of the handlers that read a job's execution
// graph (details, exceptions, checkpoint configuration).
func jobNotFoundError(id string, frames []string) *restError {
	return handlerError(http.StatusNotFound,
		jexc{class: classNotFound, msg: "Job " + id + " not found", frames: frames},
		jexc{class: classJobNotFound, msg: "Could not find Flink job (" + id + ")", frames: framesDispatcher})
}

// failureCause is the "failure-cause" of an asynchronous operation: the
// outermost class, the whole trace, and a serialized form.
type failureCause struct {
	class string
	trace string
}

func newFailure(chain ...jexc) *failureCause {
	return &failureCause{class: chain[0].class, trace: trace(chain...)}
}

// completionFailure wraps cause in a CompletionException, as futures
// completed exceptionally inside the JobManager report it.
func completionFailure(cause ...jexc) *failureCause {
	chain := append([]jexc{wrapped(classCompletion, cause[0], framesCompletion)}, cause...)
	return newFailure(chain...)
}

func (f *failureCause) wire() map[string]string {
	// Flink sends the Java serialization of a SerializedThrowable here. The
	// fake cannot produce one; it sends the stream header of Java
	// serialization followed by the trace, base64 encoded, so that the field
	// is present and opaque as in Flink's answers.
	payload := append([]byte{0xac, 0xed, 0x00, 0x05}, f.trace...)
	return map[string]string{
		"class":                f.class,
		"stack-trace":          f.trace,
		"serialized-throwable": base64.StdEncoding.EncodeToString(payload),
	}
}

// writeError sends e.
func writeError(w http.ResponseWriter, e *restError) {
	writeJSON(w, e.status, map[string][]string{"errors": e.errors})
}

// writeJSON sends v as JSON with status code status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"errors":["Internal server error."]}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
