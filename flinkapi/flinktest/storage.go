package flinktest

import (
	"sort"
	"strings"
	"time"
)

// StorageEntry is an entry of a directory of the simulated disk, as
// ListStorage shows it.
type StorageEntry struct {
	// Path is the entry's full path in the listed directory's form.
	Path string
	// Dir is true for a directory.
	Dir bool
	// Size is a file's size in bytes; 0 for a directory.
	Size int64
	// Modified is when a file was written: a snapshot's _metadata, when
	// the snapshot completed. Zero for a directory, as in an object
	// store.
	Modified time.Time
}

// metadataSize is the size ListStorage gives a snapshot's _metadata.
const metadataSize = 10

// ListStorage lists the direct entries of dir on the simulated disk, laid
// out as Flink writes the snapshots that are there (completed, and
// neither disposed of, discarded, nor removed by RemoveStorage): a
// savepoint is a directory savepoint-<6 hex>-<12 hex> holding its
// _metadata; a checkpoint is <checkpoint dir>/<job id>/chk-N holding its
// _metadata, beside that job's (empty) shared/ and taskowned/. A
// directory with nothing under it has no entries. Paths are in dir's
// form (file:/x, file:///x or /x), sorted.
func (s *Server) ListStorage(dir string) []StorageEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	d := normalizeLocation(dir)
	prefix := strings.TrimSuffix(dir, "/") + "/"
	seen := map[string]StorageEntry{}
	for _, sn := range s.snapshots {
		if sn.removed {
			continue
		}
		switch {
		case sn.location == d:
			seen["_metadata"] = StorageEntry{Path: prefix + "_metadata", Size: metadataSize, Modified: sn.completed}
		case strings.HasPrefix(sn.location, d+"/"):
			rel := strings.Split(strings.TrimPrefix(sn.location, d+"/"), "/")
			seen[rel[0]] = StorageEntry{Path: prefix + rel[0], Dir: true}
			if len(rel) == 1 && !sn.savepoint && strings.HasPrefix(rel[0], "chk-") {
				// A job's checkpoint directory: its shared and task-owned
				// state lie beside the chk-N directories.
				for _, n := range []string{"shared", "taskowned"} {
					seen[n] = StorageEntry{Path: prefix + n, Dir: true}
				}
			}
		}
	}
	out := make([]StorageEntry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

// RemoveStorage removes path and everything under it from the simulated
// disk, as deleting it from storage does: the snapshots there count as
// removed from then on (Snapshot.Removed), as a disposal's do. It
// returns how many it removed.
func (s *Server) RemoveStorage(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	p := normalizeLocation(path)
	n := 0
	for _, sn := range s.snapshots {
		if !sn.removed && (sn.location == p || strings.HasPrefix(sn.location, p+"/")) {
			sn.removed = true
			n++
		}
	}
	return n
}
