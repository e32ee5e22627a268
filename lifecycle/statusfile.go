package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/flinkkit/flinkkit/internal/atomicfile"
	"github.com/flinkkit/flinkkit/internal/filelock"
)

// ErrStatusLocked is matched by the error of OpenStatusFile when another
// process (or another StatusFile of this one) has the file open.
var ErrStatusLocked = errors.New("lifecycle: another process acts on this job status")

// StatusFile keeps one job's JobStatus in a file, for a caller that runs
// the Controller from a process of its own (a command-line tool, a
// runtime without an API server): the status is stored after every call
// as the Controller requires, and two processes never act on one job at
// once.
//
// OpenStatusFile takes an exclusive lock on PATH.lock, held until Close
// or until the process ends, however it ends (flock; on systems without
// it OpenStatusFile fails). Load reads the status; Save replaces the file
// atomically (a temporary file in the same directory, synced, renamed
// over PATH, the directory synced), so a crash leaves the last status or
// the one before it, never half of one. Save is the save function of
// Controller.Converge.
type StatusFile struct {
	path string
	lock *filelock.Lock
}

// OpenStatusFile opens the status file at path, creating its directory
// if needed (the file itself is written by the first Save), and locks it
// for this process. When another one holds it, the error matches
// ErrStatusLocked and names its process id.
func OpenStatusFile(path string) (*StatusFile, error) {
	if path == "" {
		return nil, errors.New("lifecycle: OpenStatusFile needs a path")
	}
	l, err := filelock.TryLock(path + ".lock")
	switch {
	case errors.Is(err, filelock.ErrHeld):
		return nil, fmt.Errorf("%w: %w", ErrStatusLocked, err)
	case err != nil:
		return nil, fmt.Errorf("lifecycle: locking the status file: %w", err)
	}
	return &StatusFile{path: path, lock: l}, nil
}

// Path is the file's path.
func (f *StatusFile) Path() string { return f.path }

// Load reads the status; ok is false, with a zero status, when the file
// does not exist yet (nothing was deployed through it). A file that is
// not a JobStatus is an error naming the file; a status of a newer format
// is read as it is, and Reconcile refuses it (ErrUnknownFormat).
func (f *StatusFile) Load() (st JobStatus, ok bool, err error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return JobStatus{}, false, nil
	}
	if err != nil {
		return JobStatus{}, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return JobStatus{}, false, fmt.Errorf("lifecycle: status file %s: %w", f.path, err)
	}
	return st, true, nil
}

// Save replaces the file with st, atomically.
func (f *StatusFile) Save(st *JobStatus) error {
	if f.lock == nil {
		return fmt.Errorf("lifecycle: status file %s is closed", f.path)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(f.path, append(b, '\n'))
}

// Close releases the lock; Save fails afterwards. A second Close does
// nothing.
func (f *StatusFile) Close() error {
	err := f.lock.Unlock()
	f.lock = nil
	return err
}
