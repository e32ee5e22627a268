package fleet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRunnerPlan plans change sets before and after they are applied:
// new deployments (their new jar preflighted only when the plan may
// upload it, and deleted again), unchanged ones, one changed beyond the
// cluster's slots (refused by the preflight), and a removal.
func TestRunnerPlan(t *testing.T) {
	f := newFakeFleet(t, "east")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "counter.jar"), flinktest.MinimalJar(flinktest.CounterJobClass), 0o644); err != nil {
		t.Fatal(err)
	}
	jars, err := lifecycle.JarDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := f.runner()
	env := r.Clusters["east"]
	env.Jars = jars
	r.Clusters["east"] = env
	spec := func(parallelism int) lifecycle.JobSpec {
		return lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarFile: "counter.jar", Parallelism: parallelism, Args: []string{"--out", "/out/x"}},
			Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint}}
	}
	desired := []Deployment{{Name: "a", Cluster: "east", Spec: spec(1)}, {Name: "b", Cluster: "east", Spec: spec(2)}}
	ctx := context.Background()
	jarsBefore := len(f.servers["east"].JarIDs())

	p, err := r.Plan(ctx, desired, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Deployments {
		if d.Change != Added || d.Plan.Action != lifecycle.ActionDeploy || d.Plan.Preflight == nil || d.Plan.Preflight.Skipped != lifecycle.PreflightSkipNotUploaded || d.Uploaded != "" {
			t.Errorf("%s planned without uploads: %+v", d.Name, d)
		}
	}
	p, err = r.Plan(ctx, desired, PlanOptions{UploadJars: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Deployments {
		pf := d.Plan.Preflight
		if d.Change != Added || pf == nil || pf.Skipped != "" || !pf.NewRead || len(pf.New) == 0 || d.Uploaded == "" || d.Error != "" {
			t.Errorf("%s planned with uploads: %+v, preflight %+v", d.Name, d, pf)
		}
		if slices.Contains(f.servers["east"].JarIDs(), d.Uploaded) {
			t.Errorf("%s: the jar uploaded for the preflight, %s, was not deleted", d.Name, d.Uploaded)
		}
	}
	if n := len(f.servers["east"].JarIDs()); n != jarsBefore {
		t.Errorf("%d jars on the cluster after the plan, %d before", n, jarsBefore)
	}
	if !strings.Contains(p.String(), "Added     a on east: Progressing; situation NeverDeployed, start Deploy, preflight passed") || !strings.Contains(p.String(), "for the preflight, and deleted") {
		t.Errorf("plan text:\n%s", p)
	}
	if b, err := json.Marshal(p); err != nil || !strings.Contains(string(b), `"change":"Added"`) {
		t.Errorf("plan JSON %s, %v", b, err)
	}

	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "deployed", 500, allDone)
	desired[1].Spec = spec(500) // beyond the cluster's slots
	p, err = r.Plan(ctx, desired[1:], PlanOptions{UploadJars: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Change{"a": Removed, "b": Changed}
	for _, d := range p.Deployments {
		if d.Change != want[d.Name] || d.Error != "" {
			t.Errorf("%s: %s (%s), want %s", d.Name, d.Change, d.Error, want[d.Name])
		}
	}
	b := p.Deployments[1]
	if b.Plan.Verdict != lifecycle.VerdictBlocked || b.Plan.Preflight == nil || b.Plan.Preflight.Verdict == nil || !b.Plan.Preflight.Verdict.Has(policy.PreflightNotEnoughSlots) {
		t.Errorf("b beyond the slots: verdict %s, preflight %+v, %+v", b.Plan.Verdict, b.Plan.Preflight, b.Plan.Preflight.Verdict)
	}
	if a := p.Deployments[0]; a.Plan.Action == "" {
		t.Errorf("a removed: plan %s", a.Plan)
	}
	p, err = r.Plan(ctx, desired[:1], PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Deployments[0]; d.Name != "a" || d.Change != Unchanged || d.Plan.Verdict != lifecycle.VerdictDone {
		t.Errorf("a unchanged: %+v", d)
	}
}

// TestRunnerPlanUploadHousekept: the jar a Plan uploads for its
// preflight is named by its content as its own (no Controller runs it);
// when its deletion fails, the housekeeping deletes it once unused for
// the grace.
func TestRunnerPlanUploadHousekept(t *testing.T) {
	f := newFakeFleet(t, "east")
	r := f.runner()
	grace, interval := 2*time.Minute, 30*time.Second
	r.Housekeeping = Housekeeping{Interval: interval, JarGrace: grace}
	srv := f.servers["east"]
	if err := srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "DELETE /jars/:jarid", Status: 503}); err != nil {
		t.Fatal(err)
	}
	d := f.fileDeployment("east", "a", 10)
	d.Spec.Update.Mode = policy.UpgradeSavepoint
	p, err := r.Plan(context.Background(), []Deployment{d}, PlanOptions{UploadJars: true})
	if err != nil {
		t.Fatal(err)
	}
	up := p.Deployments[0].Uploaded
	_, name, _ := strings.Cut(string(up), "_")
	if digest, shared := lifecycle.JarNameDigest(name); up == "" || digest == "" || shared || !strings.HasSuffix(name, ".app.jar") {
		t.Fatalf("plan uploaded %q (%+v); want a jar named by its content as the plan's own", up, p.Deployments[0])
	}
	if !slices.Contains(srv.JarIDs(), up) {
		t.Fatalf("the upload %s is gone, its deletion failing", up)
	}
	srv.ClearFaults()
	// No deployment: passes every interval.
	passes := func(d time.Duration) {
		for end := f.clock.Now().Add(d); f.clock.Now().Before(end); f.clock.Advance(interval) {
			if _, err := r.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	passes(grace - interval)
	if !slices.Contains(srv.JarIDs(), up) {
		t.Fatalf("the upload %s was deleted before the grace", up)
	}
	passes(3 * interval)
	if slices.Contains(srv.JarIDs(), up) {
		t.Fatalf("the plan's upload %s stays past the grace: %+v at %v", up, r.ClusterResults(), f.clock.Now())
	}
	if cr := r.ClusterResults(); len(cr) != 1 || cr[0].Err != nil || cr[0].Jars != 0 {
		t.Errorf("cluster results %+v", cr)
	}
}
