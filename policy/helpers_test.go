package policy

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// now is the fixed clock of the tests.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const jobID = flinkapi.JobID("0123456789abcdef0123456789abcdef")

func ago(d time.Duration) time.Time { return now.Add(-d) }

// allJobStates lists every Flink job state flinkapi knows.
var allJobStates = []flinkapi.JobState{
	flinkapi.JobInitializing, flinkapi.JobCreated, flinkapi.JobRunning, flinkapi.JobFailing,
	flinkapi.JobFailed, flinkapi.JobCancelling, flinkapi.JobCanceled, flinkapi.JobFinished,
	flinkapi.JobRestarting, flinkapi.JobSuspended, flinkapi.JobReconciling,
}

// running returns observations of a reachable JobManager with a job in
// state s (nil job for s == ""), entered a minute ago.
func observe(s flinkapi.JobState) Observations {
	o := Observations{
		FlinkVersion:        flinkapi.Version{Major: 1, Minor: 20, Patch: 1},
		JobManagerReachable: true,
		LastContact:         now,
		SpecChanged:         true,
	}
	if s != "" {
		o.Job = &Job{ID: jobID, State: s, StartTime: ago(48 * time.Hour), StateSince: ago(time.Minute)}
		if s.IsTerminal() {
			o.Job.EndTime = ago(time.Minute)
		}
	}
	return o
}

func withSavepoint(o Observations, age time.Duration) Observations {
	o.LatestSavepoint = savepoint.Record{Location: "s3://sp/savepoint-" + fmtDur(age), Time: ago(age), Reason: savepoint.ReasonScheduled, JobID: jobID}
	return o
}

func withCheckpoint(o Observations, age time.Duration) Observations {
	o.LatestCheckpoint = Checkpoint{Path: "s3://cp/chk-" + fmtDur(age), Time: ago(age)}
	return o
}

func withInFlight(o Observations, triggered time.Duration, deadlineIn time.Duration) Observations {
	o.Savepoint = savepoint.Status{
		Kind: flinkapi.OpStopWithSavepoint, JobID: jobID, TriggerID: "fedcba9876543210fedcba9876543210",
		TriggerTime: ago(triggered), Deadline: now.Add(deadlineIn), Reason: savepoint.ReasonUpdate,
		State: savepoint.InFlight, LastUpdate: ago(triggered),
	}
	o.SavepointAttempts = 1
	return o
}

// decisionCore is the part of a Decision most table tests compare.
type decisionCore struct {
	Action       Action
	Reason       Reason
	RestorePoint RestorePoint
	Deadline     time.Time
	RequeueAfter time.Duration
}

func core(d Decision) decisionCore {
	return decisionCore{d.Action, d.Reason, d.RestorePoint, d.Deadline, d.RequeueAfter}
}

// violations lists the invariants d breaks. update tells EvaluateUpdate's
// decisions (with up) from EvaluateRestart's (with rp).
func violations(update bool, up UpdatePolicy, rp RestartPolicy, obs Observations, at time.Time, d Decision) []string {
	var v []string
	bad := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }

	switch d.Action {
	case ActionNone, ActionProceed, ActionStopWithSavepoint, ActionCancelFirst, ActionWait, ActionRestart, ActionBlock:
	default:
		bad("unknown action %q", d.Action)
	}
	if d.Reason == "" {
		bad("empty reason")
	}
	msg := d.Message()
	if msg == "" || strings.ContainsAny(msg, "\r\n") || strings.Contains(msg, "%!") {
		bad("bad message %q", msg)
	}

	// Every Wait has a deadline after now, and looks again before it.
	if d.Action == ActionWait {
		if !d.Deadline.After(at) {
			bad("Wait with deadline %v not after now %v", d.Deadline, at)
		}
		if d.RequeueAfter <= 0 || d.RequeueAfter > d.Deadline.Sub(at) {
			bad("Wait with RequeueAfter %v (deadline in %v)", d.RequeueAfter, d.Deadline.Sub(at))
		}
	}
	if d.RequeueAfter < 0 {
		bad("negative RequeueAfter %v", d.RequeueAfter)
	}

	// Restore points only with actions that start a job, and always then.
	starts := d.Action == ActionProceed || d.Action == ActionCancelFirst || d.Action == ActionRestart
	rp0 := d.RestorePoint
	switch {
	case starts && rp0.Kind == "":
		bad("%s without a restore point or an explicit none", d.Action)
	case !starts && rp0 != (RestorePoint{}):
		bad("%s with restore point %+v", d.Action, rp0)
	}
	switch rp0.Kind {
	case "", KindNone:
		if rp0.Path != "" || !rp0.Time.IsZero() {
			bad("restore kind %q with path %q / time %v", rp0.Kind, rp0.Path, rp0.Time)
		}
	case KindSavepoint, KindCheckpoint:
		if rp0.Path == "" {
			bad("restore point with an empty path")
		}
		if rp0.Time.IsZero() {
			bad("restore point without a time")
		}
	default:
		bad("unknown restore kind %q", rp0.Kind)
	}

	var maxAge time.Duration
	if update {
		p := up.WithDefaults()
		maxAge = p.MaxStateAge.Std()
		stateful := p.Mode != UpgradeStateless
		if up.Validate() != nil {
			if d.Action != ActionBlock || d.Reason != ReasonInvalidPolicy {
				bad("invalid policy gave %s/%s", d.Action, d.Reason)
			}
			return v
		}
		// No decision drops state the policy asks to keep.
		if stateful && rp0.Kind == KindNone && !(p.AllowStartWithoutState || obs.FirstDeploy) {
			bad("stateful %s starts without state (%s)", d.Action, d.Reason)
		}
		if stateful && rp0.Kind == KindNone && p.AllowStartWithoutState && !obs.FirstDeploy {
			if _, ok := SelectRestorePoint(obs, maxAge, at); ok {
				bad("starts without state although young state exists")
			}
		}
		if stateful && rp0.Kind == KindNone && obs.FirstDeploy && !p.AllowStartWithoutState {
			if obs.LatestSavepoint.Location != "" || obs.LatestCheckpoint.Path != "" || obs.Savepoint.Location != "" {
				bad("first deploy starts without state although state exists")
			}
		}
		if !stateful && rp0.IsSet() {
			bad("stateless update restores %+v", rp0)
		}
		if p.Mode == UpgradeSavepoint && !p.FallbackToLastState && rp0.Kind == KindCheckpoint {
			bad("Savepoint mode without fallback restores a checkpoint")
		}
		if rp0.IsSet() && rp0.AllowNonRestoredState != p.AllowNonRestoredState {
			bad("AllowNonRestoredState not carried over")
		}
		if d.Action == ActionRestart {
			bad("EvaluateUpdate returned Restart")
		}
		if !obs.SpecChanged && !obs.FirstDeploy && d.Action != ActionNone && d.Reason != ReasonInvalidPolicy {
			bad("unchanged spec gave %s", d.Action)
		}
		// Never act on a job that is still moving, nor while a savepoint is
		// in flight before its deadline.
		if js := obs.jobState(); obs.JobManagerReachable && obs.Job != nil && (d.Action == ActionProceed) &&
			!js.IsTerminal() {
			bad("Proceed while the job is %s", js)
		}
		if obs.JobManagerReachable && obs.Job != nil && obs.Job.State == flinkapi.JobCancelling &&
			(d.Action == ActionProceed || d.Action == ActionCancelFirst || d.Action == ActionStopWithSavepoint) {
			bad("%s while CANCELLING", d.Action)
		}
		if !obs.JobManagerReachable && !obs.FirstDeploy && d.Action != ActionWait && d.Action != ActionBlock && d.Action != ActionNone {
			bad("%s without a JobManager", d.Action)
		}
		if d.Action == ActionStopWithSavepoint {
			if obs.Job == nil || obs.Job.State != flinkapi.JobRunning {
				bad("StopWithSavepoint for job %v", obs.jobState())
			}
			if !d.Deadline.After(at) {
				bad("StopWithSavepoint without a deadline")
			}
		}
		if stateful && savepointInFlight(&obs.Savepoint) && obs.JobManagerReachable && obs.SpecChanged &&
			at.Before(savepointDeadline(&obs.Savepoint, p.SavepointDeadline.Std(), at)) && d.Action != ActionWait {
			bad("%s while a savepoint is in flight", d.Action)
		}
	} else {
		p := rp.WithDefaults()
		maxAge = p.MaxStateAge.Std()
		if rp.Validate() != nil {
			if d.Action != ActionBlock || d.Reason != ReasonInvalidPolicy {
				bad("invalid policy gave %s/%s", d.Action, d.Reason)
			}
			return v
		}
		if d.Action == ActionRestart {
			if p.Mode != RestartFromLatestState {
				bad("restart under mode %s", p.Mode)
			}
			if !obs.JobManagerReachable {
				bad("restart without a JobManager")
			}
			if js := obs.jobState(); js != "" && js != flinkapi.JobFailed && js != flinkapi.JobCanceled && js != flinkapi.JobSuspended {
				bad("restart of a %s job", js)
			}
			if !rp0.IsSet() {
				bad("restart without state")
			}
			if n := p.restartsInWindow(obs.Restarts, obs.LastRestart, at); n >= p.MaxRestarts {
				bad("restart %d beyond the budget of %d", n+1, p.MaxRestarts)
			}
			if !obs.LastRestart.IsZero() && at.Before(obs.LastRestart.Add(p.Backoff.Std())) {
				bad("restart within the backoff")
			}
		}
		switch d.Action {
		case ActionProceed, ActionCancelFirst, ActionStopWithSavepoint:
			bad("EvaluateRestart returned %s", d.Action)
		}
	}
	// No restore point is older than the limit.
	if rp0.IsSet() && age(rp0.Time, at) > maxAge {
		bad("restore point %v old, limit %v", age(rp0.Time, at), maxAge)
	}
	return v
}
