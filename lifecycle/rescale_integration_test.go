//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealClusterRescale rescales the test job from parallelism 1 to 2 on
// real Flink session clusters of FLINK_VERSION: in place on a cluster whose
// JobManager runs the adaptive scheduler (PUT resource-requirements, the
// same job keeps running), and through an upgrade (stop with savepoint,
// restore with the new parallelism) on one with the default scheduler. In
// both the counter continues from where it was. It logs how long each
// rescale took:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v -run Rescale ./lifecycle/
func TestRealClusterRescale(t *testing.T) {
	if u := strings.TrimSpace(os.Getenv("FLINK_URL")); u != "" {
		t.Fatalf("the rescale test starts its own clusters (one with the adaptive scheduler); unset FLINK_URL (%s) and set FLINK_VERSION", u)
	}
	const keys = 3
	args := func(out string, parallelism int) []string {
		return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--parallelism", fmt.Sprint(parallelism),
			"--checkpoint-interval", "500", "--name", "lifecycle-rescale"}
	}
	timing := lifecycle.Timing{Poll: 200 * time.Millisecond, Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: 2 * time.Minute}

	for _, tc := range []struct {
		name     string
		adaptive bool
		path     policy.RescalePath
	}{
		{"InPlace", true, policy.RescaleInPlace},
		{"ByUpgrade", false, policy.RescaleByUpgrade},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			cfg := flinkfixture.Config{Slots: 4}
			if tc.adaptive {
				cfg.Extra = map[string]string{"jobmanager.scheduler": "adaptive"}
			}
			cluster := startCluster(t, ctx, cfg)
			c, err := flinkapi.NewClient(cluster.URL)
			if err != nil {
				t.Fatal(err)
			}
			out := cluster.OutDir("rescale-" + strings.ToLower(tc.name))
			var sub lifecycle.Progress
			if res, err := lifecycle.Run(ctx, &lifecycle.Submit{Env: lifecycle.Env{Client: c, Timing: timing, Jars: testJars()}, JarFile: cluster.TestJobJar, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out, 1)}}, &sub, nil); err != nil || res.Outcome != lifecycle.OutcomeSucceeded {
				t.Fatalf("submit: %+v, %v; %+v", res, err, sub)
			}
			before := flinkfixture.WaitCounts(t, ctx, out, keys, countsTimeout, func(_ string, n int64) bool { return n >= 120 })

			out2 := out
			if !tc.adaptive {
				out2 = cluster.OutDir("rescale-upgraded")
			}
			op := &lifecycle.Rescale{Env: lifecycle.Env{Client: c, Timing: timing}, Job: sub.JobID, Parallelism: 2, Timeout: 3 * time.Minute,
				Upgrade: lifecycle.Upgrade{Env: lifecycle.Env{Timing: timing}, JarID: sub.Submit.JarID, Run: flinkapi.RunJarRequest{EntryClass: cluster.TestJobClass, ProgramArgs: args(out2, 2)}}}
			var p lifecycle.Progress
			var phases []string
			begin := time.Now()
			op.OnTransition = func(tr lifecycle.Transition) {
				phases = append(phases, fmt.Sprintf("%s@%v", tr.To, time.Since(begin).Round(time.Millisecond)))
			}
			res, err := lifecycle.Run(ctx, op, &p, nil)
			took := time.Since(begin)
			t.Logf("RESCALE TIMING (Flink %s, %s): %s in %v after %d steps; phases %s; %s",
				cluster.FlinkVersion, tc.name, res.Outcome, took.Round(time.Millisecond), p.Steps, strings.Join(phases, " "), p.Reason)
			if err != nil || res.Outcome != lifecycle.OutcomeSucceeded || p.Rescale.Path != tc.path {
				t.Fatalf("rescale: %+v, %v; progress %+v", res, err, p)
			}
			d, err := c.Job(ctx, p.JobID)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range d.Vertices {
				if v.Parallelism != 2 {
					t.Errorf("vertex %s runs at %d, want 2", v.Name, v.Parallelism)
				}
			}
			if tc.adaptive {
				if p.JobID != sub.JobID || p.Rescale.Scheduler != policy.SchedulerAdaptive {
					t.Errorf("in place: job %s (was %s), scheduler %q", p.JobID, sub.JobID, p.Rescale.Scheduler)
				}
				// The same job restored its tasks from its latest checkpoint:
				// no key's count falls back further than the events of one
				// checkpoint interval and the restart, and all grow on.
				for range 10 {
					now, err := flinkfixture.ReadCounts(out)
					if err != nil {
						t.Fatal(err)
					}
					for k, n := range now {
						if n < before[k]-40 {
							t.Fatalf("key %s: count %d after the rescale, %d before: the state was lost", k, n, before[k])
						}
					}
					time.Sleep(300 * time.Millisecond)
				}
				later := flinkfixture.WaitCounts(t, ctx, out, keys, countsTimeout, func(k string, n int64) bool { return n > before[k]+20 })
				t.Logf("counts: before %s, later %s", format(before), format(later))
				return
			}
			if p.JobID == sub.JobID || p.Rescale.Scheduler != policy.SchedulerDefault || p.Replace.RestoreKind != policy.KindSavepoint || p.Replace.RestoreFrom == "" {
				t.Errorf("through upgrade: progress %+v", p)
			}
			if st, err := c.JobStatus(ctx, sub.JobID); err != nil || st != flinkapi.JobFinished {
				t.Errorf("the old job is %s, %v; want FINISHED", st, err)
			}
			stopped, err := flinkfixture.ReadCounts(out)
			if err != nil {
				t.Fatal(err)
			}
			countsContinue(t, ctx, out2, keys, stopped, 5)
		})
	}
}

// startCluster gets a cluster of FLINK_VERSION with cfg: the shared one of
// `make integration` for a plain session cluster, else one of the test's
// own (the adaptive scheduler's), stopped when the test ends.
func startCluster(t *testing.T, ctx context.Context, cfg flinkfixture.Config) *flinkfixture.Cluster {
	t.Helper()
	cluster := flinkfixture.SharedForTest(t, ctx, cfg)
	t.Logf("configuration: %v", cfg.Extra)
	return cluster
}
