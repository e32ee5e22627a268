package v1alpha1

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

func sample() *FlinkJob {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := savepoint.Record{Location: "file:/savepoints/sp-1", Time: at, Reason: savepoint.ReasonUpdate, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	return &FlinkJob{
		ObjectMeta: metav1.ObjectMeta{Name: "counter", Namespace: "streaming", Generation: 2, Finalizers: []string{"flinkkit.dev/teardown"}},
		Spec: FlinkJobSpec{
			JarFile: "/jars/job.jar", Args: []string{"--out", "/out"}, Parallelism: 2,
			FlinkConfiguration: map[string]string{"a": "b"},
			Update:             policy.UpdatePolicy{Mode: policy.UpgradeLastState, MaxStateAge: policy.Duration(time.Hour)},
			Restart:            policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(30 * time.Second)},
			SavepointInterval:  policy.Duration(time.Hour),
		},
		Status: FlinkJobStatus{
			ObservedGeneration: 2, DeployedGeneration: 1, JobID: rec.JobID, JobState: flinkapi.JobRunning,
			Operation: OperationUpdate, OperationGeneration: 2,
			Progress: lifecycle.Progress{
				Phase: lifecycle.PhaseSavepoint, JobID: rec.JobID, PreviousJobID: rec.JobID, Started: at, Deadline: at.Add(time.Minute),
				Savepoint: savepoint.Status{TriggerID: "0123456789abcdef0123456789abcdef", TriggerTime: at, State: savepoint.InFlight},
				Observed:  lifecycle.Observed{State: flinkapi.JobRunning, Since: at, Latest: rec},
			},
			RetryAt:         &metav1.Time{Time: at.Add(time.Hour)},
			LatestSavepoint: rec, Savepoints: savepoint.History{}.Add(rec),
			Restarts: 1, LastRestart: &metav1.Time{Time: at},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Running", LastTransitionTime: metav1.Time{Time: at}}},
		},
	}
}

// TestStatusRoundTrip: everything the reconciler stores survives the
// JSON the API server keeps, times included.
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
	// metav1.Time keeps seconds and loses the location; compare in JSON.
	again, _ := json.Marshal(out)
	if string(again) != string(b) {
		t.Errorf("JSON changed on a round trip:\n%s\n%s", again, b)
	}
	if !out.Status.Progress.Started.Equal(in.Status.Progress.Started) || out.Status.Progress.Savepoint.TriggerID != in.Status.Progress.Savepoint.TriggerID {
		t.Errorf("progress after JSON: %+v", out.Status.Progress)
	}
}

// TestDeepCopy: the generated deep copy shares nothing with the original.
func TestDeepCopy(t *testing.T) {
	in := sample()
	out := in.DeepCopy()
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("copy differs:\n%+v\n%+v", out, in)
	}
	out.Spec.Args[0] = "changed"
	out.Spec.FlinkConfiguration["a"] = "changed"
	out.Status.Savepoints.Records[0].Location = "changed"
	out.Status.RetryAt.Time = time.Time{}
	out.Status.LastRestart.Time = time.Time{}
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

// TestInFlight: an operation is in flight from its start until its
// Progress is done.
func TestInFlight(t *testing.T) {
	var s FlinkJobStatus
	if s.InFlight() {
		t.Error("no operation, in flight")
	}
	s.Operation = OperationDeploy
	if !s.InFlight() {
		t.Error("started operation not in flight")
	}
	s.Progress.Phase, s.Progress.Outcome = lifecycle.PhaseDone, lifecycle.OutcomeSucceeded
	if s.InFlight() {
		t.Error("ended operation in flight")
	}
}

// TestStatusWithLegacySavepoints: a status written by an operator built on
// a flinkkit before format versions, whose savepoints are a bare list,
// still decodes, and a newer format is refused rather than dropped.
func TestStatusWithLegacySavepoints(t *testing.T) {
	legacy := `{"status":{"savepoints":[{"location":"file:/savepoints/sp-1","time":"2026-03-01T12:00:00Z","reason":"Update","jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90"}]}}`
	var job FlinkJob
	if err := json.Unmarshal([]byte(legacy), &job); err != nil {
		t.Fatal(err)
	}
	if want := sample().Status.Savepoints.Records; !reflect.DeepEqual(job.Status.Savepoints.Records, want) {
		t.Errorf("savepoints %+v, want %+v", job.Status.Savepoints.Records, want)
	}
	newer := `{"status":{"savepoints":{"formatVersion":99,"records":[]}}}`
	if err := json.Unmarshal([]byte(newer), &job); !errors.Is(err, savepoint.ErrUnknownFormat) {
		t.Errorf("status with savepoints of format version 99: %v", err)
	}
}
