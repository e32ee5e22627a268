// Package atomicfile replaces files so that a crash leaves the old
// content or the new, never half of either.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces the file at path with b: it writes a temporary file in
// path's directory (created if needed), syncs it, renames it over path
// and syncs the directory.
func Write(path string, b []byte) error {
	return WriteHook(path, b, nil)
}

// WriteHook is Write that calls beforeRename, if not nil, with the
// temporary file's path once it is written and synced, before the rename:
// where a test stops the process to see what a crash there leaves.
func WriteHook(path string, b []byte, beforeRename func(tmp string)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && beforeRename != nil {
		beforeRename(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // some file systems cannot sync a directory: the rename stands
		d.Close()
	}
	return nil
}
