package lifecycle

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
	"github.com/google/go-cmp/cmp"
)

// TestProgressRecordsMigrate: a Progress of an older format is read into
// the records of format 8, one of this format as it is, and one this
// release filled before its first Step (no format yet) keeps its records.
func TestProgressRecordsMigrate(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       Progress
	}{
		{"the slots of a BlueGreen", `{"formatVersion":7,"operation":"BlueGreen","phase":"CheckSlots","parallelism":3}`,
			Progress{FormatVersion: 7, Operation: opBlueGreen, Phase: PhaseCheckSlots, BlueGreen: BlueGreenProgress{Slots: 3}}},
		{"the slots of a Canary", `{"formatVersion":6,"operation":"Canary","parallelism":2}`,
			Progress{FormatVersion: 6, Operation: opCanary, BlueGreen: BlueGreenProgress{Slots: 2}}},
		{"the parallelism of a Rescale", `{"formatVersion":7,"operation":"Rescale","parallelism":4,"rescalePath":"InPlace","vertices":"a,b"}`,
			Progress{FormatVersion: 7, Operation: opRescale, Rescale: RescaleProgress{Parallelism: 4, Path: policy.RescaleInPlace, Vertices: "a,b"}}},
		{"a trigger and a location", `{"formatVersion":3,"operation":"Stop","strategy":"StopWithSavepoint","savepoint":{"triggerID":"t1","location":"s1"},"location":"s2","disposeFailed":1,"checkpointID":9}`,
			Progress{FormatVersion: 3, Operation: opStop, Stop: StopProgress{Strategy: StopWithSavepoint},
				Savepoint: SavepointProgress{Status: savepointStatus("t1", "s1"), Location: "s2"}, Dispose: DisposeProgress{Failed: 1}, Checkpoint: CheckpointProgress{ID: 9}}},
		{"a record filled before the first Step", `{"replace":{"request":{"path":"p","token":"r-1"}}}`,
			Progress{Replace: ReplaceProgress{Request: policy.RestoreRequest{Path: "p", Token: "r-1"}}}},
		{"a trigger filled before the first Step", `{"savepoint":{"status":{"triggerID":"t1"},"location":"s1"}}`,
			Progress{Savepoint: SavepointProgress{Status: savepointStatus("t1", ""), Location: "s1"}}},
		{"format 8", `{"formatVersion":8,"operation":"Upgrade","parallelism":5,"submit":{"newJobID":"n"},"replace":{"previousJobID":"o"}}`,
			Progress{FormatVersion: 8, Operation: opUpgrade, Submit: SubmitProgress{NewJobID: "n"}, Replace: ReplaceProgress{PreviousJobID: "o"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got Progress
			if err := json.Unmarshal([]byte(c.json), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s decodes to another Progress (-want +got):\n%s", c.json, diff)
			}
		})
	}
	var p Progress
	if err := json.Unmarshal([]byte(`{"formatVersion":7,"savepoint":[]}`), &p); err == nil {
		t.Error("a savepoint that is no object decodes without error")
	}
}

// savepointStatus is the status of a trigger id and a location.
func savepointStatus(trigger flinkapi.TriggerID, loc string) savepoint.Status {
	return savepoint.Status{TriggerID: trigger, Location: loc}
}

// TestSubOperationKeepsTheClock: an Upgrade runs a Stop and a Submit in
// its Progress, each stepping its own record; Steps counts every call of
// the Upgrade's Step once, and Started stays the Upgrade's first Step.
func TestSubOperationKeepsTheClock(t *testing.T) {
	e := newEnv(t)
	start := e.srv.Clock().Now()
	op := &Upgrade{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job, JarID: e.jar, Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	var p Progress
	calls := 0
	var phases []Phase
	res, err := Run(context.Background(), op, &p, func(r Report) {
		calls++
		phases = append(phases, r.Progress.Phase)
		if !r.Progress.Started.Equal(start) {
			t.Errorf("step %d (phase %s): started %v, want the Upgrade's first step %v", calls, r.Progress.Phase, r.Progress.Started, start)
		}
		if r.Progress.Steps != calls {
			t.Errorf("step %d (phase %s): %d steps counted", calls, r.Progress.Phase, r.Progress.Steps)
		}
	})
	if err != nil || res.Outcome != OutcomeSucceeded {
		t.Fatalf("Run = %+v, %v; progress %+v", res, err, p)
	}
	if p.Stop.Strategy == "" || p.Submit.NewJobID == "" || p.Savepoint.Location == "" {
		t.Errorf("the Stop's and the Submit's records are not set: %+v", p)
	}
	if !slices.Contains(phases, PhaseWaitStopped) || !slices.Contains(phases, PhaseWaitRunning) {
		t.Errorf("phases %v: no stop or no submission", phases)
	}
}
