package controller

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// logBuffer collects every line a logr.Logger writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// credentialProxy is a TLS proxy in front of a JobManager that wants the
// bearer token token, or the basic credentials user and password.
func credentialProxy(t *testing.T, jobManager, token, user, password string) (*httptest.Server, []byte) {
	t.Helper()
	target, err := url.Parse(jobManager)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, basic := r.BasicAuth()
		if r.Header.Get("Authorization") != "Bearer "+token && !(basic && u == user && p == password) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})
}

// clientKeyPair is a self-signed client certificate and its private key,
// PEM-encoded.
func clientKeyPair(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flinkkit-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestAPIServerSecretsStaySecret: FlinkSessionClusters whose Secrets hold
// a bearer token (a wrong one first, then the right one), a basic-auth
// password the JobManager refuses, and a client certificate's private
// key; FlinkJobs on them, one running, one that cannot reach its
// cluster; FlinkJobs whose arguments name a key of a Secret
// (secretArguments): one whose job fails with a cause that echoes the
// value, one naming a Secret without the label, one naming a missing
// key. Nothing the operator wrote — its logs (at every verbosity), the
// events, the FlinkJobs' and FlinkSessionClusters' statuses — holds any
// of those secrets, raw or base64-encoded, although they report the
// refusals and the failure.
func TestAPIServerSecretsStaySecret(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	_, c := kube(t)
	srv1, flink1 := realTimeFlink(t)
	srv2, _ := realTimeFlink(t, flinktest.WithSeed(2))
	const (
		token      = "tok-9f3a7c-do-not-leak"
		wrongToken = "wrong-tok-51b2e8-do-not-leak"
		user       = "flink-user"
		password   = "pw-77c1d0-do-not-leak"
	)
	front, ca := credentialProxy(t, srv2.URL, token, user, "another-password")
	certPEM, keyPEM := clientKeyPair(t)
	keyBody := strings.Join(strings.Split(strings.TrimSpace(string(keyPEM)), "\n")[1:2], "")
	secrets := map[string]string{"token": token, "wrong token": wrongToken, "password": password, "private key": keyBody}

	labelled := map[string]string{LabelSecret: "true"}
	for name, s := range map[string]*corev1.Secret{
		"flink-ca":     {Data: map[string][]byte{"ca.crt": ca}},
		"flink-token":  {Data: map[string][]byte{"token": []byte(wrongToken)}},
		"flink-basic":  {Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte(user), "password": []byte(password)}},
		"flink-client": {Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}},
	} {
		s.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labelled}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	logs := &logBuffer{}
	logger := logs.logger()
	startManager(t, managerConfig{ns: ns, flink: flink1, retry: 500 * time.Millisecond, recorder: true, logger: &logger,
		setup: func(mgr ctrl.Manager, r *FlinkJobReconciler) error {
			sr := &SessionClusterReconciler{Client: mgr.GetClient(), Sessions: r.Sessions, Recorder: mgr.GetEventRecorder("flinksessioncluster-controller"),
				Options: controller.Options{SkipNameValidation: ptr.To(true)}}
			return sr.SetupWithManager(mgr)
		}, wrap: func(rec reconcile.Reconciler) reconcile.Reconciler {
			rec.(*FlinkJobReconciler).Sessions = &SessionClusters{Client: c, Options: []flinkapi.Option{flinkapi.WithRetryPolicy(flinkapi.NoRetry)}}
			return rec
		}})
	tlsSpec := &v1alpha1.SessionTLS{CASecret: "flink-ca", ClientCertSecret: "flink-client"}
	for name, auth := range map[string]*v1alpha1.SessionAuth{"bearer": {BearerTokenSecret: "flink-token"}, "basic": {BasicAuthSecret: "flink-basic"}} {
		sc := &v1alpha1.FlinkSessionCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.FlinkSessionClusterSpec{URL: front.URL, TLS: tlsSpec, Auth: auth}}
		if err := c.Create(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	reachable := func(name string) *metav1.Condition {
		var got v1alpha1.FlinkSessionCluster
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		return reachableCondition(&got)
	}
	for _, name := range []string{"bearer", "basic"} {
		eventually(t, name+" unreachable with its wrong credentials", waitTimeout, func() bool {
			r := reachable(name)
			return r != nil && r.Status == metav1.ConditionFalse && r.Reason == ReasonUnreachable
		})
	}
	basicJob := counterSpec(counterJar(t))
	basicJob.SessionCluster = "basic"
	refused := createJob(t, ns, "refused", basicJob)
	refused.wait("waiting for its cluster", func(j *v1alpha1.FlinkJob) bool { return j.Status.Message != "" })

	var tok corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "flink-token"}, &tok); err != nil {
		t.Fatal(err)
	}
	tok.Data["token"] = []byte(token)
	if err := c.Update(ctx, &tok); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bearer reachable with the right token", waitTimeout, func() bool {
		r := reachable("bearer")
		return r != nil && r.Status == metav1.ConditionTrue
	})
	spec := counterSpec(counterJar(t))
	spec.SessionCluster = "bearer"
	createJob(t, ns, "counter", spec).wait("running behind the proxy", runs)

	// Program arguments naming Secrets, on the default cluster.
	for what, v := range secretArguments(t, ns, srv1) {
		secrets[what] = v
	}

	// Everything the operator wrote.
	var out strings.Builder
	out.WriteString(logs.String())
	for _, list := range []client.ObjectList{&eventsv1.EventList{}, &corev1.EventList{}, &v1alpha1.FlinkJobList{}, &v1alpha1.FlinkSessionClusterList{}} {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	all := out.String()
	if !strings.Contains(all, "401") && !strings.Contains(strings.ToLower(all), "unauthorized") {
		t.Fatalf("the outputs do not report the refused credentials: the test would show nothing")
	}
	if !strings.Contains(all, secretFailure("xxxxx")) {
		t.Fatalf("the outputs do not report the failure that echoed the secret argument: the test would show nothing")
	}
	for what, s := range secrets {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			if i := strings.Index(all, form); i >= 0 {
				t.Errorf("the %s is in the operator's outputs: ...%s...", what, all[max(0, i-200):min(len(all), i+len(form)+50)])
			}
		}
	}
	t.Logf("%d bytes of logs, events and statuses searched", len(all))
}

// secretFailure is the cause of the failure of the job whose arguments
// name a secret: it echoes the value.
func secretFailure(value string) string {
	return "cannot log in to the database with the password " + value + " (rejected)"
}

// secretArguments runs, in ns on the default cluster srv, three FlinkJobs
// whose arguments name a key of a Secret (--name ${secret:SECRET/KEY}):
//
//   - job-secrets/password, a Secret labelled flinkkit.dev/secret: "true":
//     the job gets the value, the status keeps the placeholder; the job
//     fails with a cause that echoes the value, which the status shows
//     with "xxxxx" in its place;
//   - unlabelled/password, a Secret without the label, and
//     job-secrets/missing, a key the Secret does not have: no job is
//     started, Ready is False naming the Secret, and a Warning event says
//     so, while the first one runs; once the Secret is labelled, its
//     FlinkJob's job starts at the next retry.
//
// It returns the values of the Secrets, by what they are, for the
// caller's search of the operator's outputs.
func secretArguments(t *testing.T, ns string, srv *flinktest.Server) map[string]string {
	t.Helper()
	ctx := context.Background()
	_, c := kube(t)
	const (
		jobPassword        = "job-pw-3e81aa-do-not-leak"
		unlabelledPassword = "unlabelled-pw-c05d19-do-not-leak"
	)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job-secrets", Labels: map[string]string{LabelSecret: "true"}},
			Data: map[string][]byte{"password": []byte(jobPassword)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"}, Data: map[string][]byte{"password": []byte(unlabelledPassword)}},
	} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// eventAbout waits for a Warning event of the FlinkJob name with
	// reason whose note holds note.
	eventAbout := func(name, reason, note string) {
		t.Helper()
		eventually(t, name+": a Warning event "+reason+" with "+note, waitTimeout, func() bool {
			var list eventsv1.EventList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, e := range list.Items {
				if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Note, note) {
					return true
				}
			}
			return false
		})
	}
	specNaming := func(ref string) v1alpha1.FlinkJobSpec {
		spec := counterSpec(counterJar(t))
		spec.Job.Args = append(spec.Job.Args, "--name", ref)
		spec.Restart.Backoff = policy.Duration(time.Second)
		return spec
	}
	// The two that cannot start first: they hold nothing up.
	blocked := map[string]string{ // FlinkJob: what its Ready condition and event name
		"unlabelled": "no Secret " + ns + "/unlabelled labelled flinkkit.dev/secret=true",
		"no-key":     "the Secret " + ns + `/job-secrets has no key "missing"`,
	}
	unlabelled := createJob(t, ns, "unlabelled", specNaming("${secret:unlabelled/password}"))
	createJob(t, ns, "no-key", specNaming("${secret:job-secrets/missing}"))
	const ref = "${secret:job-secrets/password}"
	withSecret := createJob(t, ns, "with-secret", specNaming(ref))
	job := withSecret.wait("running with its secret argument", runs)

	info, ok := srv.Job(job.Status.JobID)
	if !ok || !slices.Contains(info.ProgramArgs, jobPassword) {
		t.Fatalf("Flink's job %s got the arguments %q, want the Secret's value in them", job.Status.JobID, info.ProgramArgs)
	}
	if !slices.Contains(job.Status.Deployed.Args, ref) || slices.Contains(job.Status.Deployed.Args, jobPassword) {
		t.Fatalf("status.deployed.args = %q, want the placeholder %s", job.Status.Deployed.Args, ref)
	}

	// Failed with a cause that echoes the value: the status says so,
	// without it.
	if err := srv.FailJob(job.Status.JobID, "java.lang.IllegalStateException: "+secretFailure(jobPassword)); err != nil {
		t.Fatal(err)
	}
	job = withSecret.wait("showing the failure", func(j *v1alpha1.FlinkJob) bool {
		return strings.Contains(j.Status.Failure, secretFailure("xxxxx"))
	})
	if b, err := json.Marshal(job.Status); err != nil || bytes.Contains(b, []byte(jobPassword)) {
		t.Fatalf("the status shows the Secret's value (%v): %s", err, b)
	}
	failed := job.Status.JobID
	eventAbout("with-secret", ReasonJobException, secretFailure("xxxxx"))
	job = withSecret.wait("restarted with its secret argument", func(j *v1alpha1.FlinkJob) bool {
		return runs(j) && j.Status.JobID != failed
	})
	if info, _ := srv.Job(job.Status.JobID); !slices.Contains(info.ProgramArgs, jobPassword) {
		t.Fatalf("the restarted job %s got the arguments %q, want the Secret's value in them", job.Status.JobID, info.ProgramArgs)
	}

	// Meanwhile the other two started nothing, and say why.
	for name, want := range blocked {
		j := (&kubeJob{t: t, c: c, key: types.NamespacedName{Namespace: ns, Name: name}}).wait("blocked by its Secret", func(j *v1alpha1.FlinkJob) bool {
			r := findReady(j)
			return r != nil && r.Status == metav1.ConditionFalse && strings.Contains(r.Message, want)
		})
		if j.Status.JobID != "" {
			t.Errorf("%s: status.jobID %s, want no job", name, j.Status.JobID)
		}
		eventAbout(name, "DeployBlocked", want)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Body, unlabelledPassword) || strings.Contains(r.Body, "${secret:") {
			t.Errorf("a request to Flink carries the unlabelled Secret's value or a placeholder: %s %s", r.Route, r.Body)
		}
		if r.Route == "POST /jars/:jarid/run" && !strings.Contains(r.Body, jobPassword) {
			t.Errorf("a jar run of another FlinkJob than with-secret's: %s", r.Body)
		}
	}
	// (A jar run whose answer was not seen is sent again, with its job id.)
	if ids, want := jarRunJobIDs(t, srv), []string{string(failed), string(job.Status.JobID)}; !slices.Equal(ids, want) {
		t.Errorf("jar runs of the jobs %q on the default cluster, want with-secret's %q only", ids, want)
	}

	// Labelled, the Secret is read: the job starts at the next retry.
	var sec corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "unlabelled"}, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Labels = map[string]string{LabelSecret: "true"}
	if err := c.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	job = unlabelled.wait("running once its Secret is labelled", runs)
	if info, _ := srv.Job(job.Status.JobID); !slices.Contains(info.ProgramArgs, unlabelledPassword) {
		t.Fatalf("the job %s got the arguments %q, want the Secret's value in them", job.Status.JobID, info.ProgramArgs)
	}
	return map[string]string{"job argument's password": jobPassword, "unlabelled Secret's password": unlabelledPassword}
}
