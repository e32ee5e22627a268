//go:build integration

package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealClusterHealth samples two runs of the test job on a real Flink
// session cluster of FLINK_VERSION the way an operator would (job status,
// the numRestarts metric, checkpoint statistics and configuration) and
// judges them with EvaluateHealth: a job that fails and is restarted by its
// restart strategy in a loop is TooManyRestarts once the window has passed,
// while a job that runs and checkpoints is Healthy.
//
//	FLINK_VERSION=2.3.0 go test -tags integration -count=1 -v -run Health ./policy/
func TestRealClusterHealth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	c, err := flinkapi.NewClient(cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	jar, err := c.UploadJar(ctx, cluster.TestJobJar)
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, extra ...string) flinkapi.JobID {
		args := append([]string{"--out", cluster.OutDir(name), "--keys", "2", "--rate", "40", "--parallelism", "1",
			"--checkpoint-interval", "500", "--name", name}, extra...)
		id, err := c.RunJar(ctx, jar, flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args, JobID: flinkapi.NewJobID()})
		if err != nil {
			t.Fatalf("run %s: %v", name, err)
		}
		t.Cleanup(func() { _ = c.CancelJob(context.Background(), id) })
		return id
	}
	looping := run("health-loop", "--fail-at", "15", "--restart-attempts", "100000", "--restart-delay", "200")
	calm := run("health-calm")

	p := policy.HealthPolicy{MaxRestarts: 2, Window: policy.Duration(20 * time.Second)}
	histories := map[flinkapi.JobID]*policy.HealthHistory{looping: {}, calm: {}}
	sample := func(id flinkapi.JobID) policy.HealthDecision {
		h := histories[id]
		d, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if h.CheckpointInterval == 0 {
			if cfg, err := c.CheckpointConfig(ctx, id); err == nil {
				h.CheckpointInterval, h.CheckpointTimeout = policy.Duration(cfg.Interval), policy.Duration(cfg.Timeout)
			}
		}
		s := policy.HealthSample{Time: time.Now(), State: d.State, StateSince: d.Timestamps[d.State], Restarts: -1}
		if n, ok, err := c.JobRestarts(ctx, id); err == nil && ok {
			s.Restarts = n
		}
		if st, err := c.Checkpoints(ctx, id); err == nil {
			s.CompletedCheckpoints = st.Counts.Completed
			if st.LatestCompleted != nil {
				s.LatestCheckpoint = st.LatestCompleted.LatestAck
			}
		}
		h.Add(id, d.StartTime, s, p)
		obs := policy.Observations{JobManagerReachable: true, LastContact: s.Time, Job: &policy.Job{ID: id, State: d.State}}
		return policy.EvaluateHealth(p, *h, obs, s.Time)
	}

	deadline := time.Now().Add(2 * time.Minute)
	var loopD, calmD policy.HealthDecision
	for {
		loopD, calmD = sample(looping), sample(calm)
		if loopD.State == policy.Unhealthy && calmD.State == policy.Healthy || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	last := histories[looping].Samples[len(histories[looping].Samples)-1]
	t.Logf("looping job: %s %s: %s (numRestarts %d, %d samples)", loopD.State, loopD.Problem, loopD.Message(), last.Restarts, len(histories[looping].Samples))
	t.Logf("calm job: %s %s: %s", calmD.State, calmD.Problem, calmD.Message())
	if loopD.State != policy.Unhealthy || loopD.Problem != policy.ReasonTooManyRestarts || loopD.Action != policy.ActionNone {
		t.Errorf("looping job: %s/%s/%s, want Unhealthy/TooManyRestarts/None", loopD.State, loopD.Problem, loopD.Action)
	}
	if calmD.State != policy.Healthy {
		t.Errorf("calm job: %s/%s, want Healthy: %s", calmD.State, calmD.Problem, calmD.Message())
	}
	if n := len(histories[calm].Samples); n > policy.MaxHealthSamples {
		t.Errorf("history of %d samples", n)
	}
	if h := histories[calm]; h.CheckpointInterval != policy.Duration(500*time.Millisecond) {
		t.Errorf("checkpoint interval %v, want 500ms", h.CheckpointInterval)
	}
}
