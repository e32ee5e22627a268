package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTryLockIsExclusiveUntilUnlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(p)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second TryLock: %v; want ErrHeld naming pid %d", err, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	l2, err := TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	l2.Unlock()
}

// TestTryLockAcrossProcesses holds the lock in a child process (flock
// through the shell's own tool is not everywhere; the child is this test
// binary) and checks that this process cannot take it.
func TestTryLockAcrossProcesses(t *testing.T) {
	if os.Getenv("FILELOCK_CHILD") != "" {
		l, err := TryLock(os.Getenv("FILELOCK_CHILD"))
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		var b [1]byte
		os.Stdin.Read(b[:]) // hold until the parent closes stdin
		l.Unlock()
		os.Exit(0)
	}
	p := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestTryLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "FILELOCK_CHILD="+p)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child: %q, %v", buf, err)
	}
	if _, err := TryLock(p); !errors.Is(err, ErrHeld) {
		t.Errorf("TryLock while another process holds it: %v; want ErrHeld", err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	l, err := TryLock(p)
	if err != nil {
		t.Fatalf("TryLock after the other process ended: %v", err)
	}
	l.Unlock()
}

func TestWaitTakesTheLockOnceReleased(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	l, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Wait(ctx, p); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHeld) {
		t.Fatalf("Wait while held: %v; want DeadlineExceeded and ErrHeld", err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := Wait(context.Background(), p)
		if err == nil {
			err = l2.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Wait returned while the lock was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	l.Unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not take the released lock")
	}
}
