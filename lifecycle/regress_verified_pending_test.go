package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// runBody is the part of a jar run's body the tests below read.
type runBody struct {
	ProgramArgsList []string `json:"programArgsList"`
	SavepointPath   string   `json:"savepointPath"`
}

// jarRuns returns the jar runs sent with the program arguments args, by
// the restore path each carried.
func jarRuns(srv *flinktest.Server, args []string) []string {
	var paths []string
	for _, q := range reqlog.WithoutReplays(srv.Requests()) {
		var b runBody
		if q.Route != "POST /jars/:jarid/run" || json.Unmarshal([]byte(q.Body), &b) != nil || !slices.Equal(b.ProgramArgsList, args) {
			continue
		}
		paths = append(paths, b.SavepointPath)
	}
	return paths
}

// TestRefusedUpgradeRollsBack: with rollback enabled, an upgrade whose
// new job Flink refuses once the old job stopped (the jar run refused:
// SubmitFailed; the new job failing on the upgrade's savepoint:
// JobFailed) is followed at once by one rollback to the last stable
// template from the savepoint the upgrade stopped the old job with, and
// the refused template is not run again until the spec changes: one
// refused run in nine minutes, not one per retry interval.
func TestRefusedUpgradeRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		extra   []string
		fail    bool // the new job fails once submitted, before it was seen running
		outcome Outcome
	}{
		{"SubmitFailed", []string{"--rate", "0"}, false, OutcomeSubmitFailed},
		{"RestoreRefused", []string{"--max-parallelism", "64"}, false, OutcomeSubmitFailed},
		{"JobFailed", []string{"--name", "v2"}, true, OutcomeJobFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			spec.Rollback = RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}
			spec.Preflight.Disabled = true // Flink's start tells
			k.settle("create", spec)
			k.srv.Clock().Advance(5 * time.Second)
			stable := k.st.Deployed
			bad := spec
			bad.Job.Args = append(slices.Clone(spec.Job.Args), tc.extra...)
			if tc.fail {
				k.until("the new job submitted", bad, 300, func(st *JobStatus) bool {
					return st.Action == ActionUpgrade && st.Progress.Phase == PhaseWaitRunning && st.Progress.Submit.NewJobID != ""
				})
				k.srv.Clock().Advance(time.Second) // its tasks run; the upgrade has not read it yet
				if err := k.srv.FailJob(k.st.Progress.Submit.NewJobID, "java.lang.IllegalStateException: boom"); err != nil {
					t.Fatal(err)
				}
			}
			k.until("the upgrade refused", bad, 300, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
			if p := k.st.Progress; p.Outcome != tc.outcome || !stoppedOld(&p) || p.Savepoint.Location == "" {
				t.Fatalf("the upgrade ended %s (%s), old job %s, savepoint %q; the test needs a refused new job after a stop with savepoint",
					p.Outcome, p.Reason, p.Replace.Observed.State, p.Savepoint.Location)
			}
			from := k.st.Progress.Savepoint.Location
			start := k.srv.Clock().Now()
			k.until("the rollback", bad, 50, func(st *JobStatus) bool { return st.Action == ActionRollback && st.Progress.Done() })
			if k.srv.Clock().Now().Sub(start) >= 20*time.Second {
				t.Errorf("the rollback started %v after the refusal: it waited for the retry interval", k.srv.Clock().Now().Sub(start))
			}
			if k.st.Progress.Outcome != OutcomeSucceeded || !k.st.Deployed.equal(stable) || k.job().RestoredFrom != from || k.st.UpgradeFrom.Location != from {
				t.Fatalf("rollback: %s (%s); deployed the stable template %v, restored from %q, want %q (upgrade from %q)",
					k.st.Progress.Outcome, k.st.Progress.Reason, k.st.Deployed.equal(stable), k.job().RestoredFrom, from, k.st.UpgradeFrom.Location)
			}
			k.run(bad, 9*time.Minute)
			if runs := jarRuns(k.srv, bad.Job.Args); len(runs) != 1 {
				t.Errorf("%d jar runs of the refused template in 9 minutes, want 1: %v", len(runs), runs)
			}
			if runs := jarRuns(k.srv, stable.Args); len(runs) != 2 || runs[1] != from {
				t.Errorf("jar runs of the stable template %v: want its deploy and one rollback from %s", runs, from)
			}
			if k.st.Reason != ReasonRolledBack || len(k.live()) != 1 || !k.st.Deployed.equal(stable) {
				t.Errorf("after the rollback: %s (%s), live %v", k.st.Reason, k.st.Message, k.live())
			}
		})
	}
}

// TestRevertAfterRefusedUpgradeAtOnce: without rollback, an upgrade whose
// new job Flink refused once the old job stopped waits for RetryAt before
// it is tried again; a spec reverted to the stable template is a new spec
// and starts at once.
func TestRevertAfterRefusedUpgradeAtOnce(t *testing.T) {
	for _, extra := range [][]string{{"--rate", "0"}, {"--max-parallelism", "64"}} {
		t.Run(fmt.Sprint(extra), func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			spec.Preflight.Disabled = true
			k.settle("create", spec)
			k.srv.Clock().Advance(5 * time.Second)
			bad := spec
			bad.Job.Args = append(slices.Clone(spec.Job.Args), extra...)
			k.until("the upgrade refused", bad, 300, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
			if k.st.Progress.Outcome == OutcomeSucceeded || k.st.RetryAt.IsZero() {
				t.Fatalf("the upgrade ended %s, retry at %v", k.st.Progress.Outcome, k.st.RetryAt)
			}
			retryAt := k.st.RetryAt
			for i := 0; i < 5 && !k.st.InFlight(); i++ {
				k.call(spec, false)
			}
			if !k.st.InFlight() || !k.srv.Clock().Now().Before(retryAt) {
				t.Fatalf("the reverted spec did not start at once: %s %s (%s: %s), retry at %v, now %v", k.st.Action, k.st.Progress.Phase,
					k.st.Reason, k.st.Message, retryAt, k.srv.Clock().Now())
			}
			k.settle("reverted", spec)
			if len(k.live()) != 1 {
				t.Errorf("live %v", k.live())
			}
		})
	}
}

// TestDownJobWithPendingChangeRestartsFirst: in Savepoint mode without
// FallbackToLastState, a job that fails (or is lost) while a change of
// its Job is pending cannot be upgraded: no savepoint within the update
// policy's maximum age. It is brought back as the restart policy says
// (the deployed template from its newest state: the failed job's
// retained checkpoint, or the status's newest savepoint), then upgraded
// as the update mode says (stop with a savepoint, start from it), also
// with blue/green upgrades on. Nothing ends Blocked with nothing running.
func TestDownJobWithPendingChangeRestartsFirst(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lost      bool
		blueGreen bool
	}{
		{"failed", false, false},
		{"lost", true, false},
		{"failed/blue-green", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			spec.Update = policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Minute)}
			spec.BlueGreen.Enabled = tc.blueGreen
			k.settle("create", spec)
			if tc.lost {
				// A savepoint in the status, older than the update
				// policy's maximum age when the job is lost.
				spec.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v1")
				k.settle("a first upgrade", spec)
				if k.st.Latest.Location == "" {
					t.Fatal("no savepoint recorded")
				}
			}
			k.run(spec, 2*time.Minute)
			deployed, down := k.st.Deployed, k.st.JobID
			if tc.lost {
				k.srv.RestartJobManager(flinktest.RestartOptions{})
			} else if err := k.srv.FailJob(down, "java.lang.RuntimeException: boom"); err != nil {
				t.Fatal(err)
			}
			k.srv.Clock().Advance(2 * time.Second)
			next := spec
			next.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v2")
			var actions []string
			for i := 0; i < 300 && !(k.st.Deployed.equal(next.Job) && !k.st.InFlight() && k.st.State == policy.Running); i++ {
				k.call(next, false)
				if a := fmt.Sprintf("%s %s", k.st.Action, k.st.Progress.Outcome); k.st.Progress.Done() && (len(actions) == 0 || actions[len(actions)-1] != a) {
					actions = append(actions, a)
				}
				if k.st.Progress.Outcome == OutcomeBlocked && len(k.live()) == 0 {
					t.Fatalf("%s ended Blocked (%s) with nothing running: %s", k.st.Action, k.st.Progress.Replace.Decision, k.st.Progress.Reason)
				}
			}
			if !k.st.Deployed.equal(next.Job) || len(k.live()) != 1 {
				t.Fatalf("the change was not carried out: actions %v, %s (%s), live %v", actions, k.st.Reason, k.st.Message, k.live())
			}
			restarted := false
			for _, j := range k.srv.Jobs() {
				restarted = restarted || j.ID != down && slices.Equal(j.ProgramArgs, deployed.Args) && j.RestoredFrom != ""
			}
			if !restarted || k.st.Restarts != 1 {
				t.Errorf("the deployed template was not restarted from its state first: actions %v, restarts %d", actions, k.st.Restarts)
			}
			if k.job().RestoredFrom == "" || k.job().RestoredFrom != k.st.UpgradeFrom.Location {
				t.Errorf("the new job restored from %q, the upgrade's state %q", k.job().RestoredFrom, k.st.UpgradeFrom.Location)
			}
		})
	}
}

// statusJSON is st as the caller stores it.
func statusJSON(t *testing.T, st *JobStatus) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNestedHistoryOfNewerFormat: a JobStatus that holds a savepoint
// history or a health history a later flinkkit wrote decodes whole (an
// operator's cache reads the object after a downgrade); Reconcile and
// Delete refuse it where it is used, with an error matching
// ErrUnknownFormat, before they send or change anything.
func TestNestedHistoryOfNewerFormat(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	var stored map[string]json.RawMessage
	if err := json.Unmarshal([]byte(statusJSON(t, &k.st)), &stored); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"savepoints", "health"} {
		t.Run(field, func(t *testing.T) {
			m := maps.Clone(stored)
			m[field] = json.RawMessage(`{"formatVersion":99,"records":{"a":[1]},"samples":"x","jobID":7}`)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var st JobStatus
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("a status with a %s of format 99 does not decode: %v", field, err)
			}
			if st.JobID != k.st.JobID || st.Latest.Location != k.st.Latest.Location {
				t.Fatalf("the status did not decode whole: %+v", st)
			}
			before, sent := statusJSON(t, &st), len(k.srv.Requests())
			for _, del := range []bool{false, true} {
				c := k.controller()
				var err error
				if del {
					_, err = c.Delete(context.Background(), spec, &st)
				} else {
					_, err = c.Reconcile(context.Background(), spec, &st)
				}
				if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "format version 99") {
					t.Errorf("delete=%v: %v, want an error matching ErrUnknownFormat", del, err)
				}
			}
			if after := statusJSON(t, &st); after != before || len(k.srv.Requests()) != sent {
				t.Errorf("the refused status was changed (%v) or %d requests sent", after != before, len(k.srv.Requests())-sent)
			}
		})
	}
}

// forgedRecord is a Progress of a teardown of job forged into its record
// phase with a location Flink never reported.
func forgedRecord(job flinkapi.JobID, now time.Time) Progress {
	const loc = "file:/etc/passwd"
	return Progress{FormatVersion: FormatVersion, Operation: opTeardown, Target: job, Phase: PhaseRecord,
		Started: now, Deadline: now.Add(time.Minute), Replace: ReplaceProgress{PreviousJobID: job, StopOutcome: OutcomeSucceeded},
		Savepoint: SavepointProgress{Location: loc, Status: savepoint.Status{Location: loc, State: savepoint.Succeeded, TriggerTime: now, LastUpdate: now}}}
}

// TestForgedRecordNeverStored: a stored Progress of a teardown forged
// into its record phase with a location Flink never reported for the job
// is refused, by Teardown's Step and by the Controller's Delete, with a
// typed error; the restore-point store and the Progress are untouched.
func TestForgedRecordNeverStored(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	now := k.srv.Clock().Now()
	job := k.st.JobID

	p := forgedRecord(job, now)
	before := p
	op := &Teardown{Env: Env{Client: k.c, Clock: k.srv.Clock()}, Job: job, Store: k.store, Name: "app/counter"}
	if _, err := op.Step(context.Background(), &p); !errors.Is(err, ErrInvalidProgress) {
		t.Errorf("Teardown.Step: %v, want ErrInvalidProgress", err)
	}
	if rec, ok, _ := k.storeGet(); ok {
		t.Errorf("the store holds %+v", rec)
	}
	if !reflect.DeepEqual(p, before) {
		t.Errorf("the refused Progress was changed: %+v", p)
	}

	st := k.st.DeepCopy()
	st.Action, st.Target, st.Progress, st.ActionSpec = ActionTeardown, st.Deployed, forgedRecord(job, now), spec.DeepCopy()
	stored := statusJSON(t, st)
	_, err := k.controller().Delete(context.Background(), spec, st)
	if !errors.Is(err, ErrInvalidStatus) && !errors.Is(err, ErrInvalidProgress) {
		t.Errorf("Delete: %v, want a refusal", err)
	}
	if rec, ok, _ := k.storeGet(); ok {
		t.Errorf("the store holds %+v", rec)
	}
	if statusJSON(t, st) != stored {
		t.Errorf("the refused status was changed")
	}
	if len(k.live()) != 1 {
		t.Errorf("live %v", k.live())
	}
}

// TestRefusedProgressLeavesStatus: a status whose Progress in flight
// another operation, or the same for another job, wrote is refused by
// Reconcile before anything is sent or changed: not its format version,
// not its situation, not whether it settled.
func TestRefusedProgressLeavesStatus(t *testing.T) {
	for _, forge := range []func(p *Progress){
		func(p *Progress) { p.Operation = opRestart },
		func(p *Progress) { p.Target = "0123456789abcdef0123456789abcdef" },
	} {
		k := newCluster(t, false)
		spec := k.spec("/out")
		k.settle("create", spec)
		next := spec
		next.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v2")
		k.until("an upgrade in flight", next, 20, func(st *JobStatus) bool {
			return st.Action == ActionUpgrade && st.InFlight() && st.Progress.Operation != ""
		})
		forge(&k.st.Progress)
		k.st.FormatVersion, k.st.Situation, k.st.Settled = 4, SituationRunning, true
		stored, sent := statusJSON(t, &k.st), len(k.srv.Requests())
		_, err := k.controller().Reconcile(context.Background(), next, &k.st)
		if !errors.Is(err, ErrForeignProgress) {
			t.Errorf("Reconcile: %v, want ErrForeignProgress", err)
		}
		if got := statusJSON(t, &k.st); got != stored {
			t.Errorf("the refused status was changed:\n%s\nwas\n%s", got, stored)
		}
		if n := len(k.srv.Requests()) - sent; n != 0 {
			t.Errorf("%d requests sent for a refused status", n)
		}
	}
}

// TestRefusedRollbackWaits: a rollback that Flink refuses too (every jar
// run answered 400) is tried again after RetryInterval, not at every
// call.
func TestRefusedRollbackWaits(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Rollback = RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(time.Minute)}
	spec.Preflight.Disabled = true
	k.settle("create", spec)
	k.srv.Clock().Advance(5 * time.Second)
	stable := k.st.Deployed
	bad := spec
	bad.Job.Args = append(slices.Clone(spec.Job.Args), "--name", "v2")
	k.until("the new job submitted", bad, 300, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Phase == PhaseWaitRunning && st.Progress.Submit.NewJobID != ""
	})
	k.srv.Clock().Advance(time.Second)
	if err := k.srv.FailJob(k.st.Progress.Submit.NewJobID, "java.lang.IllegalStateException: boom"); err != nil {
		t.Fatal(err)
	}
	k.until("the upgrade failed", bad, 300, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 400, Route: "POST /jars/:jarid/run"}); err != nil {
		t.Fatal(err)
	}
	k.until("the rollback refused", bad, 100, func(st *JobStatus) bool { return st.Action == ActionRollback && st.Progress.Done() })
	k.run(bad, 5*time.Minute)
	if runs := jarRuns(k.srv, stable.Args); len(runs) > 1+int(5*time.Minute/(20*time.Second))+1 {
		t.Errorf("%d jar runs of the stable template in 5 minutes with a retry interval of 20s", len(runs))
	}
}
