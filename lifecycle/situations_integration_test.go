//go:build integration

package lifecycle_test

import (
	"archive/zip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestRealControllerSituations drives the job controller through the
// situations users run into on a real Flink session cluster of
// FLINK_VERSION, the status stored as JSON after every call. A job
// stopped with a savepoint by someone else (as flink stop or the Flink
// UI do): Flink records the SYNC_SAVEPOINT that ended it, the controller
// never reports the spec converged while nothing runs, and starts the
// job again from that savepoint. A job without checkpointing converges
// once its tasks run. A job that needs more task slots than the cluster
// has is reported NotEnoughSlots, naming the numbers, and deleted at
// once. A status reused after a Delete deploys the job again from the
// savepoint the Delete kept. A jar rebuilt under the same path is
// uploaded again and upgraded to. Run it with
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run TestRealControllerSituations -v ./lifecycle/
func TestRealControllerSituations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cluster, c := realSession(t, ctx, 2)
	newCtrl := func(name string) *lifecycle.Controller {
		return &lifecycle.Controller{Env: realEnv(c), Store: &lifecycle.MemoryStore{}, Name: name,
			PollInterval: time.Second, RetryInterval: 5 * time.Second}
	}
	specOf := func(jar, out string, extra ...string) lifecycle.JobSpec {
		return lifecycle.JobSpec{
			Job: lifecycle.JobTemplate{JarFile: jar, EntryClass: cluster.TestJobClass,
				Args: append([]string{"--out", out, "--keys", "2", "--rate", "40", "--checkpoint-interval", "300"}, extra...)},
			Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
		}
	}
	converge := func(t *testing.T, what string, ctrl *lifecycle.Controller, spec *lifecycle.JobSpec, st *lifecycle.JobStatus) {
		t.Helper()
		realUntil(t, ctx, what, ctrl, spec, st, 3*time.Minute, func() bool { return st.Converged(*spec) })
	}
	// Every subtest cancels what it left running: the next one needs the
	// slots.
	cleanup := func(t *testing.T, st *lifecycle.JobStatus) {
		t.Cleanup(func() {
			if st.JobID != "" {
				_ = c.CancelJob(context.Background(), st.JobID)
			}
		})
	}
	deleteAll := func(t *testing.T, ctrl *lifecycle.Controller, spec lifecycle.JobSpec, st *lifecycle.JobStatus) {
		t.Helper()
		for begin := time.Now(); time.Since(begin) < 3*time.Minute; {
			if res := realCall(t, ctx, ctrl, spec, st, true); res.Done {
				return
			}
		}
		t.Fatalf("delete did not end: %s %s", st.Reason, st.Message)
	}

	t.Run("external stop", func(t *testing.T) {
		ctrl, spec := newCtrl("situations/stop"), specOf(cluster.TestJobJar, cluster.OutDir("situations-stop"))
		var st lifecycle.JobStatus
		cleanup(t, &st)
		converge(t, "deployed", ctrl, &spec, &st)
		stopped := st.JobID
		loc := stopWithSavepoint(t, ctx, c, stopped)
		// Flink answers job details from a cache (web.refresh-interval):
		// once it expired, the job shows FINISHED.
		time.Sleep((lifecycle.Timing{}).WithDefaults().Cache + time.Second)
		realCall(t, ctx, ctrl, spec, &st, false)
		if st.JobID == stopped && st.Converged(spec) || !st.Result.IsZero() {
			t.Fatalf("the stopped job taken for done: %s %s (result %+v)", st.Reason, st.Message, st.Result)
		}
		// Flink answers checkpoint statistics from a cache: the stop's
		// savepoint shows in them once it was refreshed.
		var sp *flinkapi.CheckpointStats
		for begin := time.Now(); time.Since(begin) < 20*time.Second; time.Sleep(500 * time.Millisecond) {
			stats, err := c.Checkpoints(ctx, stopped)
			if err != nil {
				t.Fatal(err)
			}
			if sp = stats.LatestSavepoint; sp != nil {
				break
			}
		}
		if sp == nil || sp.ExternalPath != loc || sp.CheckpointType != "SYNC_SAVEPOINT" {
			t.Fatalf("Flink's record of the stop: %+v, want a SYNC_SAVEPOINT at %s", sp, loc)
		}
		converge(t, "started again", ctrl, &spec, &st)
		restored := restoredFrom(t, ctx, c, st.JobID)
		if st.JobID == stopped || restored != loc {
			t.Fatalf("job %s restored from %q, want a new job from the stop's savepoint %q", st.JobID, restored, loc)
		}
		deleteAll(t, ctrl, spec, &st)
	})

	t.Run("no checkpointing", func(t *testing.T) {
		ctrl := newCtrl("situations/nocheckpoints")
		spec := specOf(cluster.TestJobJar, cluster.OutDir("situations-nocp"))
		spec.Job.Args[len(spec.Job.Args)-1] = "0"
		spec.Update.Mode = policy.UpgradeStateless
		var st lifecycle.JobStatus
		cleanup(t, &st)
		converge(t, "converged without checkpoints", ctrl, &spec, &st)
		if st.NoCheckpointing != st.JobID {
			t.Fatalf("converged, but not through the job's checkpointing being off: %+v", st.NoCheckpointing)
		}
		deleteAll(t, ctrl, spec, &st)
	})

	t.Run("too few slots", func(t *testing.T) {
		ctrl := newCtrl("situations/slots")
		spec := specOf(cluster.TestJobJar, cluster.OutDir("situations-slots"))
		spec.Job.Parallelism = 16 // more than the shared cluster's 8 slots
		spec.AllowCancelWithoutState = true
		spec.Preflight.ElasticSlots = true // the job is submitted, and waits for slots
		var st lifecycle.JobStatus
		cleanup(t, &st)
		realUntil(t, ctx, "reported", ctrl, &spec, &st, 3*time.Minute, func() bool { return st.Reason == lifecycle.ReasonNotEnoughSlots })
		if !strings.Contains(st.Message, "needs 16 task slots") {
			t.Fatalf("message %q", st.Message)
		}
		deleteAll(t, ctrl, spec, &st)
	})

	t.Run("status reused after delete", func(t *testing.T) {
		ctrl, spec := newCtrl("situations/reuse"), specOf(cluster.TestJobJar, cluster.OutDir("situations-reuse"))
		var st lifecycle.JobStatus
		cleanup(t, &st)
		converge(t, "deployed", ctrl, &spec, &st)
		first := st.JobID
		deleteAll(t, ctrl, spec, &st)
		if st.State != policy.Deleted || st.Latest.Location == "" {
			t.Fatalf("after delete: %s, latest %q", st.State, st.Latest.Location)
		}
		kept := st.Latest.Location
		converge(t, "deployed again", ctrl, &spec, &st)
		if restored := restoredFrom(t, ctx, c, st.JobID); st.JobID == first || restored != kept {
			t.Fatalf("job %s restored from %q, want a new job from %q", st.JobID, restored, kept)
		}
		deleteAll(t, ctrl, spec, &st)
	})

	t.Run("jar rebuilt under the same path", func(t *testing.T) {
		jar := filepath.Join(t.TempDir(), "app.jar")
		copyJar(t, cluster.TestJobJar, jar, "")
		ctrl, spec := newCtrl("situations/jar"), specOf(jar, cluster.OutDir("situations-jar"))
		var st lifecycle.JobStatus
		cleanup(t, &st)
		converge(t, "deployed", ctrl, &spec, &st)
		first, firstJar := st.JobID, st.JarID
		copyJar(t, cluster.TestJobJar, jar, "build 2")
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(jar, later, later); err != nil {
			t.Fatal(err)
		}
		converge(t, "upgraded to the new build", ctrl, &spec, &st)
		if st.JobID == first || st.JarID == firstJar || st.JarID == "" {
			t.Fatalf("job %s of jar %s; want a new job of a new upload (was %s of %s)", st.JobID, st.JarID, first, firstJar)
		}
		deleteAll(t, ctrl, spec, &st)
	})
}

// stopWithSavepoint stops job as `flink stop` does and returns the
// savepoint's location once the job FINISHED.
func stopWithSavepoint(t *testing.T, ctx context.Context, c *flinkapi.Client, job flinkapi.JobID) string {
	t.Helper()
	op, err := c.StopWithSavepoint(ctx, job, flinkapi.StopRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := flinkapi.NewWaiter(c).Wait(ctx, op, 2*time.Minute)
	if err != nil || !res.Succeeded() {
		t.Fatalf("stop: %+v %v", res, err)
	}
	for begin := time.Now(); time.Since(begin) < time.Minute; time.Sleep(200 * time.Millisecond) {
		if s, err := c.JobStatus(ctx, job); err == nil && s == flinkapi.JobFinished {
			return res.Location
		}
	}
	t.Fatalf("job %s did not finish after its stop", job)
	return ""
}

// restoredFrom is the path job was restored from, as Flink reports it.
func restoredFrom(t *testing.T, ctx context.Context, c *flinkapi.Client, job flinkapi.JobID) string {
	t.Helper()
	stats, err := c.Checkpoints(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if stats.LatestRestored == nil {
		return ""
	}
	return stats.LatestRestored.ExternalPath
}

// copyJar writes the jar at from to to, with an extra entry naming build
// when it is set: another build of the same job.
func copyJar(t *testing.T, from, to, build string) {
	t.Helper()
	r, err := zip.OpenReader(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(f)
	for _, e := range r.File {
		src, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		dst, err := w.CreateHeader(&zip.FileHeader{Name: e.Name, Method: e.Method})
		if err == nil {
			_, err = io.Copy(dst, src)
		}
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if build != "" {
		dst, err := w.Create("BUILD.txt")
		if err == nil {
			_, err = dst.Write([]byte(build))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
