package v1alpha1

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sample() *FlinkJob {
	rec := savepoint.Record{Location: "file:/savepoints/sp-1", Time: at, Reason: savepoint.ReasonUpdate, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	job := lifecycle.JobTemplate{JarFile: "/jars/job.jar", Args: []string{"--out", "/out"}, Parallelism: 2, FlinkConfiguration: map[string]string{"a": "b"}}
	var health policy.HealthHistory
	health.Add(rec.JobID, at, policy.HealthSample{Time: at, State: flinkapi.JobRunning, StateSince: at, Restarts: 0, LatestCheckpoint: at}, policy.HealthPolicy{})
	return &FlinkJob{
		ObjectMeta: metav1.ObjectMeta{Name: "counter", Namespace: "streaming", Generation: 2, Finalizers: []string{"flinkkit.dev/teardown"}},
		Spec: FlinkJobSpec{JobSpec: lifecycle.JobSpec{
			Job:        job,
			Update:     policy.UpdatePolicy{Mode: policy.UpgradeLastState, MaxStateAge: policy.Duration(time.Hour)},
			Restart:    policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(30 * time.Second)},
			Savepoints: lifecycle.SavepointPolicy{Interval: policy.Duration(time.Hour), MaxCount: 3},
			Rollback:   lifecycle.RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)},
		}},
		Status: FlinkJobStatus{
			ObservedGeneration: 2,
			JobStatus: lifecycle.JobStatus{
				FormatVersion: lifecycle.FormatVersion, JobID: rec.JobID, JobState: flinkapi.JobRunning,
				State: policy.Updating, Reason: "UpgradeInProgress", Message: "Upgrade: phase Savepoint",
				Deployed: job, DeployedAt: at, Stable: job, Action: lifecycle.ActionUpgrade, Target: job,
				Progress: lifecycle.Progress{
					Phase: lifecycle.PhaseSavepoint, JobID: rec.JobID, Started: at, Deadline: at.Add(time.Minute),
					Savepoint: lifecycle.SavepointProgress{Status: savepoint.Status{TriggerID: "0123456789abcdef0123456789abcdef", TriggerTime: at, State: savepoint.InFlight}},
					Replace: lifecycle.ReplaceProgress{PreviousJobID: rec.JobID,
						Observed: lifecycle.Observed{State: flinkapi.JobRunning, Since: at, Latest: rec}},
				},
				RetryAt: at.Add(time.Hour), Latest: rec, Savepoints: savepoint.History{}.Add(rec), UpgradeFrom: rec,
				Restarts: 1, LastRestart: at, Health: health,
			},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "UpgradeInProgress", LastTransitionTime: metav1.Time{Time: at}}},
		},
	}
}

// TestStatusRoundTrip: everything the reconciler stores survives the
// JSON the API server keeps, and the unstructured form of dynamic
// clients: the embedded JobStatus, times included, and the operator's
// own fields beside it.
func TestStatusRoundTrip(t *testing.T) {
	in := sample()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out FlinkJob
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Spec, out.Spec) {
		t.Errorf("spec after JSON:\n%+v\nwant\n%+v", out.Spec, in.Spec)
	}
	if !reflect.DeepEqual(in.Status.JobStatus, out.Status.JobStatus) || out.Status.ObservedGeneration != 2 {
		t.Errorf("status after JSON:\n%+v\nwant\n%+v", out.Status, in.Status)
	}
	// metav1.Time (the conditions') keeps seconds and loses the location:
	// compare in JSON.
	if again, _ := json.Marshal(out); string(again) != string(b) {
		t.Errorf("JSON changed on a round trip:\n%s\n%s", again, b)
	}
	for _, name := range []string{`"observedGeneration":2`, `"conditions":[`, `"jobID":"a1b2`, `"progress":{`, `"job":{"jarFile"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("JSON without %s: %s", name, b)
		}
	}

	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	var back FlinkJob
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(b) {
		t.Errorf("unstructured round trip changed the JSON:\n%s\n%s", again, b)
	}
}

// TestDeepCopy: the generated deep copy shares nothing with the original.
func TestDeepCopy(t *testing.T) {
	in := sample()
	out := in.DeepCopy()
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("copy differs:\n%+v\n%+v", out, in)
	}
	out.Spec.Job.Args[0] = "changed"
	out.Spec.Job.FlinkConfiguration["a"] = "changed"
	out.Status.Deployed.Args[0] = "changed"
	out.Status.Target.FlinkConfiguration["a"] = "changed"
	out.Status.Savepoints.Records[0].Location = "changed"
	out.Status.Health.Samples[0].Restarts = 7
	out.Status.Conditions[0].Reason = "changed"
	out.Finalizers[0] = "changed"
	if !reflect.DeepEqual(in, sample()) {
		t.Errorf("changing the copy changed the original: %+v", in)
	}
	list := &FlinkJobList{Items: []FlinkJob{*in}}
	if c := list.DeepCopyObject().(*FlinkJobList); !reflect.DeepEqual(c, list) || &c.Items[0] == &list.Items[0] {
		t.Errorf("list copy %+v", c)
	}
}

// TestStatusWithLegacySavepoints: a status written by an operator built on
// a flinkkit before format versions, whose savepoints are a bare list,
// still decodes: its savepoint history and job id are kept (the fields
// that no longer exist are dropped), and a newer format, of the history or
// of the status, is refused rather than dropped.
func TestStatusWithLegacySavepoints(t *testing.T) {
	legacy := `{"status":{"observedGeneration":3,"deployedGeneration":3,"jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90","deploymentState":"Running",` +
		`"operation":"Update","latestSavepoint":{"location":"file:/savepoints/sp-1","time":"2026-03-01T12:00:00Z"},` +
		`"savepoints":[{"location":"file:/savepoints/sp-1","time":"2026-03-01T12:00:00Z","reason":"Update","jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90"}],` +
		`"conditions":[{"type":"Ready","status":"True","reason":"Running","message":"","lastTransitionTime":"2026-03-01T12:00:00Z"}]}}`
	var job FlinkJob
	if err := json.Unmarshal([]byte(legacy), &job); err != nil {
		t.Fatal(err)
	}
	st := job.Status
	if want := sample().Status.Savepoints.Records; !reflect.DeepEqual(st.Savepoints.Records, want) {
		t.Errorf("savepoints %+v, want %+v", st.Savepoints.Records, want)
	}
	if st.ObservedGeneration != 3 || st.JobID != "a1b2c3d4e5f60718293a4b5c6d7e8f90" || len(st.Conditions) != 1 || st.InFlight() {
		t.Errorf("status %+v", st)
	}
	// A JobStatus that holds a savepoint history or a health history of a
	// newer format decodes whole, and so does one of a newer format (the
	// controller refuses them before acting, and the reconciler never
	// writes them back).
	var histories FlinkJob
	if err := json.Unmarshal([]byte(`{"status":{"savepoints":{"formatVersion":99,"records":[{"x":1}]},"health":{"formatVersion":99},"observedGeneration":3}}`),
		&histories); err != nil || histories.Status.ObservedGeneration != 3 || !errors.Is(histories.Status.Savepoints.CheckFormat(), savepoint.ErrUnknownFormat) ||
		!errors.Is(histories.Status.Health.CheckFormat(), savepoint.ErrUnknownFormat) {
		t.Errorf("histories of format 99: %v, %+v", err, histories.Status)
	}
	var newer FlinkJob
	if err := json.Unmarshal([]byte(`{"status":{"formatVersion":99,"observedGeneration":3}}`), &newer); err != nil ||
		newer.Status.FormatVersion != 99 || newer.Status.ObservedGeneration != 3 {
		t.Errorf("a status of format 99: %v, %+v", err, newer.Status)
	}
}
