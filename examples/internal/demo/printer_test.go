package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPrinterOnATerminal checks that on a terminal the progress rewrites
// one line, which the phase's line then replaces.
func TestPrinterOnATerminal(t *testing.T) {
	var b bytes.Buffer
	p := &Printer{w: &b, tty: true}
	p.Progress("savepoint", "Savepoint", 100*time.Millisecond)
	p.Progress("savepoint", "Savepoint", 200*time.Millisecond)
	p.Phase("savepoint", "done")
	p.Phase("next", "line")
	want := "\r\x1b[Ksavepoint  Savepoint (0.1s)\r\x1b[Ksavepoint  Savepoint (0.2s)\r\x1b[Ksavepoint  done\nnext       line\n"
	if b.String() != want {
		t.Errorf("terminal output %q, want %q", b.String(), want)
	}
}

// TestPrinterElsewhere checks that without a terminal each change of
// progress is one plain line, and a phase line resets it.
func TestPrinterElsewhere(t *testing.T) {
	var b bytes.Buffer
	p := NewPrinter(&b)
	p.Progress("fail", "RUNNING", 0)
	p.Progress("fail", "RUNNING", time.Second)
	p.Progress("fail", "FAILING", 2*time.Second)
	p.Phase("fail", "FAILED")
	p.Progress("fail", "FAILING", 0)
	want := "  fail: RUNNING (0.0s)\n  fail: FAILING (2.0s)\nfail       FAILED\n  fail: FAILING (0.0s)\n"
	if b.String() != want {
		t.Errorf("output %q, want %q", b.String(), want)
	}
}

// TestIsTerminal checks that buffers and regular files are no terminals.
func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(&bytes.Buffer{}) || IsTerminal(f) {
		t.Errorf("a buffer or a regular file counts as a terminal")
	}
}

// TestReadCounts checks the reading of the test job's count files: its
// temporary files and other files are ignored, a bad count is an error.
func TestReadCounts(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"key-0.count": "12", "key-1.count": "7\n", ".key-0.123.tmp": "1", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readCounts(dir)
	if err != nil || len(got) != 2 || got["key-0"] != 12 || got["key-1"] != 7 {
		t.Errorf("readCounts = %v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key-2.count"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCounts(dir); err == nil {
		t.Errorf("a bad count file is no error")
	}
}
