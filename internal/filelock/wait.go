package filelock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Wait takes the exclusive lock of the file at path as TryLock does,
// waiting while another holder has it: it tries again every few
// milliseconds until it has the lock or ctx is done (then the error
// matches ctx's error and ErrHeld).
func Wait(ctx context.Context, path string) (*Lock, error) {
	delay := time.Millisecond
	for {
		l, err := TryLock(path)
		if !errors.Is(err, ErrHeld) {
			return l, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}
