package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestCreate: a new FlinkJob gets a finalizer and a running job, and
// further reconciles leave that one job alone.
func TestCreate(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	job := h.running("create")
	st := job.Status

	if !controllerutil.ContainsFinalizer(job, Finalizer) {
		t.Errorf("finalizers %v", job.Finalizers)
	}
	info, ok := h.srv.Job(st.JobID)
	if !ok || info.State != flinkapi.JobRunning || info.RestoredFrom != "" {
		t.Fatalf("job %s on the server: %+v, %v", st.JobID, info, ok)
	}
	if !slices.Equal(info.ProgramArgs, h.spec().Args) {
		t.Errorf("program args %v, want %v", info.ProgramArgs, h.spec().Args)
	}
	if st.Operation != v1alpha1.OperationDeploy || st.Progress.Outcome != lifecycle.OutcomeSucceeded ||
		st.Progress.Decision != policy.ReasonFirstDeploy || st.JarID == "" || st.JarFile != h.jar {
		t.Errorf("status after the deploy: %s", h.statusJSON())
	}
	if c := findReady(job); c == nil || c.Status != "True" {
		t.Errorf("Ready condition %+v", c)
	}
	if !h.events.has("Normal UpgradeSucceeded") {
		t.Errorf("no UpgradeSucceeded event:\n%s", h.events)
	}

	// At rest: only observation, no second job, no second upload.
	for range 5 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	if n := len(h.srv.Jobs()); n != 1 {
		t.Errorf("%d jobs on the server, want 1", n)
	}
	if n := h.count("POST /jars/upload"); n != 1 {
		t.Errorf("%d jar uploads, want 1", n)
	}
}

// TestUpdateWithSavepoint: a spec change stops the job with a savepoint
// and starts the new one from it; the savepoint is recorded in the status
// and the job's state continues.
func TestUpdateWithSavepoint(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	old := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second) // the job counts

	// The test job takes its parallelism from its arguments.
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Args = append(s.Args, "--parallelism", "2") })
	var stopped flinktest.JobInfo
	job := h.until("update", func(j *v1alpha1.FlinkJob) bool {
		return j.Status.DeployedGeneration == 2 && !j.Status.InFlight() && j.Status.DeploymentState == policy.Running
	}, func(j *v1alpha1.FlinkJob) {
		if info, _ := h.srv.Job(old); info.State == flinkapi.JobFinished && stopped.ID == "" {
			stopped = info
		}
	})
	// Let the new job's tasks come up and restore their state.
	h.srv.Clock().Advance(time.Second)
	st := job.Status

	if st.JobID == old || st.Progress.Decision != policy.ReasonSavepointBeforeUpdate {
		t.Fatalf("status after the update: %s", h.statusJSON())
	}
	sp := st.LatestSavepoint
	if sp.Location == "" || sp.Reason != savepoint.ReasonUpdate || sp.JobID != old {
		t.Errorf("latest savepoint %+v", sp)
	}
	if len(st.Savepoints.Records) != 1 || st.Savepoints.Records[0] != sp {
		t.Errorf("savepoint history %+v", st.Savepoints)
	}
	if ok, err := h.srv.SavepointExists(sp.Location); !ok || err != nil {
		t.Errorf("savepoint %s exists: %v, %v", sp.Location, ok, err)
	}
	info, _ := h.srv.Job(st.JobID)
	if info.RestoredFrom != sp.Location || info.Parallelism != 2 || info.State != flinkapi.JobRunning {
		t.Errorf("new job %+v, want restored from %s with parallelism 2", info, sp.Location)
	}
	if stopped.Events == 0 || info.Events < stopped.Events {
		t.Errorf("new job starts at %d events, the old one stopped at %d: state lost", info.Events, stopped.Events)
	}
	if n := len(h.jobs(flinkapi.JobRunning)); n != 1 {
		t.Errorf("%d running jobs, want 1", n)
	}
	if ids := h.triggerIDs(); len(ids) != 1 {
		t.Errorf("trigger ids %v, want one", ids)
	}
	if n := h.count("POST /jars/upload"); n != 1 {
		t.Errorf("%d jar uploads, want 1: the uploaded jar is reused", n)
	}
	for _, e := range []string{"Normal UpgradeSavepoint", "Normal UpgradeSubmit", "Normal UpgradeSucceeded"} {
		if !h.events.has(e) {
			t.Errorf("no event %q:\n%s", e, h.events)
		}
	}
}

// TestUpdateResumes: the answers to the stop and to the jar run are lost
// (the requests took effect); the operator, which keeps nothing but the
// stored status between reconciles, neither triggers a second savepoint
// nor starts a second job.
func TestUpdateResumes(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	h.running("create")
	h.srv.Clock().Advance(5 * time.Second)
	for _, f := range []flinktest.Fault{
		{Kind: flinktest.FaultReset, Route: "POST /jobs/:jobid/stop", Times: 1, After: true},
		{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 2},
		{Kind: flinktest.FaultReset, Route: "POST /jars/:jarid/run", Times: 1, After: true},
	} {
		if err := h.srv.Inject(f); err != nil {
			t.Fatal(err)
		}
	}
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Args = append(s.Args, "--name", "v2") })
	job := h.running("update")
	faults := 0
	for _, r := range h.srv.Requests() {
		if r.Fault != "" {
			faults++
		}
	}
	if faults != 4 {
		t.Errorf("%d requests hit a fault, want 4", faults)
	}
	if ids := h.triggerIDs(); len(ids) != 1 {
		t.Errorf("trigger ids %v, want one", ids)
	}
	if n := len(h.srv.Jobs()); n != 2 {
		t.Errorf("%d jobs, want the stopped one and its replacement: %+v", n, h.srv.Jobs())
	}
	if info, _ := h.srv.Job(job.Status.JobID); info.RestoredFrom != job.Status.LatestSavepoint.Location || info.RestoredFrom == "" {
		t.Errorf("new job %+v; latest savepoint %+v", info, job.Status.LatestSavepoint)
	}
}

// TestFailureRestart: a job that fails is started again, after the restart
// policy's backoff, from its latest state, and the restart is counted.
func TestFailureRestart(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	old := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second)
	if err := h.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	failedAt := h.srv.Clock().Now()
	before, _ := h.srv.Job(old)

	job := h.until("restart", func(j *v1alpha1.FlinkJob) bool {
		return j.Status.JobID != old && !j.Status.InFlight() && j.Status.DeploymentState == policy.Running
	}, nil)
	st := job.Status
	if st.Operation != v1alpha1.OperationRestart || st.Progress.Decision != policy.ReasonRestartFailedJob {
		t.Errorf("status after the restart: %s", h.statusJSON())
	}
	// LastRestart is a metav1.Time: whole seconds.
	if st.Restarts != 1 || st.LastRestart == nil || st.LastRestart.Sub(failedAt.Truncate(time.Second)) < 10*time.Second {
		t.Errorf("restarts %d at %v; failed at %v, backoff 10s", st.Restarts, st.LastRestart, failedAt)
	}
	if info, _ := h.srv.Job(old); info.State != flinkapi.JobFailed {
		t.Errorf("old job %s", info.State)
	}
	if st.Progress.RestoreKind != policy.KindCheckpoint || st.Progress.RestoreFrom == "" {
		t.Errorf("restored from %s %q, want the retained checkpoint", st.Progress.RestoreKind, st.Progress.RestoreFrom)
	}
	info, _ := h.srv.Job(st.JobID)
	if info.RestoredFrom != st.Progress.RestoreFrom || info.State != flinkapi.JobRunning {
		t.Errorf("new job %+v", info)
	}
	h.srv.Clock().Advance(3 * time.Second)
	info, _ = h.srv.Job(st.JobID)
	if info.Events <= before.Events/2 {
		t.Errorf("new job has %d events, the failed one %d: state not restored", info.Events, before.Events)
	}
	if !h.events.has("Normal RestartSucceeded") {
		t.Errorf("no RestartSucceeded event:\n%s", h.events)
	}
}

// TestFailureRestartDisabled: under the restart policy Never a failed job
// stays failed and the status says why.
func TestFailureRestartDisabled(t *testing.T) {
	h := newHarness(t)
	old := h.failedForGood()
	for range 5 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	job := h.get()
	if c := findReady(job); c == nil || c.Reason != string(policy.ReasonRestartDisabled) {
		t.Errorf("Ready condition %+v", c)
	}
	if len(h.srv.Jobs()) != 1 || job.Status.JobID != old || job.Status.Operation != v1alpha1.OperationDeploy {
		t.Errorf("a job was restarted: %+v", h.srv.Jobs())
	}
}

// TestDeleteWithFinalSavepoint: deleting a FlinkJob stops its job with a
// savepoint; the finalizer goes only once the savepoint is recorded.
// Created again under the same name, the job starts from that savepoint.
func TestDeleteWithFinalSavepoint(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	old := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second)
	if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
		t.Fatal(err)
	}
	var last *v1alpha1.FlinkJob
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, func(j *v1alpha1.FlinkJob) {
		if j != nil {
			last = j
			return
		}
		// Gone: the job must be stopped and its savepoint recorded.
		if info, _ := h.srv.Job(old); info.State != flinkapi.JobFinished {
			t.Fatalf("the FlinkJob is gone while its job is %s", info.State)
		}
		if _, ok, _ := h.store.Get(context.Background(), h.key.String()); !ok {
			t.Fatalf("the FlinkJob is gone before its savepoint was recorded")
		}
	})
	st := last.Status
	if st.Operation != v1alpha1.OperationTeardown || st.Progress.Outcome != lifecycle.OutcomeSucceeded ||
		st.Progress.Location == "" || st.LatestSavepoint.Location != st.Progress.Location {
		t.Errorf("last status: %+v", st)
	}
	rec, _, _ := h.store.Get(context.Background(), h.key.String())
	if rec.Location != st.Progress.Location {
		t.Errorf("stored %+v, want %s", rec, st.Progress.Location)
	}
	if ok, _ := h.srv.SavepointExists(rec.Location); !ok {
		t.Errorf("savepoint %s does not exist", rec.Location)
	}
	stopped, _ := h.srv.Job(old)
	if !h.events.has("Normal TeardownSucceeded") {
		t.Errorf("no TeardownSucceeded event:\n%s", h.events)
	}

	// Created again: restored from the final savepoint.
	h.srv.Clock().Advance(time.Minute)
	h.create(h.spec())
	job := h.running("create again")
	info, _ := h.srv.Job(job.Status.JobID)
	if info.RestoredFrom != rec.Location || info.Events < stopped.Events {
		t.Errorf("recreated job %+v, want restored from %s with at least %d events", info, rec.Location, stopped.Events)
	}
}

// TestDeleteLeftRunning: when no savepoint can be taken, a delete leaves
// the job running and keeps the FlinkJob (a stateful job is never
// cancelled without state unasked); once the spec allows cancelling
// without state, the next teardown does so and the FlinkJob goes.
func TestDeleteLeftRunning(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Update.SavepointDeadline = policy.Duration(time.Minute)
	h.create(spec)
	old := h.running("create").Status.JobID
	if err := h.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: old}); err != nil {
		t.Fatal(err)
	}
	if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
		t.Fatal(err)
	}
	start := h.srv.Clock().Now()
	job := h.until("teardown left running", func(j *v1alpha1.FlinkJob) bool {
		return j.Status.Operation == v1alpha1.OperationTeardown && j.Status.Progress.Outcome == lifecycle.OutcomeLeftRunning
	}, nil)
	if took := h.srv.Clock().Now().Sub(start); took > 5*time.Minute {
		t.Errorf("the teardown took %v", took)
	}
	if info, _ := h.srv.Job(old); info.State != flinkapi.JobRunning || !controllerutil.ContainsFinalizer(job, Finalizer) {
		t.Errorf("job %s, finalizers %v", info.State, job.Finalizers)
	}
	if !h.events.has("Warning TeardownLeftRunning") {
		t.Errorf("no TeardownLeftRunning event:\n%s", h.events)
	}

	job.Spec.AllowCancelWithoutState = true
	if err := h.k8s.Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, nil)
	if info, _ := h.srv.Job(old); info.State != flinkapi.JobCanceled {
		t.Errorf("job %s, want CANCELED", info.State)
	}
}

// TestDeleteFailedJob: deleting a FlinkJob whose job failed for good (its
// restart policy is Never) does not hang: the teardown names the job
// FAILED, finds no savepoint or retained checkpoint to record, says so in
// a warning event, and lets the FlinkJob go, as tearing down again cannot
// bring the state back.
func TestDeleteFailedJob(t *testing.T) {
	h := newHarness(t)
	h.failedForGood()
	if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
		t.Fatal(err)
	}
	var last *v1alpha1.FlinkJob
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, func(j *v1alpha1.FlinkJob) {
		if j != nil {
			last = j
		}
	})
	p := last.Status.Progress
	if last.Status.Operation != v1alpha1.OperationTeardown || p.Outcome != lifecycle.OutcomeJobTerminal || !p.Stopped() ||
		!strings.Contains(p.Reason, "FAILED") {
		t.Errorf("last status: operation %s, outcome %s (%s)", last.Status.Operation, p.Outcome, p.Reason)
	}
	if !h.events.has("Warning TeardownJobTerminal") {
		t.Errorf("no TeardownJobTerminal warning:\n%s", h.events)
	}
	if n := h.count("PATCH /jobs/:jobid"); n != 0 {
		t.Errorf("%d cancels of a failed job", n)
	}
}

// TestPeriodicSavepoints: with a savepoint interval, savepoints of the
// running job are taken on schedule and listed in the status.
func TestPeriodicSavepoints(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.SavepointInterval = policy.Duration(time.Minute)
	h.create(spec)
	h.running("create")
	started := h.srv.Clock().Now()
	job := h.until("two savepoints", func(j *v1alpha1.FlinkJob) bool { return len(j.Status.Savepoints.Records) == 2 }, nil)
	h1, h2 := job.Status.Savepoints.Records[0], job.Status.Savepoints.Records[1]
	if h1.Reason != savepoint.ReasonScheduled || h2.Reason != savepoint.ReasonScheduled || h2.Time.Sub(h1.Time) < time.Minute {
		t.Errorf("savepoints %+v", job.Status.Savepoints)
	}
	if took := h.srv.Clock().Now().Sub(started); took > 3*time.Minute {
		t.Errorf("two savepoints took %v at a 1m interval", took)
	}
	if job.Status.LatestSavepoint != h2 || !h.events.has("Normal SavepointTaken") {
		t.Errorf("latest %+v; events:\n%s", job.Status.LatestSavepoint, h.events)
	}
	if info, _ := h.srv.Job(job.Status.JobID); info.State != flinkapi.JobRunning {
		t.Errorf("job %s after the savepoints", info.State)
	}
}

func findReady(job *v1alpha1.FlinkJob) *metav1.Condition {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == ConditionReady {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// TestInvalidSpec: a policy that does not validate starts nothing, and the
// Ready condition names the field.
func TestInvalidSpec(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Update.Mode = "savepoint" // the mode is "Savepoint"
	h.create(spec)
	job := h.until("invalid", func(j *v1alpha1.FlinkJob) bool { return findReady(j) != nil }, nil)
	if c := findReady(job); c.Reason != "InvalidSpec" || !strings.Contains(c.Message, "mode") {
		t.Errorf("Ready condition %+v", c)
	}
	if len(h.srv.Jobs()) != 0 || job.Status.Operation != "" {
		t.Errorf("jobs %+v, operation %q", h.srv.Jobs(), job.Status.Operation)
	}
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Update.Mode = policy.UpgradeSavepoint })
	h.running("fixed")
}

// TestPeriodicSavepointFails: a failed periodic savepoint leaves the job
// running and Ready, is reported, and is tried again one interval later.
func TestPeriodicSavepointFails(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.SavepointInterval = policy.Duration(time.Minute)
	h.create(spec)
	id := h.running("create").Status.JobID
	if err := h.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: id, Times: 1}); err != nil {
		t.Fatal(err)
	}
	var failedAt time.Time
	job := h.until("a savepoint after a failed one", func(j *v1alpha1.FlinkJob) bool { return len(j.Status.Savepoints.Records) == 1 }, func(j *v1alpha1.FlinkJob) {
		if failedAt.IsZero() && j.Status.Operation == v1alpha1.OperationSavepoint && j.Status.Progress.Outcome == lifecycle.OutcomeSavepointFailed {
			failedAt = h.srv.Clock().Now()
			if c := findReady(j); c == nil || c.Status != metav1.ConditionTrue || j.Status.RetryAt != nil {
				t.Errorf("after a failed savepoint: Ready %+v, retry at %v", c, j.Status.RetryAt)
			}
		}
	})
	if failedAt.IsZero() || !h.events.has("Warning SavepointFailed") {
		t.Fatalf("the savepoint did not fail first; events:\n%s", h.events)
	}
	if got := job.Status.Savepoints.Records[0].Time.Sub(failedAt); got < 50*time.Second {
		t.Errorf("retried %v after the failure, want about the 1m interval", got)
	}
	if info, _ := h.srv.Job(id); info.State != flinkapi.JobRunning || job.Status.JobID != id {
		t.Errorf("job %s (%s)", info.State, job.Status.JobID)
	}
}
