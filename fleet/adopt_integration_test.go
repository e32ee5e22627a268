//go:build integration

package fleet

import (
	"context"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealAdoptByName starts a job through the REST API of a real
// cluster, as a user does from the Flink UI or a script, and finds it
// among the jobs no deployment claims with the arguments it was started
// with (the test job keeps them as global job parameters). A deployment
// that names it (AdoptName) adopts it: it runs on as the same job, it is
// no longer unclaimed, and removing the deployment stops it.
func TestRealAdoptByName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 3})
	c, err := flinkapi.NewClient(cl.URL)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(cl.TestJobJar)
	if err != nil {
		t.Fatal(err)
	}
	jar, err := c.UploadJarReader(ctx, "adopt-by-name.jar", f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeleteJar(context.Background(), jar)
	name := "fleet-adopt-" + string(flinkapi.NewJobID())[:8]
	args := []string{"--out", cl.OutDir(name), "--keys", "2", "--rate", "20", "--checkpoint-interval", "500", "--name", name}
	byHand, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{EntryClass: cl.TestJobClass, ProgramArgs: args, JobID: flinkapi.NewJobID()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CancelJob(context.Background(), byHand)

	jars, err := lifecycle.JarDir("/")
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Store: store, Clusters: map[string]lifecycle.Env{"shared": {Client: c, Jars: jars, Timing: lifecycle.Timing{Poll: 200 * time.Millisecond}}},
		Controller: lifecycle.Controller{PollInterval: time.Second, RetryInterval: 5 * time.Second}, Housekeeping: Housekeeping{Off: true}}

	var found *UnclaimedJob
	for found == nil {
		unclaimed, err := r.Unclaimed(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range unclaimed {
			if u.ID == byHand && u.State == flinkapi.JobRunning {
				found = &u
			}
		}
		if found == nil {
			if ctx.Err() != nil {
				t.Fatalf("job %s never listed running among the unclaimed: %+v", byHand, unclaimed)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	want := map[string]string{}
	for i := 0; i+1 < len(args); i += 2 {
		want[args[i][2:]] = args[i+1]
	}
	if found.Name != name || found.Parallelism != 1 || len(found.Vertices) == 0 || !maps.Equal(found.Parameters, want) {
		t.Errorf("unclaimed %+v: want %q, parallelism 1, its vertices and the arguments %v", *found, name, want)
	}

	d := Deployment{Name: name, Cluster: "shared", AdoptName: name, Spec: lifecycle.JobSpec{
		Job:    lifecycle.JobTemplate{JarFile: cl.TestJobJar, EntryClass: cl.TestJobClass, Args: args},
		Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
	}}
	if _, err := r.Sync(ctx, []Deployment{d}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for res := []Result(nil); !allDone(res); time.Sleep(200 * time.Millisecond) {
		if res, err = r.Pass(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("adopting: %v (%v); results: %s", err, ctx.Err(), describeResults(res))
		}
	}
	t.Logf("adopted in %v", time.Since(start).Round(10*time.Millisecond))
	rec, _, err := store.Load(ctx, name)
	if err != nil || rec.Status.JobID != byHand {
		t.Fatalf("the deployment runs %s (%v), want the job started by hand, %s", rec.Status.JobID, err, byHand)
	}
	if st, err := c.JobStatus(ctx, byHand); err != nil || st != flinkapi.JobRunning {
		t.Errorf("the adopted job is %s (%v), want it running on", st, err)
	}
	unclaimed, err := r.Unclaimed(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unclaimed {
		if u.ID == byHand {
			t.Errorf("the adopted job is still listed unclaimed: %+v", u)
		}
	}

	if _, err := r.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for removed := false; !removed; time.Sleep(200 * time.Millisecond) {
		res, err := r.Pass(ctx)
		if err != nil || ctx.Err() != nil {
			t.Fatalf("removing: %v (%v); results: %s", err, ctx.Err(), describeResults(res))
		}
		removed = len(res) == 0 // a removed deployment's result goes once its Delete is done
	}
	for {
		st, err := c.JobStatus(ctx, byHand)
		if err == nil && st.IsGloballyTerminal() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the adopted job is %s (%v) after its deployment was removed", st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
