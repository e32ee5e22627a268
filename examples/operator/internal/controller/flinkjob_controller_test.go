package controller

import (
	"context"
	"fmt"
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
	if !slices.Equal(info.ProgramArgs, h.spec().Job.Args) {
		t.Errorf("program args %v, want %v", info.ProgramArgs, h.spec().Job.Args)
	}
	if st.Action != lifecycle.ActionDeploy || st.Progress.Outcome != lifecycle.OutcomeSucceeded ||
		st.Progress.Replace.Decision != policy.ReasonFirstDeploy || st.JarID == "" || st.JarFile != h.jar ||
		st.Stable.Fingerprint() != job.Spec.Job.Fingerprint() || st.ObservedGeneration != 1 {
		t.Errorf("status after the deploy: %s", h.statusJSON())
	}
	if c := findReady(job); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Running" || c.ObservedGeneration != 1 {
		t.Errorf("Ready condition %+v", c)
	}
	if !h.events.has("Normal DeploySucceeded") {
		t.Errorf("no DeploySucceeded event:\n%s", h.events)
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
	if c := findReady(h.get()); c == nil || !c.LastTransitionTime.Equal(&findReady(job).LastTransitionTime) {
		t.Errorf("Ready changed at rest: %+v", c)
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

	h.edit(func(s *v1alpha1.FlinkJobSpec) {
		s.Job.Args = append(s.Job.Args, "--name", "v2")
		s.Job.Parallelism = 2
	})
	var stopped flinktest.JobInfo
	job := h.until("update", runs, func(j *v1alpha1.FlinkJob) {
		if info, _ := h.srv.Job(old); info.State == flinkapi.JobFinished && stopped.ID == "" {
			stopped = info
		}
	})
	// Let the new job's tasks run.
	h.srv.Clock().Advance(time.Second)
	st := job.Status

	if st.JobID == old || st.Action != lifecycle.ActionUpgrade || st.Progress.Replace.Decision != policy.ReasonSavepointBeforeUpdate {
		t.Fatalf("status after the update: %s", h.statusJSON())
	}
	sp := st.Latest
	if sp.Location == "" || sp.Reason != savepoint.ReasonUpdate || sp.JobID != old || st.UpgradeFrom.Location != sp.Location {
		t.Errorf("latest savepoint %+v, upgrade from %+v", sp, st.UpgradeFrom)
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
// (the requests took effect), and every third status update is lost too
// (the reconcile fails and the next one starts from the status stored
// before). The operator, which keeps nothing but the stored status
// between reconciles and stores it after every one, neither triggers a
// second savepoint nor starts a second job.
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
	_, before, _ := h.status.stored()
	h.status.loseEvery = 3
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	reconciles := 0
	job := h.until("update", runs, func(*v1alpha1.FlinkJob) { reconciles++ })
	_, updates, lost := h.status.stored()
	if updates-before != reconciles || lost == 0 {
		t.Errorf("%d status updates (%d lost) in %d reconciles: want one each", updates-before, lost, reconciles)
	}
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
	if info, _ := h.srv.Job(job.Status.JobID); info.RestoredFrom != job.Status.Latest.Location || info.RestoredFrom == "" {
		t.Errorf("new job %+v; latest savepoint %+v", info, job.Status.Latest)
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

	job := h.until("restart", func(j *v1alpha1.FlinkJob) bool { return j.Status.JobID != old && runs(j) }, nil)
	st := job.Status
	if st.Action != lifecycle.ActionRestart || st.Progress.Replace.Decision != policy.ReasonRestartFailedJob {
		t.Errorf("status after the restart: %s", h.statusJSON())
	}
	if st.Restarts != 1 || st.LastRestart.Sub(failedAt) < 10*time.Second || !strings.Contains(st.Failure, "boom") {
		t.Errorf("restarts %d at %v; failed at %v, backoff 10s; failure %q", st.Restarts, st.LastRestart, failedAt, st.Failure)
	}
	if info, _ := h.srv.Job(old); info.State != flinkapi.JobFailed {
		t.Errorf("old job %s", info.State)
	}
	if st.Progress.Replace.RestoreKind != policy.KindCheckpoint || st.Progress.Replace.RestoreFrom == "" {
		t.Errorf("restored from %s %q, want the retained checkpoint", st.Progress.Replace.RestoreKind, st.Progress.Replace.RestoreFrom)
	}
	info, _ := h.srv.Job(st.JobID)
	if info.RestoredFrom != st.Progress.Replace.RestoreFrom || info.State != flinkapi.JobRunning {
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
	old := h.failedForGood(true)
	for range 5 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	job := h.get()
	if c := findReady(job); c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(policy.ReasonRestartDisabled) {
		t.Errorf("Ready condition %+v", c)
	}
	if len(h.srv.Jobs()) != 1 || job.Status.JobID != old || job.Status.Action != lifecycle.ActionDeploy || !strings.Contains(job.Status.Failure, "boom") {
		t.Errorf("a job was restarted: %+v; status %s", h.srv.Jobs(), h.statusJSON())
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
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, func(j *v1alpha1.FlinkJob) {
		if j != nil {
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
	last, _, _ := h.status.stored()
	st := last.Status
	if st.Action != lifecycle.ActionTeardown || st.Progress.Outcome != lifecycle.OutcomeSucceeded ||
		st.Progress.Savepoint.Location == "" || st.Latest.Location != st.Progress.Savepoint.Location {
		t.Errorf("last status: %+v", st)
	}
	rec, _, _ := h.store.Get(context.Background(), h.key.String())
	if rec.Location != st.Progress.Savepoint.Location {
		t.Errorf("stored %+v, want %s", rec, st.Progress.Savepoint.Location)
	}
	if ok, _ := h.srv.SavepointExists(rec.Location); !ok {
		t.Errorf("savepoint %s does not exist", rec.Location)
	}
	stopped, _ := h.srv.Job(old)
	if !h.events.has("Normal TeardownSucceeded") || h.events.has("Warning") {
		t.Errorf("no TeardownSucceeded event, or a warning:\n%s", h.events)
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
		return j.Status.Action == lifecycle.ActionTeardown && j.Status.Progress.Outcome == lifecycle.OutcomeLeftRunning
	}, nil)
	if took := h.srv.Clock().Now().Sub(start); took > 5*time.Minute {
		t.Errorf("the teardown took %v", took)
	}
	if info, _ := h.srv.Job(old); info.State != flinkapi.JobRunning || !controllerutil.ContainsFinalizer(job, Finalizer) {
		t.Errorf("job %s, finalizers %v", info.State, job.Finalizers)
	}
	if c := findReady(job); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "TeardownLeftRunning" {
		t.Errorf("Ready condition %+v", c)
	}
	if !h.events.has("Warning TeardownLeftRunning") {
		t.Errorf("no TeardownLeftRunning event:\n%s", h.events)
	}
	// Tried again after the retry interval, still without a savepoint.
	job = h.until("teardown tried again", func(j *v1alpha1.FlinkJob) bool { return j.Status.InFlight() }, nil)

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
// restart policy is Never) does not hang. With checkpoints Flink retains
// after a failure, the teardown records the failed job's latest one as
// its restore point; without, it names the job FAILED, finds no savepoint
// or retained checkpoint to record, says so in warning events, and lets
// the FlinkJob go, as tearing down again cannot bring the state back.
func TestDeleteFailedJob(t *testing.T) {
	for _, retained := range []bool{true, false} {
		t.Run(fmt.Sprintf("retained=%v", retained), func(t *testing.T) {
			h := newHarness(t)
			h.failedForGood(retained)
			if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
				t.Fatal(err)
			}
			h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, nil)
			last, _, _ := h.status.stored()
			p := last.Status.Progress
			rec, stored, _ := h.store.Get(context.Background(), h.key.String())
			want, warnings := lifecycle.OutcomeJobTerminal, []string{"Warning TeardownJobTerminal", "Warning DeletedJobTerminal"}
			if retained {
				want, warnings = lifecycle.OutcomeSucceeded, nil
				if !stored || !strings.Contains(rec.Location, "/chk-") || last.Status.Latest.Location != rec.Location {
					t.Errorf("stored %+v (%v), latest %+v: want the retained checkpoint", rec, stored, last.Status.Latest)
				}
			} else if stored {
				t.Errorf("stored %+v without a restore point", rec)
			}
			if last.Status.Action != lifecycle.ActionTeardown || p.Outcome != want || !p.Stopped() || !strings.Contains(p.Reason, "FAILED") {
				t.Errorf("last status: action %s, outcome %s (%s)", last.Status.Action, p.Outcome, p.Reason)
			}
			for _, e := range warnings {
				if !h.events.has(e) {
					t.Errorf("no %s event:\n%s", e, h.events)
				}
			}
			// The job's failure is reported (JobException); its delete warns of nothing.
			if retained && h.events.count("Warning") != h.events.count("Warning "+ReasonJobException) {
				t.Errorf("a warning of the delete:\n%s", h.events)
			}
			if n := h.count("PATCH /jobs/:jobid"); n != 0 {
				t.Errorf("%d cancels of a failed job", n)
			}
		})
	}
}

// TestDeleteNothingDeployed: a FlinkJob deleted before anything was
// deployed (its spec is invalid) goes at once, without a warning.
func TestDeleteNothingDeployed(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Job.JarFile = ""
	h.create(spec)
	h.reconcile()
	if err := h.k8s.Delete(context.Background(), h.get()); err != nil {
		t.Fatal(err)
	}
	h.until("delete", func(j *v1alpha1.FlinkJob) bool { return j == nil }, nil)
	if n := len(h.srv.Requests()); n != 0 || h.events.has("Warning") {
		t.Errorf("%d requests; events:\n%s", n, h.events)
	}
}

// TestPeriodicSavepoints: with a savepoint interval, savepoints of the
// running job are taken on schedule and recorded in the status; with
// maxCount, the oldest are disposed of, so the history stays bounded and
// lists only savepoints that exist.
func TestPeriodicSavepoints(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Savepoints = lifecycle.SavepointPolicy{Interval: policy.Duration(time.Minute), MaxCount: 2}
	h.create(spec)
	id := h.running("create").Status.JobID
	started := h.srv.Clock().Now()
	var times []time.Time
	longest := 0
	job := h.until("five savepoints", func(j *v1alpha1.FlinkJob) bool { return len(times) == 5 && runs(j) }, func(j *v1alpha1.FlinkJob) {
		longest = max(longest, len(j.Status.Savepoints.Records))
		if n := len(times); n == 0 || j.Status.Latest.Time.After(times[n-1]) {
			if !j.Status.Latest.Time.IsZero() {
				times = append(times, j.Status.Latest.Time)
			}
		}
	})
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d < time.Minute || d > 2*time.Minute {
			t.Errorf("savepoint %d came %v after the one before, at a 1m interval", i, d)
		}
	}
	if took := h.srv.Clock().Now().Sub(started); took > 7*time.Minute {
		t.Errorf("five savepoints took %v at a 1m interval", took)
	}
	st := job.Status
	if n := len(st.Savepoints.Records); n < 2 || longest > 3 || st.Latest != st.Savepoints.Records[n-1] || st.Latest.Reason != savepoint.ReasonScheduled {
		t.Errorf("history %+v (at most %d long), latest %+v", st.Savepoints.Records, longest, st.Latest)
	}
	taken := 0
	for _, s := range h.srv.Snapshots() {
		if !s.Savepoint || s.Job != id {
			continue
		}
		taken++
		kept := slices.ContainsFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return r.Location == s.Location })
		if ok, _ := h.srv.SavepointExists(s.Location); ok != kept {
			t.Errorf("savepoint %s exists %v, in the history %v", s.Location, ok, kept)
		}
	}
	if taken != 5 {
		t.Errorf("%d savepoints taken, want 5", taken)
	}
	for _, e := range []string{"Normal SavepointSucceeded", "Normal DisposeSucceeded"} {
		if !h.events.has(e) {
			t.Errorf("no event %q:\n%s", e, h.events)
		}
	}
	if info, _ := h.srv.Job(id); info.State != flinkapi.JobRunning || st.JobID != id || !runs(job) {
		t.Errorf("job %s (%s) after the savepoints; status %s", info.State, st.JobID, h.statusJSON())
	}
}

// TestPeriodicSavepointFails: a failed periodic savepoint leaves the job
// running, is reported, and is tried again one interval later.
func TestPeriodicSavepointFails(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Savepoints.Interval = policy.Duration(time.Minute)
	h.create(spec)
	id := h.running("create").Status.JobID
	if err := h.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: id, Times: 1}); err != nil {
		t.Fatal(err)
	}
	var failedAt time.Time
	job := h.until("a savepoint after a failed one", func(j *v1alpha1.FlinkJob) bool { return len(j.Status.Savepoints.Records) == 1 }, func(j *v1alpha1.FlinkJob) {
		if j.Status.State != policy.Running || j.Status.JobID != id {
			t.Fatalf("job %s %s during the savepoints: %s", j.Status.JobID, j.Status.State, j.Status.Message)
		}
		if failedAt.IsZero() && j.Status.Action == lifecycle.ActionSavepoint && j.Status.Progress.Outcome == lifecycle.OutcomeSavepointFailed {
			failedAt = h.srv.Clock().Now()
			if j.Status.SavepointFailures != 1 || !j.Status.RetryAt.IsZero() {
				t.Errorf("after a failed savepoint: %d failures, retry at %v", j.Status.SavepointFailures, j.Status.RetryAt)
			}
		}
	})
	if failedAt.IsZero() || !h.events.has("Warning SavepointSavepointFailed") {
		t.Fatalf("the savepoint did not fail first; events:\n%s", h.events)
	}
	if got := job.Status.Savepoints.Records[0].Time.Sub(failedAt); got < 50*time.Second {
		t.Errorf("retried %v after the failure, want about the 1m interval", got)
	}
	if info, _ := h.srv.Job(id); info.State != flinkapi.JobRunning || job.Status.SavepointFailures != 0 {
		t.Errorf("job %s, %d savepoint failures", info.State, job.Status.SavepointFailures)
	}
	if job = h.until("ready again", runs, nil); findReady(job).Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v", findReady(job))
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

// TestInvalidSpec: a spec that does not validate sends no request, and
// the Ready condition names the fields at fault; once fixed, the job
// runs.
func TestInvalidSpec(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Update.Mode = "savepoint" // the mode is "Savepoint"
	spec.Job.Parallelism = -1
	h.create(spec)
	job := h.until("invalid", func(j *v1alpha1.FlinkJob) bool { return findReady(j) != nil }, nil)
	for range 3 {
		if r := h.reconcile(); r.RequeueAfter != 0 {
			t.Errorf("an invalid spec is requeued after %v; it waits for the spec to change", r.RequeueAfter)
		}
	}
	c := findReady(job)
	if c.Status != metav1.ConditionFalse || c.Reason != "InvalidSpec" || !strings.Contains(c.Message, "update") ||
		!strings.Contains(c.Message, "mode") || !strings.Contains(c.Message, "job.parallelism") {
		t.Errorf("Ready condition %+v", c)
	}
	if n := len(h.srv.Requests()); n != 0 || job.Status.Action != "" {
		t.Errorf("%d requests, action %q", n, job.Status.Action)
	}
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Update.Mode, s.Job.Parallelism = policy.UpgradeSavepoint, 0 })
	h.running("fixed")
}

// TestSuspendAndResume: spec.state Suspended stops the job with a
// savepoint, which the status keeps, and leaves it stopped; Running again
// starts the job from that savepoint, its counts continuing.
func TestSuspendAndResume(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	old := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second)

	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.State = lifecycle.DesiredSuspended })
	job := h.until("suspend", func(j *v1alpha1.FlinkJob) bool { return j.Status.Suspended && j.Status.Reason == "Suspended" }, nil)
	st := job.Status
	stopped, _ := h.srv.Job(old)
	if stopped.State != flinkapi.JobFinished || len(h.live()) != 0 || st.Action != lifecycle.ActionSuspend || st.State != policy.Suspended {
		t.Fatalf("suspend: job %s, live %v; status %s", stopped.State, h.live(), h.statusJSON())
	}
	if st.Latest.Location == "" || st.Latest.JobID != old || !strings.Contains(st.Message, st.Latest.Location) {
		t.Errorf("suspend: latest savepoint %+v; message %q", st.Latest, st.Message)
	}
	if c := findReady(job); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Suspended" {
		t.Errorf("Ready condition %+v", c)
	}
	// At rest while suspended: nothing is sent, nothing starts.
	h.srv.ClearRequests()
	for range 5 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	if n := len(h.srv.Requests()); n != 0 || len(h.srv.Jobs()) != 1 {
		t.Errorf("suspended: %d requests, jobs %+v", n, h.srv.Jobs())
	}

	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.State = lifecycle.DesiredRunning })
	job = h.running("resume")
	info, _ := h.srv.Job(job.Status.JobID)
	if job.Status.JobID == old || job.Status.Suspended || info.RestoredFrom != st.Latest.Location || info.Events < stopped.Events {
		t.Errorf("resumed job %+v, want restored from %s with at least %d events; status %s", info, st.Latest.Location, stopped.Events, h.statusJSON())
	}
	if len(h.live()) != 1 {
		t.Errorf("live jobs %+v", h.live())
	}
}

// TestRollback: with spec.rollback enabled, an update to a job that fails
// at start goes back to the last stable job, started from the savepoint
// the update stopped the old job with; the failed spec is not tried again
// until the spec changes, and a new one is.
func TestRollback(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Rollback = lifecycle.RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}
	h.create(spec)
	good := h.running("create")
	old, stable := good.Status.JobID, good.Status.Deployed
	h.srv.Clock().Advance(10 * time.Second)

	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--fail-at", "1") })
	bad := h.get().Spec.Job
	job := h.until("rollback", func(j *v1alpha1.FlinkJob) bool {
		return j.Status.Action == lifecycle.ActionRollback && !j.Status.InFlight() && j.Status.Reason == "RolledBack"
	}, nil)
	st := job.Status
	if st.Progress.Outcome != lifecycle.OutcomeSucceeded || st.Deployed.Fingerprint() != stable.Fingerprint() || st.FailedJob != bad.Fingerprint() {
		t.Fatalf("rollback: status %s", h.statusJSON())
	}
	h.srv.Clock().Advance(time.Second) // the tasks restore their state
	stopped, _ := h.srv.Job(old)
	info, _ := h.srv.Job(st.JobID)
	if st.UpgradeFrom.JobID != old || info.RestoredFrom != st.UpgradeFrom.Location || !slices.Equal(info.ProgramArgs, stable.Args) || len(h.live()) != 1 {
		t.Errorf("rolled back to %+v, want restored from %+v with %v; live %v", info, st.UpgradeFrom, stable.Args, h.live())
	}
	if stopped.State != flinkapi.JobFinished || info.Events < stopped.Events {
		t.Errorf("old job %s with %d events; rolled back job %d: state lost", stopped.State, stopped.Events, info.Events)
	}
	if failed := h.jobs(flinkapi.JobFailed); len(failed) != 1 || !slices.Contains(failed[0].ProgramArgs, "--fail-at") {
		t.Errorf("failed jobs %+v, want the updated one", failed)
	}
	if c := findReady(job); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "RolledBack" || !h.events.has("Normal UpgradeSucceeded") {
		t.Errorf("Ready condition %+v; events:\n%s", c, h.events)
	}

	// The failed spec is not tried again.
	rolledBack := st.JobID
	for range 20 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	if job = h.get(); job.Status.JobID != rolledBack || job.Status.Reason != "RolledBack" || len(h.srv.Jobs()) != 3 {
		t.Errorf("the failed spec was tried again: %+v; status %s", h.srv.Jobs(), h.statusJSON())
	}

	// A new spec is.
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(slices.Clone(stable.Args), "--name", "v3") })
	job = h.running("update after the rollback")
	if job.Status.JobID == rolledBack || job.Status.Action != lifecycle.ActionUpgrade {
		t.Errorf("after the rollback: status %s", h.statusJSON())
	}
}
