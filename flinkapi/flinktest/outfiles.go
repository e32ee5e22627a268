package flinktest

import "time"

// The .count files of the jobs' out folders are written lazily. A folder
// with one writer (a job whose source emits) gets its files when someone
// looks (ReadCounts) or the job itself writes (its events call syncFiles):
// one writer's counts do not depend on when they are written, as each key
// gets its latest count. A folder with several writers is written at the
// end of every advance, writers in submission order, as the JobManager's
// jobs write in turn: which count a key shows depends on that order.

// outWriters are the jobs writing to each out folder, in submission order,
// and the folders with more than one.
type outWriters struct {
	by     map[string][]*job
	shared map[string]bool
	// syncedAt is the end of the last advance: shared folders are
	// written up to then.
	syncedAt time.Time
}

// startsWriting records that j's source emits. A folder that gets a
// second writer has its first one's files written up to the last advance,
// as they would be had it been shared since.
func (s *Server) startsWriting(j *job) {
	w := &s.writers
	if w.by == nil {
		w.by, w.shared = map[string][]*job{}, map[string]bool{}
	}
	list := w.by[j.spec.out]
	if len(list) == 1 {
		s.syncFiles(list[0], w.syncedAt)
	}
	i := len(list)
	for i > 0 && list[i-1].idx > j.idx {
		i--
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = j
	w.by[j.spec.out] = list
	if len(list) > 1 {
		w.shared[j.spec.out] = true
	}
}

// stopsWriting records that j's source stopped.
func (s *Server) stopsWriting(j *job) {
	w := &s.writers
	list := w.by[j.spec.out]
	for i, o := range list {
		if o == j {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	switch len(list) {
	case 0:
		delete(w.by, j.spec.out)
	default:
		w.by[j.spec.out] = list
	}
	if len(list) < 2 {
		delete(w.shared, j.spec.out)
	}
}

// syncShared writes the files of the folders with several writers up to
// now, at the end of an advance.
func (s *Server) syncShared(now time.Time) {
	w := &s.writers
	for out := range w.shared {
		for _, j := range w.by[out] {
			s.syncFiles(j, now)
		}
	}
	w.syncedAt = now
}

// syncFolder writes the files of the folder's writers up to now.
func (s *Server) syncFolder(out string, now time.Time) {
	for _, j := range s.writers.by[out] {
		s.syncFiles(j, now)
	}
}
