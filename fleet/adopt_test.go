package fleet

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRunnerAdoptsByNameAndAppliesApplications: jobs started by hand
// are listed as unclaimed and adopted by their Flink job name; an
// application of two deployments (one adopted, one deployed) has one
// verdict and is removed as one; a name that matches no job, or two,
// is an error naming them.
func TestRunnerAdoptsByNameAndAppliesApplications(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	c := f.clients["east"]
	byHand := map[string][]flinkapi.JobID{}
	for _, name := range []string{"legacy-orders", "legacy-stock", "twin", "twin"} {
		id, err := c.RunJar(ctx, f.jars["east"], flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(),
			ProgramArgs: []string{"--out", "/out/" + name, "--rate", "10", "--name", name}})
		if err != nil {
			t.Fatal(err)
		}
		byHand[name] = append(byHand[name], id)
	}
	f.clock.Advance(5 * time.Second) // they run, and checkpoint
	r := f.runner()
	unclaimed, err := r.Unclaimed(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range unclaimed {
		names = append(names, u.Name)
		if u.Parallelism < 1 || len(u.Vertices) == 0 {
			t.Errorf("unclaimed %+v: no parallelism or vertices", u)
		}
		if want := map[string]string{"out": "/out/" + u.Name, "rate": "10", "name": u.Name}; !maps.Equal(u.Parameters, want) {
			t.Errorf("unclaimed %s: parameters %v, want the arguments it was started with %v", u.Name, u.Parameters, want)
		}
	}
	if strings.Join(names, ",") != "legacy-orders,legacy-stock,twin,twin" {
		t.Fatalf("unclaimed: %v", names)
	}

	orders := f.deployment("east", "shop-orders", 10)
	orders.Spec.Job.Args = []string{"--out", "/out/legacy-orders", "--rate", "10", "--name", "legacy-orders"}
	orders.AdoptName, orders.Application = "legacy-orders", "shop"
	payments := f.deployment("east", "shop-payments", 10)
	payments.Application = "shop"
	twin := f.deployment("east", "twin", 10)
	twin.AdoptName = "twin"
	missing := f.deployment("east", "missing", 10)
	missing.AdoptName = "no-such-job"
	desired := []Deployment{orders, payments, twin, missing}

	plan, err := r.Plan(ctx, desired, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Deployments {
		switch d.Name {
		case "shop-orders":
			if d.Plan.Action != lifecycle.ActionAdopt || d.Error != "" {
				t.Errorf("plan of %s: %s (%s)", d.Name, d.Plan, d.Error)
			}
		case "twin", "missing":
			if d.Error == "" {
				t.Errorf("plan of %s: no error", d.Name)
			}
		}
	}

	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "the application done", 300, func([]Result) bool {
		apps := r.Applications()
		return len(apps) == 1 && apps[0].Verdict == lifecycle.VerdictDone
	})
	app := r.Applications()[0]
	if app.Name != "shop" || len(app.Deployments) != 2 {
		t.Fatalf("applications: %+v", r.Applications())
	}
	rec, _, _ := f.store.Load(ctx, "shop-orders")
	if rec.Status.JobID != byHand["legacy-orders"][0] || rec.Adopting != rec.Status.JobID {
		t.Errorf("shop-orders runs %s (adopting %s), want the job started by hand, %s", rec.Status.JobID, rec.Adopting, byHand["legacy-orders"][0])
	}
	for _, res := range r.Results() {
		want := map[string]string{"twin": `adopts the job named "twin", and cluster east runs 2 that no deployment claims`,
			"missing": `adopts the job named "no-such-job", and cluster east runs none`}[res.Name]
		if want != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), want)) {
			t.Errorf("%s: error %v, want one saying %q", res.Name, res.Err, want)
		}
	}
	unclaimed, err = r.Unclaimed(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, u := range unclaimed {
		names = append(names, u.Name)
	}
	if strings.Join(names, ",") != "legacy-stock,twin,twin" {
		t.Errorf("unclaimed after the adoption: %v", names)
	}

	// The application goes from the source: both its deployments go.
	if _, err := r.Sync(ctx, []Deployment{twin, missing}); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "the application removed", 300, func([]Result) bool { return len(r.Applications()) == 0 })
	if j, _ := f.servers["east"].Job(byHand["legacy-orders"][0]); !j.State.IsGloballyTerminal() {
		t.Errorf("the adopted job is %s after its application was removed", j.State)
	}
}

// TestRunnerPlanAdoptionPreflight: the plan of a deployment that adopts
// a job by name, whose jar file would run another plan (a renamed uid),
// preflights the adoption's later upgrade from the adopted job: with
// the jar uploaded for the plan, it says the state of the renamed
// vertex would be lost, without blocking the adoption; without the
// upload it says the preflight was skipped.
func TestRunnerPlanAdoptionPreflight(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	byHand, err := f.clients["east"].RunJar(ctx, f.jars["east"], flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(),
		ProgramArgs: []string{"--out", "/out/legacy", "--rate", "10", "--name", "legacy"}})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Second) // it runs, and checkpoints
	r := f.runner()
	d := f.fileDeployment("east", "legacy", 10)
	d.Spec.Job.Args = []string{"--out", "/out/legacy", "--rate", "10", "--name", "legacy", "--uid-suffix", "-renamed"}
	d.AdoptName = "legacy"

	plan, err := r.Plan(ctx, []Deployment{d}, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dp := plan.Deployments[0]; dp.Error != "" || dp.Plan.Action != lifecycle.ActionAdopt || dp.Plan.Preflight == nil ||
		dp.Plan.Preflight.Skipped != lifecycle.PreflightSkipNotUploaded {
		t.Fatalf("plan without uploads: %s (%s), preflight %+v", dp.Plan, dp.Error, dp.Plan.Preflight)
	}
	plan, err = r.Plan(ctx, []Deployment{d}, PlanOptions{UploadJars: true})
	if err != nil {
		t.Fatal(err)
	}
	dp := plan.Deployments[0]
	pf := dp.Plan.Preflight
	if dp.Error != "" || dp.Plan.Action != lifecycle.ActionAdopt || dp.Plan.Blocked != "" || dp.Plan.Verdict == lifecycle.VerdictBlocked ||
		pf == nil || pf.Verdict == nil || pf.Verdict.Allowed() || !pf.Verdict.Has(policy.PreflightStateNotRestored) || pf.Verdict.DroppedBytes() <= 0 {
		t.Fatalf("plan with the jar uploaded: %s (%s, verdict %s), preflight %+v", dp.Plan, dp.Error, dp.Plan.Verdict, pf)
	}
	if s := plan.String(); !strings.Contains(s, "start Adopt") || !strings.Contains(s, "an upgrade of the adopted job to the spec's: preflight refused") ||
		!strings.Contains(s, string(byHand)) {
		t.Errorf("plan text:\n%s", s)
	}
	if j, _ := f.servers["east"].Job(byHand); j.State != flinkapi.JobRunning {
		t.Errorf("the job started by hand is %s after the plans", j.State)
	}
}

// TestRunnerAdoptionThenChange: a deployment that adopts a job by name
// and whose spec changes before the adoption lands adopts the job as
// running the spec it was added with, then upgrades it to the changed
// spec from the adopted job's state; the adopted job is never recorded
// as running a spec it was not started with.
func TestRunnerAdoptionThenChange(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	args := []string{"--out", "/out/legacy", "--rate", "10", "--name", "legacy"}
	byHand, err := f.clients["east"].RunJar(ctx, f.jars["east"], flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), ProgramArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Second)
	d := f.deployment("east", "orders", 10)
	d.Spec.Job.Args, d.AdoptName = args, "legacy"
	r := f.runner()
	if _, err := r.Sync(ctx, []Deployment{d}); err != nil {
		t.Fatal(err)
	}
	changed := withRate(d, 20)
	if _, err := r.Sync(ctx, []Deployment{changed}); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "the changed spec carried out", 300, func(res []Result) bool {
		rec, _, _ := f.store.Load(ctx, "orders")
		return allDone(res) && rec.Status.JobID != byHand
	})
	rec, _, _ := f.store.Load(ctx, "orders")
	if rec.Adopting != byHand {
		t.Errorf("adopted %s, want the job started by hand, %s", rec.Adopting, byHand)
	}
	j, ok := f.servers["east"].Job(rec.Status.JobID)
	if !ok || j.State != flinkapi.JobRunning || !slices.Equal(j.ProgramArgs, changed.Spec.Job.Args) || j.Initial == "" {
		t.Errorf("job %s runs %v (%s) from %q, want %v from the adopted job's state", rec.Status.JobID, j.ProgramArgs, j.State, j.Initial, changed.Spec.Job.Args)
	}
	if old, _ := f.servers["east"].Job(byHand); !old.State.IsGloballyTerminal() {
		t.Errorf("the adopted job %s is %s after the upgrade", byHand, old.State)
	}
}
