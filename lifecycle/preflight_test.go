package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

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

	// The counter holds state in the job's newest checkpoint: the verdict
	// names it with its size.
	pf := p.Replace.Preflight
	if !pf.StateRead || !pf.State.Known || pf.State.CheckpointID < 1 || len(pf.Verdict.Dropped) != 1 ||
		pf.Verdict.Dropped[0].ID != "0e3160945c69999b81da5f032a648b30" || !pf.Verdict.Dropped[0].SizeKnown || pf.Verdict.Dropped[0].Bytes <= 0 ||
		pf.Verdict.Dropped[0].Bytes != pf.State.Bytes[pf.Verdict.Dropped[0].ID] {
		t.Errorf("the state read %+v; dropped %+v", pf.State, pf.Verdict.Dropped)
	}

	spec.Update.AllowNonRestoredState = true
	k.until("upgraded", spec, 400, func(st *JobStatus) bool { return st.JobID != old && st.Converged(spec) })
	v := k.st.Progress.Replace.Preflight
	if v == nil || v.Verdict == nil || !v.Verdict.Allowed() {
		t.Fatalf("with AllowNonRestoredState the preflight: %+v", v)
	}
	if len(v.Verdict.Dropped) != 1 || v.Verdict.DroppedBytes() <= 0 || !strings.Contains(v.Verdict.Message(), "is dropped (allowNonRestoredState)") {
		t.Errorf("with AllowNonRestoredState the verdict does not say which state is dropped: %+v", v.Verdict)
	}
	if sum := preflightSummary(v); !strings.Contains(sum, "preflight passed") || !strings.Contains(sum, "KiB of state: allowNonRestoredState") {
		t.Errorf("the summary does not say how much state is dropped: %s", sum)
	}
}

// TestPreflightStatelessVertexRemoved: an upgrade whose new plan lacks a
// vertex of the old job that holds no state in the job's newest
// checkpoint goes ahead without AllowNonRestoredState, as Flink starts
// the new job without that state; the verdict says so and lists the
// vertex with no bytes.
func TestPreflightStatelessVertexRemoved(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	old := k.st.JobID
	const counter = "0e3160945c69999b81da5f032a648b30"
	if err := k.srv.SetVertexStateSize(old, counter, 0); err != nil {
		t.Fatal(err)
	}
	// A checkpoint with the counter empty completes.
	first := int64(0)
	for i := 0; i < 30; i++ {
		k.srv.Clock().Advance(time.Second)
		cs, err := k.c.Checkpoints(context.Background(), old)
		if err != nil {
			t.Fatal(err)
		}
		if first == 0 && cs.LatestCompleted != nil {
			first = cs.LatestCompleted.ID
		} else if cs.LatestCompleted != nil && cs.LatestCompleted.ID > first {
			break
		}
	}
	spec.Job.Args = append(spec.Job.Args, "--uid-suffix", "-renamed")
	ahead, err := k.controller().Plan(context.Background(), spec, k.st)
	if err != nil || ahead.Action != ActionUpgrade || ahead.Preflight == nil || ahead.Preflight.Verdict == nil || !ahead.Preflight.Verdict.Allowed() ||
		!ahead.Preflight.Verdict.Has(policy.PreflightStatelessVertexRemoved) || ahead.Verdict == VerdictBlocked {
		t.Fatalf("plan ahead: %v (%v); preflight %+v", ahead, err, ahead.Preflight)
	}
	k.until("upgraded", spec, 400, func(st *JobStatus) bool { return st.JobID != old && st.Converged(spec) })
	v := k.st.Progress.Replace.Preflight
	if v == nil || v.Verdict == nil || !v.Verdict.Allowed() || !v.Verdict.Has(policy.PreflightStatelessVertexRemoved) || v.Verdict.Has(policy.PreflightStateNotRestored) {
		t.Fatalf("preflight %+v", v)
	}
	if d := v.Verdict.Dropped; len(d) != 1 || d[0].ID != counter || !d[0].SizeKnown || d[0].Bytes != 0 {
		t.Errorf("dropped %+v", d)
	}
	if k.st.Progress.Outcome != OutcomeSucceeded {
		t.Errorf("upgrade ended %s: %s", k.st.Progress.Outcome, k.st.Progress.Reason)
	}
}

// TestPreflightStateUnknown: a job that takes no checkpoints has no
// snapshot to show what state its vertices hold: an upgrade whose new
// plan lacks one of them is refused as before, saying why.
func TestPreflightStateUnknown(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Args[len(spec.Job.Args)-1] = "0" // --checkpoint-interval 0
	k.settle("create", spec)
	old := k.st.JobID
	spec.Job.Args = append(spec.Job.Args, "--uid-suffix", "-renamed")
	k.until("refused", spec, 50, func(st *JobStatus) bool { return st.Action != ActionDeploy && st.Progress.Done() })
	p := k.st.Progress
	if p.Outcome != OutcomeBlocked || p.Replace.Preflight == nil || p.Replace.Preflight.Verdict == nil || !p.Replace.Preflight.Verdict.Has(policy.PreflightStateUnknown) ||
		p.Replace.Preflight.State.Unknown != policy.StateNoSnapshot || !strings.Contains(p.Reason, "no completed checkpoint or savepoint") || k.st.JobID != old {
		t.Fatalf("upgrade ended %s: %s; preflight %+v", p.Outcome, p.Reason, p.Replace.Preflight)
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
