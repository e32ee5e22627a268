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
