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

// TestSavepoint: a savepoint is in progress for the savepoint duration,
// then completes with a location under the savepoint directory that the
// statistics show as the latest savepoint.
func TestSavepoint(t *testing.T) {
	f := newFake(t, flinktest.WithSavepointDuration(500*time.Millisecond), flinktest.WithRefreshInterval(0))
	id := f.running(flinkapi.RunJarRequest{})
	f.advance(time.Second) // a first checkpoint
	trigger := flinkapi.NewTriggerID()
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: trigger})
	if err != nil {
		t.Fatal(err)
	}
	if want := (flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: id, TriggerID: trigger}); op != want {
		t.Errorf("operation %+v, want %+v", op, want)
	}
	if res := f.result(op); res.Status != flinkapi.StatusInProgress {
		t.Errorf("right after the trigger: %+v, want IN_PROGRESS", res)
	}
	status, raw := f.raw(http.MethodGet, "/jobs/"+string(id)+"/savepoints/"+string(trigger), "")
	if status != 200 || string(raw) != `{"operation":null,"status":{"id":"IN_PROGRESS"}}` {
		t.Errorf("raw answer in progress: %d %s", status, raw)
	}
	f.advance(499 * time.Millisecond)
	if res := f.result(op); res.Completed() {
		t.Errorf("after 499ms: %+v, want IN_PROGRESS", res)
	}
	f.advance(time.Millisecond)
	res := f.result(op)
	if !res.Succeeded() || !strings.HasPrefix(res.Location, "file:/tmp/flinktest/savepoints/savepoint-"+string(id)[:6]+"-") {
		t.Fatalf("after 500ms: %+v, want COMPLETED under the savepoint directory", res)
	}
	if ok, _ := f.srv.SavepointExists(res.Location); !ok {
		t.Errorf("SavepointExists(%s) = false", res.Location)
	}
	st, err := f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sp := st.LatestSavepoint
	if sp == nil || sp.ExternalPath != res.Location || sp.CheckpointType != "SAVEPOINT" || sp.SavepointFormat != "CANONICAL" || !sp.IsSavepoint {
		t.Errorf("latest savepoint %+v", sp)
	}
	if st.LatestCompleted == nil || st.LatestCompleted.IsSavepoint {
		t.Errorf("latest completed %+v: want a checkpoint, not the savepoint", st.LatestCompleted)
	}

	// Into a target directory, in the native format.
	op2, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TargetDirectory: "s3://bucket/sp", FormatType: flinkapi.FormatNative})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if res := f.result(op2); !strings.HasPrefix(res.Location, "s3://bucket/sp/savepoint-") {
		t.Errorf("savepoint into s3://bucket/sp: %+v", res)
	}
}

// TestTriggerDedup: a trigger id Flink knows for the job starts nothing
// new, for savepoints and stops alike; a failed operation stays failed.
func TestTriggerDedup(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	id := f.running(flinkapi.RunJarRequest{})
	trigger := flinkapi.NewTriggerID()
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: trigger})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: trigger})
	if err != nil || again != op {
		t.Errorf("same trigger while in progress: %+v, %v", again, err)
	}
	// A stop with the savepoint's trigger id is the same operation: the job
	// keeps running.
	stop, err := f.c.StopWithSavepoint(f.ctx, id, flinkapi.StopRequest{TriggerID: trigger})
	if err != nil || stop.TriggerID != trigger {
		t.Errorf("stop with the same trigger: %+v, %v", stop, err)
	}
	f.advance(time.Second)
	first := f.result(op)
	if !first.Succeeded() {
		t.Fatalf("savepoint: %+v", first)
	}
	if _, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: trigger}); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if res := f.result(op); !cmp.Equal(res, first) {
		t.Errorf("after a third trigger: %+v, want %+v", res, first)
	}
	if st := f.state(id); st != flinkapi.JobRunning {
		t.Errorf("job is %s, want RUNNING: the stop with a known trigger id must not stop it", st)
	}
	st, err := f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var savepoints int
	for _, h := range st.History {
		if h.IsSavepoint {
			savepoints++
		}
	}
	if savepoints != 1 {
		t.Errorf("%d savepoints in the history, want 1", savepoints)
	}

	// The same trigger id for another job is another operation.
	other := flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: "0123456789abcdef0123456789abcdef", TriggerID: trigger}
	if _, err := f.c.TriggerSavepoint(f.ctx, other.JobID, flinkapi.SavepointRequest{TriggerID: trigger}); err != nil {
		t.Fatal(err)
	}
	failed := f.result(other)
	if failed.Failure == nil || !strings.Contains(failed.Failure.StackTrace, "FlinkJobNotFoundException: Could not find Flink job (0123456789abcdef0123456789abcdef)") {
		t.Fatalf("savepoint of an unknown job: %+v", failed)
	}
	// Reusing the failed trigger id returns the old failure, even once the
	// job exists.
	f.run(flinkapi.RunJarRequest{JobID: other.JobID})
	f.advance(time.Second)
	if _, err := f.c.TriggerSavepoint(f.ctx, other.JobID, flinkapi.SavepointRequest{TriggerID: trigger}); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if res := f.result(other); !cmp.Equal(res, failed) {
		t.Errorf("reused failed trigger: %+v, want the old failure", res)
	}
}

// TestSavepointFailures: savepoints of jobs that cannot take one are
// acknowledged and fail in their status.
func TestSavepointFailures(t *testing.T) {
	f := newFake(t)
	notDeployed := f.run(flinkapi.RunJarRequest{})
	f.advance(400 * time.Millisecond) // RUNNING, tasks not yet deployed
	for _, tc := range []struct {
		name  string
		job   flinkapi.JobID
		class string
		cause string
	}{
		{"unknown", "0123456789abcdef0123456789abcdef", "java.util.concurrent.CompletionException", "Could not find Flink job (0123456789abcdef0123456789abcdef)"},
		{"not deployed", notDeployed, "java.util.concurrent.CompletionException",
			"Checkpoint triggering task Source: key-source (1/1) of job " + string(notDeployed) + " is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := f.c.TriggerSavepoint(f.ctx, tc.job, flinkapi.SavepointRequest{})
			if err != nil {
				t.Fatal(err)
			}
			res := f.result(op)
			if res.Failure == nil || res.Failure.Class != tc.class || res.Failure.Message() != tc.cause {
				t.Errorf("result %+v (%q), want failure %s: %s", res, res.Failure.Message(), tc.class, tc.cause)
			}
		})
	}
	g := newFake(t)
	early := g.run(flinkapi.RunJarRequest{})
	op, err := g.c.TriggerSavepoint(g.ctx, early, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res := g.result(op); res.Failure == nil || !strings.Contains(res.Failure.StackTrace, "UnavailableDispatcherOperationException: Unable to get JobMasterGateway for initializing job.") {
		t.Errorf("savepoint of an initializing job: %+v", res)
	}

	// Without a default savepoint directory and without a target directory
	// the trigger is rejected.
	h := newFake(t, flinktest.WithSavepointDir(""))
	status, body := h.raw(http.MethodPost, "/jobs/"+string(early)+"/savepoints", `{}`)
	want := "org.apache.flink.runtime.rest.handler.RestHandlerException: Config key [execution.checkpointing.savepoint-dir] is not set. Property [target-directory] must be provided."
	if status != 400 || firstError(t, body) != want {
		t.Errorf("no directory: %d %q", status, firstError(t, body))
	}
}

// TestStopWithSavepoint: the job ends FINISHED with the savepoint; its
// source stops when the stop is triggered.
func TestStopWithSavepoint(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	id := f.running(flinkapi.RunJarRequest{})
	f.advance(time.Second) // a first checkpoint
	before := f.info(id).Events
	op, err := f.c.StopWithSavepoint(f.ctx, id, flinkapi.StopRequest{Drain: true})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(100 * time.Millisecond)
	if st := f.state(id); st != flinkapi.JobRunning {
		t.Errorf("while stopping: %s, want RUNNING", st)
	}
	if n := f.info(id).Events; n != before {
		t.Errorf("events while stopping: %d, want %d: the source stops at the trigger", n, before)
	}
	f.advance(200 * time.Millisecond)
	res := f.result(op)
	if !res.Succeeded() || res.Location == "" {
		t.Fatalf("stop: %+v", res)
	}
	if st := f.state(id); st != flinkapi.JobFinished {
		t.Errorf("after the stop: %s, want FINISHED", st)
	}
	st, err := f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sp := st.LatestSavepoint; sp == nil || sp.ExternalPath != res.Location || sp.CheckpointType != "SYNC_SAVEPOINT" {
		t.Errorf("latest savepoint %+v", sp)
	}
	if c := st.LatestCompleted; c == nil || !c.Discarded {
		t.Errorf("latest checkpoint %+v: want it discarded once the job finished", c)
	}
	d, err := f.c.Job(f.ctx, id)
	if err != nil || d.EndTime.IsZero() || d.Vertices[0].Status != "FINISHED" {
		t.Errorf("details %+v, %v", d, err)
	}
	// A stop of a finished job fails like a savepoint of an unknown one.
	op2, err := f.c.StopWithSavepoint(f.ctx, id, flinkapi.StopRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res := f.result(op2); res.Failure == nil || !strings.Contains(res.Failure.Message(), "Could not find Flink job") {
		t.Errorf("stop of a finished job: %+v", res)
	}
}

// TestCancelWithSavepoint: cancel-job cancels the job once the savepoint
// completes.
func TestCancelWithSavepoint(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{})
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{CancelJob: true})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	if res := f.result(op); !res.Succeeded() {
		t.Fatalf("%+v", res)
	}
	if st := f.state(id); st != flinkapi.JobCanceled {
		t.Errorf("job %s, want CANCELED", st)
	}
}

// TestCheckpointTrigger: a checkpoint trigger (1.17+) completes with the
// checkpoint's id; its status route knows only its own trigger ids.
func TestCheckpointTrigger(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/cp", 0)})
	op, err := f.c.TriggerCheckpoint(f.ctx, id, flinkapi.CheckpointRequest{Type: flinkapi.CheckpointFull})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	res := f.result(op)
	if !res.Succeeded() || res.CheckpointID != 1 {
		t.Fatalf("%+v", res)
	}
	_, raw := f.raw(http.MethodGet, "/jobs/"+string(id)+"/checkpoints/"+string(op.TriggerID), "")
	if string(raw) != `{"operation":{"checkpointId":1},"status":{"id":"COMPLETED"}}` {
		t.Errorf("raw answer %s", raw)
	}
	d, err := f.c.CheckpointDetails(f.ctx, id, 1)
	if err != nil || d.Status != flinkapi.CheckpointCompleted || d.ExternalPath != "file:/tmp/flinktest/checkpoints/"+string(id)+"/chk-1" {
		t.Errorf("details %+v, %v", d, err)
	}
	cfg, err := f.c.CheckpointConfig(f.ctx, id)
	if err != nil || cfg.Mode != "at_least_once" || cfg.Interval < 1e6*time.Hour {
		t.Errorf("config of a job without periodic checkpoints: %+v, %v", cfg, err)
	}
	// A savepoint trigger id is unknown to the checkpoint status route.
	sp, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.c.OperationStatus(f.ctx, flinkapi.Operation{Kind: flinkapi.OpCheckpoint, JobID: id, TriggerID: sp.TriggerID})
	if !flinkapi.IsTriggerNotFound(err) {
		t.Errorf("savepoint trigger on the checkpoint route: %v", err)
	}
	// Failure causes of checkpoint triggers are named "failureCause".
	op3, err := f.c.TriggerCheckpoint(f.ctx, "0123456789abcdef0123456789abcdef", flinkapi.CheckpointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, raw = f.raw(http.MethodGet, "/jobs/0123456789abcdef0123456789abcdef/checkpoints/"+string(op3.TriggerID), "")
	if !strings.Contains(string(raw), `"failureCause":{"class":"java.util.concurrent.CompletionException"`) {
		t.Errorf("raw failure %s", raw)
	}
}

// TestPeriodicCheckpoints: checkpoints come at the interval, only the
// latest is kept, and the history holds the last ten.
func TestPeriodicCheckpoints(t *testing.T) {
	f := newFake(t, flinktest.WithRefreshInterval(0))
	id := f.running(flinkapi.RunJarRequest{ProgramArgs: testArgs("/out/p", 500)})
	start := f.info(id).Submitted.Add(750 * time.Millisecond) // tasks deployed
	f.advance(2 * time.Second)                                // now: start + 2.25s
	st, err := f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	type cp struct {
		ID        int64
		Trigger   time.Duration
		Discarded bool
	}
	var got []cp
	for _, h := range st.History {
		got = append(got, cp{h.ID, h.TriggerTime.Sub(start), h.Discarded})
	}
	want := []cp{{4, 2 * time.Second, false}, {3, 1500 * time.Millisecond, true}, {2, time.Second, true}, {1, 500 * time.Millisecond, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if want := (flinkapi.CheckpointCounts{Total: 4, Completed: 4}); st.Counts != want {
		t.Errorf("counts %+v, want %+v", st.Counts, want)
	}
	// An hour later: the history holds the last ten of 7204 checkpoints.
	f.advance(time.Hour)
	st, err = f.c.Checkpoints(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 10 || st.History[0].ID != 7204 || st.History[9].ID != 7195 || st.Counts.Completed != 7204 {
		t.Errorf("after an hour: %d entries from %d, counts %+v", len(st.History), st.History[0].ID, st.Counts)
	}
	if c := st.History[0]; c.ExternalPath == "" || c.Discarded {
		t.Errorf("latest %+v", c)
	}
	if ok, _ := f.srv.SavepointExists(st.History[1].ExternalPath); ok {
		t.Errorf("subsumed checkpoint %s still exists", st.History[1].ExternalPath)
	}
	_, err = f.c.CheckpointDetails(f.ctx, id, 7000)
	if ae := apiError(t, err); ae.StatusCode != 404 || flinkapi.IsJobNotFound(err) || ae.Message() != "Could not find checkpointing statistics for checkpoint 7000." {
		t.Errorf("details of an evicted checkpoint: %v", err)
	}
}

// TestResultExpiry: results are forgotten the store duration after they
// completed; running operations never are.
func TestResultExpiry(t *testing.T) {
	f := newFake(t, flinktest.WithStoreDuration(time.Minute), flinktest.WithSavepointDuration(2*time.Minute))
	id := f.running(flinkapi.RunJarRequest{})
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(90 * time.Second)
	if res := f.result(op); res.Completed() {
		t.Fatalf("%+v", res)
	}
	f.advance(30 * time.Second) // completes now
	if res := f.result(op); !res.Succeeded() {
		t.Fatalf("%+v", res)
	}
	f.advance(59 * time.Second)
	if res := f.result(op); !res.Succeeded() {
		t.Fatalf("59s after completion: %+v", res)
	}
	f.advance(time.Second)
	_, err = f.c.OperationStatus(f.ctx, op)
	if !flinkapi.IsTriggerNotFound(err) {
		t.Fatalf("60s after completion: %v, want IsTriggerNotFound", err)
	}
	// The trigger id is free again: it starts a new savepoint.
	if _, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: op.TriggerID}); err != nil {
		t.Fatal(err)
	}
	if res := f.result(op); res.Status != flinkapi.StatusInProgress {
		t.Errorf("reused expired trigger: %+v, want a new savepoint in progress", res)
	}
}

// TestDisposal: disposal answers 200, removes the savepoint, and a second
// disposal fails in its status.
func TestDisposal(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{})
	sp, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	loc := f.result(sp).Location
	status, body := f.rawJSON(http.MethodPost, "/savepoint-disposal", `{"savepoint-path":"`+loc+`"}`)
	if status != 200 || body["request-id"] == nil {
		t.Fatalf("disposal trigger: %d %v", status, body)
	}
	op := flinkapi.Operation{Kind: flinkapi.OpSavepointDisposal, TriggerID: flinkapi.TriggerID(body["request-id"].(string))}
	if res := f.result(op); res.Completed() {
		t.Errorf("right away: %+v, want IN_PROGRESS", res)
	}
	f.advance(50 * time.Millisecond)
	if res := f.result(op); !res.Succeeded() {
		t.Errorf("after 50ms: %+v", res)
	}
	if ok, _ := f.srv.SavepointExists(loc); ok {
		t.Error("the savepoint still exists")
	}
	op2, err := f.c.DisposeSavepoint(f.ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	res := f.result(op2)
	wantMsg := "Cannot find checkpoint or savepoint file/directory '" + loc + "' on file system 'file'."
	if res.Failure == nil || res.Failure.Class != "org.apache.flink.util.FlinkException" || res.Failure.Message() != wantMsg {
		t.Errorf("second disposal: %+v", res.Failure)
	}
	_, err = f.c.OperationStatus(f.ctx, flinkapi.Operation{Kind: flinkapi.OpSavepointDisposal, TriggerID: flinkapi.NewTriggerID()})
	if !flinkapi.IsTriggerNotFound(err) {
		t.Errorf("unknown disposal trigger: %v", err)
	}
}

// TestSnapshotDelay: --snapshot-delay makes every savepoint of the job
// take that much longer, as the test job's slow snapshots do.
func TestSnapshotDelay(t *testing.T) {
	f := newFake(t, flinktest.WithSavepointDuration(500*time.Millisecond))
	id := f.running(flinkapi.RunJarRequest{ProgramArgs: append(testArgs("/out/slow", 0), "--snapshot-delay", "2000")})
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(2499 * time.Millisecond)
	if res := f.result(op); res.Completed() {
		t.Errorf("after 2.499s: %+v, want IN_PROGRESS", res)
	}
	f.advance(time.Millisecond)
	if res := f.result(op); !res.Succeeded() {
		t.Errorf("after 2.5s: %+v, want COMPLETED", res)
	}
	// A value the test job refuses is refused here too.
	if _, err := f.c.RunJar(f.ctx, f.upload(), flinkapi.RunJarRequest{EntryClass: flinktest.CounterJobClass,
		ProgramArgs: append(testArgs("/out/bad", 0), "--snapshot-delay", "-1")}); err == nil {
		t.Error("--snapshot-delay -1 was accepted")
	}
}
