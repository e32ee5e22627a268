package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/internal/testkit/formattest"
	"github.com/flinkkit/flinkkit/savepoint"
)

// updateFixtures is the -update flag: it writes a missing stored-format
// fixture of the newest version.
var updateFixtures = flag.Bool("update", false, "write a missing stored-format fixture of the newest version into testdata/golden")

func updating() bool { return *updateFixtures }

// goldenRecord is the record of the FileStore fixtures: every field set.
var goldenRecord = savepoint.Record{
	Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", Time: time.Date(2026, 3, 1, 12, 0, 0, 500_000_000, time.UTC),
	Reason: savepoint.ReasonDelete, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
}

// TestFileStoreFormats reads every form of a FileStore file a release wrote
// (testdata/golden; its README.md says what each file is and why none is
// ever edited) through FileStore.Get, checks that FileStore.Put writes the
// newest one byte for byte, and that Get refuses a file of a newer format.
func TestFileStoreFormats(t *testing.T) {
	if ErrUnknownFormat != format.ErrUnknown {
		t.Fatal("lifecycle.ErrUnknownFormat is not the shared format.ErrUnknown")
	}
	ctx := context.Background()
	formattest.Check(t, formattest.Type[savepoint.Record]{
		Name: "lifecycle.FileStore", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: updating(),
		Encode: func(rec savepoint.Record) ([]byte, error) {
			dir := t.TempDir()
			s, err := NewFileStore(dir)
			if err != nil {
				return nil, err
			}
			if err := s.Put(ctx, "app/streamlet", rec); err != nil {
				return nil, err
			}
			return os.ReadFile(filepath.Join(dir, "app~streamlet.json"))
		},
		Decode: func(b []byte) (savepoint.Record, error) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "app~streamlet.json"), b, 0o600); err != nil {
				return savepoint.Record{}, err
			}
			s, err := NewFileStore(dir)
			if err != nil {
				return savepoint.Record{}, err
			}
			rec, ok, err := s.Get(ctx, "app/streamlet")
			if err == nil && !ok {
				err = errors.New("Get found no record")
			}
			return rec, err
		},
		Fixtures: []formattest.Fixture[savepoint.Record]{
			// The bare record FileStore.Put wrote before format versions.
			{File: "filestore-legacy.json", Version: 0, Want: goldenRecord},
			{File: "filestore-v1.json", Version: 1, Want: goldenRecord},
			{File: "filestore-v2.json", Version: 2, Want: goldenRecord},
			{File: "filestore-v3.json", Version: 3, Want: goldenRecord},
			{File: "filestore-v4.json", Version: 4, Want: goldenRecord},
			{File: "filestore-v5.json", Version: 5, Want: ledgerRecord(goldenRecord)},
			{File: "filestore-v6.json", Version: 6, Want: ledgerRecord(goldenRecord)},
			{File: "filestore-v7.json", Version: 7, Want: ledgerRecord(goldenRecord)},
			{File: "filestore-v8.json", Version: 8, Want: ledgerRecord(goldenRecord)},
			{File: "filestore-v9.json", Version: 9, Want: ledgerRecord(goldenRecord)},
		},
	})
}

// TestFileStoreFileForms covers the forms around the fixtures: a file of a
// newer format names the restore point and the version, a negative
// version is refused too, and a broken versioned file is an error.
func TestFileStoreFileForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ body, want string }{
		{fmt.Sprintf(`{"formatVersion":%d,"pointer":"elsewhere"}`, FormatVersion+1),
			fmt.Sprintf(`restore point "app/x": lifecycle.FileStore: format version %d is newer`, FormatVersion+1)},
		{`{"formatVersion":-1,"record":{"location":"a"}}`, `lifecycle.FileStore: format version -1 is not a format version`},
		{`{"formatVersion":"1","record":{}}`, `restore point "app/x"`},
		{`{"record":[]}`, `restore point "app/x"`},
	} {
		if err := os.WriteFile(filepath.Join(dir, "app~x.json"), []byte(tt.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, ok, err := s.Get(ctx, "app/x")
		if err == nil || ok || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Get of %s = %v, %v; want an error containing %q", tt.body, ok, err, tt.want)
		}
		if strings.Contains(tt.want, "format version") && !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("Get of %s: %v does not match ErrUnknownFormat", tt.body, err)
		}
	}
	// A record written over a legacy file is written in the newest format.
	if err := os.WriteFile(filepath.Join(dir, "app~x.json"), []byte(`{"location":"old","time":"2026-03-01T12:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if rec, ok, err := s.Get(ctx, "app/x"); err != nil || !ok || rec.Location != "old" {
		t.Fatalf("legacy file: %+v, %v, %v", rec, ok, err)
	}
	if err := s.Put(ctx, "app/x", savepoint.Record{Location: "new"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app~x.json")); !strings.HasPrefix(string(b), fmt.Sprintf(`{"formatVersion":%d,"record":{"location":"new"`, FormatVersion)) {
		t.Errorf("file after Put: %s", b)
	}
}

// FuzzStoreFile: whatever decodeStoreFile accepts, Put writes again as a
// file that decodes to the same record, and no newer format is accepted.
func FuzzStoreFile(f *testing.F) {
	for _, name := range []string{"filestore-legacy.json", "filestore-v1.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/golden", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"formatVersion":2,"record":{"location":"a"}}`))
	f.Add([]byte(`{"record":{"location":"a","time":"2026-03-01T12:00:00Z"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeStoreFile(b)
		if err != nil {
			if strings.Contains(string(b), `"formatVersion"`) && errors.Is(err, ErrUnknownFormat) && !strings.Contains(err.Error(), "lifecycle.FileStore") {
				t.Fatalf("format error %q does not name the file format", err)
			}
			return
		}
		again, err := json.Marshal(storeFile{FormatVersion: FormatVersion, Record: rec})
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeStoreFile(again)
		if err != nil || back.Location != rec.Location || !back.Time.Equal(rec.Time) || back.Reason != rec.Reason || back.JobID != rec.JobID {
			t.Fatalf("%s: %+v, then %s: %+v, %v", b, rec, again, back, err)
		}
	})
}
