package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// reconcileOnce runs one Reconcile of spec without moving the clock,
// sending the status through JSON as a caller that stores it, and
// returns its result.
func (k *cluster) reconcileOnce(spec JobSpec) Result {
	k.t.Helper()
	res, err := k.controller().Reconcile(context.Background(), spec, &k.st)
	if err != nil {
		k.t.Fatalf("call %d: %v", k.calls, err)
	}
	k.calls++
	b, err := json.Marshal(k.st)
	if err != nil {
		k.t.Fatal(err)
	}
	k.st = JobStatus{}
	if err := json.Unmarshal(b, &k.st); err != nil {
		k.t.Fatal(err)
	}
	return res
}

// earned reports whether job id, read at this instant, has all its tasks
// running and (with checkpointing) a checkpoint completed after its
// start, and says what it saw.
func (k *cluster) earned(id flinkapi.JobID, checkpointing bool) (bool, string) {
	k.t.Helper()
	ctx := context.Background()
	d, err := k.c.Job(ctx, id)
	if err != nil {
		k.t.Fatal(err)
	}
	if !tasksRunning(d) {
		tasks := map[string]string{}
		for _, v := range d.Vertices {
			tasks[v.Name] = v.Status
		}
		return false, "job " + string(d.State) + ", tasks " + jsonOf(k.t, tasks)
	}
	if !checkpointing {
		return true, ""
	}
	stats, err := k.c.Checkpoints(ctx, id)
	if err != nil {
		k.t.Fatal(err)
	}
	if stats.LatestCompleted == nil || stats.LatestCompleted.TriggerTime.Before(d.StartTime) {
		return false, "no checkpoint completed since the job started at " + d.StartTime.UTC().Format(time.RFC3339Nano)
	}
	return true, ""
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// convergesOnceEarned calls Reconcile of spec until the status converges
// on a job other than old (the old one may still be read from Flink's
// cache after it failed), and fails the test at any call after which
// the status says Converged while its job has not earned it: its tasks
// not all running, or no checkpoint completed after its start.
func (k *cluster) convergesOnceEarned(what string, spec JobSpec, old flinkapi.JobID, checkpointing bool) {
	k.t.Helper()
	for range 600 {
		res := k.reconcileOnce(spec)
		if k.st.Converged(spec) && k.st.JobID != old { // the old job may be read from Flink's cache for a while
			if ok, saw := k.earned(k.st.JobID, checkpointing); !ok {
				k.t.Fatalf("%s: Converged after call %d although the new job %s has not earned it: %s (state %s, reason %s: %s)",
					what, k.calls, k.st.JobID, saw, k.st.State, k.st.Reason, k.st.Message)
			}
			if k.st.StableJobID != k.st.JobID {
				k.t.Fatalf("%s: Converged with StableJobID %s, the job is %s", what, k.st.StableJobID, k.st.JobID)
			}
			return
		}
		k.srv.Clock().Advance(res.RequeueAfter)
	}
	k.t.Fatalf("%s: not converged on a new job: %+v", what, k.st)
}

// TestStableIsEarnedByEachJob: stability belongs to the job that earned
// it. A new job that runs the last stable template (a restart, a
// redeploy after a stop from the Flink UI, a delete and re-add, a revert
// of an upgrade that had not become stable yet) is not Converged while
// its tasks are not all running or before it completed a checkpoint of
// its own; it is once it did. Without checkpointing, its tasks running
// stand in.
func TestStableIsEarnedByEachJob(t *testing.T) {
	for _, tc := range []struct {
		name          string
		checkpointing bool
		act           func(k *cluster, spec JobSpec) JobSpec
	}{
		{name: "restart after a failure", checkpointing: true, act: func(k *cluster, spec JobSpec) JobSpec {
			if err := k.srv.FailJob(k.st.JobID, "java.lang.RuntimeException: boom"); err != nil {
				k.t.Fatal(err)
			}
			return spec
		}},
		{name: "redeploy after a stop from the Flink UI", checkpointing: true, act: stopFromUI},
		{name: "redeploy after a stop from the Flink UI, no checkpointing", act: stopFromUI},
		{name: "delete and re-add", checkpointing: true, act: func(k *cluster, spec JobSpec) JobSpec {
			for range 300 {
				if k.call(spec, true).Done {
					return spec
				}
			}
			k.t.Fatalf("not deleted: %+v", k.st)
			return spec
		}},
		{name: "revert of an upgrade not stable yet", checkpointing: true, act: func(k *cluster, spec JobSpec) JobSpec {
			v2 := spec
			v2.Job.Args = append(append([]string(nil), spec.Job.Args...), "--name", "v2")
			k.call(v2, false)
			k.until("the upgrade to v2", v2, 300, func(st *JobStatus) bool {
				return st.Action == ActionUpgrade && st.Progress.Done() && st.Deployed.equal(v2.Job)
			})
			if !k.st.Stable.equal(spec.Job) {
				k.t.Fatalf("v2 became stable before the revert; the test needs v1 as the stable template")
			}
			return spec
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			if !tc.checkpointing {
				spec = k.spec("/out", "--checkpoint-interval", "0")
			}
			k.settle("create", spec)
			k.run(spec, 3*time.Second)
			if !k.st.Converged(spec) {
				t.Fatalf("not converged at rest: %+v", k.st)
			}
			old := k.st.JobID
			spec = tc.act(k, spec)
			k.convergesOnceEarned(tc.name, spec, old, tc.checkpointing)
		})
	}
}

// stopFromUI stops the job with a savepoint as the Flink UI does, behind
// the Controller's back, and waits until it ended.
func stopFromUI(k *cluster, spec JobSpec) JobSpec {
	k.t.Helper()
	if _, err := k.c.StopWithSavepoint(context.Background(), k.st.JobID, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()}); err != nil {
		k.t.Fatal(err)
	}
	for range 100 {
		if k.job().State == flinkapi.JobFinished {
			return spec
		}
		k.srv.Clock().Advance(100 * time.Millisecond)
	}
	k.t.Fatalf("the job did not stop: %+v", k.job())
	return spec
}

// TestStableOfAnEarlierRelease: a status an earlier release wrote (Stable
// without StableJobID) keeps its running job converged, the stability
// counted as that job's; a restart's new job earns it again.
func TestStableOfAnEarlierRelease(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	k.run(spec, 3*time.Second)
	old := k.st.JobID
	k.st.StableJobID = "" // as an earlier release wrote it
	if !k.st.Converged(spec) {
		t.Fatalf("a status of an earlier release is not converged: %+v", k.st)
	}
	for range 3 {
		k.srv.Clock().Advance(k.reconcileOnce(spec).RequeueAfter)
		if !k.st.Converged(spec) || k.st.JobID != old {
			t.Fatalf("a status of an earlier release, after a call: converged %v, job %s (was %s): %s: %s", k.st.Converged(spec), k.st.JobID, old,
				k.st.Reason, k.st.Message)
		}
	}
	if err := k.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.convergesOnceEarned("restart of a status of an earlier release", spec, old, true)
}

// TestBlockedEndLeavesNothingInFlight: an action that ends Blocked (here
// refused by its preflight: Flink cannot build the new job's plan)
// leaves a status that says what is true: no action in flight, not the
// action's own state (Updating, Deploying), the job as it was; and a
// first deploy's message does not speak of an old job left running.
func TestBlockedEndLeavesNothingInFlight(t *testing.T) {
	t.Run("upgrade", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out")
		k.settle("create", spec)
		old := k.st.JobID
		spec.Job.Args = append(spec.Job.Args, "--bogus", "1")
		k.until("the upgrade refused", spec, 100, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
		st := &k.st
		if st.Progress.Outcome != OutcomeBlocked {
			t.Fatalf("the upgrade ended %s (%s); the test needs Blocked", st.Progress.Outcome, st.Progress.Reason)
		}
		if st.InFlight() || st.Situation == SituationInFlight || st.State != policy.Running || st.JobID != old ||
			k.job().State != flinkapi.JobRunning {
			t.Errorf("after the blocked upgrade: in flight %v, situation %s, state %s (%s: %s), job %s (was %s) %s; want the old job Running",
				st.InFlight(), st.Situation, st.State, st.Reason, st.Message, st.JobID, old, k.job().State)
		}
		if st.Situation != SituationRunning {
			t.Errorf("situation %q after the blocked upgrade, want Running", st.Situation)
		}
	})
	t.Run("first deploy", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out", "--bogus", "1")
		k.until("the deploy refused", spec, 100, func(st *JobStatus) bool { return st.Action == ActionDeploy && st.Progress.Done() })
		st := &k.st
		if st.Progress.Outcome != OutcomeBlocked {
			t.Fatalf("the deploy ended %s (%s); the test needs Blocked", st.Progress.Outcome, st.Progress.Reason)
		}
		if st.InFlight() || st.Situation == SituationInFlight || st.State == policy.Deploying || len(k.live()) != 0 {
			t.Errorf("after the blocked deploy: in flight %v, situation %s, state %s, live jobs %v", st.InFlight(), st.Situation, st.State, k.live())
		}
		for _, msg := range []string{st.Message, st.Progress.Reason} {
			if strings.Contains(msg, "old job") || strings.Contains(msg, "left running") {
				t.Errorf("a first deploy's status speaks of an old job: %q", msg)
			}
		}
	})
}

// TestVerdictOfEverySituation: for every situation of the model, spec
// change, update mode and restart policy, the plan has exactly one
// verdict of the closed set, the status that records it has one against
// the same spec, Done holds exactly when the status converges (or a
// periodic savepoint runs beside a converged job), an action started or
// stepped is Progressing, and the situations whose verdict the model
// fixes have it.
func TestVerdictOfEverySituation(t *testing.T) {
	c := &Controller{}
	restarts := map[string]policy.RestartPolicy{
		"restart": {Mode: policy.RestartFromLatestState},
		"never":   {Mode: policy.RestartNever},
	}
	n := 0
	for sit, pc := range planCases() {
		for name, change := range specChanges {
			for _, mode := range planModes {
				for rname, rp := range restarts {
					spec := planSpec(mode)
					spec.Restart = rp
					change(&spec)
					p := c.PlanFor(spec, pc.st, pc.obs, planNow)
					v := c.planVerdict(spec, &pc.st, pc.obs, planNow, p)
					where := fmt.Sprintf("%s / %s / %s / %s: %s", sit, name, mode, rname, p)
					n++
					if !slices.Contains(Verdicts, v) {
						t.Errorf("%s: verdict %q is none of %v", where, v, Verdicts)
					}
					if (p.InFlight && !actions[p.Action].background || p.Action != "" && !p.Settled) && v != VerdictProgressing {
						t.Errorf("%s: an action started or stepped, verdict %s", where, v)
					}
					st := *pc.st.DeepCopy()
					st.Situation, st.Settled, st.Verdict, st.State, st.Reason = p.Situation, p.Settled, v, p.State, p.Reason
					got := st.VerdictFor(spec)
					if !slices.Contains(Verdicts, got) {
						t.Errorf("%s: VerdictFor %q is none of %v", where, got, Verdicts)
					}
					if (got == VerdictDone) != st.Converged(spec) && !(st.InFlight() && actions[st.Action].background) {
						t.Errorf("%s: VerdictFor %s, Converged %v", where, got, st.Converged(spec))
					}
				}
			}
		}
	}
	t.Logf("%d plans judged", n)

	cases := planCases()
	for _, tc := range []struct {
		sit     Situation
		change  string
		restart string
		want    Verdict
	}{
		{SituationNeverDeployed, "none", "restart", VerdictProgressing},
		{SituationNeverDeployed, "suspend", "restart", VerdictDone},
		{SituationDeleted, "none", "restart", VerdictProgressing},
		{SituationSuspended, "suspend", "restart", VerdictDone},
		{SituationInFlight, "none", "restart", VerdictProgressing},
		{SituationUnreachable, "none", "restart", VerdictWaiting},
		{SituationRunning, "none", "restart", VerdictDone},
		{SituationRunning, "new job", "restart", VerdictProgressing},
		{SituationStarting, "none", "restart", VerdictProgressing},
		{SituationRestarting, "none", "restart", VerdictProgressing},
		{SituationStoppedExternally, "none", "restart", VerdictProgressing},
		{SituationStoppedExternally, "suspend", "restart", VerdictDone},
		{SituationFinished, "none", "restart", VerdictDone},
		{SituationFinishUnconfirmed, "none", "restart", VerdictProgressing},
		{SituationFailed, "none", "restart", VerdictProgressing},
		{SituationFailed, "none", "never", VerdictFailed},
		{SituationLost, "none", "never", VerdictFailed},
		{SituationCancelled, "none", "never", VerdictFailed},
	} {
		spec := planSpec(policy.UpgradeSavepoint)
		spec.Restart = restarts[tc.restart]
		specChanges[tc.change](&spec)
		pc := cases[tc.sit]
		p := c.PlanFor(spec, pc.st, pc.obs, planNow)
		if v := c.planVerdict(spec, &pc.st, pc.obs, planNow, p); v != tc.want {
			t.Errorf("%s / %s / %s: verdict %s, want %s (%s)", tc.sit, tc.change, tc.restart, v, tc.want, p)
		}
	}
}

// TestVerdictOfEveryOutcome: an action of every kind that ended with
// every outcome, for the same spec, has exactly one verdict: that of the
// ended action (Blocked for one refused with the job left as it was,
// Failed for the others) until the Controller tries it again, none of
// them for one that succeeded and for the savepoints and disposals
// beside the running job; a new spec is Progressing at once; the
// status of a finished Delete is Deleted; an invalid spec is Invalid.
func TestVerdictOfEveryOutcome(t *testing.T) {
	base := planCases()[SituationRunning].st
	spec := planSpec(policy.UpgradeSavepoint)
	for a := range actions {
		for o := range knownOutcomes {
			if o == "" {
				continue
			}
			st := *base.DeepCopy()
			st.Action, st.Target = a, planJob
			st.Progress = Progress{Phase: PhaseDone, Outcome: o}
			st.Situation, st.Verdict = SituationRunning, VerdictProgressing
			if a == ActionTeardown && (o == OutcomeSucceeded || st.Progress.Stopped()) {
				if v := st.VerdictFor(spec); v != VerdictDeleted {
					t.Errorf("%s %s: verdict %s, want Deleted", a, o, v)
				}
				continue
			}
			v := st.VerdictFor(spec)
			want := VerdictProgressing
			switch {
			case o == OutcomeSucceeded || o == OutcomeNotNeeded || actions[a].background || a == ActionAutoscale || a == ActionAdopt:
			case a == ActionSuspend:
				// A suspend is retried for a spec that suspends; this one runs.
			case refusal(o):
				want = VerdictBlocked
			default:
				want = VerdictFailed
			}
			if v != want {
				t.Errorf("%s ended %s: verdict %s, want %s", a, o, v, want)
			}
			if (want == VerdictFailed || want == VerdictBlocked) && a != ActionTeardown { // a Delete's is retried whatever the spec
				if !st.RetryPending(spec) {
					t.Errorf("%s ended %s: no retry pending", a, o)
				}
				next := spec
				next.Job.Args = append(slices.Clone(spec.Job.Args), "--v3")
				if v := st.VerdictFor(next); v != VerdictProgressing {
					t.Errorf("%s ended %s: verdict %s for a new spec, want Progressing", a, o, v)
				}
			}
		}
	}
	bad := spec
	bad.Job.Parallelism = -1
	if st := base; st.VerdictFor(bad) != VerdictInvalid {
		t.Errorf("an invalid spec's verdict is %s", st.VerdictFor(bad))
	}
}

// TestConvergeEndsOnTheVerdict: Converge follows the status's verdict.
// A job that failed and that the restart policy does not start again is
// Failed at rest: Converge ends with a *VerdictError (it used to wait
// for ever); Converge called again after an action that failed waits
// for the retry (RetryPending) instead of failing at once.
func TestConvergeEndsOnTheVerdict(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Restart = policy.RestartPolicy{Mode: policy.RestartNever}
	save := func(*JobStatus) error { return nil }
	if err := k.controller().Converge(context.Background(), spec, &k.st, save); err != nil {
		t.Fatal(err)
	}
	if err := k.srv.FailJob(k.st.JobID, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(10 * time.Second) // past Flink's cache of the job's details
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := k.controller().Converge(ctx, spec, &k.st, save)
	var ve *VerdictError
	if !errors.As(err, &ve) || !errors.Is(err, ErrNotCarriedOut) || ve.Verdict != VerdictFailed || ve.Situation != SituationFailed {
		t.Fatalf("Converge of a failed job the policy does not restart = %v, want a *VerdictError Failed", err)
	}
	if v := k.st.VerdictFor(spec); v != VerdictFailed || k.st.Verdict != VerdictFailed {
		t.Errorf("verdict %s (stored %s), want Failed", v, k.st.Verdict)
	}

	// An upgrade refused by its preflight: the call in which it ends
	// returns an *ActionError, Blocked; called again, Converge waits
	// for the retry and ends with the same refusal once it is retried.
	k2 := newCluster(t, false)
	spec2 := k2.spec("/out")
	if err := k2.controller().Converge(context.Background(), spec2, &k2.st, save); err != nil {
		t.Fatal(err)
	}
	spec2.Job.Args = append(slices.Clone(spec2.Job.Args), "--bogus", "1")
	var ae *ActionError
	if err := k2.controller().Converge(ctx, spec2, &k2.st, save); !errors.As(err, &ae) || ae.Verdict != VerdictBlocked || ae.Outcome != OutcomeBlocked {
		t.Fatalf("Converge of a refused upgrade = %v, want an *ActionError Blocked", err)
	}
	if !k2.st.RetryPending(spec2) || k2.st.VerdictFor(spec2) != VerdictBlocked {
		t.Fatalf("after the refusal: retry pending %v, verdict %s", k2.st.RetryPending(spec2), k2.st.VerdictFor(spec2))
	}
	started := k2.st.Progress.Started
	if err := k2.controller().Converge(ctx, spec2, &k2.st, save); !errors.As(err, &ae) || !k2.st.Progress.Started.After(started) {
		t.Fatalf("Converge called again = %v (started %v, was %v), want the retried upgrade's *ActionError", err, k2.st.Progress.Started, started)
	}
}

// TestPlanNeverSettlesUnearnedStability: over every situation, spec
// change and update mode, a status whose current job did not earn its
// stability (another job did: a restart, a redeploy, a revert) is never
// planned settled, nor judged Done, unless the observation shows the job
// stable now (all its tasks running, a checkpoint completed after its
// start); and the same status whose job earned it is settled at rest.
func TestPlanNeverSettlesUnearnedStability(t *testing.T) {
	c := &Controller{}
	n := 0
	for sit, pc := range planCases() {
		for name, change := range specChanges {
			for _, mode := range planModes {
				spec := planSpec(mode)
				change(&spec)
				st := *pc.st.DeepCopy()
				if st.JobID == "" {
					continue
				}
				st.StableJobID = "fedcba9876543210fedcba9876543210" // the job before
				obs := pc.obs
				if obs.Job != nil && obs.Job.State == flinkapi.JobRunning {
					// Its tasks are still being deployed.
					d := *obs.Job
					d.Vertices = []flinkapi.JobVertex{{ID: "v1", Parallelism: 2, Status: "CREATED", Tasks: flinkapi.TaskCounts{Created: 2, Total: 2}}}
					obs.Job = &d
				}
				p := c.PlanFor(spec, st, obs, planNow)
				n++
				where := fmt.Sprintf("%s / %s / %s: %s", sit, name, mode, p)
				if p.Settled {
					t.Errorf("%s: settled while the job has not earned its stability", where)
				}
				if v := c.planVerdict(spec, &st, obs, planNow, p); v == VerdictDone && spec.State != DesiredSuspended && sit != SituationFinished {
					t.Errorf("%s: verdict Done while the job has not earned its stability", where)
				}
			}
		}
	}
	pc := planCases()[SituationRunning]
	earned := *pc.st.DeepCopy()
	earned.StableJobID = earned.JobID
	unearned := *pc.st.DeepCopy()
	unearned.StableJobID = "fedcba9876543210fedcba9876543210"
	spec := planSpec(policy.UpgradeSavepoint)
	if p := c.PlanFor(spec, earned, pc.obs, planNow); !p.Settled || p.Reason != ReasonRunning {
		t.Errorf("a job that earned its stability: %s", p)
	}
	if p := c.PlanFor(spec, unearned, pc.obs, planNow); !p.Settled {
		t.Errorf("a job seen stable now (tasks running, a checkpoint since its start) is not settled: %s", p)
	}
	t.Logf("%d plans checked", n)
}

// TestConvergeStepsABackgroundSavepointFirst: a periodic savepoint in
// flight beside a job that ran the spec stably is Done for a reader of
// the status, but the job is not read while it runs. A job that failed
// meanwhile is restarted by Converge, which returns only once the status
// is converged again (it returned at once with the job FAILED before).
func TestConvergeStepsABackgroundSavepointFirst(t *testing.T) {
	k := newCluster(t, false, flinktest.WithSavepointDuration(30*time.Second))
	spec := k.spec("/out")
	spec.Savepoints.Interval = policy.Duration(time.Minute)
	save := func(*JobStatus) error { return nil }
	if err := k.controller().Converge(context.Background(), spec, &k.st, save); err != nil {
		t.Fatal(err)
	}
	failed := k.st.JobID
	for i := 0; i < 100 && !(k.st.InFlight() && k.st.Action == ActionSavepoint); i++ {
		k.call(spec, false)
	}
	if !k.st.InFlight() || k.st.Action != ActionSavepoint {
		t.Fatalf("no periodic savepoint in flight: %s %s", k.st.Action, k.st.Situation)
	}
	if v := k.st.VerdictFor(spec); v != VerdictDone {
		t.Fatalf("verdict with a periodic savepoint in flight = %s, want Done", v)
	}
	if err := k.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	k.srv.Clock().Advance(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := k.controller().Converge(ctx, spec, &k.st, save); err != nil {
		t.Fatal(err)
	}
	if k.st.JobID == failed || !k.st.Converged(spec) {
		t.Fatalf("Converge returned with job %s (the failed one: %v), converged %v, situation %s", k.st.JobID, k.st.JobID == failed, k.st.Converged(spec), k.st.Situation)
	}
}
