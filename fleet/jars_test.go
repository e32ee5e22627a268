package fleet

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// appJar is a jar of the fake's counting job, its content told apart by
// build.
func appJar(build string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	fmt.Fprintf(w, "Manifest-Version: 1.0\r\nMain-Class: %s\r\n\r\n", flinktest.CounterJobClass)
	w, _ = zw.Create("build.txt")
	fmt.Fprintf(w, "build %s\n", build)
	_ = zw.Close()
	return buf.Bytes()
}

// buildJar writes app.jar anew, of build, as a build tool does.
func (f *fakeFleet) buildJar(build string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.jarDir, "app.jar"), appJar(build), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// fileDeployment is the deployment name on cluster running app.jar, its
// job counting keys with the given rate.
func (f *fakeFleet) fileDeployment(cluster, name string, rate int) Deployment {
	d := f.deployment(cluster, name, rate)
	d.Spec.Job.JarID, d.Spec.Job.JarFile = "", "app.jar"
	return d
}

// fleetJars are the jars of srv that a Runner uploaded.
func fleetJars(srv *flinktest.Server) []flinkapi.JarID {
	var out []flinkapi.JarID
	for _, id := range srv.JarIDs() {
		if _, name, ok := strings.Cut(string(id), "_"); ok && isFleetJar(name) {
			out = append(out, id)
		}
	}
	return out
}

// namedJars are the jars the stored records of the deployments on
// cluster name (whatever the record holds: its job's, its stable
// build's, an action's in flight).
func (f *fakeFleet) namedJars(cluster string) map[flinkapi.JarID]bool {
	f.t.Helper()
	return jarsNamedBy(f.records(), cluster)
}

// records are the stored records, each read once.
func (f *fakeFleet) records() []Record {
	f.t.Helper()
	recs, err := f.store.List(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return recs
}

// jarsNamedBy are the jars named by the records in recs of the
// deployments on cluster.
func jarsNamedBy(recs []Record, cluster string) map[flinkapi.JarID]bool {
	out := map[flinkapi.JarID]bool{}
	for _, rec := range recs {
		if rec.Cluster != cluster {
			continue
		}
		st := &rec.Status
		for _, id := range []flinkapi.JarID{st.JarID, st.Deployed.JarID, st.Stable.JarID, st.Target.JarID, st.Progress.Submit.JarID, st.StableJarID} {
			if id != "" {
				out[id] = true
			}
		}
	}
	return out
}

// checkJarsKept fails t if a jar a stored record names is gone from its
// cluster, or a deployment's last call failed because a jar was. The
// store is read once for the whole check (nothing writes to it while a
// pass is not running).
func (f *fakeFleet) checkJarsKept(t *testing.T, r *Runner, where string) {
	t.Helper()
	recs := f.records()
	for cluster, srv := range f.servers {
		have := srv.JarIDs()
		for id := range jarsNamedBy(recs, cluster) {
			if !slices.Contains(have, id) {
				t.Fatalf("%s: jar %s, which a record on %s names, was deleted", where, id, cluster)
			}
		}
	}
	stored := make(map[string]*Record, len(recs))
	for i := range recs {
		stored[recs[i].Name] = &recs[i]
	}
	for _, res := range r.Results() {
		if res.Err != nil && jarGone(res.Err.Error()) {
			t.Fatalf("%s: %s failed for a jar gone: %v", where, res.Name, res.Err)
		}
		if rec, ok := stored[res.Name]; ok {
			if p := rec.Status.Progress; p.Outcome == lifecycle.OutcomeJarChanged || jarGone(p.LastError) || jarGone(rec.Status.Message) {
				t.Fatalf("%s: %s ran into a jar gone: %s %s", where, res.Name, p.Outcome, p.LastError)
			}
		}
	}
}

// jarGone reports whether msg is Flink's error for a jar it does not
// have.
func jarGone(msg string) bool {
	return strings.Contains(msg, "Jar file") && strings.Contains(msg, "does not exist")
}

// passFor does passes of r for d of the fleet's time.
func (f *fakeFleet) passFor(t *testing.T, r *Runner, d time.Duration, each func()) {
	t.Helper()
	end := f.clock.Now().Add(d)
	for f.clock.Now().Before(end) {
		res, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if each != nil {
			each()
		}
		f.clock.Advance(min(nextWait(res, f.clock.Now()), end.Sub(f.clock.Now())+time.Millisecond))
	}
}

// TestRunnerSharesJars: four deployments of one jar content on each of
// two clusters (one reading it under another name) upload it once per
// cluster; once the jar is rebuilt, the new build is uploaded once per
// cluster and the old upload deleted when no deployment has used it for
// the grace, never a user's own upload; a job no deployment claims is
// reported, never stopped.
func TestRunnerSharesJars(t *testing.T) {
	f := newFakeFleet(t, "east", "west")
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(f.jarDir, "copy.jar"), appJar("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A user's own uploads, which nothing uses.
	mine, err := f.clients["east"].UploadJarReader(ctx, "flinkkit-tools.jar", bytes.NewReader(appJar("mine")))
	if err != nil {
		t.Fatal(err)
	}
	byHand, err := f.clients["west"].RunJar(ctx, f.jars["west"], flinkapi.RunJarRequest{JobID: flinkapi.NewJobID(), ProgramArgs: []string{"--out", "/out/by-hand"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range f.servers {
		srv.ClearRequests()
	}
	r := f.runner()
	grace, interval := 5*time.Minute, time.Minute
	r.Housekeeping = Housekeeping{Interval: interval, JarGrace: grace}
	var desired []Deployment
	for i := range 8 {
		d := f.fileDeployment([]string{"east", "west"}[i%2], fmt.Sprintf("job-%d", i), 10)
		if i == 0 {
			d.Spec.Job.JarFile = "copy.jar"
		}
		desired = append(desired, d)
	}
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "deployed", 500, allDone)
	first := map[string]flinkapi.JarID{}
	for name, srv := range f.servers {
		jars := fleetJars(srv)
		if n := reqlog.JarUploads(srv.Requests()); n != 1 || len(jars) != 1 {
			t.Fatalf("%s: %d uploads, jars %v; want one upload for 4 deployments of one content", name, n, jars)
		}
		first[name] = jars[0]
		if named := f.namedJars(name); len(named) != 1 || !named[jars[0]] {
			t.Errorf("%s: the records name %v, want %s", name, named, jars[0])
		}
	}
	t.Logf("uploads per cluster for 4 deployments of one jar content: east %d, west %d", reqlog.JarUploads(f.servers["east"].Requests()), reqlog.JarUploads(f.servers["west"].Requests()))

	// Rebuilt under the same name: a new upload per cluster; the old one
	// stays while a deployment uses it.
	f.buildJar("2")
	upgraded := func(res []Result) bool {
		if !allDone(res) {
			return false
		}
		for _, d := range desired[1:] { // job-0 reads copy.jar, which did not change
			if rec, _, _ := f.store.Load(ctx, d.Name); rec.Status.JarID == first[d.Cluster] {
				return false
			}
		}
		return true
	}
	for range 500 {
		res, err := r.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f.checkJarsKept(t, r, "upgrading")
		if upgraded(res) {
			break
		}
		f.clock.Advance(nextWait(res, f.clock.Now()))
	}
	if !upgraded(r.Results()) {
		t.Fatalf("not upgraded: %s", describeResults(r.Results()))
	}
	for name, srv := range f.servers {
		if n := reqlog.JarUploads(srv.Requests()); n != 2 {
			t.Errorf("%s: %d uploads after the rebuild, want 2", name, n)
		}
		if !slices.Contains(srv.JarIDs(), first[name]) {
			t.Errorf("%s: the old upload %s was deleted at once", name, first[name])
		}
	}

	// Past the grace: west's old upload, which nothing uses, is deleted;
	// east's stays (job-0 runs it) as do the user's jars.
	f.passFor(t, r, grace+2*interval, func() { f.checkJarsKept(t, r, "at rest") })
	if slices.Contains(f.servers["west"].JarIDs(), first["west"]) {
		t.Errorf("west: the old upload %s stays, unused for %s", first["west"], grace+2*interval)
	}
	if !slices.Contains(f.servers["east"].JarIDs(), first["east"]) {
		t.Errorf("east: the upload %s that job-0 runs was deleted", first["east"])
	}
	for name, srv := range f.servers {
		if n := len(fleetJars(srv)); n != len(f.namedJars(name)) {
			t.Errorf("%s: %d uploads of the runner, %d used", name, n, len(f.namedJars(name)))
		}
		if !slices.Contains(srv.JarIDs(), f.jars[name]) {
			t.Errorf("%s: the user's jar %s was deleted", name, f.jars[name])
		}
	}
	if !slices.Contains(f.servers["east"].JarIDs(), mine) {
		t.Errorf("the user's jar %s was deleted", mine)
	}
	if j, _ := f.servers["west"].Job(byHand); j.State != flinkapi.JobRunning {
		t.Errorf("the job started by hand is %s", j.State)
	}
	cr := r.ClusterResults()
	if len(cr) != 2 || cr[0].Name != "east" || len(cr[0].Unclaimed) != 0 || len(cr[1].Unclaimed) != 1 || cr[1].Unclaimed[0].ID != byHand || cr[1].Err != nil || cr[1].At.IsZero() {
		t.Errorf("cluster results: %+v", cr)
	}
	var b strings.Builder
	if err := r.WriteMetrics(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`flinkkit_fleet_unclaimed_jobs{cluster="east"} 0`,
		`flinkkit_fleet_unclaimed_jobs{cluster="west"} 1`,
		`flinkkit_fleet_jars{cluster="east"} 2`,
		`flinkkit_fleet_jars{cluster="west"} 1`,
		`flinkkit_fleet_jar_uploads_total{cluster="west"} 2`,
		`flinkkit_fleet_jars_deleted_total{cluster="west"} 1`,
		`flinkkit_fleet_jars_deleted_total{cluster="east"} 0`,
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, b.String())
		}
	}
}

// TestRunnerKeepsJarsInFlight: while an upgrade to a rebuilt jar cannot
// start its new job, for longer than the grace, neither the new upload
// it runs nor the old one of its job is deleted; once it can, it
// completes.
func TestRunnerKeepsJarsInFlight(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	r := f.runner()
	grace, interval := 2*time.Minute, 30*time.Second
	r.Housekeeping = Housekeeping{Interval: interval, JarGrace: grace}
	desired := []Deployment{f.fileDeployment("east", "a", 10), f.fileDeployment("east", "b", 10)}
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "deployed", 500, allDone)
	srv := f.servers["east"]
	old := fleetJars(srv)
	if len(old) != 1 {
		t.Fatalf("jars %v", old)
	}
	if err := srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "POST /jars/:jarid/run", Status: 503}); err != nil {
		t.Fatal(err)
	}
	f.buildJar("2")
	var from, to time.Time // when an upgrade was first and last seen in flight with a new upload
	f.passFor(t, r, 10*grace, func() {
		f.checkJarsKept(t, r, "in flight")
		for _, name := range []string{"a", "b"} {
			rec, _, _ := f.store.Load(ctx, name)
			if p := rec.Status.Progress; !p.Done() && p.Submit.JarID != "" && p.Submit.JarID != rec.Status.JarID {
				if from.IsZero() {
					from = f.clock.Now()
				}
				to = f.clock.Now()
			}
		}
	})
	if to.Sub(from) < 2*grace {
		t.Fatalf("upgrades held a new upload in flight from %v to %v; want longer than the grace, %s", from, to, grace)
	}
	if !slices.Contains(srv.JarIDs(), old[0]) || len(fleetJars(srv)) != 2 {
		t.Fatalf("jars %v, want the old %s and the new one", srv.JarIDs(), old[0])
	}
	// The job can start again: a spec change restores a deployment whose
	// upgrade gave up.
	srv.ClearFaults()
	for i := range desired {
		desired[i] = withRate(desired[i], 20)
	}
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	for range 500 {
		res, err := r.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f.checkJarsKept(t, r, "completing")
		if allDone(res) && !f.namedJars("east")[old[0]] {
			break
		}
		f.clock.Advance(nextWait(res, f.clock.Now()))
	}
	for _, name := range []string{"a", "b"} {
		rec, _, _ := f.store.Load(ctx, name)
		if j, ok := srv.Job(rec.Status.JobID); !ok || j.State != flinkapi.JobRunning || rec.Status.JarID == old[0] {
			t.Errorf("%s: job %s (%s) of jar %s: %s %s: %s", name, rec.Status.JobID, j.State, rec.Status.JarID, rec.Status.Verdict, rec.Status.Situation, rec.Status.Message)
		}
	}
	f.passFor(t, r, grace+2*interval, func() { f.checkJarsKept(t, r, "at rest") })
	if jars := fleetJars(srv); len(jars) != 1 || jars[0] == old[0] {
		t.Errorf("jars at the end %v, want the new upload only", jars)
	}
}

// TestRunnerHousekeepingOff: with the housekeeping off the jars are
// shared all the same, no jar is listed for housekeeping and none is
// deleted.
func TestRunnerHousekeepingOff(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	r := f.runner()
	r.Housekeeping = Housekeeping{Off: true, JarGrace: time.Minute, Interval: time.Minute}
	if _, err := r.Sync(ctx, []Deployment{f.fileDeployment("east", "a", 10), f.fileDeployment("east", "b", 10)}); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "deployed", 500, allDone)
	if _, err := r.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "removed", 500, func(res []Result) bool { return len(res) == 0 })
	srv := f.servers["east"]
	srv.ClearRequests()
	f.passFor(t, r, time.Hour, nil)
	if jars := fleetJars(srv); len(jars) != 1 {
		t.Errorf("jars %v, want the one upload left", jars)
	}
	for _, q := range srv.Requests() {
		if q.Path == "/jars" {
			t.Errorf("%s %s with the housekeeping off", q.Method, q.Path)
		}
	}
	if cr := r.ClusterResults(); len(cr) != 1 || !cr[0].At.IsZero() {
		t.Errorf("cluster results %+v", cr)
	}
}
