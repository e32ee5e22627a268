package lifecycle

import (
	"context"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// TestPreflightRefusesLostState: an upgrade to a job whose counter has a
// new uid (its state would not be restored) is refused by the preflight
// before anything is stopped: the old job runs on, no savepoint is
// taken, the status and the plan say why; with AllowNonRestoredState the
// same upgrade goes ahead.
func TestPreflightRefusesLostState(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	old := k.st.JobID
	before := len(k.srv.Requests())
	spec.Job.Args = append(spec.Job.Args, "--uid-suffix", "-renamed")
	// The plan, before anything is done, already says so: the jar is the
	// one uploaded for the job, so Flink plans the new job from it.
	ahead, err := k.controller().Plan(context.Background(), spec, k.st)
	if err != nil || ahead.Action != ActionUpgrade || ahead.Preflight == nil || ahead.Preflight.Verdict == nil ||
		ahead.Preflight.Verdict.Allowed() || !strings.Contains(ahead.Blocked, "counter") || !strings.Contains(ahead.String(), "blocked: preflight") ||
		ahead.Verdict != VerdictBlocked {
		t.Fatalf("plan ahead: %v (%v)", ahead, err)
	}
	for _, r := range k.srv.Requests()[before:] {
		if r.Method != "GET" && r.Route != "POST /jars/:jarid/plan" {
			t.Errorf("Plan sent %s", r.Route)
		}
	}
	k.until("refused", spec, 50, func(st *JobStatus) bool { return st.Action != ActionDeploy && st.Progress.Done() })
	p := k.st.Progress
	if p.Outcome != OutcomeBlocked || p.Replace.Decision != policy.ReasonPreflightRefused || p.Replace.Preflight == nil || p.Replace.Preflight.Verdict == nil ||
		!p.Replace.Preflight.Verdict.Has(policy.PreflightStateNotRestored) || !strings.Contains(p.Reason, "counter") {
		t.Fatalf("upgrade ended %s (%s): %s; preflight %+v", p.Outcome, p.Replace.Decision, p.Reason, p.Replace.Preflight)
	}
	if k.st.JobID != old || k.job().State != flinkapi.JobRunning || len(k.live()) != 1 {
		t.Fatalf("the old job %s is %s; status names %s; live %v", old, k.job().State, k.st.JobID, k.live())
	}
	for _, r := range k.srv.Requests()[before:] {
		if r.Route == "POST /jobs/:jobid/stop" || r.Route == "POST /jobs/:jobid/savepoints" || r.Route == "PATCH /jobs/:jobid" || r.Route == "POST /jars/:jarid/run" {
			t.Errorf("the refused upgrade sent %s", r.Route)
		}
	}
	plan, err := k.controller().Plan(context.Background(), spec, k.st)
	if err != nil || plan.Blocked == "" || !strings.Contains(plan.Blocked, "counter") {
		t.Errorf("plan %v (%v): want it blocked, naming the vertex", plan, err)
	}

	spec.Update.AllowNonRestoredState = true
	k.until("upgraded", spec, 400, func(st *JobStatus) bool { return st.JobID != old && st.Converged(spec) })
	if v := k.st.Progress.Replace.Preflight; v == nil || v.Verdict == nil || !v.Verdict.Allowed() {
		t.Errorf("with AllowNonRestoredState the preflight: %+v", v)
	}
}

// TestPreflightRefusesTooFewSlots: a rescale beyond what the cluster's
// free slots and the old job's own can hold is refused before the old job
// is touched; within them it goes ahead.
func TestPreflightRefusesTooFewSlots(t *testing.T) {
	k := newCluster(t, true) // 4 slots
	spec := k.spec("/out")
	spec.Job.Parallelism = 2
	k.settle("create", spec)
	old := k.st.JobID
	spec.Job.Parallelism = 6
	k.until("refused", spec, 50, func(st *JobStatus) bool { return st.Action != ActionDeploy && st.Progress.Done() })
	p := k.st.Progress
	if p.Outcome != OutcomeBlocked || p.Replace.Preflight == nil || p.Replace.Preflight.Verdict == nil || !p.Replace.Preflight.Verdict.Has(policy.PreflightNotEnoughSlots) ||
		!strings.Contains(p.Reason, "6 task slots") || k.st.JobID != old || k.job().State != flinkapi.JobRunning {
		t.Fatalf("rescale to 6 ended %s: %s; job %s %s", p.Outcome, p.Reason, k.st.JobID, k.job().State)
	}
	spec.Job.Parallelism = 4 // 2 free and the 2 the job holds
	k.until("rescaled", spec, 400, func(st *JobStatus) bool { return st.Converged(spec) })
	if k.st.JobID == old && k.st.Progress.Rescale.Path != policy.RescaleByUpgrade {
		t.Logf("rescaled in place")
	}
}
