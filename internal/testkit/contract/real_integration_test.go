//go:build integration

package contract_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/contract"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

// TestContract runs the contract suite against a real Flink session cluster
// of FLINK_VERSION, started here from the Maven jars, or against the one
// running at FLINK_URL (whose TaskManager must share this machine's file
// system; the JobManager restart and the adaptive scheduler are skipped):
//
//	FLINK_VERSION=2.3.0 go test -tags integration -count=1 -v ./internal/testkit/contract/
//
// A second cluster of the same version with the adaptive scheduler starts
// alongside the first, for the resource requirements calls and, on Flink
// 2.3, the rescale history (contract.RescaleHistoryConfig).
func TestContract(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	version, external := os.Getenv("FLINK_VERSION"), os.Getenv("FLINK_URL") != ""
	if version == "" && !external {
		t.Fatalf("the contract suite needs a real Flink cluster: %v", flinkfixture.ErrNotConfigured)
	}

	var adaptive *flinkfixture.Cluster
	var adaptiveErr error
	adaptiveDone := make(chan struct{})
	if external {
		close(adaptiveDone)
	} else {
		go func() {
			defer close(adaptiveDone)
			adaptive, adaptiveErr = flinkfixture.Start(ctx, flinkfixture.Config{
				Version: version,
				Slots:   2,
				Extra:   contract.RescaleHistoryConfig,
			})
		}()
	}
	t.Cleanup(func() {
		<-adaptiveDone
		if adaptive == nil {
			return
		}
		if t.Failed() {
			t.Log("adaptive cluster logs:\n" + adaptive.Logs())
		}
		if err := adaptive.Stop(); err != nil {
			t.Errorf("stop the adaptive cluster: %v", err)
		}
	})

	start := time.Now()
	cluster, err := flinkfixture.StartFromEnv(ctx, flinkfixture.Config{Slots: 4})
	if errors.Is(err, flinkfixture.ErrNotConfigured) {
		t.Fatalf("the contract suite needs a real Flink cluster: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("cluster logs:\n" + cluster.Logs())
		}
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	<-adaptiveDone
	t.Logf("Flink %s at %s ready in %v", cluster.FlinkVersion, cluster.URL, time.Since(start).Round(time.Millisecond))
	if adaptiveErr != nil {
		t.Errorf("the adaptive-scheduler cluster did not start; its item is skipped: %v", adaptiveErr)
	}
	if cluster.TestJobJar == "" {
		t.Fatalf("no test job jar for Flink %q (run scripts/flink.sh VERSION)", cluster.Version)
	}

	target := contract.Target{
		URL:           cluster.URL,
		Version:       cluster.Version,
		JarPath:       cluster.TestJobJar,
		EntryClass:    cluster.TestJobClass,
		SavepointDir:  cluster.SavepointDir,
		CheckpointDir: cluster.CheckpointDir,
		OutDir:        cluster.OutDir,
		ReadCounts:    flinkfixture.ReadCounts,
	}
	if !cluster.External {
		target.SavepointExists = contract.LocalSavepointExists
		target.RestartJobManager = cluster.RestartJobManager
	}
	if adaptive != nil {
		target.AdaptiveURL = adaptive.URL
		if !adaptive.External {
			target.ShutdownURL = adaptive.URL // used last, after the resource requirements
		}
	}
	contract.Run(t, target)
}
