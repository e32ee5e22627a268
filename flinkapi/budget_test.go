package flinkapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRequestBudgetConcurrency: no more requests are in flight at once
// than the budget's concurrency, whatever the callers.
func TestRequestBudgetConcurrency(t *testing.T) {
	var inFlight, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	defer srv.Close()
	b, err := NewRequestBudget(1e6, 1000, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(srv.URL, WithRequestBudget(b))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := c.JobsOverview(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > 2 || m < 1 {
		t.Errorf("%d requests in flight at once with a concurrency of 2", m)
	}
	if len(b.sem) != 0 {
		t.Errorf("%d places still held after every answer was read", len(b.sem))
	}
}

// TestRequestBudgetRate: past its burst, a request waits for the rate's
// next token; a context that ends while it waits ends the wait.
func TestRequestBudgetRate(t *testing.T) {
	b, err := NewRequestBudget(10, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var slept []time.Duration
	b.now = func() time.Time { return now }
	b.sleep = func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		now = now.Add(d)
		return nil
	}
	for range 5 {
		release, err := b.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	// Three at once (the burst), then one every 100 ms.
	if len(slept) != 2 || slept[0] != 100*time.Millisecond || slept[1] != 100*time.Millisecond {
		t.Errorf("waits %v, want two of 100ms", slept)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.sleep = sleep
	if _, err := b.acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("acquire with an ended context = %v", err)
	}
	for _, bad := range [][3]float64{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {-1, 1, 1}} {
		if _, err := NewRequestBudget(bad[0], int(bad[1]), int(bad[2])); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("NewRequestBudget%v = %v, want ErrInvalidInput", bad, err)
		}
	}
}
