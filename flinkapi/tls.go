package flinkapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TLSCause names why TLS with the JobManager failed, in a closed set. Each
// cause is one a retry does not change.
type TLSCause string

// The causes of a TLSError.
const (
	// TLSUnknownAuthority: the server's certificate is signed by an
	// authority the client does not trust (or the system has no roots).
	TLSUnknownAuthority TLSCause = "UnknownAuthority"
	// TLSExpired: the server's certificate (or one of its chain) is
	// expired or not yet valid, by the client's clock.
	TLSExpired TLSCause = "Expired"
	// TLSHostnameMismatch: the server's certificate is not for the host
	// name (or IP address) of the base URL, or of tls.Config.ServerName.
	TLSHostnameMismatch TLSCause = "HostnameMismatch"
	// TLSInvalidCertificate: the server's certificate failed verification
	// otherwise: not meant for a server, a chain that breaks a name
	// constraint, a signature that does not verify.
	TLSInvalidCertificate TLSCause = "InvalidCertificate"
	// TLSClientCertificateRequired: the server refused the handshake for
	// the want of a client certificate, and the client has none
	// configured (Flink's security.ssl.rest.authentication-enabled).
	TLSClientCertificateRequired TLSCause = "ClientCertificateRequired"
	// TLSClientCertificateRejected: the server refused the client's
	// certificate: not signed by an authority of its truststore, expired,
	// or (with tls.Config.Certificates) none of the client's certificates
	// is of an authority the server named, so none was sent.
	TLSClientCertificateRejected TLSCause = "ClientCertificateRejected"
	// TLSHandshakeRefused: client and server have no TLS version or
	// cipher suite in common. Flink's default security.ssl.algorithms
	// (TLS_RSA_WITH_AES_128_CBC_SHA) is one Go no longer offers: list
	// ECDHE suites there.
	TLSHandshakeRefused TLSCause = "HandshakeRefused"
	// TLSSchemeMismatch: one side speaks TLS and the other plain HTTP: an
	// https:// base URL for a server without TLS, or an http:// one for a
	// TLS server that answers with a TLS record.
	TLSSchemeMismatch TLSCause = "SchemeMismatch"
	// TLSLocalFiles: the client's own files (WithCAFile,
	// WithClientCertificateFiles) could not be read or hold no usable
	// certificate or key at the time of the connection.
	TLSLocalFiles TLSCause = "LocalFiles"
)

// TLSError is a TLS failure with the JobManager that a retry does not
// change. It is the Err of the request's *TransportError (find it with
// errors.As), matches ErrTLS and ErrMisconfigured, and is never retried:
// IsRetryable is false for it. Its message names the cause and what to
// configure. It holds no key material: the underlying errors name
// certificates (subjects, host names, validity) and files, never a private
// key or the bytes of a file.
//
// An http:// base URL for a TLS server that answers a plain request with
// 400 ("Client sent an HTTP request to an HTTPS server") gives an
// *APIError matching ErrTLS instead, and one that just closes the
// connection (as Flink's REST server does) cannot be told from a network
// failure.
type TLSError struct {
	Cause TLSCause
	Err   error // the crypto/tls, crypto/x509 or file error
}

// Error returns what failed, the cause in its own words, and what to
// configure.
func (e *TLSError) Error() string {
	what, advice := e.Cause.describe(), e.Cause.advice()
	if e.Cause == TLSSchemeMismatch {
		var rec tls.RecordHeaderError
		if errors.As(e.Err, &rec) || errors.Is(e.Err, http.ErrSchemeMismatch) {
			what = "the server does not speak TLS"
			advice = "use http:// in the base URL given to NewClient, or enable security.ssl.rest.enabled on the cluster"
		} else {
			what = "the server speaks TLS"
			advice = "use https:// in the base URL given to NewClient, with the cluster's CA given with WithCAFile or WithTLSConfig"
		}
	}
	return fmt.Sprintf("%s (%s): %v; %s", what, e.Cause, e.Err, advice)
}

// Unwrap returns the underlying error.
func (e *TLSError) Unwrap() error { return e.Err }

// Is makes a TLSError match ErrTLS and ErrMisconfigured.
func (e *TLSError) Is(target error) bool { return target == ErrTLS || target == ErrMisconfigured }

func (c TLSCause) describe() string {
	switch c {
	case TLSUnknownAuthority:
		return "the server's certificate is signed by an authority the client does not trust"
	case TLSExpired:
		return "the server's certificate is expired or not yet valid"
	case TLSHostnameMismatch:
		return "the server's certificate is not valid for the host name of the base URL"
	case TLSInvalidCertificate:
		return "the server's certificate failed verification"
	case TLSClientCertificateRequired:
		return "the server requires a client certificate and the client has none"
	case TLSClientCertificateRejected:
		return "the server refused the client's certificate"
	case TLSHandshakeRefused:
		return "the server refused the handshake: no TLS version or cipher suite in common"
	case TLSLocalFiles:
		return "the client's certificate files could not be used"
	}
	return "TLS failed"
}

func (c TLSCause) advice() string {
	switch c {
	case TLSUnknownAuthority:
		return "give the cluster's CA (the certificate in rest.ssl.truststore) with WithCAFile, or as RootCAs in the tls.Config given with WithTLSConfig"
	case TLSExpired:
		return "renew the certificate of the JobManager (rest.ssl.keystore) or check the clocks, and trust its CA with WithCAFile or WithTLSConfig"
	case TLSHostnameMismatch:
		return "use a name the certificate holds in the base URL given to NewClient, or set ServerName in the tls.Config given with WithTLSConfig"
	case TLSInvalidCertificate:
		return "check the CA given with WithCAFile or WithTLSConfig, the host name of the base URL, and the certificate's usage (server authentication)"
	case TLSClientCertificateRequired:
		return "the cluster has security.ssl.rest.authentication-enabled: give a certificate its truststore trusts with WithClientCertificateFiles, " +
			"or as Certificates in the tls.Config given with WithTLSConfig"
	case TLSClientCertificateRejected:
		return "give a valid certificate signed by an authority of the cluster's rest.ssl.truststore with WithClientCertificateFiles, " +
			"or as Certificates in the tls.Config given with WithTLSConfig"
	case TLSHandshakeRefused:
		return "list cipher suites Go offers (ECDHE with AES-GCM) in the cluster's security.ssl.algorithms, and check security.ssl.protocol " +
			"against MinVersion and MaxVersion of the tls.Config given with WithTLSConfig"
	case TLSLocalFiles:
		return "check the files given with WithCAFile and WithClientCertificateFiles"
	}
	return "check the TLS settings given with WithTLSConfig, WithCAFile and WithClientCertificateFiles"
}

// classifyTLS returns the cause of a TLS failure that a retry does not
// change, and "" for any other error. hs is what the attempt's handshake
// noted (nil: nothing), clientCert whether the client has a certificate
// to present, which decides where hs cannot.
func classifyTLS(err error, hs *handshakeNote, clientCert bool) TLSCause {
	if err == nil {
		return ""
	}
	var (
		te    *TLSError
		files *tlsFileError
		host  x509.HostnameError
		ca    x509.UnknownAuthorityError
		roots x509.SystemRootsError
		inv   x509.CertificateInvalidError
		ver   *tls.CertificateVerificationError
		rec   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &te):
		return te.Cause
	case errors.As(err, &files):
		return TLSLocalFiles
	case errors.As(err, &host):
		return TLSHostnameMismatch
	case errors.As(err, &ca), errors.As(err, &roots):
		return TLSUnknownAuthority
	case errors.As(err, &inv):
		if inv.Reason == x509.Expired {
			return TLSExpired
		}
		return TLSInvalidCertificate
	case errors.As(err, &ver):
		return TLSInvalidCertificate
	case errors.As(err, &rec), errors.Is(err, http.ErrSchemeMismatch), isTLSRecordAsHTTP(err):
		return TLSSchemeMismatch
	}
	asked := hs != nil && hs.asked.Load()
	// The server refused the answer to its request for a certificate:
	// none where the client has none, else the one it sent or the want
	// of one of an authority the server accepts.
	refused := TLSClientCertificateRequired
	if clientCert || asked && hs.sent.Load() {
		refused = TLSClientCertificateRejected
	}
	switch remoteAlert(err) {
	case "tls: certificate required":
		return TLSClientCertificateRequired
	case "tls: bad certificate", "tls: unsupported certificate", "tls: revoked certificate", "tls: expired certificate",
		"tls: unknown certificate", "tls: unknown certificate authority", "tls: access denied":
		return refused
	case "tls: handshake failure":
		// A TLS 1.2 server sends it for a missing client certificate as
		// well as for no cipher suite in common.
		if asked {
			return refused
		}
		return TLSHandshakeRefused
	case "tls: protocol version not supported", "tls: insufficient security level":
		return TLSHandshakeRefused
	}
	if m := err.Error(); strings.Contains(m, "tls: server selected unsupported protocol version") ||
		strings.Contains(m, "tls: server chose an unconfigured cipher suite") || strings.Contains(m, "tls: no supported versions") {
		return TLSHandshakeRefused
	}
	return ""
}

// handshakeNote is what the TLS handshake of a request's connection
// noted: whether the server asked for a client certificate and whether
// the client sent one. The request's context carries it to the client's
// GetClientCertificate (through CertificateRequestInfo.Context).
type handshakeNote struct{ asked, sent atomic.Bool }

// handshakeKey is the context key of a request's *handshakeNote.
type handshakeKey struct{}

// noteClientCertificate wraps get, the client's choice of a certificate,
// to note the server's request and the answer in the handshakeNote of the
// request that dials.
func noteClientCertificate(get func(*tls.CertificateRequestInfo) (*tls.Certificate, error)) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		cert, err := get(cri)
		if hs, ok := cri.Context().Value(handshakeKey{}).(*handshakeNote); ok {
			hs.asked.Store(true)
			hs.sent.Store(err == nil && cert != nil && len(cert.Certificate) > 0)
		}
		return cert, err
	}
}

// firstSupported is crypto/tls's own choice of a client certificate from
// tls.Config.Certificates: the first the server's request accepts, or none.
func firstSupported(certs []tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				return &certs[i], nil
			}
		}
		return new(tls.Certificate), nil
	}
}

// remoteAlert returns the text of the TLS alert the server sent, if err is
// one (crypto/tls reports a received alert as a *net.OpError with Op
// "remote error" around an unexported alert type), and "" otherwise.
func remoteAlert(err error) string {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" || oe.Err == nil {
		return ""
	}
	return oe.Err.Error()
}

// isTLSRecordAsHTTP recognises a TLS record (handshake or alert, version
// 3.x) where an HTTP answer was expected: an http:// base URL for a TLS
// server that answers a plain request with a TLS alert.
func isTLSRecordAsHTTP(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, `malformed HTTP response "\x15\x03`) || strings.Contains(msg, `malformed HTTP response "\x16\x03`)
}

// WithCAFile trusts the PEM certificates in path, and only them, as the
// authorities that sign the JobManager's certificate (Flink's CA: the
// certificate in the cluster's rest.ssl.truststore). NewClient reads the
// file and fails if it holds no certificate; the client reads it again at
// each new connection, so that a CA replaced on disk is trusted from the
// next connection on, without a new client (see WithClientCertificateFiles
// for when connections are renewed). The host name is verified as always:
// against tls.Config.ServerName if WithTLSConfig gives one, else the base
// URL's host. It replaces RootCAs of a tls.Config given with
// WithTLSConfig, and cannot be combined with its InsecureSkipVerify.
func WithCAFile(path string) Option {
	return func(s *settings) error {
		if path == "" {
			return errors.New("WithCAFile: path is empty")
		}
		s.caFile = path
		return nil
	}
}

// WithClientCertificateFiles presents the PEM certificate (chain) in
// certFile with the PEM private key in keyFile when the JobManager asks
// for a client certificate (Flink's
// security.ssl.rest.authentication-enabled). NewClient reads both and
// fails if they are no key pair; the client reads them again at each new
// connection, so that a certificate rotated on disk is presented from then
// on without a new client.
//
// Before each request the client looks at the files of WithCAFile and
// WithClientCertificateFiles (their size, modification time and identity,
// which a Kubernetes Secret volume's update changes too); when one
// changed, it closes its idle connections, so that the request connects
// anew with the new files. Requests in flight keep their connections. It
// cannot be combined with Certificates or GetClientCertificate of a
// tls.Config given with WithTLSConfig.
func WithClientCertificateFiles(certFile, keyFile string) Option {
	return func(s *settings) error {
		if certFile == "" || keyFile == "" {
			return errors.New("WithClientCertificateFiles: both a certificate file and a key file are needed")
		}
		s.certFile, s.keyFile = certFile, keyFile
		return nil
	}
}

// maxTLSFileSize bounds each file WithCAFile and WithClientCertificateFiles
// name: a CA bundle or a key pair is a few KiB.
const maxTLSFileSize = 1 << 20

// tlsFileError is the failure to use a file of WithCAFile or
// WithClientCertificateFiles. Its message names the file and what is
// wrong, never the file's content.
type tlsFileError struct {
	path string
	what string // "CA file", "client certificate", "client key"
	err  error
}

func (e *tlsFileError) Error() string { return fmt.Sprintf("%s %s: %v", e.what, e.path, e.err) }
func (e *tlsFileError) Unwrap() error { return e.err }

// tlsFiles reads the CA file and the client key pair files at each new
// connection, and tells the client when they changed.
type tlsFiles struct {
	ca, cert, key string // paths; "" when not given
	serverName    string // the name the server's certificate must hold
	now           func() time.Time

	mu     sync.Mutex
	stamps [3]fileStamp // of ca, cert, key when last looked at
}

// fileStamp is what tells a file's versions apart without reading it.
type fileStamp struct {
	ok      bool
	size    int64
	modTime time.Time
	sys     string // device and inode, where the system has them
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{ok: true, size: fi.Size(), modTime: fi.ModTime(), sys: fileIdentity(fi)}
}

// changed reports whether a file differs from when it was last looked at,
// and remembers how it is now.
func (f *tlsFiles) changed() bool {
	now := [3]fileStamp{stampOf(f.ca), stampOf(f.cert), stampOf(f.key)}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now == f.stamps {
		return false
	}
	f.stamps = now
	return true
}

// readTLSFile reads a file of at most maxTLSFileSize bytes; what names it
// in errors.
func readTLSFile(path, what string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &tlsFileError{path: path, what: what, err: unwrapPathError(err)}
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, &tlsFileError{path: path, what: what, err: unwrapPathError(err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, &tlsFileError{path: path, what: what, err: errors.New("not a regular file")}
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxTLSFileSize+1))
	if err != nil {
		return nil, &tlsFileError{path: path, what: what, err: unwrapPathError(err)}
	}
	if len(b) > maxTLSFileSize {
		return nil, &tlsFileError{path: path, what: what, err: fmt.Errorf("larger than %d bytes", maxTLSFileSize)}
	}
	return b, nil
}

// unwrapPathError drops the path an *os.PathError repeats.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// roots reads the CA file.
func (f *tlsFiles) roots() (*x509.CertPool, error) {
	b, err := readTLSFile(f.ca, "CA file")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, &tlsFileError{path: f.ca, what: "CA file", err: errors.New("holds no PEM certificate")}
	}
	return pool, nil
}

// keyPair reads the client's certificate and key.
func (f *tlsFiles) keyPair() (*tls.Certificate, error) {
	cert, err := readTLSFile(f.cert, "client certificate")
	if err != nil {
		return nil, err
	}
	key, err := readTLSFile(f.key, "client key")
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		// crypto/tls's messages say what is wrong ("failed to find any
		// PEM data in key input", "private key does not match public
		// key") without quoting the input.
		return nil, &tlsFileError{path: f.cert + " and " + f.key, what: "client key pair", err: err}
	}
	return &pair, nil
}

// verify verifies the server's certificate against the CA file, as
// crypto/tls would against RootCAs, with the same errors.
func (f *tlsFiles) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	pool, err := f.roots()
	if err != nil {
		return err
	}
	opts := x509.VerifyOptions{Roots: pool, DNSName: f.serverName, Intermediates: x509.NewCertPool(), CurrentTime: f.now()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
	}
	return nil
}

// tlsClientConfig returns the TLS configuration of the client's transport
// from WithTLSConfig, WithCAFile and WithClientCertificateFiles, with the
// choice of a client certificate noted for the error of a refused
// handshake, and the files to watch (nil without files). host is the base
// URL's host name.
func tlsClientConfig(s settings, host string) (*tls.Config, *tlsFiles, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.tlsConfig != nil {
		cfg = s.tlsConfig.Clone()
	}
	var f *tlsFiles
	if s.caFile != "" || s.certFile != "" {
		f = &tlsFiles{ca: s.caFile, cert: s.certFile, key: s.keyFile, serverName: cfg.ServerName, now: time.Now}
		if f.serverName == "" {
			f.serverName = host
		}
		if cfg.Time != nil {
			f.now = cfg.Time
		}
	}
	if s.caFile != "" {
		if cfg.InsecureSkipVerify {
			return nil, nil, errors.New("WithCAFile: the tls.Config given with WithTLSConfig skips verification (InsecureSkipVerify)")
		}
		if _, err := f.roots(); err != nil {
			return nil, nil, fmt.Errorf("WithCAFile: %w", err)
		}
		// crypto/tls verifies against a fixed RootCAs; the file's
		// current CA is verified here instead, with the same checks
		// (chain, validity, usage, host name) and errors.
		next := cfg.VerifyConnection
		cfg.RootCAs = nil
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if err := f.verify(cs); err != nil {
				return err
			}
			if next != nil {
				return next(cs)
			}
			return nil
		}
	}
	get := cfg.GetClientCertificate
	switch {
	case s.certFile != "":
		if len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil {
			return nil, nil, errors.New("WithClientCertificateFiles: the tls.Config given with WithTLSConfig has its own client certificates")
		}
		if _, err := f.keyPair(); err != nil {
			return nil, nil, fmt.Errorf("WithClientCertificateFiles: %w", err)
		}
		// Always the files' pair, whatever authorities the server names:
		// the server says whether it accepts it.
		get = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return f.keyPair() }
	case get == nil:
		get = firstSupported(cfg.Certificates)
	}
	cfg.GetClientCertificate = noteClientCertificate(get)
	if f != nil {
		f.changed() // the files as NewClient read them
	}
	return cfg, f, nil
}

// hasClientCertificate reports whether the client has a certificate to
// present to a server that asks for one.
func hasClientCertificate(s settings) bool {
	return s.certFile != "" || s.tlsConfig != nil && (len(s.tlsConfig.Certificates) > 0 || s.tlsConfig.GetClientCertificate != nil)
}
