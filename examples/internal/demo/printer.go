package demo

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// Printer writes a demo's output: one line per phase, and the live progress
// of a waiting phase. On a terminal the progress rewrites one line in place
// (carriage return); elsewhere each change of progress is a plain line of
// its own, indented under the phase lines.
type Printer struct {
	mu   sync.Mutex
	w    io.Writer
	tty  bool
	open bool   // a progress line is on the terminal without its newline
	last string // the last progress text written as a plain line
}

// NewPrinter returns a Printer writing to w, rewriting progress in place
// if w is a terminal.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w, tty: IsTerminal(w)} }

// NewPlainPrinter returns a Printer writing to w as if it were no terminal.
func NewPlainPrinter(w io.Writer) *Printer { return &Printer{w: w} }

// IsTerminal reports whether w is a character device, such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Phase writes the line of a phase that ended: its name in a column, then
// the message.
func (p *Printer) Phase(name, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.last = ""
	fmt.Fprintf(p.w, "%-10s %s\n", name, fmt.Sprintf(format, args...))
}

// Progress shows how a waiting phase stands.
func (p *Printer) Progress(name, status string, elapsed time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%-10s %s (%s)", name, status, Seconds(elapsed))
		p.open = true
		return
	}
	if status == p.last {
		return
	}
	p.last = status
	fmt.Fprintf(p.w, "  %s: %s (%s)\n", name, status, Seconds(elapsed))
}

// Report returns a callback for lifecycle.Run that shows each step of the
// operation as the progress of phase name: the operation's phase, the
// savepoint's acknowledgement while one is in flight, and the last
// transient error.
func (p *Printer) Report(name string) func(lifecycle.Report) {
	return func(r lifecycle.Report) {
		if r.Progress.Done() {
			return
		}
		p.Progress(name, Status(r), r.Elapsed)
	}
}

// Status formats a lifecycle.Report in a few words, such as
// "Savepoint: 2/3 subtasks (66%), 1.2 KiB".
func Status(r lifecycle.Report) string {
	var b strings.Builder
	b.WriteString(string(r.Progress.Phase))
	if r.HasSavepoint {
		b.WriteString(": " + r.Savepoint.String())
	}
	if r.Progress.LastError != "" {
		b.WriteString(", retrying after: " + r.Progress.LastError)
	}
	return b.String()
}

// clear erases a progress line left open on the terminal.
func (p *Printer) clear() {
	if p.open {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.open = false
	}
}

// Seconds formats d as seconds with one decimal, "1.4s".
func Seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
