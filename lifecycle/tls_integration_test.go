//go:build integration

package lifecycle_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// tlsRetry would retry a failed GET three times within a second, were it
// retryable: the TLS tests count the connections to see that it is not.
var tlsRetry = flinkapi.WithRetryPolicy(flinkapi.RetryPolicy{MaxAttempts: 4, InitialInterval: 50 * time.Millisecond, MaxInterval: 100 * time.Millisecond, MaxElapsed: 20 * time.Second})

// dialCounter counts the connections of the clients it makes.
type dialCounter struct{ n atomic.Int32 }

// httpClient is an HTTP client whose transport counts its connections.
func (d *dialCounter) httpClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.n.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: t}
}

// tlsPKI makes the certificates of a TLS test and writes them to dir.
type tlsPKI struct {
	t   *testing.T
	dir string
	ca  *flinkfixture.CA
}

func newTLSPKI(t *testing.T, name string) *tlsPKI {
	t.Helper()
	ca, err := flinkfixture.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsPKI{t: t, dir: t.TempDir(), ca: ca}
	if err := os.WriteFile(p.caFile(), ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *tlsPKI) caFile() string { return filepath.Join(p.dir, "ca.crt") }

func (p *tlsPKI) issue(cn string, hosts []string, notBefore, notAfter time.Time) flinkfixture.KeyPair {
	p.t.Helper()
	k, err := p.ca.Issue(cn, hosts, notBefore, notAfter)
	if err != nil {
		p.t.Fatal(err)
	}
	return k
}

// wantTLSError checks that err is a TLSError of cause want, not retried
// (one connection), with a message that holds no key material.
func wantTLSError(t *testing.T, what string, err error, dials int32, want flinkapi.TLSCause, keys ...flinkfixture.KeyPair) {
	t.Helper()
	var te *flinkapi.TLSError
	switch {
	case !errors.As(err, &te) || te.Cause != want:
		t.Errorf("%s: err = %v; want a TLSError of cause %s", what, err, want)
	case !errors.Is(err, flinkapi.ErrMisconfigured) || !errors.Is(err, flinkapi.ErrTLS) || flinkapi.IsRetryable(err):
		t.Errorf("%s: %v is not a permanent misconfiguration", what, err)
	case dials != 1:
		t.Errorf("%s: %d connections, want 1 (no retry): %v", what, dials, err)
	default:
		t.Logf("%s (%d connection): %v", what, dials, err)
	}
	if err != nil {
		for _, k := range keys {
			if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), string(k.KeyPEM[40:80])) {
				t.Errorf("%s: the message holds key material: %v", what, err)
			}
		}
	}
}

// startTLSCluster starts a cluster of FLINK_VERSION of the test's own
// that serves server's certificate on its REST API, signed by pki's CA,
// and with clientAuth requires client certificates of the authorities of
// trustStore (the fixture presents client). The fixture's clock for the
// JobManager's certificate is the test's, or at, when not zero.
func startTLSCluster(t *testing.T, ctx context.Context, pki *tlsPKI, server flinkfixture.KeyPair, trustStore string, clientAuth bool,
	client *flinkfixture.KeyPair, at time.Time, cfg flinkfixture.Config) *flinkfixture.Cluster {
	t.Helper()
	rt, err := flinkfixture.NewRESTTLS(ctx, t.TempDir(), pki.ca, server, trustStore, clientAuth, client)
	if err != nil {
		t.Fatal(err)
	}
	if !at.IsZero() {
		rt.Client.Time = func() time.Time { return at }
	}
	cfg.RESTTLS = rt
	return flinkfixture.StartForTest(t, ctx, cfg)
}

// TestRealTLS runs flinkapi and the job controller against JobManagers of
// FLINK_VERSION whose REST API speaks TLS (security.ssl.rest.enabled),
// from a CA and keys the test makes:
//
//   - ServerOnly, on a JobManager alone without client authentication:
//     the CA given as a file and in a tls.Config reaches it; a CA that did
//     not sign its certificate, the system's roots, a host name its
//     certificate does not hold and no cipher suite in common each end in
//     a TLSError of its cause after one connection, never retried, and
//     http:// to its port is redirected to https://, which matches ErrTLS;
//
//   - ExpiredCertificate, on a JobManager alone that serves an expired
//     certificate: TLSExpired, after one connection;
//
//   - ClientAuth, on a session cluster with client authentication
//     (security.ssl.rest.authentication-enabled): a client without a
//     certificate and one with a certificate of another CA are refused
//     (TLSClientCertificateRequired, TLSClientCertificateRejected); with
//     its certificate files the job controller creates, upgrades (the
//     counts continue) and deletes a job, and the files rotated on disk in
//     between are used at the next request of the same client.
//
// The subtests start their clusters one after the other:
//
//	FLINK_VERSION=1.20.5 go test -tags integration -count=1 -run '^TestRealTLS$' -v ./lifecycle/
func TestRealTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	begin := time.Now()
	pki, other := newTLSPKI(t, "flinkkit test CA"), newTLSPKI(t, "another CA")
	now := time.Now()
	server := pki.issue("jobmanager", []string{"127.0.0.1"}, now.Add(-time.Hour), now.Add(24*time.Hour))
	trustStore := filepath.Join(pki.dir, "truststore.p12")
	if err := flinkfixture.WriteTrustStore(ctx, trustStore, pki.ca); err != nil {
		t.Fatal(err)
	}
	t.Logf("truststore written in %v", time.Since(begin).Round(time.Millisecond))

	client := func(t *testing.T, url string, opts ...flinkapi.Option) (*flinkapi.Client, *dialCounter) {
		t.Helper()
		d := &dialCounter{}
		c, err := flinkapi.NewClient(url, append([]flinkapi.Option{flinkapi.WithHTTPClient(d.httpClient()), tlsRetry}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c, d
	}

	t.Run("ServerOnly", func(t *testing.T) {
		begin := time.Now()
		cluster := startTLSCluster(t, ctx, pki, server, trustStore, false, nil, time.Time{}, flinkfixture.Config{NoTaskManager: true})
		port := cluster.URL[strings.LastIndexByte(cluster.URL, ':')+1:]

		// The CA as a file, and in a tls.Config: both reach the
		// JobManager, on one connection.
		for name, opt := range map[string]flinkapi.Option{
			"CA file":    flinkapi.WithCAFile(pki.caFile()),
			"tls.Config": flinkapi.WithTLSConfig(&tls.Config{RootCAs: pki.ca.Pool(), MinVersion: tls.VersionTLS12}),
		} {
			c, d := client(t, cluster.URL, opt)
			v, err := c.Version(ctx)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if _, err := c.Overview(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d.n.Load() != 1 {
				t.Errorf("%s: %d connections for two requests", name, d.n.Load())
			}
			t.Logf("%s: Flink %s over TLS", name, v)
		}

		// Another CA: its file, or the system's roots.
		c, d := client(t, cluster.URL, flinkapi.WithCAFile(other.caFile()))
		_, err := c.Overview(ctx)
		wantTLSError(t, "another CA", err, d.n.Load(), flinkapi.TLSUnknownAuthority, server)
		c, d = client(t, cluster.URL)
		_, err = c.Overview(ctx)
		wantTLSError(t, "the system's roots", err, d.n.Load(), flinkapi.TLSUnknownAuthority, server)

		// A host name the certificate does not hold (it holds 127.0.0.1).
		c, d = client(t, "https://localhost:"+port, flinkapi.WithCAFile(pki.caFile()))
		_, err = c.Overview(ctx)
		wantTLSError(t, "host name localhost", err, d.n.Load(), flinkapi.TLSHostnameMismatch, server)

		// No cipher suite in common: the client offers one the cluster's
		// security.ssl.algorithms lacks.
		c, d = client(t, cluster.URL, flinkapi.WithCAFile(pki.caFile()), flinkapi.WithTLSConfig(&tls.Config{
			MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}))
		_, err = c.Overview(ctx)
		wantTLSError(t, "no cipher suite in common", err, d.n.Load(), flinkapi.TLSHandshakeRefused, server)

		// Plain HTTP to the TLS port: Flink redirects to https://.
		c, d = client(t, "http://127.0.0.1:"+port)
		_, err = c.Overview(ctx)
		if !errors.Is(err, flinkapi.ErrTLS) || flinkapi.IsRetryable(err) || d.n.Load() != 1 || !strings.Contains(err.Error(), "use https://") {
			t.Errorf("http:// to the TLS port: %v after %d connections", err, d.n.Load())
		} else {
			t.Logf("http:// to the TLS port (1 connection): %v", err)
		}
		t.Logf("ServerOnly: %v", time.Since(begin).Round(time.Millisecond))
	})

	t.Run("ExpiredCertificate", func(t *testing.T) {
		// The fixture sees whether the JobManager is ready with a clock
		// of the certificate's time.
		begin := time.Now()
		expired := pki.issue("jobmanager", []string{"127.0.0.1"}, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
		cluster := startTLSCluster(t, ctx, pki, expired, trustStore, false, nil, now.Add(-36*time.Hour), flinkfixture.Config{NoTaskManager: true})
		c, d := client(t, cluster.URL, flinkapi.WithCAFile(pki.caFile()))
		_, err := c.Overview(ctx)
		wantTLSError(t, "expired certificate", err, d.n.Load(), flinkapi.TLSExpired, expired)
		t.Logf("ExpiredCertificate: %v", time.Since(begin).Round(time.Millisecond))
	})

	t.Run("ClientAuth", func(t *testing.T) {
		begin := time.Now()
		fixture := pki.issue("fixture", nil, now.Add(-time.Hour), now.Add(24*time.Hour))
		cluster := startTLSCluster(t, ctx, pki, server, trustStore, true, &fixture, time.Time{}, flinkfixture.Config{Slots: 2})

		// Without a certificate, and with one of another CA.
		c, d := client(t, cluster.URL, flinkapi.WithCAFile(pki.caFile()))
		_, err := c.Overview(ctx)
		wantTLSError(t, "no client certificate", err, d.n.Load(), flinkapi.TLSClientCertificateRequired)
		strange := other.issue("operator", nil, now.Add(-time.Hour), now.Add(24*time.Hour))
		strangeCert, strangeKey := filepath.Join(other.dir, "tls.crt"), filepath.Join(other.dir, "tls.key")
		if err := strange.WriteFiles(strangeCert, strangeKey); err != nil {
			t.Fatal(err)
		}
		c, d = client(t, cluster.URL, flinkapi.WithCAFile(pki.caFile()), flinkapi.WithClientCertificateFiles(strangeCert, strangeKey))
		_, err = c.Overview(ctx)
		wantTLSError(t, "a client certificate of another CA", err, d.n.Load(), flinkapi.TLSClientCertificateRejected, strange)

		// The job controller with the client certificate's files.
		first, second := pki.issue("operator", nil, now.Add(-time.Hour), now.Add(24*time.Hour)), pki.issue("operator", nil, now.Add(-time.Hour), now.Add(24*time.Hour))
		certFile, keyFile := filepath.Join(pki.dir, "tls.crt"), filepath.Join(pki.dir, "tls.key")
		if err := first.WriteFiles(certFile, keyFile); err != nil {
			t.Fatal(err)
		}
		// Everything the client and the Controller log, report and
		// store is searched for the keys' material at the end.
		w := &outputWatch{}
		fc, dials := client(t, cluster.URL, flinkapi.WithCAFile(pki.caFile()), flinkapi.WithClientCertificateFiles(certFile, keyFile), flinkapi.WithRetryPolicy(flinkapi.NoRetry),
			flinkapi.WithLogger(w.logger()))
		store := &lifecycle.MemoryStore{}
		env := realEnv(fc)
		env.Logger = w.logger()
		env.OnTransition = func(tr lifecycle.Transition) { w.add("transition", tr) }
		ctrl := &lifecycle.Controller{Env: env, Store: store, Name: "tls/counter", PollInterval: time.Second, RetryInterval: 5 * time.Second}
		const keys = 2
		args := func(out string) []string {
			return []string{"--out", out, "--keys", fmt.Sprint(keys), "--rate", "40", "--checkpoint-interval", "300", "--name", "tls"}
		}
		out1, out2 := cluster.OutDir("tls-1"), cluster.OutDir("tls-2")
		spec := lifecycle.JobSpec{Job: lifecycle.JobTemplate{JarFile: cluster.TestJobJar, EntryClass: cluster.TestJobClass, Args: args(out1)}}
		var st lifecycle.JobStatus
		settled := func() bool {
			return !st.InFlight() && st.State == policy.Running && st.Reason == string(policy.Running)
		}
		realUntil(t, ctx, "create", ctrl, &spec, &st, 3*time.Minute, settled)
		flinkfixture.WaitCounts(t, ctx, out1, keys, countsTimeout, func(_ string, n int64) bool { return n >= 20 })

		// Rotations on disk, seen at the next request of the same
		// client: another CA's pair is refused (the controller returns
		// the error after that one request); a new pair of the cluster's
		// CA is accepted.
		before := dials.n.Load()
		if err := strange.WriteFiles(certFile, keyFile); err != nil {
			t.Fatal(err)
		}
		_, err = ctrl.Reconcile(ctx, spec, &st)
		wantTLSError(t, "the controller, its client's pair rotated to another CA's", err, dials.n.Load()-before, flinkapi.TLSClientCertificateRejected, strange, first)
		w.add("error", err.Error())
		w.add("status", st)
		if err := second.WriteFiles(certFile, keyFile); err != nil {
			t.Fatal(err)
		}
		before = dials.n.Load()
		if _, err := fc.Overview(ctx); err != nil || dials.n.Load() != before+1 {
			t.Fatalf("rotated to a new pair of the cluster's CA: %v after %d connections", err, dials.n.Load()-before)
		}

		// Upgrade and delete with the rotated pair.
		countsBefore, err := flinkfixture.ReadCounts(out1)
		if err != nil {
			t.Fatal(err)
		}
		old := st.JobID
		spec.Job.Args = args(out2)
		realUntil(t, ctx, "upgrade", ctrl, &spec, &st, 3*time.Minute, func() bool { return settled() && st.Action == lifecycle.ActionUpgrade && st.JobID != old })
		countsContinue(t, ctx, out2, keys, countsBefore, 5)
		deleted := time.Now()
		for !realCall(t, ctx, ctrl, spec, &st, true).Done {
			if ctx.Err() != nil {
				t.Fatalf("delete: %s %s", st.Progress.Outcome, st.Progress.Reason)
			}
		}
		rec, ok, _ := store.Get(ctx, "tls/counter")
		jobs, err := fc.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if !j.Status.IsGloballyTerminal() {
				t.Errorf("job %s still %s after the delete", j.ID, j.Status)
			}
		}
		if !ok || !flinkfixture.LocationExists(rec.Location) {
			t.Fatalf("delete: stored %+v (%v)", rec, ok)
		}
		t.Logf("delete: %s after %v, final savepoint %s; %d connections in all", st.Progress.Outcome, time.Since(deleted).Round(time.Millisecond), rec.Location, dials.n.Load())
		w.add("status", st)
		var material []string
		for _, k := range []flinkfixture.KeyPair{first, second, strange} {
			material = append(material, keyMaterial(k)...)
		}
		w.check(t, material...)
		t.Logf("ClientAuth: %v", time.Since(begin).Round(time.Millisecond))
	})
	t.Logf("total %v", time.Since(begin).Round(time.Millisecond))
}

// keyMaterial is what of a key pair's private key must never be shown:
// each line of its PEM body.
func keyMaterial(k flinkfixture.KeyPair) []string {
	var out []string
	for _, line := range strings.Split(string(k.KeyPEM), "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}
