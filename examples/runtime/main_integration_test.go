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

// TestRuntimeOnRealFlink runs the demo with --flink-url and --jar against a
// real Flink session cluster of FLINK_VERSION (or the one at FLINK_URL),
// watching the test job's count files: each streamlet's redeployed job
// starts from the counts its first job reached at the undeploy (not from
// zero, and not from the other streamlet's), and keeps counting.
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

	var res result
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runner{onDone: func(r result, _ *demo.Cluster) { res = r }}.run(ctx,
		[]string{"--flink-url", cluster.URL, "--jar", cluster.TestJobJar, "--entry-class", cluster.TestJobClass,
			"--out", out, "--state-dir", t.TempDir()}, &stdout, &stderr)
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	t.Logf("output:\n%s", stdout.String())
	t.Logf("RUNTIME DEMO TIME (Flink %s): %v", cluster.FlinkVersion, elapsed.Round(time.Millisecond))
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	if len(res.First) != 2 || len(res.Second) != 2 {
		t.Fatalf("deployments %+v then %+v", res.First, res.Second)
	}
	for i, d := range res.Second {
		if rec := res.Undeployed[d.Name]; d.RestoreFrom == "" || d.RestoreFrom != rec.Location || rec.JobID != res.First[i].Job {
			t.Errorf("%s: redeployed from %q, want the savepoint of its own job %s: %+v", d.Name, d.RestoreFrom, res.First[i].Job, rec)
		}
	}
	if !strings.Contains(stdout.String(), "; Flink reports it restored from ") {
		t.Errorf("no line reports Flink's restore")
	}

	for _, n := range names {
		t.Logf("%s: first counts %v, last %v", n, first[n], last[n])
		if first[n] == nil {
			t.Fatalf("%s wrote no counts", n)
		}
	}
	for _, s := range []string{"sensors-ingest", "sensors-aggregate"} {
		stop, again := s+"-1", s+"-2"
		for k, c := range last[stop] { // the state of the undeploy's savepoint
			if first[again][k] < c {
				t.Errorf("%s: key %s starts at %d, below %d at the undeploy: the state was not restored", again, k, first[again][k], c)
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
