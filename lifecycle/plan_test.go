package lifecycle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

var planNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// planJob is the template of the plan tests' job.
var planJob = JobTemplate{JarFile: "/jars/app.jar", Args: []string{"--out", "/out"}, Parallelism: 2}

// planCase is a status and an observation of one situation.
type planCase struct {
	st  JobStatus
	obs Observation
}

// planCases builds a status and an observation for every situation of
// the model: the job ran planJob, a savepoint of it is 10 minutes old,
// and a retained checkpoint 1 minute old.
func planCases() map[Situation]planCase {
	const id = flinkapi.JobID("0123456789abcdef0123456789abcdef")
	latest := savepoint.Record{Location: "file:/sp/sp-1", Time: planNow.Add(-10 * time.Minute), Reason: savepoint.ReasonScheduled, JobID: id}
	base := JobStatus{JobID: id, Deployed: planJob, Stable: planJob, DeployedAt: planNow.Add(-time.Hour), Latest: latest,
		Savepoints: savepoint.History{Records: []savepoint.Record{latest}}, State: policy.Running}
	cp := &flinkapi.CheckpointStatistics{LatestCompleted: &flinkapi.CheckpointStats{ExternalPath: "file:/cp/chk-9",
		TriggerTime: planNow.Add(-time.Minute), LatestAck: planNow.Add(-time.Minute)}, Counts: flinkapi.CheckpointCounts{Completed: 9}}
	details := func(state flinkapi.JobState) *flinkapi.JobDetails {
		return &flinkapi.JobDetails{ID: id, State: state, StartTime: planNow.Add(-time.Hour),
			Timestamps: map[flinkapi.JobState]time.Time{state: planNow.Add(-time.Minute)},
			Vertices:   []flinkapi.JobVertex{{ID: "v1", Parallelism: 2, Status: string(state), Tasks: flinkapi.TaskCounts{Running: 2, Total: 2}}}}
	}
	seen := func(state flinkapi.JobState, stats *flinkapi.CheckpointStatistics) Observation {
		return Observation{Read: true, Reachable: true, Job: details(state), Checkpoints: stats, CheckpointsRead: stats != nil, Restarts: -1, FreeSlots: -1}
	}
	stop := &flinkapi.CheckpointStatistics{LatestSavepoint: &flinkapi.CheckpointStats{ExternalPath: "file:/sp/stop-2", CheckpointType: "SYNC_SAVEPOINT",
		IsSavepoint: true, TriggerTime: planNow.Add(-30 * time.Second)}}
	ours := base
	ours.Latest = savepoint.Record{Location: "file:/sp/stop-2", Time: planNow.Add(-30 * time.Second), JobID: id}
	inflight := base
	inflight.Action, inflight.Target, inflight.Progress = ActionUpgrade, planJob, Progress{Operation: opUpgrade, Target: id, Phase: PhaseSavepoint}
	suspended := base
	suspended.Suspended = true
	deletedSt := base
	deletedSt.Deleted = true
	finishedSt := base
	finishedSt.Result = JobResult{JobID: id, EndTime: planNow.Add(-time.Minute)}
	return map[Situation]planCase{
		SituationNeverDeployed:        {st: JobStatus{}},
		SituationDeleted:              {st: deletedSt},
		SituationSuspended:            {st: suspended},
		SituationInFlight:             {st: inflight},
		SituationUnreachable:          {st: base, obs: Observation{Read: true, Error: "connection refused", Restarts: -1, FreeSlots: -1}},
		SituationRunning:              {st: base, obs: seen(flinkapi.JobRunning, cp)},
		SituationStarting:             {st: base, obs: seen(flinkapi.JobInitializing, nil)},
		SituationRestarting:           {st: base, obs: seen(flinkapi.JobRestarting, nil)},
		SituationStoppedWithSavepoint: {st: ours, obs: seen(flinkapi.JobFinished, stop)},
		SituationStoppedExternally:    {st: base, obs: seen(flinkapi.JobFinished, stop)},
		SituationFinished:             {st: finishedSt, obs: seen(flinkapi.JobFinished, nil)},
		SituationFinishUnconfirmed:    {st: base, obs: Observation{Read: true, Reachable: true, Job: details(flinkapi.JobFinished), CheckpointsRead: true, Restarts: -1, FreeSlots: -1}},
		SituationFailed:               {st: base, obs: seen(flinkapi.JobFailed, cp)},
		SituationCancelled:            {st: base, obs: seen(flinkapi.JobCanceled, cp)},
		SituationHalted:               {st: base, obs: seen(flinkapi.JobSuspended, cp)},
		SituationLost:                 {st: base, obs: Observation{Read: true, Reachable: true, Restarts: -1, FreeSlots: -1}},
	}
}

// specChanges are the spec changes the plan is tested with.
var specChanges = map[string]func(s *JobSpec){
	"none":        func(*JobSpec) {},
	"new job":     func(s *JobSpec) { s.Job.Args = append(slices.Clone(s.Job.Args), "--v2") },
	"parallelism": func(s *JobSpec) { s.Job.Parallelism = 4 },
	"restore": func(s *JobSpec) {
		s.Restore = policy.RestoreRequest{Path: "file:/sp/old", Token: "t1", Time: planNow.Add(-2 * time.Hour)}
	},
	"suspend":    func(s *JobSpec) { s.State = DesiredSuspended },
	"blue/green": func(s *JobSpec) { s.BlueGreen.Enabled = true; s.Job.Args = append(slices.Clone(s.Job.Args), "--v2") },
}

var planModes = []policy.UpgradeMode{policy.UpgradeSavepoint, policy.UpgradeLastState, policy.UpgradeStateless}

func planSpec(mode policy.UpgradeMode) JobSpec {
	return JobSpec{Job: planJob, Update: policy.UpdatePolicy{Mode: mode},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState}}
}

// TestPlanSituations: every situation of the model is named from the
// status and observation built for it.
func TestPlanSituations(t *testing.T) {
	c := &Controller{}
	cases := planCases()
	for _, s := range Situations {
		pc, ok := cases[s]
		if !ok {
			t.Errorf("no case for situation %s", s)
			continue
		}
		if got := c.PlanFor(planSpec(policy.UpgradeSavepoint), pc.st, pc.obs, planNow).Situation; got != s {
			t.Errorf("situation %s planned as %s", s, got)
		}
	}
}

// TestPlanGolden: the action planned for a situation and a spec change.
func TestPlanGolden(t *testing.T) {
	c := &Controller{}
	cases := planCases()
	for _, tc := range []struct {
		sit    Situation
		change string
		action JobAction
		reason string
	}{
		{SituationNeverDeployed, "none", ActionDeploy, ""},
		{SituationDeleted, "none", ActionDeploy, ""},
		{SituationSuspended, "none", ActionDeploy, ""},
		{SituationSuspended, "suspend", "", ReasonSuspended},
		{SituationInFlight, "new job", ActionUpgrade, ActionReason(ActionUpgrade, "")},
		{SituationRunning, "none", "", ReasonRunning},
		{SituationRunning, "new job", ActionUpgrade, ""},
		{SituationRunning, "parallelism", ActionRescale, ""},
		{SituationRunning, "restore", ActionUpgrade, ""},
		{SituationRunning, "suspend", ActionSuspend, ""},
		{SituationRunning, "blue/green", ActionBlueGreen, ""},
		{SituationStoppedExternally, "none", ActionDeploy, ""},
		{SituationStoppedExternally, "suspend", "", ReasonSuspended},
		{SituationStoppedWithSavepoint, "none", ActionDeploy, ""},
		{SituationFinished, "none", "", string(policy.ReasonJobFinished)},
		{SituationFinished, "new job", ActionUpgrade, ""},
		{SituationFinishUnconfirmed, "none", "", ReasonFinishUnconfirmed},
		{SituationFailed, "none", ActionRestart, ""},
		{SituationFailed, "blue/green", ActionUpgrade, ""},
		{SituationFailed, "parallelism", ActionUpgrade, ""},
		{SituationLost, "none", ActionRestart, ""},
		{SituationLost, "blue/green", ActionUpgrade, ""},
		{SituationUnreachable, "none", "", string(policy.ReasonJobManagerUnreachable)},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.sit, tc.change), func(t *testing.T) {
			spec := planSpec(policy.UpgradeSavepoint)
			specChanges[tc.change](&spec)
			pc := cases[tc.sit]
			p := c.PlanFor(spec, pc.st, pc.obs, planNow)
			if p.Action != tc.action || (tc.reason != "" && p.Reason != tc.reason) {
				t.Fatalf("plan %s; want action %q reason %q", p, tc.action, tc.reason)
			}
		})
	}
}

// TestPlanInvariants checks the plan over the whole model: every
// situation, spec change and update mode, with and without blue/green.
func TestPlanInvariants(t *testing.T) {
	c := &Controller{}
	n := 0
	for sit, pc := range planCases() {
		for name, change := range specChanges {
			for _, mode := range planModes {
				spec := planSpec(mode)
				change(&spec)
				p := c.PlanFor(spec, pc.st, pc.obs, planNow)
				n++
				where := fmt.Sprintf("%s / %s / %s: %s", sit, name, mode, p)
				checkPlan(t, where, spec, pc.st, p)
				for ledger, st := range ledgerCases(pc.st) {
					spec := spec
					spec.Savepoints = SavepointPolicy{MaxCount: 1, DisposeUpdate: true, DisposeUser: true}
					p := c.PlanFor(spec, st, pc.obs, planNow)
					n++
					checkPlan(t, fmt.Sprintf("%s / %s / %s / %s: %s", sit, name, mode, ledger, p), spec, st, p)
				}
			}
		}
	}
	t.Logf("%d plans checked", n)
}

// ledgerCases are variants of st with older savepoints in the history
// (one the state a rollback restores, one the spec change "restore"
// asks for) and a disposal recorded in an earlier call, not yet
// acknowledged by Flink, of each of them and of the latest.
func ledgerCases(st JobStatus) map[string]JobStatus {
	old := func(loc string, age time.Duration) savepoint.Record {
		return savepoint.Record{Location: loc, Time: planNow.Add(-age), Reason: savepoint.ReasonScheduled, JobID: st.JobID}
	}
	from, restore, plain := old("file:/sp/from", 3*time.Hour), old("file:/sp/old", 2*time.Hour), old("file:/sp/plain", 90*time.Minute)
	out := map[string]JobStatus{}
	for _, disposing := range []string{"", from.Location, restore.Location, plain.Location, st.Latest.Location} {
		v := *st.DeepCopy()
		v.Savepoints = v.Savepoints.Add(from, restore, plain)
		v.UpgradeFrom = from
		if disposing != "" {
			v.Disposing = SavepointDisposal{Location: disposing, Started: planNow.Add(-time.Minute)}
		}
		out["disposing "+disposing] = v
	}
	return out
}

func checkPlan(t *testing.T, where string, spec JobSpec, st JobStatus, p Plan) {
	t.Helper()
	stops := p.Action == ActionUpgrade || p.Action == ActionBlueGreen || p.Action == ActionRescale || p.Action == ActionHealthRestart
	if !p.InFlight && stops && p.Situation.runs() && spec.Update.Mode == policy.UpgradeSavepoint && !spec.Restore.Pending(st.RestoreHandled) && !p.NewSavepoint {
		t.Errorf("%s: stops a state-keeping running job without a new savepoint", where)
	}
	if !p.InFlight && p.Action != "" && !p.NewSavepoint && p.RestorePoint.Location != "" && !spec.Restore.Pending(st.RestoreHandled) &&
		st.Latest.Location != "" && p.RestorePoint.Time.Before(st.Latest.Time) {
		t.Errorf("%s: restores %s, older than the latest savepoint %s", where, p.RestorePoint.Time, st.Latest.Time)
	}
	if p.Settled && p.Situation != SituationRunning {
		t.Errorf("%s: settled while nothing runs", where)
	}
	if spec.State != DesiredSuspended && p.Action == "" && !p.InFlight && p.Situation.down() && p.Reason == ReasonRunning {
		t.Errorf("%s: reports Running while nothing runs", where)
	}
	if p.Action == ActionRestart && p.RestorePoint.Location != "" && st.Latest.Location != "" && p.RestorePoint.Time.Before(st.Latest.Time) {
		t.Errorf("%s: restarts from state older than the latest savepoint", where)
	}
	// Invariant 16: a disposal, also one recorded in an earlier call,
	// never goes to a savepoint that may not go now.
	if p.Dispose != "" && !(st.Disposing.Location == p.Dispose && st.Disposing.TriggerID != "") {
		// The state a rollback restores, until the deployment is deleted.
		never := map[string]bool{st.Latest.Location: true, st.UpgradeFrom.Location: !deleted(&st), st.Progress.Replace.RestoreFrom: true, spec.Restore.Path: true}
		if newest, ok := st.Savepoints.Latest(); ok {
			never[newest.Location] = true
		}
		if never[p.Dispose] {
			t.Errorf("%s: disposes of %s, which may not go (latest %s, upgraded from %s, restore request %q)",
				where, p.Dispose, st.Latest.Location, st.UpgradeFrom.Location, spec.Restore.Path)
		}
	}
}
