package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	p := filepath.Join(dir, "a.json")
	for _, content := range []string{"one", "two, longer"} {
		if err := Write(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Errorf("the directory holds %d files, want only a.json: %v", len(es), es)
	}
}

func TestWriteIntoAFileFails(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(f, "a.json"), []byte("x")); err == nil {
		t.Error("Write below a regular file succeeded")
	}
}

// TestWriteHookRunsBeforeTheRename checks that the hook sees the new
// content whole in the temporary file, next to the old file unchanged.
func TestWriteHookRunsBeforeTheRename(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.json")
	if err := Write(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	called := false
	err := WriteHook(p, []byte("new"), func(tmp string) {
		called = true
		if filepath.Dir(tmp) != filepath.Dir(p) {
			t.Errorf("temporary file %s not in %s", tmp, filepath.Dir(p))
		}
		if b, err := os.ReadFile(tmp); err != nil || string(b) != "new" {
			t.Errorf("temporary file: %q, %v; want %q", b, err, "new")
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "old" {
			t.Errorf("file before the rename: %q, %v; want %q", b, err, "old")
		}
	})
	if err != nil || !called {
		t.Fatalf("WriteHook: %v, hook called %v", err, called)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "new" {
		t.Errorf("file after: %q, %v; want %q", b, err, "new")
	}
}
