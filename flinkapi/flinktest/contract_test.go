package flinktest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/contract"
)

// TestContract runs the contract suite that holds flinkapi to real Flink
// (internal/testkit/contract) against the fake, for a strict-mapper version
// without checkpoint triggers (1.16), one with every endpoint (1.19), and
// the two versions the suite runs against for real. 1.15 is left out: the
// suite expects the 500 of GET /jobs/:jobid/status for an unknown job,
// which 1.15 does not have.
func TestContract(t *testing.T) {
	for _, version := range []string{"1.16.3", "1.19.1", "1.20.5", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			runContract(t, version)
		})
	}
}

func runContract(t *testing.T, version string) {
	// One manual clock for the three clusters. The suite sleeps through
	// Target.Sleep, which advances it; flinkapi.Waiter sleeps in real time
	// between polls (MinDelay = PollInterval), so every request also moves
	// the clock a little.
	clock := flinktest.NewClock(time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC))
	opts := []flinktest.Option{flinktest.WithVersion(version), flinktest.WithClock(clock), flinktest.WithAutoAdvance(50 * time.Millisecond)}
	srv := flinktest.NewServer(opts...)
	t.Cleanup(srv.Close)
	adaptive := flinktest.NewServer(append(opts, flinktest.WithAdaptiveScheduler(), flinktest.WithRescaleHistory(16))...)
	t.Cleanup(adaptive.Close)
	doomed := flinktest.NewServer(opts...)
	t.Cleanup(doomed.Close)

	jar := filepath.Join(t.TempDir(), "flinkkit-testjob.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o644); err != nil {
		t.Fatal(err)
	}
	contract.Run(t, contract.Target{
		URL:             srv.URL,
		Version:         version,
		JarPath:         jar,
		EntryClass:      flinktest.CounterJobClass,
		SavepointDir:    srv.SavepointDir(),
		CheckpointDir:   srv.CheckpointDir(),
		ReadCounts:      srv.ReadCounts,
		SavepointExists: srv.SavepointExists,
		RestartJobManager: func(context.Context) error {
			srv.RestartJobManager(flinktest.RestartOptions{})
			return nil
		},
		AdaptiveURL:  adaptive.URL,
		ShutdownURL:  doomed.URL,
		Now:          clock.Now,
		Sleep:        clock.Sleep,
		PollInterval: 5 * time.Millisecond,
	})
}
