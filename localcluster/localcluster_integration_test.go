//go:build integration

package localcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/localcluster"
)

// These tests start real application clusters of FLINK_VERSION (1.20.5 or
// 2.3.0), one at a time, from the jars scripts/flink.sh puts in the cache:
//
//	FLINK_VERSION=2.3.0 go test -tags integration -count=1 -p 1 ./localcluster/

// deployer is a Deployer of the fixture's jars of FLINK_VERSION under a
// temporary WorkDir, and the test job's jar.
func deployer(t *testing.T) (*localcluster.Deployer, string) {
	t.Helper()
	version := os.Getenv("FLINK_VERSION")
	if version == "" {
		t.Fatal("set FLINK_VERSION (e.g. 1.20.5 or 2.3.0)")
	}
	cache := os.Getenv("FLINK_CACHE_DIR")
	if cache == "" {
		root, err := flinkfixture.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(root, ".cache", "flink")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := flinkfixture.Prepare(ctx, version, cache); err != nil {
		t.Fatal(err)
	}
	return &localcluster.Deployer{
		LibDir:       filepath.Join(cache, version, "lib"),
		WorkDir:      t.TempDir(),
		StartTimeout: 2 * time.Minute,
	}, filepath.Join(cache, version, "flinkkit-testjob.jar")
}

func request(jar, out, name string, extra ...string) lifecycle.DeployRequest {
	return lifecycle.DeployRequest{
		JobID:       flinkapi.NewJobID(),
		JarFile:     jar,
		EntryClass:  flinkfixture.TestJobClass,
		Args:        append([]string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "300", "--name", name}, extra...),
		Parallelism: 1,
	}
}

// deploy deploys req and deletes its cluster when t ends, logging its
// logs first if t failed.
func deploy(t *testing.T, ctx context.Context, d *localcluster.Deployer, req lifecycle.DeployRequest) (lifecycle.Cluster, *flinkapi.Client) {
	t.Helper()
	start := time.Now()
	c, err := d.Deploy(ctx, req)
	t.Cleanup(func() {
		cl := lifecycle.Cluster{Name: localcluster.ClusterName(req.JobID)}
		if t.Failed() {
			for _, f := range []string{"jobmanager.out", "taskmanager.log", "taskmanager.out"} {
				if b, err := os.ReadFile(filepath.Join(d.Dir(cl), "logs", f)); err == nil {
					t.Logf("%s:\n%s", f, tail(string(b), 60))
				}
			}
		}
		if err := d.Delete(context.Background(), cl); err != nil {
			t.Errorf("delete %s: %v", cl.Name, err)
		}
	})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	t.Logf("cluster %s at %s answered after %v", c.Name, c.URL, time.Since(start).Round(time.Millisecond))
	api, err := d.Client(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, api.(*flinkapi.Client)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func waitState(t *testing.T, ctx context.Context, c *flinkapi.Client, id flinkapi.JobID, timeout time.Duration, want flinkapi.JobState) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := c.JobStatus(ctx, id)
		if err == nil && st == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %s, %v; want %s", id, st, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitOperation(t *testing.T, ctx context.Context, c *flinkapi.Client, op flinkapi.Operation) *flinkapi.OperationResult {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := c.OperationStatus(ctx, op)
		if err == nil && r.Completed() {
			if !r.Succeeded() {
				t.Fatalf("operation failed: %+v", r.Failure)
			}
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation: %+v, %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestApplicationClusterLifecycle deploys the test job in its own cluster,
// takes a savepoint and stops it with another, reads the finished job from
// the JobManager that stays, deletes the cluster, and deploys a new job id
// from the savepoint, whose counts continue.
func TestApplicationClusterLifecycle(t *testing.T) {
	t0 := time.Now()
	d, jar := deployer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out := filepath.Join(dir, "first")
	req := request(jar, out, "localcluster-first")
	c, api := deploy(t, ctx, d, req)
	waitState(t, ctx, api, req.JobID, time.Minute, flinkapi.JobRunning)
	flinkfixture.WaitCounts(t, ctx, out, 2, time.Minute, func(_ string, n int64) bool { return n >= 3 })

	// Deploy again: the same cluster, one JobManager.
	again, err := d.Deploy(ctx, req)
	if err != nil || again != c {
		t.Fatalf("second deploy: %+v, %v; want %+v", again, err, c)
	}
	if jobs, err := api.ListJobs(ctx); err != nil || len(jobs) != 1 {
		t.Fatalf("jobs of the cluster: %+v, %v; want one", jobs, err)
	}

	sp := waitOperation(t, ctx, api, must(api.TriggerSavepoint(ctx, req.JobID, flinkapi.SavepointRequest{})))
	stop := must(api.StopWithSavepoint(ctx, req.JobID, flinkapi.StopRequest{}))
	final := waitOperation(t, ctx, api, stop)
	waitState(t, ctx, api, req.JobID, time.Minute, flinkapi.JobFinished)
	t.Logf("savepoint %s, stopped with %s", sp.Location, final.Location)
	before, err := flinkfixture.ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}

	// The JobManager stays and answers for the finished job.
	time.Sleep(time.Second)
	if ok, err := d.Exists(ctx, c); !ok || err != nil {
		t.Fatalf("Exists after the job finished: %v, %v", ok, err)
	}
	if r, err := api.OperationStatus(ctx, stop); err != nil || r.Location != final.Location {
		t.Errorf("the stop's result after the job finished: %+v, %v", r, err)
	}
	cps, err := api.Checkpoints(ctx, req.JobID)
	if err != nil || cps.LatestSavepoint == nil || cps.LatestSavepoint.ExternalPath != final.Location {
		t.Errorf("checkpoint history after the stop: %+v, %v; want the savepoint %s", cps, err, final.Location)
	}
	if !strings.HasPrefix(strings.TrimPrefix(final.Location, "file:"), filepath.Join(d.WorkDir, "savepoints")) {
		t.Errorf("savepoint %s not under the Deployer's savepoints folder", final.Location)
	}

	if err := d.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Exists(ctx, c); ok || err != nil {
		t.Fatalf("Exists after Delete: %v, %v", ok, err)
	}
	if !flinkfixture.LocationExists(final.Location) {
		t.Fatalf("the savepoint %s went with the cluster", final.Location)
	}

	// A new job id from the savepoint: restored, the counts continue.
	out2 := filepath.Join(dir, "restored")
	req2 := request(jar, out2, "localcluster-restored")
	req2.RestorePath = final.Location
	_, api2 := deploy(t, ctx, d, req2)
	waitState(t, ctx, api2, req2.JobID, time.Minute, flinkapi.JobRunning)
	after := flinkfixture.WaitCounts(t, ctx, out2, 2, time.Minute, func(k string, n int64) bool { return n > before[k] })
	cps2, err := api2.Checkpoints(ctx, req2.JobID)
	if err != nil || cps2.LatestRestored == nil || cps2.LatestRestored.ExternalPath != final.Location {
		t.Errorf("the restored job's checkpoint statistics: %+v, %v; want restored from %s", cps2, err, final.Location)
	}
	t.Logf("counts %v before the stop, %v after the restore; in %v", before, after, time.Since(t0).Round(time.Millisecond))
}

// TestApplicationClusterJobFailsAtStart: a job that fails as soon as it
// runs is FAILED with its exception, and its JobManager stays.
func TestApplicationClusterJobFailsAtStart(t *testing.T) {
	t0 := time.Now()
	d, jar := deployer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := request(jar, filepath.Join(t.TempDir(), "counts"), "localcluster-fail", "--fail-at", "1")
	c, api := deploy(t, ctx, d, req)
	waitState(t, ctx, api, req.JobID, 20*time.Second, flinkapi.JobFailed)
	var ex *flinkapi.JobExceptions
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		ex, err = api.JobExceptions(ctx, req.JobID, 10)
		if err == nil && len(ex.Entries) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ex == nil || len(ex.Entries) == 0 || !strings.Contains(ex.Entries[0].StackTrace, "--fail-at 1") {
		t.Fatalf("exceptions of the failed job: %+v", ex)
	}
	if ok, err := d.Exists(ctx, c); !ok || err != nil {
		t.Errorf("Exists after the job failed: %v, %v", ok, err)
	}
	t.Logf("FAILED with %s: %s; in %v", ex.Entries[0].ExceptionName, ex.Entries[0].Message, time.Since(t0).Round(time.Millisecond))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
