package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/savepoint"
)

func stores(t *testing.T) map[string]RestorePointStore {
	fs, err := NewFileStore(filepath.Join(t.TempDir(), "points"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]RestorePointStore{"memory": &MemoryStore{}, "file": fs}
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	rec := savepoint.Record{Location: "file:/sp/1", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reason: savepoint.ReasonStop, JobID: "0123456789abcdef0123456789abcdef"}
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			if _, ok, err := s.Get(ctx, "app/streamlet"); ok || err != nil {
				t.Fatalf("empty store: %v, %v", ok, err)
			}
			if err := s.Put(ctx, "app/streamlet", rec); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, "app~streamlet-x", savepoint.Record{Location: "other"}); err == nil {
				t.Error("name with ~ accepted")
			}
			got, ok, err := s.Get(ctx, "app/streamlet")
			if !ok || err != nil || got.Location != rec.Location || !got.Time.Equal(rec.Time) || got.Reason != rec.Reason || got.JobID != rec.JobID {
				t.Fatalf("Get = %+v, %v, %v", got, ok, err)
			}
			if err := s.Delete(ctx, "app/streamlet"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "app/streamlet"); err != nil {
				t.Errorf("second Delete: %v", err)
			}
			if _, ok, _ := s.Get(ctx, "app/streamlet"); ok {
				t.Error("deleted name still stored")
			}
		})
	}
}

func TestStoreBadNames(t *testing.T) {
	ctx := context.Background()
	bad := []string{"", "..", ".", "../x", "a/../../etc", "/abs", "a//b", "a/", "a\\b", "a b", ".hidden", "a/.b", "a\x00b", strings.Repeat("a", 201)}
	for name, s := range stores(t) {
		for _, n := range bad {
			if err := s.Put(ctx, n, savepoint.Record{Location: "x"}); !errors.Is(err, ErrInvalidName) {
				t.Errorf("%s: Put(%q) = %v", name, n, err)
			}
			if _, _, err := s.Get(ctx, n); !errors.Is(err, ErrInvalidName) {
				t.Errorf("%s: Get(%q) = %v", name, n, err)
			}
			if err := s.Delete(ctx, n); !errors.Is(err, ErrInvalidName) {
				t.Errorf("%s: Delete(%q) = %v", name, n, err)
			}
		}
	}
}

// TestFileStoreFiles checks that files stay in the directory, that a write
// leaves no temporary files, and that a second store sees the records.
func TestFileStoreFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Put(ctx, "app/s1", savepoint.Record{Location: fmt.Sprint("file:/sp/", i)}); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "app~s1.json" {
		t.Errorf("files %v", entries)
	}
	s2, _ := NewFileStore(dir)
	if rec, ok, err := s2.Get(ctx, "app/s1"); !ok || err != nil || rec.Location != "file:/sp/2" {
		t.Errorf("second store: %+v, %v, %v", rec, ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "broken"); err == nil {
		t.Error("a corrupt file read without error")
	}
	if _, err := NewFileStore(""); err == nil {
		t.Error("NewFileStore(\"\") succeeded")
	}
}

// TestStoreConcurrent runs Puts, Gets and Deletes from many goroutines
// (run with -race); every Get sees a whole record.
func TestStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 30 {
						n := fmt.Sprintf("app/s%d", i%3)
						loc := fmt.Sprintf("file:/sp/%d-%d", g, i)
						if err := s.Put(ctx, n, savepoint.Record{Location: loc, Reason: savepoint.ReasonStop}); err != nil {
							t.Error(err)
						}
						rec, ok, err := s.Get(ctx, n)
						if err != nil || ok && (!strings.HasPrefix(rec.Location, "file:/sp/") || rec.Reason != savepoint.ReasonStop) {
							t.Errorf("Get = %+v, %v, %v", rec, ok, err)
						}
						if i%7 == 0 {
							if err := s.Delete(ctx, n); err != nil {
								t.Error(err)
							}
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
