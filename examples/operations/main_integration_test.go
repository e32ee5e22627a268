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
	"github.com/flinkkit/flinkkit/policy"
)

// TestDemoOnRealFlink runs the demo with --flink-url and --jar against a
// real Flink session cluster of FLINK_VERSION (or the one at FLINK_URL)
// and watches the test job's count files while it runs: the upgraded job
// and the restarted one each start from the counts the first job reached
// at its stop-with-savepoint, not from zero, and keep counting.
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -v ./examples/operations/
func TestDemoOnRealFlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster := flinkfixture.SharedForTest(t, ctx, flinkfixture.Config{Slots: 2})
	out := cluster.OutDir("operations-demo")

	// Watch the count files of each job while the demo runs: the first
	// counts seen of every key, and the last.
	names := []string{"counter-v1", "counter-v2", "counter-v2-restarted"}
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

	var res result
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runner{onDone: func(r result, _ *demo.Cluster) { res = r }}.run(ctx,
		[]string{"--flink-url", cluster.URL, "--jar", cluster.TestJobJar, "--entry-class", cluster.TestJobClass, "--out", out}, &stdout, &stderr)
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
	if got, want := strings.Join(phases, " "), "cluster submit savepoint upgrade restored fail restart restored teardown done"; got != want {
		t.Errorf("phases %q, want %q", got, want)
	}
	if !strings.Contains(lines[5], "(--fail-at ") {
		t.Errorf("the job did not fail by itself: %s", lines[5])
	}
	if res.Upgrade.Location == "" || res.RestartKind != policy.KindCheckpoint || res.Final == "" {
		t.Errorf("result %+v: want an upgrade savepoint, a restart from a retained checkpoint and a final savepoint", res)
	}

	for _, n := range names {
		t.Logf("%s: first counts %v, last %v", n, first[n], last[n])
		if first[n] == nil {
			t.Fatalf("%s wrote no counts", n)
		}
	}
	stop := last["counter-v1"] // the state of the upgrade's savepoint
	for _, n := range names[1:] {
		for k, c := range stop {
			if first[n][k] < c {
				t.Errorf("%s: key %s starts at %d, below %d at the upgrade's savepoint: the state was not restored", n, k, first[n][k], c)
			}
			if last[n][k] <= first[n][k] {
				t.Errorf("%s: key %s did not count on: first %d, last %d", n, k, first[n][k], last[n][k])
			}
		}
	}
}
