package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// defaultWidth is the width of a terminal whose width cannot be read.
const defaultWidth = 80

// printer writes flinkctl's output: one line per phase, and the live
// progress of a waiting phase. On a terminal the progress is one line,
// rewritten in place and cut to the terminal's width (read again at each
// refresh, so that a resized window is followed), so that it never wraps:
// a wrapped line would leave a row behind at every refresh. Elsewhere
// each change of progress is a plain line of its own.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	width func() int // the terminal's width in columns
	open  bool       // a progress line is on the terminal without its newline
	last  string     // the last progress text written as a plain line
}

// newPrinter is a printer writing to w, rewriting progress in place if w
// is a terminal.
func newPrinter(w io.Writer) *printer {
	p := &printer{w: w, tty: demo.IsTerminal(w)}
	if f, ok := w.(*os.File); ok {
		p.width = func() int { return termWidth(f) }
	}
	return p
}

// newPlainPrinter is a printer writing to w as if it were no terminal.
func newPlainPrinter(w io.Writer) *printer { return &printer{w: w} }

// termWidth is the width of the terminal f, else $COLUMNS, else
// defaultWidth.
func termWidth(f *os.File) int {
	var ws struct{ row, col, xpixel, ypixel uint16 }
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws))); errno == 0 && ws.col > 0 {
		return int(ws.col)
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return defaultWidth
}

// Phase writes the line of a phase that ended: its name in a column, then
// the message. It replaces the progress line.
func (p *printer) Phase(name, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.last = ""
	fmt.Fprintf(p.w, "%-10s %s\n", name, fmt.Sprintf(format, args...))
}

// Progress shows how a waiting phase stands.
func (p *printer) Progress(name, status string, elapsed time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	status = oneLine(status)
	if p.tty {
		width := defaultWidth
		if p.width != nil {
			width = p.width()
		}
		fmt.Fprintf(p.w, "\r\x1b[K%s", fitLine(fmt.Sprintf("%-10s ", name), status, " ("+demo.Seconds(elapsed)+")", width))
		p.open = true
		return
	}
	if status == p.last {
		return
	}
	p.last = status
	fmt.Fprintf(p.w, "  %s: %s (%s)\n", name, status, demo.Seconds(elapsed))
}

// Report returns a callback for lifecycle.Run that shows each step of the
// operation as the progress of phase name.
func (p *printer) Report(name string) func(lifecycle.Report) {
	return func(r lifecycle.Report) {
		if r.Progress.Done() {
			return
		}
		p.Progress(name, demo.Status(r), r.Elapsed)
	}
}

// Clear erases the progress line, if one is on the terminal, so that
// what comes next (an error on stderr) starts a row of its own.
func (p *printer) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

func (p *printer) clear() {
	if p.open {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.open = false
	}
}

// fitLine is head, text and tail on one line of fewer than width
// columns: text is cut (ending in "…") when the whole does not fit, so
// that the tail (the time elapsed) stays in view; on a terminal too
// narrow for head and tail the whole is cut. The last column stays free:
// some terminals wrap as soon as it is written. A rune counts one column.
func fitLine(head, text, tail string, width int) string {
	room := max(width-1, 1)
	n := func(s string) int { return utf8.RuneCountInString(s) }
	if n(head)+n(text)+n(tail) <= room {
		return head + text + tail
	}
	if keep := room - n(head) - n(tail) - 1; keep >= 1 {
		return head + cut(text, keep) + "…" + tail
	}
	return cut(head+text+tail, room-1) + "…"
}

// cut is s's first n runes.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// oneLine is s with its control characters (line breaks, tabs) written
// as spaces: a progress line must stay one row.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
