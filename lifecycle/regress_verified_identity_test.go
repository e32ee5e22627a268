package lifecycle

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// reconcileOther runs one Reconcile of ctrl on st and moves the clock by
// its RequeueAfter.
func (k *cluster) reconcileOther(ctrl *Controller, spec JobSpec, st *JobStatus) Result {
	k.t.Helper()
	res, err := ctrl.Reconcile(context.Background(), spec, st)
	if err != nil {
		k.t.Fatalf("reconcile: %v (status %+v)", err, st)
	}
	k.srv.Clock().Advance(res.RequeueAfter)
	return res
}

// changesSentTo lists the requests of the log that could change job id: any
// but a GET whose path names it.
func (k *cluster) changesSentTo(id flinkapi.JobID) []string {
	var out []string
	for _, r := range k.srv.Requests() {
		if r.Method != "GET" && strings.Contains(r.Path, string(id)) {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// TestRegressNamespacesOwnTheirJobs: two deployments of one name on one
// cluster, each with a Controller of its own Namespace, run a job each;
// neither takes the other's for its own.
func TestRegressNamespacesOwnTheirJobs(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	a, b := k.controller(), k.controller()
	a.Namespace, b.Namespace = "team-a", "team-b"
	var sa, sb JobStatus
	for range 200 {
		k.reconcileOther(a, spec, &sa)
		k.reconcileOther(b, spec, &sb)
		if !sa.InFlight() && !sb.InFlight() && sa.JobID != "" && sb.JobID != "" && sa.Stable.equal(sa.Deployed) && sb.Stable.equal(sb.Deployed) {
			break
		}
	}
	if sa.JobID == "" || sb.JobID == "" || sa.JobID == sb.JobID || len(k.live()) != 2 {
		t.Fatalf("jobs %q and %q, live %v", sa.JobID, sb.JobID, k.live())
	}
	if sa.Progress.Submit.Adopted || sb.Progress.Submit.Adopted {
		t.Errorf("a deployment adopted a job: %+v / %+v", sa.Progress, sb.Progress)
	}
}

// TestRegressSameNameRefused: a second deployment of the same name on
// the same cluster (the same Namespace) finds the first one's job under
// its derived id: it is refused, naming the job, never shares it; the
// first one's job runs on untouched.
func TestRegressSameNameRefused(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("first", spec)
	first := k.st.JobID
	k.srv.ClearRequests()
	ctrl := k.controller()
	var st JobStatus
	plan, err := ctrl.Plan(context.Background(), spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Blocked == "" || plan.Reason != ReasonForeignJob || !strings.Contains(plan.Message, string(first)) {
		t.Errorf("plan %s: blocked %q, reason %q, message %q", plan, plan.Blocked, plan.Reason, plan.Message)
	}
	for range 20 {
		k.reconcileOther(ctrl, spec, &st)
		if st.Progress.Done() {
			break
		}
	}
	if st.JobID == first || st.Progress.Outcome != OutcomeForeignJob || st.Progress.Replace.Observed.Adopt != first || !strings.Contains(st.Message, string(first)) {
		t.Fatalf("second deployment: job %q, outcome %s, adopt %q, message %q", st.JobID, st.Progress.Outcome, st.Progress.Replace.Observed.Adopt, st.Message)
	}
	if len(k.live()) != 1 || !k.isLive(first) || len(k.changesSentTo(first)) != 0 {
		t.Errorf("live %v, sent to the first job %v", k.live(), k.changesSentTo(first))
	}
}

// TestRegressLostStatusChangedSpec: a status lost while its job runs,
// called again with a changed spec, is never reported Done with the new
// spec while the job runs the old one: the job found under the derived
// id is named, not adopted, and Plan says so.
func TestRegressLostStatusChangedSpec(t *testing.T) {
	k := newCluster(t, true)
	k.settle("v1", k.spec("/out"))
	job := k.st.JobID
	k.st = JobStatus{} // the status directory is lost
	spec := k.spec("/out2")
	plan, err := k.controller().Plan(context.Background(), spec, k.st)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Blocked == "" || !strings.Contains(plan.Message, string(job)) {
		t.Errorf("plan %s: blocked %q, message %q", plan, plan.Blocked, plan.Message)
	}
	k.srv.ClearRequests()
	k.until("the deploy ended", spec, 20, func(st *JobStatus) bool { return st.Progress.Done() })
	info, _ := k.srv.Job(job)
	if k.st.JobID == job && slices.Equal(k.st.Deployed.Args, spec.Job.Args) && !slices.Equal(info.ProgramArgs, spec.Job.Args) {
		t.Fatalf("reported %s (%s) with args %v while job %s runs %v", k.st.State, k.st.Reason, k.st.Deployed.Args, job, info.ProgramArgs)
	}
	if k.st.Progress.Outcome != OutcomeForeignJob || k.st.Progress.Replace.Observed.Adopt != job {
		t.Errorf("outcome %s, job named %q", k.st.Progress.Outcome, k.st.Progress.Replace.Observed.Adopt)
	}
	k.srv.Clock().Advance(DefaultJobGrace)
	r, err := CleanSession(context.Background(), k.c, []Claim{{Spec: spec, Status: k.st}}, SessionOptions{}, k.srv.Clock().Now())
	if err != nil || len(r.Unclaimed) != 1 || r.Unclaimed[0].ID != job {
		t.Errorf("housekeeping: unclaimed %+v (%v), want job %s, which no status records", r.Unclaimed, err, job)
	}
	k.run(spec, time.Minute) // tried again after RetryInterval: refused again
	if info, _ = k.srv.Job(job); len(k.live()) != 1 || info.State != flinkapi.JobRunning || len(k.changesSentTo(job)) != 0 || k.st.JobID == job {
		t.Errorf("live %v, sent %v, status's job %q", k.live(), k.changesSentTo(job), k.st.JobID)
	}
}

// TestRegressDetachedNotTakenOver: a deployment re-created under the
// name of one whose job was detached, without Adopt, never takes the
// detached job over, nor stops it at its next change; given a Namespace
// of its own it deploys beside it.
func TestRegressDetachedNotTakenOver(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("first", spec)
	k.settle("upgraded", k.spec("/out1")) // the detached job's id derives from the first's
	detached := k.st.JobID
	spec = k.spec("/out1")
	spec.OnDelete = DeleteDetach
	if res := k.call(spec, true); !res.Done || k.st.Detached != detached {
		t.Fatalf("detach: %+v, status %+v", res, k.st)
	}
	k.srv.ClearRequests()
	k.st = JobStatus{} // the deployment is re-created
	spec.OnDelete = ""
	for range 20 {
		k.call(spec, false)
	}
	if k.st.JobID == detached {
		t.Fatalf("the re-created deployment took job %s over: %+v", detached, k.st)
	}
	for range 20 {
		k.call(k.spec("/out2"), false)
	}
	if !k.isLive(detached) || len(k.changesSentTo(detached)) != 0 {
		t.Fatalf("the detached job: live %v, sent %v", k.isLive(detached), k.changesSentTo(detached))
	}
	k.st = JobStatus{}
	ctrl := k.controller()
	ctrl.Namespace = "again"
	for range 100 {
		k.reconcileOther(ctrl, k.spec("/out2"), &k.st)
		if k.st.JobID != "" && !k.st.InFlight() && k.st.Stable.equal(k.st.Deployed) {
			break
		}
	}
	if k.st.JobID == "" || k.st.JobID == detached || !k.isLive(detached) || len(k.live()) != 2 || len(k.changesSentTo(detached)) != 0 {
		t.Errorf("job %q beside %s: live %v, sent %v", k.st.JobID, detached, k.live(), k.changesSentTo(detached))
	}
}

// rebuildJar writes another build of the job to the jar file: the same
// main class, other bytes.
func (k *cluster) rebuildJar(n int) {
	k.t.Helper()
	if err := os.WriteFile(k.jar, counterBuild(n), 0o600); err != nil {
		k.t.Fatal(err)
	}
}

// counterBuild is build n of the counter job's jar: the same main class,
// other bytes.
func counterBuild(n int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	fmt.Fprintf(w, "Manifest-Version: 1.0\r\nCreated-By: flinktest\r\nMain-Class: %s\r\n\r\n", flinktest.CounterJobClass)
	w, _ = zw.Create("build.txt")
	fmt.Fprintf(w, "build %d\n", n)
	_ = zw.Close()
	return buf.Bytes()
}

// TestRegressRollbackRunsStableBuild: a rollback after a rebuild under
// the same jar path runs the upload of the build that was stable, not
// the file's new content; housekeeping keeps that upload while the
// status names it. With the upload gone, the rollback is refused by a
// typed outcome, and the new build runs on; so it is when the status
// records no upload of that build (one an earlier release wrote).
func TestRegressRollbackRunsStableBuild(t *testing.T) {
	for _, tc := range []struct{ name string }{{"kept"}, {"kept, the jar list read twice"}, {"gone"}, {"unrecorded"}, {"jar list unreadable"}} {
		t.Run(tc.name, func(t *testing.T) {
			gone := !strings.HasPrefix(tc.name, "kept")
			k := newCluster(t, true)
			spec := k.spec("/out")
			k.settle("v1", spec)
			old, oldJob := k.job().JarID, k.st.JobID
			k.rebuildJar(2)
			k.until("v2", spec, 100, func(st *JobStatus) bool { return st.JobID != oldJob && !st.InFlight() })
			newJob, newJar := k.st.JobID, k.job().JarID
			if newJar == old || k.st.UpgradeFrom.Location == "" || k.st.Stable.equal(k.st.Deployed) {
				t.Fatalf("the rebuild runs jar %s (old %s), upgrade from %+v, stable %v", newJar, old, k.st.UpgradeFrom, k.st.Stable.equal(k.st.Deployed))
			}
			k.srv.Clock().Advance(DefaultJarGrace + time.Minute)
			r, err := CleanSession(context.Background(), k.c, []Claim{{Spec: spec, Status: k.st}}, SessionOptions{}, k.srv.Clock().Now())
			if err != nil || slices.Contains(r.Deleted, old) {
				t.Fatalf("housekeeping deleted %v (%v); the stable build's upload is %s", r.Deleted, err, old)
			}
			switch tc.name {
			case "gone":
				if err := k.c.DeleteJar(context.Background(), old); err != nil {
					t.Fatal(err)
				}
			case "unrecorded":
				k.st.StableJarID, k.st.StableJarDigest = "", ""
			case "jar list unreadable":
				if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jars", Times: 1000}); err != nil {
					t.Fatal(err)
				}
			case "kept, the jar list read twice":
				if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jars", Times: 1}); err != nil {
					t.Fatal(err)
				}
			}
			jars := len(k.srv.JarIDs())
			spec.Requests.Rollback = "r1"
			k.until("the rollback", spec, 100, func(st *JobStatus) bool { return st.Action == ActionRollback && !st.InFlight() })
			switch {
			case tc.name == "jar list unreadable":
				if k.st.Progress.Outcome != OutcomeTimedOut || k.st.JobID != newJob || !k.isLive(newJob) || len(k.changesSentTo(newJob)) != 0 {
					t.Errorf("rollback without a jar list: outcome %s, job %s (new %s), live %v", k.st.Progress.Outcome, k.st.JobID, newJob, k.live())
				}
			case gone:
				if k.st.Progress.Outcome != OutcomeJarChanged || k.st.JobID != newJob || !k.isLive(newJob) || len(k.changesSentTo(newJob)) != 0 {
					t.Errorf("rollback without the old upload: outcome %s, job %s (new %s), live %v", k.st.Progress.Outcome, k.st.JobID, newJob, k.live())
				}
			default:
				if k.st.Progress.Outcome != OutcomeSucceeded || k.job().JarID != old || k.st.JobID == newJob {
					t.Errorf("rollback: outcome %s, job %s runs jar %s, want the stable build's %s", k.st.Progress.Outcome, k.st.JobID, k.job().JarID, old)
				}
			}
			if n := len(k.srv.JarIDs()); n != jars {
				t.Errorf("%d jars after the rollback, %d before: it uploaded the file's new build", n, jars)
			}
		})
	}
}

// TestRegressLostWritesChangedSpec: the writes of a whole upgrade are
// lost (the caller goes on from the status before it) and the spec
// changed meanwhile: the job the upgrade started, found under the id
// derived from the deployment's job, is taken over as the deployment's
// but never reported as running the new spec, which it does not: it is
// upgraded to it.
func TestRegressLostWritesChangedSpec(t *testing.T) {
	k := newCluster(t, true)
	k.settle("v1", k.spec("/out"))
	before := *k.st.DeepCopy()
	k.settle("v2", k.spec("/out2"))
	upgraded := k.st.JobID
	k.st = before // every write of the upgrade was lost
	spec := k.spec("/out3")
	plan, err := k.controller().Plan(context.Background(), spec, k.st)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Adopt != upgraded || plan.Blocked != "" || !strings.Contains(plan.String(), "would adopt job "+string(upgraded)) {
		t.Errorf("plan %s: adopt %q, want %s", plan, plan.Adopt, upgraded)
	}
	k.settle("v3", spec)
	if info := k.job(); !slices.Equal(info.ProgramArgs, spec.Job.Args) || len(k.live()) != 1 {
		t.Fatalf("reported %s with args %v while job %s runs %v; live %v", k.st.State, k.st.Deployed.Args, k.st.JobID, info.ProgramArgs, k.live())
	}
}
