package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// cond returns job's condition of type typ, or the zero one.
func cond(job *v1alpha1.FlinkJob, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(job.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// TestConditionsUpgrade: a job created and running is Ready, not
// Progressing (Converged) and not Degraded; an upgrade makes it
// Progressing (UpgradeInProgress, of the new generation) and then not
// again, never Degraded; each condition's lastTransitionTime moves only
// when its status does.
func TestConditionsUpgrade(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	var progressing []metav1.ConditionStatus // each change of Progressing's status, in order
	track := func(j *v1alpha1.FlinkJob) {
		c := cond(j, ConditionProgressing)
		if n := len(progressing); n == 0 || progressing[n-1] != c.Status {
			progressing = append(progressing, c.Status)
		}
		if d := cond(j, ConditionDegraded); d.Status != metav1.ConditionFalse || d.Reason != ReasonAsExpected {
			t.Fatalf("Degraded %+v during the create and the upgrade; status %s", d, h.statusJSON())
		}
		for _, c := range j.Status.Conditions {
			if c.ObservedGeneration != j.Generation {
				t.Fatalf("condition %s of generation %d, the FlinkJob's is %d", c.Type, c.ObservedGeneration, j.Generation)
			}
		}
	}
	job := h.until("create", runs, track)
	if p := cond(job, ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != ReasonConverged {
		t.Fatalf("Progressing after the create: %+v", p)
	}
	if r := cond(job, ConditionReady); r.Status != metav1.ConditionTrue {
		t.Fatalf("Ready after the create: %+v", r)
	}
	if len(progressing) != 2 || progressing[0] != metav1.ConditionTrue {
		t.Errorf("Progressing went %v during the create, want True then False", progressing)
	}
	degradedSince := cond(job, ConditionDegraded).LastTransitionTime
	convergedSince := cond(job, ConditionProgressing).LastTransitionTime

	// At rest: the conditions do not change, nor does the status.
	h.srv.Clock().Advance(10 * time.Second)
	_, writes, _ := h.status.stored()
	for range 3 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	if _, w, _ := h.status.stored(); w != writes {
		t.Errorf("%d status writes at rest", w-writes)
	}
	if got := cond(h.get(), ConditionProgressing).LastTransitionTime; !got.Equal(&convergedSince) {
		t.Errorf("Progressing's lastTransitionTime moved at rest: %v, was %v", got, convergedSince)
	}

	progressing = nil
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	h.reconcile()
	p := cond(h.get(), ConditionProgressing)
	if p.Status != metav1.ConditionTrue || p.Reason != lifecycle.ActionReason(lifecycle.ActionUpgrade, "") || p.ObservedGeneration != 2 ||
		!p.LastTransitionTime.Time.Equal(h.srv.Clock().Now().Truncate(time.Second)) {
		t.Fatalf("Progressing after the upgrade's first reconcile: %+v (now %v)", p, h.srv.Clock().Now())
	}
	job = h.until("upgrade", upgraded, track)
	if len(progressing) != 2 || progressing[0] != metav1.ConditionTrue || progressing[1] != metav1.ConditionFalse {
		t.Errorf("Progressing went %v during the upgrade, want True then False", progressing)
	}
	if p := cond(job, ConditionProgressing); p.Reason != ReasonConverged || !p.LastTransitionTime.After(convergedSince.Time) {
		t.Errorf("Progressing after the upgrade: %+v", p)
	}
	if d := cond(job, ConditionDegraded); !d.LastTransitionTime.Equal(&degradedSince) {
		t.Errorf("Degraded's lastTransitionTime moved without a change of its status: %v, was %v", d.LastTransitionTime, degradedSince)
	}
}

// TestConditionsJobFails: a job that fails under the restart policy Never
// is Degraded (RestartDisabled, with the failure's root cause) and no
// longer Progressing; the JobManager's exception is reported as one
// Warning event, JobException, however many reconciles follow.
func TestConditionsJobFails(t *testing.T) {
	h := newHarness(t)
	old := h.failedForGood(true)
	for range 5 {
		h.srv.Clock().Advance(h.reconcile().RequeueAfter)
	}
	job := h.get()
	d := cond(job, ConditionDegraded)
	if d.Status != metav1.ConditionTrue || d.Reason != string(policy.ReasonRestartDisabled) || !strings.Contains(d.Message, "root cause: "+job.Status.Failure) ||
		!strings.Contains(job.Status.Failure, "boom") {
		t.Errorf("Degraded %+v", d)
	}
	if p := cond(job, ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != string(policy.ReasonRestartDisabled) {
		t.Errorf("Progressing %+v", p)
	}
	want := "Warning " + ReasonJobException + ": job " + string(old) + ": " + job.Status.Failure
	if n := h.events.count("Warning " + ReasonJobException); n != 1 || !h.events.has(want) {
		t.Errorf("%d JobException events, want one %q:\n%s", n, want, h.events)
	}
}

// TestConditionsRestartReportsEachFailure: a job that fails, is restarted
// and fails again with the same cause is reported twice (once per
// failure); Degraded is True while it is failed and False again once the
// restart runs it.
func TestConditionsRestartReportsEachFailure(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	first := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second)
	if err := h.srv.FailJob(first, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	sawDegraded := false
	job := h.until("restart", func(j *v1alpha1.FlinkJob) bool { return j.Status.JobID != first && runs(j) }, func(j *v1alpha1.FlinkJob) {
		if d := cond(j, ConditionDegraded); d.Status == metav1.ConditionTrue {
			sawDegraded = true
			if j.Status.State != policy.Failed || !strings.Contains(d.Message, "boom") {
				t.Errorf("Degraded %+v in state %s", d, j.Status.State)
			}
		}
	})
	if !sawDegraded {
		t.Errorf("never Degraded while the job was failed")
	}
	if d := cond(job, ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded after the restart: %+v", d)
	}
	second := job.Status.JobID
	h.srv.Clock().Advance(10 * time.Second)
	if err := h.srv.FailJob(second, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	job = h.until("second restart", func(j *v1alpha1.FlinkJob) bool { return j.Status.JobID != second && runs(j) }, nil)
	if !strings.Contains(job.Status.Failure, "boom") {
		t.Errorf("failure %q", job.Status.Failure)
	}
	for _, id := range []string{string(first), string(second)} {
		if !h.events.has("Warning " + ReasonJobException + ": job " + id + ": " + job.Status.Failure) {
			t.Errorf("no JobException event of job %s:\n%s", id, h.events)
		}
	}
	if n := h.events.count("Warning " + ReasonJobException); n != 2 {
		t.Errorf("%d JobException events, want 2:\n%s", n, h.events)
	}
}

// TestConditionsRolledBack: a spec whose job was rolled back is Degraded
// (RolledBack) and not Progressing (RolledBack: nothing is done until the
// spec changes), and Ready False.
func TestConditionsRolledBack(t *testing.T) {
	h := newHarness(t)
	spec := h.spec()
	spec.Rollback = lifecycle.RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}
	h.create(spec)
	h.running("create")
	h.srv.Clock().Advance(10 * time.Second)
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--fail-at", "1") })
	h.until("rollback", func(j *v1alpha1.FlinkJob) bool {
		return j.Status.Action == lifecycle.ActionRollback && !j.Status.InFlight() && j.Status.Reason == lifecycle.ReasonRolledBack
	}, nil)
	h.srv.Clock().Advance(h.reconcile().RequeueAfter) // at rest after the rollback
	job := h.get()
	for typ, want := range map[string]metav1.ConditionStatus{ConditionReady: metav1.ConditionFalse,
		ConditionProgressing: metav1.ConditionFalse, ConditionDegraded: metav1.ConditionTrue} {
		if c := cond(job, typ); c.Status != want || c.Reason != lifecycle.ReasonRolledBack {
			t.Errorf("%s %+v, want %s RolledBack", typ, c, want)
		}
	}
}

// TestDegradedFromTypedState: the Degraded and Progressing conditions of
// statuses the other tests do not reach, built by hand: an action that
// failed and waits for its retry, a preflight that refused, the
// JobManager unreachable, disposals given up, an unhealthy job; and the
// same messages with a state that is not degraded. They follow from the
// verdict (the one the last call recorded, for what only an observation
// tells), not from the reasons.
func TestDegradedFromTypedState(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// The job runs the spec's job, stably (its job earned it): converged.
	tmpl := lifecycle.JobTemplate{JarID: "d1e2f3_app.jar"}
	running := lifecycle.JobStatus{State: policy.Running, Reason: lifecycle.ReasonRunning, Message: "job x runs the spec's job", JobID: "x",
		Deployed: tmpl, Stable: tmpl, StableJobID: "x", Settled: true, Verdict: lifecycle.VerdictDone}
	for _, tc := range []struct {
		name        string
		st          func(*lifecycle.JobStatus)
		degraded    metav1.ConditionStatus
		reason      string
		progressing metav1.ConditionStatus
	}{
		{"at rest", func(*lifecycle.JobStatus) {}, metav1.ConditionFalse, ReasonAsExpected, metav1.ConditionFalse},
		{"failure text alone", func(st *lifecycle.JobStatus) {
			st.Message, st.Failure = "the job failed: RestartDisabled, rolled back, unreachable", "java.lang.Exception: failed"
		}, metav1.ConditionFalse, ReasonAsExpected, metav1.ConditionFalse},
		{"savepoint failed beside the running job", func(st *lifecycle.JobStatus) {
			st.Action = lifecycle.ActionSavepoint
			st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseDone, Outcome: lifecycle.OutcomeSavepointFailed}
			st.RetryAt = now.Add(time.Minute)
		}, metav1.ConditionFalse, ReasonAsExpected, metav1.ConditionFalse},
		{"upgrade failed, retry waits", func(st *lifecycle.JobStatus) {
			st.Action, st.Reason, st.Settled = lifecycle.ActionUpgrade, lifecycle.ReasonRetryWait, false
			st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseDone, Outcome: lifecycle.OutcomeSubmitFailed, Reason: "the jar run failed"}
			st.RetryAt = now.Add(time.Minute)
		}, metav1.ConditionTrue, "UpgradeSubmitFailed", metav1.ConditionTrue},
		{"upgrade failed, retry due", func(st *lifecycle.JobStatus) {
			st.Action, st.Settled = lifecycle.ActionUpgrade, false
			st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseDone, Outcome: lifecycle.OutcomeSubmitFailed}
			st.RetryAt = now.Add(-time.Second)
		}, metav1.ConditionFalse, ReasonAsExpected, metav1.ConditionTrue},
		{"preflight refused", func(st *lifecycle.JobStatus) {
			st.Action, st.Reason, st.Settled = lifecycle.ActionUpgrade, lifecycle.ReasonRetryWait, false
			st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseDone, Outcome: lifecycle.OutcomeBlocked,
				Replace: lifecycle.ReplaceProgress{Decision: policy.ReasonPreflightRefused}, Reason: "preflight: not enough slots"}
			st.RetryAt = now.Add(time.Minute)
		}, metav1.ConditionTrue, string(policy.ReasonPreflightRefused), metav1.ConditionFalse},
		{"JobManager unreachable", func(st *lifecycle.JobStatus) {
			st.State, st.Reason, st.Situation, st.Settled = policy.Unknown, string(policy.ReasonJobManagerUnreachable), lifecycle.SituationUnreachable, false
			st.Verdict = lifecycle.VerdictWaiting
		}, metav1.ConditionTrue, string(policy.ReasonJobManagerUnreachable), metav1.ConditionTrue},
		{"lost", func(st *lifecycle.JobStatus) {
			st.State, st.Reason, st.Settled, st.Verdict = policy.Lost, string(policy.ReasonRestartBackoff), false, lifecycle.VerdictWaiting
		}, metav1.ConditionTrue, string(policy.ReasonRestartBackoff), metav1.ConditionTrue},
		{"lost, reason without the verdict", func(st *lifecycle.JobStatus) {
			// A reason alone decides nothing: the status's verdict
			// (Progressing, none recorded) does.
			st.State, st.Reason, st.Settled, st.Verdict = policy.Lost, string(policy.ReasonRestartBackoff), false, ""
		}, metav1.ConditionFalse, ReasonAsExpected, metav1.ConditionTrue},
		{"unhealthy", func(st *lifecycle.JobStatus) {
			// Its health policy does not restart it: nothing is done
			// until the spec changes.
			st.Reason, st.Settled, st.Verdict = string(policy.ReasonNoCheckpointProgress), false, lifecycle.VerdictFailed
		}, metav1.ConditionTrue, string(policy.ReasonNoCheckpointProgress), metav1.ConditionFalse},
		{"short of task slots", func(st *lifecycle.JobStatus) {
			st.State, st.Reason, st.Settled, st.Verdict = policy.Deploying, lifecycle.ReasonNotEnoughSlots, false, lifecycle.VerdictWaiting
		}, metav1.ConditionTrue, lifecycle.ReasonNotEnoughSlots, metav1.ConditionTrue},
		{"disposals given up", func(st *lifecycle.JobStatus) {
			st.Savepoints.Records = []savepoint.Record{{Location: "s3://a"}, {Location: "s3://b", RecordExtra: &savepoint.RecordExtra{Disposal: savepoint.Disposal{Attempts: 5, GaveUp: true}}}}
		}, metav1.ConditionTrue, ReasonDisposalsGivenUp, metav1.ConditionFalse},
		{"in flight", func(st *lifecycle.JobStatus) {
			st.State, st.Reason, st.Action = policy.Updating, "UpgradeInProgress", lifecycle.ActionUpgrade
			st.Progress = lifecycle.Progress{Phase: lifecycle.PhaseSavepoint}
			st.Failure = "java.lang.Exception: old"
		}, metav1.ConditionFalse, ReasonAsExpected, metav1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &v1alpha1.FlinkJob{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			job.Spec.Job = tmpl
			job.Status.JobStatus = *running.DeepCopy()
			tc.st(&job.Status.JobStatus)
			d, p := degraded(job, now), progressing(job, now)
			if d.Status != tc.degraded || d.Reason != tc.reason || d.ObservedGeneration != 3 {
				t.Errorf("Degraded %+v, want %s %s", d, tc.degraded, tc.reason)
			}
			if p.Status != tc.progressing || p.Reason == "" {
				t.Errorf("Progressing %+v, want %s", p, tc.progressing)
			}
		})
	}
}

// TestConditionMessageBounded: a condition's message is cut to the API
// server's limit.
func TestConditionMessageBounded(t *testing.T) {
	job := &v1alpha1.FlinkJob{}
	job.Status.State, job.Status.Reason = policy.Failed, string(policy.ReasonRestartDisabled)
	job.Status.Message = strings.Repeat("m", maxMessage)
	job.Status.Failure = "java.lang.Exception: cause"
	setConditions(job, time.Now())
	if d := cond(job, ConditionDegraded); d.Status != metav1.ConditionTrue || len(d.Message) != maxMessage {
		t.Errorf("Degraded %s with a message of %d bytes, want %d", d.Status, len(d.Message), maxMessage)
	}
}

// count counts the events that start with prefix.
func (l *eventLog) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}
