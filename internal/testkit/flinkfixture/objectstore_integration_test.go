//go:build integration

package flinkfixture

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestObjectStoreServer starts the object store on its own
// (StartObjectStore): it answers signed S3 requests, LocationExists and
// ListLocation read s3:// locations in it, and its process and folder are
// gone after Stop.
func TestObjectStoreServer(t *testing.T) {
	ctx := ctxTimeout(t, 5*time.Minute)
	begin := time.Now()
	srv, err := StartObjectStore(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	dir := srv.ownDir
	t.Logf("object store at %s ready in %v, RSS %d MiB", srv.Store.Endpoint, time.Since(begin).Round(time.Millisecond), srv.RSS()>>20)

	s := srv.Store
	sp := "objectstore-test/savepoints/savepoint-000000-1a2b3c"
	for _, key := range []string{sp + "/_metadata", sp + "/0b5e", "objectstore-test/other/x"} {
		if err := s.Client().Put(ctx, s.Bucket, key, []byte("state")); err != nil {
			t.Fatal(err)
		}
	}
	if !LocationExists(s.URI(sp)) || !LocationExists(s.URI(sp)+"/") || !LocationExists(s.URI(sp+"/_metadata")) {
		t.Errorf("LocationExists(%s) is false, with a _metadata object under it", s.URI(sp))
	}
	if LocationExists(s.URI("objectstore-test/savepoints/savepoint-000000-ffffff")) || LocationExists("s3://another-bucket/"+sp) {
		t.Error("LocationExists is true for a location without objects, or in a bucket no store has")
	}
	names, err := ListLocation(ctx, s.URI("objectstore-test/savepoints"))
	if want := []string{"savepoint-000000-1a2b3c/0b5e", "savepoint-000000-1a2b3c/_metadata"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("ListLocation = %q, %v; want %q", names, err, want)
	}
	if names, err := ListLocation(ctx, s.URI("objectstore-test/nothing")); err != nil || len(names) != 0 {
		t.Errorf("ListLocation of an empty prefix = %q, %v", names, err)
	}
	if err := s.Delete(ctx, sp+"/_metadata"); err != nil {
		t.Fatal(err)
	}
	if LocationExists(s.URI(sp)) {
		t.Errorf("LocationExists(%s) after its _metadata was deleted", s.URI(sp))
	}

	pid := srv.proc.pid
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the object store (pid %d) still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the store's temporary folder %s is still there: %v", dir, err)
	}
	if LocationExists(s.URI(sp + "/0b5e")) {
		t.Error("LocationExists reached a stopped store")
	}
	if err := srv.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// TestObjectStoreCluster runs the test job on a cluster whose state is in
// the object store (the shared cluster of `make integration`, or one of
// its own): its checkpoints and a savepoint are s3:// locations under the
// cluster's prefix, a new job restores from the savepoint, and a disposed
// savepoint's objects are gone.
func TestObjectStoreCluster(t *testing.T) {
	ctx := ctxTimeout(t, 6*time.Minute)
	c := SharedForTest(t, ctx, Config{Slots: 2, ObjectStore: true})
	if c.Store == nil || !strings.HasPrefix(c.SavepointURI, "s3://") || !strings.HasPrefix(c.CheckpointURI, "s3://") ||
		c.SavepointDir != "" || c.CheckpointDir != "" {
		t.Fatalf("cluster state: store %+v, savepoints %q (%q), checkpoints %q (%q)", c.Store, c.SavepointURI, c.SavepointDir, c.CheckpointURI, c.CheckpointDir)
	}
	jarID, _ := uploadJar(t, c, c.TestJobJar)
	out := c.OutDir("objectstore")
	args := []string{"--out", out, "--keys", "3", "--rate", "60", "--parallelism", "2", "--checkpoint-interval", "500", "--name", "fixture-objectstore"}
	jobID, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args})
	cancelAtEnd(t, c, jobID)
	waitAllTasksRunning(t, c, jobID, time.Minute)
	first := waitCounts(t, out, 3, time.Minute, func(string, int64) bool { return true })
	waitCounts(t, out, 3, time.Minute, func(k string, n int64) bool { return n > first[k]+5 })

	// Checkpoints complete, in the store under the cluster's prefix.
	var checkpoint string
	waitFor(t, time.Minute, "a completed checkpoint", func() (bool, string) {
		var cp struct {
			Latest struct {
				Completed *struct {
					ExternalPath string `json:"external_path"`
				} `json:"completed"`
			} `json:"latest"`
		}
		a := call(t, c, http.MethodGet, "/jobs/"+jobID+"/checkpoints", nil)
		if a.Status != http.StatusOK {
			return false, a.String()
		}
		a.decode(t, &cp)
		if cp.Latest.Completed == nil {
			return false, "no completed checkpoint"
		}
		checkpoint = cp.Latest.Completed.ExternalPath
		return true, ""
	})
	if !strings.HasPrefix(checkpoint, c.CheckpointURI+"/"+jobID+"/chk-") || !LocationExists(checkpoint) {
		t.Errorf("checkpoint %s: not under %s/%s, or no _metadata in the store", checkpoint, c.CheckpointURI, jobID)
	}
	names, err := ListLocation(ctx, c.CheckpointURI+"/"+jobID)
	if err != nil || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "chk-") && strings.HasSuffix(n, "/_metadata") }) {
		t.Errorf("objects under %s/%s: %q, %v; want a chk-N/_metadata", c.CheckpointURI, jobID, names, err)
	}

	// A savepoint to the default folder.
	before, err := ReadCounts(out)
	if err != nil {
		t.Fatal(err)
	}
	trigger, _ := triggerSavepoint(t, c, jobID, map[string]any{"cancel-job": false})
	final, _ := pollAsync(t, c, "/jobs/"+jobID+"/savepoints/"+trigger, time.Minute)
	var sp asyncResult
	final.decode(t, &sp)
	if sp.Operation == nil || sp.Operation.Location == "" {
		t.Fatalf("savepoint: no location: %s", final)
	}
	location := sp.Operation.Location
	t.Logf("checkpoint %s, savepoint %s", checkpoint, location)
	if !strings.HasPrefix(location, c.SavepointURI+"/savepoint-") || !LocationExists(location) {
		t.Errorf("savepoint %s: not under %s, or no _metadata in the store", location, c.SavepointURI)
	}
	if names, err := ListLocation(ctx, location); err != nil || !slices.Contains(names, "_metadata") {
		t.Errorf("objects under %s: %q, %v; want _metadata", location, names, err)
	}
	if a := cancelJob(t, c, jobID); a.Status != http.StatusAccepted {
		t.Fatalf("cancel: %s", a)
	}
	waitJobState(t, c, jobID, time.Minute, "CANCELED")

	// A new job restores from the savepoint in the store.
	out2 := c.OutDir("objectstore-restored")
	args2 := []string{"--out", out2, "--keys", "3", "--rate", "60", "--parallelism", "1", "--checkpoint-interval", "500", "--name", "fixture-objectstore-restored"}
	jobID2, _ := runJar(t, c, jarID, runRequest{ProgramArgsList: args2, SavepointPath: location})
	cancelAtEnd(t, c, jobID2)
	restored := waitCounts(t, out2, 3, time.Minute, func(string, int64) bool { return true })
	for k, n := range restored {
		if n <= before[k] {
			t.Errorf("restored count of %s is %d, want more than %d (the count before the savepoint)", k, n, before[k])
		}
	}
	if a := cancelJob(t, c, jobID2); a.Status != http.StatusAccepted {
		t.Fatalf("cancel: %s", a)
	}
	waitJobState(t, c, jobID2, time.Minute, "CANCELED")

	// Disposed, the savepoint's objects are gone.
	a := call(t, c, http.MethodPost, "/savepoint-disposal", map[string]any{"savepoint-path": location})
	if a.Status != http.StatusOK && a.Status != http.StatusAccepted {
		t.Fatalf("savepoint disposal: %s", a)
	}
	var r struct {
		RequestID string `json:"request-id"`
	}
	a.decode(t, &r)
	done, _ := pollAsync(t, c, "/savepoint-disposal/"+r.RequestID, time.Minute)
	if LocationExists(location) {
		t.Errorf("savepoint %s exists after its disposal (%s)", location, done)
	}
	if names, err := ListLocation(context.Background(), location); err != nil || len(names) != 0 {
		t.Errorf("objects under %s after its disposal: %q, %v", location, names, err)
	}
}
