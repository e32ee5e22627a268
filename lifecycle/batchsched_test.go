package lifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the cron schedules

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// requests counts the requests of the fake's log since from whose route
// is route.
func requests(srv *flinktest.Server, from int, route string) int {
	n := 0
	for _, r := range srv.Requests()[from:] {
		if r.Route == route {
			n++
		}
	}
	return n
}

// TestControllerBoundedJob: a bounded job that FINISHED has its result
// recorded, counts as converged, is never restarted nor savepointed, also
// after the JobManager forgot it, and a Delete of it is done at once
// without a request.
func TestControllerBoundedJob(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out", "--records", "40")
			spec.Savepoints = SavepointPolicy{Interval: policy.Duration(2 * time.Second), Schedule: "* * * * *"}
			spec.Checkpoints = CheckpointPolicy{Interval: policy.Duration(time.Second)}
			k.until("the job finished", spec, 400, func(st *JobStatus) bool { return !st.Result.IsZero() })
			job := k.st.JobID
			r := k.st.Result
			if r.JobID != job || r.Accumulators["events"] != "40" || r.NetRuntime <= 0 || r.EndTime.IsZero() {
				t.Fatalf("result %+v of job %s", r, job)
			}
			if k.st.State != policy.Succeeded || k.st.Reason != string(policy.ReasonJobFinished) || !k.st.Converged(spec) {
				t.Errorf("state %s, reason %s, converged %v", k.st.State, k.st.Reason, k.st.Converged(spec))
			}
			if counts, err := k.srv.ReadCounts("/out"); err != nil || counts["key-0"]+counts["key-1"] != 40 {
				t.Errorf("counts %v (%v), want 40 events in all", counts, err)
			}
			from := len(k.srv.Requests())
			k.run(spec, 3*time.Minute)
			// Flink forgets the job (a JobManager restart without HA, or
			// jobstore.expiration-time): it is still finished.
			k.srv.RestartJobManager(flinktest.RestartOptions{})
			k.run(spec, 3*time.Minute)
			if len(k.srv.Jobs()) != 0 || k.st.JobID != job || k.st.State != policy.Succeeded || k.st.Restarts != 0 {
				t.Errorf("after 6 minutes: jobs %v, job %s (was %s), state %s, restarts %d", k.srv.Jobs(), k.st.JobID, job, k.st.State, k.st.Restarts)
			}
			for _, route := range []string{"POST /jobs/:jobid/savepoints", "POST /jobs/:jobid/checkpoints", "POST /jars/:jarid/run", "POST /jobs/:jobid/stop"} {
				if n := requests(k.srv, from, route); n != 0 {
					t.Errorf("%d requests %s to a finished job", n, route)
				}
			}
			before := len(k.srv.Requests())
			res := k.call(spec, true)
			if !res.Done || res.Outcome != OutcomeSucceeded || len(k.srv.Requests()) != before {
				t.Errorf("delete: %+v after %d requests", res, len(k.srv.Requests())-before)
			}
			if k.maxRequests > MaxRequestsPerCall {
				t.Errorf("a call sent %d requests", k.maxRequests)
			}
		})
	}
}

// TestControllerBoundedJobChanged: a new Job for a finished one runs it.
func TestControllerBoundedJobChanged(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out", "--records", "20")
	k.until("the job finished", spec, 400, func(st *JobStatus) bool { return !st.Result.IsZero() })
	first := k.st.JobID
	spec.Job.Args = append(spec.Job.Args, "--name", "again")
	k.until("the new job finished", spec, 400, func(st *JobStatus) bool { return st.Result.JobID == st.JobID && st.JobID != first })
	if !k.st.Converged(spec) || k.st.Deployed.Fingerprint() != spec.Job.Fingerprint() {
		t.Errorf("converged %v, deployed %+v", k.st.Converged(spec), k.st.Deployed)
	}
}

// TestControllerCronSavepoints: savepoints at the times of the schedule,
// and a Controller that was down over several of them takes one.
func TestControllerCronSavepoints(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.Savepoints = SavepointPolicy{Schedule: "*/2 * * * *", TimeZone: "Asia/Kolkata"} // :30 offset: still every even minute of the hour
			k.settle("create", spec)
			k.run(spec, 10*time.Minute)
			scheduled := k.st.Savepoints.Records
			if n := len(scheduled); n < 4 || n > 6 {
				t.Fatalf("%d savepoints in 10 minutes on */2: %+v", n, scheduled)
			}
			for _, r := range scheduled {
				if at := r.Time.In(time.UTC); at.Minute()%2 != 0 || at.Second() > 20 {
					t.Errorf("savepoint at %v: want within seconds after an even minute", at)
				}
			}
			// Down for over 11 minutes, back 5 seconds into an odd minute:
			// five times missed, one savepoint taken, the next at the next
			// even minute.
			back := k.srv.Clock().Now().Add(11 * time.Minute).Truncate(time.Minute)
			if back.Minute()%2 == 0 {
				back = back.Add(time.Minute)
			}
			k.srv.Clock().Advance(back.Add(5 * time.Second).Sub(k.srv.Clock().Now()))
			n := len(k.st.Savepoints.Records)
			k.run(spec, 50*time.Second)
			if got := len(k.st.Savepoints.Records) - n; got != 1 {
				t.Errorf("%d savepoints in the odd minute after the missed times, want 1", got)
			}
			k.run(spec, 30*time.Second)
			if got := len(k.st.Savepoints.Records) - n; got != 2 {
				t.Errorf("%d savepoints by the next even minute, want 2", got)
			}
		})
	}
}

// TestSpecScheduleValidation: a bad schedule or zone is named.
func TestSpecScheduleValidation(t *testing.T) {
	k := newCluster(t, false)
	for sp, want := range map[SavepointPolicy]string{
		{Schedule: "61 * * * *"}:                       "savepoints.schedule",
		{Schedule: "@daily", TimeZone: "Mars/Olympus"}: `savepoints.timeZone "Mars/Olympus"`,
		{Schedule: "@daily", TimeZone: "Local"}:        `savepoints.timeZone "Local"`,
		{TimeZone: "Europe/Berlin"}:                    "without a schedule",
		{Interval: policy.Duration(-time.Second)}:      "must not be negative",
	} {
		spec := k.spec("/out")
		spec.Savepoints = sp
		if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", sp, err, want)
		}
	}
	spec := k.spec("/out")
	spec.Checkpoints.Interval = policy.Duration(-time.Second)
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "checkpoints.interval") {
		t.Errorf("negative checkpoint interval: %v", err)
	}
	spec.Checkpoints.Interval = 0
	spec.Savepoints = SavepointPolicy{Schedule: "@hourly", TimeZone: "America/New_York"}
	if err := spec.Validate(); err != nil {
		t.Errorf("valid schedule: %v", err)
	}
}

// TestControllerTriggeredCheckpoints: a job with a long own checkpoint
// interval gets a checkpoint every Checkpoints.Interval through the REST
// API, each trigger id stored before it is sent; a lost trigger and a
// refused one are recorded and tried again, and the job runs on.
func TestControllerTriggeredCheckpoints(t *testing.T) {
	for _, resume := range []bool{false, true} {
		t.Run(fmt.Sprintf("resume=%v", resume), func(t *testing.T) {
			k := newCluster(t, resume)
			spec := k.spec("/out")
			spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "600000"}
			k.call(spec, false)
			k.until("running", spec, 300, func(st *JobStatus) bool { return !st.InFlight() && st.State == policy.Running })
			spec.Checkpoints.Interval = policy.Duration(20 * time.Second)
			from := len(k.srv.Requests())
			k.run(spec, 2*time.Minute)
			triggers := requests(k.srv, from, "POST /jobs/:jobid/checkpoints")
			var completed int
			var ids []int64
			for _, s := range k.srv.Snapshots() {
				if !s.Savepoint && s.Job == k.st.JobID {
					completed++
					ids = append(ids, s.CheckpointID)
				}
			}
			if triggers < 5 || triggers > 7 || completed < 5 || k.st.Checkpoint.CheckpointID == 0 || k.st.Checkpoint.Failures != 0 {
				t.Fatalf("in 2 minutes every 20s: %d triggers, %d checkpoints %v, status %+v", triggers, completed, ids, k.st.Checkpoint)
			}
			// Every trigger id was stored before it was sent: the log
			// shows each id once acknowledged, in order.
			if k.maxRequests > MaxRequestsPerCall {
				t.Errorf("a call sent %d requests", k.maxRequests)
			}

			// A trigger answered 503 is sent again with the same id.
			if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /jobs/:jobid/checkpoints", Times: 1}); err != nil {
				t.Fatal(err)
			}
			last := k.st.Checkpoint.CheckpointID
			from = len(k.srv.Requests())
			k.run(spec, 30*time.Second)
			var bodies []string
			for _, r := range k.srv.Requests()[from:] {
				if r.Route == "POST /jobs/:jobid/checkpoints" {
					bodies = append(bodies, r.Body)
				}
			}
			if len(bodies) < 2 || bodies[0] != bodies[1] || k.st.Checkpoint.CheckpointID <= last {
				t.Errorf("after a 503: trigger bodies %q, checkpoint %d (was %d)", bodies, k.st.Checkpoint.CheckpointID, last)
			}

			// Flink forgets the trigger: a failure, counted, then a new one.
			if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: "GET /jobs/:jobid/checkpoints/:triggerid", Times: 1}); err != nil {
				t.Fatal(err)
			}
			k.until("a lost trigger recorded", spec, 200, func(st *JobStatus) bool { return st.Checkpoint.Failures == 1 })
			if !strings.Contains(k.st.Checkpoint.Failure, "forgot") || k.st.State != policy.Running {
				t.Errorf("lost trigger: %+v, state %s", k.st.Checkpoint, k.st.State)
			}
			last = k.st.Checkpoint.CheckpointID
			k.run(spec, time.Minute)
			if k.st.Checkpoint.Failures != 0 || k.st.Checkpoint.CheckpointID <= last || len(k.live()) != 1 {
				t.Errorf("after the lost trigger: %+v, live %v", k.st.Checkpoint, k.live())
			}
		})
	}
}

// TestCheckpointTriggerNotSentTwiceAfterCrash: a Controller that recorded
// a trigger and died before sending it sends that same id when called
// again; one that sent it and lost the answer polls it.
func TestCheckpointTriggerNotSentTwiceAfterCrash(t *testing.T) {
	k := newCluster(t, true)
	spec := k.spec("/out")
	spec.Job.Args = []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "600000"}
	spec.Checkpoints.Interval = policy.Duration(20 * time.Second)
	k.call(spec, false)
	k.until("a trigger recorded", spec, 400, func(st *JobStatus) bool {
		return st.Action == ActionCheckpoint && st.InFlight() && st.Progress.Savepoint.Status.TriggerID != "" && st.Progress.Savepoint.Status.State == savepoint.Pending
	})
	recorded := k.st.Progress.Savepoint.Status.TriggerID
	// The trigger is sent, Flink takes it, and the answer is lost.
	if err := k.srv.Inject(flinktest.Fault{Kind: flinktest.FaultReset, After: true, Route: "POST /jobs/:jobid/checkpoints", Times: 1}); err != nil {
		t.Fatal(err)
	}
	from := len(k.srv.Requests())
	k.until("the checkpoint completed", spec, 200, func(st *JobStatus) bool { return st.Checkpoint.CheckpointID > 0 })
	var sent []string
	for _, r := range k.srv.Requests()[from:] {
		if r.Route == "POST /jobs/:jobid/checkpoints" {
			sent = append(sent, r.Body)
		}
	}
	if len(sent) != 2 || sent[0] != sent[1] || !strings.Contains(sent[0], string(recorded)) {
		t.Errorf("triggers sent %q, want the recorded id %s twice", sent, recorded)
	}
	n := 0
	for _, s := range k.srv.Snapshots() {
		if !s.Savepoint && s.Job == k.st.JobID {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d checkpoints of the job, want 1", n)
	}
}

// TestNoCheckpointStateWithoutPolicy: a spec without Checkpoints leaves
// JobStatus.Checkpoint empty.
func TestNoCheckpointStateWithoutPolicy(t *testing.T) {
	k := newCluster(t, false)
	spec := k.spec("/out")
	k.settle("create", spec)
	k.run(spec, time.Minute)
	if k.st.Checkpoint != (CheckpointTrigger{}) || requests(k.srv, 0, "POST /jobs/:jobid/checkpoints") != 0 {
		t.Errorf("checkpoint state %+v without a policy", k.st.Checkpoint)
	}
}
