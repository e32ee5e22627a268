package lifecycle

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/formattest"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// goldenProgress is the Progress of the format-version-1 fixture: every
// field set. It is as fixed as the file.
var goldenProgress = func() Progress {
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 12, 0, s, 250_000_000, time.UTC) }
	return Progress{
		FormatVersion: 1, Operation: "Upgrade", Target: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
		Phase: PhaseDone, JobID: "0123456789abcdef0123456789abcdef", Strategy: StopWithSavepoint,
		Savepoint: savepoint.Status{Kind: "stop-with-savepoint", JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", TriggerID: "00112233445566778899aabbccddeeff",
			TriggerTime: at(1), Deadline: at(2), Reason: savepoint.ReasonUpdate, State: savepoint.Succeeded,
			Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", Recovered: true, Failure: "none",
			Attempts: 2, LastError: "503: leader election", LastErrorCode: 503, LastUpdate: at(3)},
		Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", JarID: "d1e2f3_app.jar", Requests: 1,
		Started: at(4), Deadline: at(5), Outcome: OutcomeSucceeded, Reason: "the new job is RUNNING", LastError: "connection refused", Steps: 17,
		PreviousJobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", NewJobID: "0123456789abcdef0123456789abcdef", Adopted: true,
		Observed: Observed{State: "FINISHED", Missing: true, Since: at(6), End: at(7), Checkpoint: "s3://bucket/checkpoints/chk-9",
			CheckpointTime: at(8), Latest: savepoint.Record{Location: "s3://bucket/savepoints/savepoint-old", Time: at(9), Reason: savepoint.ReasonScheduled,
				JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
			StatsAfter: at(10), Adopt: "fedcba9876543210fedcba9876543210", Lookups: 2},
		Decision: policy.ReasonSavepointBeforeUpdate, RestoreFrom: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab",
		RestoreKind: policy.KindSavepoint, Attempts: 1, StopOutcome: OutcomeSucceeded, Recorded: true, Disposed: 3, DisposeFailed: 1,
		Disposal: "99887766554433221100ffeeddccbbaa",
		Request: policy.RestoreRequest{FormatVersion: 1, Path: "s3://bucket/savepoints/savepoint-by-hand", Token: "t-1", Time: at(11), CheckAge: true,
			AllowNonRestoredState: true, CancelWithoutSavepoint: true},
		Parallelism: 4, Scheduler: policy.SchedulerAdaptive, RescalePath: policy.RescaleByUpgrade, Vertices: "v1,v2",
	}
}()

// goldenProgressV2 is the Progress of the format-version-2 fixture: every
// field set, the savepoint waiting for Flink's job list (Unconfirmed, with
// the fields format 2 added). It is as fixed as the file.
var goldenProgressV2 = func() Progress {
	p := goldenProgress
	p.FormatVersion = 2
	p.Savepoint.State, p.Savepoint.Before, p.Savepoint.OperationFailed = savepoint.Unconfirmed, savepoint.InFlight, true
	p.Savepoint.Failure = "Could not find Flink job (a1b2c3d4e5f60718293a4b5c6d7e8f90)"
	return p
}()

// TestProgressFormats reads every form of a stored Progress a release
// wrote (testdata/golden), checks that this release writes the newest one
// byte for byte, and that a newer format is refused when decoded.
func TestProgressFormats(t *testing.T) {
	formattest.Check(t, formattest.Type[Progress]{
		Name: "lifecycle.Progress", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: updating(),
		Fixtures: []formattest.Fixture[Progress]{
			{File: "progress-v1.json", Version: 1, Want: goldenProgress},
			{File: "progress-v2.json", Version: 2, Want: goldenProgressV2},
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
