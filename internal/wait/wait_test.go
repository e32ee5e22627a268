package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("full wait: %v", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Errorf("no wait: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Error("a canceled context did not end the wait")
	}
}
