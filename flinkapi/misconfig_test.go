package flinkapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// issueCert makes a server certificate signed by ca for the given names,
// valid from notBefore to notAfter.
func issueCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, dns []string, ips []net.IP, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "jobmanager"},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: dns, IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// counted is a test server that counts the connections it accepted and the
// requests its handler saw.
type counted struct {
	url      string
	conns    atomic.Int32
	requests atomic.Int32
}

func (s *counted) reset() { s.conns.Store(0); s.requests.Store(0) }

// startServer starts h on a plain or TLS httptest server (tlsCert nil: plain;
// a zero certificate: httptest's own).
func startServer(t *testing.T, h http.HandlerFunc, tlsCert *tls.Certificate) *counted {
	t.Helper()
	s := &counted{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	srv.Config.ErrorLog = quietServerLog()
	switch {
	case tlsCert == nil:
		srv.Start()
	case tlsCert.Certificate == nil:
		srv.StartTLS()
	default:
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{*tlsCert}, MinVersion: tls.VersionTLS12}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// startTLSAlertServer accepts connections and answers each with a TLS alert
// record, as a TLS server may answer a plain HTTP request.
func startTLSAlertServer(t *testing.T) *counted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	s := &counted{url: "http://" + ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			buf := make([]byte, 4096)
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			_, _ = conn.Read(buf)
			_, _ = conn.Write([]byte("\x15\x03\x03\x00\x02\x02\x46")) // fatal alert: protocol version
			_ = conn.Close()
		}
	}()
	return s
}

// Each way of setting a client up wrong for its cluster fails at once, on
// every kind of call: one request (or connection), an error matching its
// sentinel and ErrMisconfigured that names what to configure, no
// credentials in it, and no retry.
func TestMisconfigurationIsNotRetried(t *testing.T) {
	ca, caKey, _ := newCert(t, "flink-ca", true, nil, nil)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	trustCA := WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	now := time.Now()
	localhost := []net.IP{net.ParseIP("127.0.0.1")}
	otherHost := issueCert(t, ca, caKey, []string{"jobmanager.flink.svc"}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	expired := issueCert(t, ca, caKey, nil, localhost, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	httptestCert := &tls.Certificate{}

	answer := func(code int, h http.Header, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for k, v := range h {
				w.Header()[k] = v
			}
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}
	}
	never := answer(200, nil, `{}`)
	login := http.Header{"Location": {"https://sso:S3CRET-sso@login.example.com/oauth2/start?rd=%2Foverview&token=S3CRET-tok#S3CRET-frag"}}

	tests := []struct {
		name    string
		srv     func(t *testing.T) *counted
		scheme  string // replaces the server URL's scheme when set
		opts    []Option
		want    error
		message []string // parts of the message: what to configure
		conns   bool     // count connections, not requests: the handler is never reached
		// notFor names a call for which the server gives no sign of the
		// problem (Go's TLS server answers a plain request that does not
		// start with GET, HEAD, POST, PUT or OPTIONS by closing the
		// connection): there only the single request is checked.
		notFor string
	}{
		{"401", func(t *testing.T) *counted {
			return startServer(t, answer(401, http.Header{"Www-Authenticate": {`Basic realm="flink"`}}, flinkError("Unauthorized")), nil)
		}, "", nil, ErrUnauthorized, []string{"401 Unauthorized", "WithBasicAuth", "WithBearerToken"}, false, ""},
		{"403", func(t *testing.T) *counted {
			return startServer(t, answer(403, nil, "<html>Forbidden</html>"), nil)
		}, "", nil, ErrForbidden, []string{"403 Forbidden", "WithBasicAuth", "WithBearerToken"}, false, ""},
		{"302 to a login page", func(t *testing.T) *counted {
			return startServer(t, answer(302, login, `<a href="https://login.example.com/">Found</a>`), nil)
		}, "", nil, ErrRedirect, []string{"302 Found", "redirected to https://xxxxx@login.example.com/oauth2/start?xxxxx#xxxxx", "base URL", "login page"}, false, ""},
		{"307 with a relative Location", func(t *testing.T) *counted {
			return startServer(t, answer(307, http.Header{"Location": {"/sso/login"}}, ""), nil)
		}, "", nil, ErrRedirect, []string{"307 Temporary Redirect", "redirected to http://127.0.0.1:", "/sso/login;", "base URL"}, false, ""},
		{"308 with an unparsable Location", func(t *testing.T) *counted {
			return startServer(t, answer(308, http.Header{"Location": {"http://u:S3CRET-bad@[::1"}}, ""), nil)
		}, "", nil, ErrRedirect, []string{"308 Permanent Redirect", "without a usable Location", "base URL"}, false, ""},
		{"301 to https:// on the same host, as Flink's REST server with TLS answers plain HTTP", func(t *testing.T) *counted {
			return startServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "https://"+r.Host+r.URL.Path)
				w.WriteHeader(http.StatusMovedPermanently)
			}, nil)
		}, "", nil, ErrTLS, []string{"301 Moved Permanently", "the server speaks TLS", "use https://", "WithCAFile"}, false, ""},
		{"unknown certificate authority", func(t *testing.T) *counted {
			return startServer(t, never, httptestCert)
		}, "", nil, ErrTLS, []string{"unknown authority", "WithTLSConfig", "RootCAs", "CA"}, true, ""},
		{"certificate for another host", func(t *testing.T) *counted {
			return startServer(t, never, &otherHost)
		}, "", []Option{trustCA}, ErrTLS, []string{"127.0.0.1", "host name of the base URL", "ServerName", "WithTLSConfig"}, true, ""},
		{"expired certificate", func(t *testing.T) *counted {
			return startServer(t, never, &expired)
		}, "", []Option{trustCA}, ErrTLS, []string{"expired", "rest.ssl.keystore", "WithTLSConfig"}, true, ""},
		{"https to a plain HTTP server", func(t *testing.T) *counted {
			return startServer(t, never, nil)
		}, "https", nil, ErrTLS, []string{"use http://", "base URL"}, true, ""},
		{"http to a TLS server", func(t *testing.T) *counted {
			return startServer(t, never, httptestCert)
		}, "http", nil, ErrTLS, []string{"HTTP request to an HTTPS server", "use https://", "base URL", "WithTLSConfig"}, true, "cancel"},
		{"http to a TLS server that answers with an alert", startTLSAlertServer,
			"", nil, ErrTLS, []string{"use https://", "base URL", "WithTLSConfig"}, true, ""},
	}
	retry := WithRetryPolicy(RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond, MaxElapsed: 10 * time.Second})
	op := Operation{Kind: OpSavepoint, JobID: testJob, TriggerID: testTrigger}
	calls := map[string]func(context.Context, *Client) error{
		"GET": func(ctx context.Context, c *Client) error { _, err := c.Overview(ctx); return err },
		"trigger with trigger id": func(ctx context.Context, c *Client) error {
			_, err := c.TriggerSavepoint(ctx, testJob, SavepointRequest{TriggerID: testTrigger})
			return err
		},
		"cancel": func(ctx context.Context, c *Client) error { return c.CancelJob(ctx, testJob) },
		"Waiter": func(ctx context.Context, c *Client) error {
			_, err := NewWaiter(c, func(o *WaiterOptions) { o.MinDelay, o.MaxDelay = time.Millisecond, time.Millisecond }).Wait(ctx, op, time.Minute)
			return err
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.srv(t)
			base := srv.url
			if tt.scheme != "" {
				base = tt.scheme + base[strings.Index(base, "://"):]
			}
			opts := append([]Option{retry, WithFlinkVersion("1.20"), WithBasicAuth("ops", "S3CRET-pw")}, tt.opts...)
			c, err := NewClient(base, opts...)
			if err != nil {
				t.Fatal(err)
			}
			for name, call := range calls {
				srv.reset()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
				err := call(ctx, c)
				cancel()
				n, what := srv.requests.Load(), "requests"
				if tt.conns {
					n, what = srv.conns.Load(), "connections"
				}
				if n != 1 {
					t.Errorf("%s: %d %s reached the server, want 1 (err = %v)", name, n, what, err)
				}
				if name == tt.notFor {
					continue
				}
				if !errors.Is(err, tt.want) || !errors.Is(err, ErrMisconfigured) {
					t.Fatalf("%s: err = %v; want it to match %v and ErrMisconfigured", name, err, tt.want)
				}
				if IsRetryable(err) || errors.Is(err, ErrWaitTimeout) {
					t.Errorf("%s: %v is retryable", name, err)
				}
				msg := err.Error()
				for _, m := range tt.message {
					if !strings.Contains(msg, m) {
						t.Errorf("%s: message %q does not contain %q", name, msg, m)
					}
				}
				if strings.Contains(msg, "S3CRET") || strings.Contains(msg, "ops") {
					t.Errorf("%s: message leaks credentials: %s", name, msg)
				}
			}
		})
	}
}

// Errors that a retry may well cure are not taken for misconfiguration.
func TestTransientErrorsAreNotMisconfigured(t *testing.T) {
	for _, err := range []error{
		&TransportError{Method: "GET", Path: "/x", Err: errors.New("connection reset by peer")},
		&TransportError{Method: "GET", Path: "/x", Err: errors.New("net/http: TLS handshake timeout")},
		&TransportError{Method: "GET", Path: "/x", Err: context.DeadlineExceeded},
		&APIError{StatusCode: 503}, &APIError{StatusCode: 500}, &APIError{StatusCode: 404},
		&APIError{StatusCode: 400, Errors: []string{"Bad request"}},
	} {
		if errors.Is(err, ErrMisconfigured) || errors.Is(err, ErrTLS) || errors.Is(err, ErrRedirect) {
			t.Errorf("%v matches a misconfiguration", err)
		}
	}
	if !IsRetryable(&TransportError{Err: errors.New("connection reset by peer")}) {
		t.Error("a reset is not retryable")
	}
}

// quietServerLog keeps the test servers' expected TLS handshake errors out
// of the test output.
func quietServerLog() *log.Logger { return log.New(io.Discard, "", 0) }
