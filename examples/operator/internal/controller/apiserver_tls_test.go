package controller

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

// TestAPIServerSessionClientCertificate: a FlinkSessionCluster's client
// presents the client certificate of the kubernetes.io/tls Secret it
// names to a JobManager (here a TLS proxy in front of one) that asks for
// client certificates of its CA: a pair of another CA is refused, and the
// condition names the cause without key material; the Secret rotated to a
// pair of the JobManager's CA makes the cluster Reachable, and rotated
// again, the new pair is the one presented next.
func TestAPIServerSessionClientCertificate(t *testing.T) {
	ctx := context.Background()
	h := newKubeHarness(t)
	srv2 := withSessions(t, h)
	ca, err := flinkfixture.NewCA("flink-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := flinkfixture.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	issue := func(ca *flinkfixture.CA, cn string, hosts ...string) flinkfixture.KeyPair {
		t.Helper()
		k, err := ca.Issue(cn, hosts, now.Add(-time.Hour), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	server, strange, first, second := issue(ca, "jobmanager", "127.0.0.1"), issue(other, "operator"), issue(ca, "operator"), issue(ca, "operator")
	serverCert, err := server.TLS()
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv2.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var presented string // the serial of the last client certificate the proxy saw
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		presented = r.TLS.PeerCertificates[0].SerialNumber.String()
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	front.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool(),
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	front.StartTLS()
	t.Cleanup(front.Close)

	for name, data := range map[string]map[string][]byte{
		"flink-ca":     {"ca.crt": ca.PEM},
		"flink-client": {corev1.TLSCertKey: strange.CertPEM, corev1.TLSPrivateKeyKey: strange.KeyPEM},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: name}, Type: corev1.SecretTypeOpaque, Data: data}
		if name == "flink-client" {
			s.Type = corev1.SecretTypeTLS
		}
		if err := h.k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	sc := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: "mutual-tls"},
		Spec: v1alpha1.FlinkSessionClusterSpec{URL: front.URL, TLS: &v1alpha1.SessionTLS{CASecret: "flink-ca", ClientCertSecret: "flink-client"}}}
	if err := h.k8s.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	sr := &SessionClusterReconciler{Client: h.k8s, Sessions: h.r.Sessions, Recorder: h.events, Clock: h.srv.Clock()}
	look := func() *metav1.Condition {
		t.Helper()
		if _, err := sr.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sc)}); err != nil {
			t.Fatal(err)
		}
		if err := h.k8s.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
			t.Fatal(err)
		}
		return reachableCondition(sc)
	}
	rotate := func(k flinkfixture.KeyPair) {
		t.Helper()
		var s corev1.Secret
		if err := h.k8s.Get(ctx, client.ObjectKey{Namespace: h.key.Namespace, Name: "flink-client"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = k.CertPEM, k.KeyPEM
		if err := h.k8s.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}

	c := look()
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonUnreachable || !strings.Contains(c.Message, "(ClientCertificateRejected)") {
		t.Errorf("with another CA's pair: Reachable %+v, want False, %s, naming ClientCertificateRejected", c, ReasonUnreachable)
	}
	if c != nil && (strings.Contains(c.Message, "PRIVATE KEY") || strings.Contains(c.Message, string(strange.KeyPEM[40:80]))) {
		t.Errorf("the condition holds key material: %s", c.Message)
	}
	t.Logf("with another CA's pair: %s", c.Message)
	for _, k := range []flinkfixture.KeyPair{first, second} {
		rotate(k)
		if c := look(); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("with a pair of the CA: Reachable %+v, want True", c)
		}
		mu.Lock()
		got := presented
		mu.Unlock()
		if got != k.Cert.SerialNumber.String() {
			t.Errorf("presented certificate %s, want the Secret's %s", got, k.Cert.SerialNumber)
		}
	}
}
