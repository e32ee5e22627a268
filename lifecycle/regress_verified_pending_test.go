package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/reqlog"
	"github.com/flinkkit/flinkkit/policy"
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
					return st.Action == ActionUpgrade && st.Progress.Phase == PhaseWaitRunning && st.Progress.NewJobID != ""
				})
				k.srv.Clock().Advance(time.Second) // its tasks run; the upgrade has not read it yet
				if err := k.srv.FailJob(k.st.Progress.NewJobID, "java.lang.IllegalStateException: boom"); err != nil {
					t.Fatal(err)
				}
			}
			k.until("the upgrade refused", bad, 300, func(st *JobStatus) bool { return st.Action == ActionUpgrade && st.Progress.Done() })
			if p := k.st.Progress; p.Outcome != tc.outcome || !stoppedOld(&p) || p.Location == "" {
				t.Fatalf("the upgrade ended %s (%s), old job %s, savepoint %q; the test needs a refused new job after a stop with savepoint",
					p.Outcome, p.Reason, p.Observed.State, p.Location)
			}
			from := k.st.Progress.Location
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
					t.Fatalf("%s ended Blocked (%s) with nothing running: %s", k.st.Action, k.st.Progress.Decision, k.st.Progress.Reason)
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
