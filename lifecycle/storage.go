package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Storage is the file system the jobs' checkpoints lie on, as far as the
// Controller removes the retained checkpoints of replaced jobs
// (Controller.Storage), and checks a checkpoint it starts a job from:
// a chk-N directory with its _metadata is a completed one. Flink has no
// REST call to delete them.
//
// Paths are those Flink writes: URIs such as file:/ckpt/<job id>/chk-17
// or s3://bucket/ckpt/<job id>/chk-17, or plain absolute paths.
// LocalStorage implements it for the local file system (and shared
// mounts); an object store implements List as a listing of the prefix
// dir + "/" with "/" as the delimiter (its common prefixes and objects),
// and Delete as the deletion of every object under the prefix path + "/"
// and of the object path itself: the module
// github.com/flinkkit/flinkkit/s3storage (a Go module of its own, for the
// AWS SDK) does so for S3-compatible object stores (s3://, s3a://,
// s3p:// URIs).
type Storage interface {
	// List returns the direct entries of dir (files and directories) as
	// full paths in dir's form. A dir that does not exist has no
	// entries: an empty list, no error.
	List(ctx context.Context, dir string) ([]string, error)
	// Delete removes path and, for a directory, everything under it. A
	// path that does not exist is no error: a Delete sent again after a
	// crash finds nothing left to do.
	Delete(ctx context.Context, path string) error
}

// StorageEntries is implemented by a Storage that also tells the size
// and modification time of the entries it lists (LocalStorage does, and
// the object store Storage of the module
// github.com/flinkkit/flinkkit/s3storage): what an audit of savepoints
// and checkpoints on storage reads. Its answer has the entries List
// returns, with the same rules (dir's form; a missing dir has none).
type StorageEntries interface {
	// Entries returns the direct entries of dir, sorted by Path.
	Entries(ctx context.Context, dir string) ([]StorageEntry, error)
}

// StorageEntry is an entry of a directory that StorageEntries lists.
type StorageEntry struct {
	// Path is the entry's full path in the listed directory's form, as
	// List returns it.
	Path string
	// Dir is true for a directory: in an object store, a common prefix
	// of keys (a name followed by "/").
	Dir bool
	// Size is a file's size in bytes; 0 for a directory.
	Size int64
	// Modified is when the file was last written: an object's
	// LastModified. For a directory it is the local directory's
	// modification time, and zero in an object store, whose prefixes
	// have none.
	Modified time.Time
}

// ErrStoragePath is matched by the error a Storage returns for a path it
// refuses to touch (LocalStorage: a relative path, one with "..", a
// scheme other than file:, the root): the Controller does not try such a
// path again.
var ErrStoragePath = errors.New("lifecycle: storage path refused")

// LocalStorage is the Storage of the local file system: file: URIs
// (file:/x, file:///x, file://localhost/x) and plain absolute paths.
// It refuses relative paths, paths with a ".." element, other schemes
// and the root directory (ErrStoragePath).
type LocalStorage struct{}

// List returns the entries of dir, sorted, as paths in dir's form (a
// file: URI's entries are file: URIs).
func (LocalStorage) List(ctx context.Context, dir string) ([]string, error) {
	des, prefix, err := readLocalDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(des))
	for _, de := range des {
		out = append(out, prefix+de.Name())
	}
	slices.Sort(out)
	return out, nil
}

// Entries returns the entries of dir with their sizes and modification
// times (StorageEntries), sorted, as paths in dir's form. An entry
// removed while it is read is left out.
func (LocalStorage) Entries(ctx context.Context, dir string) ([]StorageEntry, error) {
	des, prefix, err := readLocalDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]StorageEntry, 0, len(des))
	for _, de := range des {
		fi, err := de.Info()
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return nil, err
		}
		e := StorageEntry{Path: prefix + de.Name(), Dir: fi.IsDir(), Modified: fi.ModTime()}
		if !e.Dir {
			e.Size = fi.Size()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b StorageEntry) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// readLocalDir reads the local directory dir names: its entries (none
// when it does not exist) and the prefix of their paths in dir's form.
func readLocalDir(ctx context.Context, dir string) ([]os.DirEntry, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	local, err := localPath(dir)
	if err != nil {
		return nil, "", err
	}
	des, err := os.ReadDir(local)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, "", nil
	case err != nil:
		return nil, "", err
	}
	return des, strings.TrimSuffix(dir, "/") + "/", nil
}

// Delete removes path, recursively; a missing path is no error.
func (LocalStorage) Delete(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	local, err := localPath(path)
	if err != nil {
		return err
	}
	return os.RemoveAll(local)
}

// localPath is the local file system path of p, a file: URI or a plain
// absolute path.
func localPath(p string) (string, error) {
	rest := p
	if after, ok := strings.CutPrefix(p, "file:"); ok {
		rest = after
		if host, ok := strings.CutPrefix(rest, "//"); ok {
			// file:///x (empty host) or file://localhost/x
			host, path, _ := strings.Cut(host, "/")
			if host != "" && host != "localhost" {
				return "", fmt.Errorf("%w: %q names the host %q, not the local file system", ErrStoragePath, p, host)
			}
			rest = "/" + path
		}
	} else if i := strings.Index(p, "://"); i > 0 && !strings.Contains(p[:i], "/") {
		return "", fmt.Errorf("%w: %q: LocalStorage takes file: URIs and absolute paths only", ErrStoragePath, p)
	}
	if !filepath.IsAbs(rest) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrStoragePath, p)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(rest), "/"), "..") {
		return "", fmt.Errorf("%w: %q contains \"..\"", ErrStoragePath, p)
	}
	clean := filepath.Clean(rest)
	if clean == filepath.Dir(clean) {
		return "", fmt.Errorf("%w: %q is the root directory", ErrStoragePath, p)
	}
	return clean, nil
}
