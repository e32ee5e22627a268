package policy

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// TestDeploymentStateTable checks DeploymentStateOf against the table in
// the package documentation, row by row.
func TestDeploymentStateTable(t *testing.T) {
	const other = flinkapi.JobID("ffffffffffffffffffffffffffffffff")
	type cols struct {
		nothing, opOwn, opOther, stop DeploymentState
	}
	// opOwn and opOther are given for an Update; Deploy and Restart are
	// checked to map the same way with their own names below.
	rows := []struct {
		state flinkapi.JobState // "" missing
		want  cols
	}{
		{flinkapi.JobInitializing, cols{Deploying, Updating, Updating, Stopping}},
		{flinkapi.JobCreated, cols{Deploying, Updating, Updating, Stopping}},
		{flinkapi.JobRunning, cols{Running, Running, Updating, Stopping}},
		{flinkapi.JobFailing, cols{Restarting, Restarting, Updating, Stopping}},
		{flinkapi.JobRestarting, cols{Restarting, Restarting, Updating, Stopping}},
		{flinkapi.JobReconciling, cols{Restarting, Restarting, Updating, Stopping}},
		{flinkapi.JobCancelling, cols{Stopping, Stopping, Updating, Stopping}},
		{flinkapi.JobFinished, cols{Succeeded, Succeeded, Updating, Suspended}},
		{flinkapi.JobFailed, cols{Failed, DeployFailed, Updating, Failed}},
		{flinkapi.JobCanceled, cols{Cancelled, Cancelled, Updating, Cancelled}},
		{flinkapi.JobSuspended, cols{Suspended, Suspended, Updating, Suspended}},
		{"NEW_IN_FLINK_3", cols{Unknown, Unknown, Updating, Stopping}},
	}
	for _, r := range rows {
		obs := observe(r.state)
		check := func(col string, rec Recorded, want DeploymentState) {
			t.Helper()
			if got := DeploymentStateOf(obs, rec); got != want {
				t.Errorf("%s, %s: got %s, want %s", r.state, col, got, want)
			}
		}
		check("nothing in progress", Recorded{JobID: jobID}, r.want.nothing)
		check("update, its job", Recorded{Operation: OperationUpdate, JobID: jobID}, r.want.opOwn)
		check("update, other job", Recorded{Operation: OperationUpdate, JobID: other}, r.want.opOther)
		check("update, not submitted yet", Recorded{Operation: OperationUpdate}, r.want.opOther)
		check("stop", Recorded{Operation: OperationStop, JobID: jobID}, r.want.stop)

		// Deploy and Restart map like Update, with their own names.
		for _, op := range []struct {
			op   Operation
			name DeploymentState
		}{{OperationDeploy, Deploying}, {OperationRestart, Restarting}} {
			rename := func(s DeploymentState) DeploymentState {
				if s == Updating {
					return op.name
				}
				return s
			}
			check(string(op.op)+", its job", Recorded{Operation: op.op, JobID: jobID}, rename(r.want.opOwn))
			check(string(op.op)+", other job", Recorded{Operation: op.op, JobID: other}, rename(r.want.opOther))
		}
	}

	missing := observe("")
	unreachable := observe(flinkapi.JobRunning)
	unreachable.JobManagerReachable = false
	tests := []struct {
		name string
		obs  Observations
		rec  Recorded
		want DeploymentState
	}{
		{"missing, job recorded: lost, not failed", missing, Recorded{JobID: jobID}, Lost},
		{"missing, nothing recorded", missing, Recorded{}, Unknown},
		{"missing during a deploy", missing, Recorded{Operation: OperationDeploy, JobID: jobID}, Deploying},
		{"missing during an update", missing, Recorded{Operation: OperationUpdate}, Updating},
		{"missing during a restart", missing, Recorded{Operation: OperationRestart, JobID: jobID}, Restarting},
		{"missing after a stop", missing, Recorded{Operation: OperationStop, JobID: jobID}, Suspended},
		{"no answer, nothing in progress", unreachable, Recorded{JobID: jobID}, Unknown},
		{"no answer during a deploy", unreachable, Recorded{Operation: OperationDeploy}, Deploying},
		{"no answer during a stop", unreachable, Recorded{Operation: OperationStop, JobID: jobID}, Stopping},
		{"submission failed", observe(flinkapi.JobRunning), Recorded{Operation: OperationUpdate, JobID: other, SubmitFailed: true}, DeployFailed},
		{"submission failed, no answer", unreachable, Recorded{Operation: OperationDeploy, SubmitFailed: true}, DeployFailed},
		{"submission failed flag without an operation is ignored", observe(flinkapi.JobRunning), Recorded{JobID: jobID, SubmitFailed: true}, Running},
	}
	for _, tt := range tests {
		if got := DeploymentStateOf(tt.obs, tt.rec); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestLostHasAWayForward checks the documented way out of Lost.
func TestLostHasAWayForward(t *testing.T) {
	obs := withCheckpoint(observe(""), 3*time.Minute)
	obs.SpecChanged = false
	if s := DeploymentStateOf(obs, Recorded{JobID: jobID}); s != Lost {
		t.Fatalf("state %s, want Lost", s)
	}
	d := EvaluateRestart(RestartPolicy{Mode: RestartFromLatestState}, obs, now)
	if d.Action != ActionRestart || d.Reason != ReasonRestartLostJob || !d.RestorePoint.IsSet() {
		t.Errorf("restart: %s %s: %s", d.Action, d.Reason, d.Message())
	}
	d = EvaluateRestart(RestartPolicy{Mode: RestartNever}, obs, now)
	if d.Action != ActionBlock || d.Reason != ReasonRestartDisabled {
		t.Errorf("restart, Never: %s %s", d.Action, d.Reason)
	}
	obs.SpecChanged = true
	d = EvaluateUpdate(UpdatePolicy{Mode: UpgradeLastState}, obs, now)
	if d.Action != ActionProceed || d.Reason != ReasonRestoreFromState || !d.RestorePoint.IsSet() {
		t.Errorf("update: %s %s: %s", d.Action, d.Reason, d.Message())
	}
}
