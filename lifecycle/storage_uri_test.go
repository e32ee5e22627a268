package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// flakyStorage is a Storage that fails the first fails listings of its
// Storage (a 503 of an object store).
type flakyStorage struct {
	Storage
	fails int
}

func (s *flakyStorage) List(ctx context.Context, dir string) ([]string, error) {
	if s.fails > 0 {
		s.fails--
		return nil, errors.New("503 Slow Down")
	}
	return s.Storage.List(ctx, dir)
}

// A listing that fails is sent again before the check trusts Flink's
// reading: the newer checkpoint the job's folder shows becomes the
// restore point, not the one Flink discarded when it completed.
func TestCheckpointOnStorageListingRetried(t *testing.T) {
	dir := "s3://state/app/checkpoints/a1b2c3d4e5f60718293a4b5c6d7e8f90"
	st := &flakyStorage{Storage: &uriStorage{objects: []string{dir + "/chk-9/_metadata"}}, fails: 1}
	r := &replacer{storage: st}
	p := &Progress{Replace: ReplaceProgress{RestoreFrom: dir + "/chk-7"}}
	if !r.checkpointOnStorage(context.Background(), p) || p.Replace.RestoreFrom != dir+"/chk-9" {
		t.Fatalf("restore from %s, want %s/chk-9", p.Replace.RestoreFrom, dir)
	}
	st = &flakyStorage{Storage: &uriStorage{objects: []string{dir + "/chk-9/_metadata"}}, fails: storageTries}
	r = &replacer{storage: st}
	p = &Progress{Replace: ReplaceProgress{RestoreFrom: dir + "/chk-7"}}
	if !r.checkpointOnStorage(context.Background(), p) || p.Replace.RestoreFrom != dir+"/chk-7" {
		t.Fatalf("with the storage unreadable: restore from %s, want Flink's reading %s/chk-7", p.Replace.RestoreFrom, dir)
	}
}

// uriStorage is a Storage of object-store URIs (s3://bucket/...), from a
// set of object keys: a "directory" lists the next level below it.
type uriStorage struct {
	objects []string
	listed  []string
}

func (s *uriStorage) List(_ context.Context, dir string) ([]string, error) {
	s.listed = append(s.listed, dir)
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []string
	for _, o := range s.objects {
		if rest, ok := strings.CutPrefix(o, prefix); ok {
			name, _, _ := strings.Cut(rest, "/")
			if e := prefix + name; !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func (s *uriStorage) Delete(context.Context, string) error { return nil }

// A start from a retained checkpoint is checked on an object store as on
// a file system: with the job's folder gone and other jobs' folders
// beside it, the checkpoint is gone; the folder listed is the checkpoint
// directory itself, s3://bucket/..., not a path with one slash.
func TestCheckpointOnObjectStorage(t *testing.T) {
	const job = flinkapi.JobID("a1b2c3d4e5f60718293a4b5c6d7e8f90")
	loc := "s3://state/app/checkpoints/" + string(job) + "/chk-7"
	for _, tc := range []struct {
		name    string
		objects []string
		want    bool
		from    string
	}{
		{"gone, other jobs beside it", []string{"s3://state/app/checkpoints/0000000000000000000000000000000b/chk-2/_metadata"}, false, loc},
		{"gone, the savepoints beside the checkpoint directory", []string{"s3://state/app/savepoints/savepoint-a1b2c3-0123456789ab/_metadata"}, false, loc},
		{"nothing seen of the state directory", []string{"s3://other/app/checkpoints/0000000000000000000000000000000b/chk-2/_metadata"}, true, loc},
		{"present", []string{"s3://state/app/checkpoints/" + string(job) + "/chk-7/_metadata"}, true, loc},
		{"a newer one complete", []string{"s3://state/app/checkpoints/" + string(job) + "/chk-7/x",
			"s3://state/app/checkpoints/" + string(job) + "/chk-9/_metadata"}, true, "s3://state/app/checkpoints/" + string(job) + "/chk-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &uriStorage{objects: tc.objects}
			r := &replacer{storage: st}
			p := &Progress{Replace: ReplaceProgress{RestoreFrom: loc}}
			if got := r.checkpointOnStorage(context.Background(), p); got != tc.want || got && p.Replace.RestoreFrom != tc.from {
				t.Fatalf("checkpointOnStorage = %v, restore from %s; want %v, %s (listed %q)", got, p.Replace.RestoreFrom, tc.want, tc.from, st.listed)
			}
			for _, d := range st.listed {
				if !strings.HasPrefix(d, "s3://state/") {
					t.Errorf("listed %q, not a URI of the store", d)
				}
			}
		})
	}
}

// timedStorage is a uriStorage that also tells when each object was
// written (StorageEntries).
type timedStorage struct {
	uriStorage
	written map[string]time.Time
}

func (s *timedStorage) Entries(ctx context.Context, dir string) ([]StorageEntry, error) {
	paths, _ := s.List(ctx, dir)
	es := make([]StorageEntry, 0, len(paths))
	for _, p := range paths {
		es = append(es, StorageEntry{Path: p, Modified: s.written[p]})
	}
	return es, nil
}

// A job started again under the same job id without its state numbers
// its checkpoints from 1 again in the same directory: a higher-numbered
// checkpoint written before the chosen one is an earlier run's and does
// not replace it; one written after it does.
func TestCheckpointOnStorageNumberingRestarted(t *testing.T) {
	dir := "s3://state/app/checkpoints/a1b2c3d4e5f60718293a4b5c6d7e8f90"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		chk9  time.Time
		wantN string
	}{
		{"the higher number written before", t0.Add(-time.Hour), "/chk-1"},
		{"the higher number written after", t0.Add(time.Minute), "/chk-9"},
		{"no time known", time.Time{}, "/chk-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &timedStorage{
				uriStorage: uriStorage{objects: []string{dir + "/chk-1/_metadata", dir + "/chk-9/_metadata"}},
				written:    map[string]time.Time{dir + "/chk-1/_metadata": t0, dir + "/chk-9/_metadata": tc.chk9},
			}
			r := &replacer{storage: st}
			p := &Progress{Replace: ReplaceProgress{RestoreFrom: dir + "/chk-1"}}
			if !r.checkpointOnStorage(context.Background(), p) || p.Replace.RestoreFrom != dir+tc.wantN {
				t.Fatalf("restore from %s, want %s%s", p.Replace.RestoreFrom, dir, tc.wantN)
			}
		})
	}
}

// cutStorage is a Storage whose first cuts listings come back empty
// without an error (a listing cut short: an object store's page lost).
type cutStorage struct {
	Storage
	cuts int
}

func (s *cutStorage) List(ctx context.Context, dir string) ([]string, error) {
	if s.cuts > 0 {
		s.cuts--
		return nil, nil
	}
	return s.Storage.List(ctx, dir)
}

// A listing of the job's checkpoint folder that comes back empty, while
// the folder above it shows the job's, may be cut short: the folder is
// listed once more before the checkpoint counts as gone, and the start
// from it stands.
func TestCheckpointOnStorageEmptyListingRead(t *testing.T) {
	root := "s3://state/app/checkpoints"
	dir := root + "/a1b2c3d4e5f60718293a4b5c6d7e8f90"
	st := &cutStorage{Storage: &uriStorage{objects: []string{dir + "/chk-7/_metadata", root + "/0000000000000000000000000000abcd/chk-3/_metadata"}}, cuts: 1}
	r := &replacer{storage: st}
	p := &Progress{Replace: ReplaceProgress{RestoreFrom: dir + "/chk-7"}}
	if !r.checkpointOnStorage(context.Background(), p) || p.Replace.RestoreFrom != dir+"/chk-7" {
		t.Fatalf("restore from %s, want %s/chk-7", p.Replace.RestoreFrom, dir)
	}
	st = &cutStorage{Storage: &uriStorage{objects: []string{root + "/0000000000000000000000000000abcd/chk-3/_metadata"}}}
	r = &replacer{storage: st}
	p = &Progress{Replace: ReplaceProgress{RestoreFrom: dir + "/chk-7"}}
	if r.checkpointOnStorage(context.Background(), p) {
		t.Fatalf("the job's folder gone: the start from %s stands", p.Replace.RestoreFrom)
	}
}
