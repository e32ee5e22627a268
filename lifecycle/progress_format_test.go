package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/formattest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// goldenProgress is the Progress of the format-version-1 fixture: every
// field set. It is as fixed as the file.
var goldenProgress = func() Progress {
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 12, 0, s, 250_000_000, time.UTC) }
	return Progress{
		FormatVersion: 1, Operation: "Upgrade", Target: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
		Phase: PhaseDone, JobID: "0123456789abcdef0123456789abcdef", Requests: 1,
		Started: at(4), Deadline: at(5), Outcome: OutcomeSucceeded, Reason: "the new job is RUNNING", LastError: "connection refused", Steps: 17,
		Savepoint: SavepointProgress{
			Status: savepoint.Status{Kind: "stop-with-savepoint", JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", TriggerID: "00112233445566778899aabbccddeeff",
				TriggerTime: at(1), Deadline: at(2), Reason: savepoint.ReasonUpdate, State: savepoint.Unconfirmed,
				Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", Recovered: true, Failure: "Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)",
				Attempts: 2, LastError: "503: leader election", LastErrorCode: 503, LastUpdate: at(3), Before: savepoint.InFlight, OperationFailed: true},
			Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab"},
		Stop:   StopProgress{Strategy: StopWithSavepoint},
		Submit: SubmitProgress{JarID: "d1e2f3_app.jar", NewJobID: "0123456789abcdef0123456789abcdef", Adopted: true},
		Replace: ReplaceProgress{PreviousJobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
			Observed: Observed{State: "FINISHED", Missing: true, Since: at(6), End: at(7), Checkpoint: "s3://bucket/checkpoints/chk-9",
				CheckpointTime: at(8), Latest: savepoint.Record{Location: "s3://bucket/savepoints/savepoint-old", Time: at(9), Reason: savepoint.ReasonScheduled,
					JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
				StatsAfter: at(10), Adopt: "fedcba9876543210fedcba9876543210", Lookups: 2},
			Decision: policy.ReasonSavepointBeforeUpdate, RestoreFrom: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab",
			RestoreKind: policy.KindSavepoint, Attempts: 1, StopOutcome: OutcomeSucceeded,
			Request: policy.RestoreRequest{FormatVersion: 1, Path: "s3://bucket/savepoints/savepoint-by-hand", Token: "t-1", Time: at(11), CheckAge: true,
				AllowNonRestoredState: true, CancelWithoutSavepoint: true}},
		Teardown: TeardownProgress{Recorded: true},
		Dispose:  DisposeProgress{Disposed: 3, Failed: 1, Disposal: "99887766554433221100ffeeddccbbaa"},
		Rescale:  RescaleProgress{Parallelism: 4, Scheduler: policy.SchedulerAdaptive, Path: policy.RescaleByUpgrade, Vertices: "v1,v2"},
	}
}()

// TestProgressFormats reads every form of a stored Progress a release
// wrote (testdata/golden), checks that this release writes the newest one
// byte for byte, and that a newer format is refused when decoded.
func TestProgressFormats(t *testing.T) {
	formattest.Check(t, formattest.Type[Progress]{
		Name: "lifecycle.Progress", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: updating(),
		Decode: func(b []byte) (Progress, error) { // as a Step reads it
			var p Progress
			if err := json.Unmarshal(b, &p); err != nil {
				return p, err
			}
			return p, check(&p, p.Operation, p.Target)
		},
		Fixtures: []formattest.Fixture[Progress]{
			{File: "progress-v1.json", Version: 1, Want: goldenProgress},
			{File: "progress-v2.json", Version: 2, Want: goldenProgress2},
			{File: "progress-v3.json", Version: 3, Want: goldenProgress3},
			{File: "progress-v4.json", Version: 4, Want: goldenProgress4},
			{File: "progress-v5.json", Version: 5, Want: goldenProgress5},
			{File: "progress-v6.json", Version: 6, Want: goldenProgress6},
			{File: "progress-v7.json", Version: 7, Want: goldenProgress7},
			{File: "progress-v8.json", Version: 8, Want: goldenProgress8},
			{File: "progress-v9.json", Version: 9, Want: goldenProgress9},
		},
	})
}

// TestProgressDecodedIsStepped: the fixture's Progress, decoded, is one a
// Step of its operation and job accepts, and one of another is refused.
func TestProgressDecodedIsStepped(t *testing.T) {
	b, err := json.Marshal(goldenProgress)
	if err != nil {
		t.Fatal(err)
	}
	var p Progress
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if err := check(&p, opUpgrade, goldenProgress.Target); err != nil {
		t.Errorf("check of its own operation: %v", err)
	}
	if err := check(&p, opTeardown, goldenProgress.Target); !errors.Is(err, ErrForeignProgress) {
		t.Errorf("check of another operation: %v", err)
	}
}

// goldenTemplate is the job template of the JobSpec and JobStatus
// fixtures: every field set.
var goldenTemplate = JobTemplate{JarFile: "/jobs/app-1.4.jar", JarID: "d1e2f3_app.jar", EntryClass: "com.example.App", Args: []string{"--in", "kafka"},
	Parallelism: 4, FlinkConfiguration: map[string]string{"execution.checkpointing.interval": "30s"}}

// goldenSpec is the JobSpec of the format-version-1 fixture: every field
// set. It is as fixed as the file.
var goldenSpec = JobSpec{
	FormatVersion: 1, Job: goldenTemplate, State: DesiredSuspended,
	Update: policy.UpdatePolicy{FormatVersion: 1, Mode: policy.UpgradeLastState, MaxStateAge: policy.Duration(6 * time.Hour),
		SavepointDeadline: policy.Duration(5 * time.Minute), SavepointAttempts: 2, FallbackToLastState: true, AllowStartWithoutState: true,
		AllowNonRestoredState: true, TransitionTimeout: policy.Duration(3 * time.Minute)},
	Restart: policy.RestartPolicy{FormatVersion: 1, Mode: policy.RestartFromLatestState, MaxStateAge: policy.Duration(time.Hour), MaxRestarts: 3,
		Window: policy.Duration(time.Hour), Backoff: policy.Duration(10 * time.Second), TransitionTimeout: policy.Duration(2 * time.Minute)},
	Health: policy.HealthPolicy{FormatVersion: 1, Action: policy.HealthRestartFromLatestState, MaxRestarts: 5, Window: policy.Duration(10 * time.Minute),
		CheckpointWindow: policy.Duration(5 * time.Minute), MaxSavepointFailures: 2, TransitionTimeout: policy.Duration(4 * time.Minute),
		MaxStateAge: policy.Duration(2 * time.Hour)},
	Rescale:    policy.RescalePolicy{FormatVersion: 1, InPlaceOnly: true},
	Savepoints: SavepointPolicy{Interval: policy.Duration(time.Hour), MaxCount: 5, MaxAge: policy.Duration(72 * time.Hour), DisposeUpdate: true, DisposeUser: true},
	Restore: policy.RestoreRequest{FormatVersion: 1, Path: "s3://bucket/savepoints/savepoint-by-hand", Token: "t-1", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		CheckAge: true, AllowNonRestoredState: true, CancelWithoutSavepoint: true},
	Rollback:                RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(2 * time.Minute)},
	AllowCancelWithoutState: true,
}

// goldenProgress2 is the Progress of the format-version-2 fixture: every
// field set. It is as fixed as the file.
var goldenProgress2 = func() Progress {
	p := goldenProgress
	p.FormatVersion = 2
	p.Submit.Cluster = Cluster{Name: "counter-0123456789ab", URL: "http://counter-0123456789ab-rest:8081", JobID: "0123456789abcdef0123456789abcdef"}
	p.Replace.Ending = OutcomeSucceeded
	p.BlueGreen.NewJobStart = time.Date(2026, 3, 1, 13, 0, 7, 0, time.UTC)
	p.BlueGreen.Healthy = time.Date(2026, 3, 1, 13, 0, 9, 0, time.UTC)
	p.BlueGreen.AbortReason = "the new job was not healthy within the window (5m0s)"
	return p
}()

// goldenStatus2 is the JobStatus of the format-version-2 fixture: every
// field set. It is as fixed as the file.
var goldenStatus2 = func() JobStatus {
	s := goldenStatus
	s.FormatVersion, s.Progress = 2, goldenProgress2
	s.Cluster = Cluster{Name: "counter-a1b2c3d4e5f6", URL: "http://counter-a1b2c3d4e5f6-rest:8081", JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	return s
}()

// goldenSpec2 is the JobSpec of the format-version-2 fixture.
var goldenSpec2 = func() JobSpec {
	s := goldenSpec
	s.FormatVersion = 2
	s.BlueGreen = BlueGreenPolicy{Enabled: true, Window: policy.Duration(3 * time.Minute), KeepSavepoint: true}
	return s
}()

// goldenProgress3 is the Progress of the format-version-3 fixture (no
// field added).
var goldenProgress3 = func() Progress {
	p := goldenProgress2
	p.FormatVersion = 3
	return p
}()

// goldenStatus3 is the JobStatus of the format-version-3 fixture, which
// added Result, Checkpoint and Autoscale: every field set.
var goldenStatus3 = func() JobStatus {
	s := goldenStatus2
	s.FormatVersion, s.Progress = 3, goldenProgress3
	s.Retention.Schedule, s.Retention.TimeZone = "30 2 * * *", "Europe/Berlin"
	s.Result = JobResult{JobID: "0123456789abcdef0123456789abcdef", EndTime: time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC),
		NetRuntime: policy.Duration(42 * time.Minute), Accumulators: map[string]string{"events": "30"}}
	s.Checkpoint = CheckpointTrigger{JobID: "0123456789abcdef0123456789abcdef", TriggerID: "ffeeddccbbaa99887766554433221100", Sent: true,
		TriggerTime: time.Date(2026, 3, 1, 13, 30, 0, 0, time.UTC), CheckpointID: 12, CompletedAt: time.Date(2026, 3, 1, 13, 20, 1, 0, time.UTC),
		Failure: "Checkpoint expired before completing.", Failures: 1}
	at := func(sec int) time.Time { return time.Date(2026, 3, 1, 14, 0, sec, 0, time.UTC) }
	s.Autoscale = AutoscaleStatus{JobID: "0123456789abcdef0123456789abcdef", Next: 1, LastScale: at(1), Parallelism: 6, SpecParallelism: 4,
		Reason: string(policy.ReasonScaleWithinTarget), Target: 6, Message: "parallelism 6 meets the load at the target utilisation",
		Vertices: []AutoscaleVertex{{ID: "b93d204074064b03a853367828fb3dfe", Inputs: []string{"0e3160945c69999b81da5f032a648b30"},
			Parallelism: 6, MaxParallelism: 128, Listed: true, PendingMetric: "Source__in.pendingRecords",
			Samples: []policy.ScaleSample{{Time: at(2), BusyMicrosPerSecond: 640_500, BackPressuredMicrosPerSecond: 20_000,
				RecordsInMilli: 120_500, RecordsOutMilli: 240_250, PendingRecords: 1500, HasPending: true}}}},
	}
	return s
}()

// goldenSpec3 is the JobSpec of the format-version-3 fixture, which added
// Savepoints.Schedule and TimeZone, Checkpoints and Autoscale.
var goldenSpec3 = func() JobSpec {
	s := goldenSpec2
	s.FormatVersion = 3
	s.Savepoints.Schedule, s.Savepoints.TimeZone = "30 2 * * *", "Europe/Berlin"
	s.Checkpoints = CheckpointPolicy{Interval: policy.Duration(10 * time.Minute)}
	s.Autoscale = policy.AutoscalePolicy{FormatVersion: 1, Enabled: true, TargetUtilization: 60, UtilizationBoundary: 15,
		CatchUpDuration: policy.Duration(10 * time.Minute), MinParallelism: 2, MaxParallelism: 32, Window: policy.Duration(3 * time.Minute),
		Stabilization: policy.Duration(2 * time.Minute), CoolDown: policy.Duration(15 * time.Minute)}
	return s
}()

// goldenProgress4 is the Progress of the format-version-4 fixture, which
// added Unconfirmed, Observed.CheckpointRead, Observed.Reread and
// Preflight: every field set.
var goldenProgress4 = func() Progress {
	p := goldenProgress3
	p.FormatVersion = 4
	p.Stop.Unconfirmed = true
	p.Replace.Observed.CheckpointRead = time.Date(2026, 3, 1, 12, 59, 58, 0, time.UTC)
	p.Replace.Observed.Reread = true
	p.Replace.Preflight = &Preflight{
		Skipped: "Unsupported", // a value of earlier releases, kept as it was read
		New:     []policy.PlanVertex{{ID: "cbc357ccb763df2852fee8c4fc7d55f2", Name: "counter", Parallelism: 4, MaxParallelism: 128, SlotSharingGroup: "default"}},
		NewRead: true,
		Old:     []policy.PlanVertex{{ID: "0a448493b4782967b150582570326227", Name: "counter", Parallelism: 2, MaxParallelism: 128, SlotSharingGroup: "default"}},
		OldRead: true, Held: 2, FreeSlots: 1, TotalSlots: 4, SlotsRead: true,
		Verdict: &policy.PreflightVerdict{SlotsNeeded: 4, Findings: []policy.PreflightFinding{{Reason: policy.PreflightStateNotRestored, Refuses: true,
			Vertices: []string{"0a448493b4782967b150582570326227"}, Message: "the new job has no vertex 0a448493b4782967b150582570326227 (counter)"}}},
	}
	return p
}()

// goldenStatus4 is the JobStatus of the format-version-4 fixture, which
// added the fields of its Progress, the spec the action started with
// (ActionSpec), the jar's digest (JarDigest, and in each template), the
// job without checkpointing (NoCheckpointing), the situation of the
// last call (Situation, Settled), Deleted and CanaryPassed.
var goldenStatus4 = func() JobStatus {
	s := goldenStatus3
	s.FormatVersion, s.Progress = 4, goldenProgress4
	const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	s.Deployed.JarDigest, s.Stable.JarDigest, s.Target.JarDigest, s.JarDigest = digest, digest, digest, digest
	spec := goldenSpec4
	s.ActionSpec = &spec
	s.NoCheckpointing = s.JobID
	s.Situation, s.Settled, s.Deleted = SituationRunning, true, true
	s.CanaryPassed = "8899aabbccddeeff"
	return s
}()

// goldenSpec4 is the JobSpec of the format-version-4 fixture, which added
// Bounded, the template's JarDigest, Preflight and BlueGreen.Canary.
var goldenSpec4 = func() JobSpec {
	s := goldenSpec3
	s.FormatVersion = 4
	s.Job.JarDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	s.Bounded = true
	s.Preflight = PreflightPolicy{Disabled: true, ElasticSlots: true}
	s.BlueGreen.Canary = true
	return s
}()

// ledgerRecord is rec as format 5 writes a savepoint record: every field
// set, the delete choice and a failed disposal too.
func ledgerRecord(rec savepoint.Record) savepoint.Record {
	rec.SetOnDelete(savepoint.OnDeleteKeep)
	rec.SetDisposal(savepoint.Disposal{Attempts: 2, Error: savepoint.DisposalFailed, Message: "java.io.IOException: Permission denied",
		RetryAt: time.Date(2026, 3, 1, 13, 10, 0, 0, time.UTC), GaveUp: true})
	return rec
}

// goldenProgress5 is the Progress of the format-version-5 fixture, which
// added CheckpointID and the savepoint records' delete choice and
// disposal: every field set.
var goldenProgress5 = func() Progress {
	p := goldenProgress4
	p.FormatVersion = 5
	p.Checkpoint.ID = 42
	p.Replace.Observed.Latest = ledgerRecord(p.Replace.Observed.Latest)
	return p
}()

// goldenStatus5 is the JobStatus of the format-version-5 fixture, which
// added the savepoint ledger (Disposing, the records' delete choice and
// disposal, Retention.DisposeOnDelete), the one-shot requests handled,
// the replaced jobs and the detached job.
var goldenStatus5 = func() JobStatus {
	s := goldenStatus4
	s.FormatVersion, s.Progress = 5, goldenProgress5
	spec := goldenSpec5
	s.ActionSpec = &spec
	s.Retention.DisposeOnDelete = true
	s.Latest, s.UpgradeFrom = ledgerRecord(s.Latest), ledgerRecord(s.UpgradeFrom)
	s.Savepoints = savepoint.History{FormatVersion: 2, Records: []savepoint.Record{ledgerRecord(s.Savepoints.Records[0])}}
	s.Disposing = SavepointDisposal{Location: "s3://bucket/savepoints/savepoint-a1b2c3-00aa11bb22cc", TriggerID: "00112233445566778899aabbccddeeff",
		Started: time.Date(2026, 3, 1, 13, 5, 0, 0, time.UTC)}
	s.RequestsHandled = ActionRequests{Savepoint: "sp-1", Checkpoint: "cp-1", Restart: "restart-1", Rollback: "rollback-1"}
	s.Replaced = []ReplacedJob{{JobID: "0123456789abcdef0123456789abcdef", CheckpointDir: "s3://bucket/checkpoints", NewJobID: "fedcba9876543210fedcba9876543210",
		Restored: "s3://bucket/checkpoints/0123456789abcdef0123456789abcdef/chk-7", ClaimMode: flinkapi.ClaimModeClaim, Checkpointed: true, Waiting: true,
		Attempts: 1, Error: CleanupDeleteFailed}}
	s.Detached = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
	return s
}()

// goldenProgress6 is the Progress of the format-version-6 fixture, which
// added Resend (and the outcomes ForeignJob and JarChanged).
var goldenProgress6 = func() Progress {
	p := goldenProgress5
	p.FormatVersion = 6
	p.Savepoint.Resend = p.Savepoint.Status.TriggerTime.Add(forgetAfter)
	return p
}()

// goldenStatus6 is the JobStatus of the format-version-6 fixture, which
// added the upload of the stable template's build, the job that earned
// stability (StableJobID), the last call's verdict (Verdict) and the
// state the job started from (RestoredFrom).
var goldenStatus6 = func() JobStatus {
	s := goldenStatus5
	s.FormatVersion, s.Progress = 6, goldenProgress6
	spec := goldenSpec6
	s.ActionSpec = &spec
	s.StableJarID, s.StableJarDigest = "c0ffee_app.jar", "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	s.StableJobID = "00112233445566778899aabbccddeeff"
	s.Verdict = VerdictBlocked
	s.RestoredFrom = "s3://bucket/savepoints/savepoint-a1b2c3-00aa11bb22cc"
	return s
}()

// goldenSpec6 is the JobSpec of the format-version-6 fixture (no field
// added).
var goldenSpec6 = func() JobSpec {
	s := goldenSpec5
	s.FormatVersion = 6
	return s
}()

// goldenProgress7 is the Progress of the format-version-7 fixture (no
// field added).
var goldenProgress7 = func() Progress {
	p := goldenProgress6
	p.FormatVersion = 7
	return p
}()

// goldenSpec8 is the JobSpec of the format-version-8 fixture (no field
// added).
var goldenSpec8 = func() JobSpec {
	s := *goldenSpec7.DeepCopy()
	s.FormatVersion = 8
	return s
}()

// goldenStatus8 is the JobStatus of the format-version-8 fixture, which
// keeps its Progress in records (goldenProgress8) and added Audit (the summary of the last audit of the Controller's
// Storage) and records savepoints found there (savepoint.ReasonFound).
var goldenStatus8 = func() JobStatus {
	s := *goldenStatus7.DeepCopy()
	s.FormatVersion, s.Progress = 8, goldenProgress8
	spec := goldenSpec8
	s.ActionSpec = &spec
	at := time.Date(2026, 3, 1, 16, 0, 0, 0, time.UTC)
	found := s.Savepoints.Records[0] // every field set
	found.Location, found.Time = "s3://bucket/savepoints/savepoint-012345-a0b1c2d3e4f5", at.Add(-time.Minute)
	found.Reason, found.JobID = savepoint.ReasonFound, "0123456789abcdef0123456789abcdef"
	s.Savepoints = s.Savepoints.Add(found)
	s.Savepoints.FormatVersion = 2 // the savepoint format of format 8
	s.Audit = &AuditSummary{Time: at, Requests: 12, Truncated: true, ListFailures: 1, FailedInARow: 2,
		Counts:   map[AuditKind]int{AuditInHistory: 3, AuditRestorePoint: 1, AuditUnrecorded: 1, AuditReplaced: 2},
		Recorded: 1, RestorePoint: found.Location, Replaced: []flinkapi.JobID{"00000000000000000000000000000001"}, Due: true}
	return s
}()

// goldenSpec9 is the JobSpec of the format-version-9 fixture (no field
// added).
var goldenSpec9 = func() JobSpec {
	s := *goldenSpec8.DeepCopy()
	s.FormatVersion = 9
	return s
}()

// goldenStatus9 is the JobStatus of the format-version-9 fixture, whose
// savepoint history is in the compact form (savepoint format 3): the job,
// the reason and the location prefix most records share written once.
// It adds a second periodic savepoint, so that two records share the
// job and the reason and the others differ.
var goldenStatus9 = func() JobStatus {
	s := *goldenStatus8.DeepCopy()
	s.FormatVersion, s.Progress = 9, goldenProgress9
	spec := goldenSpec9
	s.ActionSpec = &spec
	next := s.Savepoints.Records[0] // every field set
	next.Location, next.Time = "s3://bucket/savepoints/savepoint-a1b2c3-5f6e7d8c9bab", next.Time.Add(10*time.Minute)
	s.Savepoints = s.Savepoints.Add(next)
	s.Savepoints.FormatVersion = 3
	return s
}()

// goldenProgress9 is the Progress of the format-version-9 fixture, which
// added the state of the old job's vertices that the preflight read
// (Preflight.State, StateRead) and the vertices its verdict drops
// (PreflightVerdict.Dropped).
var goldenProgress9 = func() Progress {
	p := *goldenProgress8.DeepCopy()
	p.FormatVersion = 9
	pf := p.Replace.Preflight
	pf.State = policy.StateSizes{Known: true, Unknown: policy.StateDetailsUnavailable, CheckpointID: 41, Savepoint: true,
		Bytes: map[string]int64{"0a448493b4782967b150582570326227": 3898}}
	pf.StateRead = true
	pf.Verdict.Dropped = []policy.DroppedVertex{{ID: "0a448493b4782967b150582570326227", Name: "counter", Bytes: 3898, SizeKnown: true}}
	return p
}()

// goldenStatus7 is the JobStatus of the format-version-7 fixture, whose
// triggered checkpoints are actions (ActionCheckpoint): JobStatus.Checkpoint
// records no trigger in flight; LateSavepoint is a savepoint looked up
// past its deadline.
var goldenStatus7 = func() JobStatus {
	s := triggerDropped(goldenStatus6)
	s.FormatVersion, s.Progress = 7, goldenProgress7
	spec := goldenSpec7
	s.ActionSpec = &spec
	at := func(sec int) time.Time { return time.Date(2026, 3, 1, 15, 0, sec, 0, time.UTC) }
	s.LateSavepoint = LateSavepoint{JobID: "0123456789abcdef0123456789abcdef", TriggerID: "00112233445566778899aabbccddeeff",
		Reason: savepoint.ReasonScheduled, TriggerTime: at(1), GiveUp: at(2), NextRead: at(3), Reads: 3, Failures: 1,
		TimeoutRead: true, Forgotten: true}
	return s
}()

// goldenSpec7 is the JobSpec of the format-version-7 fixture (no field
// added).
var goldenSpec7 = func() JobSpec {
	s := goldenSpec6
	s.FormatVersion = 7
	return s
}()

// goldenProgress8 is the Progress of the format-version-8 fixture, which
// keeps what only some operations record in one record per operation
// (Stop, Submit, Replace, ...) and added BlueGreen.Slots (the task slots
// of a BlueGreen's new job, which older formats kept in the parallelism
// of a Rescale): every field set.
var goldenProgress8 = func() Progress {
	p := goldenProgress7
	p.FormatVersion = 8
	p.BlueGreen.Slots = 6
	return p
}()

// triggerDropped is s as a Controller of format 7 reads it: a checkpoint
// trigger in flight that an older format recorded beside the action is
// dropped.
func triggerDropped(s JobStatus) JobStatus {
	s.Checkpoint.TriggerID, s.Checkpoint.Sent = "", false
	return s
}

// goldenSpec5 is the JobSpec of the format-version-5 fixture, which added
// Savepoints.DisposeOnDelete, Requests, Adopt and OnDelete.
var goldenSpec5 = func() JobSpec {
	s := goldenSpec4
	s.FormatVersion = 5
	s.Savepoints.DisposeOnDelete = true
	s.Requests = ActionRequests{Savepoint: "sp-2", Checkpoint: "cp-2", Restart: "restart-2", Rollback: "rollback-2"}
	s.Adopt = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	s.OnDelete = DeleteDetach
	return s
}()

// goldenStatus is the JobStatus of the format-version-1 fixture: every
// field set. It is as fixed as the file.
var goldenStatus = func() JobStatus {
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 13, 0, s, 0, time.UTC) }
	rec := savepoint.Record{Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", Time: at(1), Reason: savepoint.ReasonUpdate,
		JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	return JobStatus{
		FormatVersion: 1, Name: "app/counter", JobID: "0123456789abcdef0123456789abcdef", JobState: "RUNNING", State: policy.Updating, Reason: "UpgradeInProgress",
		Message: "Upgrade: phase Savepoint", Failure: "java.lang.RuntimeException: boom", Deployed: goldenTemplate, DeployedAt: at(2),
		Stable: goldenTemplate, Suspended: true, FailedJob: "0011223344556677", JarID: "d1e2f3_app.jar", JarFile: "/jobs/app-1.4.jar",
		Action: ActionUpgrade, Target: goldenTemplate, Retention: SavepointPolicy{Interval: policy.Duration(time.Hour), MaxCount: 5,
			MaxAge: policy.Duration(time.Hour), DisposeUpdate: true, DisposeUser: true},
		Progress: goldenProgress, RetryAt: at(3), Latest: rec, Savepoints: savepoint.History{FormatVersion: 1, Records: []savepoint.Record{rec}},
		UpgradeFrom: rec, SavepointFailures: 1, Restarts: 2, LastRestart: at(4),
		Health: policy.HealthHistory{FormatVersion: 1, JobID: "0123456789abcdef0123456789abcdef", Started: at(5),
			CheckpointInterval: policy.Duration(30 * time.Second), CheckpointTimeout: policy.Duration(10 * time.Minute),
			Samples: []policy.HealthSample{{Time: at(6), State: "RUNNING", StateSince: at(5), Restarts: 1, CompletedCheckpoints: 7,
				LatestCheckpoint: at(6), SavepointFailures: 1}}},
		RestoreHandled: "t-0",
	}
}()

// TestJobFormats reads the JobSpec and JobStatus of every release
// (testdata/golden), checks that this release writes the newest byte for
// byte, and that a newer format is refused: by JobSpec.Validate, and when
// a JobStatus is decoded.
func TestJobFormats(t *testing.T) {
	formattest.Check(t, formattest.Type[JobStatus]{
		Name: "lifecycle.JobStatus", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: updating(),
		// Format 7 keeps a checkpoint trigger in flight in its action's Progress.
		Retired: []string{"JobStatus.Checkpoint.TriggerID", "JobStatus.Checkpoint.Sent"},
		Decode: func(b []byte) (JobStatus, error) { // as Reconcile reads it
			var s JobStatus
			if err := json.Unmarshal(b, &s); err != nil {
				return s, err
			}
			// begin checks the format and records the one this release
			// writes; the value compared is the one read.
			read := s.FormatVersion
			c := &Controller{Name: s.Name}
			err := c.begin(context.Background(), &s)
			s.FormatVersion = read
			return s, err
		},
		Fixtures: []formattest.Fixture[JobStatus]{
			{File: "jobstatus-v1.json", Version: 1, Want: goldenStatus},
			{File: "jobstatus-v2.json", Version: 2, Want: goldenStatus2},
			{File: "jobstatus-v3.json", Version: 3, Want: triggerDropped(goldenStatus3)},
			{File: "jobstatus-v4.json", Version: 4, Want: triggerDropped(goldenStatus4)},
			{File: "jobstatus-v5.json", Version: 5, Want: triggerDropped(goldenStatus5)},
			{File: "jobstatus-v6.json", Version: 6, Want: triggerDropped(goldenStatus6)},
			{File: "jobstatus-v7.json", Version: 7, Want: goldenStatus7},
			{File: "jobstatus-v8.json", Version: 8, Want: goldenStatus8},
			{File: "jobstatus-v9.json", Version: 9, Want: goldenStatus9},
		},
	})
	formattest.Check(t, formattest.Type[JobSpec]{
		Name: "lifecycle.JobSpec", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: updating(),
		Decode: func(b []byte) (JobSpec, error) {
			var s JobSpec
			if err := json.Unmarshal(b, &s); err != nil {
				return s, err
			}
			return s, s.Validate()
		},
		Fixtures: []formattest.Fixture[JobSpec]{
			{File: "jobspec-v1.json", Version: 1, Want: goldenSpec},
			{File: "jobspec-v2.json", Version: 2, Want: goldenSpec2},
			{File: "jobspec-v3.json", Version: 3, Want: goldenSpec3},
			{File: "jobspec-v4.json", Version: 4, Want: goldenSpec4},
			{File: "jobspec-v5.json", Version: 5, Want: goldenSpec5},
			{File: "jobspec-v6.json", Version: 6, Want: goldenSpec6},
			{File: "jobspec-v7.json", Version: 7, Want: goldenSpec7},
			{File: "jobspec-v8.json", Version: 8, Want: goldenSpec8},
			{File: "jobspec-v9.json", Version: 9, Want: goldenSpec9},
		},
	})
}
