package flinktest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// TestSnapshots checks that Snapshots lists completed savepoints with the
// trigger id that took them and the time of their state, checkpoints
// without a trigger id, and keeps them across a JobManager restart.
func TestSnapshots(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{})
	f.advance(1500 * time.Millisecond) // a checkpoint or two
	trigger := flinkapi.NewTriggerID()
	before := f.srv.Clock().Now()
	op, err := f.c.TriggerSavepoint(f.ctx, id, flinkapi.SavepointRequest{TriggerID: trigger})
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	res := f.result(op)
	if !res.Completed() || res.Location == "" {
		t.Fatalf("savepoint %+v", res)
	}
	f.srv.RestartJobManager(flinktest.RestartOptions{})
	var sp *flinktest.Snapshot
	checkpoints := 0
	for _, s := range f.srv.Snapshots() {
		if s.Job != id {
			t.Errorf("snapshot of another job: %+v", s)
		}
		if !s.Savepoint {
			checkpoints++
			if s.TriggerID != "" || s.Taken.After(s.Completed) {
				t.Errorf("checkpoint %+v", s)
			}
			continue
		}
		sp = &s
	}
	if sp == nil || checkpoints == 0 {
		t.Fatalf("snapshots %+v", f.srv.Snapshots())
	}
	if sp.Location != res.Location || sp.TriggerID != trigger || !sp.Taken.Equal(before) || !sp.Completed.After(sp.Taken) || sp.Removed {
		t.Errorf("savepoint %+v; triggered %v with id %s at %s", *sp, before, trigger, res.Location)
	}
}

// TestInjected404OnOperationStatus pins the body of an injected 404 on an
// operation's status route: Flink looks the operation up by its key and
// answers that it has no such operation, never that the job is unknown.
func TestInjected404OnOperationStatus(t *testing.T) {
	f := newFake(t)
	id := f.running(flinkapi.RunJarRequest{})
	if err := f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: 1}); err != nil {
		t.Fatal(err)
	}
	trigger := flinkapi.NewTriggerID()
	status, body := f.raw(http.MethodGet, "/jobs/"+string(id)+"/savepoints/"+string(trigger), "")
	want := "There is no savepoint operation with triggerId=" + string(trigger) + " for job " + string(id) + "."
	if msg := firstError(t, body); status != http.StatusNotFound || !strings.Contains(msg, want) {
		t.Errorf("injected 404: %d %q, want %q", status, msg, want)
	}
	// Without the fault an unknown trigger id gets the same answer.
	status, body = f.raw(http.MethodGet, "/jobs/"+string(id)+"/savepoints/"+string(trigger), "")
	if msg := firstError(t, body); status != http.StatusNotFound || !strings.Contains(msg, want) {
		t.Errorf("unknown trigger: %d %q, want %q", status, msg, want)
	}
}
