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

func sp(path string, t time.Time) RestorePoint {
	return RestorePoint{Kind: KindSavepoint, Path: path, Time: t}
}

func cp(path string, t time.Time) RestorePoint {
	return RestorePoint{Kind: KindCheckpoint, Path: path, Time: t}
}

var none = RestorePoint{Kind: KindNone}

func TestEvaluateUpdate(t *testing.T) {
	savepointMode := UpdatePolicy{Mode: UpgradeSavepoint}
	lastState := UpdatePolicy{Mode: UpgradeLastState}
	stateless := UpdatePolicy{Mode: UpgradeStateless}
	poll := defaultPollInterval

	failedSavepoint := func(o Observations, attempts int) Observations {
		o.Savepoint = savepoint.Status{State: savepoint.Failed, TriggerTime: ago(3 * time.Minute), Failure: "java.io.IOException: disk full"}
		o.SavepointAttempts = attempts
		return o
	}

	tests := []struct {
		name string
		p    UpdatePolicy
		obs  Observations
		want decisionCore
	}{
		{
			name: "invalid policy blocks",
			p:    UpdatePolicy{Mode: "Sometimes"},
			obs:  observe(flinkapi.JobRunning),
			want: decisionCore{Action: ActionBlock, Reason: ReasonInvalidPolicy},
		},
		{
			name: "unchanged spec: nothing to do",
			p:    savepointMode,
			obs:  func() Observations { o := observe(flinkapi.JobRunning); o.SpecChanged = false; return o }(),
			want: decisionCore{Action: ActionNone, Reason: ReasonUpToDate},
		},

		// The JobManager does not answer.
		{
			name: "unreachable JobManager: wait from the last contact",
			p:    savepointMode,
			obs: func() Observations {
				o := observe(flinkapi.JobRunning)
				o.JobManagerReachable, o.LastContact = false, ago(2*time.Minute)
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobManagerUnreachable, Deadline: now.Add(3 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "unreachable JobManager past the timeout: block",
			p:    lastState,
			obs: func() Observations {
				o := withCheckpoint(observe(flinkapi.JobRunning), time.Minute)
				o.JobManagerReachable, o.LastContact = false, ago(6*time.Minute)
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonJobManagerUnreachableTimeout, RequeueAfter: poll},
		},
		{
			name: "unreachable JobManager, never contacted: wait one timeout from now",
			p:    stateless,
			obs: func() Observations {
				o := observe("")
				o.JobManagerReachable, o.LastContact = false, time.Time{}
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobManagerUnreachable, Deadline: now.Add(5 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "first deploy without a JobManager proceeds without state",
			p:    savepointMode,
			obs: func() Observations {
				o := observe("")
				o.JobManagerReachable, o.SpecChanged, o.FirstDeploy = false, false, true
				return o
			}(),
			want: decisionCore{Action: ActionProceed, Reason: ReasonFirstDeploy, RestorePoint: none, RequeueAfter: poll},
		},
		{
			name: "first deploy from a young initial savepoint",
			p:    lastState,
			obs:  func() Observations { o := withSavepoint(observe(""), time.Hour); o.FirstDeploy = true; return o }(),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: sp("s3://sp/savepoint-1h", ago(time.Hour)), RequeueAfter: poll},
		},
		{
			name: "first deploy with a too old initial savepoint blocks",
			p:    lastState,
			obs:  func() Observations { o := withSavepoint(observe(""), 48*time.Hour); o.FirstDeploy = true; return o }(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonNoRecentState},
		},

		// Savepoint mode.
		{
			name: "savepoint mode, running: stop with a savepoint first",
			p:    savepointMode,
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), time.Hour), time.Minute),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointBeforeUpdate, Deadline: now.Add(10 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint mode, stopped with the savepoint: restore from it",
			p:    savepointMode,
			obs: func() Observations {
				o := withSavepoint(observe(flinkapi.JobFinished), 5*time.Hour)
				o.Savepoint = savepoint.Status{State: savepoint.Succeeded, Location: "s3://sp/new", TriggerTime: ago(time.Minute), Kind: flinkapi.OpStopWithSavepoint}
				return o
			}(),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: sp("s3://sp/new", ago(time.Minute)), RequeueAfter: poll},
		},
		{
			name: "a savepoint location is kept even if the job failed while stopping",
			p:    savepointMode,
			obs: func() Observations {
				o := observe(flinkapi.JobFailed)
				o.Savepoint = savepoint.Status{State: savepoint.JobTerminal, Location: "s3://sp/seen", LastUpdate: ago(2 * time.Minute)}
				return o
			}(),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: sp("s3://sp/seen", ago(2*time.Minute)), RequeueAfter: poll},
		},
		{
			name: "savepoint mode, failed job, only a young checkpoint: no fallback, block",
			p:    savepointMode,
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobFailed), 30*time.Hour), time.Minute),
			want: decisionCore{Action: ActionBlock, Reason: ReasonNoRecentSavepoint},
		},
		{
			name: "savepoint mode, failed job, young checkpoint with fallback",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, FallbackToLastState: true},
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobFailed), 30*time.Hour), time.Minute),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: cp("s3://cp/chk-1m", ago(time.Minute)), RequeueAfter: poll},
		},
		{
			name: "savepoint mode prefers the savepoint over a newer checkpoint without fallback",
			p:    savepointMode,
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobCanceled), time.Hour), time.Minute),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: sp("s3://sp/savepoint-1h", ago(time.Hour)), RequeueAfter: poll},
		},
		{
			name: "no young state, start without state allowed",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, AllowStartWithoutState: true},
			obs:  withSavepoint(observe(flinkapi.JobFailed), 30*time.Hour),
			want: decisionCore{Action: ActionProceed, Reason: ReasonStartWithoutState, RestorePoint: none, RequeueAfter: poll},
		},
		{
			name: "start without state is not used while a young checkpoint exists",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, AllowStartWithoutState: true},
			obs:  withCheckpoint(observe(flinkapi.JobFailed), time.Minute),
			want: decisionCore{Action: ActionBlock, Reason: ReasonNoRecentSavepoint},
		},
		{
			name: "lost job restores from the newest young state",
			p:    lastState,
			obs:  withCheckpoint(withSavepoint(observe(""), time.Hour), 2*time.Minute),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: cp("s3://cp/chk-2m", ago(2*time.Minute)), RequeueAfter: poll},
		},
		{
			name: "allow non-restored state is carried to the restore point",
			p:    UpdatePolicy{Mode: UpgradeLastState, AllowNonRestoredState: true},
			obs:  withCheckpoint(observe(flinkapi.JobSuspended), time.Minute),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState,
				RestorePoint: RestorePoint{Kind: KindCheckpoint, Path: "s3://cp/chk-1m", Time: ago(time.Minute), AllowNonRestoredState: true}, RequeueAfter: poll},
		},

		// LastState mode.
		{
			name: "last state, running, young checkpoint: cancel and restore from it",
			p:    lastState,
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), time.Hour), time.Minute),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreFromState, RestorePoint: cp("s3://cp/chk-1m", ago(time.Minute)), RequeueAfter: poll},
		},
		{
			name: "last state, running, state too old: take a savepoint, do not block",
			p:    lastState,
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), 30*time.Hour), 25*time.Hour),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonNoRecentState, Deadline: now.Add(10 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "last state, exactly the maximum age is young enough",
			p:    UpdatePolicy{Mode: UpgradeLastState, MaxStateAge: Duration(time.Hour)},
			obs:  withCheckpoint(observe(flinkapi.JobRunning), time.Hour),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreFromState, RestorePoint: cp("s3://cp/chk-1h", ago(time.Hour)), RequeueAfter: poll},
		},
		{
			name: "last state, a nanosecond older than the maximum age is too old",
			p:    UpdatePolicy{Mode: UpgradeLastState, MaxStateAge: Duration(time.Hour)},
			obs:  withCheckpoint(observe(flinkapi.JobRunning), time.Hour+time.Nanosecond),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonNoRecentState, Deadline: now.Add(10 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "state without a path is never used",
			p:    lastState,
			obs: func() Observations {
				o := observe(flinkapi.JobCanceled)
				o.LatestCheckpoint = Checkpoint{Time: ago(time.Minute)}
				o.LatestSavepoint = savepoint.Record{Time: ago(time.Minute)}
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonNoRecentState},
		},
		{
			name: "state without a time is never used",
			p:    lastState,
			obs: func() Observations {
				o := observe(flinkapi.JobCanceled)
				o.LatestCheckpoint = Checkpoint{Path: "s3://cp/undated"}
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonNoRecentState},
		},
		{
			name: "state dated after now (clock skew) counts as young",
			p:    lastState,
			obs: func() Observations {
				o := observe(flinkapi.JobCanceled)
				o.LatestCheckpoint = Checkpoint{Path: "s3://cp/skewed", Time: now.Add(3 * time.Second)}
				return o
			}(),
			want: decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: cp("s3://cp/skewed", now.Add(3*time.Second)), RequeueAfter: poll},
		},

		// Savepoints in flight.
		{
			name: "savepoint in flight: wait until its deadline",
			p:    lastState,
			obs:  withInFlight(withCheckpoint(observe(flinkapi.JobRunning), time.Minute), time.Minute, 9*time.Minute),
			want: decisionCore{Action: ActionWait, Reason: ReasonSavepointInProgress, Deadline: now.Add(9 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint in flight without its own deadline: trigger time plus the policy's",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, SavepointDeadline: Duration(2 * time.Minute)},
			obs: func() Observations {
				o := withInFlight(observe(flinkapi.JobRunning), 115*time.Second, 0)
				o.Savepoint.Deadline = time.Time{}
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonSavepointInProgress, Deadline: now.Add(5 * time.Second), RequeueAfter: 5 * time.Second},
		},
		{
			name: "pending trigger is waited for",
			p:    savepointMode,
			obs: func() Observations {
				o := withInFlight(observe(flinkapi.JobRunning), time.Minute, 9*time.Minute)
				o.Savepoint.State = savepoint.Pending
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonSavepointInProgress, Deadline: now.Add(9 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "lost trigger: wait while the history is searched",
			p:    savepointMode,
			obs: func() Observations {
				o := withInFlight(observe(flinkapi.JobRunning), time.Minute, 9*time.Minute)
				o.Savepoint.State = savepoint.Lost
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonSavepointLost, Deadline: now.Add(9 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint in flight while the job finishes: wait for its result",
			p:    savepointMode,
			obs:  withInFlight(withSavepoint(observe(flinkapi.JobFinished), time.Hour), time.Minute, 9*time.Minute),
			want: decisionCore{Action: ActionWait, Reason: ReasonSavepointInProgress, Deadline: now.Add(9 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint past its deadline with an attempt left: retry with a new trigger",
			p:    savepointMode,
			obs:  withInFlight(observe(flinkapi.JobRunning), 11*time.Minute, -time.Minute),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointRetry, Deadline: now.Add(10 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint past its deadline, no attempts left, no fallback: block",
			p:    savepointMode,
			obs: func() Observations {
				o := withInFlight(withCheckpoint(observe(flinkapi.JobRunning), time.Minute), 11*time.Minute, -time.Minute)
				o.SavepointAttempts = 2
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonSavepointTimedOut},
		},
		{
			name: "savepoint failed, attempt left: retry",
			p:    savepointMode,
			obs:  failedSavepoint(observe(flinkapi.JobRunning), 1),
			want: decisionCore{Action: ActionStopWithSavepoint, Reason: ReasonSavepointRetry, Deadline: now.Add(10 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "savepoint failed, no attempt left, no fallback: block, never the checkpoint",
			p:    savepointMode,
			obs:  failedSavepoint(withCheckpoint(observe(flinkapi.JobRunning), time.Minute), 2),
			want: decisionCore{Action: ActionBlock, Reason: ReasonSavepointFailed},
		},
		{
			name: "savepoint failed, no attempt left, fallback allowed: cancel and restore the checkpoint",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, FallbackToLastState: true},
			obs:  failedSavepoint(withCheckpoint(observe(flinkapi.JobRunning), time.Minute), 2),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonSavepointFallback, RestorePoint: cp("s3://cp/chk-1m", ago(time.Minute)), RequeueAfter: poll},
		},
		{
			name: "savepoint failed, fallback allowed but the checkpoint is too old: block",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, FallbackToLastState: true},
			obs:  failedSavepoint(withCheckpoint(observe(flinkapi.JobRunning), 25*time.Hour), 2),
			want: decisionCore{Action: ActionBlock, Reason: ReasonSavepointFailed},
		},
		{
			name: "savepoint failed, no young state, start without state allowed",
			p:    UpdatePolicy{Mode: UpgradeLastState, AllowStartWithoutState: true},
			obs:  failedSavepoint(observe(flinkapi.JobRunning), 2),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonStartWithoutState, RestorePoint: none, RequeueAfter: poll},
		},
		{
			name: "savepoint failed, a young savepoint exists without fallback: block rather than start empty",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, AllowStartWithoutState: true},
			obs:  failedSavepoint(withSavepoint(observe(flinkapi.JobRunning), time.Hour), 2),
			want: decisionCore{Action: ActionBlock, Reason: ReasonSavepointFailed},
		},
		{
			name: "a failed savepoint without a recorded attempt counts as one",
			p:    UpdatePolicy{Mode: UpgradeSavepoint, SavepointAttempts: 1},
			obs:  failedSavepoint(observe(flinkapi.JobRunning), 0),
			want: decisionCore{Action: ActionBlock, Reason: ReasonSavepointFailed},
		},

		// Transitional states.
		{
			name: "cancelling: wait",
			p:    lastState,
			obs:  withCheckpoint(observe(flinkapi.JobCancelling), time.Minute),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "cancelling past the timeout: block, never proceed",
			p:    lastState,
			obs: func() Observations {
				o := withCheckpoint(observe(flinkapi.JobCancelling), time.Minute)
				o.Job.StateSince = ago(6 * time.Minute)
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonJobStuck, RequeueAfter: poll},
		},
		{
			name: "restarting past the timeout: cancel and restore from young state",
			p:    lastState,
			obs: func() Observations {
				o := withCheckpoint(observe(flinkapi.JobRestarting), time.Minute)
				o.Job.StateSince = ago(6 * time.Minute)
				return o
			}(),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonJobStuck, RestorePoint: cp("s3://cp/chk-1m", ago(time.Minute)), RequeueAfter: poll},
		},
		{
			name: "restarting past the timeout without young state: block",
			p:    savepointMode,
			obs: func() Observations {
				o := withSavepoint(observe(flinkapi.JobRestarting), 30*time.Hour)
				o.Job.StateSince = ago(6 * time.Minute)
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonNoRecentState},
		},
		{
			name: "transitional state without StateSince: counted from the start time",
			p:    lastState,
			obs: func() Observations {
				o := observe(flinkapi.JobInitializing)
				o.Job.StateSince, o.Job.StartTime = time.Time{}, ago(30*time.Second)
				return o
			}(),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: now.Add(4*time.Minute + 30*time.Second), RequeueAfter: poll},
		},
		{
			name: "a state unknown to flinkapi is waited for",
			p:    lastState,
			obs:  observe("DEPLOYING_SOMEHOW"),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll},
		},

		// Stateless.
		{
			name: "stateless, running: cancel, restore nothing",
			p:    stateless,
			obs:  withCheckpoint(observe(flinkapi.JobRunning), time.Minute),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonStatelessUpgrade, RestorePoint: none, RequeueAfter: poll},
		},
		{
			name: "stateless, cancelling: wait",
			p:    stateless,
			obs:  observe(flinkapi.JobCancelling),
			want: decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll},
		},
		{
			name: "stateless, cancelling past the timeout: block",
			p:    stateless,
			obs: func() Observations {
				o := observe(flinkapi.JobCancelling)
				o.Job.StateSince = ago(time.Hour)
				return o
			}(),
			want: decisionCore{Action: ActionBlock, Reason: ReasonJobStuck, RequeueAfter: poll},
		},
		{
			name: "stateless, restarting past the timeout: cancel",
			p:    stateless,
			obs: func() Observations {
				o := observe(flinkapi.JobRestarting)
				o.Job.StateSince = ago(time.Hour)
				return o
			}(),
			want: decisionCore{Action: ActionCancelFirst, Reason: ReasonJobStuck, RestorePoint: none, RequeueAfter: poll},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := EvaluateUpdate(tt.p, tt.obs, now)
			if diff := cmp.Diff(tt.want, core(d)); diff != "" {
				t.Errorf("EvaluateUpdate (-want +got):\n%s\nmessage: %s", diff, d.Message())
			}
			for _, v := range violations(true, tt.p, RestartPolicy{}, tt.obs, now, d) {
				t.Errorf("invariant: %s", v)
			}
		})
	}
}

func TestUpdateMessages(t *testing.T) {
	tests := []struct {
		name string
		p    UpdatePolicy
		obs  Observations
		want []string // substrings
	}{
		{
			name: "too old names the age found and the limit",
			p:    UpdatePolicy{Mode: UpgradeLastState},
			obs:  withCheckpoint(observe(flinkapi.JobFailed), 26*time.Hour),
			want: []string{"no state within the limit of 24h", "newest: checkpoint 26h old", "FAILED"},
		},
		{
			name: "no savepoint, young checkpoint without fallback",
			p:    UpdatePolicy{Mode: UpgradeSavepoint},
			obs:  withCheckpoint(withSavepoint(observe(flinkapi.JobFailed), 30*time.Hour), 3*time.Minute),
			want: []string{"no savepoint within the limit of 24h", "savepoint 30h old", "checkpoint 3m old", "fallbackToLastState is off"},
		},
		{
			name: "restore names path, age and limit",
			p:    UpdatePolicy{Mode: UpgradeLastState, MaxStateAge: Duration(90 * time.Minute)},
			obs:  withCheckpoint(observe(flinkapi.JobRunning), 150*time.Second),
			want: []string{"cancel the job, then restore from checkpoint s3://cp/chk-2m30s (2m30s old, limit 1h30m)"},
		},
		{
			name: "failure cause, first line only",
			p:    UpdatePolicy{Mode: UpgradeSavepoint},
			obs: func() Observations {
				o := observe(flinkapi.JobRunning)
				o.Savepoint = savepoint.Status{State: savepoint.Failed, Failure: "IOException: disk full\n\tat Foo.bar"}
				o.SavepointAttempts = 2
				return o
			}(),
			want: []string{"the savepoint failed (IOException: disk full) after 2 attempts (limit 2)", "the job keeps running"},
		},
		{
			name: "stuck job names the time and the limit",
			p:    UpdatePolicy{Mode: UpgradeLastState},
			obs: func() Observations {
				o := observe(flinkapi.JobCancelling)
				o.Job.StateSince = ago(7 * time.Minute)
				return o
			}(),
			want: []string{"CANCELLING for 7m, longer than the limit of 5m"},
		},
		{
			name: "invalid policy names the field",
			p:    UpdatePolicy{MaxStateAge: Duration(-time.Second)},
			obs:  observe(flinkapi.JobRunning),
			want: []string{"the policy is invalid: policy: maxStateAge \"-1s\": must not be negative"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := EvaluateUpdate(tt.p, tt.obs, now).Message()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// TestReconcileSequence follows one Savepoint-mode update through the
// reconcile loop.
func TestReconcileSequence(t *testing.T) {
	p := UpdatePolicy{Mode: UpgradeSavepoint}
	obs := withSavepoint(observe(flinkapi.JobRunning), 30*time.Hour)

	d := EvaluateUpdate(p, obs, now)
	if d.Action != ActionStopWithSavepoint {
		t.Fatalf("step 1: %s %s", d.Action, d.Message())
	}
	// The caller records the trigger with the decision's deadline.
	obs.Savepoint = savepoint.Status{State: savepoint.InFlight, TriggerTime: now, Deadline: d.Deadline, Reason: savepoint.ReasonUpdate}
	obs.SavepointAttempts = 1

	t1 := now.Add(30 * time.Second)
	if d := EvaluateUpdate(p, obs, t1); d.Action != ActionWait || d.Deadline != now.Add(10*time.Minute) {
		t.Fatalf("step 2: %s until %v", d.Action, d.Deadline)
	}
	// The savepoint completes; the job is FINISHED.
	t2 := now.Add(time.Minute)
	obs.Job.State, obs.Job.StateSince, obs.Job.EndTime = flinkapi.JobFinished, t2, t2
	obs.Savepoint.State, obs.Savepoint.Location, obs.Savepoint.LastUpdate = savepoint.Succeeded, "s3://sp/update", t2
	d = EvaluateUpdate(p, obs, t2)
	want := decisionCore{Action: ActionProceed, Reason: ReasonRestoreFromState, RestorePoint: sp("s3://sp/update", now), RequeueAfter: defaultPollInterval}
	if diff := cmp.Diff(want, core(d)); diff != "" {
		t.Fatalf("step 3 (-want +got):\n%s", diff)
	}
}

func TestSelectRestorePoint(t *testing.T) {
	obs := withCheckpoint(withSavepoint(observe(flinkapi.JobFailed), time.Hour), time.Minute)
	tests := []struct {
		name   string
		maxAge time.Duration
		kinds  []RestoreKind
		want   RestorePoint
		ok     bool
	}{
		{"any kind: newest", 24 * time.Hour, nil, cp("s3://cp/chk-1m", ago(time.Minute)), true},
		{"savepoints only", 24 * time.Hour, []RestoreKind{KindSavepoint}, sp("s3://sp/savepoint-1h", ago(time.Hour)), true},
		{"checkpoints only", 24 * time.Hour, []RestoreKind{KindCheckpoint}, cp("s3://cp/chk-1m", ago(time.Minute)), true},
		{"both named", 24 * time.Hour, []RestoreKind{KindCheckpoint, KindSavepoint}, cp("s3://cp/chk-1m", ago(time.Minute)), true},
		{"savepoint too old", 30 * time.Minute, []RestoreKind{KindSavepoint}, RestorePoint{}, false},
		{"nothing young", 30 * time.Second, nil, RestorePoint{}, false},
		{"unknown kinds only", 24 * time.Hour, []RestoreKind{KindNone}, RestorePoint{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SelectRestorePoint(obs, tt.maxAge, now, tt.kinds...)
			if ok != tt.ok {
				t.Errorf("ok = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	t.Run("tie goes to the savepoint", func(t *testing.T) {
		o := withCheckpoint(withSavepoint(observe(""), time.Hour), time.Hour)
		got, _ := SelectRestorePoint(o, 24*time.Hour, now)
		if got.Kind != KindSavepoint {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("the current operation's savepoint counts", func(t *testing.T) {
		o := withSavepoint(observe(""), time.Hour)
		o.Savepoint = savepoint.Status{State: savepoint.Succeeded, Location: "s3://sp/op", TriggerTime: ago(time.Minute)}
		got, _ := SelectRestorePoint(o, 24*time.Hour, now)
		if diff := cmp.Diff(sp("s3://sp/op", ago(time.Minute)), got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestEvaluateUpdateInvalidPolicyError(t *testing.T) {
	err := UpdatePolicy{Mode: "x", SavepointAttempts: -1}.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "mode" {
		t.Fatalf("Validate() = %v, want a *FieldError for mode", err)
	}
	if !strings.Contains(err.Error(), "savepointAttempts") {
		t.Errorf("Validate() = %v, want savepointAttempts named too", err)
	}
}

// TestUpdateAfterJobFailedWhileStopping checks that a running job whose
// stop's savepoint completed (the job failed while stopping and
// restarted) is cancelled and replaced from that savepoint, not stopped
// again and again.
func TestUpdateAfterJobFailedWhileStopping(t *testing.T) {
	for _, mode := range []UpgradeMode{UpgradeSavepoint, UpgradeLastState} {
		o := withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), 3*time.Hour), 2*time.Hour)
		o.Savepoint = savepoint.Status{Kind: flinkapi.OpStopWithSavepoint, State: savepoint.Failed, Location: "s3://sp/stop",
			TriggerTime: ago(time.Minute), Failure: "StopWithSavepointStoppingException"}
		o.SavepointAttempts = 1
		d := EvaluateUpdate(UpdatePolicy{Mode: mode}, o, now)
		want := decisionCore{Action: ActionCancelFirst, Reason: ReasonRestoreFromState, RestorePoint: sp("s3://sp/stop", ago(time.Minute)), RequeueAfter: defaultPollInterval}
		if diff := cmp.Diff(want, core(d)); diff != "" {
			t.Errorf("%s (-want +got):\n%s\n%s", mode, diff, d.Message())
		}
		if v := violations(true, UpdatePolicy{Mode: mode}, RestartPolicy{}, o, now, d); len(v) > 0 {
			t.Errorf("%s: %v", mode, v)
		}
	}
}
