package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// lateSpec is a spec whose periodic savepoints (every 5 minutes) have a
// 30 s deadline.
func lateSpec(k *cluster) JobSpec {
	spec := k.spec("/out")
	spec.Savepoints = SavepointPolicy{Interval: policy.Duration(5 * time.Minute)}
	spec.Update.SavepointDeadline = policy.Duration(30 * time.Second)
	return spec
}

// savepointsTaken are the savepoints of the fake's storage the
// deployment's jobs completed, by location.
func savepointsTaken(k *cluster) []flinktest.Snapshot {
	var out []flinktest.Snapshot
	for _, s := range k.srv.Snapshots() {
		if s.Savepoint {
			out = append(out, s)
		}
	}
	return out
}

// triggers counts the savepoint triggers sent.
func triggers(k *cluster) int {
	n := 0
	for _, r := range k.srv.Requests() {
		if r.Route == "POST /jobs/:jobid/savepoints" {
			n++
		}
	}
	return n
}

// TestLateSavepointsRecorded: with a 30 s savepoint deadline and
// savepoints that take 90 s, every periodic savepoint times out at its
// deadline and completes later: each is recorded in the history (and
// is Latest), none counts as failed, and no new one is triggered while
// one is looked up. Uninterrupted and with the status sent through JSON
// after every call.
func TestLateSavepointsRecorded(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume, flinktest.WithSavepointDuration(90*time.Second))
			spec := lateSpec(k)
			k.settle("deploy", spec)
			timedOut, wasPending := 0, false
			for end := k.srv.Clock().Now().Add(31 * time.Minute); k.srv.Clock().Now().Before(end); {
				before := k.st.Progress
				k.call(spec, false)
				if k.st.SavepointFailures != 0 {
					t.Fatalf("call %d: %d savepoint failures counted, want 0 (progress %+v, late %+v)", k.calls, k.st.SavepointFailures, k.st.Progress, k.st.LateSavepoint)
				}
				if k.st.Action == ActionSavepoint && k.st.Progress.Done() && !before.Done() && k.st.Progress.Outcome == OutcomeTimedOut {
					timedOut++
				}
				if k.st.LateSavepoint.Pending() {
					wasPending = true
					if k.st.InFlight() && k.st.Action == ActionSavepoint && k.st.Progress.Savepoint.Status.TriggerID != k.st.LateSavepoint.TriggerID {
						t.Fatalf("call %d: a periodic savepoint was triggered while %s is looked up", k.calls, k.st.LateSavepoint.TriggerID)
					}
				}
				if k.maxRequests > MaxRequestsPerCall {
					t.Fatalf("call %d sent %d requests", k.calls, k.maxRequests)
				}
			}
			k.until("the last lookup", spec, 200, func(st *JobStatus) bool { return !st.LateSavepoint.Pending() && !st.InFlight() })
			taken := savepointsTaken(k)
			if timedOut < 5 || !wasPending || len(taken) < 5 {
				t.Fatalf("%d periodic savepoints timed out, %d completed on storage; want 5 or more late ones", timedOut, len(taken))
			}
			if triggers(k) != len(taken) {
				t.Errorf("%d triggers sent for %d savepoints", triggers(k), len(taken))
			}
			for _, s := range taken {
				if !hasLocation(k.st.Savepoints.Records, s.Location) {
					t.Errorf("savepoint %s, completed at %s, is not in the history %+v", s.Location, s.Completed, k.st.Savepoints.Records)
				}
			}
			newest := taken[len(taken)-1]
			if k.st.Latest.Location != newest.Location || k.st.Latest.Reason != savepoint.ReasonScheduled {
				t.Errorf("latest %+v, want the newest late savepoint %s", k.st.Latest, newest.Location)
			}
			if k.st.SavepointFailures != 0 {
				t.Errorf("%d savepoint failures", k.st.SavepointFailures)
			}
		})
	}
}

// TestLateSavepointFails: a periodic savepoint that times out at its
// deadline and fails later counts as one failure once Flink says it
// failed, not at its deadline; the next one, which completes late,
// ends the run of failures.
func TestLateSavepointFails(t *testing.T) {
	k := newCluster(t, true, flinktest.WithSavepointDuration(90*time.Second))
	spec := lateSpec(k)
	k.settle("deploy", spec)
	k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Job: k.st.JobID, Times: 1})
	k.until("the first savepoint times out", spec, 500, func(st *JobStatus) bool { return st.LateSavepoint.Pending() })
	if k.st.SavepointFailures != 0 || k.st.Progress.Outcome != OutcomeTimedOut {
		t.Fatalf("at the deadline: %d failures, outcome %s", k.st.SavepointFailures, k.st.Progress.Outcome)
	}
	trigger := k.st.LateSavepoint.TriggerTime
	k.until("the lookup ends", spec, 500, func(st *JobStatus) bool { return !st.LateSavepoint.Pending() })
	if k.st.SavepointFailures != 1 || len(k.st.Savepoints.Records) != 0 {
		t.Fatalf("after the late failure: %d failures, history %+v", k.st.SavepointFailures, k.st.Savepoints.Records)
	}
	if late := k.srv.Clock().Now().Sub(trigger); late < 90*time.Second || late > 2*time.Minute {
		t.Errorf("the failure was counted %v after the trigger, want soon after Flink failed it (90 s)", late)
	}
	// Counted once, also while nothing else happens.
	k.run(spec, 2*time.Minute)
	if k.st.SavepointFailures != 1 {
		t.Fatalf("%d failures two minutes later, want 1", k.st.SavepointFailures)
	}
	k.until("the next late savepoint is recorded", spec, 500, func(st *JobStatus) bool { return len(st.Savepoints.Records) == 1 })
	if k.st.SavepointFailures != 0 {
		t.Errorf("%d failures after a late savepoint completed, want 0", k.st.SavepointFailures)
	}
}

// TestLateSavepointGivesUp: a savepoint still in progress past the job's
// checkpoint timeout (10 minutes, read from Flink) and the minute after
// it is given up, counted as one failure; nothing else was triggered
// meanwhile, and each call sent at most MaxRequestsPerCall requests.
func TestLateSavepointGivesUp(t *testing.T) {
	k := newCluster(t, false, flinktest.WithSavepointDuration(40*time.Minute))
	spec := lateSpec(k)
	k.settle("deploy", spec)
	k.until("the first savepoint times out", spec, 500, func(st *JobStatus) bool { return st.LateSavepoint.Pending() })
	l := k.st.LateSavepoint
	k.until("the lookup ends", spec, 2000, func(st *JobStatus) bool { return !st.LateSavepoint.Pending() })
	now := k.srv.Clock().Now()
	if gave := now.Sub(l.TriggerTime); gave < 11*time.Minute || gave > 12*time.Minute {
		t.Errorf("given up %v after the trigger, want 11 minutes (Flink's timeout and a minute)", gave)
	}
	if k.st.SavepointFailures != 1 || len(k.st.Savepoints.Records) != 0 || triggers(k) != 1 {
		t.Errorf("given up: %d failures, history %+v, %d triggers", k.st.SavepointFailures, k.st.Savepoints.Records, triggers(k))
	}
	if k.maxRequests > MaxRequestsPerCall {
		t.Errorf("a call sent %d requests", k.maxRequests)
	}
	// The schedule goes on.
	k.until("the next savepoint", spec, 500, func(st *JobStatus) bool { return triggers(k) == 2 })
}

// TestLateSavepointLostWrite: the status written by the call that
// found a late savepoint completed is lost (the caller crashed), and
// the caller is back only after Flink forgot the trigger id: the
// lookup, from the status stored before, finds the savepoint in the
// job's checkpoint history and records it, not counted as failed.
func TestLateSavepointLostWrite(t *testing.T) {
	k := newCluster(t, true, flinktest.WithSavepointDuration(90*time.Second), flinktest.WithStoreDuration(time.Minute))
	spec := lateSpec(k)
	k.settle("deploy", spec)
	k.until("the first savepoint times out", spec, 500, func(st *JobStatus) bool { return st.LateSavepoint.Pending() })
	var stored JobStatus
	for range 500 {
		stored = *k.st.DeepCopy()
		k.call(spec, false)
		if !k.st.LateSavepoint.Pending() {
			break
		}
	}
	if len(k.st.Savepoints.Records) != 1 {
		t.Fatalf("the late savepoint was not recorded: %+v", k.st.Savepoints.Records)
	}
	want := k.st.Savepoints.Records[0].Location
	k.st = stored // the write is lost
	k.srv.Clock().Advance(3 * time.Minute)
	k.srv.ClearRequests()
	k.until("the lookup ends again", spec, 500, func(st *JobStatus) bool { return !st.LateSavepoint.Pending() })
	forgotten, history := 0, 0
	for _, r := range k.srv.Requests() {
		switch {
		case r.Route == "GET /jobs/:jobid/savepoints/:triggerid" && r.Status == 404:
			forgotten++
		case r.Route == "GET /jobs/:jobid/checkpoints":
			history++
		}
	}
	if forgotten == 0 || history == 0 {
		t.Errorf("after the lost write: %d answers that Flink forgot the trigger id, %d reads of the history; want both", forgotten, history)
	}
	if len(k.st.Savepoints.Records) != 1 || k.st.Savepoints.Records[0].Location != want || k.st.Latest.Location != want || k.st.SavepointFailures != 0 {
		t.Errorf("after the lost write: history %+v, latest %+v, %d failures; want %s recorded", k.st.Savepoints.Records, k.st.Latest, k.st.SavepointFailures, want)
	}
}

// TestLateSavepointBeforeDelete: a periodic savepoint outlives its
// deadline, and the deployment is deleted before it completes: Delete
// tears the job down, then looks the late savepoint up until it is
// recorded, and with DisposeOnDelete disposes of it: no savepoint of
// the deployment stays on storage unrecorded.
func TestLateSavepointBeforeDelete(t *testing.T) {
	k := newCluster(t, true, flinktest.WithSavepointDuration(90*time.Second))
	spec := lateSpec(k)
	spec.Savepoints.DisposeOnDelete = true
	k.settle("deploy", spec)
	k.until("a late savepoint", spec, 2000, func(st *JobStatus) bool { return st.LateSavepoint.Pending() })
	late := k.st.LateSavepoint.TriggerID
	var res Result
	for range 500 {
		if res = k.call(spec, true); res.Done {
			break
		}
	}
	if !res.Done || k.st.LateSavepoint.Pending() {
		t.Fatalf("delete done %v, late savepoint %+v", res.Done, k.st.LateSavepoint)
	}
	for _, s := range savepointsTaken(k) {
		if s.Removed {
			continue
		}
		if !inHistory(k.st, s.Location) {
			t.Errorf("savepoint %s (trigger %s; the late one %s) is on storage, not in the history", s.Location, s.TriggerID, late)
		}
	}
}
