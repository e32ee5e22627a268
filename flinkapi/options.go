package flinkapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Option configures a Client. Options validate their arguments; NewClient
// returns the first error.
type Option func(*settings) error

type settings struct {
	httpClient      *http.Client
	timeout         time.Duration
	uploadTimeout   time.Duration
	tlsConfig       *tls.Config
	caFile          string // WithCAFile
	certFile        string // WithClientCertificateFiles
	keyFile         string
	basicUser       string
	basicPass       string
	bearer          string
	userAgent       string
	retry           RetryPolicy
	logger          *slog.Logger
	maxResponseSize int64
	version         Version
	budget          *RequestBudget
}

// Defaults of a Client, as its options document them.
const (
	defaultTimeout         = 10 * time.Second
	defaultUploadTimeout   = 5 * time.Minute
	defaultMaxResponseSize = 8 << 20 // 8 MiB
	defaultUserAgent       = "flinkkit-flinkapi/0.1"
)

// RetryPolicy bounds the retries of safe requests (GETs and triggers that
// carry a client trigger id) after a transport failure or an answer of 429,
// 502, 503 or 504. Waits grow exponentially from InitialInterval to MaxInterval, with
// ±50% jitter; a Retry-After header of the answer is honoured up to
// MaxInterval. Retrying stops after MaxAttempts tries in all, or when the
// request's context ends.
//
// MaxElapsed bounds the whole of such a call, every attempt, body read and
// wait included: the call returns by then, and an attempt still running is
// cut off with an error matching ErrTimeout (and context.DeadlineExceeded).
// A shorter deadline of the caller's context wins. Calls that are never
// retried (jar uploads and runs, cancels, disposals) are bounded by
// WithTimeout alone.
type RetryPolicy struct {
	MaxAttempts     int           // tries in all, including the first; 1 disables retries
	InitialInterval time.Duration // first wait
	MaxInterval     time.Duration // longest single wait
	MaxElapsed      time.Duration // the longest a retried call takes in all, from its start; 0: no bound but the context's
}

// DefaultRetryPolicy is the retry policy of a new Client: up to 6 tries
// within 30 seconds in all, waiting 200 ms, 400 ms, ... up to 5 s between
// tries.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 6, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second, MaxElapsed: 30 * time.Second}

// NoRetry disables retries.
var NoRetry = RetryPolicy{MaxAttempts: 1}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("retry policy: MaxAttempts must be at least 1 (1 disables retries), got %d", p.MaxAttempts)
	case p.MaxAttempts > 1 && p.InitialInterval <= 0:
		return fmt.Errorf("retry policy: InitialInterval must be positive, got %v", p.InitialInterval)
	case p.MaxAttempts > 1 && p.MaxInterval < p.InitialInterval:
		return fmt.Errorf("retry policy: MaxInterval (%v) must not be shorter than InitialInterval (%v)", p.MaxInterval, p.InitialInterval)
	case p.MaxElapsed < 0:
		return fmt.Errorf("retry policy: MaxElapsed must not be negative, got %v", p.MaxElapsed)
	}
	return nil
}

// WithHTTPClient makes the client send its requests through hc (its
// transport, proxy and cookie settings). The client does not modify hc; with
// WithTLSConfig, hc's transport must be an *http.Transport, which is cloned.
// hc.Timeout, if set, bounds every request in addition to WithTimeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) error {
		if hc == nil {
			return errors.New("WithHTTPClient: client is nil")
		}
		s.httpClient = hc
		return nil
	}
}

// WithTimeout bounds each attempt of each request (default 10 s). Jar
// uploads use the longer of this and 5 minutes. A retried request (a GET, a
// trigger with a client trigger id) also ends when its RetryPolicy's
// MaxElapsed has passed.
func WithTimeout(d time.Duration) Option {
	return func(s *settings) error {
		if d <= 0 {
			return fmt.Errorf("WithTimeout: timeout must be positive, got %v", d)
		}
		s.timeout = d
		return nil
	}
}

// WithTLSConfig sets the TLS configuration for an https base URL: Flink's
// REST SSL (rest.ssl.*), including mutual TLS through cfg.Certificates. The
// config is cloned.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(s *settings) error {
		if cfg == nil {
			return errors.New("WithTLSConfig: config is nil")
		}
		s.tlsConfig = cfg.Clone()
		return nil
	}
}

// WithBasicAuth sends HTTP basic authentication, for a proxy in front of
// the JobManager. Credentials never appear in errors or logs.
func WithBasicAuth(user, password string) Option {
	return func(s *settings) error {
		if user == "" {
			return errors.New("WithBasicAuth: user is empty")
		}
		if strings.ContainsAny(user, ":\r\n") {
			return errors.New("WithBasicAuth: user must not contain ':' or line breaks")
		}
		if s.bearer != "" {
			return errors.New("WithBasicAuth: a bearer token is already set; use one kind of authentication")
		}
		s.basicUser, s.basicPass = user, password
		return nil
	}
}

// WithBearerToken sends "Authorization: Bearer token", for a proxy in front
// of the JobManager. The token never appears in errors or logs.
func WithBearerToken(token string) Option {
	return func(s *settings) error {
		if token == "" {
			return errors.New("WithBearerToken: token is empty")
		}
		if strings.ContainsAny(token, " \r\n") {
			return errors.New("WithBearerToken: token must not contain spaces or line breaks")
		}
		if s.basicUser != "" {
			return errors.New("WithBearerToken: basic authentication is already set; use one kind of authentication")
		}
		s.bearer = token
		return nil
	}
}

// WithUserAgent sets the User-Agent header (default "flinkkit-flinkapi/0.1").
func WithUserAgent(ua string) Option {
	return func(s *settings) error {
		if strings.TrimSpace(ua) == "" || strings.ContainsAny(ua, "\r\n") {
			return fmt.Errorf("WithUserAgent: %q is not a valid user agent", ua)
		}
		s.userAgent = ua
		return nil
	}
}

// WithRetryPolicy replaces DefaultRetryPolicy. Use NoRetry to disable
// retries.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(s *settings) error {
		if err := p.validate(); err != nil {
			return fmt.Errorf("WithRetryPolicy: %w", err)
		}
		s.retry = p
		return nil
	}
}

// WithLogger logs each request at debug level and each retry at info level.
// The default logger discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) error {
		if l == nil {
			return errors.New("WithLogger: logger is nil")
		}
		s.logger = l
		return nil
	}
}

// WithMaxResponseSize caps the size of a response body (default 8 MiB); a
// larger answer fails with ErrResponseTooLarge instead of filling memory.
func WithMaxResponseSize(n int64) Option {
	return func(s *settings) error {
		if n < 1024 {
			return fmt.Errorf("WithMaxResponseSize: size must be at least 1024 bytes, got %d", n)
		}
		if n > 1<<30 {
			return fmt.Errorf("WithMaxResponseSize: size must be at most 1 GiB, got %d", n)
		}
		s.maxResponseSize = n
		return nil
	}
}

// WithFlinkVersion fixes the cluster's Flink version ("1.20", "2.1.0"), so
// the client never asks GET /config for it. Use it when /config is not
// reachable, or in tests.
func WithFlinkVersion(version string) Option {
	return func(s *settings) error {
		v, err := ParseVersion(version)
		if err != nil {
			return fmt.Errorf("WithFlinkVersion: %w", err)
		}
		s.version = v
		return nil
	}
}
