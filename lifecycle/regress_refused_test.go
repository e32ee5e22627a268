package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/policy"
)

// runsFrom counts the jar runs sent from path.
func runsFrom(srv *flinktest.Server, path string) int {
	n := 0
	for _, q := range reqlog.WithoutReplays(srv.Requests()) {
		if q.Route == "POST /jars/:jarid/run" && reqlog.BodyOf(q).SavepointPath == path {
			n++
		}
	}
	return n
}

// TestRefusedChosenCheckpointNeverLatest: an upgrade under LastState
// chose the job's retained checkpoint and cancelled the job, but the
// cancel did not take: the job ran on, a newer checkpoint subsumed the
// chosen one, and a JobManager without HA then lost the job. Flink
// refuses the run from the chosen checkpoint (SubmitFailed). That path
// is no restore point: it never becomes the status's Latest, and no
// later run uses it again.
func TestRefusedChosenCheckpointNeverLatest(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Update.Mode = policy.UpgradeLastState
	k.settle("create", spec)
	k.run(spec, 5*time.Second)
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "PATCH /jobs/:jobid", Times: 100}); err != nil {
		t.Fatal(err)
	}
	spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	k.until("the cancel sent", spec, 100, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Replace.RestoreKind == policy.KindCheckpoint && st.Progress.Replace.RestoreFrom != "" &&
			st.Progress.Phase == PhaseWaitStopped
	})
	chosen := k.st.Progress.Replace.RestoreFrom
	// The job runs on past the chosen checkpoint, then is lost.
	k.srv.Clock().Advance(5 * time.Second)
	if ok, _ := k.srv.SavepointExists(chosen); ok {
		t.Fatalf("the chosen checkpoint %s was not subsumed", chosen)
	}
	k.srv.ClearFaults()
	k.srv.RestartJobManager(flinktest.RestartOptions{})
	k.until("the upgrade refused", spec, 300, func(st *JobStatus) bool {
		return st.Action == ActionUpgrade && st.Progress.Done()
	})
	if runsFrom(k.srv, chosen) == 0 || k.st.Progress.Outcome != OutcomeSubmitFailed {
		t.Fatalf("the upgrade ended %s (%s) after %d runs from %s; the test needs a refused run", k.st.Progress.Outcome, k.st.Progress.Reason,
			runsFrom(k.srv, chosen), chosen)
	}
	runs := runsFrom(k.srv, chosen)
	for range 200 {
		k.call(spec, false)
		if k.st.Latest.Location == chosen {
			t.Fatalf("the refused checkpoint %s became the status's Latest (%s: %s)", chosen, k.st.Reason, k.st.Message)
		}
	}
	if n := runsFrom(k.srv, chosen); n > runs {
		t.Errorf("%d more jar runs from the refused checkpoint %s", n-runs, chosen)
	}
}
