package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// +kubebuilder:rbac:groups=flinkkit.dev,resources=flinksessionclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=flinkkit.dev,resources=flinksessionclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// ConditionReachable is the condition type of a FlinkSessionCluster that
// says whether its JobManager answers.
const ConditionReachable = "Reachable"

// Reasons of a FlinkJob's Ready condition when it has no session cluster
// to run on, and of a FlinkSessionCluster's Reachable condition.
const (
	// ReasonSessionClusterNotFound: the FlinkSessionCluster the FlinkJob
	// names does not exist (in its namespace).
	ReasonSessionClusterNotFound = "SessionClusterNotFound"
	// ReasonNoSessionCluster: the FlinkJob names no FlinkSessionCluster
	// and the operator has no default (--flink-url).
	ReasonNoSessionCluster = "NoSessionCluster"
	// ReasonSessionClusterInvalid: the FlinkSessionCluster gives no client:
	// a Secret it names is missing or holds no valid certificate or
	// credentials.
	ReasonSessionClusterInvalid = "SessionClusterInvalid"
	// ReasonReachable and ReasonUnreachable: the JobManager answered its
	// GET /config, or did not.
	ReasonReachable   = "Reachable"
	ReasonUnreachable = "Unreachable"
)

// Session is the client of one session cluster and the overview its
// FlinkJobs at rest share.
type Session struct {
	// URL is the JobManager's REST URL.
	URL string
	// Client sends the requests, within the cluster's request budget.
	Client *flinkapi.Client
	// Shared is the cluster's shared overview (lifecycle.SharedObservation).
	Shared *lifecycle.SharedObservation
}

// SessionClusters builds the Session of each FlinkSessionCluster and
// keeps it while the cluster's spec and the Secrets it names do not
// change (their generation and resource versions): every FlinkJob on a
// cluster shares one client, one request budget and one overview. It is
// safe for concurrent use.
type SessionClusters struct {
	// Client reads FlinkSessionClusters and Secrets.
	Client client.Reader
	// Options are the options of every client, before the cluster's own
	// (TLS, credentials, request budget), such as
	// flinkapi.WithRetryPolicy(flinkapi.NoRetry) and a timeout.
	Options []flinkapi.Option
	// Clock and SharedMaxAge are those of each cluster's
	// SharedObservation (nil, 0: the wall clock, its default).
	Clock        lifecycle.Clock
	SharedMaxAge time.Duration

	mu       sync.Mutex
	sessions map[types.NamespacedName]*cachedSession
}

type cachedSession struct {
	version string // the cluster's uid and generation and its Secrets' resource versions
	session *Session
}

// sessionError is why a FlinkJob or a FlinkSessionCluster has no Session:
// the reason of its condition, and a message.
type sessionError struct {
	reason, message string
}

func (e *sessionError) Error() string { return e.message }

// Get returns the Session of the FlinkSessionCluster name in namespace,
// building it when the cluster or its Secrets changed since the last
// call. The error is a *sessionError naming what is missing or wrong.
func (s *SessionClusters) Get(ctx context.Context, namespace, name string) (*Session, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var sc v1alpha1.FlinkSessionCluster
	if err := s.Client.Get(ctx, key, &sc); err != nil {
		if apierrors.IsNotFound(err) {
			s.Forget(key)
			return nil, &sessionError{ReasonSessionClusterNotFound, fmt.Sprintf("FlinkSessionCluster %q not found in namespace %s", name, namespace)}
		}
		return nil, err
	}
	return s.session(ctx, &sc)
}

// session returns sc's Session, cached or built.
func (s *SessionClusters) session(ctx context.Context, sc *v1alpha1.FlinkSessionCluster) (*Session, error) {
	key := client.ObjectKeyFromObject(sc)
	opts, version, err := s.clientOptions(ctx, sc)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.sessions[key]; c != nil && c.version == version {
		return c.session, nil
	}
	fc, err := flinkapi.NewClient(sc.Spec.URL, append(slices.Clone(s.Options), opts...)...)
	if err != nil {
		return nil, &sessionError{ReasonSessionClusterInvalid, fmt.Sprintf("FlinkSessionCluster %s: %v", sc.Name, err)}
	}
	sess := &Session{URL: sc.Spec.URL, Client: fc, Shared: &lifecycle.SharedObservation{Client: fc, Clock: s.Clock, MaxAge: s.SharedMaxAge}}
	if s.sessions == nil {
		s.sessions = map[types.NamespacedName]*cachedSession{}
	}
	s.sessions[key] = &cachedSession{version: version, session: sess}
	return sess, nil
}

// observations are the shared overviews of the Sessions built so far.
func (s *SessionClusters) observations() []*lifecycle.SharedObservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]*lifecycle.SharedObservation, 0, len(s.sessions))
	for _, c := range s.sessions {
		all = append(all, c.session.Shared)
	}
	return all
}

// Forget drops the Session of a FlinkSessionCluster that is gone.
func (s *SessionClusters) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, key)
}

// clientOptions are the options of sc's client, from its spec and
// Secrets, and the version they were built from.
func (s *SessionClusters) clientOptions(ctx context.Context, sc *v1alpha1.FlinkSessionCluster) ([]flinkapi.Option, string, error) {
	version := []string{string(sc.UID), fmt.Sprint(sc.Generation)}
	secret := func(name string, keys ...string) (map[string][]byte, error) {
		var sec corev1.Secret
		if err := s.Client.Get(ctx, types.NamespacedName{Namespace: sc.Namespace, Name: name}, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &sessionError{ReasonSessionClusterInvalid, fmt.Sprintf("FlinkSessionCluster %s: Secret %q not found (the operator reads only Secrets labelled %s: \"true\")", sc.Name, name, LabelSecret)}
			}
			return nil, err
		}
		for _, k := range keys {
			if len(sec.Data[k]) == 0 {
				return nil, &sessionError{ReasonSessionClusterInvalid, fmt.Sprintf("FlinkSessionCluster %s: Secret %q has no %s", sc.Name, name, k)}
			}
		}
		version = append(version, name+"@"+sec.ResourceVersion)
		return sec.Data, nil
	}
	invalid := func(format string, args ...any) error {
		return &sessionError{ReasonSessionClusterInvalid, fmt.Sprintf("FlinkSessionCluster %s: ", sc.Name) + fmt.Sprintf(format, args...)}
	}
	var opts []flinkapi.Option
	if t := sc.Spec.TLS; t != nil {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
		if t.CASecret != "" {
			data, err := secret(t.CASecret, "ca.crt")
			if err != nil {
				return nil, "", err
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(data["ca.crt"]) {
				return nil, "", invalid("Secret %q: ca.crt holds no PEM certificate", t.CASecret)
			}
		}
		if t.ClientCertSecret != "" {
			data, err := secret(t.ClientCertSecret, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
			if err != nil {
				return nil, "", err
			}
			cert, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
			if err != nil {
				return nil, "", invalid("Secret %q: %v", t.ClientCertSecret, err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, flinkapi.WithTLSConfig(cfg))
	}
	if a := sc.Spec.Auth; a != nil {
		switch {
		case a.BasicAuthSecret != "" && a.BearerTokenSecret != "":
			return nil, "", invalid("auth: set basicAuthSecret or bearerTokenSecret, not both")
		case a.BasicAuthSecret != "":
			data, err := secret(a.BasicAuthSecret, corev1.BasicAuthUsernameKey)
			if err != nil {
				return nil, "", err
			}
			opts = append(opts, flinkapi.WithBasicAuth(string(data[corev1.BasicAuthUsernameKey]), string(data[corev1.BasicAuthPasswordKey])))
		case a.BearerTokenSecret != "":
			data, err := secret(a.BearerTokenSecret, "token")
			if err != nil {
				return nil, "", err
			}
			opts = append(opts, flinkapi.WithBearerToken(strings.TrimSpace(string(data["token"]))))
		}
	}
	qps, burst, inFlight := v1alpha1.DefaultSessionQPS, v1alpha1.DefaultSessionBurst, v1alpha1.DefaultSessionConcurrency
	if b := sc.Spec.RequestBudget; b != nil {
		qps, burst = int(b.QPS), int(b.QPS)
		if b.Burst > 0 {
			burst = int(b.Burst)
		}
		if b.Concurrency > 0 {
			inFlight = int(b.Concurrency)
		}
	}
	budget, err := flinkapi.NewRequestBudget(float64(qps), burst, inFlight)
	if err != nil {
		return nil, "", invalid("requestBudget: %v", err)
	}
	opts = append(opts, flinkapi.WithRequestBudget(budget))
	return opts, strings.Join(version, "/"), nil
}

// sessionFor returns the client and shared overview of the cluster job
// runs on: in the Session mode, the FlinkSessionCluster it names, or the
// operator's default (Flink and Shared) when it names none; in the
// Application mode, the default (the Deployer gives the job's clients).
// The error is a *sessionError when there is no such cluster.
func (r *FlinkJobReconciler) sessionFor(ctx context.Context, job *v1alpha1.FlinkJob) (lifecycle.API, *lifecycle.SharedObservation, error) {
	name := job.Spec.SessionCluster
	switch {
	case job.Spec.Mode == v1alpha1.ModeApplication:
		return r.Flink, r.Shared, nil
	case name == "" && r.Flink == nil:
		return nil, nil, &sessionError{ReasonNoSessionCluster, "spec.sessionCluster names no FlinkSessionCluster and the operator has no default session cluster (--flink-url)"}
	case name == "":
		return r.Flink, r.Shared, nil
	case r.Sessions == nil:
		return nil, nil, &sessionError{ReasonSessionClusterNotFound, fmt.Sprintf("FlinkSessionCluster %q: this operator runs no FlinkSessionClusters", name)}
	}
	s, err := r.Sessions.Get(ctx, job.Namespace, name)
	if err != nil {
		return nil, nil, err
	}
	return s.Client, s.Shared, nil
}

// withoutSession stores, when job's session cluster cannot be had (err),
// a Ready condition saying why, leaves the rest of its status as it was,
// and looks again after the retry interval (or when the
// FlinkSessionCluster changes).
func (r *FlinkJobReconciler) withoutSession(ctx context.Context, job *v1alpha1.FlinkJob, before *v1alpha1.FlinkJobStatus, err error) (ctrl.Result, error) {
	var se *sessionError
	if !errors.As(err, &se) {
		return ctrl.Result{}, err
	}
	job.Status.ObservedGeneration = job.Generation
	changed := meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse,
		Reason: se.reason, Message: se.message, ObservedGeneration: job.Generation, LastTransitionTime: metav1.NewTime(r.now())})
	if changed {
		r.event(job, corev1.EventTypeWarning, se.reason, "Reconcile", "%s", se.message)
	}
	if !sameJSON(before, &job.Status) {
		if uerr := r.Client.Status().Update(ctx, job); uerr != nil {
			return ctrl.Result{}, uerr
		}
	}
	retry := r.RetryInterval
	if retry <= 0 {
		retry = lifecycle.DefaultRetryInterval
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// watchSessions makes a change of a FlinkSessionCluster's spec, or of a
// Secret it names, reconcile the FlinkJobs that name it: one waiting for
// it runs at once, with the new client.
func (r *FlinkJobReconciler) watchSessions(b *builder.Builder) *builder.Builder {
	if r.Sessions == nil {
		return b
	}
	return b.Watches(&v1alpha1.FlinkSessionCluster{}, handler.EnqueueRequestsFromMapFunc(r.jobsNaming),
		builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, secret client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, sc := range clustersNaming(ctx, r.Client, secret) {
				out = append(out, r.jobsNaming(ctx, &sc)...)
			}
			return out
		}))
}

// clustersNaming are the FlinkSessionClusters that name secret (for their
// CA, client certificate or credentials).
func clustersNaming(ctx context.Context, c client.Reader, secret client.Object) []v1alpha1.FlinkSessionCluster {
	var list v1alpha1.FlinkSessionClusterList
	if err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace())); err != nil {
		return nil
	}
	name := secret.GetName()
	var out []v1alpha1.FlinkSessionCluster
	for _, sc := range list.Items {
		var names []string
		if t := sc.Spec.TLS; t != nil {
			names = append(names, t.CASecret, t.ClientCertSecret)
		}
		if a := sc.Spec.Auth; a != nil {
			names = append(names, a.BasicAuthSecret, a.BearerTokenSecret)
		}
		if slices.Contains(names, name) {
			out = append(out, sc)
		}
	}
	return out
}

// jobsNaming are the FlinkJobs that name the FlinkSessionCluster obj.
func (r *FlinkJobReconciler) jobsNaming(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.FlinkJobList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, j := range list.Items {
		if j.Spec.SessionCluster == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&j)})
		}
	}
	return out
}

// maxUnclaimed bounds FlinkSessionClusterStatus.UnclaimedJobs.
const maxUnclaimed = 50

// SessionClusterReconciler looks after each FlinkSessionCluster: it
// builds its client (SessionClusters), reports whether its JobManager
// answers and its Flink version, and runs the housekeeping of its jars
// and jobs (lifecycle.CleanSession) every Housekeeping.Interval. The
// claims are every FlinkJob in the Session mode whose cluster has the
// same URL, in any namespace, also those that name no cluster when the
// URL is the operator's default: the jars one of them uses or may use
// again are kept, the others deleted once older than the jar grace; the
// jobs none of them runs are reported (status, a Warning event), never
// stopped.
type SessionClusterReconciler struct {
	// Client reads FlinkSessionClusters and FlinkJobs, writes the
	// clusters' status.
	Client client.Client
	// Sessions builds and keeps the clusters' clients; the
	// FlinkJobReconciler's, so that both share them.
	Sessions *SessionClusters
	// DefaultURL is the operator's --flink-url: the cluster of the
	// FlinkJobs that name none.
	DefaultURL string
	// Recorder, if set, receives the housekeeping's events.
	Recorder events.EventRecorder
	// Clock tells the time; nil: the wall clock.
	Clock lifecycle.Clock
	// Options configure the controller SetupWithManager registers.
	Options controller.Options
}

// SetupWithManager registers the reconciler with mgr: a
// FlinkSessionCluster is looked at when its spec or a Secret it names
// changes, and every housekeeping interval.
func (r *SessionClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.FlinkSessionCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, secret client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, sc := range clustersNaming(ctx, r.Client, secret) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sc)})
			}
			return out
		})).
		Named("flinksessioncluster").WithOptions(r.Options).Complete(r)
}

// Reconcile looks at one FlinkSessionCluster: its client, its JobManager,
// and, unless turned off, its housekeeping.
func (r *SessionClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var sc v1alpha1.FlinkSessionCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &sc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Sessions.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !sc.DeletionTimestamp.IsZero() {
		r.Sessions.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	before := sc.Status.DeepCopy()
	hk := sc.Spec.Housekeeping
	interval := hk.Interval.Std()
	if interval <= 0 {
		interval = v1alpha1.DefaultHousekeepingInterval
	}
	retry := min(interval, time.Minute)
	sc.Status.ObservedGeneration = sc.Generation
	reachable := func(status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{Type: ConditionReachable, Status: status, Reason: reason,
			Message: truncate(message, maxMessage), ObservedGeneration: sc.Generation, LastTransitionTime: metav1.NewTime(r.now())})
	}
	res := ctrl.Result{RequeueAfter: interval}
	var herr error
	sess, err := r.Sessions.session(ctx, &sc)
	var se *sessionError
	switch {
	case errors.As(err, &se):
		reachable(metav1.ConditionFalse, se.reason, se.message)
		res.RequeueAfter = retry
	case err != nil:
		return ctrl.Result{}, err
	default:
		v, verr := sess.Client.RefreshVersion(ctx)
		if verr != nil {
			reachable(metav1.ConditionFalse, ReasonUnreachable, verr.Error())
			res.RequeueAfter = retry
			break
		}
		reachable(metav1.ConditionTrue, ReasonReachable, "the JobManager answers, Flink "+v.String())
		sc.Status.FlinkVersion = v.String()
		if !hk.Disabled {
			herr = r.housekeeping(ctx, &sc, sess)
		}
	}
	if !sameClusterStatus(before, &sc.Status) {
		if err := r.Client.Status().Update(ctx, &sc); err != nil {
			return ctrl.Result{}, errors.Join(herr, err)
		}
	}
	if herr != nil {
		r.event(&sc, corev1.EventTypeWarning, "HousekeepingFailed", "%v", herr)
		res.RequeueAfter = retry
	}
	return res, nil
}

// housekeeping runs lifecycle.CleanSession on sc with the claims of the
// FlinkJobs on its URL, and records what it found and did in sc's status
// and events.
func (r *SessionClusterReconciler) housekeeping(ctx context.Context, sc *v1alpha1.FlinkSessionCluster, sess *Session) error {
	claims, err := r.claims(ctx, sess.URL)
	if err != nil {
		return err
	}
	hk := sc.Spec.Housekeeping
	now := r.now()
	report, err := lifecycle.CleanSession(ctx, sess.Client, claims,
		lifecycle.SessionOptions{JarGrace: hk.JarGrace.Std(), JobGrace: hk.JobGrace.Std()}, now)
	st := &sc.Status
	st.DeletedJars += int64(len(report.Deleted))
	if len(report.Deleted) > 0 {
		r.event(sc, corev1.EventTypeNormal, "JarsDeleted", "deleted %d jar(s) no FlinkJob uses: %v", len(report.Deleted), report.Deleted)
	}
	if err != nil {
		return err
	}
	var unclaimed []string
	for _, j := range report.Unclaimed {
		unclaimed = append(unclaimed, string(j.ID))
	}
	if len(unclaimed) > 0 && !slices.Equal(unclaimed, st.UnclaimedJobs) {
		r.event(sc, corev1.EventTypeWarning, "UnclaimedJobs", "%d job(s) run on the cluster that no FlinkJob runs (not stopped): %v", len(unclaimed), unclaimed)
	}
	if len(unclaimed) > maxUnclaimed {
		unclaimed = unclaimed[:maxUnclaimed]
	}
	st.UnclaimedJobs = unclaimed
	st.LastHousekeeping = &metav1.Time{Time: now}
	return nil
}

// claims are the claims of every FlinkJob in the Session mode whose
// cluster's URL is clusterURL: naming a FlinkSessionCluster with that
// URL, in any namespace, or naming none when it is the default URL.
func (r *SessionClusterReconciler) claims(ctx context.Context, clusterURL string) ([]lifecycle.Claim, error) {
	var jobs v1alpha1.FlinkJobList
	if err := r.Client.List(ctx, &jobs); err != nil {
		return nil, fmt.Errorf("listing the FlinkJobs: %w", err)
	}
	want := sameCluster(clusterURL)
	urls := map[types.NamespacedName]string{}
	var claims []lifecycle.Claim
	for _, j := range jobs.Items {
		if j.Spec.Mode == v1alpha1.ModeApplication {
			continue
		}
		u := r.DefaultURL
		if name := j.Spec.SessionCluster; name != "" {
			key := types.NamespacedName{Namespace: j.Namespace, Name: name}
			var ok bool
			if u, ok = urls[key]; !ok {
				var sc v1alpha1.FlinkSessionCluster
				if err := r.Client.Get(ctx, key, &sc); client.IgnoreNotFound(err) != nil {
					return nil, err
				}
				u, urls[key] = sc.Spec.URL, sc.Spec.URL
			}
		}
		if u != "" && want(u) {
			claims = append(claims, lifecycle.Claim{Spec: j.Spec.JobSpec, Status: j.Status.JobStatus})
		}
	}
	return claims, nil
}

// sameCluster returns a test of whether a URL names the same JobManager
// as base: the same scheme, host (in any case) and port, and path but
// for a trailing slash.
func sameCluster(base string) func(string) bool {
	norm := func(s string) string {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return s
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		switch {
		case port == "" && u.Scheme == "http":
			port = "80"
		case port == "" && u.Scheme == "https":
			port = "443"
		}
		return strings.ToLower(u.Scheme) + "://" + host + ":" + port + strings.TrimRight(u.Path, "/")
	}
	b := norm(base)
	return func(s string) bool { return norm(s) == b }
}

func (r *SessionClusterReconciler) event(sc *v1alpha1.FlinkSessionCluster, kind, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(sc, nil, kind, reason, "Housekeeping", note, args...)
	}
}

func (r *SessionClusterReconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// sameClusterStatus reports whether a and b are stored as the same JSON.
func sameClusterStatus(a, b *v1alpha1.FlinkSessionClusterStatus) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
}
