package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// userJob is the id of the job a user starts outside the Controller.
const userJob = flinkapi.JobID("0123456789abcdef0123456789abcdef")

// startByHand starts spec's job as a user of the Flink UI or REST API
// would: the jar uploaded and run by hand, with id userJob, and lets it
// run for d. The request log is cleared.
func (k *cluster) startByHand(spec JobSpec, d time.Duration) {
	k.t.Helper()
	ctx := context.Background()
	jar, err := k.c.UploadJar(ctx, k.jar)
	if err != nil {
		k.t.Fatal(err)
	}
	run := spec.Job.run()
	run.JobID = userJob
	if _, err := k.c.RunJar(ctx, jar, run); err != nil {
		k.t.Fatal(err)
	}
	k.srv.Clock().Advance(d)
	k.srv.ClearRequests()
}

// changing lists the requests in the log that could change a job or
// start one: anything but a GET.
func (k *cluster) changing() []string {
	var out []string
	for _, r := range k.srv.Requests() {
		if r.Method != "GET" {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// TestAdoptRunningJob: a spec that adopts a job started by hand records it
// as the deployment's job at the first call, with its start time, its
// newest state (the retained checkpoint) and as stable, sending GETs
// and nothing else; the job runs on, alone, and the spec converges
// without a request that changes anything. Plan reports the adoption.
func TestAdoptRunningJob(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			k.startByHand(spec, 10*time.Second)
			spec.Adopt = userJob

			plan, err := k.controller().Plan(context.Background(), spec, k.st)
			if err != nil || plan.Action != ActionAdopt || plan.Situation != SituationNeverDeployed || !plan.Target.equal(spec.Job) ||
				!strings.Contains(plan.String(), "start Adopt") {
				t.Fatalf("plan %v, %v", plan, err)
			}
			if len(k.changing()) != 0 || k.st.JobID != "" {
				t.Errorf("Plan sent %v, recorded job %s", k.changing(), k.st.JobID)
			}
			k.srv.ClearRequests()

			var transitions []Transition
			ctrl := k.controller()
			ctrl.OnTransition = func(tr Transition) { transitions = append(transitions, tr) }
			res, err := ctrl.Reconcile(context.Background(), spec, &k.st)
			if err != nil {
				t.Fatal(err)
			}
			if len(transitions) != 1 || transitions[0].Operation != "Adopt" || transitions[0].To != PhaseDone || transitions[0].JobID != string(userJob) {
				t.Errorf("transitions %+v", transitions)
			}
			if got := count(k.srv, "GET /jobs/:jobid") + count(k.srv, "GET /jobs/:jobid/checkpoints"); got != 2 || len(k.changing()) != 0 {
				t.Errorf("requests %v", routes(k.srv))
			}
			d, err := k.c.Job(context.Background(), userJob)
			if err != nil {
				t.Fatal(err)
			}
			stats, err := k.c.Checkpoints(context.Background(), userJob)
			if err != nil || stats.LatestCompleted == nil {
				t.Fatalf("checkpoints %+v, %v", stats, err)
			}
			st := k.st
			switch {
			case res.Outcome != OutcomeSucceeded || st.Action != ActionAdopt || st.JobID != userJob || st.JobState != flinkapi.JobRunning:
				t.Fatalf("adopt: %+v; status %+v", res, st)
			case !st.Deployed.equal(spec.Job) || !st.Stable.equal(spec.Job) || st.State != policy.Running || st.Reason != "AdoptSucceeded":
				t.Errorf("deployed %+v stable %+v state %s %s", st.Deployed, st.Stable, st.State, st.Reason)
			case d.StartTime.IsZero() || !st.DeployedAt.Equal(d.StartTime):
				t.Errorf("deployed at %v, the job started at %v", st.DeployedAt, d.StartTime)
			case st.Latest.Location == "" || st.Latest.Location != stats.LatestCompleted.ExternalPath || st.Latest.JobID != userJob:
				t.Errorf("latest %+v, the job's latest checkpoint %s", st.Latest, stats.LatestCompleted.ExternalPath)
			}
			k.srv.ClearRequests()
			k.until("converged", spec, 20, func(st *JobStatus) bool { return st.Converged(spec) })
			k.run(spec, 30*time.Second)
			if live := k.live(); len(live) != 1 || k.st.JobID != userJob || len(k.changing()) != 0 {
				t.Errorf("live %v, job %s, requests %v", live, k.st.JobID, k.changing())
			}
		})
	}
}

// TestAdoptThenUpgrade: a change of the spec after an adoption upgrades
// the adopted job: the new job starts from a savepoint of it, and the
// adopted job is stopped.
func TestAdoptThenUpgrade(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	spec.Adopt = userJob
	k.settle("adopted", spec)
	if k.st.JobID != userJob {
		t.Fatalf("job %s, want the adopted %s", k.st.JobID, userJob)
	}
	before, _ := k.srv.ReadCounts("/out")
	spec2 := k.spec("/out2")
	spec2.Adopt = userJob // ignored now that the status records a job
	k.settle("upgraded", spec2)
	old, _ := k.srv.Job(userJob)
	switch {
	case k.st.JobID == userJob || old.State != flinkapi.JobFinished:
		t.Fatalf("job %s; the adopted one is %s", k.st.JobID, old.State)
	case k.st.UpgradeFrom.JobID != userJob || k.job().RestoredFrom != k.st.UpgradeFrom.Location || k.st.UpgradeFrom.Location == "":
		t.Errorf("upgraded from %+v; the new job restored %q", k.st.UpgradeFrom, k.job().RestoredFrom)
	case len(k.live()) != 1:
		t.Errorf("live %v", k.live())
	}
	k.run(spec2, 10*time.Second)
	after, _ := k.srv.ReadCounts("/out2")
	for key, n := range before {
		if after[key] < n {
			t.Errorf("key %s: %d after the upgrade, %d before: the state was not carried over", key, after[key], n)
		}
	}
}

// TestAdoptRefused: an adoption of a job Flink does not know, of a FAILED
// or CANCELED job, reports AdoptFailed naming the job and its state and
// starts nothing, at any call; a malformed job id is refused by Validate,
// before any request.
func TestAdoptRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(k *cluster, spec JobSpec)
		want  string
	}{
		{"unknown", func(*cluster, JobSpec) {}, "unknown to Flink"},
		{"failed", func(k *cluster, spec JobSpec) {
			k.startByHand(spec, 10*time.Second)
			if err := k.srv.FailJob(userJob, "boom"); err != nil {
				t.Fatal(err)
			}
			k.srv.Clock().Advance(5 * time.Second)
		}, "is FAILED"},
		{"canceled", func(k *cluster, spec JobSpec) {
			k.startByHand(spec, 10*time.Second)
			if err := k.c.CancelJob(context.Background(), userJob); err != nil {
				t.Fatal(err)
			}
			k.srv.Clock().Advance(5 * time.Second)
		}, "is CANCELED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			tc.setup(k, spec)
			k.srv.ClearRequests()
			spec.Adopt = userJob
			plan := k.controller().PlanFor(spec, k.st, Observation{Read: false, Reachable: true}, k.srv.Clock().Now())
			if plan.Action != "" || plan.Reason != ReasonAdoptFailed {
				t.Errorf("PlanFor of an unknown job: %v", plan)
			}
			for range 5 {
				k.call(spec, false)
			}
			st := k.st
			if st.JobID != "" || st.Reason != ReasonAdoptFailed || st.State != policy.DeployFailed || !strings.Contains(st.Message, string(userJob)) ||
				!strings.Contains(st.Message, tc.want) {
				t.Errorf("status %s %s: %s (job %s)", st.State, st.Reason, st.Message, st.JobID)
			}
			if len(k.changing()) != 0 || count(k.srv, "GET /jobs/:jobid") != 5 {
				t.Errorf("requests %v", routes(k.srv))
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		k := newCluster(t, true)
		spec := k.spec("/out")
		spec.Adopt = "not-a-job-id"
		_, err := k.controller().Reconcile(context.Background(), spec, &k.st)
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "adopt: ") || !strings.Contains(err.Error(), "32 hexadecimal") || k.st.Reason != ReasonInvalidSpec {
			t.Errorf("Reconcile: %v; status %s", err, k.st.Reason)
		}
		if len(k.srv.Requests()) != 0 || k.st.JobID != "" {
			t.Errorf("requests %v, job %s", routes(k.srv), k.st.JobID)
		}
	})
}

// TestAdoptPendingNeverDeploys: while a fresh status has an adoption
// pending of a job the JobManager cannot be asked about, or one that
// does not run, PlanFor plans no deploy, whatever the situation says.
func TestAdoptPendingNeverDeploys(t *testing.T) {
	c := &Controller{PollInterval: time.Second}
	spec := JobSpec{Job: JobTemplate{JarID: "x_job.jar"}, Adopt: userJob}
	now := time.Now()
	for _, st := range []JobStatus{{}, {JobID: "ffffffffffffffffffffffffffffffff", Deleted: true}} {
		for _, obs := range []Observation{{}, {Reachable: true}, {Error: "connection refused"},
			{Reachable: true, Job: &flinkapi.JobDetails{ID: userJob, State: flinkapi.JobFinished}},
			{Reachable: true, Job: &flinkapi.JobDetails{ID: userJob, State: flinkapi.JobCancelling}}} {
			if p := c.PlanFor(spec, st, obs, now); p.Action != "" {
				t.Errorf("status %+v, observation %+v: plan %v", st, obs, p)
			}
		}
		obs := Observation{Reachable: true, Job: &flinkapi.JobDetails{ID: userJob, State: flinkapi.JobRestarting}}
		if p := c.PlanFor(spec, st, obs, now); p.Action != ActionAdopt {
			t.Errorf("a restarting job: plan %v", p)
		}
	}
	// A status that records a job adopts nothing: the same job is a
	// no-op, another is ignored.
	for _, id := range []flinkapi.JobID{userJob, "ffffffffffffffffffffffffffffffff"} {
		st := JobStatus{JobID: id, Deployed: spec.Job}
		obs := Observation{Read: true, Reachable: true, Job: &flinkapi.JobDetails{ID: id, State: flinkapi.JobRunning}}
		if p := c.PlanFor(spec, st, obs, now); p.Action == ActionAdopt || p.Situation != SituationRunning {
			t.Errorf("status of job %s: plan %v", id, p)
		}
	}
}

// TestAdoptLostWrite: the status written by the adopting call is lost;
// the caller goes on from the one before, and the next call adopts the
// job again, the same way, with GETs only.
func TestAdoptLostWrite(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.startByHand(spec, 10*time.Second)
	spec.Adopt = userJob
	before := *k.st.DeepCopy()
	k.call(spec, false)
	first := *k.st.DeepCopy()
	k.st = before // the write was lost
	k.call(spec, false)
	if k.st.JobID != userJob || k.st.Action != ActionAdopt || k.st.Latest.Location == "" {
		t.Fatalf("adopted again: %+v", k.st)
	}
	first.Latest, k.st.Latest = k.st.Latest, first.Latest // a checkpoint may have completed between the calls
	first.Message, first.Progress.Reason = k.st.Message, k.st.Progress.Reason
	if a, b := mustJSON(t, first), mustJSON(t, k.st); string(a) != string(b) {
		t.Errorf("adopted twice differently:\n%s\n%s", a, b)
	}
	k.settle("settled", spec)
	if len(k.changing()) != 0 || len(k.live()) != 1 || k.st.JobID != userJob {
		t.Errorf("requests %v, live %v", k.changing(), k.live())
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDetach: a Delete under OnDelete Detach ends at once, sends no
// request, leaves the job RUNNING and records the status deleted, the job
// detached; a later Reconcile of that status without Adopt deploys a job
// of its own and never touches the detached one, which runs on.
func TestDetach(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Savepoints.Interval = policy.Duration(10 * time.Second)
	k.settle("deployed", spec)
	k.until("a savepoint", spec, 100, func(st *JobStatus) bool { return st.Latest.Location != "" && !st.InFlight() })
	job, kept := k.st.JobID, k.st.Latest.Location
	spec.OnDelete = DeleteDetach
	k.srv.ClearRequests()
	res := k.call(spec, true)
	if !res.Done || res.Outcome != OutcomeSucceeded || len(k.srv.Requests()) != 0 {
		t.Fatalf("delete: %+v, requests %v", res, routes(k.srv))
	}
	st := k.st
	if !st.Deleted || st.Detached != job || st.JobID != job || st.Reason != ReasonDetached || st.State != policy.Deleted {
		t.Fatalf("status %+v", st)
	}
	if res := k.call(spec, true); !res.Done || len(k.srv.Requests()) != 0 {
		t.Errorf("delete again: %+v, requests %v", res, routes(k.srv))
	}
	k.srv.Clock().Advance(time.Minute)
	if info, _ := k.srv.Job(job); info.State != flinkapi.JobRunning {
		t.Fatalf("the detached job is %s", info.State)
	}

	// Reused without Adopt: a job of its own beside the detached one,
	// from the newest state the status knew.
	spec.OnDelete = ""
	k.settle("deployed anew", spec)
	if k.st.JobID == job || k.st.Detached != job || len(k.live()) != 2 || k.job().RestoredFrom != kept {
		t.Fatalf("job %s (detached %s) from %q, want from %q; live %v", k.st.JobID, k.st.Detached, k.job().RestoredFrom, kept, k.live())
	}
	for _, r := range k.srv.Requests() {
		if strings.Contains(r.Path, string(job)) {
			t.Errorf("the detached job was sent %s %s", r.Method, r.Path)
		}
	}
	if info, _ := k.srv.Job(job); info.State != flinkapi.JobRunning {
		t.Errorf("the detached job is %s", info.State)
	}
}

// TestDetachReadopt: a status reused after a detach with Adopt naming the
// detached job takes it back, with GETs only; a later change upgrades it.
func TestDetachReadopt(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	k.settle("deployed", spec)
	job := k.st.JobID
	spec.OnDelete = DeleteDetach
	k.call(spec, true)
	k.srv.Clock().Advance(10 * time.Second)
	k.srv.ClearRequests()
	spec.OnDelete, spec.Adopt = "", job
	k.call(spec, false)
	st := k.st
	if st.JobID != job || st.Action != ActionAdopt || st.Deleted || st.Detached != "" || st.Latest.Location == "" || len(k.changing()) != 0 {
		t.Fatalf("re-adopted: %+v; requests %v", st, k.changing())
	}
	k.settle("re-adopted", spec)
	spec2 := k.spec("/out2")
	spec2.Adopt = job
	k.settle("upgraded", spec2)
	if k.st.JobID == job || k.st.UpgradeFrom.JobID != job || len(k.live()) != 1 {
		t.Errorf("job %s from %+v; live %v", k.st.JobID, k.st.UpgradeFrom, k.live())
	}
}

// TestDeletePolicyValidated: Validate names an unknown OnDelete, and
// Delete refuses it without sending anything: the job runs on.
func TestDeletePolicyValidated(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.OnDelete = "detach"
	if err := spec.Validate(); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), `onDelete: unknown policy "detach"`) {
		t.Errorf("Validate: %v", err)
	}
	good := k.spec("/out")
	k.settle("deployed", good)
	k.srv.ClearRequests()
	_, err := k.controller().Delete(context.Background(), spec, &k.st)
	if !errors.Is(err, ErrInvalidSpec) || k.st.Deleted || len(k.srv.Requests()) != 0 || k.job().State != flinkapi.JobRunning {
		t.Errorf("Delete: %v; status deleted %v; requests %v", err, k.st.Deleted, routes(k.srv))
	}
}
