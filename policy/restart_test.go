package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
	"github.com/google/go-cmp/cmp"
)

func TestEvaluateRestart(t *testing.T) {
	on := RestartPolicy{Mode: RestartFromLatestState}
	poll := defaultPollInterval

	// failed returns a job that FAILED at end, with a young checkpoint.
	failed := func(end time.Duration) Observations {
		o := withCheckpoint(observe(flinkapi.JobFailed), 2*time.Minute)
		o.SpecChanged = false
		o.Job.EndTime, o.Job.StateSince = ago(end), ago(end)
		return o
	}
	restarted := func(o Observations, n int, last time.Duration) Observations {
		o.Restarts, o.LastRestart = n, ago(last)
		return o
	}
	youngCP := cp("s3://cp/chk-2m", ago(2*time.Minute))

	tests := []struct {
		name string
		p    RestartPolicy
		obs  Observations
		want decisionCore
	}{
		{"invalid policy", RestartPolicy{Mode: "Always"}, failed(time.Minute),
			decisionCore{Action: ActionBlock, Reason: ReasonInvalidPolicy}},
		{"running: nothing to do", on, observe(flinkapi.JobRunning),
			decisionCore{Action: ActionNone, Reason: ReasonJobRunning}},
		{"finished: never restarted", on, withCheckpoint(observe(flinkapi.JobFinished), time.Minute),
			decisionCore{Action: ActionNone, Reason: ReasonJobFinished}},
		{"cancelled, mode Never: stays cancelled", RestartPolicy{}, withCheckpoint(observe(flinkapi.JobCanceled), time.Minute),
			decisionCore{Action: ActionNone, Reason: ReasonJobCancelled}},
		{"cancelled by someone else: restart from the young checkpoint", on, withCheckpoint(observe(flinkapi.JobCanceled), time.Minute),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartCancelledJob, RestorePoint: cp("s3://cp/chk-1m", ago(time.Minute)), RequeueAfter: poll}},
		{"failed, mode Never: stays failed", RestartPolicy{}, failed(time.Minute),
			decisionCore{Action: ActionBlock, Reason: ReasonRestartDisabled}},
		{"failed: restart from the young checkpoint", on, failed(time.Minute),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartFailedJob, RestorePoint: youngCP, RequeueAfter: poll}},
		{"failed just now: wait for the backoff from the failure", on, failed(10 * time.Second),
			decisionCore{Action: ActionWait, Reason: ReasonRestartBackoff, Deadline: now.Add(20 * time.Second), RequeueAfter: 20 * time.Second}},
		{"restarted recently: wait for the backoff from the restart", on, restarted(failed(time.Minute), 1, 5*time.Second),
			decisionCore{Action: ActionWait, Reason: ReasonRestartBackoff, Deadline: now.Add(25 * time.Second), RequeueAfter: 25 * time.Second}},
		{"within the budget", on, restarted(failed(time.Minute), 2, 10*time.Minute),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartFailedJob, RestorePoint: youngCP, RequeueAfter: poll}},
		{"budget exhausted: stays failed until the window ends", on, restarted(failed(time.Minute), 3, 10*time.Minute),
			decisionCore{Action: ActionBlock, Reason: ReasonRestartBudgetExhausted, RequeueAfter: 50 * time.Minute}},
		{"budget renewed after the window", on, restarted(failed(time.Minute), 3, 61*time.Minute),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartFailedJob, RestorePoint: youngCP, RequeueAfter: poll}},
		{"no state within the maximum age: stays failed", on,
			func() Observations {
				o := failed(time.Minute)
				o.LatestCheckpoint = Checkpoint{Path: "s3://cp/old", Time: ago(25 * time.Hour)}
				return o
			}(),
			decisionCore{Action: ActionBlock, Reason: ReasonNoRecentState}},
		{"maximum age of the restart policy applies", RestartPolicy{Mode: RestartFromLatestState, MaxStateAge: Duration(time.Minute)}, failed(time.Minute),
			decisionCore{Action: ActionBlock, Reason: ReasonNoRecentState}},
		{"lost job: restart from the newest young state", on,
			func() Observations { o := withSavepoint(observe(""), time.Hour); o.SpecChanged = false; return o }(),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartLostJob, RestorePoint: sp("s3://sp/savepoint-1h", ago(time.Hour)), RequeueAfter: poll}},
		{"suspended: wait for another JobManager", on, withCheckpoint(observe(flinkapi.JobSuspended), time.Minute),
			decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll}},
		{"suspended past the timeout: restart as lost", on,
			func() Observations {
				o := withCheckpoint(observe(flinkapi.JobSuspended), time.Minute)
				o.Job.StateSince, o.Job.EndTime = ago(10*time.Minute), ago(10*time.Minute)
				return o
			}(),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartLostJob, RestorePoint: cp("s3://cp/chk-1m", ago(time.Minute)), RequeueAfter: poll}},
		{"Flink restarting: its own business, wait", on, observe(flinkapi.JobRestarting),
			decisionCore{Action: ActionWait, Reason: ReasonJobTransitioning, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll}},
		{"Flink restarting past the timeout: block", on,
			func() Observations {
				o := observe(flinkapi.JobRestarting)
				o.Job.StateSince = ago(time.Hour)
				return o
			}(),
			decisionCore{Action: ActionBlock, Reason: ReasonJobStuck, RequeueAfter: poll}},
		{"savepoint in flight: wait for it", on, withInFlight(failed(time.Minute), time.Minute, 9*time.Minute),
			decisionCore{Action: ActionWait, Reason: ReasonSavepointInProgress, Deadline: now.Add(9 * time.Minute), RequeueAfter: poll}},
		{"savepoint past its deadline: restart anyway", on, withInFlight(failed(time.Minute), 11*time.Minute, -time.Minute),
			decisionCore{Action: ActionRestart, Reason: ReasonRestartFailedJob, RestorePoint: youngCP, RequeueAfter: poll}},
		{"unreachable JobManager: wait", on,
			func() Observations {
				o := failed(time.Minute)
				o.JobManagerReachable, o.LastContact = false, ago(time.Minute)
				return o
			}(),
			decisionCore{Action: ActionWait, Reason: ReasonJobManagerUnreachable, Deadline: now.Add(4 * time.Minute), RequeueAfter: poll}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := EvaluateRestart(tt.p, tt.obs, now)
			if diff := cmp.Diff(tt.want, core(d)); diff != "" {
				t.Errorf("EvaluateRestart (-want +got):\n%s\nmessage: %s", diff, d.Message())
			}
			for _, v := range violations(false, UpdatePolicy{}, tt.p, tt.obs, now, d) {
				t.Errorf("invariant: %s", v)
			}
		})
	}
}

func TestRestartMessages(t *testing.T) {
	on := RestartPolicy{Mode: RestartFromLatestState}
	o := withCheckpoint(observe(flinkapi.JobFailed), 2*time.Minute)
	o.Restarts, o.LastRestart = 3, ago(10*time.Minute)
	msg := EvaluateRestart(on, o, now).Message()
	for _, w := range []string{"FAILED", "3 restarts within 1h (limit 3)", "no restart before 2025-06-01T12:50:00Z"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
	o.Restarts = 1
	msg = EvaluateRestart(on, o, now).Message()
	if want := "the job is FAILED: restart 2 of 3, restore from checkpoint s3://cp/chk-2m (2m old, limit 24h)"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	lost := withSavepoint(observe(""), time.Hour)
	msg = EvaluateRestart(RestartPolicy{}, lost, now).Message()
	if !strings.Contains(msg, "does not know the job") || !strings.Contains(msg, "Never") {
		t.Errorf("message %q", msg)
	}
}

func TestRestartCounting(t *testing.T) {
	p := RestartPolicy{Window: Duration(time.Hour)}
	tests := []struct {
		restarts int
		last     time.Time
		inWindow int
	}{
		{0, time.Time{}, 0},
		{2, ago(59 * time.Minute), 2},
		{2, ago(time.Hour), 0},
		{5, time.Time{}, 0},
		{-1, ago(time.Minute), 0},
	}
	for _, tt := range tests {
		if got := p.restartsInWindow(tt.restarts, tt.last, now); got != tt.inWindow {
			t.Errorf("RestartsInWindow(%d, %v) = %d, want %d", tt.restarts, tt.last, got, tt.inWindow)
		}
		if got := p.CountRestart(tt.restarts, tt.last, now); got != tt.inWindow+1 {
			t.Errorf("CountRestart(%d, %v) = %d, want %d", tt.restarts, tt.last, got, tt.inWindow+1)
		}
	}
}

// TestRestartLoopIsBounded restarts a job that fails at once, again and
// again, and checks that no more than MaxRestarts happen per window.
func TestRestartLoopIsBounded(t *testing.T) {
	p := RestartPolicy{Mode: RestartFromLatestState, MaxRestarts: 3, Window: Duration(time.Hour), Backoff: Duration(time.Minute)}
	obs := observe(flinkapi.JobFailed)
	obs.SpecChanged = false
	obs.Job.EndTime = ago(time.Hour)
	at := now
	var restarts []time.Time
	for at.Before(now.Add(5 * time.Hour)) {
		obs.LatestCheckpoint = Checkpoint{Path: "s3://cp/latest", Time: at.Add(-time.Minute)}
		d := EvaluateRestart(p, obs, at)
		switch d.Action {
		case ActionRestart:
			restarts = append(restarts, at)
			obs.Restarts = p.CountRestart(obs.Restarts, obs.LastRestart, at)
			obs.LastRestart = at
			at = at.Add(time.Second) // fails again at once
			obs.Job.EndTime = at
		case ActionWait, ActionBlock:
			if d.RequeueAfter <= 0 {
				t.Fatalf("%s at %v without a requeue: %s", d.Action, at, d.Message())
			}
			at = at.Add(d.RequeueAfter)
		default:
			t.Fatalf("unexpected %s: %s", d.Action, d.Message())
		}
	}
	for i := p.MaxRestarts; i < len(restarts); i++ {
		if restarts[i].Sub(restarts[i-p.MaxRestarts]) < time.Hour {
			t.Fatalf("restarts %v: more than %d within an hour", restarts, p.MaxRestarts)
		}
	}
	if len(restarts) < 6 {
		t.Errorf("only %d restarts in 5 hours: %v", len(restarts), restarts)
	}
}

func TestRestartIgnoresSavepointOfOtherKind(t *testing.T) {
	// A user savepoint that failed earlier does not stop a restart.
	o := withCheckpoint(observe(flinkapi.JobFailed), time.Minute)
	o.Job.EndTime = ago(time.Hour)
	o.Savepoint = savepoint.Status{State: savepoint.Failed, Reason: savepoint.ReasonUser}
	d := EvaluateRestart(RestartPolicy{Mode: RestartFromLatestState}, o, now)
	if d.Action != ActionRestart {
		t.Errorf("got %s: %s", d.Action, d.Message())
	}
}
