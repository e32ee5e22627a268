package randdriver

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// store is the controllers' Storage in the runs: the fake JobManager's
// simulated disk as Flink lays it out (flinktest.Server.ListStorage), a
// Delete removing what lies under the path as a disposal does
// (RemoveStorage). In some runs it fails some requests, as an object
// store does: 5xx errors, throttling, and listings cut short without an
// error (a page of a listing lost). Its draws come from a source of
// their own, so that the other draws of a seed stay what they were.
type store struct {
	srv *flinktest.Server
	r   *rand.Rand
	// faulty is the chance in 100 of a fault per request (0: none).
	faulty   int
	requests int
	faults   int
	// lastCut is when a listing was last cut short: what it left out
	// could not be found.
	lastCut time.Time
	// trace, if set, traces what a Delete removed.
	trace func(format string, args ...any)
}

// newStore draws the store of a run of seed.
func newStore(srv *flinktest.Server, seed int64) *store {
	r := rand.New(rand.NewPCG(uint64(seed), 0x73746f72)) // "stor"
	s := &store{srv: srv, r: r}
	if r.IntN(3) == 0 {
		s.faulty = 5 + r.IntN(20)
	}
	return s
}

// Errors of the store's faults.
var (
	errStore5xx      = errors.New("storage: 503 Service Unavailable")
	errStoreThrottle = errors.New("storage: 503 SlowDown: please reduce your request rate")
)

// fault draws the fault of one request: an error, a listing cut short
// (cut), or none.
func (s *store) fault() (cut bool, err error) {
	s.requests++
	if s.faulty == 0 || s.r.IntN(100) >= s.faulty {
		return false, nil
	}
	s.faults++
	switch s.r.IntN(3) {
	case 0:
		return false, errStore5xx
	case 1:
		return false, errStoreThrottle
	}
	return true, nil
}

// Entries lists dir on the fake's disk (lifecycle.StorageEntries).
func (s *store) Entries(ctx context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cut, err := s.fault()
	if err != nil {
		return nil, err
	}
	es := s.srv.ListStorage(dir)
	if cut && len(es) > 0 {
		es = es[:s.r.IntN(len(es))]
		s.lastCut = s.srv.Clock().Now()
	}
	out := make([]lifecycle.StorageEntry, 0, len(es))
	for _, e := range es {
		out = append(out, lifecycle.StorageEntry{Path: e.Path, Dir: e.Dir, Size: e.Size, Modified: e.Modified})
	}
	return out, nil
}

// List lists dir on the fake's disk (lifecycle.Storage).
func (s *store) List(ctx context.Context, dir string) ([]string, error) {
	es, err := s.Entries(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out, nil
}

// Delete removes path and what lies under it from the fake's disk; a
// fault fails it before anything is removed.
func (s *store) Delete(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.fault(); err != nil {
		return err
	}
	if n := s.srv.RemoveStorage(path); n > 0 && s.trace != nil {
		s.trace("storage: deleted %s (%d snapshots)", path, n)
	}
	return nil
}
