package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/internal/testkit/formattest"
	"github.com/google/go-cmp/cmp"
)

// The values of the version 1 fixtures, every field set. Like the files,
// they are never changed: a new format gets a new fixture and a new value.
var (
	updatePolicyV1 = UpdatePolicy{
		FormatVersion: 1, Mode: UpgradeLastState, MaxStateAge: Duration(6 * time.Hour), AllowNonRestoredState: true,
		FallbackToLastState: true, SavepointDeadline: Duration(90 * time.Second), SavepointAttempts: 3,
		TransitionTimeout: Duration(2 * time.Minute), AllowStartWithoutState: true,
	}
	restartPolicyV1 = RestartPolicy{
		FormatVersion: 1, Mode: RestartFromLatestState, MaxRestarts: 5, Window: Duration(time.Hour), Backoff: Duration(10 * time.Second),
		MaxStateAge: Duration(12 * time.Hour), TransitionTimeout: Duration(3 * time.Minute),
	}
	healthPolicyV1 = HealthPolicy{
		FormatVersion: 1, Action: HealthRestartFromLatestState, MaxRestarts: 4, Window: Duration(15 * time.Minute),
		CheckpointWindow: Duration(20 * time.Minute), MaxSavepointFailures: 2, TransitionTimeout: Duration(4 * time.Minute),
		MaxStateAge: Duration(8 * time.Hour),
	}
	rescalePolicyV1  = RescalePolicy{FormatVersion: 1, InPlaceOnly: true}
	restoreRequestV1 = RestoreRequest{
		FormatVersion: 1, Path: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", Token: "rollback-2026-03-01",
		Time: time.Date(2026, 3, 1, 12, 0, 0, 500_000_000, time.UTC), CheckAge: true, AllowNonRestoredState: true, CancelWithoutSavepoint: true,
	}
	healthHistoryV1 = HealthHistory{
		FormatVersion: 1, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", Started: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC),
		CheckpointInterval: Duration(time.Minute), CheckpointTimeout: Duration(10 * time.Minute),
		Samples: []HealthSample{
			{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), State: flinkapi.JobRunning, StateSince: time.Date(2026, 3, 1, 11, 0, 30, 0, time.UTC),
				Restarts: 1, CompletedCheckpoints: 58, LatestCheckpoint: time.Date(2026, 3, 1, 11, 59, 40, 0, time.UTC), SavepointFailures: 1},
			{Time: time.Date(2026, 3, 1, 12, 0, 30, 250_000_000, time.UTC), State: flinkapi.JobRestarting, StateSince: time.Date(2026, 3, 1, 12, 0, 20, 0, time.UTC),
				Restarts: 2, CompletedCheckpoints: 59, LatestCheckpoint: time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC), SavepointFailures: 2},
		},
	}
)

// validating decodes a policy as a caller reads it from a spec: JSON, then
// Validate.
func validating[T interface{ Validate() error }](b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, err
	}
	return v, v.Validate()
}

func policyFormat[T interface{ Validate() error }](name, file string, want T) formattest.Type[T] {
	return formattest.Type[T]{
		Name: "policy." + name, Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: *update,
		Decode:   validating[T],
		Fixtures: []formattest.Fixture[T]{{File: file, Version: 1, Want: want}},
	}
}

// TestPolicyFormats decodes every stored form of each policy a release
// wrote for (testdata/golden; its README.md says why none is ever edited),
// checks that this release writes the newest one byte for byte, and that
// Validate refuses a policy of a newer format.
func TestPolicyFormats(t *testing.T) {
	if ErrUnknownFormat != format.ErrUnknown {
		t.Fatal("policy.ErrUnknownFormat is not the shared format.ErrUnknown")
	}
	t.Run("UpdatePolicy", func(t *testing.T) {
		formattest.Check(t, policyFormat("UpdatePolicy", "updatepolicy-v1.json", updatePolicyV1))
	})
	t.Run("RestartPolicy", func(t *testing.T) {
		formattest.Check(t, policyFormat("RestartPolicy", "restartpolicy-v1.json", restartPolicyV1))
	})
	t.Run("HealthPolicy", func(t *testing.T) {
		formattest.Check(t, policyFormat("HealthPolicy", "healthpolicy-v1.json", healthPolicyV1))
	})
	t.Run("RescalePolicy", func(t *testing.T) {
		formattest.Check(t, policyFormat("RescalePolicy", "rescalepolicy-v1.json", rescalePolicyV1))
	})
	t.Run("RestoreRequest", func(t *testing.T) {
		formattest.Check(t, policyFormat("RestoreRequest", "restorerequest-v1.json", restoreRequestV1))
	})
}

// TestHealthHistoryFormats does the same for HealthHistory, which is
// refused where it is used when its format is newer.
func TestHealthHistoryFormats(t *testing.T) {
	formattest.Check(t, formattest.Type[HealthHistory]{
		Name: "policy.HealthHistory", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: *update,
		Decode: func(b []byte) (HealthHistory, error) {
			var h HealthHistory
			if err := json.Unmarshal(b, &h); err != nil {
				return h, err
			}
			return h, h.CheckFormat()
		},
		Fixtures: []formattest.Fixture[HealthHistory]{{File: "healthhistory-v1.json", Version: 1, Want: healthHistoryV1}},
	})
}

// TestHealthHistoryDecode: null leaves a history alone; one of a newer
// format decodes to its version alone, also inside a struct, and
// EvaluateHealth refuses it naming the type and the version; Add sets the
// format version, for a new job too.
func TestHealthHistoryDecode(t *testing.T) {
	h := healthHistoryV1
	if err := json.Unmarshal([]byte(`null`), &h); err != nil || len(h.Samples) != 2 {
		t.Errorf("null: %+v, %v", h, err)
	}
	newer := `{"formatVersion":2,"jobID":"x","samples":{"a":[1]}}`
	if err := json.Unmarshal([]byte(newer), &h); err != nil || h.FormatVersion != 2 || h.JobID != "" || h.Samples != nil {
		t.Errorf("format version 2: %v, history %+v", err, h)
	}
	var st struct {
		Health HealthHistory `json:"health"`
		Name   string        `json:"name"`
	}
	if err := json.Unmarshal([]byte(`{"health":`+newer+`,"name":"n"}`), &st); err != nil || st.Name != "n" || st.Health.FormatVersion != 2 {
		t.Errorf("a newer history in a struct: %+v, %v", st, err)
	}
	d := EvaluateHealth(HealthPolicy{}, h, Observations{JobManagerReachable: true}, now)
	if d.Action != ActionBlock || d.Reason != ReasonInvalidPolicy || !strings.Contains(d.Details.Failure, "policy.HealthHistory: format version 2") {
		t.Errorf("EvaluateHealth of a newer history: %+v", d)
	}
	if err := json.Unmarshal([]byte(`{"jobID":"x"}`), &h); err != nil || h.FormatVersion != 0 || h.JobID != "x" || h.Samples != nil {
		t.Errorf("no format version: %+v, %v", h, err)
	}
	var fresh HealthHistory
	fresh.Add(jobID, time.Time{}, HealthSample{Time: now, State: flinkapi.JobRunning}, HealthPolicy{})
	if fresh.FormatVersion != FormatVersion {
		t.Errorf("Add left format version %d", fresh.FormatVersion)
	}
	old := HealthHistory{JobID: "other", Samples: []HealthSample{{Time: now}}}
	old.Add(jobID, time.Time{}, HealthSample{Time: now, State: flinkapi.JobRunning}, HealthPolicy{})
	if old.FormatVersion != FormatVersion || old.JobID != jobID {
		t.Errorf("Add of another job: %+v", old)
	}
}

// TestNewerFormatRefused: a policy or restore request of a format version
// this release does not know is never acted on: the decisions block as
// for any invalid policy, naming the type and the version.
func TestNewerFormatRefused(t *testing.T) {
	const v = FormatVersion + 1
	named := func(t *testing.T, msg, typ string) {
		t.Helper()
		if !strings.Contains(msg, "policy."+typ+": format version 2") {
			t.Errorf("message %q does not name %s and its version", msg, typ)
		}
	}
	running := withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), time.Hour), time.Minute)
	running.SpecChanged = true

	d := EvaluateUpdate(UpdatePolicy{FormatVersion: v, Mode: UpgradeStateless}, running, now)
	if d.Action != ActionBlock || d.Reason != ReasonInvalidPolicy {
		t.Errorf("EvaluateUpdate: %s %s", d.Action, d.Reason)
	}
	named(t, d.Message(), "UpdatePolicy")

	failed := withSavepoint(observe(flinkapi.JobFailed), time.Hour)
	d = EvaluateRestart(RestartPolicy{FormatVersion: v, Mode: RestartFromLatestState}, failed, now)
	if d.Action != ActionBlock || d.Reason != ReasonInvalidPolicy {
		t.Errorf("EvaluateRestart: %s %s", d.Action, d.Reason)
	}
	named(t, d.Message(), "RestartPolicy")

	hd := EvaluateHealth(HealthPolicy{FormatVersion: v}, sampled(flinkapi.JobRestarting, time.Hour, time.Minute, 3), running, now)
	if hd.Action != ActionBlock || hd.Problem != ReasonInvalidPolicy {
		t.Errorf("EvaluateHealth: %s %s", hd.Action, hd.Problem)
	}
	named(t, hd.Message(), "HealthPolicy")

	rd := DecideRescale(RescalePolicy{FormatVersion: v}, RescaleObservations{JobState: flinkapi.JobRunning}, 4)
	if rd.Path != RescaleBlocked || rd.Reason != ReasonInvalidPolicy {
		t.Errorf("DecideRescale: %s %s", rd.Path, rd.Reason)
	}
	named(t, rd.Message(), "RescalePolicy")
	if err := (RescalePolicy{FormatVersion: FormatVersion, InPlaceOnly: true}).Validate(); err != nil {
		t.Errorf("RescalePolicy of the current format: %v", err)
	}

	// A request of a newer format is pending and refused, even with no
	// field this release knows set: it may ask for what it cannot see.
	for _, req := range []RestoreRequest{{FormatVersion: v}, {FormatVersion: v, Path: "s3://b/sp", Token: "t"}} {
		if req.IsZero() || !req.Pending("an earlier token") {
			t.Errorf("%+v: IsZero %v, Pending %v", req, req.IsZero(), req.Pending("an earlier token"))
		}
		obs := running
		obs.Restore = req
		d := EvaluateUpdate(UpdatePolicy{}, obs, now)
		if d.Action != ActionBlock || d.Reason != ReasonInvalidRestoreRequest {
			t.Errorf("EvaluateUpdate with restore request %+v: %s %s", req, d.Action, d.Reason)
		}
		named(t, d.Message(), "RestoreRequest")
		if err := req.Validate(); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("Validate(%+v) = %v", req, err)
		}
	}
	// One of the current format that asks for nothing is zero.
	if r := (RestoreRequest{FormatVersion: FormatVersion}); !r.IsZero() || r.Pending("") || r.Validate() != nil {
		t.Errorf("empty request of format version %d: IsZero %v, Pending %v, Validate %v", FormatVersion, r.IsZero(), r.Pending(""), r.Validate())
	}

	// Validate reports the format alone, not the fields it may not know.
	err := UpdatePolicy{FormatVersion: v, Mode: "Future", SavepointAttempts: -1}.Validate()
	var fe *FieldError
	if !errors.Is(err, ErrUnknownFormat) || errors.As(err, &fe) {
		t.Errorf("UpdatePolicy.Validate of a newer format = %v", err)
	}
	for _, err := range []error{
		RestartPolicy{FormatVersion: -1}.Validate(), HealthPolicy{FormatVersion: -1}.Validate(),
		RescalePolicy{FormatVersion: -1}.Validate(), RestoreRequest{FormatVersion: -1}.Validate(),
	} {
		if !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("negative format version: %v", err)
		}
	}
}

// TestPolicyInAnonymousField: the policies have no UnmarshalJSON, so a
// user's struct that embeds one anonymously decodes all of its fields.
func TestPolicyInAnonymousField(t *testing.T) {
	var spec struct {
		UpdatePolicy
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(`{"formatVersion":1,"mode":"Stateless","name":"job"}`), &spec); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(UpdatePolicy{FormatVersion: 1, Mode: UpgradeStateless}, spec.UpdatePolicy); diff != "" || spec.Name != "job" {
		t.Errorf("embedded policy (-want +got):\n%s\nname %q", diff, spec.Name)
	}
}
