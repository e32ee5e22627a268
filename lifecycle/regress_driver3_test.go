package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// TestDriverRetryWaitShowsJobNow: a JobManager fails over (with high
// availability) and the job is INITIALIZING when an upgrade to a
// parallelism above the cluster's task slots starts: its preflight
// refuses, and the upgrade ends Blocked with the job as it found it,
// starting (Deploying). While the upgrade waits for its retry the job
// moves on: it runs once recovered, a user cancels it, or a JobManager
// without high availability forgets it. The status waiting for the
// retry reports the job as Flink shows it then, not the Deploying of a
// job that was starting when the upgrade ended.
func TestDriverRetryWaitShowsJobNow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event func(k *cluster)
		state policy.DeploymentState
		sit   Situation
	}{
		{"recovered", func(*cluster) {}, policy.Running, SituationRunning},
		{"cancelled", func(k *cluster) {
			if err := k.c.CancelJob(context.Background(), k.st.JobID); err != nil {
				k.t.Fatal(err)
			}
		}, policy.Cancelled, SituationCancelled},
		{"lost", func(k *cluster) { k.srv.RestartJobManager(flinktest.RestartOptions{}) }, policy.Lost, SituationLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, true)
			spec := k.spec("/out")
			k.settle("deploy", spec)
			k.srv.RestartJobManager(flinktest.RestartOptions{HA: true})
			if s := k.job().State; s != flinkapi.JobInitializing {
				t.Fatalf("the job is %s after the failover, want INITIALIZING: the test shows nothing", s)
			}
			up := spec
			up.Job.Args = append(append([]string(nil), spec.Job.Args...), "--name", "v2")
			up.Job.Parallelism = 5 // 4 slots
			// The calls of the preflight take no time on the clock.
			for i := 0; !k.st.Progress.Done() || k.st.Action != ActionUpgrade; i++ {
				if i == 20 {
					t.Fatalf("the upgrade did not end: %+v", k.st)
				}
				k.reconcileOnce(up)
			}
			if k.st.Progress.Outcome != OutcomeBlocked || k.st.Progress.Replace.Decision != policy.ReasonPreflightRefused ||
				k.st.State != policy.Deploying || k.st.Situation != SituationStarting {
				t.Fatalf("the upgrade ended %s (%s, %s): %s/%s, situation %s; want Blocked by the preflight, the job starting",
					k.st.Progress.Outcome, k.st.Progress.Replace.Decision, k.st.Progress.Reason, k.st.State, k.st.Reason, k.st.Situation)
			}
			tc.event(k)
			k.srv.Clock().Advance(5 * time.Second) // the job recovers; the retry is 20 s away
			k.reconcileOnce(up)
			if k.st.Reason != ReasonRetryWait {
				t.Fatalf("after the blocked upgrade: %s/%s (%s), want a RetryWait", k.st.State, k.st.Reason, k.st.Message)
			}
			if k.st.State != tc.state || k.st.Situation != tc.sit {
				t.Errorf("waiting for the retry the status says %s (situation %s) while Flink shows the job %s; want %s (%s)",
					k.st.State, k.st.Situation, k.job().State, tc.state, tc.sit)
			}
		})
	}
}

// TestDriverUpgradeAfterCheckpointRequest: under the LastState mode a
// job without periodic checkpoints runs from a savepoint; a checkpoint
// request completes a checkpoint, newer than that savepoint, and the
// job's Job changes right after. The statistics the upgrade reads are
// answered from Flink's cache, filled before that checkpoint completed:
// they show none. The upgrade reads them again once the cache has
// passed, and starts the new job from the checkpoint, the job's newest
// state, not from the older savepoint.
func TestDriverUpgradeAfterCheckpointRequest(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "0"}
	spec.Update.Mode = policy.UpgradeLastState
	k.settle("deploy", spec)
	spec.Requests.Savepoint = "s1"
	k.until("savepoint request", spec, 100, requestDone(spec, RequestSavepoint))
	sp := k.st.Latest.Location
	if k.st.Progress.Outcome != OutcomeSucceeded || sp == "" {
		t.Fatalf("savepoint request %s (%s), latest %q", k.st.Progress.Outcome, k.st.Progress.Reason, sp)
	}
	k.run(spec, 30*time.Second)
	// The Flink UI shows the job's checkpoints: Flink's REST cache holds
	// its statistics for web.refresh-interval (3 s on the fake).
	if _, err := k.c.Checkpoints(context.Background(), k.st.JobID); err != nil {
		t.Fatal(err)
	}
	spec.Requests.Checkpoint = "c1"
	k.until("checkpoint request", spec, 100, requestDone(spec, RequestCheckpoint))
	id := k.st.Checkpoint.CheckpointID
	if k.st.Progress.Outcome != OutcomeSucceeded || id == 0 {
		t.Fatalf("checkpoint request %s (%s), checkpoint %d", k.st.Progress.Outcome, k.st.Progress.Reason, id)
	}
	old := k.st.JobID
	chk := ""
	for _, s := range k.srv.Snapshots() {
		if s.Job == old && !s.Savepoint && strings.HasSuffix(s.Location, fmt.Sprintf("/chk-%d", id)) {
			chk = s.Location
		}
	}
	if chk == "" {
		t.Fatalf("checkpoint %d of job %s is not on the fake", id, old)
	}
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.until("upgrade", spec, 200, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Done() && !st.InFlight()
	})
	if k.st.Progress.Outcome != OutcomeSucceeded {
		t.Fatalf("upgrade %s: %s", k.st.Progress.Outcome, k.st.Progress.Reason)
	}
	if got := k.job().RestoredFrom; got != chk {
		t.Errorf("the new job started from %q, want the checkpoint %s the request completed (newer than the savepoint %s)", got, chk, sp)
	}
}
