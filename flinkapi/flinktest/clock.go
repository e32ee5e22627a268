package flinktest

import (
	"context"
	"sync"
	"time"
)

// Clock is the time source of a Server. A manual clock (NewClock) stands
// still until Advance moves it, so tests decide when a savepoint completes
// or a checkpoint is taken, without sleeping. A wall clock (the one
// WithRealTime gives a Server) follows time.Now; Advance still jumps it
// ahead. A Clock is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	wall   bool
	start  time.Time // manual clocks: the time at offset 0
	offset time.Duration
}

// NewClock returns a manual clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock {
	return &Clock{start: start}
}

func newWallClock() *Clock { return &Clock{wall: true} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wall {
		return time.Now().Add(c.offset)
	}
	return c.start.Add(c.offset)
}

// Advance moves the clock forward by d. A negative d is ignored: time does
// not run backwards.
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Sleep waits d on the clock: a manual clock advances by d at once, a wall
// clock waits in real time. It returns early with ctx's error when ctx ends.
// Its signature fits the Sleep hooks of pollers and test suites.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	wall := c.wall
	c.mu.Unlock()
	if !wall {
		c.Advance(d)
		return nil
	}
	if d <= 0 {
		return nil
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

// isWall reports whether the clock follows real time.
func (c *Clock) isWall() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}
