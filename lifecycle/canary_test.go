package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// oldUntouched fails t if anything stopped or cancelled the job old, or
// it does not run.
func oldUntouched(t *testing.T, srv *flinktest.Server, old flinkapi.JobID) {
	t.Helper()
	if info, _ := srv.Job(old); info.State != flinkapi.JobRunning {
		t.Fatalf("the old job %s is %s", old, info.State)
	}
	for _, r := range srv.Requests() {
		if (r.Route == "PATCH /jobs/:jobid" || r.Route == "POST /jobs/:jobid/stop") && strings.Contains(r.Path, string(old)) {
			t.Fatalf("the old job was stopped or cancelled: %s %s", r.Method, r.Path)
		}
	}
}

// TestCanary: the operation, with the Progress through JSON after every
// step or not: a compatible new version passes (the canary restored the
// savepoint, was healthy and is cancelled; the old job untouched); one
// that changed the counter's maximum parallelism fails to restore
// (CanaryFailed), the old job untouched. At most two live jobs at any
// step, the savepoint recorded before the canary's submission.
func TestCanary(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want Outcome
	}{
		{"compatible", []string{"--name", "v2"}, OutcomeSucceeded},
		{"same max parallelism set", []string{"--max-parallelism", "128"}, OutcomeSucceeded},
		{"max parallelism changed", []string{"--max-parallelism", "64"}, OutcomeCanaryFailed},
	} {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/resume=%v", tc.name, resume), func(t *testing.T) {
				e := newEnv(t)
				mk := func() Stepper {
					return &Canary{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: blueGreenArgs(tc.args...),
						Preflight: &PreflightPolicy{}}
				}
				check := windowChecker(t, e)
				p, res := driveChecking(t, e, mk, resume, func(p Progress) {
					check(p)
					if info, _ := e.srv.Job(e.job); info.State != flinkapi.JobRunning {
						t.Fatalf("the old job is %s in phase %s", info.State, p.Phase)
					}
				})
				if res.Outcome != tc.want {
					t.Fatalf("outcome %s (want %s): %s", res.Outcome, tc.want, p.Reason)
				}
				checkCanary(t, e, p)
			})
		}
	}
}

// checkCanary checks a Canary that ended: the old job untouched, the
// canary restored the savepoint and ended, the savepoint kept.
func checkCanary(t *testing.T, e *env, p Progress) {
	t.Helper()
	if p.Submit.NewJobID != "" || p.JobID != e.job || p.Savepoint.Location == "" || p.Replace.RestoreFrom != p.Savepoint.Location {
		t.Fatalf("progress %+v", p)
	}
	oldUntouched(t, e.srv, e.job)
	canary, ok := e.srv.Job(canaryJobID(e.job))
	if !ok || canary.RestoredFrom != p.Savepoint.Location {
		t.Fatalf("canary %+v (%v), savepoint %s", canary, ok, p.Savepoint.Location)
	}
	switch p.Outcome {
	case OutcomeSucceeded:
		if canary.State != flinkapi.JobCanceled || p.BlueGreen.Healthy.IsZero() || p.Replace.Preflight == nil || p.Replace.Preflight.Verdict == nil {
			t.Fatalf("canary %s, healthy %v, preflight %+v", canary.State, p.BlueGreen.Healthy, p.Replace.Preflight)
		}
	default:
		if !canary.State.IsGloballyTerminal() || !p.BlueGreen.Healthy.IsZero() || !contains(p.Reason, "Max parallelism mismatch") {
			t.Fatalf("canary %s, healthy %v: %s", canary.State, p.BlueGreen.Healthy, p.Reason)
		}
	}
	if ok, err := e.srv.SavepointExists(p.Savepoint.Location); err != nil || !ok {
		t.Errorf("the savepoint %s the canary restored is gone", p.Savepoint.Location)
	}
}

// TestBlueGreenPreflightRefused: the preflight of BlueGreen and Canary
// refuses, before the savepoint, a new job whose state would be lost
// (another uid) or that needs more free slots than the cluster has beside
// the old job (the slots the old job holds do not count: it runs on); the
// old job untouched, nothing started.
func TestBlueGreenPreflightRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"uid changed", []string{"--uid-suffix", "-v2"}},
		{"slots", []string{"--parallelism", "2"}},
	} {
		for _, canary := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/canary=%v", tc.name, canary), func(t *testing.T) {
				e := newEnv(t, flinktest.WithSlots(2))
				mk := func() Stepper {
					env := Env{Client: e.c, Clock: e.srv.Clock()}
					if canary {
						return &Canary{Env: env, Job: e.job, JarID: e.jar, Run: blueGreenArgs(tc.args...), Preflight: &PreflightPolicy{}}
					}
					return &BlueGreen{Env: env, Job: e.job, JarID: e.jar, Run: blueGreenArgs(tc.args...), Preflight: &PreflightPolicy{}}
				}
				p, res := drive(t, e, mk, true)
				if res.Outcome != OutcomeBlocked || p.Replace.Decision != policy.ReasonPreflightRefused || p.Replace.Preflight == nil || p.Replace.Preflight.Verdict == nil ||
					p.Replace.Preflight.Verdict.Allowed() {
					t.Fatalf("outcome %s (%s): %s; preflight %+v", res.Outcome, p.Replace.Decision, p.Reason, p.Replace.Preflight)
				}
				if n := count(e.srv, "POST /jobs/:jobid/savepoints") + count(e.srv, "POST /jars/:jarid/run"); n != 0 {
					t.Fatalf("%d savepoints or runs sent: %v", n, routes(e.srv))
				}
				oldUntouched(t, e.srv, e.job)
			})
		}
	}
}

// canaryCall follows a Controller's canary across calls: the canary's
// savepoint, the live jobs at most, and when the old job was first
// stopped or cancelled.
type canaryCall struct {
	most      int
	savepoint string
	canary    flinkapi.JobID
}

func (w *canaryCall) see(t *testing.T, k *cluster, old flinkapi.JobID) {
	t.Helper()
	w.most = max(w.most, len(k.live()))
	st := &k.st
	if st.Action == ActionCanary && st.Progress.Submit.NewJobID != "" {
		w.canary = st.Progress.Submit.NewJobID
	}
	if st.Action == ActionCanary && st.Progress.Savepoint.Location != "" {
		w.savepoint = st.Progress.Savepoint.Location
	}
	if st.CanaryPassed == "" && !k.isLive(old) {
		t.Fatalf("the old job %s stopped before the canary passed: %v", old, k.live())
	}
}

// TestControllerCanary: with BlueGreen.Canary, a compatible change of the
// job runs a canary beside the running job (at most two live jobs at any
// call), cancels it once healthy, then upgrades: the final job restored
// from the upgrade's own savepoint, not the canary's, and its counts go
// on; the canary's savepoint is kept in the status's history. A change
// of the counter's maximum parallelism fails its canary: the old job
// runs on untouched (no stop or cancel sent to it), the status says why
// (CanaryFailed), and the spec is not tried again until it changes.
// Uninterrupted and with the status through JSON after every call.
func TestControllerCanary(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.BlueGreen = BlueGreenPolicy{Enabled: true, Canary: true, Window: policy.Duration(time.Minute)}
			k.settle("create", spec)
			old := k.st.JobID
			k.srv.Clock().Advance(5 * time.Second)
			before := k.job().Events

			spec.Job.Args = append(spec.Job.Args, "--name", "v2")
			canaryPasses(t, k, spec, old, before)
			canaryFails(t, k, spec)
		})
	}
}

// canaryPasses drives a compatible change of k's job to spec through its
// canary and the upgrade, and checks them.
func canaryPasses(t *testing.T, k *cluster, spec JobSpec, old flinkapi.JobID, before int64) {
	t.Helper()
	var w canaryCall
	k.until("canary and upgrade", spec, 400, func(st *JobStatus) bool {
		w.see(t, k, old)
		return st.Action == ActionUpgrade && !st.InFlight() && st.State == policy.Running && st.Deployed.equal(spec.Job)
	})
	if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old || w.most != 2 || len(k.live()) != 1 {
		t.Fatalf("upgrade: %s (%s), job %s (old %s), most live %d, live %v", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, old, w.most, k.live())
	}
	if info, ok := k.srv.Job(w.canary); !ok || info.State != flinkapi.JobCanceled || w.canary == k.st.JobID || info.RestoredFrom != w.savepoint {
		t.Fatalf("canary %s: %+v (%v), its savepoint %s", w.canary, info, ok, w.savepoint)
	}
	if info, _ := k.srv.Job(old); info.State != flinkapi.JobFinished {
		t.Errorf("the old job is %s; the upgrade stops it with a savepoint", info.State)
	}
	k.settle("settled", spec)
	got := k.job()
	if got.RestoredFrom == "" || got.RestoredFrom == w.savepoint || got.RestoredFrom != k.st.UpgradeFrom.Location || got.Events < before {
		t.Fatalf("final job restored from %q (canary's %q, upgrade's %q), events %d < %d", got.RestoredFrom, w.savepoint,
			k.st.UpgradeFrom.Location, got.Events, before)
	}
	if !slices.ContainsFunc(k.st.Savepoints.Records, func(r savepoint.Record) bool { return r.Location == w.savepoint }) {
		t.Errorf("the canary's savepoint %s is not in the history %+v", w.savepoint, k.st.Savepoints)
	}

}

// canaryFails drives a change of the counter's maximum parallelism of
// k's job through its canary, which fails to restore, and checks that
// the job runs on untouched and the spec is not tried again.
func canaryFails(t *testing.T, k *cluster, spec JobSpec) {
	t.Helper()
	running := k.st.JobID
	k.srv.ClearRequests()
	bad := spec
	bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--max-parallelism", "64")
	k.call(bad, false)
	k.until("canary failed", bad, 300, func(st *JobStatus) bool { return st.Action == ActionCanary && st.Progress.Done() })
	p := k.st.Progress
	if p.Outcome != OutcomeCanaryFailed || k.st.JobID != running || p.Submit.NewJobID != "" || !contains(p.Reason, "Max parallelism mismatch") {
		t.Fatalf("canary: %s (%s), job %s (running %s), new %q", p.Outcome, p.Reason, k.st.JobID, running, p.Submit.NewJobID)
	}
	for range 20 {
		k.call(bad, false)
	}
	if k.st.JobID != running || k.st.Reason != ReasonCanaryFailed || len(k.live()) != 1 || !k.isLive(running) ||
		!contains(k.st.Message, "restore canary") {
		t.Errorf("after the canary: job %s (%s: %s), live %v", k.st.JobID, k.st.Reason, k.st.Message, k.live())
	}
	oldUntouched(t, k.srv, running)
	if n := count(k.srv, "POST /jars/:jarid/run"); n != 1 {
		t.Errorf("%d jar runs; the failed spec is not tried again", n)
	}
	if k.maxRequests > MaxRequestsPerCall {
		t.Errorf("a call sent %d requests; the bound is %d", k.maxRequests, MaxRequestsPerCall)
	}
}
