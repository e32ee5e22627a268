package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/policy"
)

// TestControllerBlueGreenKeptSavepointsInHistory: a blue/green upgrade
// that keeps the old job's final savepoint (KeepSavepoint) takes two
// savepoints of the old job: the one the new job starts from, then the
// one the old job stops with. Both are in the status's history once the
// upgrade ended, so that retention can dispose of them: after a second
// blue/green upgrade moved UpgradeFrom and Latest past the first one's,
// every savepoint the upgrades took is still in the history.
func TestControllerBlueGreenKeptSavepointsInHistory(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.BlueGreen = BlueGreenPolicy{Enabled: true, KeepSavepoint: true, Window: policy.Duration(time.Minute)}
	k.settle("create", spec)
	var restored []string
	for _, name := range []string{"v2", "v3"} {
		old := k.st.JobID
		spec.Job.Args = append(spec.Job.Args, "--name", name)
		k.until("blue/green to "+name, spec, 300, func(st *JobStatus) bool {
			return st.Action == ActionBlueGreen && !st.InFlight() && st.State == policy.Running && st.JobID != old
		})
		if k.st.Progress.Outcome != OutcomeSucceeded || k.st.JobID == old {
			t.Fatalf("blue/green to %s: %s (%s), job %s (old %s)", name, k.st.Progress.Outcome, k.st.Progress.Reason, k.st.JobID, old)
		}
		from := k.job().RestoredFrom
		if from == "" || from == k.st.Latest.Location {
			t.Fatalf("blue/green to %s: the new job restored from %q, the latest is %q: want the blue/green savepoint, older than the old job's final one",
				name, from, k.st.Latest.Location)
		}
		if k.st.UpgradeFrom.Location != from || k.st.UpgradeFrom.Time.IsZero() {
			t.Errorf("blue/green to %s: upgrade from %+v, want %s with its time", name, k.st.UpgradeFrom, from)
		}
		restored = append(restored, from)
	}
	in := map[string]bool{}
	for _, r := range k.st.Savepoints.Records {
		in[r.Location] = true
	}
	taken := 0
	for _, s := range k.srv.Snapshots() {
		if !s.Savepoint || s.Removed {
			continue
		}
		taken++
		if !in[s.Location] {
			t.Errorf("savepoint %s of job %s is on storage, not in the history %+v (latest %s, upgrade from %s, restored from %v)",
				s.Location, s.Job, k.st.Savepoints.Records, k.st.Latest.Location, k.st.UpgradeFrom.Location, restored)
		}
	}
	if taken != 4 {
		t.Errorf("%d savepoints on storage, want 4 (two per blue/green upgrade)", taken)
	}
}
