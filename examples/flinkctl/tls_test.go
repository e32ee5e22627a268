package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

// TestTLSFiles reaches a JobManager behind TLS that asks for client
// certificates with --ca-file, --client-cert and --client-key; without
// the client certificate, or with a CA that did not sign the server's,
// it ends at once with exit 5 and a line that names the cause and the
// flags; files that cannot be used are bad input naming the flag.
func TestTLSFiles(t *testing.T) {
	f := newFixture(t)
	ca, err := flinkfixture.NewCA("flinkctl test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := flinkfixture.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	server, err := ca.Issue("jobmanager", []string{"127.0.0.1"}, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue("flinkctl", nil, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := server.TLS()
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(f.srv.URL)
	proxy := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	proxy.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(),
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}
	proxy.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	proxy.StartTLS()
	t.Cleanup(proxy.Close)

	dir := t.TempDir()
	caFile, otherCA, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for p, b := range map[string][]byte{caFile: ca.PEM, otherCA: other.PEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.WriteFiles(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		t.Helper()
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, clock: f.srv.Clock()}
		code := a.main(context.Background(), append([]string{"--flink-url", proxy.URL, "--state-dir", filepath.Join(dir, "state")}, args...))
		t.Logf("flinkctl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}

	r := run("--ca-file", caFile, "--client-cert", certFile, "--client-key", keyFile, "jobs")
	wantCode(t, r, exitOK, "")
	if !strings.HasPrefix(r.stdout, "JOB ID") {
		t.Errorf("jobs over TLS: %q", r.stdout)
	}
	wantCode(t, run("--ca-file", caFile, "jobs"), exitUnreachable, "(ClientCertificateRequired)")
	wantCode(t, run("--ca-file", otherCA, "--client-cert", certFile, "--client-key", keyFile, "jobs"), exitUnreachable, "(UnknownAuthority)")
	for _, r := range []result{run("--ca-file", caFile, "jobs"), run("--ca-file", otherCA, "--client-cert", certFile, "--client-key", keyFile, "jobs")} {
		if !strings.Contains(r.stderr, "--ca-file, --client-cert and --client-key") || strings.Contains(r.stderr, "PRIVATE KEY") {
			t.Errorf("stderr %q does not name the flags", r.stderr)
		}
	}
	wantCode(t, run("--ca-file", filepath.Join(dir, "nope"), "jobs"), exitBadInput, "--ca-file: ")
	wantCode(t, run("--ca-file", caFile, "--client-cert", keyFile, "--client-key", certFile, "jobs"), exitBadInput, "--client-cert, --client-key: ")
	wantCode(t, run("--client-cert", certFile, "jobs"), exitBadInput, "give both or neither")
	wantCode(t, run("--flink-url", "ftp://flink:8081", "--ca-file", caFile, "jobs"), exitBadInput, "--flink-url: ")
}
