package flinkapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// classes are the classifiers of Flink's answers, by name.
var classes = map[string]func(error) bool{
	"IsUnsupportedByScheduler": IsUnsupportedByScheduler,
	"IsDispatcherJobNotFound":  IsDispatcherJobNotFound,
	"IsJarNotFound":            IsJarNotFound,
	"IsJobNotFound":            IsJobNotFound,
}

// TestClassifyRealAnswers classifies error answers recorded from real
// Flink clusters (testdata/real): each answer is recognised by its
// classifier and by no other.
func TestClassifyRealAnswers(t *testing.T) {
	for _, version := range []string{"1.20.5", "2.3.0"} {
		for _, tc := range []struct {
			file, method, path string
			want               string // the classifier that recognises it; "": none
		}{
			{"resource_requirements_default_scheduler.json", "GET", "/jobs/a1b2/resource-requirements", "IsUnsupportedByScheduler"},
			{"error_job_not_found.json", "GET", "/jobs/a1b2", "IsJobNotFound"},
			{"error_unknown_route.json", "GET", "/jobs/a1b2/nothing", ""},
			{"error_trigger_not_found.json", "GET", "/jobs/a1b2/savepoints/ffff", ""},
			{"error_cancel_terminal.json", "PATCH", "/jobs/a1b2", ""},
		} {
			t.Run(version+"/"+tc.file, func(t *testing.T) {
				body := real(t, version, tc.file)
				err := newAPIError(tc.method, tc.path, realStatus(t, version, tc.file), []byte(body))
				for name, is := range classes {
					if got := is(err); got != (name == tc.want) {
						t.Errorf("%s = %v", name, got)
					}
				}
			})
		}
	}
}

// TestClassifyAnswers classifies answers whose text Flink's sources
// write, in the body Flink's REST layer sends them in.
func TestClassifyAnswers(t *testing.T) {
	dispatcher := `{"errors":["Internal server error.","<Exception on server side:\njava.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)\n\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)\nCaused by: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)\n\t... 1 more\n\nEnd of exception on server side>"]}`
	jar := `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Jar file /tmp/flink-web-upload/5b1d_job.jar does not exist\n\tat org.apache.flink.runtime.webmonitor.handlers.utils.JarHandlerUtils$JarHandlerContext.fromRequest(JarHandlerUtils.java:148)\n"]}`
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
		want               string // the classifiers that recognise it, space-separated
	}{
		{"dispatcher 500", "PUT", "/jobs/a1b2/resource-requirements", 500, dispatcher, "IsDispatcherJobNotFound IsJobNotFound"},
		{"jar gone", "POST", "/jars/5b1d_job.jar/run", 400, jar, "IsJarNotFound"},
		{"jar gone, other route", "GET", "/jobs/a1b2", 400, jar, ""},
		{"503", "GET", "/jobs/a1b2/resource-requirements", 503, `{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}`, ""},
		{"500 without cause", "GET", "/jobs/a1b2/resource-requirements", 500, `{"errors":["Internal server error."]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := newAPIError(tc.method, tc.path, tc.status, []byte(tc.body))
			for name, is := range classes {
				if got := is(err); got != slices.Contains(strings.Fields(tc.want), name) {
					t.Errorf("%s = %v", name, got)
				}
			}
		})
	}
}

// TestFailureCauseClasses classifies the failure causes of asynchronous
// operations: a real one recorded from Flink (a savepoint of a job Flink
// did not know) and ones whose text Flink's sources write.
func TestFailureCauseClasses(t *testing.T) {
	var recorded struct {
		Operation struct {
			Failure FailureCause `json:"failure-cause"`
		} `json:"operation"`
	}
	if err := json.Unmarshal([]byte(real(t, "1.20.5", "savepoint_failed.json")), &recorded); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		f              *FailureCause
		tasks, missing bool
	}{
		{"nil", nil, false, false},
		{"recorded: job not found", &recorded.Operation.Failure, false, false},
		{"tasks not running", &FailureCause{Class: "java.util.concurrent.CompletionException", StackTrace: "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source: in (1/2) of job a1b2 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.\n\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)\nCaused by: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source: in (1/2) of job a1b2 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.\n\t... 3 more\n"}, true, false},
		{"disposal of a missing savepoint", &FailureCause{Class: "java.io.FileNotFoundException", StackTrace: "java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory 'file:/sp/savepoint-a1b2c3-0123' on file system 'file'.\n\tat org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess.resolveCheckpointPointer(AbstractFsCheckpointStorageAccess.java:275)\n"}, false, true},
		{"wrapped disposal failure", &FailureCause{Class: "java.util.concurrent.CompletionException", StackTrace: "java.util.concurrent.CompletionException: java.io.FileNotFoundException: Cannot find meta data file '_metadata' in directory 'file:/sp/x'.\n\tat x.y(Z.java:1)\nCaused by: java.io.FileNotFoundException: Cannot find meta data file '_metadata' in directory 'file:/sp/x'.\n"}, false, true},
		{"other", &FailureCause{Class: "java.lang.RuntimeException", StackTrace: "java.lang.RuntimeException: boom\n"}, false, false},
	} {
		if got := tc.f.TasksNotRunning(); got != tc.tasks {
			t.Errorf("%s: TasksNotRunning = %v", tc.name, got)
		}
		if got := tc.f.FilesNotFound(); got != tc.missing {
			t.Errorf("%s: FilesNotFound = %v", tc.name, got)
		}
	}
}
