package lifecycle

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestDeleteKeepsStateFoundAfterTeardown: the teardown's stop with a
// savepoint is sent (the audit before it failed to list the savepoints,
// or not), the savepoint completes, and a JobManager restart
// without high availability forgets the job and the trigger before the
// Controller read the answer. The teardown finds no job and ends
// JobGone; the audit that Delete owes then finds the savepoint on storage
// and makes it the status's newest state: the restore-point store
// records it too before Delete is done, for a later deploy under the
// name.
func TestDeleteKeepsStateFoundAfterTeardown(t *testing.T) {
	for _, listFails := range []bool{true, false} {
		t.Run(fmt.Sprintf("listFails=%v", listFails), func(t *testing.T) { deleteKeepsStateFound(t, listFails) })
	}
}

func deleteKeepsStateFound(t *testing.T, listFails bool) {
	k, fs, sp := auditCluster(t)
	spec := k.spec("/out")
	spec.Job.FlinkConfiguration["state.savepoints.dir"] = "file://" + sp
	k.settle("create", spec)
	job := k.st.JobID
	// The audit before the teardown fails to list the savepoints.
	var mu sync.Mutex
	failed := 0
	fs.fail = func(dir string) bool {
		mu.Lock()
		defer mu.Unlock()
		if listFails && strings.Contains(dir, sp) && failed == 0 {
			failed++
			return true
		}
		return false
	}
	for range 50 {
		if k.st.Progress.Savepoint.Status.State == savepoint.InFlight {
			break
		}
		k.call(spec, true)
	}
	if k.st.Action != ActionTeardown || k.st.Progress.Savepoint.Status.State != savepoint.InFlight {
		t.Fatalf("action %s: want the teardown's stop sent", k.st.Action)
	}
	k.srv.Clock().Advance(5 * time.Second)
	var taken string
	for _, s := range k.srv.Snapshots() {
		if s.Job == job && s.Savepoint && !s.Removed {
			taken = s.Location
		}
	}
	if taken == "" {
		t.Fatal("the stop's savepoint did not complete")
	}
	k.srv.RestartJobManager(flinktest.RestartOptions{})
	done := k.deleteUntilDone(spec, 500)
	if !done.Done || !within(k.st.Latest.Location, taken) {
		t.Fatalf("delete done %v (%s/%s), latest %q, want the savepoint %s found on storage", done.Done, k.st.State, k.st.Reason, k.st.Latest.Location, taken)
	}
	if rec, ok, err := k.storeGet(); err != nil || !ok || !within(rec.Location, taken) {
		t.Errorf("the store holds %q (%v, %v), want %s", rec.Location, ok, err, taken)
	}
}
