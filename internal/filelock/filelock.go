// Package filelock takes exclusive locks on files between processes. A
// lock goes with the process that holds it, also when it dies.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrHeld is matched by the error of TryLock when another holder has
// the lock.
var ErrHeld = errors.New("the lock is held")

// Lock is a held lock; Unlock releases it.
type Lock struct{ f *os.File }

// TryLock takes the exclusive lock of the file at path (created if
// needed) for this process, without waiting: when another process (or
// another Lock of this one) holds it, the error matches ErrHeld and
// names what the holder wrote into the file (its process id).
func TryLock(path string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s (%s)", ErrHeld, path, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt(fmt.Appendf(nil, "pid %d", os.Getpid()), 0)
	return &Lock{f: f}, nil
}

// Unlock releases l; a second call does nothing.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
