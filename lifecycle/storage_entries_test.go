package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// LocalStorage is a StorageEntries.
var _ StorageEntries = LocalStorage{}

func TestLocalStorageEntries(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "chk-2", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "_metadata"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "chk-2", "x"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "_metadata"), when, when); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, dir := range []string{root, "file:" + root, "file://" + root + "/"} {
		got, err := LocalStorage{}.Entries(ctx, dir)
		if err != nil {
			t.Fatalf("Entries(%q): %v", dir, err)
		}
		prefix := dir
		if prefix[len(prefix)-1] != '/' {
			prefix += "/"
		}
		if len(got) != 2 {
			t.Fatalf("Entries(%q) = %+v, want _metadata and chk-2", dir, got)
		}
		// Sorted by path: "_metadata" < "chk-2" ('_' is 0x5f, 'c' 0x63).
		meta, chk := got[0], got[1]
		if meta.Path != prefix+"_metadata" || meta.Dir || meta.Size != 5 || !meta.Modified.Equal(when) {
			t.Errorf("Entries(%q)[0] = %+v, want the file %s_metadata of 5 bytes modified %v", dir, meta, prefix, when)
		}
		if chk.Path != prefix+"chk-2" || !chk.Dir || chk.Size != 0 || chk.Modified.IsZero() {
			t.Errorf("Entries(%q)[1] = %+v, want the directory %schk-2 with a modification time", dir, chk, prefix)
		}
		list, err := LocalStorage{}.List(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(got) || list[0] != meta.Path || list[1] != chk.Path {
			t.Errorf("List(%q) = %q, Entries' paths differ: %+v", dir, list, got)
		}
	}

	missing, err := LocalStorage{}.Entries(ctx, filepath.Join(root, "nope"))
	if err != nil || len(missing) != 0 {
		t.Errorf("Entries of a missing directory = %+v, %v; want none, no error", missing, err)
	}
	for _, bad := range []string{"relative/dir", "/", "s3://bucket/ckpt", root + "/../x"} {
		if _, err := (LocalStorage{}).Entries(ctx, bad); !errors.Is(err, ErrStoragePath) {
			t.Errorf("Entries(%q) = %v, want ErrStoragePath", bad, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (LocalStorage{}).Entries(cancelled, root); !errors.Is(err, context.Canceled) {
		t.Errorf("Entries with a cancelled context = %v, want context.Canceled", err)
	}
}
