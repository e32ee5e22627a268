package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/policy"
)

// TestAdoptPlanPreflight: the plan of an adoption whose spec's job has
// another plan than the adopted job (a renamed uid) compares the two as
// for an upgrade, and says the upgrade after the adoption would lose the
// state the job's newest checkpoint holds, without blocking the
// adoption; with the same plan, or no upload of the spec's jar, it
// compares nothing. The plan sends no request that changes anything.
func TestAdoptPlanPreflight(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	jars := k.srv.JarIDs()
	if len(jars) != 1 {
		t.Fatalf("jars %v", jars)
	}
	ctx := context.Background()
	adopting := func(extra ...string) JobSpec {
		s := k.spec("/out", extra...)
		s.Job.JarFile, s.Job.JarID, s.Adopt = "", jars[0], userJob
		return s
	}

	renamed := adopting("--uid-suffix", "-renamed")
	plan, err := k.controller().Plan(ctx, renamed, k.st)
	if err != nil {
		t.Fatal(err)
	}
	pf := plan.Preflight
	if plan.Action != ActionAdopt || plan.Blocked != "" || plan.Verdict == VerdictBlocked || pf == nil || pf.Verdict == nil {
		t.Fatalf("plan %v (verdict %s), preflight %+v; want an adoption with a preflight", plan, plan.Verdict, pf)
	}
	if pf.Verdict.Allowed() || !pf.Verdict.Has(policy.PreflightStateNotRestored) || !pf.OldRead || !pf.NewRead || !pf.StateRead || !pf.State.Known ||
		len(pf.Verdict.Dropped) != 1 || pf.Verdict.DroppedBytes() <= 0 || pf.Held < 1 || !pf.SlotsRead {
		t.Fatalf("preflight %+v, verdict %+v; want the state of the renamed vertex lost", pf, pf.Verdict)
	}
	if s := plan.String(); !strings.Contains(s, "start Adopt") || !strings.Contains(s, "an upgrade of the adopted job to the spec's: preflight refused") ||
		!strings.Contains(s, "another plan than job "+string(userJob)) {
		t.Errorf("plan text %q", s)
	}
	if ch := k.changing(); len(ch) != 1 || ch[0] != "POST /jars/"+string(jars[0])+"/plan" {
		t.Errorf("Plan sent %v", ch)
	}

	allowed := renamed
	allowed.Update.AllowNonRestoredState = true
	if plan, err = k.controller().Plan(ctx, allowed, k.st); err != nil || plan.Preflight == nil || plan.Preflight.Verdict == nil ||
		!plan.Preflight.Verdict.Allowed() || plan.Preflight.Verdict.DroppedBytes() <= 0 || !strings.Contains(plan.String(), "preflight passed") {
		t.Errorf("allowing non-restored state: plan %v, %v", plan, err)
	}

	if plan, err = k.controller().Plan(ctx, adopting(), k.st); err != nil || plan.Action != ActionAdopt || plan.Preflight != nil {
		t.Errorf("the same plan: %v, preflight %+v, %v; want no comparison", plan, plan.Preflight, err)
	}
	byFile := k.spec("/out", "--uid-suffix", "-renamed")
	byFile.Adopt = userJob
	if plan, err = k.controller().Plan(ctx, byFile, k.st); err != nil || plan.Action != ActionAdopt || plan.Preflight == nil ||
		plan.Preflight.Skipped != PreflightSkipNotUploaded {
		t.Errorf("a jar file not uploaded: %v, preflight %+v, %v", plan, plan.Preflight, err)
	}
	// The adoption itself goes ahead.
	k.call(renamed, false)
	if k.st.Action != ActionAdopt || k.st.JobID != userJob || k.st.Progress.Outcome != OutcomeSucceeded {
		t.Errorf("after the adoption: %s %s of job %s", k.st.Action, k.st.Progress.Outcome, k.st.JobID)
	}
}
