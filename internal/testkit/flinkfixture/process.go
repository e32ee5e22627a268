package flinkfixture

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flinkkit/flinkkit/internal/flinkjvm"
)

// Child JVMs get SIGKILL when the Go process dies (Pdeathsig). Linux sends
// that signal when the *thread* that forked the child exits, and Go may end
// idle threads at any time, so every child is started from one goroutine
// that is locked to its OS thread and never returns: the thread lives as
// long as the process.
type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for req := range spawnCh { // never closed: the thread is never released
				req.errc <- req.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
}

// proc is one running process of a cluster (a Flink JVM, or the object
// store), leader of its own process group.
type proc struct {
	role    string // "jobmanager", "taskmanager" or "objectstore"
	pid     int
	logDir  string
	done    chan struct{}
	waitErr error // valid after done is closed
	pidFile string
	regFile string
}

// startProc starts the Flink JVM argv with stdout and stderr appended to
// <logs>/<role>.out, in a new process group, and records its pid in
// <work>/<role>.pid and in the leftover registry folder regDir (if not
// empty).
func startProc(role string, argv []string, l layout, regDir string) (*proc, error) {
	return startProcIn(role, argv, nil, l.Work, "-Dflinkkit.workdir="+l.Work, l, regDir)
}

// startProcIn is startProc for any command: it runs in dir with env added
// to the environment, and marker is an argument of argv that identifies
// the process as the one recorded (reapLeftovers).
func startProcIn(role string, argv, env []string, dir, marker string, l layout, regDir string) (*proc, error) {
	out, err := os.OpenFile(filepath.Join(l.Logs, role+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "==== %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = out
	cmd.Stderr = out
	// An empty plugins folder keeps Flink from looking for ./plugins.
	cmd.Env = append(append(flinkjvm.Env(), "FLINK_PLUGINS_DIR="+l.Plugins), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn(cmd); err != nil {
		out.Close()
		return nil, fmt.Errorf("flinkfixture: start %s: %w", role, err)
	}
	p := &proc{role: role, pid: cmd.Process.Pid, logDir: l.Logs, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	p.pidFile = filepath.Join(l.Work, role+".pid")
	_ = os.WriteFile(p.pidFile, []byte(strconv.Itoa(p.pid)+"\n"), 0o644)
	if regDir != "" && os.MkdirAll(regDir, 0o755) == nil {
		p.regFile = filepath.Join(regDir, strconv.Itoa(p.pid)+".pid")
		rec := fmt.Sprintf("pid=%d\nowner=%d\nrole=%s\nworkdir=%s\nmarker=%s\n", p.pid, os.Getpid(), role, l.Work, marker)
		_ = os.WriteFile(p.regFile, []byte(rec), 0o644)
	}
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalGroup sends sig to the process group; a group that is gone is fine.
func (p *proc) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-p.pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("flinkfixture: signal %s (pid %d): %w", p.role, p.pid, err)
	}
	return nil
}

// stop sends SIGTERM, waits up to grace, then SIGKILL. grace 0 kills at once.
func (p *proc) stop(grace time.Duration) error {
	defer p.forget()
	if grace > 0 && !p.exited() {
		if err := p.signalGroup(syscall.SIGTERM); err != nil {
			return err
		}
		select {
		case <-p.done:
			// The leader is gone; make sure nothing else of its group stays.
			return p.signalGroup(syscall.SIGKILL)
		case <-time.After(grace):
		}
	}
	if err := p.signalGroup(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("flinkfixture: %s (pid %d) did not exit after SIGKILL", p.role, p.pid)
	}
}

func (p *proc) forget() {
	if p.pidFile != "" {
		_ = os.Remove(p.pidFile)
	}
	if p.regFile != "" {
		_ = os.Remove(p.regFile)
	}
}

// exitDescription says how the process ended, for error messages.
func (p *proc) exitDescription() string {
	if !p.exited() {
		return "running"
	}
	if p.waitErr == nil {
		return "exited with status 0"
	}
	return p.waitErr.Error()
}

// rssBytes is the resident set size of the process (Linux /proc).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, err
				}
				return kb * 1024, nil
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// reapLeftovers kills processes recorded in regDir whose owning Go
// process is gone (for example a test binary killed before it could stop its
// cluster and before Pdeathsig could act). A record is acted on only if the
// pid still runs a process with the recorded marker among its arguments (a
// JVM's -Dflinkkit.workdir=<WorkDir>, the object store's data folder), so a
// recycled pid is never signalled.
func reapLeftovers(regDir string) {
	entries, err := os.ReadDir(regDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".pid") {
			continue
		}
		path := filepath.Join(regDir, e.Name())
		rec := parseRecord(path)
		pid, _ := strconv.Atoi(rec["pid"])
		owner, _ := strconv.Atoi(rec["owner"])
		if pid <= 0 {
			_ = os.Remove(path)
			continue
		}
		if owner > 0 && processAlive(owner) {
			continue // another test process still owns it
		}
		marker := rec["marker"]
		if marker == "" && rec["workdir"] != "" {
			marker = "-Dflinkkit.workdir=" + rec["workdir"] // records without a marker
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && marker != "" && bytes.Contains(cmdline, []byte(marker+"\x00")) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = os.Remove(path)
	}
}

func parseRecord(path string) map[string]string {
	rec := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return rec
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			rec[k] = v
		}
	}
	return rec
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
