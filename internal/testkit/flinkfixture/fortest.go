package flinkfixture

import (
	"context"
	"testing"
	"time"
)

// StartForTest starts a cluster as StartFromEnv does, for the test t: it
// fails t (it never skips) when no cluster can be started or the cluster
// has no test job jar, logs where the cluster runs and how long its start
// took, and stops the cluster when t ends, logging the cluster's logs first
// if t failed.
func StartForTest(t testing.TB, ctx context.Context, cfg Config) *Cluster {
	t.Helper()
	start := time.Now()
	cluster, err := StartFromEnv(ctx, cfg)
	if err != nil {
		t.Fatalf("%s needs a real Flink cluster: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("cluster logs:\n" + cluster.Logs())
		}
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	if cluster.TestJobJar == "" {
		t.Fatalf("no test job jar for Flink %q (run scripts/flink.sh VERSION)", cluster.Version)
	}
	t.Logf("Flink %s at %s ready in %v", cluster.FlinkVersion, cluster.URL, time.Since(start).Round(time.Millisecond))
	return cluster
}
