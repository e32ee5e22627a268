package fleet

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
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
