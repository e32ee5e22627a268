package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// defaultCluster names the cluster of --flink-url in the records.
const defaultCluster = "default"

// records is the fleet.Store of the applied jobs: a fleet.DirStore in
// <state-dir>/records, and the files earlier releases kept in
// <state-dir>/deployments (legacyDeployment), read as records of the
// cluster defaultCluster. The first Save or Delete of such a record
// writes it to the DirStore and renames the old file NAME.json.migrated:
// nothing of it is lost, and no command reads it again. Reads take no
// lock and never wait.
//
// With only set, the store shows only the deployments it names: a
// Runner on it acts on those and leaves the others as they are.
type records struct {
	dir    *fleet.DirStore
	legacy string
	only   map[string]bool

	mu   sync.Mutex
	last map[string]fleet.Record // the record last saved of each name
}

// legacyDeployment is deployments/NAME.json of releases before the fleet
// runner.
type legacyDeployment struct {
	FormatVersion int                 `json:"formatVersion"`
	Name          string              `json:"name"`
	Spec          lifecycle.JobSpec   `json:"spec"`
	Status        lifecycle.JobStatus `json:"status"`
	// Deleted: torn down by delete; the next apply starts anew from the
	// final savepoint in restore-points.
	Deleted bool `json:"deleted,omitempty"`
}

// records is the state directory's store, showing the names of only if
// it is set.
func (s stateDir) records(only map[string]bool) (*records, error) {
	dir, err := fleet.NewDirStore(s.path("records"))
	if err != nil {
		return nil, err
	}
	return &records{dir: dir, legacy: s.path("deployments"), only: only}, nil
}

func (r *records) shows(name string) bool { return r.only == nil || r.only[name] }

// Load reads the record of name: the DirStore's, else the old file's.
func (r *records) Load(ctx context.Context, name string) (fleet.Record, bool, error) {
	rec, ok, err := r.dir.Load(ctx, name)
	if err != nil || ok {
		return rec, ok, err
	}
	return r.readLegacy(name)
}

// List lists the records shown, the DirStore's and the old files' not
// in it, ordered by name.
func (r *records) List(ctx context.Context) ([]fleet.Record, error) {
	recs, err := r.dir.List(ctx)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	var out []fleet.Record
	for _, rec := range recs {
		have[rec.Name] = true
		if r.shows(rec.Name) {
			out = append(out, rec)
		}
	}
	es, err := os.ReadDir(r.legacy)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range es {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		name := nameOfFile(key)
		if !ok || strings.HasPrefix(key, ".") || have[name] || !r.shows(name) {
			continue
		}
		rec, ok, err := r.readLegacy(name)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rec)
		}
	}
	sortRecords(out)
	return out, nil
}

// Save writes rec to the DirStore, and retires the old file of its name.
func (r *records) Save(ctx context.Context, rec *fleet.Record) error {
	if err := r.dir.Save(ctx, rec); err != nil {
		return err
	}
	r.mu.Lock()
	if r.last == nil {
		r.last = map[string]fleet.Record{}
	}
	r.last[rec.Name] = *rec
	r.mu.Unlock()
	return r.retire(rec.Name)
}

// Delete deletes the record of name, and retires the old file of its
// name.
func (r *records) Delete(ctx context.Context, name string) error {
	if err := r.dir.Delete(ctx, name); err != nil {
		return err
	}
	return r.retire(name)
}

// lastSaved is the record this store last saved of name: the status a
// teardown ended with, once the record is deleted.
func (r *records) lastSaved(name string) (fleet.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.last[name]
	return rec, ok
}

func (r *records) legacyPath(name string) string {
	return filepath.Join(r.legacy, fileKey(name)+".json")
}

// readLegacy reads the old file of name as a record; ok is false when
// there is none, or it was deleted.
func (r *records) readLegacy(name string) (fleet.Record, bool, error) {
	var d legacyDeployment
	ok, err := readJSON(r.legacyPath(name), &d)
	switch {
	case err != nil || !ok:
		return fleet.Record{}, false, err
	case d.FormatVersion > stateFormat:
		return fleet.Record{}, false, fmt.Errorf("%s was written by a newer flinkctl (format %d, this one reads %d): use that release: %w",
			r.legacyPath(name), d.FormatVersion, stateFormat, lifecycle.ErrUnknownFormat)
	case d.Name != name:
		return fleet.Record{}, false, fmt.Errorf("%s holds the job %q, not %q: move the file away", r.legacyPath(name), d.Name, name)
	case d.Deleted:
		return fleet.Record{}, false, nil
	}
	rec := fleet.Record{Name: name, Cluster: defaultCluster, Spec: d.Spec, Status: d.Status}
	if d.Status.JobID != "" || d.Status.Action != "" {
		// The spec its job ran under: what delete tears it down with.
		applied := d.Spec
		rec.Applied = &applied
	}
	return rec, true, nil
}

// retire renames the old file of name, if there is one.
func (r *records) retire(name string) error {
	p := r.legacyPath(name)
	if err := os.Rename(p, p+".migrated"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

var _ fleet.Store = (*records)(nil)

func sortRecords(recs []fleet.Record) {
	slices.SortFunc(recs, func(a, b fleet.Record) int { return strings.Compare(a.Name, b.Name) })
}
