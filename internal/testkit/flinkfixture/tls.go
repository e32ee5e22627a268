package flinkfixture

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// RESTTLS turns on TLS for the REST API of a cluster that Start starts
// (Flink's security.ssl.rest.*): its URL is https://127.0.0.1:<port>, and
// the fixture reaches it with Client. NewRESTTLS makes one from
// certificates (NewCA, CA.Issue) and WriteTrustStore. Making the stores
// needs openssl and Java's keytool.
type RESTTLS struct {
	// KeyStore is a PKCS12 file with the JobManager's key and certificate
	// (security.ssl.rest.keystore).
	KeyStore string
	// TrustStore is a PKCS12 file with the authorities whose client
	// certificates the JobManager accepts (security.ssl.rest.truststore).
	TrustStore string
	// Password protects both stores and the key.
	Password string
	// ClientAuth requires a client certificate signed by an authority of
	// TrustStore (security.ssl.rest.authentication-enabled).
	ClientAuth bool
	// Client is the TLS configuration of the fixture's own requests: it
	// trusts the JobManager's certificate and, with ClientAuth, presents a
	// certificate the JobManager accepts.
	Client *tls.Config
}

// restCipherSuites are the cipher suites of the REST API with TLS
// (security.ssl.algorithms): Flink's default, TLS_RSA_WITH_AES_128_CBC_SHA,
// is one Go's TLS no longer offers.
var restCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
}

// RESTCipherSuites is the value of security.ssl.algorithms of a cluster
// with RESTTLS: ECDHE with AES-GCM, which Go's TLS offers.
var RESTCipherSuites = strings.Join(restCipherSuites, ",")

// config are the Flink configuration entries of t.
func (t *RESTTLS) config() map[string]string {
	return map[string]string{
		"security.ssl.rest.enabled":                "true",
		"security.ssl.rest.keystore":               t.KeyStore,
		"security.ssl.rest.keystore-password":      t.Password,
		"security.ssl.rest.key-password":           t.Password,
		"security.ssl.rest.keystore-type":          "PKCS12",
		"security.ssl.rest.truststore":             t.TrustStore,
		"security.ssl.rest.truststore-password":    t.Password,
		"security.ssl.rest.truststore-type":        "PKCS12",
		"security.ssl.rest.authentication-enabled": fmt.Sprint(t.ClientAuth),
		"security.ssl.algorithms":                  RESTCipherSuites,
	}
}

// CA is a certificate authority for tests: it signs the certificates of
// JobManagers and clients. Its key is an ECDSA P-256 key, made in
// memory.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // Cert, PEM encoded
	key  *ecdsa.PrivateKey
}

// NewCA makes a certificate authority named name, valid from a week ago
// for a year (so that it signs certificates that expired days ago).
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(), Subject: pkix.Name{CommonName: name, Organization: []string{"flinkkit tests"}},
		NotBefore: now.AddDate(0, 0, -7), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

func serialNumber() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// Pool is a certificate pool that holds the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// KeyPair is a certificate and its private key, both PEM encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte // PKCS #8
}

// Issue makes a certificate for cn signed by ca, for server and client
// authentication, valid from notBefore to notAfter for hosts (IP
// addresses and DNS names; none for a client certificate).
func (ca *CA) Issue(cn string, hosts []string, notBefore, notAfter time.Time) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serialNumber(), Subject: pkix.Name{CommonName: cn, Organization: []string{"flinkkit tests"}},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return KeyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return KeyPair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// TLS is the pair as a tls.Certificate.
func (k KeyPair) TLS() (tls.Certificate, error) { return tls.X509KeyPair(k.CertPEM, k.KeyPEM) }

// WriteFiles writes the certificate to certFile and the key to keyFile
// (mode 0600), each through a new file renamed over the old one, as a
// rotation replaces them.
func (k KeyPair) WriteFiles(certFile, keyFile string) error {
	if err := replaceFile(certFile, k.CertPEM); err != nil {
		return err
	}
	return replaceFile(keyFile, k.KeyPEM)
}

func replaceFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// restStorePassword protects the stores NewRESTTLS and WriteTrustStore
// write; it protects nothing: the keys live for a test.
const restStorePassword = "flinkkit-test"

// WriteTrustStore writes a PKCS12 truststore of the CAs to path (for
// RESTTLS.TrustStore), with Java's keytool (one JVM, a second or two;
// build it once for the tests that share the CAs).
func WriteTrustStore(ctx context.Context, path string, cas ...*CA) error {
	keytool, err := keytoolBinary()
	if err != nil {
		return err
	}
	_ = os.Remove(path) // keytool adds to an existing store
	for i, ca := range cas {
		pemFile := fmt.Sprintf("%s.ca-%d.crt", path, i)
		if err := os.WriteFile(pemFile, ca.PEM, 0o600); err != nil {
			return err
		}
		err := runTool(ctx, keytool, "-importcert", "-noprompt", "-alias", fmt.Sprintf("ca-%d", i), "-file", pemFile,
			"-keystore", path, "-storetype", "PKCS12", "-storepass", restStorePassword)
		_ = os.Remove(pemFile)
		if err != nil {
			return err
		}
	}
	return nil
}

// NewRESTTLS writes into dir a PKCS12 keystore of server (its certificate
// with ca's) with openssl, and returns the RESTTLS of a cluster that
// serves server's certificate and, with clientAuth, accepts the client
// certificates of the authorities in trustStore (WriteTrustStore). The
// fixture's own requests trust ca and present client (required with
// clientAuth).
func NewRESTTLS(ctx context.Context, dir string, ca *CA, server KeyPair, trustStore string, clientAuth bool, client *KeyPair) (*RESTTLS, error) {
	if clientAuth && client == nil {
		return nil, errors.New("flinkfixture: NewRESTTLS: client authentication needs the fixture's client certificate")
	}
	crt, key := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(crt, append(append([]byte{}, server.CertPEM...), ca.PEM...), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(key, server.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	ks := filepath.Join(dir, "keystore.p12")
	err := runTool(ctx, "openssl", "pkcs12", "-export", "-in", crt, "-inkey", key, "-name", "jobmanager", "-passout", "pass:"+restStorePassword, "-out", ks)
	_ = os.Remove(key)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	if client != nil {
		cert, err := client.TLS()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &RESTTLS{KeyStore: ks, TrustStore: trustStore, Password: restStorePassword, ClientAuth: clientAuth, Client: cfg}, nil
}

// keytoolBinary is Java's keytool: next to $JAVA_HOME/bin/java, else on
// PATH.
func keytoolBinary() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "keytool")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("keytool")
	if err != nil {
		return "", fmt.Errorf("flinkfixture: no keytool found (set JAVA_HOME or PATH): %w", err)
	}
	return p, nil
}

func runTool(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("flinkfixture: %s %s: %w\n%s", filepath.Base(name), args[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}
