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
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func testTLSConfigForValidation() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }

// newCert makes a certificate signed by parent (self-signed when parent is nil).
func newCert(t *testing.T, cn string, isCA bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Mutual TLS, as Flink's rest.ssl.authentication-enabled asks for.
func TestMutualTLS(t *testing.T) {
	ca, caKey, _ := newCert(t, "flink-ca", true, nil, nil)
	_, _, serverCert := newCert(t, "jobmanager", false, ca, caKey)
	_, _, clientCert := newCert(t, "operator", false, ca, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "operator" {
			http.Error(w, `{"errors":["no client certificate"]}`, http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`{"flink-version":"1.20.1"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()

	c, err := NewClient(srv.URL, WithTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12}), WithRetryPolicy(NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(context.Background())
	if err != nil || v != (Version{1, 20, 1}) {
		t.Fatalf("Version over mutual TLS = %v, %v", v, err)
	}

	// Without the client certificate the handshake fails: a transport error.
	c, err = NewClient(srv.URL, WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), WithRetryPolicy(NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Config(context.Background())
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a TransportError", err)
	}
	// The server's alert says why, and names the option; only if a reset
	// overtook the alert does the error not say so.
	if errors.Is(err, ErrTLS) {
		if !errors.Is(err, ErrMisconfigured) || IsRetryable(err) || !strings.Contains(err.Error(), "WithTLSConfig") {
			t.Errorf("err = %v; want a misconfiguration naming WithTLSConfig", err)
		}
	} else if !strings.Contains(err.Error(), "reset") {
		t.Errorf("err = %v, want the server's refusal of the missing client certificate", err)
	}
}
