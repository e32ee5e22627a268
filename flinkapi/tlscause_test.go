package flinkapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testPKI makes certificates for the TLS tests: a CA, and leaves it signs.
type testPKI struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	cert, key, _ := newCert(t, name, true, nil, nil)
	return &testPKI{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}
}

// leaf is a certificate signed by p and its key, as a tls.Certificate
// and as PEM.
type leaf struct {
	tls             tls.Certificate
	serial          *big.Int
	certPEM, keyPEM []byte
	keyDER          []byte
}

func (p *testPKI) issue(t *testing.T, cn string, usage x509.ExtKeyUsage, ips []net.IP, dns []string, notBefore, notAfter time.Time) leaf {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: ips, DNSNames: dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return leaf{
		tls:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		serial:  serial,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		keyDER:  keyDER,
	}
}

func (p *testPKI) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.cert)
	return pool
}

// tlsServer is a TLS test server that counts connections and requests
// and records the serial of each client certificate it saw.
type tlsServer struct {
	url      string
	conns    atomic.Int32
	requests atomic.Int32
	mu       sync.Mutex
	serials  []string
}

func startTLSServer(t *testing.T, cfg *tls.Config) *tlsServer {
	t.Helper()
	s := &tlsServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if len(r.TLS.PeerCertificates) > 0 {
			s.mu.Lock()
			s.serials = append(s.serials, r.TLS.PeerCertificates[0].SerialNumber.String())
			s.mu.Unlock()
		}
		_, _ = w.Write([]byte(`{"flink-version":"1.20.1"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	srv.Config.ErrorLog = quietServerLog()
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *tlsServer) lastSerial() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.serials) == 0 {
		return ""
	}
	return s.serials[len(s.serials)-1]
}

// rotateFile replaces path's content the way a rotation does: a new file
// renamed over the old one.
func rotateFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Each TLS failure with the JobManager ends in a *TLSError of its cause,
// after one connection, never retried, with a message that names the cause
// and what to configure and holds no key material: with the CA and the
// client certificate given in a tls.Config and given as files.
func TestTLSErrorCauses(t *testing.T) {
	ca, other := newTestPKI(t, "flink-ca"), newTestPKI(t, "other-ca")
	now := time.Now()
	localhost := []net.IP{net.ParseIP("127.0.0.1")}
	day := 24 * time.Hour
	good := ca.issue(t, "jobmanager", x509.ExtKeyUsageServerAuth, localhost, nil, now.Add(-day), now.Add(day))
	otherHost := ca.issue(t, "jobmanager", x509.ExtKeyUsageServerAuth, nil, []string{"jobmanager.flink.svc"}, now.Add(-day), now.Add(day))
	expired := ca.issue(t, "jobmanager", x509.ExtKeyUsageServerAuth, localhost, nil, now.Add(-2*day), now.Add(-day))
	clientUsage := ca.issue(t, "jobmanager", x509.ExtKeyUsageClientAuth, localhost, nil, now.Add(-day), now.Add(day))
	client := ca.issue(t, "operator", x509.ExtKeyUsageClientAuth, nil, nil, now.Add(-day), now.Add(day))
	strange := other.issue(t, "operator", x509.ExtKeyUsageClientAuth, nil, nil, now.Add(-day), now.Add(day))

	// Flink's REST SSL speaks TLS 1.2 by default (security.ssl.protocol):
	// a refused client certificate is an alert in the handshake.
	server := func(cert leaf, clientAuth tls.ClientAuthType) *tls.Config {
		return &tls.Config{Certificates: []tls.Certificate{cert.tls}, ClientAuth: clientAuth, ClientCAs: ca.pool(),
			MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}
	}
	dir := t.TempDir()
	files := func(t *testing.T, name string, caPEM []byte, cert *leaf) []Option {
		caFile := filepath.Join(dir, name+"-ca.pem")
		rotateFile(t, caFile, caPEM)
		opts := []Option{WithCAFile(caFile)}
		if cert != nil {
			certFile, keyFile := filepath.Join(dir, name+"-tls.crt"), filepath.Join(dir, name+"-tls.key")
			rotateFile(t, certFile, cert.certPEM)
			rotateFile(t, keyFile, cert.keyPEM)
			opts = append(opts, WithClientCertificateFiles(certFile, keyFile))
		}
		return opts
	}
	config := func(pool *x509.CertPool, cert *leaf) []Option {
		cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{cert.tls}
		}
		return []Option{WithTLSConfig(cfg)}
	}

	tests := []struct {
		name    string
		server  *tls.Config
		caPEM   []byte // the client trusts this CA
		client  *leaf  // and presents this certificate
		url     func(string) string
		want    TLSCause
		message []string
	}{
		{"unknown authority", server(good, tls.NoClientCert), other.pem, nil, nil, TLSUnknownAuthority,
			[]string{"(UnknownAuthority)", "not trust", "signed by unknown authority", "WithCAFile", "rest.ssl.truststore"}},
		{"expired", server(expired, tls.NoClientCert), ca.pem, nil, nil, TLSExpired,
			[]string{"(Expired)", "expired or not yet valid", "rest.ssl.keystore"}},
		{"host name", server(otherHost, tls.NoClientCert), ca.pem, nil, nil, TLSHostnameMismatch,
			[]string{"(HostnameMismatch)", "127.0.0.1", "ServerName"}},
		{"host name of the URL", server(good, tls.NoClientCert), ca.pem, nil,
			func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }, TLSHostnameMismatch,
			[]string{"(HostnameMismatch)", "localhost", "base URL"}},
		{"certificate for clients only", server(clientUsage, tls.NoClientCert), ca.pem, nil, nil, TLSInvalidCertificate,
			[]string{"(InvalidCertificate)", "usage"}},
		{"no client certificate", server(good, tls.RequireAndVerifyClientCert), ca.pem, nil, nil, TLSClientCertificateRequired,
			[]string{"(ClientCertificateRequired)", "authentication-enabled", "WithClientCertificateFiles"}},
		{"client certificate of another authority", server(good, tls.RequireAndVerifyClientCert), ca.pem, &strange, nil, TLSClientCertificateRejected,
			[]string{"(ClientCertificateRejected)", "refused the client's certificate", "rest.ssl.truststore"}},
		{"no version in common", &tls.Config{Certificates: []tls.Certificate{good.tls}, MinVersion: tls.VersionTLS13}, ca.pem, nil, nil, TLSHandshakeRefused,
			[]string{"(HandshakeRefused)", "security.ssl.algorithms"}},
	}
	retry := WithRetryPolicy(RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond, MaxElapsed: 10 * time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTLSServer(t, tt.server)
			u := srv.url
			if tt.url != nil {
				u = tt.url(u)
			}
			block, _ := pem.Decode(tt.caPEM)
			ca, _ := x509.ParseCertificate(block.Bytes)
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			setups := map[string][]Option{"tls.Config": config(pool, tt.client), "files": files(t, strings.ReplaceAll(tt.name, " ", "-"), tt.caPEM, tt.client)}
			if tt.want == TLSHandshakeRefused {
				for k, o := range setups {
					setups[k] = append(o, WithTLSConfig(&tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}))
				}
				setups["files"] = append(files(t, "version", tt.caPEM, nil), WithTLSConfig(&tls.Config{MaxVersion: tls.VersionTLS12}))
			}
			for name, opts := range setups {
				c, err := NewClient(u, append([]Option{retry, WithFlinkVersion("1.20")}, opts...)...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				srv.conns.Store(0)
				_, err = c.Overview(context.Background())
				if n := srv.conns.Load(); n != 1 {
					t.Errorf("%s: %d connections, want 1: %v", name, n, err)
				}
				if srv.requests.Load() != 0 {
					t.Errorf("%s: a request reached the handler", name)
				}
				var te *TLSError
				if !errors.As(err, &te) || te.Cause != tt.want {
					t.Fatalf("%s: err = %v (%T); want a TLSError of cause %s", name, err, err, tt.want)
				}
				if !errors.Is(err, ErrTLS) || !errors.Is(err, ErrMisconfigured) || IsRetryable(err) {
					t.Errorf("%s: %v: ErrTLS %v, ErrMisconfigured %v, retryable %v", name, err, errors.Is(err, ErrTLS), errors.Is(err, ErrMisconfigured), IsRetryable(err))
				}
				msg := err.Error()
				t.Logf("%s: %s", name, msg)
				for _, m := range tt.message {
					if !strings.Contains(msg, m) {
						t.Errorf("%s: message does not contain %q: %s", name, m, msg)
					}
				}
				if tt.client != nil {
					noKeyMaterial(t, msg, *tt.client)
				}
				noKeyMaterial(t, msg, client)
			}
		})
	}

	// https:// to a plain HTTP server.
	plain := startServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{}`)) }, nil)
	c, err := NewClient(strings.Replace(plain.url, "http://", "https://", 1), append([]Option{retry, WithFlinkVersion("1.20")}, files(t, "plain", ca.pem, &client)...)...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Overview(context.Background())
	var te *TLSError
	if !errors.As(err, &te) || te.Cause != TLSSchemeMismatch || IsRetryable(err) || plain.conns.Load() != 1 || !strings.Contains(err.Error(), "use http://") {
		t.Errorf("https to a plain server: %v after %d connections", err, plain.conns.Load())
	}
}

// noKeyMaterial fails t if msg holds any form of the private key of l.
func noKeyMaterial(t *testing.T, msg string, l leaf) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString(l.keyDER)
	if strings.Contains(msg, "PRIVATE KEY") || strings.Contains(msg, b64[:40]) || strings.Contains(msg, string(l.keyPEM[30:70])) {
		t.Errorf("message holds key material: %s", msg)
	}
}

// The files of WithCAFile and WithClientCertificateFiles are read at each
// new connection: a client certificate rotated on disk (a new key pair of
// the same CA) is presented at the next request of the same client, whose
// pooled connection was made with the old one; a CA file replaced by one
// the server's certificate is not signed by fails the next request, and
// one restored makes it work again; files that cannot be used fail the
// request with TLSLocalFiles.
func TestTLSFilesRotation(t *testing.T) {
	ca, other := newTestPKI(t, "flink-ca"), newTestPKI(t, "other-ca")
	now := time.Now()
	server := ca.issue(t, "jobmanager", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")}, nil, now.Add(-time.Hour), now.Add(time.Hour))
	first := ca.issue(t, "operator", x509.ExtKeyUsageClientAuth, nil, nil, now.Add(-time.Hour), now.Add(time.Hour))
	second := ca.issue(t, "operator", x509.ExtKeyUsageClientAuth, nil, nil, now.Add(-time.Hour), now.Add(time.Hour))
	srv := startTLSServer(t, &tls.Config{Certificates: []tls.Certificate{server.tls}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool(),
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12})

	dir := t.TempDir()
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	rotateFile(t, caFile, ca.pem)
	rotateFile(t, certFile, first.certPEM)
	rotateFile(t, keyFile, first.keyPEM)
	c, err := NewClient(srv.url, WithCAFile(caFile), WithClientCertificateFiles(certFile, keyFile), WithFlinkVersion("1.20"),
		WithRetryPolicy(RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func(what string) error {
		t.Helper()
		_, err := c.Overview(ctx)
		t.Logf("%s: %d connections, %d requests, last client certificate %s: %v", what, srv.conns.Load(), srv.requests.Load(), srv.lastSerial(), err)
		return err
	}
	for range 2 {
		if err := get("first key pair"); err != nil {
			t.Fatal(err)
		}
	}
	if srv.lastSerial() != first.serial.String() || srv.conns.Load() != 1 {
		t.Fatalf("presented %s on %d connections, want %s on one", srv.lastSerial(), srv.conns.Load(), first.serial)
	}

	// Rotated: the next request connects anew and presents the new pair.
	rotateFile(t, certFile, second.certPEM)
	rotateFile(t, keyFile, second.keyPEM)
	if err := get("rotated key pair"); err != nil {
		t.Fatal(err)
	}
	if srv.lastSerial() != second.serial.String() || srv.conns.Load() != 2 {
		t.Fatalf("after the rotation presented %s on %d connections, want %s on a second", srv.lastSerial(), srv.conns.Load(), second.serial)
	}
	if err := get("again"); err != nil || srv.conns.Load() != 2 {
		t.Fatalf("an unchanged file renewed the connection: %d connections, %v", srv.conns.Load(), err)
	}

	// The CA file replaced by another authority's: the next request fails
	// verification, once; put back, it works.
	rotateFile(t, caFile, other.pem)
	err = get("other CA")
	var te *TLSError
	if !errors.As(err, &te) || te.Cause != TLSUnknownAuthority || srv.conns.Load() != 3 {
		t.Fatalf("with another CA: %v after %d connections", err, srv.conns.Load())
	}
	rotateFile(t, caFile, ca.pem)
	if err := get("CA back"); err != nil {
		t.Fatal(err)
	}

	// Files that cannot be used at the time of a connection.
	for _, f := range []struct {
		name, path string
		content    []byte
	}{
		{"key of another pair", keyFile, first.keyPEM},
		{"no PEM in the CA file", caFile, []byte("not a certificate")},
		{"no key file", keyFile, nil},
	} {
		restore := map[string][]byte{caFile: ca.pem, certFile: second.certPEM, keyFile: second.keyPEM}
		if f.content == nil {
			if err := os.Remove(f.path); err != nil {
				t.Fatal(err)
			}
		} else {
			rotateFile(t, f.path, f.content)
		}
		before := srv.conns.Load()
		err := get(f.name)
		if !errors.As(err, &te) || te.Cause != TLSLocalFiles || IsRetryable(err) || srv.conns.Load() != before+1 || !strings.Contains(err.Error(), f.path) {
			t.Errorf("%s: %v after %d connections", f.name, err, srv.conns.Load()-before)
		}
		noKeyMaterial(t, err.Error(), first)
		noKeyMaterial(t, err.Error(), second)
		rotateFile(t, f.path, restore[f.path])
	}
	if err := get("restored"); err != nil {
		t.Fatal(err)
	}
}

// NewClient reads the files once and refuses what cannot work.
func TestTLSFilesOptions(t *testing.T) {
	ca := newTestPKI(t, "flink-ca")
	now := time.Now()
	a := ca.issue(t, "operator", x509.ExtKeyUsageClientAuth, nil, nil, now.Add(-time.Hour), now.Add(time.Hour))
	b := ca.issue(t, "operator", x509.ExtKeyUsageClientAuth, nil, nil, now.Add(-time.Hour), now.Add(time.Hour))
	dir := t.TempDir()
	file := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		rotateFile(t, p, content)
		return p
	}
	caFile, certFile, keyFile, otherKey := file("ca.crt", ca.pem), file("tls.crt", a.certPEM), file("tls.key", a.keyPEM), file("b.key", b.keyPEM)
	junk := file("junk", []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"))
	for _, tt := range []struct {
		name string
		opts []Option
		want string
	}{
		{"empty CA path", []Option{WithCAFile("")}, "path is empty"},
		{"missing CA file", []Option{WithCAFile(filepath.Join(dir, "nope"))}, "no such file"},
		{"CA file without certificates", []Option{WithCAFile(junk)}, "holds no PEM certificate"},
		{"CA file a folder", []Option{WithCAFile(dir)}, "not a regular file"},
		{"key file missing", []Option{WithClientCertificateFiles(certFile, "")}, "both a certificate file and a key file"},
		{"key of another pair", []Option{WithClientCertificateFiles(certFile, otherKey)}, "private key does not match public key"},
		{"key for certificate", []Option{WithClientCertificateFiles(keyFile, certFile)}, "client key pair"},
		{"CA file and skip verify", []Option{WithCAFile(caFile), WithTLSConfig(&tls.Config{InsecureSkipVerify: true})}, "InsecureSkipVerify"},
		{"two client certificates", []Option{WithClientCertificateFiles(certFile, keyFile), WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{b.tls}})}, "own client certificates"},
	} {
		_, err := NewClient("https://127.0.0.1:8081", tt.opts...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
			continue
		}
		noKeyMaterial(t, err.Error(), a)
		noKeyMaterial(t, err.Error(), b)
	}
	if _, err := NewClient("https://127.0.0.1:8081", WithCAFile(caFile), WithClientCertificateFiles(certFile, keyFile)); err != nil {
		t.Error(err)
	}
}
