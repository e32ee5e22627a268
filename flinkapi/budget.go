package flinkapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// RequestBudget bounds the requests sent to one JobManager: at most QPS
// per second on average with bursts of Burst, and at most Concurrency in
// flight at once, as client-go's rate limiter bounds a Kubernetes
// client. A request over the budget waits for its turn (bounded by its
// context and the client's timeout), so that thousands of jobs polled by
// one program cannot take every REST thread of the JobManager
// (rest.server.numThreads, 4 by default). Share one budget among every
// Client of one cluster (WithRequestBudget); it is safe for concurrent
// use.
type RequestBudget struct {
	qps   float64
	burst float64
	sem   chan struct{}

	mu     sync.Mutex
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
}

// NewRequestBudget returns a budget of qps requests per second (bursts
// of burst), with at most concurrency requests in flight. qps must be
// positive and burst and concurrency at least 1.
func NewRequestBudget(qps float64, burst, concurrency int) (*RequestBudget, error) {
	if !(qps > 0) || burst < 1 || concurrency < 1 {
		return nil, invalidInput("request budget of %v per second, bursts of %d, %d in flight: want a positive rate, a burst and a concurrency of at least 1",
			qps, burst, concurrency)
	}
	return &RequestBudget{qps: qps, burst: float64(burst), sem: make(chan struct{}, concurrency), tokens: float64(burst),
		now: time.Now, sleep: sleep}, nil
}

// WithRequestBudget makes the client wait for b before each request it
// sends, retries and uploads included.
func WithRequestBudget(b *RequestBudget) Option {
	return func(s *settings) error {
		if b == nil {
			return fmt.Errorf("WithRequestBudget: nil budget")
		}
		s.budget = b
		return nil
	}
}

// String describes b.
func (b *RequestBudget) String() string {
	return fmt.Sprintf("%v requests/s, bursts of %v, %d in flight", b.qps, b.burst, cap(b.sem))
}

// acquire waits for a token and a place in flight; release gives the
// place back.
func (b *RequestBudget) acquire(ctx context.Context) (release func(), err error) {
	for {
		b.mu.Lock()
		now := b.now()
		if !b.last.IsZero() && now.After(b.last) {
			b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.qps)
		}
		b.last = now
		if b.tokens >= 1 {
			b.tokens--
			b.mu.Unlock()
			break
		}
		wait := time.Duration((1 - b.tokens) / b.qps * float64(time.Second))
		b.mu.Unlock()
		if err := b.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-b.sem }) }, nil
}

// budgeted is a transport that waits for its budget before each request
// and holds a place in flight until the answer's body is closed or read
// to its end.
type budgeted struct {
	next http.RoundTripper
	b    *RequestBudget
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport underneath.
func (t budgeted) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t budgeted) RoundTrip(req *http.Request) (*http.Response, error) {
	release, err := t.b.acquire(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		release()
		return resp, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody releases its place in flight when read to its end or
// closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (r *releasingBody) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		r.release()
	}
	return n, err
}

func (r *releasingBody) Close() error {
	defer r.release()
	return r.ReadCloser.Close()
}
