package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flinkkit/flinkkit/internal/atomicfile"
	"github.com/flinkkit/flinkkit/internal/filelock"
)

// DirStore is a Store that keeps each record in a file of its own in one
// directory: NAME.json, the record as indented JSON ('/' of a NAME written
// '~', as lifecycle.FileStore writes it).
//
// Save and Delete of a deployment hold an exclusive lock (flock) on
// .NAME.lock, waiting while another process (or another Save of this
// one) holds it, so that two writers of one deployment follow each
// other; on systems without flock they fail. Save writes the record to a
// temporary file in the directory, syncs it, renames it over NAME.json
// and syncs the directory: a crash leaves the old record or the new one.
// Load and List take no lock and never wait: a rename replaces a file
// whole, so what they read is a record some Save wrote in full.
//
// Files whose names start with a dot (locks, temporary files a crash
// left behind) and files not ending in .json are not records: List
// passes over them. Lock files stay after a Delete, empty but for the
// last holder's process id.
type DirStore struct {
	dir string
	// beforeRename, if set, runs between a Save's synced temporary
	// file and its rename.
	beforeRename func(tmp string)
}

// NewDirStore returns the DirStore of dir, creating the directory if
// needed.
func NewDirStore(dir string) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("fleet: NewDirStore needs a directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &DirStore{dir: dir}, nil
}

func (s *DirStore) path(name string) string { return filepath.Join(s.dir, fileKey(name)+".json") }

func (s *DirStore) lockPath(name string) string {
	return filepath.Join(s.dir, "."+fileKey(name)+".lock")
}

// fileKey is the name's key in file names: '/' written as '~', as
// lifecycle.FileStore writes it. A valid name has no '~', so nameOfKey
// reverses it.
func fileKey(name string) string { return strings.ReplaceAll(name, "/", "~") }

// nameOfKey is the name whose fileKey is key.
func nameOfKey(key string) string { return strings.ReplaceAll(key, "~", "/") }

// Load reads the record of name, without a lock.
func (s *DirStore) Load(ctx context.Context, name string) (Record, bool, error) {
	if err := checkName(name); err != nil {
		return Record{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, false, err
	}
	return s.read(name)
}

func (s *DirStore) read(name string) (Record, bool, error) {
	p := s.path(name)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("fleet: %w", err)
	}
	rec, err := decodeRecord(b, name)
	if err != nil {
		return Record{}, false, fmt.Errorf("fleet: record file %s: %w", p, err)
	}
	return rec, true, nil
}

// decodeRecord reads a stored record of name, checking its format
// before anything else: a newer format may not decode as this release
// knows the types.
func decodeRecord(b []byte, name string) (Record, error) {
	var head struct {
		FormatVersion int    `json:"formatVersion"`
		Name          string `json:"name"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Record{}, err
	}
	if err := checkRecord(&Record{FormatVersion: head.FormatVersion, Name: head.Name}, name); err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// Save replaces the record of rec.Name with rec, under the
// deployment's lock, and sets rec.FormatVersion. A stored record of a
// newer format is left as it is and the error matches
// lifecycle.ErrUnknownFormat. ctx bounds the wait for the lock.
func (s *DirStore) Save(ctx context.Context, rec *Record) error {
	if rec.Name == "" {
		return errNoName
	}
	if err := checkName(rec.Name); err != nil {
		return err
	}
	rec.FormatVersion = FormatVersion
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("fleet: record %s: %w", rec.Name, err)
	}
	return s.locked(ctx, rec.Name, func() error {
		if _, _, err := s.read(rec.Name); err != nil && !isSyntax(err) {
			return err // a newer format, another deployment's record, an I/O error
		}
		return atomicfile.WriteHook(s.path(rec.Name), append(b, '\n'), s.beforeRename)
	})
}

// isSyntax reports whether err is a stored file that is not JSON (cut
// short by a system that does not keep a rename's order): Save writes
// over it.
func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// Delete removes the record of name under its lock.
func (s *DirStore) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return s.locked(ctx, name, func() error {
		err := os.Remove(s.path(name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("fleet: %w", err)
		}
		if d, err := os.Open(s.dir); err == nil {
			_ = d.Sync() // the removal stands without it where a directory cannot be synced
			d.Close()
		}
		return nil
	})
}

// locked runs f holding the lock of name.
func (s *DirStore) locked(ctx context.Context, name string, f func() error) error {
	l, err := filelock.Wait(ctx, s.lockPath(name))
	if err != nil {
		return fmt.Errorf("fleet: locking deployment %s: %w", name, err)
	}
	defer l.Unlock()
	return f()
}

// List reads every record in the directory, ordered by name, without a
// lock. A record file that cannot be read or decoded is an error naming
// it.
func (s *DirStore) List(ctx context.Context) ([]Record, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	var recs []Record
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		name := nameOfKey(key)
		if !ok || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if checkName(name) != nil {
			return nil, fmt.Errorf("fleet: %s: not a record file (%s is not a deployment name)", filepath.Join(s.dir, e.Name()), name)
		}
		rec, ok, err := s.read(name)
		if err != nil {
			return nil, err
		}
		if ok { // else removed since the listing
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Name, b.Name) })
	return recs, nil
}

var _ Store = (*DirStore)(nil)
