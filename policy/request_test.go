package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
	"github.com/google/go-cmp/cmp"
)

const requestedPath = "s3://old/savepoint-yesterday"

func withRequest(o Observations, r RestoreRequest) Observations {
	o.Restore = r
	return o
}

func request(age time.Duration) RestoreRequest {
	r := RestoreRequest{Path: requestedPath, Token: "t1"}
	if age >= 0 {
		r.Time = ago(age)
	}
	return r
}

func TestEvaluateUpdateRestoreRequest(t *testing.T) {
	savepointMode := UpdatePolicy{Mode: UpgradeSavepoint, MaxStateAge: Duration(24 * time.Hour)}
	lastState := UpdatePolicy{Mode: UpgradeLastState}
	stateless := UpdatePolicy{Mode: UpgradeStateless}
	poll := defaultPollInterval
	requested := sp(requestedPath, ago(2*time.Hour))
	unknownAge := RestorePoint{Kind: KindSavepoint, Path: requestedPath}
	stopDeadline := now.Add(defaultSavepointDeadline.Std())
	unchanged := func(o Observations) Observations { o.SpecChanged = false; return o }
	checked := func(r RestoreRequest) RestoreRequest { r.CheckAge = true; return r }
	cancelling := func(r RestoreRequest) RestoreRequest { r.CancelWithoutSavepoint = true; return r }
	failed := func(o Observations, attempts int) Observations {
		o.Savepoint = savepoint.Status{State: savepoint.Failed, TriggerTime: ago(3 * time.Minute), Failure: "java.io.IOException: disk full"}
		o.SavepointAttempts = attempts
		return o
	}
	saved := func(o Observations) Observations {
		o.Savepoint = savepoint.Status{State: savepoint.Succeeded, Location: "s3://sp/now", TriggerTime: ago(time.Minute)}
		o.SavepointAttempts = 1
		return o
	}

	tests := []struct {
		name        string
		p           UpdatePolicy
		obs         Observations
		want        decisionCore
		warning     Reason
		notRequest  bool
		messageHave []string
	}{
		{
			name: "running job: savepoint first, though the spec is unchanged",
			p:    savepointMode,
			obs:  unchanged(withRequest(withSavepoint(observe(flinkapi.JobRunning), time.Hour), request(2*time.Hour))),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointBeforeRestore, Deadline: stopDeadline, RequeueAfter: poll},
		},
		{
			name: "running job in LastState mode: savepoint first as well",
			p:    lastState,
			obs:  withRequest(withCheckpoint(observe(flinkapi.JobRunning), time.Minute), request(2*time.Hour)),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointBeforeRestore, Deadline: stopDeadline, RequeueAfter: poll},
		},
		{
			name: "stopped with its savepoint: the request wins over the newer savepoint",
			p:    savepointMode,
			obs:  saved(withRequest(observe(flinkapi.JobFinished), request(2*time.Hour))),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "running job whose state is saved: cancel, then restore",
			p:    savepointMode,
			obs:  saved(withRequest(observe(flinkapi.JobRunning), request(2*time.Hour))),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name:        "failed job: restore from the request, not from the newest savepoint",
			p:           savepointMode,
			obs:         withRequest(withSavepoint(observe(flinkapi.JobFailed), time.Minute), request(2*time.Hour)),
			want:        decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
			messageHave: []string{"restore requested", requestedPath, "2h old"},
		},
		{
			name: "missing job: restore from the request",
			p:    savepointMode,
			obs:  withRequest(observe(""), request(2*time.Hour)),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "first deploy bootstraps from the request while no JobManager answers",
			p:    savepointMode,
			obs: func() Observations {
				o := withRequest(observe(""), request(-1))
				o.FirstDeploy, o.JobManagerReachable = true, false
				return o
			}(),
			want:        decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: unknownAge, RequeueAfter: poll},
			messageHave: []string{"age unknown"},
		},
		{
			name:        "older than the limit, unchecked: goes ahead with a warning",
			p:           savepointMode,
			obs:         withRequest(observe(flinkapi.JobCanceled), request(72*time.Hour)),
			want:        decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: sp(requestedPath, ago(72*time.Hour)), RequeueAfter: poll},
			warning:     WarningStateOlderThanMaxAge,
			messageHave: []string{"72h old", "warning: older than the limit of 24h"},
		},
		{
			name:        "older than the limit, checked: blocks",
			p:           savepointMode,
			obs:         withRequest(observe(flinkapi.JobCanceled), checked(request(72*time.Hour))),
			want:        decisionCore{Action: ActionBlock, Reason: ReasonRestoreRequestTooOld},
			messageHave: []string{"72h old", "limit of 24h"},
		},
		{
			name: "checked and young enough: goes ahead",
			p:    savepointMode,
			obs:  withRequest(observe(flinkapi.JobCanceled), checked(request(2*time.Hour))),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "checked without a time: blocks",
			p:    savepointMode,
			obs:  withRequest(observe(flinkapi.JobCanceled), checked(request(-1))),
			want: decisionCore{Action: ActionBlock, Reason: ReasonRestoreRequestAgeUnknown},
		},
		{
			name: "a handled token is not replayed: unchanged spec, nothing to do",
			p:    savepointMode,
			obs: func() Observations {
				o := unchanged(withRequest(observe(flinkapi.JobRunning), request(time.Hour)))
				o.RestoreHandled = "t1"
				return o
			}(),
			want:       decisionCore{Action: ActionNone, Reason: ReasonUpToDate},
			notRequest: true,
		},
		{
			name: "a handled token with a changed spec: the usual update",
			p:    savepointMode,
			obs: func() Observations {
				o := withRequest(observe(flinkapi.JobRunning), request(time.Hour))
				o.RestoreHandled = "t1"
				return o
			}(),
			want:       decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointBeforeUpdate, Deadline: stopDeadline, RequeueAfter: poll},
			notRequest: true,
		},
		{
			name: "a new token after a handled one is carried out",
			p:    savepointMode,
			obs: func() Observations {
				r := request(2 * time.Hour)
				r.Token = "t2"
				o := withRequest(observe(flinkapi.JobFailed), r)
				o.RestoreHandled = "t1"
				return o
			}(),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "cancel without savepoint when the request asks",
			p:    savepointMode,
			obs:  withRequest(observe(flinkapi.JobRunning), cancelling(request(2*time.Hour))),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "stateless policy cancels a running job",
			p:    stateless,
			obs:  withRequest(observe(flinkapi.JobRunning), request(2*time.Hour)),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "savepoint in flight: wait for it",
			p:    savepointMode,
			obs:  withRequest(withInFlight(observe(flinkapi.JobRunning), time.Minute, 4*time.Minute), request(2*time.Hour)),
			want: decisionCore{Action: ActionWait, Reason: ReasonSavepointInProgress, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint failed, attempts remain: retry",
			p:    savepointMode,
			obs:  failed(withRequest(observe(flinkapi.JobRunning), request(2*time.Hour)), 1),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointRetry, Deadline: stopDeadline, RequeueAfter: poll},
		},
		{
			name: "savepoint failed, no attempts left: the job keeps running",
			p:    savepointMode,
			obs:  failed(withRequest(observe(flinkapi.JobRunning), request(2*time.Hour)), 2),
			want: decisionCore{Action: ActionBlock, Reason: ReasonSavepointFailed},
		},
		{
			name: "savepoint failed, fallback allowed: cancel, then restore from the request",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, FallbackToLastState: true},
			obs:  failed(withRequest(observe(flinkapi.JobRunning), request(2*time.Hour)), 2),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreRequested, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "transitional job: wait",
			p:    savepointMode,
			obs:  withRequest(observe(flinkapi.JobRestarting), request(2*time.Hour)),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: ago(time.Minute).Add(DefaultTransitionTimeout.Std()), RequeueAfter: poll},
		},
		{
			name: "job stuck restarting: cancel, then restore from the request",
			p:    savepointMode,
			obs: func() Observations {
				o := withRequest(observe(flinkapi.JobRestarting), request(2*time.Hour))
				o.Job.StateSince = ago(time.Hour)
				return o
			}(),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonJobStuck, RestorePoint: requested, RequeueAfter: poll},
		},
		{
			name: "job stuck cancelling: block",
			p:    savepointMode,
			obs: func() Observations {
				o := withRequest(observe(flinkapi.JobCancelling), request(2*time.Hour))
				o.Job.StateSince = ago(time.Hour)
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonJobStuck, RequeueAfter: poll},
		},
		{
			name: "unreachable JobManager: wait as for an update",
			p:    savepointMode,
			obs: func() Observations {
				o := withRequest(observe(flinkapi.JobRunning), request(2*time.Hour))
				o.JobManagerReachable, o.LastContact = false, ago(time.Minute)
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobManagerUnreachable, Deadline: ago(time.Minute).Add(DefaultTransitionTimeout.Std()), RequeueAfter: poll},
		},
		{
			name:        "request without a token: invalid",
			p:           savepointMode,
			obs:         withRequest(observe(flinkapi.JobRunning), RestoreRequest{Path: requestedPath}),
			want:        decisionCore{Action: ActionBlock, Reason: ReasonInvalidRestoreRequest},
			messageHave: []string{"token"},
		},
		{
			name:        "request without a path: invalid",
			p:           savepointMode,
			obs:         withRequest(observe(flinkapi.JobRunning), RestoreRequest{Token: "t1"}),
			want:        decisionCore{Action: ActionBlock, Reason: ReasonInvalidRestoreRequest},
			messageHave: []string{"path"},
		},
		{
			name: "invalid policy blocks before the request",
			p:    UpdatePolicy{Mode: "Sometimes"},
			obs:  withRequest(observe(flinkapi.JobRunning), request(time.Hour)),
			want: decisionCore{Action: ActionBlock, Reason: ReasonInvalidPolicy},
			// The request was not looked at.
			notRequest: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := EvaluateUpdate(tc.p, tc.obs, now)
			if diff := cmp.Diff(tc.want, core(d)); diff != "" {
				t.Errorf("decision (-want +got):\n%s\nmessage: %s", diff, d.Message())
			}
			if d.Details.Warning != tc.warning {
				t.Errorf("warning %q, want %q", d.Details.Warning, tc.warning)
			}
			if d.Details.Requested == tc.notRequest {
				t.Errorf("Details.Requested = %v", d.Details.Requested)
			}
			msg := d.Message()
			for _, s := range tc.messageHave {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			if v := violations(true, tc.p, RestartPolicy{}, tc.obs, now, d); len(v) > 0 && !d.Details.Requested {
				t.Errorf("invariants: %v", v)
			}
		})
	}
}

// TestRestoreRequestAllowNonRestoredState checks that the request's
// setting and the policy's both reach the restore point.
func TestRestoreRequestAllowNonRestoredState(t *testing.T) {
	for _, tc := range []struct{ policy, request, want bool }{
		{false, false, false}, {true, false, true}, {false, true, true}, {true, true, true},
	} {
		r := request(time.Hour)
		r.AllowNonRestoredState = tc.request
		d := EvaluateUpdate(UpdatePolicy{AllowNonRestoredState: tc.policy}, withRequest(observe(flinkapi.JobFailed), r), now)
		if d.RestorePoint.AllowNonRestoredState != tc.want || d.Reason != ReasonRestoreRequested {
			t.Errorf("policy %v, request %v: %+v", tc.policy, tc.request, d.RestorePoint)
		}
	}
}

func TestRestoreRequestValidate(t *testing.T) {
	tests := []struct {
		r      RestoreRequest
		fields []string
	}{
		{RestoreRequest{}, nil},
		{RestoreRequest{Path: "file:///sp/savepoint-1", Token: "1"}, nil},
		{RestoreRequest{Path: "file:///sp/savepoint-1"}, []string{"token"}},
		{RestoreRequest{Path: "file:///sp/savepoint-1", Token: "  "}, []string{"token"}},
		{RestoreRequest{Token: "1", CheckAge: true}, []string{"path"}},
		{RestoreRequest{Path: " file:///sp", Token: "1"}, []string{"path"}},
		{RestoreRequest{Path: "file:///sp\nx", Token: "1"}, []string{"path"}},
		{RestoreRequest{CheckAge: true}, []string{"path", "token"}},
	}
	for _, tc := range tests {
		err := tc.r.Validate()
		var got []string
		for _, e := range unjoin(err) {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Fatalf("%+v: %T %v is not a *FieldError", tc.r, e, e)
			}
			got = append(got, fe.Field)
		}
		if diff := cmp.Diff(tc.fields, got); diff != "" {
			t.Errorf("%+v: fields (-want +got):\n%s", tc.r, diff)
		}
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestRestoreRequestProperties checks, over every job state, age and
// option, that a pending request never restores from other state, that a
// handled one is never carried out, and that a checked request never
// restores state older than the limit.
func TestRestoreRequestProperties(t *testing.T) {
	ages := []time.Duration{-1, time.Minute, 23 * time.Hour, 25 * time.Hour, 30 * 24 * time.Hour}
	policies := []UpdatePolicy{{}, {Mode: UpgradeLastState}, {Mode: UpgradeStateless}, {FallbackToLastState: true, AllowStartWithoutState: true}}
	n := 0
	for _, st := range append(allJobStates, "") {
		for _, a := range ages {
			for _, p := range policies {
				for opts := range 8 {
					r := request(a)
					r.CheckAge, r.CancelWithoutSavepoint, r.AllowNonRestoredState = opts&1 != 0, opts&2 != 0, opts&4 != 0
					obs := withCheckpoint(withSavepoint(withRequest(observe(st), r), time.Minute), time.Second)
					for _, handled := range []bool{false, true} {
						if handled {
							obs.RestoreHandled = r.Token
						}
						d := EvaluateUpdate(p, obs, now)
						n++
						switch {
						case handled && d.Details.Requested:
							t.Fatalf("handled request carried out again: %s %v %+v: %s", st, a, r, d.Message())
						case !handled && !d.Details.Requested:
							t.Fatalf("pending request ignored: %s %v %+v: %s", st, a, r, d.Message())
						case !handled && d.RestorePoint.Kind != "" && d.RestorePoint.Path != requestedPath:
							t.Fatalf("request restores from %+v: %s", d.RestorePoint, d.Message())
						case !handled && r.CheckAge && d.RestorePoint.IsSet() && (a < 0 || a > 24*time.Hour):
							t.Fatalf("checked request restores state of age %v: %s", a, d.Message())
						case d.Action == ActionCancelFirst && !handled && !d.RestorePoint.IsSet():
							t.Fatalf("cancel without a restore point: %s", d.Message())
						case d.Action == ActionWait && !d.Deadline.After(now):
							t.Fatalf("wait without a future deadline: %s", d.Message())
						}
						if d.Message() == "" {
							t.Fatalf("empty message for %+v", core(d))
						}
					}
				}
			}
		}
	}
	t.Logf("%d decisions checked", n)
}

func TestRestoreRequestPending(t *testing.T) {
	for _, tc := range []struct {
		r       RestoreRequest
		handled string
		want    bool
	}{
		{RestoreRequest{}, "", false},
		{RestoreRequest{Path: "p", Token: "a"}, "", true},
		{RestoreRequest{Path: "p", Token: "a"}, "a", false},
		{RestoreRequest{Path: "p", Token: "b"}, "a", true},
		{RestoreRequest{Path: "p"}, "", true},
	} {
		if got := tc.r.Pending(tc.handled); got != tc.want {
			t.Errorf("%+v.Pending(%q) = %v", tc.r, tc.handled, got)
		}
	}
}
