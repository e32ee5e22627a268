package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
	"github.com/google/go-cmp/cmp"
)

// TestUpgradeFormat: a savepoint status of format 1 that waited for
// Flink's job list (its state, LastError starting with a fixed text)
// reads as the Unconfirmed status of format 2; nothing else changes.
func TestUpgradeFormat(t *testing.T) {
	const msg = "404: Job a1b2c3d4e5f60718293a4b5c6d7e8f90 not found"
	sp := func(state savepoint.State, lastError string) savepoint.Status {
		return savepoint.Status{Kind: flinkapi.OpSavepoint, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", State: state,
			Attempts: 2, LastError: lastError, LastErrorCode: 503}
	}
	unconfirmed := func(before savepoint.State, failed bool, failure string) savepoint.Status {
		st := sp(savepoint.Unconfirmed, "")
		st.Before, st.OperationFailed, st.Failure, st.LastErrorCode = before, failed, failure, 0
		return st
	}
	tests := []struct {
		name    string
		version int
		in      savepoint.Status
		want    savepoint.Status
	}{
		{"Pending after a 404", 1, sp(savepoint.Pending, notFound+msg), unconfirmed(savepoint.Pending, false, msg)},
		{"InFlight after a 404, format 0", 0, sp(savepoint.InFlight, notFound+msg), unconfirmed(savepoint.InFlight, false, msg)},
		{"Lost after a 404", 1, sp(savepoint.Lost, notFound+msg), unconfirmed(savepoint.Lost, false, msg)},
		{"InFlight after a failed operation", 1, sp(savepoint.InFlight, notFoundResult+"Could not find Flink job (x)"),
			unconfirmed(savepoint.InFlight, true, "Could not find Flink job (x)")},
		{"a transient error", 1, sp(savepoint.InFlight, "503: leader election"), sp(savepoint.InFlight, "503: leader election")},
		{"a final status", 1, sp(savepoint.JobGone, notFound+msg), sp(savepoint.JobGone, notFound+msg)},
		{"format 2", 2, sp(savepoint.InFlight, notFound+msg), sp(savepoint.InFlight, notFound+msg)},
		{"no savepoint", 1, savepoint.Status{}, savepoint.Status{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Progress{FormatVersion: tt.version, Savepoint: tt.in}
			upgradeFormat(&p)
			if diff := cmp.Diff(tt.want, p.Savepoint); diff != "" {
				t.Errorf("upgradeFormat (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStepFormat1WaitingForJobList steps a Progress that the previous
// release stored while its savepoint waited for Flink's job list: the
// next Step asks the list, as that release's would have, and writes
// format 2.
func TestStepFormat1WaitingForJobList(t *testing.T) {
	for _, tt := range []struct {
		name      string
		lastError string
		state     savepoint.State // after the Step
		outcome   Outcome         // at the end
		reason    string          // in the reason at the end
	}{
		{"after a 404 of the poll", notFound + "404: Job a1b2c3d4e5f60718293a4b5c6d7e8f90 not found", savepoint.InFlight, OutcomeSucceeded, "savepoint completed at"},
		{"after a failed operation", notFoundResult + "Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)", savepoint.Failed, OutcomeSavepointFailed,
			"Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90) (Flink lists the job RUNNING)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			op := &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}
			var p Progress
			for p.Savepoint.State != savepoint.InFlight {
				if _, err := op.Step(ctx, &p); err != nil {
					t.Fatal(err)
				}
			}
			// As the previous release stored it.
			p.FormatVersion, p.Savepoint.LastError, p.LastError = 1, tt.lastError, tt.lastError
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			p = Progress{}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			e.srv.ClearRequests()
			res, err := op.Step(ctx, &p)
			if err != nil {
				t.Fatal(err)
			}
			if got := routes(e.srv); len(got) != 1 || got[0] != "GET /jobs" {
				t.Fatalf("requests %v, want Flink's job list", got)
			}
			if p.FormatVersion != FormatVersion || p.Savepoint.State != tt.state || p.Savepoint.Before != "" || p.Savepoint.OperationFailed {
				t.Fatalf("after the Step: format %d, savepoint %+v; want %s", p.FormatVersion, p.Savepoint, tt.state)
			}
			for i := 0; !res.Done; i++ {
				if i == maxTestSteps {
					t.Fatalf("not done: %+v", p)
				}
				e.srv.Clock().Advance(res.RequeueAfter)
				if res, err = op.Step(ctx, &p); err != nil {
					t.Fatal(err)
				}
			}
			if res.Outcome != tt.outcome || !strings.Contains(p.Reason, tt.reason) {
				t.Errorf("%s (%s), want %s (%s)", res.Outcome, p.Reason, tt.outcome, tt.reason)
			}
		})
	}
}
