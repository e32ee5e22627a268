package lifecycle

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// snapshotCounts counts the savepoints (stops with a savepoint included)
// and the checkpoints the fake completed, of any job.
func snapshotCounts(srv *flinktest.Server) (savepoints, checkpoints int) {
	for _, s := range srv.Snapshots() {
		if s.Savepoint {
			savepoints++
		} else {
			checkpoints++
		}
	}
	return savepoints, checkpoints
}

// requestDone reports whether the request k of spec was taken and its
// action ended.
func requestDone(spec JobSpec, k RequestKind) func(*JobStatus) bool {
	return func(st *JobStatus) bool {
		return st.RequestsHandled.token(k) == spec.Requests.token(k) && !st.InFlight()
	}
}

// TestRequestSavepointOnce: a Savepoint token takes one savepoint of the
// running job, recorded in the history with the user's reason; the same
// token again takes none.
func TestRequestSavepointOnce(t *testing.T) {
	for _, resume := range []bool{false, true} {
		k := newCluster(t, resume)
		spec := k.spec("/out")
		k.settle("create", spec)
		job := k.st.JobID
		before, _ := snapshotCounts(k.srv)
		spec.Requests.Savepoint = "sp-1"
		k.until("savepoint request", spec, 100, requestDone(spec, RequestSavepoint))
		if k.st.Action != ActionSavepointRequest || k.st.Progress.Outcome != OutcomeSucceeded {
			t.Fatalf("action %s ended %s (%s)", k.st.Action, k.st.Progress.Outcome, k.st.Progress.Reason)
		}
		after, _ := snapshotCounts(k.srv)
		if after != before+1 || k.st.JobID != job {
			t.Fatalf("savepoints %d -> %d, job %s -> %s", before, after, job, k.st.JobID)
		}
		if k.st.Latest.Reason != savepoint.ReasonUser || !hasLocation(k.st.Savepoints.Records, k.st.Latest.Location) {
			t.Errorf("latest %+v, history %+v", k.st.Latest, k.st.Savepoints.Records)
		}
		if k.st.State != policy.Running {
			t.Errorf("state %s", k.st.State)
		}
		k.run(spec, time.Minute)
		if again, _ := snapshotCounts(k.srv); again != after || k.st.JobID != job {
			t.Errorf("the same token again: savepoints %d -> %d, job %s", after, again, k.st.JobID)
		}
		if !k.st.Converged(spec) {
			t.Errorf("not converged: %s %s", k.st.Reason, k.st.Message)
		}
	}
}

// TestRequestsExactlyOnceLostWrites: whichever call's status write is
// lost (the caller goes on from the status before it), a request is
// carried out exactly once: one savepoint, one checkpoint, one restart.
func TestRequestsExactlyOnceLostWrites(t *testing.T) {
	for _, kind := range []RequestKind{RequestSavepoint, RequestCheckpoint, RequestRestart} {
		for lost := 1; lost <= 6; lost++ {
			k := newCluster(t, true)
			spec := k.spec("/out")
			k.settle("create", spec)
			job := k.st.JobID
			sp, cp := snapshotCounts(k.srv)
			triggers := count(k.srv, "POST /jobs/:jobid/checkpoints")
			spec.Requests.set(kind, "t1")
			for i := 1; i <= 100 && !requestDone(spec, kind)(&k.st); i++ {
				saved := *k.st.DeepCopy()
				k.call(spec, false)
				if i == lost {
					k.st = saved // the write of this call is lost
				}
			}
			k.settle("after", spec)
			k.run(spec, 30*time.Second)
			sp2, _ := snapshotCounts(k.srv)
			stops := 0
			for _, j := range k.srv.Jobs() {
				if j.ID == job && j.State == flinkapi.JobFinished {
					stops++
				}
			}
			switch kind {
			case RequestSavepoint:
				if sp2 != sp+1 || k.st.JobID != job {
					t.Errorf("%s, write %d lost: savepoints %d -> %d, job %s", kind, lost, sp, sp2, k.st.JobID)
				}
			case RequestCheckpoint:
				ids := checkpointTriggerIDs(t, k.srv)
				if len(ids) != 1 || !hasCheckpoint(k.srv, job, k.st.Checkpoint.CheckpointID) || count(k.srv, "POST /jobs/:jobid/checkpoints") == triggers {
					t.Errorf("%s, write %d lost: trigger ids %v, checkpoint %d (of %d)", kind, lost, ids, k.st.Checkpoint.CheckpointID, cp)
				}
			case RequestRestart:
				if sp2 != sp+1 || k.st.JobID == job || stops != 1 || len(k.live()) != 1 {
					t.Errorf("%s, write %d lost: savepoints %d -> %d, job %s (was %s), stopped %d, live %v", kind, lost, sp, sp2, k.st.JobID, job, stops, k.live())
				}
			}
		}
	}
}

// TestRequestRestart: a Restart token stops the job with a savepoint and
// starts the same template from it: a new job, its counts continue.
func TestRequestRestart(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	job, deployed := k.st.JobID, k.st.Deployed
	k.srv.Clock().Advance(5 * time.Second)
	events := k.job().Events
	spec.Requests.Restart = "r1"
	k.until("restart request", spec, 200, requestDone(spec, RequestRestart))
	if k.st.Action != ActionRestartRequest || k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == job || !k.st.Deployed.equal(deployed) {
		t.Fatalf("action %s ended %s (%s); job %s", k.st.Action, k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID)
	}
	k.settle("restarted", spec)
	k.srv.Clock().Advance(5 * time.Second)
	if k.job().RestoredFrom == "" || k.job().RestoredFrom != k.st.Progress.Replace.RestoreFrom || k.job().Events < events {
		t.Errorf("restored from %q (progress %q), events %d < %d", k.job().RestoredFrom, k.st.Progress.Replace.RestoreFrom, k.job().Events, events)
	}
	if k.st.UpgradeFrom.Location != "" || k.st.Restarts != 0 {
		t.Errorf("a restart request changed the rollback state %+v or the restart count %d", k.st.UpgradeFrom, k.st.Restarts)
	}
	restarted := k.st.JobID
	k.run(spec, time.Minute)
	if k.st.JobID != restarted {
		t.Errorf("the same token restarted the job again")
	}
}

// TestRequestRestartStateless: under the Stateless mode a Restart token
// starts the job again without state.
func TestRequestRestartStateless(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	spec.Update.Mode = policy.UpgradeStateless
	k.settle("create", spec)
	job := k.st.JobID
	sp, _ := snapshotCounts(k.srv)
	spec.Requests.Restart = "r1"
	k.until("restart request", spec, 200, requestDone(spec, RequestRestart))
	if sp2, _ := snapshotCounts(k.srv); k.st.JobID == job || k.job().RestoredFrom != "" || sp2 != sp {
		t.Errorf("job %s (was %s), restored from %q, savepoints %d -> %d", k.st.JobID, job, k.job().RestoredFrom, sp, sp2)
	}
}

// TestRequestCheckpoint: a Checkpoint token triggers one checkpoint
// through the REST API; its id is recorded.
func TestRequestCheckpoint(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	spec.Requests.Checkpoint = "c1"
	k.until("checkpoint request", spec, 100, requestDone(spec, RequestCheckpoint))
	p := k.st.Progress
	if k.st.Action != ActionCheckpointRequest || p.Outcome != OutcomeSucceeded || p.Checkpoint.ID == 0 || k.st.Checkpoint.CheckpointID != p.Checkpoint.ID {
		t.Fatalf("action %s ended %s (%s), checkpoint %d, recorded %d", k.st.Action, p.Outcome, p.Reason, p.Checkpoint.ID, k.st.Checkpoint.CheckpointID)
	}
	if ids := checkpointTriggerIDs(t, k.srv); !hasCheckpoint(k.srv, k.st.JobID, p.Checkpoint.ID) || len(ids) != 1 || ids[0] != string(p.Savepoint.Status.TriggerID) {
		t.Errorf("checkpoint %d of trigger %s is not on the fake (triggers %v)", p.Checkpoint.ID, p.Savepoint.Status.TriggerID, ids)
	}
	triggers := count(k.srv, "POST /jobs/:jobid/checkpoints")
	k.run(spec, time.Minute)
	if count(k.srv, "POST /jobs/:jobid/checkpoints") != triggers {
		t.Errorf("the same token triggered again")
	}
}

// TestRequestCheckpointUnsupported: on Flink 1.16 a Checkpoint token is
// taken and ends Unsupported, with no trigger sent.
func TestRequestCheckpointUnsupported(t *testing.T) {
	k := newCluster(t, false, flinktest.WithVersion("1.16.3"))
	spec := k.spec("/out")
	spec.Job.FlinkConfiguration = nil // 1.16 takes none in the jar run
	k.settle("create", spec)
	spec.Requests.Checkpoint = "c1"
	k.until("checkpoint request", spec, 100, requestDone(spec, RequestCheckpoint))
	if k.st.Progress.Outcome != OutcomeUnsupported || !strings.Contains(k.st.Progress.Reason, "1.17") ||
		k.st.Reason != ReasonRunning || !strings.Contains(k.st.Message, "Unsupported") {
		t.Errorf("outcome %s (%s), reason %s (%s)", k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Reason, k.st.Message)
	}
	if n := count(k.srv, "POST /jobs/:jobid/checkpoints"); n != 0 {
		t.Errorf("%d triggers sent", n)
	}
}

// TestRequestRollback: a Rollback token sends a job that runs an
// upgraded template back to the last stable one from the upgrade's
// savepoint, with RollbackPolicy off; the template rolled back from is
// not deployed again.
func TestRequestRollback(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	stable := k.st.Deployed
	bad := spec
	bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--fail-at", "1")
	k.until("upgrade", bad, 200, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && !st.InFlight() && st.Deployed.equal(bad.Job)
	})
	if k.st.Stable.equal(k.st.Deployed) || k.st.UpgradeFrom.Location == "" {
		t.Fatalf("stable %v, upgrade from %+v", k.st.Stable.equal(k.st.Deployed), k.st.UpgradeFrom)
	}
	bad.Requests.Rollback = "rb1"
	k.until("rollback request", bad, 200, func(st *JobStatus) bool {
		return st.Action == ActionRollback && st.Progress.Done()
	})
	if k.st.RequestsHandled.Rollback != "rb1" || k.st.Progress.Outcome != OutcomeSucceeded || !k.st.Deployed.equal(stable) ||
		k.st.FailedJob != bad.Job.Fingerprint() {
		t.Fatalf("rollback: handled %q, %s (%s), deployed %+v", k.st.RequestsHandled.Rollback, k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Deployed)
	}
	if k.job().RestoredFrom != k.st.UpgradeFrom.Location {
		t.Errorf("restored from %q, want %q", k.job().RestoredFrom, k.st.UpgradeFrom.Location)
	}
	job := k.st.JobID
	k.run(bad, time.Minute)
	if k.st.JobID != job || k.st.Reason != ReasonRolledBack {
		t.Errorf("after the rollback: job %s (was %s), reason %s", k.st.JobID, job, k.st.Reason)
	}
}

// TestRequestRollbackNothing: a Rollback token of a job that runs its
// stable template is taken with ReasonNothingToRollBack, and nothing else
// happens.
func TestRequestRollbackNothing(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	job := k.st.JobID
	spec.Requests.Rollback = "rb1"
	before := len(k.srv.Requests())
	k.call(spec, false)
	if k.st.RequestsHandled.Rollback != "rb1" || k.st.Reason != ReasonNothingToRollBack || k.st.InFlight() || k.st.State != policy.Running {
		t.Fatalf("handled %q, reason %s (%s), in flight %v, state %s", k.st.RequestsHandled.Rollback, k.st.Reason, k.st.Message, k.st.InFlight(), k.st.State)
	}
	for _, r := range k.srv.Requests()[before:] {
		if r.Method != "GET" {
			t.Errorf("request sent: %s %s", r.Method, r.Path)
		}
	}
	k.run(spec, 30*time.Second)
	if k.st.JobID != job || k.st.Reason != ReasonRunning || !k.st.Converged(spec) {
		t.Errorf("job %s (was %s), reason %s", k.st.JobID, job, k.st.Reason)
	}
}

// TestRequestsWaitForActionInFlight: a request made while an upgrade is
// in flight waits for it to end, and the spec's change goes first: the
// savepoint is one of the upgraded job.
func TestRequestsWaitForActionInFlight(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	old := k.st.JobID
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.call(spec, false)
	if !k.st.InFlight() || k.st.Action != ActionUpgrade {
		t.Fatalf("upgrade not started: %s", k.st.Action)
	}
	spec.Requests.Savepoint = "sp-1"
	for k.st.InFlight() {
		k.call(spec, false)
		if k.st.RequestsHandled.Savepoint != "" && k.st.Action == ActionUpgrade {
			t.Fatalf("the request was taken while the upgrade was in flight")
		}
	}
	if k.st.Action != ActionUpgrade || k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old {
		t.Fatalf("upgrade ended %s", k.st.Progress.Outcome)
	}
	k.until("savepoint request", spec, 100, requestDone(spec, RequestSavepoint))
	if k.st.Action != ActionSavepointRequest || k.st.Latest.JobID != k.st.JobID || k.st.Latest.Reason != savepoint.ReasonUser {
		t.Errorf("action %s, latest %+v of job %s", k.st.Action, k.st.Latest, k.st.JobID)
	}
}

// TestRequestsSeveral: tokens of every kind at once are carried out one
// at a time in the order of requestKinds.
func TestRequestsSeveral(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	spec.Requests = ActionRequests{Savepoint: "a", Checkpoint: "b", Restart: "c", Rollback: "d"}
	var order []JobAction
	reasons := map[string]bool{}
	for range 300 {
		if len(spec.Requests.Pending(k.st.RequestsHandled)) == 0 && !k.st.InFlight() {
			break
		}
		k.call(spec, false)
		reasons[k.st.Reason] = true
		if a := k.st.Action; k.st.InFlight() && (len(order) == 0 || order[len(order)-1] != a) {
			order = append(order, a)
		}
	}
	want := []JobAction{ActionSavepointRequest, ActionCheckpointRequest, ActionRestartRequest}
	if strings.Join(actionNames(order), ",") != strings.Join(actionNames(want), ",") || !reasons[ReasonNothingToRollBack] {
		t.Errorf("order %v, reasons %v", order, reasons)
	}
	if k.st.RequestsHandled != spec.Requests {
		t.Errorf("handled %+v", k.st.RequestsHandled)
	}
}

func actionNames(as []JobAction) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}

// TestPlanRequests: the plan's choices, pure: a request waits in the
// situations it does not apply to (and the message says so), the spec's
// change goes first, an action in flight is never interrupted.
func TestPlanRequests(t *testing.T) {
	c := &Controller{}
	spec := JobSpec{Job: planJob, Requests: ActionRequests{Savepoint: "s1"}}
	for sit, pc := range planCases() {
		p := c.PlanFor(spec, pc.st, pc.obs, planNow)
		taken := p.Request == RequestSavepoint
		if want := sit == SituationRunning; taken != want || taken && p.Action != ActionSavepointRequest {
			t.Errorf("%s: request %q, action %s", sit, p.Request, p.Action)
		}
		if !taken && p.Action == "" && !strings.Contains(p.Message, `the Savepoint request "s1" waits`) {
			t.Errorf("%s: message %q", sit, p.Message)
		}
		if sit == SituationInFlight && (p.Action != ActionUpgrade || !p.InFlight) {
			t.Errorf("in flight: %s", p)
		}
	}
	running := planCases()[SituationRunning]
	changed := spec
	changed.Job.Args = []string{"--v2"}
	if p := c.PlanFor(changed, running.st, running.obs, planNow); p.Action != ActionUpgrade || p.Request != "" {
		t.Errorf("a changed Job with a request: %s, request %q", p, p.Request)
	}
	for _, kind := range requestKinds {
		for sit, pc := range planCases() {
			s := JobSpec{Job: planJob}
			s.Requests.set(kind, "x")
			p := c.PlanFor(s, pc.st, pc.obs, planNow)
			if p.Request != "" && kind != RequestSavepoint && kind != RequestCheckpoint && !restartable(sit) {
				t.Errorf("%s in %s: taken", kind, sit)
			}
			stopped := sit == SituationStoppedWithSavepoint || sit == SituationStoppedExternally // started again first
			if (kind == RequestRestart || kind == RequestRollback) && restartable(sit) && !stopped && p.Request != kind {
				t.Errorf("%s in %s: not taken: %s", kind, sit, p)
			}
			pc.st.RequestsHandled.set(kind, "x")
			if p := c.PlanFor(s, pc.st, pc.obs, planNow); p.Request != "" {
				t.Errorf("%s in %s: a handled token taken again", kind, sit)
			}
		}
	}
}

// TestValidateRequestTokens: a token longer than maxRequestTokenLength is
// refused, naming its field.
func TestValidateRequestTokens(t *testing.T) {
	spec := JobSpec{Job: JobTemplate{JarID: "x.jar"}, Requests: ActionRequests{Savepoint: "ok", Rollback: strings.Repeat("r", maxRequestTokenLength+1)}}
	err := spec.Validate()
	if err == nil || !strings.Contains(err.Error(), "requests.rollback") || strings.Contains(err.Error(), "requests.savepoint") {
		t.Fatalf("Validate: %v", err)
	}
	spec.Requests.Rollback = strings.Repeat("r", maxRequestTokenLength)
	if err := spec.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// checkpointTriggerIDs returns the distinct trigger ids of the checkpoint
// triggers in the server's log.
func checkpointTriggerIDs(t *testing.T, srv *flinktest.Server) []string {
	t.Helper()
	seen := map[string]bool{}
	var ids []string
	for _, r := range srv.Requests() {
		if r.Route != "POST /jobs/:jobid/checkpoints" {
			continue
		}
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("trigger body %q: %v", r.Body, err)
		}
		if !seen[body.TriggerID] {
			seen[body.TriggerID] = true
			ids = append(ids, body.TriggerID)
		}
	}
	return ids
}

// hasCheckpoint reports whether the fake completed checkpoint id of job.
func hasCheckpoint(srv *flinktest.Server, job flinkapi.JobID, id int64) bool {
	for _, s := range srv.Snapshots() {
		if !s.Savepoint && s.Job == job && s.CheckpointID == id && id != 0 {
			return true
		}
	}
	return false
}

// TestRequestFailedNotRetried: a savepoint request whose savepoint fails
// is carried out once: the token is taken, the failure reported, and the
// same token asks for nothing more; a new token tries again.
func TestRequestFailedNotRetried(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("create", spec)
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: k.st.JobID, Times: 1, Cause: "Checkpoint was declined."}); err != nil {
		t.Fatal(err)
	}
	spec.Requests.Savepoint = "sp-1"
	k.until("savepoint request", spec, 100, requestDone(spec, RequestSavepoint))
	if k.st.Progress.Outcome != OutcomeSavepointFailed || !strings.Contains(k.st.Message, "SavepointRequest SavepointFailed") {
		t.Fatalf("outcome %s, message %q", k.st.Progress.Outcome, k.st.Message)
	}
	triggers := count(k.srv, "POST /jobs/:jobid/savepoints")
	k.run(spec, time.Minute)
	if n := count(k.srv, "POST /jobs/:jobid/savepoints"); n != triggers {
		t.Errorf("the same token triggered %d more savepoints", n-triggers)
	}
	spec.Requests.Savepoint = "sp-2"
	k.until("second savepoint request", spec, 100, requestDone(spec, RequestSavepoint))
	if k.st.Progress.Outcome != OutcomeSucceeded || k.st.Latest.Reason != savepoint.ReasonUser {
		t.Errorf("a new token: %s, latest %+v", k.st.Progress.Outcome, k.st.Latest)
	}
}

// TestRequestRollbackLostWrites: whichever of the first calls' status
// writes is lost, a Rollback token rolls back once: one job started from
// the upgrade's savepoint.
func TestRequestRollbackLostWrites(t *testing.T) {
	for lost := 1; lost <= 4; lost++ {
		k := newCluster(t, true)
		spec := k.spec("/out")
		k.settle("create", spec)
		stable := k.st.Deployed
		bad := spec
		bad.Job.Args = append(append([]string(nil), spec.Job.Args...), "--fail-at", "1")
		k.until("upgrade", bad, 200, func(st *JobStatus) bool {
			return st.Action == ActionUpgrade && !st.InFlight() && st.Deployed.equal(bad.Job)
		})
		from := k.st.UpgradeFrom.Location
		bad.Requests.Rollback = "rb1"
		for i := 1; i <= 200 && !(k.st.Action == ActionRollback && k.st.Progress.Done()); i++ {
			saved := *k.st.DeepCopy()
			k.call(bad, false)
			if i == lost {
				k.st = saved
			}
		}
		k.run(bad, 30*time.Second)
		restored := 0
		for _, j := range k.srv.Jobs() {
			if j.RestoredFrom == from {
				restored++
			}
		}
		if restored != 2 || !k.st.Deployed.equal(stable) || len(k.live()) != 1 || k.st.RequestsHandled.Rollback != "rb1" {
			// The upgraded job and the rolled-back one started from it.
			t.Errorf("write %d lost: %d jobs started from %s, deployed stable %v, live %v", lost, restored, from, k.st.Deployed.equal(stable), k.live())
		}
	}
}
