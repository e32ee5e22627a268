package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flinkkit/flinkkit/internal/flinkjvm"
)

// started is a process this Deployer started; done is closed once it has
// exited and was reaped.
type started struct {
	pid  int
	done chan struct{}
}

func (p *started) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startProcess starts argv detached from the calling process (a session
// of its own, so that it outlives it), with its output appended to
// <logs>/<role>.out, and records its pid in <dir>/<role>.pid.
func startProcess(l layout, role string, argv []string) (*started, error) {
	out, err := os.OpenFile(filepath.Join(l.Logs, role+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localcluster: start the %s: %w", role, err)
	}
	fmt.Fprintf(out, "==== %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = l.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	// An empty plugins folder keeps Flink from looking for ./plugins.
	cmd.Env = append(flinkjvm.Env(), "FLINK_PLUGINS_DIR="+l.Plugins)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("localcluster: start the %s: %w", role, err)
	}
	p := &started{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // reaps it, so that it is not found as a zombie
		out.Close()
		close(p.done)
	}()
	_ = os.WriteFile(filepath.Join(l.Dir, role+".pid"), []byte(strconv.Itoa(p.pid)+"\n"), 0o644)
	return p, nil
}

// findProcesses returns the pids of the running processes of the cluster
// in dir by role, found by the marker on their command lines (so a pid
// reused by another program is never taken for one of them).
func findProcesses(dir string) (map[string][]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("localcluster: list processes: %w", err)
	}
	marker := []byte(markerProperty + dir + "\x00")
	found := map[string][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, marker) {
			continue
		}
		for _, role := range []string{roleJobManager, roleTaskManager} {
			if bytes.Contains(cmdline, []byte("\x00"+roleProperty+role+"\x00")) {
				found[role] = append(found[role], pid)
			}
		}
	}
	return found, nil
}

// stopProcesses stops every process of the cluster in dir: SIGTERM to
// each one's process group, SIGKILL after grace, and waits until none is
// left, at most grace plus killWait.
func stopProcesses(dir string, grace time.Duration) error {
	signalAll := func(sig syscall.Signal) (int, error) {
		found, err := findProcesses(dir)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, pids := range found {
			for _, pid := range pids {
				n++
				_ = syscall.Kill(-pid, sig) // its group: it leads a session of its own
				_ = syscall.Kill(pid, sig)
			}
		}
		return n, nil
	}
	waitNone := func(d time.Duration) (bool, error) {
		deadline := time.Now().Add(d)
		for {
			found, err := findProcesses(dir)
			if err != nil {
				return false, err
			}
			if len(found) == 0 {
				return true, nil
			}
			if time.Now().After(deadline) {
				return false, nil
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	n, err := signalAll(syscall.SIGTERM)
	if err != nil || n == 0 {
		return err
	}
	if gone, err := waitNone(grace); err != nil || gone {
		return err
	}
	if _, err := signalAll(syscall.SIGKILL); err != nil {
		return err
	}
	gone, err := waitNone(killWait)
	if err != nil {
		return err
	}
	if !gone {
		found, _ := findProcesses(dir)
		return fmt.Errorf("localcluster: processes %v of %s still run after SIGKILL", found, dir)
	}
	return nil
}

// killWait bounds the wait for processes to exit after SIGKILL.
const killWait = 10 * time.Second
