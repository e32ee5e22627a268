package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestAPIServerRejectsInvalidSpecs: the CRD installs, and the API server
// itself refuses a FlinkJob whose spec breaks the schema generated from
// the markers of the api and policy types (enums, minimums, durations as
// strings with a unit, the CEL rule of the Application mode), naming the
// field; a valid spec, durations written as strings, is stored as sent.
func TestAPIServerRejectsInvalidSpecs(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	_, c := kube(t)
	valid := func() map[string]any {
		return map[string]any{
			"job":        map[string]any{"jarFile": "/jars/counter.jar", "parallelism": int64(2)},
			"state":      "Running",
			"update":     map[string]any{"mode": "Savepoint", "maxStateAge": "6h", "savepointDeadline": "1m30s"},
			"restart":    map[string]any{"mode": "FromLatestState", "backoff": "30s", "maxRestarts": int64(3)},
			"health":     map[string]any{"action": "Report", "window": "10m"},
			"savepoints": map[string]any{"interval": "1h", "maxCount": int64(5)},
			"rollback":   map[string]any{"enabled": true, "readinessTimeout": "250ms"},
		}
	}
	create := func(name string, spec map[string]any) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "FlinkJob",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
		}}
		return c.Create(ctx, u)
	}
	if err := create("valid", valid()); err != nil {
		t.Fatalf("a valid spec was refused: %v", err)
	}
	var stored v1alpha1.FlinkJob
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "valid"}, &stored); err != nil {
		t.Fatal(err)
	}
	if s := stored.Spec; s.Update.MaxStateAge.Std() != 6*time.Hour || s.Update.SavepointDeadline.Std() != 90*time.Second ||
		s.Rollback.ReadinessTimeout.Std() != 250*time.Millisecond || s.Restart.Mode != policy.RestartFromLatestState || s.Job.Parallelism != 2 {
		t.Errorf("stored spec %+v", s)
	}

	sub := func(s map[string]any, key string) map[string]any {
		m, ok := s[key].(map[string]any)
		if !ok {
			m = map[string]any{}
			s[key] = m
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		change func(map[string]any)
		field  string // the field the error names
		want   string // and what it says about it
	}{
		{"state-enum", func(s map[string]any) { s["state"] = "Paused" }, "spec.state", "Unsupported value"},
		{"mode-enum", func(s map[string]any) { s["mode"] = "Cluster" }, "spec.mode", "Unsupported value"},
		{"update-mode-enum", func(s map[string]any) { sub(s, "update")["mode"] = "Fast" }, "spec.update.mode", "Unsupported value"},
		{"restart-mode-enum", func(s map[string]any) { sub(s, "restart")["mode"] = "Always" }, "spec.restart.mode", "Unsupported value"},
		{"health-action-enum", func(s map[string]any) { sub(s, "health")["action"] = "Sometimes" }, "spec.health.action", "Unsupported value"},
		{"parallelism-minimum", func(s map[string]any) { sub(s, "job")["parallelism"] = int64(-1) }, "spec.job.parallelism", "greater than or equal to 0"},
		{"max-count-minimum", func(s map[string]any) { sub(s, "savepoints")["maxCount"] = int64(-2) }, "spec.savepoints.maxCount", "greater than or equal to 0"},
		{"max-restarts-minimum", func(s map[string]any) { sub(s, "restart")["maxRestarts"] = int64(-1) }, "spec.restart.maxRestarts", "greater than or equal to 0"},
		{"health-max-restarts-minimum", func(s map[string]any) { sub(s, "health")["maxRestarts"] = int64(-1) }, "spec.health.maxRestarts", "greater than or equal to 0"},
		{"savepoint-attempts-minimum", func(s map[string]any) { sub(s, "update")["savepointAttempts"] = int64(-1) }, "spec.update.savepointAttempts", "greater than or equal to 0"},
		{"duration-number", func(s map[string]any) { sub(s, "restart")["backoff"] = int64(30) }, "spec.restart.backoff", "must be of type"},
		{"duration-without-unit", func(s map[string]any) { sub(s, "restart")["backoff"] = "30" }, "spec.restart.backoff", "should match"},
		{"duration-negative", func(s map[string]any) { sub(s, "update")["maxStateAge"] = "-1h" }, "spec.update.maxStateAge", "should match"},
		{"duration-words", func(s map[string]any) { sub(s, "savepoints")["interval"] = "one hour" }, "spec.savepoints.interval", "spec.savepoints.interval"},
		{"application-without-image", func(s map[string]any) { s["mode"] = "Application" }, "spec", "mode Application needs application.image"},
		{"application-empty-image", func(s map[string]any) {
			s["mode"] = "Application"
			s["application"] = map[string]any{"image": ""}
		}, "spec.application.image", "at least 1 chars long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := valid()
			tc.change(spec)
			err := create(tc.name, spec)
			if err == nil {
				t.Fatalf("spec %v was accepted", spec)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want Invalid naming %s: %s", err, tc.field, tc.want)
			}
		})
	}
}

// TestAPIServerStatusSubresource: the reconciler's status goes through the
// status subresource: it is stored, the generation stays the spec's; a
// write of the main resource cannot change the status, nor a status write
// the spec.
func TestAPIServerStatusSubresource(t *testing.T) {
	ctx := context.Background()
	h := newKubeHarness(t)
	h.create(h.spec())
	job := h.running("create")
	_, updates, _ := h.status.stored()
	if job.Generation != 1 || job.Status.ObservedGeneration != 1 || updates < 2 || !controllerutil.ContainsFinalizer(job, Finalizer) {
		t.Fatalf("generation %d, observed %d after %d status updates; finalizers %v", job.Generation, job.Status.ObservedGeneration, updates, job.Finalizers)
	}
	stored := job.Status.JobID

	// The main resource ignores a status.
	forged := job.DeepCopy()
	forged.Status.JobID = "00000000000000000000000000000000"
	forged.Labels = map[string]string{"edited": "yes"}
	if err := h.k8s.Update(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if got := h.get(); got.Status.JobID != stored || got.Labels["edited"] != "yes" || got.Generation != 1 {
		t.Errorf("after an update of the main resource: job %s (want %s), labels %v, generation %d", got.Status.JobID, stored, got.Labels, got.Generation)
	}

	// The status subresource ignores a spec.
	forged = h.get()
	forged.Spec.Job.Parallelism = 7
	forged.Status.Message = "written through the status subresource"
	if err := h.k8s.Status().Update(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if got := h.get(); got.Spec.Job.Parallelism != 0 || got.Status.Message != forged.Status.Message || got.Generation != 1 {
		t.Errorf("after a status update: parallelism %d, message %q, generation %d", got.Spec.Job.Parallelism, got.Status.Message, got.Generation)
	}

	// A spec change bumps the generation, which the next status records.
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	if got := h.get(); got.Generation != 2 {
		t.Fatalf("generation after a spec change: %d", got.Generation)
	}
	if job := h.running("update"); job.Status.ObservedGeneration != 2 || job.Status.JobID == stored {
		t.Errorf("after the update: observed generation %d, job %s", job.Status.ObservedGeneration, job.Status.JobID)
	}
}

// TestAPIServerConflictLosesNoProgress: status updates that lose a
// resource-version conflict on the API server throughout a create and an
// upgrade lose no progress: the next reconcile resumes from the stored
// status, and the upgrade takes one savepoint and submits one job.
func TestAPIServerConflictLosesNoProgress(t *testing.T) {
	h := newKubeHarness(t)
	h.status.conflictEvery, h.status.other = 2, h.k8s
	h.create(h.spec())
	first := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second)
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	job := h.running("update")
	st := job.Status

	h.status.mu.Lock()
	conflicts, updates := h.status.conflicts, h.status.updates
	h.status.mu.Unlock()
	if conflicts < 3 {
		t.Fatalf("%d conflicts, want several", conflicts)
	}
	if st.JobID == first || st.Action != lifecycle.ActionUpgrade || st.Progress.Outcome != lifecycle.OutcomeSucceeded {
		t.Fatalf("status after the update: %s", h.statusJSON())
	}
	if ids := h.triggerIDs(); len(ids) != 1 {
		t.Errorf("trigger ids %v, want one", ids)
	}
	// A jar run whose status update was lost is sent again, with the job
	// id the status held before it: the same job, never a second one.
	runs := h.count("POST /jars/:jarid/run")
	if ids := jarRunJobIDs(t, h.srv); len(ids) != 2 || len(h.srv.Jobs()) != 2 {
		t.Errorf("jar runs for jobs %v, %d jobs on the server; want 2 (the create and the upgrade)", ids, len(h.srv.Jobs()))
	}
	if live := h.live(); len(live) != 1 || live[0].ID != st.JobID || live[0].RestoredFrom != st.Latest.Location {
		t.Errorf("live jobs %+v, want %s restored from %s", live, st.JobID, st.Latest.Location)
	}
	t.Logf("%d of %d status updates lost a conflict; %d jar run requests", conflicts, updates, runs)
}

// TestAPIServerDeleteDuringUpgrade: a FlinkJob deleted while its upgrade's
// savepoint is in flight keeps its finalizer until the upgrade has
// finished, then its new job is torn down with a final savepoint, which
// is recorded, and only then does the FlinkJob go.
func TestAPIServerDeleteDuringUpgrade(t *testing.T) {
	ctx := context.Background()
	h := newKubeHarness(t, flinktest.WithSavepointDuration(5*time.Second))
	h.create(h.spec())
	first := h.running("create").Status.JobID
	h.srv.Clock().Advance(10 * time.Second)
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "v2") })
	h.until("savepoint in flight", func(j *v1alpha1.FlinkJob) bool {
		p := &j.Status.Progress
		return j.Status.Action == lifecycle.ActionUpgrade && p.Savepoint.Status.TriggerID != "" && !p.Done()
	}, nil)
	if err := h.k8s.Delete(ctx, h.get()); err != nil {
		t.Fatal(err)
	}
	var upgraded flinkapi.JobID
	h.until("deleted", func(j *v1alpha1.FlinkJob) bool { return j == nil }, func(j *v1alpha1.FlinkJob) {
		if j == nil {
			return
		}
		if !controllerutil.ContainsFinalizer(j, Finalizer) {
			t.Fatalf("the finalizer went, the FlinkJob stays: %s", h.statusJSON())
		}
		if j.Status.Action == lifecycle.ActionUpgrade && j.Status.Progress.Outcome == lifecycle.OutcomeSucceeded {
			upgraded = j.Status.JobID
		}
	})
	if upgraded == "" || upgraded == first {
		t.Fatalf("the upgrade did not finish before the teardown (job %q)\nevents:\n%s", upgraded, h.events)
	}
	last, _, _ := h.status.stored()
	final := last.Status.Progress
	if last.Status.Action != lifecycle.ActionTeardown || final.Outcome != lifecycle.OutcomeSucceeded || final.Savepoint.Location == "" {
		t.Fatalf("teardown %+v", final)
	}
	if info, _ := h.srv.Job(upgraded); info.State != flinkapi.JobFinished {
		t.Errorf("upgraded job %s is %s, want FINISHED", upgraded, info.State)
	}
	if live := h.live(); len(live) != 0 {
		t.Errorf("jobs still running: %+v", live)
	}
	if ok, err := h.srv.SavepointExists(final.Savepoint.Location); !ok || err != nil {
		t.Errorf("final savepoint %s: %v, %v", final.Savepoint.Location, ok, err)
	}
	if rec, ok, err := h.store.Get(ctx, h.key.String()); err != nil || !ok || rec.Location != final.Savepoint.Location {
		t.Errorf("restore point %+v, %v, %v; want %s", rec, ok, err, final.Savepoint.Location)
	}
	// One savepoint of the first job, the upgrade's; the teardown's of the
	// upgraded job only (a stop of a job whose tasks are not all running
	// yet fails, and the teardown tries again with a new trigger id).
	perJob := map[string]int{}
	for _, r := range h.srv.Requests() {
		if r.Route == "POST /jobs/:jobid/stop" || r.Route == "POST /jobs/:jobid/savepoints" {
			perJob[strings.Split(r.Path, "/")[2]]++
		}
	}
	if len(perJob) != 2 || perJob[string(first)] != 1 || perJob[string(upgraded)] < 1 {
		t.Errorf("savepoint and stop requests by job %v; want one of %s, some of %s", perJob, first, upgraded)
	}
	events := strings.Split(h.events.String(), "\n")
	up := slices.IndexFunc(events, func(e string) bool { return strings.HasPrefix(e, "Normal UpgradeSucceeded") })
	down := slices.IndexFunc(events, func(e string) bool { return strings.HasPrefix(e, "Normal TeardownSucceeded") })
	if up < 0 || down < up {
		t.Errorf("want UpgradeSucceeded, then TeardownSucceeded:\n%s", h.events)
	}
}

// TestAPIServerFinalizerDeadline: a FlinkJob deleted while no savepoint of
// its job can complete, with spec.allowCancelWithoutState, goes once the
// teardown's savepoint deadline has passed and the job is cancelled (as
// the spec consents): its finalizer does not hang, and the events say the
// job was cancelled.
func TestAPIServerFinalizerDeadline(t *testing.T) {
	ctx := context.Background()
	h := newKubeHarness(t, flinktest.WithSavepointDuration(24*time.Hour))
	h.r.Timing.Savepoint, h.r.Timing.Stop, h.r.Timing.Poll = 2*time.Minute, time.Minute, 5*time.Second
	spec := h.spec()
	spec.AllowCancelWithoutState = true
	spec.Update.SavepointDeadline = policy.Duration(h.r.Timing.Savepoint)
	h.create(spec)
	jobID := h.running("create").Status.JobID
	if err := h.k8s.Delete(ctx, h.get()); err != nil {
		t.Fatal(err)
	}
	start := h.srv.Clock().Now()
	h.until("deleted", func(j *v1alpha1.FlinkJob) bool { return j == nil }, nil)
	took := h.srv.Clock().Now().Sub(start)
	// The savepoint deadline, then the cancel and its confirmation, each
	// within a poll or a retry.
	bound := h.r.Timing.Savepoint + h.r.Timing.Stop + h.r.RetryInterval
	if took < h.r.Timing.Savepoint || took > bound {
		t.Errorf("the FlinkJob went %v after its deletion; want after the savepoint deadline (%v), within %v", took, h.r.Timing.Savepoint, bound)
	}
	if info, _ := h.srv.Job(jobID); info.State != flinkapi.JobCanceled {
		t.Errorf("job %s is %s, want CANCELED", jobID, info.State)
	}
	if !h.events.has("Normal TeardownCancel") || !h.events.has("Normal TeardownSucceeded: Teardown Succeeded: the job is cancelled") {
		t.Errorf("no events of the cancel without state:\n%s", h.events)
	}
	t.Logf("deleted after %v\nevents:\n%s", took, h.events)
}
