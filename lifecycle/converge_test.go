package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// TestConvergeRunsTheJob: Converge deploys the job, stores the status
// after every call, and returns once the job runs stably; the status
// stored last is the one it leaves.
func TestConvergeRunsTheJob(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	var saved []JobStatus
	err := k.controller().Converge(context.Background(), spec, &k.st, func(st *JobStatus) error {
		saved = append(saved, *st)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !k.st.Converged(spec) || k.job().State != flinkapi.JobRunning {
		t.Fatalf("Converge returned with status %s/%s and job %s", k.st.State, k.st.Reason, k.job().State)
	}
	if len(saved) < 3 || !reflect.DeepEqual(saved[len(saved)-1], k.st) {
		t.Errorf("%d statuses saved; the last differs from the one returned", len(saved))
	}
	if saved[0].Action != ActionDeploy {
		t.Errorf("the first status saved records action %q, want %s: the deploy is stored before its requests", saved[0].Action, ActionDeploy)
	}
}

// TestConvergeInvalidSpec: an invalid spec ends Converge after one call,
// with an error matching ErrInvalidSpec and the status saved.
func TestConvergeInvalidSpec(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Update.Mode = "Sometimes"
	saves := 0
	err := k.controller().Converge(context.Background(), spec, &k.st, func(*JobStatus) error { saves++; return nil })
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "Sometimes") {
		t.Errorf("Converge = %v, want ErrInvalidSpec naming the mode", err)
	}
	if saves != 1 || k.st.Reason != ReasonInvalidSpec {
		t.Errorf("%d saves, reason %q", saves, k.st.Reason)
	}
	if n := len(k.srv.Requests()); n != 0 {
		t.Errorf("%d requests for an invalid spec", n)
	}
}

// TestConvergeActionFails: an action that ends without success (a
// restore request naming a path Flink refuses) ends Converge with an
// *ActionError naming the action and its outcome.
func TestConvergeActionFails(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Restore = policy.RestoreRequest{Path: "file:/nowhere/savepoint-000000-missing", Token: "1"}
	err := k.controller().Converge(context.Background(), spec, &k.st, func(*JobStatus) error { return nil })
	var ae *ActionError
	if !errors.As(err, &ae) || !errors.Is(err, ErrActionFailed) {
		t.Fatalf("Converge = %v, want an *ActionError", err)
	}
	if ae.Action != ActionDeploy || ae.Outcome == OutcomeSucceeded || ae.Outcome == "" || ae.Reason == "" {
		t.Errorf("ActionError %+v", ae)
	}
}

// TestConvergeSaveFails: a status that cannot be stored ends Converge at
// once, before any further request.
func TestConvergeSaveFails(t *testing.T) {
	k := newCluster(t, false)
	boom := errors.New("disk full")
	err := k.controller().Converge(context.Background(), k.spec("/out"), &k.st, func(*JobStatus) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Converge = %v, want the save's error", err)
	}
	if n := len(k.srv.Requests()); n > MaxRequestsPerCall {
		t.Errorf("%d requests after the first save failed", n)
	}
}

// TestConvergeWaitsUntilCancelled: a JobManager that does not answer
// keeps Converge waiting, saying so in the status, until its context
// ends.
func TestConvergeWaitsUntilCancelled(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	c := k.controller()
	if err := c.Converge(context.Background(), spec, &k.st, func(*JobStatus) error { return nil }); err != nil {
		t.Fatal(err)
	}
	k.srv.RestartJobManager(flinktest.RestartOptions{HA: true, Downtime: 24 * time.Hour})
	k.srv.Clock().Advance(time.Minute) // the job is observed again
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, waiting := 0, 0
	err := c.Converge(ctx, spec, &k.st, func(st *JobStatus) error {
		calls++
		if st.Situation == SituationUnreachable {
			waiting++
		}
		if waiting == 5 || calls == 1000 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Converge = %v, want context.Canceled", err)
	}
	if waiting != 5 {
		t.Errorf("after %d calls the status said Unreachable %d times (situation now %q)", calls, waiting, k.st.Situation)
	}
}

// TestConvergeNotEnoughSlots: a deploy the cluster can never run (its
// preflight sees too few task slots) ends Converge at once, nothing
// started; on a cluster that starts TaskManagers on demand the deploy is
// sent, and ends with its failure once Flink gives up, instead of
// waiting for ever.
func TestConvergeNotEnoughSlots(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Job.Parallelism = 8 // the fake has 4 slots
	err := k.controller().Converge(context.Background(), spec, &k.st, func(*JobStatus) error { return nil })
	var ae *ActionError
	if !errors.As(err, &ae) || ae.Action != ActionDeploy || ae.Outcome != OutcomeBlocked || k.st.Progress.Replace.Decision != policy.ReasonPreflightRefused ||
		!strings.Contains(ae.Reason, "8 task slots") || len(k.srv.Jobs()) != 0 {
		t.Fatalf("Converge = %v (decision %s, jobs %v), want the deploy Blocked by its preflight, nothing run", err, k.st.Progress.Replace.Decision, k.srv.Jobs())
	}

	k = newCluster(t, false)
	spec.Job.JarFile = k.jar
	spec.Preflight.ElasticSlots = true
	ctrl := k.controller()
	// Flink gives up on the slots (slot.request.timeout, 5 minutes) before
	// the submission's deadline passes.
	ctrl.Timing.Submit = 6 * time.Minute
	err = ctrl.Converge(context.Background(), spec, &k.st, func(*JobStatus) error { return nil })
	if !errors.As(err, &ae) || ae.Action != ActionDeploy || ae.Outcome != OutcomeJobFailed {
		t.Fatalf("Converge = %v, want the deploy's JobFailed", err)
	}
}

// TestStatusFile: Save and Load round-trip a status; a second open is
// refused while the first holds the file; Close releases it; a file that
// is not a status is an error naming it.
func TestStatusFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs", "app~counter.json")
	f, err := OpenStatusFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.Load(); ok || err != nil {
		t.Fatalf("Load of a new file: ok %v, %v", ok, err)
	}
	st := JobStatus{FormatVersion: FormatVersion, JobID: "0123456789abcdef0123456789abcdef", Action: ActionDeploy, Reason: ActionReason(ActionDeploy, "")}
	if err := f.Save(&st); err != nil {
		t.Fatal(err)
	}
	got, ok, err := f.Load()
	if err != nil || !ok || !reflect.DeepEqual(got, st) {
		t.Fatalf("Load = %+v, %v, %v; want %+v", got, ok, err, st)
	}
	if _, err := OpenStatusFile(path); !errors.Is(err, ErrStatusLocked) {
		t.Errorf("second OpenStatusFile = %v, want ErrStatusLocked", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(&st); err == nil {
		t.Error("Save after Close succeeded")
	}
	g, err := OpenStatusFile(path)
	if err != nil {
		t.Fatalf("OpenStatusFile after Close: %v", err)
	}
	defer g.Close()
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Load(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of a broken file = %v, want an error naming %s", err, path)
	}
}

// TestStatusFileWithConverge: StatusFile.Save is Converge's save
// function; the file holds the last status, which a new process resumes
// from.
func TestStatusFileWithConverge(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	f, err := OpenStatusFile(filepath.Join(t.TempDir(), "counter.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := k.controller().Converge(context.Background(), spec, &k.st, f.Save); err != nil {
		t.Fatal(err)
	}
	got, ok, err := f.Load()
	if err != nil || !ok {
		t.Fatalf("Load: %v, %v", ok, err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(k.st)
	if string(a) != string(b) || !got.Converged(spec) {
		t.Errorf("the file holds a status other than the last one:\n%s\n%s", a, b)
	}
}

// TestControllerSendsOnce: the Controller sends each request of a client
// with retries once: a call never waits in a retry, and answers a 503 by
// being called again.
func TestControllerSendsOnce(t *testing.T) {
	k := newCluster(t, false)
	retrying, err := flinkapi.NewClient(k.srv.URL) // DefaultRetryPolicy
	if err != nil {
		t.Fatal(err)
	}
	spec := k.spec("/out")
	k.settle("deploy", spec)
	k.srv.Clock().Advance(time.Minute)
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "GET /jobs/:jobid", Status: 503}); err != nil {
		t.Fatal(err)
	}
	before := len(k.srv.Requests())
	c := k.controller()
	c.Client = retrying
	res, err := c.Reconcile(context.Background(), spec, &k.st)
	if err != nil {
		t.Fatal(err)
	}
	sent := k.srv.Requests()[before:]
	if len(sent) != 1 || res.RequeueAfter <= 0 {
		t.Errorf("one call sent %d requests (%v) and asks to come back after %v; want the one observation, once, and a requeue", len(sent), sent, res.RequeueAfter)
	}
}

// TestControllerRefusesStoreName: a Name the restore-point stores refuse
// is refused by the first call, before any request, with one prefix and
// the names allowed.
func TestControllerRefusesStoreName(t *testing.T) {
	k := newCluster(t, false)
	c := k.controller()
	c.Name = "my app:ingest"
	_, err := c.Reconcile(context.Background(), k.spec("/out"), &k.st)
	if !errors.Is(err, ErrInvalidName) || strings.Count(err.Error(), "lifecycle:") != 1 || !strings.Contains(err.Error(), "letters, digits") {
		t.Errorf("Reconcile = %v, want ErrInvalidName with one prefix and the names allowed", err)
	}
	if n := len(k.srv.Requests()); n != 0 {
		t.Errorf("%d requests", n)
	}
}
