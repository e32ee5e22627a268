package controller

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// fakeDisk is the lifecycle.Storage of the fake JobManager's simulated
// disk, as the operator's --storage-local reads a mounted volume.
type fakeDisk struct{ srv *flinktest.Server }

func (d fakeDisk) Entries(_ context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	var out []lifecycle.StorageEntry
	for _, e := range d.srv.ListStorage(dir) {
		out = append(out, lifecycle.StorageEntry{Path: e.Path, Dir: e.Dir, Size: e.Size, Modified: e.Modified})
	}
	return out, nil
}

func (d fakeDisk) List(ctx context.Context, dir string) ([]string, error) {
	es, _ := d.Entries(ctx, dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out, nil
}

func (d fakeDisk) Delete(_ context.Context, path string) error {
	d.srv.RemoveStorage(path)
	return nil
}

// TestStorageAuditInStatus: with a Storage, the FlinkJob's status tells
// what the last audit of its savepoint and checkpoint directories found
// (status.audit), and a savepoint taken from outside the operator (the
// Flink UI) is recorded in its history (reason Found) at the audit after
// the next upgrade.
func TestStorageAuditInStatus(t *testing.T) {
	root := t.TempDir()
	sp, ck := filepath.Join(root, "savepoints"), filepath.Join(root, "checkpoints")
	h := newHarness(t, flinktest.WithSavepointDir(sp), flinktest.WithCheckpointDir(ck))
	h.r.Storage = fakeDisk{h.srv}
	spec := h.spec()
	spec.Job.FlinkConfiguration["execution.checkpointing.savepoint-dir"] = "file://" + sp
	spec.Job.FlinkConfiguration["execution.checkpointing.dir"] = "file://" + ck
	h.create(spec)
	job := h.until("audited after the deploy", func(j *v1alpha1.FlinkJob) bool {
		return runs(j) && j.Status.Audit != nil && !j.Status.Audit.Time.IsZero()
	}, nil)
	if !strings.Contains(h.statusJSON(), `"audit":`) {
		t.Errorf("status.audit is not in the FlinkJob's status: %s", h.statusJSON())
	}
	id := job.Status.JobID
	flink := h.r.Flink.(*flinkapi.Client)
	op, err := flink.TriggerSavepoint(context.Background(), id, flinkapi.SavepointRequest{TriggerID: flinkapi.NewTriggerID()})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Clock().Advance(5 * time.Second)
	res, err := flink.OperationStatus(context.Background(), op)
	if err != nil || res.Location == "" {
		t.Fatalf("the savepoint from outside: %+v, %v", res, err)
	}
	outside := strings.TrimSuffix(res.Location, "/")
	found := func(j *v1alpha1.FlinkJob) bool {
		return slices.ContainsFunc(j.Status.Savepoints.Records, func(r savepoint.Record) bool {
			return r.Reason == savepoint.ReasonFound && strings.HasSuffix(strings.TrimSuffix(r.Location, "/"), filepath.Base(outside))
		})
	}
	h.edit(func(s *v1alpha1.FlinkJobSpec) { s.Job.Args = append(s.Job.Args, "--name", "counter-2") })
	job = h.until("upgraded and audited", func(j *v1alpha1.FlinkJob) bool { return runs(j) && j.Status.JobID != id && found(j) }, nil)
	a := job.Status.Audit
	if a == nil || a.Recorded != 1 || a.Counts[lifecycle.AuditRestorePoint] == 0 || a.Requests == 0 {
		t.Errorf("status.audit %+v: want the found savepoint recorded, the restore point counted, its requests", a)
	}
	if job.Status.Latest.Reason == savepoint.ReasonFound {
		t.Errorf("latest %+v: the savepoint from outside is older than the upgrade's, not the restore point", job.Status.Latest)
	}
}
