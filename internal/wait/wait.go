// Package wait holds the one sleep of flinkkit's blocking helpers: a wait
// that ends early when its context does.
//
//	if err := wait.Sleep(ctx, time.Second); err != nil {
//		return err // ctx ended first
//	}
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, and then returns ctx.Err() (nil
// after the full wait). A d of zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
