package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

var sink Decision

// BenchmarkEvaluateUpdate measures one update decision for typical
// observations of each kind: a running job in each mode, a savepoint in
// flight, a failed job restored from a checkpoint, and a stuck job.
func BenchmarkEvaluateUpdate(b *testing.B) {
	cases := []struct {
		name string
		p    UpdatePolicy
		obs  Observations
	}{
		{"SavepointRunning", UpdatePolicy{Mode: UpgradeSavepoint}, withSavepoint(observe(flinkapi.JobRunning), time.Hour)},
		{"LastStateRunning", UpdatePolicy{Mode: UpgradeLastState}, withCheckpoint(withSavepoint(observe(flinkapi.JobRunning), time.Hour), time.Minute)},
		{"SavepointInFlight", UpdatePolicy{Mode: UpgradeSavepoint}, withInFlight(observe(flinkapi.JobRunning), time.Minute, 9*time.Minute)},
		{"FailedFallback", UpdatePolicy{Mode: UpgradeSavepoint, FallbackToLastState: true}, withCheckpoint(withSavepoint(observe(flinkapi.JobFailed), 30*time.Hour), time.Minute)},
		{"NoState", UpdatePolicy{Mode: UpgradeLastState}, observe(flinkapi.JobCanceled)},
		{"Stateless", UpdatePolicy{Mode: UpgradeStateless}, observe(flinkapi.JobRunning)},
		{"RestoreRequestRunning", UpdatePolicy{Mode: UpgradeSavepoint}, withRequest(observe(flinkapi.JobRunning), request(2*time.Hour))},
		{"RestoreRequestFailed", UpdatePolicy{Mode: UpgradeSavepoint}, withRequest(observe(flinkapi.JobFailed), request(30*time.Hour))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = EvaluateUpdate(c.p, c.obs, now)
			}
		})
	}
}

// BenchmarkEvaluateRestart measures one restart decision of a failed job.
func BenchmarkEvaluateRestart(b *testing.B) {
	p := RestartPolicy{Mode: RestartFromLatestState}
	obs := withCheckpoint(observe(flinkapi.JobFailed), time.Minute)
	obs.Job.EndTime = ago(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		sink = EvaluateRestart(p, obs, now)
	}
}

var sinkRescale RescaleDecision

// BenchmarkDecideRescale measures one rescale decision of a running job
// of 20 vertices, in place and through an upgrade.
func BenchmarkDecideRescale(b *testing.B) {
	obs := RescaleObservations{FlinkVersion: flinkapi.Version{Major: 1, Minor: 20, Patch: 1}, Scheduler: SchedulerAdaptive, JobState: flinkapi.JobRunning}
	for i := range 20 {
		obs.Vertices = append(obs.Vertices, VertexParallelism{ID: fmt.Sprintf("v%02d", i), Parallelism: 4, MaxParallelism: 128})
	}
	upgrade := obs
	upgrade.Scheduler = SchedulerDefault
	for _, c := range []struct {
		name string
		obs  RescaleObservations
	}{{"InPlace", obs}, {"ByUpgrade", upgrade}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkRescale = DecideRescale(RescalePolicy{}, c.obs, 8)
			}
		})
	}
}

// BenchmarkMessage measures formatting a decision's message, which is
// done only when it is shown.
func BenchmarkMessage(b *testing.B) {
	d := EvaluateUpdate(UpdatePolicy{Mode: UpgradeLastState}, withCheckpoint(observe(flinkapi.JobFailed), time.Minute), now)
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Message()
	}
}
