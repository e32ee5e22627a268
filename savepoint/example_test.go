package savepoint_test

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

var (
	start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	jobID = flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
)

// A savepoint is triggered, meets a leader election, and completes.
func ExampleAfterPoll() {
	trigger := flinkapi.TriggerID("0123456789abcdef0123456789abcdef")
	st := savepoint.Begin(flinkapi.OpSavepoint, jobID, trigger, savepoint.ReasonUpdate, start, start.Add(10*time.Minute))
	fmt.Println(st.State, "needs trigger:", st.NeedsTrigger())

	// The trigger was acknowledged (202).
	st = savepoint.AfterTrigger(st, flinkapi.Operation{Kind: flinkapi.OpSavepoint, JobID: jobID, TriggerID: trigger}, nil, start.Add(time.Second))
	fmt.Println(st.State, "needs poll:", st.NeedsPoll())

	// The JobManager is electing a leader (503): transient.
	leader := &flinkapi.APIError{StatusCode: 503, Method: "GET", Path: "/jobs/.../savepoints/...",
		Errors: []string{"Service temporarily unavailable due to an ongoing leader election. Please refresh."}}
	st = savepoint.AfterPoll(st, nil, leader, start.Add(5*time.Second))
	fmt.Println(st.State, st.Attempts, st.LastErrorCode, st.LastError)

	// COMPLETED with a location.
	done := &flinkapi.OperationResult{Status: flinkapi.StatusCompleted, Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab"}
	st = savepoint.AfterPoll(st, done, nil, start.Add(30*time.Second))
	fmt.Println(st.State, st.Location, "final:", st.Final())

	rec, _ := savepoint.RecordOf(st)
	fmt.Println(rec.Reason, rec.Time.Format(time.RFC3339))
	// Output:
	// Pending needs trigger: true
	// InFlight needs poll: true
	// InFlight 1 503 Service temporarily unavailable due to an ongoing leader election. Please refresh.
	// Succeeded s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab final: true
	// Update 2026-03-01T12:00:00Z
}

// A failed savepoint's Failure is the root cause of Flink's stack trace.
func ExampleAfterPoll_failure() {
	st := savepoint.Begin(flinkapi.OpSavepoint, jobID, "0123456789abcdef0123456789abcdef", savepoint.ReasonScheduled, start, time.Time{})
	st.State = savepoint.InFlight
	res := &flinkapi.OperationResult{Status: flinkapi.StatusCompleted, Failure: &flinkapi.FailureCause{
		Class: "java.util.concurrent.CompletionException",
		StackTrace: "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.\n" +
			"\tat org.apache.flink.runtime.scheduler.SchedulerBase.lambda$triggerSavepoint$5(SchedulerBase.java:1001)\n" +
			"Caused by: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.\n" +
			"\tat org.apache.flink.runtime.checkpoint.CheckpointCoordinator$CheckpointCanceller.run(CheckpointCoordinator.java:2216)\n",
	}}
	st = savepoint.AfterPoll(st, res, nil, start.Add(time.Minute))
	fmt.Printf("%s: %s\n", st.State, st.Failure)
	// Output:
	// Failed: Checkpoint expired before completing.
}

// Flink forgot the trigger id; the savepoint is found in the checkpoint
// history.
func ExampleRecover() {
	st := savepoint.Begin(flinkapi.OpStopWithSavepoint, jobID, "0123456789abcdef0123456789abcdef", savepoint.ReasonStop, start, start.Add(time.Hour))
	st.State = savepoint.InFlight
	gone := &flinkapi.APIError{StatusCode: 404, Method: "GET", Path: "/jobs/" + string(jobID) + "/savepoints/0123456789abcdef0123456789abcdef",
		Errors: []string{"There is no savepoint operation with triggerId=0123456789abcdef0123456789abcdef for job " + string(jobID) + "."}}
	st = savepoint.AfterPoll(st, nil, gone, start.Add(6*time.Minute))
	fmt.Println(st.State, "needs recovery:", st.NeedsRecovery())

	stats := &flinkapi.CheckpointStatistics{History: []flinkapi.CheckpointStats{
		{ID: 42, Status: flinkapi.CheckpointCompleted, CheckpointType: "CHECKPOINT", TriggerTime: start.Add(2 * time.Minute)},
		{ID: 41, Status: flinkapi.CheckpointCompleted, IsSavepoint: true, TriggerTime: start.Add(time.Second),
			ExternalPath: "s3://bucket/savepoints/savepoint-a1b2c3-41"},
		{ID: 40, Status: flinkapi.CheckpointCompleted, CheckpointType: "CHECKPOINT", TriggerTime: start.Add(-time.Minute)},
	}}
	st = savepoint.Recover(st, stats, start.Add(6*time.Minute))
	fmt.Println(st.State, st.Location, "recovered:", st.Recovered)
	// Output:
	// Lost needs recovery: true
	// Succeeded s3://bucket/savepoints/savepoint-a1b2c3-41 recovered: true
}

// A stop with savepoint whose answer was lost is sent again after Flink
// forgot its trigger id. The new operation fails: Flink does not know the
// job. Its job list shows the job FINISHED, by the first stop: the
// savepoint is looked for in the checkpoint history.
func ExampleAfterJobList() {
	trigger := flinkapi.TriggerID("0123456789abcdef0123456789abcdef")
	st := savepoint.Begin(flinkapi.OpStopWithSavepoint, jobID, trigger, savepoint.ReasonStop, start, start.Add(10*time.Minute))
	st = savepoint.AfterTrigger(st, flinkapi.Operation{Kind: flinkapi.OpStopWithSavepoint, JobID: jobID, TriggerID: trigger}, nil, start.Add(6*time.Minute))
	res := &flinkapi.OperationResult{Status: flinkapi.StatusCompleted, Failure: &flinkapi.FailureCause{
		Class:      "org.apache.flink.runtime.messages.FlinkJobNotFoundException",
		StackTrace: "org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (" + string(jobID) + ")\n",
	}}
	st = savepoint.AfterPoll(st, res, nil, start.Add(6*time.Minute))
	fmt.Println(st.State, "needs job list:", st.NeedsJobList(), "before:", st.Before, "operation failed:", st.OperationFailed)

	// GET /jobs lists the job FINISHED.
	st = savepoint.AfterJobList(st, true, flinkapi.JobFinished, nil, start.Add(6*time.Minute))
	fmt.Println(st.State, "needs recovery:", st.NeedsRecovery())

	// Had Flink not listed the job, it would be gone:
	gone := savepoint.AfterJobList(savepoint.AfterPoll(st, nil, &flinkapi.APIError{StatusCode: 404, Method: "GET",
		Path: "/jobs/" + string(jobID) + "/checkpoints", Errors: []string{"Job " + string(jobID) + " not found"}}, start.Add(7*time.Minute)),
		false, "", nil, start.Add(7*time.Minute))
	fmt.Println(gone.State, gone.Failure)
	// Output:
	// Unconfirmed needs job list: true before: InFlight operation failed: true
	// Lost needs recovery: true
	// JobGone Job a1b2c3d4e5f60718293a4b5c6d7e8f90 not found
}

func ExampleProgress_String() {
	p := savepoint.NewProgress(flinkapi.CheckpointStats{NumSubtasks: 4, NumAcknowledgedSubtasks: 3, StateSize: 1258291})
	fmt.Println(p)
	// Output:
	// 3/4 subtasks (75%), 1.2 MiB
}

func ExampleDue() {
	in := savepoint.ScheduleInput{
		Interval: time.Hour,
		JobState: flinkapi.JobRunning,
		JobStart: start,
		Last:     savepoint.Record{Location: "s3://bucket/sp-1", Time: start.Add(90 * time.Minute)},
	}
	due, reason, next := savepoint.Due(in, start.Add(2*time.Hour))
	fmt.Printf("due=%v reason=%q next=%s\n", due, reason, next.Format(time.Kitchen))

	due, reason, next = savepoint.Due(in, start.Add(3*time.Hour))
	fmt.Printf("due=%v reason=%q next=%s\n", due, reason, next.Format(time.Kitchen))

	in.ManualToken = "2026-03-01T14:05:00Z" // a user asked, e.g. through an annotation
	due, reason, _ = savepoint.Due(in, start.Add(2*time.Hour))
	fmt.Printf("due=%v reason=%q\n", due, reason)
	// Output:
	// due=false reason="" next=2:30PM
	// due=true reason="Scheduled" next=2:30PM
	// due=true reason="User"
}

func ExampleYoungerThan() {
	rec := savepoint.Record{Location: "s3://bucket/sp-1", Time: flinkapi.FromMillis(1772366400000)} // Flink's trigger_timestamp
	now := start.Add(90 * time.Minute)
	fmt.Println(savepoint.Age(rec, now), savepoint.YoungerThan(rec, 2*time.Hour, now), savepoint.YoungerThan(rec, time.Hour, now))
	// Output:
	// 1h30m0s true false
}

func ExampleChooseDisposals() {
	var h savepoint.History
	for i, reason := range []savepoint.Reason{savepoint.ReasonScheduled, savepoint.ReasonUpdate, savepoint.ReasonScheduled, savepoint.ReasonScheduled, savepoint.ReasonScheduled} {
		h = h.Add(savepoint.Record{Location: fmt.Sprintf("s3://bucket/sp-%d", i), Time: start.Add(time.Duration(i) * time.Hour), Reason: reason})
	}
	dispose := savepoint.ChooseDisposals(h.Records, savepoint.RetentionOptions{
		MaxCount: 2,
		InUse:    []string{"s3://bucket/sp-2"}, // the running job was restored from it
	}, start.Add(5*time.Hour))
	for _, r := range dispose {
		fmt.Println(r.Location, r.Reason)
	}
	// sp-1 (Update), sp-2 (in use) and sp-4 (newest) stay.
	// Output:
	// s3://bucket/sp-0 Scheduled
	// s3://bucket/sp-3 Scheduled
}

// A daily savepoint at 02:30 Berlin time. On 29 March 2026 the clocks
// skip from 02:00 to 03:00: that day it runs at 03:00, once.
func ExampleParseCron() {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := savepoint.ParseCron("30 2 * * *", berlin)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := time.Date(2026, 3, 28, 12, 0, 0, 0, berlin)
	for range 3 {
		t = c.Next(t)
		fmt.Println(t.Format("Mon 2006-01-02 15:04 MST"))
	}
	_, err = savepoint.ParseCron("0 0 30 2 *", berlin)
	fmt.Println(err)
	// Output:
	// Sun 2026-03-29 03:00 CEST
	// Mon 2026-03-30 02:30 CEST
	// Tue 2026-03-31 02:30 CEST
	// savepoint: invalid cron schedule "0 0 30 2 *": day of month "30" never occurs in month "2"
}
