package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flinkkit/flinkkit/internal/atomicfile"
	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/savepoint"
)

// RestorePointStore keeps the last savepoint of a deployment under a name
// the caller chooses (such as "application/streamlet"), so that it
// outlives the job and the resource that described it: Teardown records
// the final savepoint, and a later Upgrade of the same name (a redeploy)
// restores from it. Implementations are safe for concurrent use.
type RestorePointStore interface {
	// Get returns the record stored under name, and whether there is one.
	// Stored data of a format this release cannot read is an error
	// matching ErrUnknownFormat.
	Get(ctx context.Context, name string) (savepoint.Record, bool, error)
	// Put stores rec under name, replacing what was there.
	Put(ctx context.Context, name string, rec savepoint.Record) error
	// Delete removes name; a name that is not stored is no error.
	Delete(ctx context.Context, name string) error
}

// ErrInvalidName is returned by the stores for a name that is empty,
// longer than 200 bytes, or not made of segments of letters, digits, '.',
// '_' and '-' that start with a letter or digit, separated by single '/'.
var ErrInvalidName = errors.New("lifecycle: invalid restore point name")

func checkName(name string) error {
	bad := func() error {
		return fmt.Errorf("%w %q: a name is 1 to 200 bytes: segments of letters, digits, '.', '_' and '-', each starting with a letter or digit, separated by single '/' (as in app/streamlet)",
			ErrInvalidName, name)
	}
	if name == "" || len(name) > 200 {
		return bad()
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || !isAlnum(seg[0]) {
			return bad()
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
				return bad()
			}
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// MemoryStore is a RestorePointStore in memory, for tests and for callers
// that keep it elsewhere. The zero MemoryStore is ready to use.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[string]savepoint.Record
}

// Get implements RestorePointStore.
func (m *MemoryStore) Get(ctx context.Context, name string) (savepoint.Record, bool, error) {
	if err := checkName(name); err != nil {
		return savepoint.Record{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[name]
	return r, ok, nil
}

// Put implements RestorePointStore.
func (m *MemoryStore) Put(ctx context.Context, name string, rec savepoint.Record) error {
	if err := checkName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]savepoint.Record{}
	}
	m.recs[name] = rec
	return nil
}

// Delete implements RestorePointStore.
func (m *MemoryStore) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, name)
	return nil
}

// FileStore is a RestorePointStore keeping one JSON file per name in a
// directory: the name with '/' written as '~', plus ".json". A file is
// replaced atomically (written to a temporary file in the directory,
// synced, then renamed), so a reader never sees half a record.
//
// A file holds {"formatVersion":9,"record":{...}}: the format version
// (FormatVersion) and the savepoint.Record. Get also reads the files of
// format versions 1 to 8, the bare record that releases before format
// versions wrote (read as version 1), and
// refuses a file of a newer version with an error matching
// ErrUnknownFormat: it was written by a later flinkkit.
type FileStore struct {
	dir string
	mu  sync.Mutex
}

// NewFileStore returns a FileStore in dir, creating dir if needed.
func NewFileStore(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("lifecycle: FileStore needs a directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &FileStore{dir: dir}, nil
}

func (f *FileStore) path(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	return filepath.Join(f.dir, strings.ReplaceAll(name, "/", "~")+".json"), nil
}

// Get implements RestorePointStore.
func (f *FileStore) Get(ctx context.Context, name string) (savepoint.Record, bool, error) {
	p, err := f.path(name)
	if err != nil {
		return savepoint.Record{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return savepoint.Record{}, false, nil
	}
	if err != nil {
		return savepoint.Record{}, false, err
	}
	rec, err := decodeStoreFile(b)
	if err != nil {
		return savepoint.Record{}, false, fmt.Errorf("lifecycle: restore point %q: %w", name, err)
	}
	return rec, true, nil
}

// storeFile is what a FileStore file holds.
type storeFile struct {
	FormatVersion int              `json:"formatVersion"`
	Record        savepoint.Record `json:"record"`
}

// decodeStoreFile reads a FileStore file: the object storeFile marshals
// to, or the bare record written before format versions.
func decodeStoreFile(b []byte) (savepoint.Record, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return savepoint.Record{}, err
	}
	// encoding/json matches names without regard to case; so does this.
	versioned := false
	for k := range keys {
		versioned = versioned || strings.EqualFold(k, "formatVersion") || strings.EqualFold(k, "record")
	}
	if !versioned {
		var rec savepoint.Record // the legacy bare record
		err := json.Unmarshal(b, &rec)
		return rec, err
	}
	var f storeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return savepoint.Record{}, err
	}
	if err := format.Check("lifecycle.FileStore", f.FormatVersion, FormatVersion); err != nil {
		return savepoint.Record{}, err
	}
	return f.Record, nil
}

// Put implements RestorePointStore.
func (f *FileStore) Put(ctx context.Context, name string, rec savepoint.Record) error {
	p, err := f.path(name)
	if err != nil {
		return err
	}
	b, err := json.Marshal(storeFile{FormatVersion: FormatVersion, Record: rec})
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return atomicfile.Write(p, b)
}

// Delete implements RestorePointStore.
func (f *FileStore) Delete(ctx context.Context, name string) error {
	p, err := f.path(name)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

var (
	_ RestorePointStore = (*MemoryStore)(nil)
	_ RestorePointStore = (*FileStore)(nil)
)
