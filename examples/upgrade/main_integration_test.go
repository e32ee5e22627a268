//go:build integration

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

// TestDemoOnRealFlink runs the demo with --flink-url and --jar against a
// real Flink session cluster of FLINK_VERSION (or the one at FLINK_URL)
// and watches the test job's count files while it runs: the upgraded job
// starts from the counts the first job reached at its stop-with-savepoint,
// not from zero; the job fails by itself (--fail-at, --fail-once), and the
// job the controller restarts from its newest state never counts below
// those counts again and counts on past the failure.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v ./examples/upgrade/
func TestDemoOnRealFlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	out := cluster.OutDir("upgrade-demo")

	// Watch the count files of each version while the demo runs: the
	// first counts seen of every key, the lowest after them, and the last.
	names := []string{"counter-v1", "counter-v2"}
	first := map[string]map[string]int64{}
	low := map[string]map[string]int64{}
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
					first[n], low[n] = counts, map[string]int64{}
					for k, c := range counts {
						low[n][k] = c
					}
				}
				for k, c := range counts {
					low[n][k] = min(low[n][k], c)
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

	var res result
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runner{onDone: func(r result, _ *demo.Cluster) { res = r }}.run(ctx,
		[]string{"--flink-url", cluster.URL, "--jar", cluster.TestJobJar, "--entry-class", cluster.TestJobClass, "--out", out,
			"--state-dir", t.TempDir()}, &stdout, &stderr)
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	t.Logf("output:\n%s", stdout.String())
	t.Logf("DEMO TIME (Flink %s): %v", cluster.FlinkVersion, elapsed.Round(time.Millisecond))
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}

	lines := phaseLines(stdout.String())
	var phases []string
	for _, l := range lines {
		phases = append(phases, strings.Fields(l)[0])
	}
	if got, want := strings.Join(phases, " "), "cluster deploy savepoint plan upgrade restored fail restart restored delete done"; got != want {
		t.Fatalf("phases %q, want %q", got, want)
	}
	if !strings.Contains(lines[6], "(--fail-at ") {
		t.Errorf("the job did not fail by itself: %s", lines[6])
	}
	if res.UpgradeFrom.Location == "" || res.RestartFrom == "" || res.Final.Location == "" || !res.Status.Deleted || res.Status.Restarts != 1 {
		t.Errorf("result %+v: want an upgrade from a savepoint, one restart from the newest state and a final savepoint kept", res)
	}
	if !flinkfixture.LocationExists(res.Final.Location) {
		t.Errorf("the final savepoint %s does not exist", res.Final.Location)
	}

	for _, n := range names {
		t.Logf("%s: first counts %v, lowest %v, last %v", n, first[n], low[n], last[n])
		if first[n] == nil {
			t.Fatalf("%s wrote no counts", n)
		}
	}
	// The upgraded job and the restarted one (both counter-v2) start from
	// the state of the upgrade's savepoint, never from zero, and the
	// restarted job counts on past the count the job failed at.
	stop := last["counter-v1"]
	failAt := failCount(lines[6])
	for k, c := range stop {
		if low["counter-v2"][k] < c {
			t.Errorf("counter-v2: key %s went down to %d, below %d at the upgrade's savepoint: the state was not restored", k, low["counter-v2"][k], c)
		}
		if failAt == 0 || last["counter-v2"][k] <= failAt {
			t.Errorf("counter-v2: key %s ends at %d, not past %d where the job failed: the restarted job did not count on", k, last["counter-v2"][k], failAt)
		}
	}
}

// failCount reads the count of "(--fail-at N)" in the fail line.
func failCount(line string) int64 {
	_, rest, ok := strings.Cut(line, "(--fail-at ")
	if !ok {
		return 0
	}
	var n int64
	for _, r := range rest {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int64(r-'0')
	}
	return n
}
