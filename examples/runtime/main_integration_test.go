//go:build integration

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

// TestRuntimeOnRealFlink runs the runtime with --flink-url and --jar
// against a real Flink session cluster of FLINK_VERSION (or the one at
// FLINK_URL), watching the test job's count files: each streamlet's second
// version starts from the counts its first version reached at the upgrade
// (not from zero, and not from the other streamlet's), and keeps counting.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v ./examples/runtime/
func TestRuntimeOnRealFlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	out := cluster.OutDir("runtime-demo")

	// Watch every job's count files while the demo runs.
	names := []string{"sensors-ingest-1", "sensors-ingest-2", "sensors-aggregate-1", "sensors-aggregate-2"}
	first := map[string]map[string]int64{}
	last := map[string]map[string]int64{}
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			mu.Lock()
			for _, n := range names {
				counts, err := flinkfixture.ReadCounts(filepath.Join(out, n))
				if err != nil || len(counts) < demo.Keys {
					continue
				}
				if first[n] == nil {
					first[n] = counts
				}
				last[n] = counts
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"--flink-url", cluster.URL, "--jar", cluster.TestJobJar, "--entry-class", cluster.TestJobClass,
		"--out", out, "--state-dir", t.TempDir()}, &stdout, &stderr, hooks{})
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	t.Logf("output:\n%s", stdout.String())
	t.Logf("RUNTIME DEMO TIME (Flink %s): %v", cluster.FlinkVersion, elapsed.Round(time.Millisecond))
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	if got := regexp.MustCompile(`(?m)^(upgrade    sensors/\w+: job \w+ \(sensors-\w+-2\) RUNNING from the savepoint \S+|remove     sensors/\w+: job \w+ stopped; its savepoint \S+ recorded under its name)`).FindAllString(stdout.String(), -1); len(got) != 4 {
		t.Errorf("lines of the upgrades and removals %q, want two of each", got)
	}

	for _, n := range names {
		t.Logf("%s: first counts %v, last %v", n, first[n], last[n])
		if first[n] == nil {
			t.Fatalf("%s wrote no counts", n)
		}
	}
	for _, s := range []string{"sensors-ingest", "sensors-aggregate"} {
		stop, again := s+"-1", s+"-2"
		for k, c := range last[stop] { // the state of the upgrade's savepoint
			if first[again][k] < c {
				t.Errorf("%s: key %s starts at %d, below %d at the upgrade: the state was not restored", again, k, first[again][k], c)
			}
			if last[again][k] <= first[again][k] {
				t.Errorf("%s: key %s did not count on: first %d, last %d", again, k, first[again][k], last[again][k])
			}
		}
	}
	// The two streamlets count at different rates: a mix-up would show as a
	// jump to the other's count.
	for k := range last["sensors-ingest-1"] {
		if first["sensors-ingest-2"][k] >= last["sensors-aggregate-1"][k] {
			t.Errorf("sensors-ingest-2: key %s starts at %d, at or above sensors-aggregate's %d", k, first["sensors-ingest-2"][k], last["sensors-aggregate-1"][k])
		}
	}
}
