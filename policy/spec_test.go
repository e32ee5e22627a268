package policy

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/plaincheck"
	"github.com/google/go-cmp/cmp"
)

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    Duration
		wantErr string
	}{
		{`"90s"`, Duration(90 * time.Second), ""},
		{`"1h30m"`, Duration(90 * time.Minute), ""},
		{`"250ms"`, Duration(250 * time.Millisecond), ""},
		{`"0s"`, 0, ""},
		{` "5m" `, Duration(5 * time.Minute), ""},
		{`"\u0035s"`, Duration(5 * time.Second), ""},
		{`90`, 0, "must be a JSON string"},
		{`1.5e9`, 0, "must be a JSON string"},
		{`true`, 0, "must be a JSON string"},
		{`{}`, 0, "must be a JSON string"},
		{`"90"`, 0, `duration "90": want a number with a unit`},
		{`"soon"`, 0, `duration "soon"`},
		{`""`, 0, `duration ""`},
		{`"90s`, 0, "policy: duration:"},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalJSON([]byte(tt.in))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("UnmarshalJSON(%s): %v", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("UnmarshalJSON(%s) = %v, want an error containing %q", tt.in, err, tt.wantErr)
		case d != tt.want:
			t.Errorf("UnmarshalJSON(%s) = %v, want %v", tt.in, d, tt.want)
		}
	}

	// null leaves the value alone.
	d := Duration(time.Minute)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d != Duration(time.Minute) {
		t.Errorf("null: %v, %v", d, err)
	}
	// The number error says what to write instead.
	err := json.Unmarshal([]byte(`{"maxStateAge": 3600}`), &UpdatePolicy{})
	if err == nil || !errors.Is(err, errDurationNotString) || !strings.Contains(err.Error(), `"90s"`) {
		t.Errorf("number: %v", err)
	}
}

func TestPolicyJSON(t *testing.T) {
	p := UpdatePolicy{
		Mode: UpgradeLastState, MaxStateAge: Duration(6 * time.Hour), AllowNonRestoredState: true,
		FallbackToLastState: true, SavepointDeadline: Duration(90 * time.Second), SavepointAttempts: 3,
		TransitionTimeout: Duration(2 * time.Minute), AllowStartWithoutState: true,
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"mode":"LastState","maxStateAge":"6h0m0s","allowNonRestoredState":true,"fallbackToLastState":true,` +
		`"savepointDeadline":"1m30s","savepointAttempts":3,"transitionTimeout":"2m0s","allowStartWithoutState":true}`
	if string(b) != want {
		t.Errorf("Marshal:\n got %s\nwant %s", b, want)
	}
	var back UpdatePolicy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	// Unset fields are omitted.
	for _, v := range []any{UpdatePolicy{}, RestartPolicy{}, Recorded{}} {
		if b, _ := json.Marshal(v); string(b) != "{}" {
			t.Errorf("zero %T marshals as %s", v, b)
		}
	}
	r := RestartPolicy{Mode: RestartFromLatestState, MaxRestarts: 5, Window: Duration(time.Hour), Backoff: Duration(10 * time.Second), MaxStateAge: Duration(time.Hour)}
	b, _ = json.Marshal(r)
	if want := `{"mode":"FromLatestState","maxRestarts":5,"window":"1h0m0s","backoff":"10s","maxStateAge":"1h0m0s"}`; string(b) != want {
		t.Errorf("Marshal:\n got %s\nwant %s", b, want)
	}
}

func TestDefaults(t *testing.T) {
	got := UpdatePolicy{}.WithDefaults()
	want := UpdatePolicy{Mode: UpgradeSavepoint, MaxStateAge: Duration(24 * time.Hour), SavepointDeadline: Duration(10 * time.Minute),
		SavepointAttempts: 2, TransitionTimeout: Duration(5 * time.Minute)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UpdatePolicy defaults (-want +got):\n%s", diff)
	}
	set := UpdatePolicy{Mode: UpgradeStateless, MaxStateAge: 1, SavepointDeadline: 2, SavepointAttempts: 3, TransitionTimeout: 4}
	if diff := cmp.Diff(set, set.WithDefaults()); diff != "" {
		t.Errorf("WithDefaults changed set fields:\n%s", diff)
	}
	gotR := RestartPolicy{}.WithDefaults()
	wantR := RestartPolicy{Mode: RestartNever, MaxRestarts: 3, Window: Duration(time.Hour), Backoff: Duration(30 * time.Second),
		MaxStateAge: Duration(24 * time.Hour), TransitionTimeout: Duration(5 * time.Minute)}
	if diff := cmp.Diff(wantR, gotR); diff != "" {
		t.Errorf("RestartPolicy defaults (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		fields []string
	}{
		{"zero update policy", UpdatePolicy{}.Validate(), nil},
		{"zero restart policy", RestartPolicy{}.Validate(), nil},
		{"unknown mode", UpdatePolicy{Mode: "Savepoints"}.Validate(), []string{"mode"}},
		{"negative durations", UpdatePolicy{MaxStateAge: -1, SavepointDeadline: -1, TransitionTimeout: -1}.Validate(),
			[]string{"maxStateAge", "savepointDeadline", "transitionTimeout"}},
		{"negative attempts", UpdatePolicy{SavepointAttempts: -2}.Validate(), []string{"savepointAttempts"}},
		{"restart mode", RestartPolicy{Mode: "OnFailure"}.Validate(), []string{"mode"}},
		{"restart numbers", RestartPolicy{MaxRestarts: -1, Window: -1, Backoff: -1, MaxStateAge: -1, TransitionTimeout: -1}.Validate(),
			[]string{"maxRestarts", "window", "backoff", "maxStateAge", "transitionTimeout"}},
	}
	for _, tt := range tests {
		var got []string
		for _, e := range unwrapAll(tt.err) {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Errorf("%s: %v is not a *FieldError", tt.name, e)
				continue
			}
			got = append(got, fe.Field)
			if !strings.HasPrefix(e.Error(), "policy: "+fe.Field+" ") {
				t.Errorf("%s: message %q does not name the field first", tt.name, e)
			}
		}
		if diff := cmp.Diff(tt.fields, got); diff != "" {
			t.Errorf("%s: fields (-want +got):\n%s", tt.name, diff)
		}
	}
	if err := (UpdatePolicy{Mode: "x"}).Validate(); err == nil || !strings.Contains(err.Error(), `mode "x": unknown upgrade mode; want Stateless, Savepoint or LastState`) {
		t.Errorf("message: %v", err)
	}
}

func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestDeepCopy checks that the hand-written deep copies stay deep: the
// types hold no pointers, slices or maps other than Observations.Job, and
// copying Observations does not share the Job.
func TestDeepCopy(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Observations](), reflect.TypeFor[Job](), reflect.TypeFor[Checkpoint](),
		reflect.TypeFor[RestorePoint](), reflect.TypeFor[Decision](), reflect.TypeFor[Details](),
		reflect.TypeFor[UpdatePolicy](), reflect.TypeFor[RestartPolicy](), reflect.TypeFor[Recorded](),
	} {
		for _, p := range plaincheck.Problems(typ.Name(), typ, "Observations.Job", "Observations.LatestSavepoint.RecordExtra") {
			t.Error(p)
		}
	}

	obs := withCheckpoint(observe("RUNNING"), time.Minute)
	c := obs.DeepCopy()
	if diff := cmp.Diff(obs, *c); diff != "" {
		t.Errorf("copy differs:\n%s", diff)
	}
	c.Job.State = "FAILED"
	if obs.Job.State != "RUNNING" {
		t.Error("DeepCopy shares the Job")
	}
	d := EvaluateUpdate(UpdatePolicy{Mode: UpgradeLastState}, obs, now)
	for _, pair := range [][2]any{
		{&d, d.DeepCopy()}, {&d.Details, d.Details.DeepCopy()}, {&d.RestorePoint, d.RestorePoint.DeepCopy()},
		{obs.Job, obs.Job.DeepCopy()}, {&obs.LatestCheckpoint, obs.LatestCheckpoint.DeepCopy()},
		{&UpdatePolicy{Mode: UpgradeStateless}, (&UpdatePolicy{Mode: UpgradeStateless}).DeepCopy()},
		{&RestartPolicy{MaxRestarts: 2}, (&RestartPolicy{MaxRestarts: 2}).DeepCopy()},
		{&Recorded{JobID: jobID}, (&Recorded{JobID: jobID}).DeepCopy()},
	} {
		if diff := cmp.Diff(pair[0], pair[1]); diff != "" {
			t.Errorf("DeepCopy of %T differs:\n%s", pair[0], diff)
		}
	}
	if (*Observations)(nil).DeepCopy() != nil || (*UpdatePolicy)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}

func TestFmtDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{400 * time.Millisecond, "400ms"},
		{45 * time.Second, "45s"},
		{8 * time.Minute, "8m"},
		{150 * time.Second, "2m30s"},
		{26 * time.Hour, "26h"},
		{90*time.Minute + 29*time.Second, "1h30m"},
		{90*time.Minute + 31*time.Second, "1h31m"},
		{-5 * time.Second, "-5s"},
		{time.Duration(-1 << 63), "-2562047h47m"},
	}
	for _, tt := range tests {
		if got := fmtDur(tt.d); got != tt.want {
			t.Errorf("fmtDur(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestEveryReasonHasAMessage builds a decision for every reason constant
// and checks that Message explains it in one line.
func TestEveryReasonHasAMessage(t *testing.T) {
	reasons := []Reason{
		ReasonInvalidPolicy, ReasonUpToDate, ReasonJobManagerUnreachable, ReasonJobManagerUnreachableTimeout,
		ReasonJobTransitioning, ReasonJobStuck, ReasonSavepointInProgress, ReasonSavepointLost,
		ReasonSavepointBeforeUpdate, ReasonSavepointRetry, ReasonSavepointFallback, ReasonSavepointFailed,
		ReasonSavepointTimedOut, ReasonNoRecentState, ReasonNoRecentSavepoint, ReasonRestoreFromState,
		ReasonStatelessUpgrade, ReasonStartWithoutState, ReasonFirstDeploy, ReasonJobRunning, ReasonJobFinished,
		ReasonJobCancelled, ReasonRestartDisabled, ReasonRestartBudgetExhausted, ReasonRestartBackoff,
		ReasonRestartFailedJob, ReasonRestartLostJob, ReasonRestartCancelledJob,
	}
	generic := Decision{Action: "X", Reason: "Y"}.Message()
	for _, r := range reasons {
		for _, a := range []Action{ActionBlock, ActionCancelFirst, ActionProceed, ActionStopWithSavepoint, ActionWait} {
			d := Decision{Action: a, Reason: r, Deadline: now.Add(time.Minute),
				Details: Details{Now: now, MaxStateAge: time.Hour, Since: ago(time.Minute), Limit: time.Minute, Count: 1, Max: 2}}
			msg := d.Message()
			if msg == "" || msg == generic || strings.ContainsAny(msg, "\n\r") || strings.Contains(msg, "%!") {
				t.Errorf("%s/%s: message %q", a, r, msg)
			}
			if strings.HasPrefix(msg, string(a)+": ") {
				t.Errorf("%s/%s: no specific message: %q", a, r, msg)
			}
		}
	}
}
