package policy_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// A reconcile loop updating a job in Savepoint mode. Each pass observes,
// asks the policy, acts, and requeues; here the acting and the passing of
// time are simulated.
func Example() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	p := policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(6 * time.Hour)}
	obs := policy.Observations{
		JobManagerReachable: true,
		LastContact:         now,
		Job:                 &policy.Job{ID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", State: flinkapi.JobRunning, StateSince: now.Add(-72 * time.Hour)},
		LatestSavepoint:     savepoint.Record{Location: "s3://savepoints/sp-old", Time: now.Add(-30 * time.Hour)},
		SpecChanged:         true,
	}

	for pass := 1; pass <= 5; pass++ {
		d := policy.EvaluateUpdate(p, obs, now)
		fmt.Printf("%d. %s (%s): %s\n", pass, d.Action, d.Reason, d.Message())

		switch d.Action {
		case policy.ActionStopWithSavepoint:
			// Record the trigger before sending it, with the decision's deadline.
			obs.Savepoint = savepoint.Status{State: savepoint.InFlight, TriggerTime: now, Deadline: d.Deadline, Reason: savepoint.ReasonUpdate}
			obs.SavepointAttempts++
		case policy.ActionWait:
			// Meanwhile the savepoint completes and the job finishes.
			obs.Savepoint.State, obs.Savepoint.Location = savepoint.Succeeded, "s3://savepoints/sp-new"
			obs.Job.State, obs.Job.StateSince = flinkapi.JobFinished, now
		case policy.ActionProceed:
			// Deploy the new spec from d.RestorePoint.Path.
			obs.Job = &policy.Job{ID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", State: flinkapi.JobRunning, StateSince: now}
			obs.Savepoint, obs.SavepointAttempts, obs.SpecChanged = savepoint.Status{}, 0, false
		case policy.ActionNone:
			return
		}
		now = now.Add(d.RequeueAfter)
		obs.LastContact = now
	}
	// Output:
	// 1. StopWithSavepoint (SavepointBeforeUpdate): the job is RUNNING and the policy takes a savepoint on update: stop it with a savepoint (deadline 2025-06-01T12:10:00Z), then restore from it
	// 2. Wait (SavepointInProgress): a savepoint is in progress (triggered 10s ago); waiting for it until its deadline 2025-06-01T12:10:00Z
	// 3. Proceed (RestoreFromState): the job is FINISHED: restore from savepoint s3://savepoints/sp-new (20s old, limit 6h)
	// 4. None (UpToDate): the spec did not change; nothing to do
}

// A failed job under a restart policy: the backoff is waited out, the job
// restarts from its newest checkpoint, and once the budget is spent it
// stays failed.
func ExampleEvaluateRestart() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	p := policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxRestarts: 2, Window: policy.Duration(time.Hour), Backoff: policy.Duration(30 * time.Second)}
	obs := policy.Observations{
		JobManagerReachable: true,
		LastContact:         now,
		Job:                 &policy.Job{ID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", State: flinkapi.JobFailed, EndTime: now.Add(-10 * time.Second)},
		LatestCheckpoint:    policy.Checkpoint{Path: "s3://checkpoints/chk-42", Time: now.Add(-2 * time.Minute)},
	}
	for range 5 {
		d := policy.EvaluateRestart(p, obs, now)
		fmt.Printf("%s (%s): %s\n", d.Action, d.Reason, d.Message())
		switch d.Action {
		case policy.ActionRestart:
			obs.Restarts = p.CountRestart(obs.Restarts, obs.LastRestart, now)
			obs.LastRestart = now
			// It fails again a minute later.
			now = now.Add(time.Minute)
			obs.Job.EndTime = now
		case policy.ActionWait:
			now = now.Add(d.RequeueAfter)
		case policy.ActionBlock:
			return
		}
	}
	// Output:
	// Wait (RestartBackoff): restart backoff of 30s: waiting until 2025-06-01T12:00:20Z before restart 1 of 2
	// Restart (RestartFailedJob): the job is FAILED: restart 1 of 2, restore from checkpoint s3://checkpoints/chk-42 (2m20s old, limit 24h)
	// Wait (RestartBackoff): restart backoff of 30s: waiting until 2025-06-01T12:01:50Z before restart 2 of 2
	// Restart (RestartFailedJob): the job is FAILED: restart 2 of 2, restore from checkpoint s3://checkpoints/chk-42 (3m50s old, limit 24h)
	// Block (RestartBudgetExhausted): the job is FAILED after 2 restarts within 1h (limit 2); no restart before 2025-06-01T13:01:50Z
}

// A job the JobManager forgot after it restarted is Lost, not Failed; the
// restart policy brings it back from its newest state.
func ExampleDeploymentStateOf() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	obs := policy.Observations{
		JobManagerReachable: true,
		LastContact:         now,
		Job:                 nil, // GET /jobs/:jobid answered 404
		LatestCheckpoint:    policy.Checkpoint{Path: "s3://checkpoints/chk-7", Time: now.Add(-time.Minute)},
	}
	rec := policy.Recorded{JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	fmt.Println(policy.DeploymentStateOf(obs, rec))

	d := policy.EvaluateRestart(policy.RestartPolicy{Mode: policy.RestartFromLatestState}, obs, now)
	fmt.Println(d.Action, d.Reason, d.RestorePoint.Path)
	// Output:
	// Lost
	// Restart RestartLostJob s3://checkpoints/chk-7
}

// Policies read from a resource's spec: durations are strings.
func ExampleUpdatePolicy() {
	var p policy.UpdatePolicy
	err := json.Unmarshal([]byte(`{"mode": "LastState", "maxStateAge": "6h", "savepointDeadline": "90s"}`), &p)
	fmt.Println(err, p.MaxStateAge, p.SavepointDeadline, p.Validate())

	err = json.Unmarshal([]byte(`{"maxStateAge": 21600}`), &p)
	fmt.Println(err)

	d := p.WithDefaults()
	fmt.Println(d.Mode, d.MaxStateAge, d.SavepointAttempts, d.FallbackToLastState, d.AllowStartWithoutState)
	// Output:
	// <nil> 6h0m0s 1m30s <nil>
	// policy: a duration must be a JSON string with a unit, such as "90s" or "1h30m"; got 21600
	// LastState 6h0m0s 2 false false
}

// SelectRestorePoint picks the newest state within an age limit.
func ExampleSelectRestorePoint() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	obs := policy.Observations{
		LatestSavepoint:  savepoint.Record{Location: "s3://savepoints/sp-9", Time: now.Add(-3 * time.Hour)},
		LatestCheckpoint: policy.Checkpoint{Path: "s3://checkpoints/chk-80", Time: now.Add(-time.Minute)},
	}
	rp, ok := policy.SelectRestorePoint(obs, 24*time.Hour, now)
	fmt.Println(ok, rp.Kind, rp.Path)
	rp, ok = policy.SelectRestorePoint(obs, 24*time.Hour, now, policy.KindSavepoint)
	fmt.Println(ok, rp.Kind, rp.Path)
	_, ok = policy.SelectRestorePoint(obs, time.Hour, now, policy.KindSavepoint)
	fmt.Println(ok)
	// Output:
	// true Checkpoint s3://checkpoints/chk-80
	// true Savepoint s3://savepoints/sp-9
	// false
}
