package flinktest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestCounterAndRestore: the job's counts grow with the clock; a job run
// from the savepoint of a stopped one continues from its counts, and the
// server remembers where it was restored from.
func TestCounterAndRestore(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	a := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/a", 1000)}) // tasks since 750ms, 20 events/s
	f.advance(2 * time.Second)
	info := f.info(a)
	if info.Events != 45 || !cmp.Equal(info.Counts, map[string]int64{"key-0": 23, "key-1": 22}) {
		t.Errorf("after 2.25s of running: %d events, counts %v; want 45, 23/22", info.Events, info.Counts)
	}
	files, _ := f.srv.ReadCounts("/out/a")
	if !cmp.Equal(files, info.Counts) {
		t.Errorf("ReadCounts %v, want %v", files, info.Counts)
	}
	op, err := f.c.StopWithSavepoint(f.ctx, a, flinkapi.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	loc := f.result(op).Location
	stopped := f.info(a).Counts

	b := f.run(flinkapi.RunJarRequest{SavepointPath: loc, ProgramArgs: testArgs("/out/b", 1000)})
	if got, _ := f.srv.ReadCounts("/out/b"); len(got) != 0 {
		t.Errorf("counts of the restored job before it runs: %v, want none", got)
	}
	f.advance(800 * time.Millisecond) // 50ms of running: one event
	if got, _ := f.srv.ReadCounts("/out/b"); !cmp.Equal(got, map[string]int64{"key-1": stopped["key-1"] + 1}) {
		t.Errorf("first counts after the restore: %v; stopped at %v", got, stopped)
	}
	f.advance(time.Second)
	restored := f.info(b)
	if restored.RestoredFrom != loc || restored.Counts["key-0"] <= stopped["key-0"] {
		t.Errorf("restored job %+v, want it restored from %s and counting on from %v", restored, loc, stopped)
	}
	st, err := f.c.Checkpoints(f.ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	r := st.LatestRestored
	if r == nil || !r.IsSavepoint || r.ExternalPath != loc || st.Counts.Restored != 1 {
		t.Errorf("latest restored %+v, counts %+v", r, st.Counts)
	}
	if c := st.LatestCompleted; c == nil || c.ID != r.ID+1 {
		t.Errorf("first checkpoint after the restore %+v: want id %d", c, r.ID+1)
	}

	// A fresh job starts from zero.
	fresh := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/c", 1000)})
	if info := f.info(fresh); info.RestoredFrom != "" || info.Events > 10 {
		t.Errorf("fresh job %+v", info)
	}
}

// TestRestoreFromMissingSavepoint: the jar run answers 400 and the job
// stays, FAILED, with the restore failure in its history.
func TestRestoreFromMissingSavepoint(t *testing.T) {
	for _, version := range []string{"1.20.5", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion(version))
			jar := f.upload()
			id := flinkapi.NewJobID()
			_, err := f.c.RunJar(f.ctx, jar, flinkapi.RunJarRequest{JobID: id, SavepointPath: "file:/tmp/no-such-savepoint", ProgramArgs: testArgs("/out/x", 0)})
			ae := apiError(t, err)
			cause := "Cannot find checkpoint or savepoint file/directory 'file:/tmp/no-such-savepoint' on file system 'file'."
			if ae.StatusCode != 400 || ae.Message() != "Could not execute application." || flinkapi.RootCause(ae.StackTrace) != cause {
				t.Errorf("RunJar: %v (root cause %q)", err, flinkapi.RootCause(ae.StackTrace))
			}
			if st := f.state(id); st != flinkapi.JobFailed {
				t.Errorf("job %s, want FAILED", st)
			}
			d, err := f.c.Job(f.ctx, id)
			if err != nil || len(d.Vertices) != 0 {
				t.Errorf("details %+v, %v: want no vertices", d, err)
			}
			ex, err := f.c.JobExceptions(f.ctx, id, 0)
			if err != nil || len(ex.Entries) != 1 || ex.Entries[0].ExceptionName != "org.apache.flink.runtime.client.JobInitializationException" {
				t.Errorf("exceptions %+v, %v", ex, err)
			}
			if info := f.info(id); info.RestoredFrom != "" {
				t.Errorf("RestoredFrom %q of a job that was not restored", info.RestoredFrom)
			}
		})
	}
}

// TestFailoverRestoresCheckpoint: after a task failure the job restarts
// from its latest checkpoint: the counts go back to it.
func TestFailoverRestoresCheckpoint(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/f", 1000, "--restart-attempts", "3")})
	f.advance(1500 * time.Millisecond) // checkpoint 1 at 1.75s (20 events), now 2.5s
	if err := f.srv.FailJob(id, "java.io.IOException: disk gone"); err != nil {
		t.Fatal(err)
	}
	if st := f.state(id); st != flinkapi.JobRestarting {
		t.Errorf("after the failure: %s, want RESTARTING", st)
	}
	f.advance(600 * time.Millisecond) // restart delay 200ms, deployment 400ms
	info := f.info(id)
	if info.Events != 20 || info.Restarts != 1 || info.State != flinkapi.JobRunning {
		t.Errorf("after the restart: %+v, want 20 events (checkpoint 1), one restart, RUNNING", info)
	}
	st, err := f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.LatestRestored; r == nil || r.ID != 1 || r.IsSavepoint {
		t.Errorf("latest restored %+v, want checkpoint 1", r)
	}
	ex, err := f.c.JobExceptions(f.ctx, id, 0)
	if err != nil || len(ex.Entries) != 1 || ex.Entries[0].ExceptionName != "java.io.IOException" || ex.Entries[0].Message != "disk gone" {
		t.Errorf("exceptions %+v, %v", ex, err)
	}
	if err := f.srv.FailJob("0123456789abcdef0123456789abcdef", ""); err == nil {
		t.Error("FailJob of an unknown job: no error")
	}
}

// TestRetainedCheckpoint: with RETAIN_ON_CANCELLATION the latest checkpoint
// survives a cancel and a job can be run from it.
func TestRetainedCheckpoint(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	retain := map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/r", 500), FlinkConfiguration: retain})
	f.advance(time.Second)
	st, err := f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cp := st.LatestCompleted
	cfg, err := f.c.CheckpointConfig(f.ctx, id)
	if err != nil || !cfg.ExternalizationEnabled || cfg.DeleteOnCancellation {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if err := f.c.CancelJob(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if ok, _ := f.srv.SavepointExists(cp.ExternalPath); !ok {
		t.Fatalf("retained checkpoint %s is gone", cp.ExternalPath)
	}
	next := f.running(flinkapi.RunJarRequest{SavepointPath: cp.ExternalPath, ProgramArgs: testArgs("/out/r2", 500)})
	if info := f.info(next); info.RestoredFrom != cp.ExternalPath {
		t.Errorf("restored from %q, want %q", info.RestoredFrom, cp.ExternalPath)
	}

	// Without retention the checkpoint goes with the job.
	plain := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/p", 500)})
	f.advance(time.Second)
	st, _ = f.c.Checkpoints(f.ctx, plain)
	if err := f.c.CancelJob(f.ctx, plain); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if ok, _ := f.srv.SavepointExists(st.LatestCompleted.ExternalPath); ok {
		t.Error("checkpoint of a cancelled job without retention still exists")
	}
}

// TestJars: upload, list, run with the manifest's entry class, delete; the
// error answers of each.
func TestJars(t *testing.T) {
	f := newFake(t)
	jar := f.upload()
	if !strings.HasSuffix(string(jar), "_flinkkit-testjob.jar") || len(jar) != 36+1+len("flinkkit-testjob.jar") {
		t.Errorf("jar id %q, want <uuid>_flinkkit-testjob.jar", jar)
	}
	jars, err := f.c.ListJars(f.ctx)
	if err != nil || len(jars) != 1 || jars[0].Name != "flinkkit-testjob.jar" ||
		!cmp.Equal(jars[0].Entries, []flinkapi.JarEntry{{Name: flinktest.CounterJobClass}}) {
		t.Errorf("ListJars %+v, %v", jars, err)
	}
	// Without an entry class the manifest's is used.
	id, err := f.c.RunJar(f.ctx, jar, flinkapi.RunJarRequest{ProgramArgs: []string{"--out", "/out/j"}})
	if err != nil || id.Validate() != nil {
		t.Errorf("RunJar without entry class: %s, %v", id, err)
	}
	for _, tc := range []struct {
		name   string
		body   string
		status int
		first  string
	}{
		{"unknown argument", `{"programArgsList":["--bogus","1"]}`, 400, "org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application."},
		{"missing --out", `{"programArgsList":["--keys","1"]}`, 400, "org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application."},
		{"unknown class", `{"entryClass":"dev.flinkkit.NoSuch"}`, 500, "Internal server error."},
		{"bad job id", `{"jobId":"xyz"}`, 400, "org.apache.flink.runtime.rest.handler.RestHandlerException: Request did not match expected format JarRunRequestBody."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.raw(http.MethodPost, "/jars/"+string(jar)+"/run", tc.body)
			if status != tc.status || firstError(t, body) != tc.first {
				t.Errorf("%d %q", status, firstError(t, body))
			}
		})
	}
	// Other entry classes take the test job's arguments leniently.
	if _, err := f.c.RunJar(f.ctx, jar, flinkapi.RunJarRequest{EntryClass: "Other", ProgramArgs: []string{"--whatever"}}); err == nil {
		t.Error("RunJar of a class the jar lacks: no error")
	}
	status, body := f.raw(http.MethodPost, "/jars/"+string(jar)+"/run", `{"entryClass":"`+flinktest.CounterJobClass+`","programArgsList":["--out","/o","--extra","x"]}`)
	if status != 400 {
		t.Errorf("the counter job with an unknown argument: %d %s", status, body)
	}

	if err := f.c.DeleteJar(f.ctx, jar); err != nil {
		t.Fatal(err)
	}
	err = f.c.DeleteJar(f.ctx, jar)
	if ae := apiError(t, err); ae.StatusCode != 400 || ae.Message() != "File "+string(jar)+" does not exist in /tmp/flinktest/upload/flink-web-upload." {
		t.Errorf("second DeleteJar: %v", err)
	}
	_, err = f.c.RunJar(f.ctx, jar, flinkapi.RunJarRequest{})
	if ae := apiError(t, err); ae.StatusCode != 500 {
		t.Errorf("RunJar of a deleted jar: %v", err)
	}
	status, body = f.raw(http.MethodPost, "/jars/upload", "not multipart")
	if status != 400 || firstError(t, body) != "org.apache.flink.runtime.rest.handler.RestHandlerException: Exactly 1 file must be sent, received 0." {
		t.Errorf("upload without a file: %d %s", status, body)
	}
}

// TestDuplicateJobID: a jar run with a job id in use is rejected with 400
// and the job runs once.
func TestDuplicateJobID(t *testing.T) {
	for _, tc := range []struct{ version, cause string }{
		{"1.20.5", "Job has already been submitted."},
		{"2.3.0", "Application has already been submitted."},
	} {
		t.Run(tc.version, func(t *testing.T) {
			f := newFake(t, flinktest.WithVersion(tc.version))
			id := f.running(flinkapi.RunJarRequest{})
			_, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{JobID: id, ProgramArgs: testArgs("/out/dup", 0)})
			ae := apiError(t, err)
			if ae.StatusCode != 400 || !flinkapi.IsDuplicateJob(err) || flinkapi.RootCause(ae.StackTrace) != tc.cause {
				t.Errorf("%v: root cause %q", err, flinkapi.RootCause(ae.StackTrace))
			}
			if jobs := f.srv.Jobs(); len(jobs) != 1 {
				t.Errorf("%d jobs, want 1", len(jobs))
			}
		})
	}
}
