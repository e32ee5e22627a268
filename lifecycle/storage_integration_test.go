//go:build integration

package lifecycle_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// countingStorage is a lifecycle.Storage (and lifecycle.StorageEntries,
// as the object store's Storage is) that counts the requests it passes
// on: the Controller's (removals of replaced jobs' checkpoints and of
// disposed savepoints) and its audits' (Entries).
type countingStorage struct {
	s       lifecycle.Storage
	lists   atomic.Int64
	deletes atomic.Int64
}

func (c *countingStorage) List(ctx context.Context, dir string) ([]string, error) {
	c.lists.Add(1)
	return c.s.List(ctx, dir)
}

func (c *countingStorage) Entries(ctx context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	c.lists.Add(1)
	return c.s.(lifecycle.StorageEntries).Entries(ctx, dir)
}

func (c *countingStorage) Delete(ctx context.Context, path string) error {
	c.deletes.Add(1)
	return c.s.Delete(ctx, path)
}

func (c *countingStorage) requests() int64 { return c.lists.Load() + c.deletes.Load() }

// storageLedger compares, after each step of a real test, the object
// store's listing under a deployment's directories with what its status
// says (Controller.Audit), through a countingStorage that it puts in
// place of the Controller's Storage.
type storageLedger struct {
	t       *testing.T
	ctrl    *lifecycle.Controller
	storage *countingStorage
	store   *flinkfixture.ObjectStore
	// seen is the storage requests counted when the last audit ended:
	// the requests between two audits are the steps'.
	seen int64
}

// newStorageLedger wraps ctrl's Storage (flinkfixture.StateStorage if it
// has none) in a countingStorage. The cluster's state must be in an
// object store (Config.ObjectStore).
func newStorageLedger(t *testing.T, ctrl *lifecycle.Controller, cluster *flinkfixture.Cluster) *storageLedger {
	t.Helper()
	if cluster.Store == nil {
		t.Fatalf("the cluster at %s keeps its state in %s, not in an object store", cluster.URL, cluster.CheckpointURI)
	}
	s := ctrl.Storage
	if s == nil {
		s = flinkfixture.StateStorage{}
	}
	if _, ok := s.(lifecycle.StorageEntries); !ok {
		t.Fatalf("the Controller's Storage %T tells no sizes and times (lifecycle.StorageEntries)", s)
	}
	cs := &countingStorage{s: s}
	ctrl.Storage = cs
	return &storageLedger{t: t, ctrl: ctrl, storage: cs, store: cluster.Store}
}

// kindObjects is what the bucket holds under the entries of one kind.
type kindObjects struct{ entries, objects, bytes int64 }

// audit runs Controller.Audit for spec and st, counts the bucket's
// objects and bytes under the audit's entries by kind, and logs one line
// for the step:
//
//	storage-audit test=<name> step=<step> objects=<n> bytes=<b> kinds=<kind>:<entries>/<objects>,... requests=<audit's> step-requests=<since the last audit> took=<audit's time>
//
// objects and bytes count the deployment's objects (those under entries
// of any kind but Foreign).
func (s *storageLedger) audit(step string, spec lifecycle.JobSpec, st *lifecycle.JobStatus) lifecycle.StorageAudit {
	t := s.t
	t.Helper()
	ctx := t.Context()
	stepRequests := s.storage.requests() - s.seen
	begin := time.Now()
	a, err := s.ctrl.Audit(ctx, spec, *st)
	if err != nil {
		t.Fatalf("%s: audit: %v", step, err)
	}
	took := time.Since(begin)
	s.seen = s.storage.requests()
	byKind := map[lifecycle.AuditKind]*kindObjects{}
	for _, e := range a.Entries {
		if byKind[e.Kind] == nil {
			byKind[e.Kind] = &kindObjects{}
		}
		byKind[e.Kind].entries++
	}
	// Every object under the directories listed, given to the deepest
	// entry above it.
	paths := make([]lifecycle.AuditEntry, 0, len(a.Entries))
	for _, e := range a.Entries {
		if e.Kind != lifecycle.AuditMissing && e.Kind != lifecycle.AuditUnread {
			paths = append(paths, e)
		}
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i].Path) > len(paths[j].Path) })
	var objects, bytes int64
	for _, dir := range a.Dirs {
		key, ok := s.store.Key(dir)
		if !ok {
			t.Fatalf("%s: the audit's directory %s is not in the cluster's object store", step, dir)
		}
		objs, err := s.store.List(ctx, strings.TrimSuffix(key, "/")+"/")
		if err != nil {
			t.Fatalf("%s: listing %s: %v", step, dir, err)
		}
		for _, o := range objs {
			uri := s.store.URI(o.Key)
			for _, e := range paths {
				p := strings.TrimSuffix(e.Path, "/")
				if uri != p && !strings.HasPrefix(uri, p+"/") {
					continue
				}
				byKind[e.Kind].objects++
				byKind[e.Kind].bytes += o.Size
				if e.Kind != lifecycle.AuditForeign {
					objects++
					bytes += o.Size
				}
				break
			}
		}
	}
	var kinds []string
	for _, k := range lifecycle.AuditKinds {
		if n := byKind[k]; n != nil {
			kinds = append(kinds, fmt.Sprintf("%s:%d/%d", k, n.entries, n.objects))
		}
	}
	t.Logf("storage-audit test=%s step=%s objects=%d bytes=%d kinds=%s requests=%d step-requests=%d took=%v",
		t.Name(), strings.ReplaceAll(step, " ", "-"), objects, bytes, strings.Join(kinds, ","), a.Requests, stepRequests, took.Round(time.Millisecond))
	return a
}

// check is audit, failing t when the bucket and the ledger differ:
// anything Unrecorded (on storage, in no record), Missing (recorded, not
// on storage) or Unread, a replaced job's checkpoints that the status no
// longer lists for removal (JobStatus.Replaced: nothing will remove
// them), an Incomplete savepoint, an Incomplete checkpoint of an ended
// job that the status does not list for removal, or a truncated audit.
// The transients it lets pass are the running job's checkpoints being
// written (Incomplete chk-N of the current job), a checkpoint aborted by
// the stop of a suspended job (its directory goes once it resumes), and
// what a job listed
// for removal left in its checkpoint directory (its Replaced and
// Incomplete entries), which goes with that directory. Call it at rest:
// no action in flight, no disposal or late savepoint pending.
func (s *storageLedger) check(step string, spec lifecycle.JobSpec, st *lifecycle.JobStatus) lifecycle.StorageAudit {
	t := s.t
	t.Helper()
	a := s.audit(step, spec, st)
	listed := map[flinkapi.JobID]bool{}
	for _, r := range st.Replaced {
		listed[r.JobID] = true
	}
	current := st.JobID
	if st.InFlight() && st.Progress.Submit.NewJobID != "" {
		current = st.Progress.Submit.NewJobID
	}
	var suspended flinkapi.JobID
	if st.Suspended || st.Deleted || st.Action == lifecycle.ActionTeardown && st.Progress.Done() {
		current = "" // the job ended: none of its checkpoints is being written
	}
	if st.Suspended {
		// Its checkpoint directory stays as the stop left it (a
		// checkpoint Flink aborted at the stop included) until the job
		// resumes: then it is a replaced job's, and removed.
		suspended = st.JobID
	}
	var wrong []string
	for _, e := range a.Entries {
		switch e.Kind {
		case lifecycle.AuditUnrecorded, lifecycle.AuditMissing, lifecycle.AuditUnread:
			wrong = append(wrong, fmt.Sprintf("%s %s (job %s)", e.Kind, e.Path, e.JobID))
		case lifecycle.AuditReplaced:
			if !listed[e.JobID] {
				wrong = append(wrong, fmt.Sprintf("Replaced %s of job %s, which the status no longer lists", e.Path, e.JobID))
			}
		case lifecycle.AuditIncomplete:
			// A checkpoint of the running job being written, or one
			// that a job listed for removal left.
			if e.JobID != "" && (e.JobID == current || e.JobID == suspended || listed[e.JobID]) && strings.Contains(e.Path, "/chk-") {
				continue
			}
			wrong = append(wrong, fmt.Sprintf("Incomplete %s (job %s; the running job is %q, listed for removal %v)", e.Path, e.JobID, current, st.Replaced))
		}
	}
	if a.Truncated {
		wrong = append(wrong, fmt.Sprintf("the audit stopped at its budget of %d requests", lifecycle.MaxAuditRequests))
	}
	if len(wrong) > 0 {
		t.Errorf("%s: the bucket and the ledger differ:\n  %s\nstatus: job %s, latest %s, upgradeFrom %s, restoredFrom %s, replaced %v, action %s (restore from %s)\n%s",
			step, strings.Join(wrong, "\n  "), st.JobID, st.Latest.Location, st.UpgradeFrom.Location, st.RestoredFrom, st.Replaced,
			st.Action, st.Progress.Replace.RestoreFrom, a)
	}
	return a
}

// lifecycleRestLimit bounds atRest's wait.
const lifecycleRestLimit = time.Minute

// atRest calls until no action is in flight and no disposal or late
// savepoint is pending, for a check (not at all when none is).
func atRest(t *testing.T, ctx context.Context, what string, ctrl *lifecycle.Controller, spec *lifecycle.JobSpec, st *lifecycle.JobStatus) {
	t.Helper()
	rest := func() bool { return !st.InFlight() && st.Disposing.Location == "" && !st.LateSavepoint.Pending() }
	if rest() {
		return
	}
	realUntil(t, ctx, what+" (at rest)", ctrl, spec, st, lifecycleRestLimit, rest)
}
