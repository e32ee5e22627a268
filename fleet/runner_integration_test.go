//go:build integration

package fleet

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealRunner runs a fleet of six deployments on two real session
// clusters (the shared one, and one of its own) from a DirStore, with an
// application of three more on its own cluster: they are deployed (the
// application with one verdict, Done only once its three jobs run), two
// are upgraded while the program running the fleet is killed in the
// middle of the upgrades and started again, two and the application are
// removed (its three deployments in one change), and in the end all are
// removed. After every pass no deployment has two live jobs. The
// deployments of a cluster running one jar content share one upload of
// it, and an upload no deployment uses any more is deleted once the
// (short) grace has passed.
func TestRealRunner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	clusters := map[string]*flinkfixture.Cluster{
		"shared": flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 3}),
		"own":    flinkfixture.StartForTest(t, ctx, flinkfixture.Config{Slots: 6}), // three deployments and the application's three
	}
	jars, err := lifecycle.JarDir("/")
	if err != nil {
		t.Fatal(err)
	}
	envs := map[string]lifecycle.Env{}
	clients := map[string]*flinkapi.Client{}
	for name, cl := range clusters {
		c, err := flinkapi.NewClient(cl.URL)
		if err != nil {
			t.Fatal(err)
		}
		clients[name] = c
		envs[name] = lifecycle.Env{Client: c, Jars: jars, Timing: lifecycle.Timing{Poll: 200 * time.Millisecond}}
	}
	store, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	newRunner := func() *Runner {
		return &Runner{Store: store, Clusters: envs, Parallel: 9,
			Controller:   lifecycle.Controller{PollInterval: time.Second, RetryInterval: 5 * time.Second},
			Housekeeping: Housekeeping{Interval: 2 * time.Second, JarGrace: 5 * time.Second}}
	}
	deployment := func(cluster string, i, rate int) Deployment {
		cl := clusters[cluster]
		name := fmt.Sprintf("fleet-%s-%d", cluster, i)
		jar := cl.TestJobJar
		if rate != 20 {
			jar = newJar(t, jar)
		}
		return Deployment{Name: name, Cluster: cluster, Spec: lifecycle.JobSpec{
			Job: lifecycle.JobTemplate{JarFile: jar, EntryClass: cl.TestJobClass,
				Args: []string{"--out", cl.OutDir(name), "--keys", "2", "--rate", fmt.Sprint(rate),
					"--checkpoint-interval", "500", "--name", name}},
			Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint},
		}}
	}
	var desired []Deployment
	for i := range 3 {
		desired = append(desired, deployment("shared", i, 20), deployment("own", i, 20))
	}
	// The application: three deployments on the own cluster, of the same
	// jar, applied, judged and removed as one; light jobs (no
	// checkpoints, few records), done once they run.
	appNames := map[string]bool{}
	for i := range 3 {
		d := deployment("own", i, 20)
		d.Name = fmt.Sprintf("fleet-app-%d", i)
		d.Spec.Job.Args = []string{"--out", clusters["own"].OutDir(d.Name), "--keys", "1", "--rate", "5", "--checkpoint-interval", "0", "--name", d.Name}
		d.Application = "shop"
		desired = append(desired, d)
		appNames[d.Name] = true
	}
	all := len(desired)

	// checkJobs fails the test if a deployment has two live jobs.
	checkJobs := func(where string) {
		t.Helper()
		for name, c := range clients {
			jobs, err := c.JobsOverview(ctx)
			if err != nil {
				t.Logf("%s: jobs of %s: %v", where, name, err)
				continue
			}
			live := map[string]int{}
			for _, j := range jobs {
				if strings.HasPrefix(j.Name, "fleet-") && !j.State.IsGloballyTerminal() {
					live[j.Name]++
					if live[j.Name] > 1 {
						t.Fatalf("%s: %s has %d live jobs on %s", where, j.Name, live[j.Name], name)
					}
				}
			}
		}
	}
	// drive does passes of r until done says so, sleeping until the
	// next deployment is due.
	drive := func(r *Runner, rctx context.Context, what string, limit time.Duration, done func([]Result) bool) []Result {
		t.Helper()
		start := time.Now()
		for {
			res, err := r.Pass(rctx)
			if rctx.Err() != nil {
				return res
			}
			if err != nil {
				t.Fatal(err)
			}
			checkJobs(what)
			if done(res) {
				t.Logf("%s in %v", what, time.Since(start).Round(100*time.Millisecond))
				return res
			}
			if time.Since(start) > limit {
				t.Fatalf("%s: not within %v; results: %s", what, limit, describeResults(res))
			}
			time.Sleep(min(nextWait(res, time.Now()), 500*time.Millisecond))
		}
	}
	r := newRunner()
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	// checkApp fails the test if the application's verdict is not the
	// one its deployments' results make: Done only with all three done.
	checkApp := func(res []Result) {
		t.Helper()
		apps := r.Applications()
		done, n := 0, 0
		for _, x := range res {
			if appNames[x.Name] {
				n++
				if x.Verdict == lifecycle.VerdictDone && x.Err == nil {
					done++
				}
			}
		}
		switch {
		case n == 0 && len(apps) == 0:
		case len(apps) != 1 || apps[0].Name != "shop" || len(apps[0].Deployments) != n:
			t.Fatalf("applications %+v with %d of the application's results", apps, n)
		case (apps[0].Verdict == lifecycle.VerdictDone) != (done == 3):
			t.Fatalf("application verdict %s with %d of its 3 deployments done", apps[0].Verdict, done)
		}
	}
	res := drive(r, ctx, "nine deployed", 3*time.Minute, func(res []Result) bool {
		checkApp(res)
		return len(res) == all && allDone(res)
	})
	if apps := r.Applications(); len(apps) != 1 || apps[0].Verdict != lifecycle.VerdictDone || len(apps[0].Deployments) != 3 || len(res) != all {
		t.Fatalf("applications %+v once all are deployed", apps)
	}
	// jarsOf returns the jars the records of cluster's deployments run.
	jarsOf := func(cluster string) map[flinkapi.JarID]bool {
		t.Helper()
		recs, err := store.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[flinkapi.JarID]bool{}
		for _, rec := range recs {
			if rec.Cluster == cluster {
				out[rec.Status.JarID] = true
			}
		}
		return out
	}
	// listed reports whether cluster lists the jar id, and its name.
	listed := func(cluster string, id flinkapi.JarID) (string, bool) {
		t.Helper()
		list, err := clients[cluster].ListJars(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range list {
			if j.ID == id {
				return j.Name, true
			}
		}
		return "", false
	}
	firstJars := map[string]flinkapi.JarID{}
	for name := range clusters {
		used := jarsOf(name)
		if len(used) != 1 {
			t.Fatalf("%s: the deployments run the jars %v; want one upload shared", name, used)
		}
		for id := range used {
			if jarName, ok := listed(name, id); !ok || !isFleetJar(jarName) {
				t.Fatalf("%s: the shared jar %s is named %q (listed %v)", name, id, jarName, ok)
			}
			firstJars[name] = id
		}
	}

	// Two upgrades; the program dies once both are under way, and a new
	// one carries them out.
	before := map[string]flinkapi.JobID{}
	for _, i := range []int{0, 1} {
		desired[i] = deployment(desired[i].Cluster, 0, 30) // a new jar
		rec, _, _ := store.Load(ctx, desired[i].Name)
		before[desired[i].Name] = rec.Status.JobID
	}
	// The change set's plan: the new jars uploaded for the preflight,
	// planned by Flink, and deleted again.
	plan, err := newRunner().Plan(ctx, desired, PlanOptions{UploadJars: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", plan)
	for _, d := range plan.Deployments {
		_, upgraded := before[d.Name]
		switch {
		case !upgraded && (d.Change != Unchanged || d.Plan.Verdict != lifecycle.VerdictDone):
			t.Errorf("%s: %s, %s; want it unchanged and done", d.Name, d.Change, d.Plan.Verdict)
		case upgraded && (d.Change != Changed || d.Plan.Action != lifecycle.ActionUpgrade || d.Uploaded == "" || d.Plan.Preflight == nil ||
			!d.Plan.Preflight.NewRead || d.Plan.Preflight.Verdict == nil || !d.Plan.Preflight.Verdict.Allowed() || d.Plan.Verdict == lifecycle.VerdictBlocked):
			t.Errorf("%s: %s, %s, uploaded %q, preflight %+v; want an upgrade preflighted by Flink", d.Name, d.Change, d.Plan.Verdict, d.Uploaded, d.Plan.Preflight)
		case upgraded:
			jarList, err := clients[d.Cluster].ListJars(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jarList {
				if j.ID == d.Uploaded {
					t.Errorf("%s: the jar uploaded for the preflight, %s, is still on %s", d.Name, d.Uploaded, d.Cluster)
				}
			}
		}
	}

	dying, kill := context.WithCancel(ctx)
	r = newRunner()
	r.OnResult = func(res Result) {
		for name := range before {
			rec, _, err := store.Load(ctx, name)
			if err != nil || rec.Status.Action != lifecycle.ActionUpgrade || !rec.Status.InFlight() || rec.Status.Progress.Savepoint.Status.TriggerID == "" {
				return
			}
		}
		kill()
	}
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	drive(r, dying, "both upgrades under way", 2*time.Minute, func([]Result) bool { return false })
	if ctx.Err() != nil {
		t.Fatal(ctx.Err())
	}
	r = newRunner()
	drive(r, ctx, "upgraded after the program died", 3*time.Minute, func(res []Result) bool { return len(res) == all && allDone(res) })
	for name, old := range before {
		rec, _, _ := store.Load(ctx, name)
		if rec.Status.JobID == old || rec.Status.UpgradeFrom.Location == "" {
			t.Fatalf("%s: job %s (was %s), upgraded from %q", name, rec.Status.JobID, old, rec.Status.UpgradeFrom.Location)
		}
		cp, err := clients[rec.Cluster].Checkpoints(ctx, rec.Status.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if cp.LatestRestored == nil || strings.TrimSuffix(cp.LatestRestored.ExternalPath, "/") != strings.TrimSuffix(rec.Status.UpgradeFrom.Location, "/") {
			t.Errorf("%s: Flink restored %+v, the upgrade's savepoint is %s", name, cp.LatestRestored, rec.Status.UpgradeFrom.Location)
		}
	}

	newJars := map[string]flinkapi.JarID{}
	for name := range before {
		rec, _, _ := store.Load(ctx, name)
		newJars[rec.Cluster] = rec.Status.JarID
		if rec.Status.JarID == firstJars[rec.Cluster] {
			t.Errorf("%s: runs the first build's upload %s after the upgrade to a new build", name, rec.Status.JarID)
		}
	}

	// Two removals and the application's, then all: the new build's
	// uploads, which only the two removed ran, are deleted once unused for
	// the grace, and the first build's, which the others run, stays until
	// they are gone too.
	// gone waits until no cluster lists the jars of want.
	gone := func(what string, want map[string]flinkapi.JarID) {
		t.Helper()
		drive(r, ctx, what, time.Minute, func([]Result) bool {
			for cluster, id := range want {
				if _, ok := listed(cluster, id); ok {
					return false
				}
			}
			return true
		})
	}
	for i, keep := range [][]Deployment{desired[2:6], nil} {
		cs, err := r.Sync(ctx, keep)
		if err != nil {
			t.Fatal(err)
		}
		left := len(keep)
		drive(r, ctx, fmt.Sprintf("%d removed", len(cs.Removed)), 3*time.Minute, func(res []Result) bool { return len(res) == left && (left == 0 || allDone(res)) })
		for _, name := range cs.Removed {
			if _, ok, err := store.Load(ctx, name); ok || err != nil {
				t.Errorf("%s: record still stored (%v)", name, err)
			}
		}
		if i == 0 {
			removed := 0
			for _, name := range cs.Removed {
				if appNames[name] {
					removed++
				}
			}
			if removed != 3 || len(r.Applications()) != 0 {
				t.Errorf("removed %v in one change, applications %+v after; want the application's three removed together", cs.Removed, r.Applications())
			}
			jobs, err := clients["own"].JobsOverview(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if appNames[j.Name] && !j.State.IsGloballyTerminal() {
					t.Errorf("%s (%s) is %s after its application was removed", j.Name, j.ID, j.State)
				}
			}
			gone("the new build's unused uploads deleted", newJars)
			for cluster, id := range firstJars {
				if _, ok := listed(cluster, id); !ok {
					t.Errorf("%s: the upload %s that two deployments run was deleted", cluster, id)
				}
			}
		} else {
			gone("the first build's unused uploads deleted", firstJars)
		}
	}
	for name, c := range clients {
		jobs, err := c.JobsOverview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if strings.HasPrefix(j.Name, "fleet-") && !j.State.IsGloballyTerminal() {
				t.Errorf("%s: %s (%s) is %s after every deployment was removed", name, j.Name, j.ID, j.State)
			}
		}
	}
}

// newJar copies the jar file into a new file of the test's, with one
// entry more (build.txt), as a new build of the job under another name:
// another content.
func newJar(t *testing.T, jar string) string {
	t.Helper()
	zr, err := zip.OpenReader(jar)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	w, err := zw.Create("build.txt")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(w, "build 2")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "job-v2.jar")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
