package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/examples/operator/internal/appcluster"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// Finalizer keeps a deleted FlinkJob until its job is torn down with a final
// savepoint.
const Finalizer = "flinkkit.dev/teardown"

// ConditionReady is the condition type that says whether the job runs the
// spec's job.
const ConditionReady = "Ready"

// maxMessage bounds the Ready condition's message, as the API server does.
const maxMessage = 32768

// FlinkJobReconciler keeps each FlinkJob's Flink job as its spec says. It
// is Kubernetes plumbing around lifecycle.Controller, which holds every
// rule of the job's lifecycle: each reconcile calls the controller's
// Reconcile (or Delete, once the FlinkJob is being deleted) once, stores
// the status it wrote before anything else, and requeues after its
// RequeueAfter.
type FlinkJobReconciler struct {
	// Client reads and writes FlinkJobs.
	Client client.Client
	// Flink is the REST client of the session cluster, typically a
	// *flinkapi.Client with flinkapi.NoRetry: the controller retries with
	// backoff through RequeueAfter, so nothing sleeps in a reconcile.
	Flink lifecycle.API
	// Shared, if set, is the session cluster's shared overview: the
	// FlinkJobs at rest on it are checked with one GET /jobs/overview per
	// poll in all, not a request each (lifecycle.SharedObservation).
	Shared *lifecycle.SharedObservation
	// Sessions, if set, gives the client and shared overview of the
	// FlinkSessionCluster a FlinkJob names (spec.sessionCluster); Flink
	// and Shared are then the default, for the FlinkJobs that name none,
	// and may be nil when every FlinkJob names one.
	Sessions *SessionClusters
	// ClusterURL, if set, is the address of an application cluster's REST
	// API in the Application mode (a port-forward, a test's fake); nil:
	// the cluster's Service (appcluster.Deployer.URL).
	ClusterURL func(lifecycle.Cluster) (string, error)
	// Recorder, if set, receives an event for every phase change of the
	// controller's operations, and a warning when a FlinkJob goes without
	// its job's state.
	Recorder events.EventRecorder
	// Store, if set, keeps each job's final savepoint under
	// "<namespace>/<name>" when the FlinkJob is deleted; a FlinkJob created
	// again with that name starts from it.
	Store lifecycle.RestorePointStore
	// Clock tells the time; nil: the wall clock. Tests pass flinktest's.
	Clock lifecycle.Clock
	// Timing sets the operations' deadlines and poll interval; zero fields
	// take lifecycle's defaults.
	Timing lifecycle.Timing
	// PollInterval is how often a job at rest is observed, and
	// RetryInterval how long after an action that did not succeed it may
	// be tried again (lifecycle.Controller's; zero: its defaults).
	PollInterval  time.Duration
	RetryInterval time.Duration
	// Resync, if set, turns on the watch of the session clusters'
	// overviews: every half PollInterval one GET /jobs/overview per
	// cluster (Shared, and each FlinkSessionCluster in use), and the
	// FlinkJobs whose job it shows changed (another state, tasks not all
	// running, gone) are reconciled at once. A FlinkJob at rest whose
	// health is not judged is then reconciled every Resync rather than
	// every PollInterval, at times of its own (lifecycle.Controller.Resync),
	// one whose health is judged at its next health check (every other
	// PollInterval); its schedules (savepoints) requeue it when due. 0:
	// no watch.
	Resync time.Duration
	// Jars is where the session FlinkJobs' jarFile is read from
	// (lifecycle.JarDir of the operator's --jar-root): a jarFile outside
	// it, anything but a regular file or a jar too large is refused
	// (Ready: InvalidSpec, a Warning event JarRefused) before anything is
	// read or uploaded; nil: none is read. The Application mode's jarFile
	// names a file of the cluster's image, never read here.
	Jars *lifecycle.Jars
	// Storage, if set, reads and removes what lies on the file system of
	// the jobs' checkpoints and savepoints (lifecycle.Controller.Storage):
	// each FlinkJob's directories are audited after each action and on
	// an interval, what the ledger lacks recorded and leaks disposed of
	// (status.audit), and an application cluster's savepoints are
	// disposed of without a JobManager. nil: none.
	Storage lifecycle.Storage
	// Options configure the controller SetupWithManager registers, such
	// as MaxConcurrentReconciles (default 1: one FlinkJob at a time).
	Options controller.Options
}

// SetupWithManager registers the reconciler with mgr. A FlinkJob is
// reconciled when its generation changes (a new spec, or the deletion
// that sets its deletionTimestamp) and after each RequeueAfter; not when
// only its status or other metadata changed, which the reconciler itself
// wrote. It is also reconciled at once when an object of its application
// cluster goes (ownedWatches).
func (r *FlinkJobReconciler) SetupWithManager(mgr ctrl.Manager) error { return r.setup(mgr, r) }

// setup registers rec, r or a wrapper of it, as SetupWithManager says.
func (r *FlinkJobReconciler) setup(mgr ctrl.Manager, rec reconcile.Reconciler) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.FlinkJob{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	b, err := r.watchOverviews(mgr, b)
	if err != nil {
		return err
	}
	return ownedWatches(r.watchSessions(b)).Named("flinkjob").WithOptions(r.Options).Complete(rec)
}

// Reconcile moves one FlinkJob one step towards its spec, or, once it is
// being deleted, towards its teardown.
func (r *FlinkJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job v1alpha1.FlinkJob
	if err := r.Client.Get(ctx, req.NamespacedName, &job); err != nil {
		if apierrors.IsNotFound(err) {
			jobStates.set(req.NamespacedName, "", r.now())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := job.Status.DeepCopy()
	deleting := !job.DeletionTimestamp.IsZero()
	switch {
	case deleting && !controllerutil.ContainsFinalizer(&job, Finalizer):
		return ctrl.Result{}, nil
	case !deleting && controllerutil.AddFinalizer(&job, Finalizer):
		if err := r.Client.Update(ctx, &job); err != nil {
			return ctrl.Result{}, err
		}
	}
	flink, shared, err := r.sessionFor(ctx, &job)
	if err != nil {
		return r.withoutSession(ctx, &job, before, err)
	}
	c := r.controller(ctx, &job, flink, shared)
	// The call's transitions are counted and become events once the
	// status that records them is stored: a reconcile whose write fails
	// (a conflict) is done again from the stored status, and its
	// transitions with it, which would otherwise count twice.
	var pending []lifecycle.Transition
	c.OnTransition = func(t lifecycle.Transition) { pending = append(pending, t) }
	call := c.Reconcile
	if deleting {
		call = c.Delete
	}
	res, err := call(ctx, job.Spec.JobSpec, &job.Status.JobStatus)
	if errors.Is(err, lifecycle.ErrUnknownFormat) || errors.Is(err, lifecycle.ErrForeignStatus) {
		return ctrl.Result{}, err // never written back: it is not this operator's to rewrite
	}
	// The status is what the next call resumes from: stored whatever
	// happened, before anything else; not written when nothing in it
	// changed, so that a job at rest costs the API server no writes.
	now := r.now()
	job.Status.ObservedGeneration = job.Generation
	setConditions(&job, now)
	if !sameJSON(before, &job.Status) {
		if uerr := r.Client.Status().Update(ctx, &job); uerr != nil {
			return ctrl.Result{}, errors.Join(err, uerr)
		}
		observeSavepoint(&before.Progress, &job.Status.Progress, now)
		r.reportFailure(&job, &before.JobStatus)
		r.reportInvalid(&job, &before.JobStatus, err)
	}
	report := r.onTransition(&job)
	for _, t := range pending {
		report(t)
	}
	jobStates.set(req.NamespacedName, job.Status.State, now)
	if errors.Is(err, lifecycle.ErrInvalidSpec) {
		// Recorded in the status (Ready: InvalidSpec); nothing changes
		// until the spec does, which the watch of the generation brings.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if deleting && res.Done {
		if res.Outcome != lifecycle.OutcomeSucceeded && res.Outcome != lifecycle.OutcomeNotNeeded {
			r.event(&job, corev1.EventTypeWarning, "Deleted"+string(res.Outcome), "Delete",
				"the FlinkJob goes, its job no longer runs: %s", job.Status.Message)
		}
		controllerutil.RemoveFinalizer(&job, Finalizer)
		if err := r.Client.Update(ctx, &job); err != nil {
			return ctrl.Result{}, err
		}
		jobStates.set(req.NamespacedName, "", now)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// controller is the lifecycle.Controller of job: the Flink client and
// shared overview of its session cluster (sessionFor), the reconciler's
// timing, clock and store, the FlinkJob's name, its events, the
// reconcile's logger, and the labelled Secrets of its namespace for the
// secrets its arguments name (jobSecrets); in the Application mode, the
// Deployer of its application clusters, through whose clients it reads
// the job.
func (r *FlinkJobReconciler) controller(ctx context.Context, job *v1alpha1.FlinkJob, flink lifecycle.API, shared *lifecycle.SharedObservation) *lifecycle.Controller {
	c := &lifecycle.Controller{
		Env: lifecycle.Env{Client: flink, Timing: r.Timing, Clock: r.Clock, OnTransition: r.onTransition(job), Jars: r.Jars,
			Logger:  slog.New(logr.ToSlogHandler(log.FromContext(ctx))),
			Secrets: jobSecrets{reader: r.Client, namespace: job.Namespace}},
		Store: r.Store, Name: job.Namespace + "/" + job.Name, PollInterval: r.PollInterval, RetryInterval: r.RetryInterval,
		Resync: r.Resync, Storage: r.Storage,
	}
	if job.Spec.Mode == v1alpha1.ModeApplication {
		c.Deployer = &appcluster.Deployer{Kube: r.Client, Job: job, URL: r.ClusterURL}
	} else {
		c.Shared = shared
	}
	return c
}

// ready is the Ready condition of job's status: True while the job runs
// the spec's job (the verdict Done, State Running), Unknown while the
// JobManager cannot be read, and otherwise False, with the status's
// reason and message.
func ready(job *v1alpha1.FlinkJob, now time.Time) metav1.Condition {
	st := &job.Status
	c := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: st.Reason, Message: st.Message,
		ObservedGeneration: job.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case verdict(job) == lifecycle.VerdictDone && st.State == policy.Running:
		c.Status = metav1.ConditionTrue
	case st.State == policy.Unknown:
		c.Status = metav1.ConditionUnknown
	}
	if c.Reason == "" {
		c.Reason = string(policy.Unknown)
	}
	if len(c.Message) > maxMessage {
		c.Message = c.Message[:maxMessage]
	}
	return c
}

// onTransition turns the phase changes of the controller's operations
// into events: Normal ones, and a Warning for an outcome other than
// Succeeded or NotNeeded.
func (r *FlinkJobReconciler) onTransition(job *v1alpha1.FlinkJob) func(lifecycle.Transition) {
	return func(t lifecycle.Transition) {
		countTransition(t)
		if t.To != lifecycle.PhaseDone {
			r.event(job, corev1.EventTypeNormal, t.Operation+string(t.To), t.Operation, "%s: %s -> %s (job %s)", t.Operation, phaseName(t.From), t.To, t.JobID)
			return
		}
		kind := corev1.EventTypeNormal
		if t.Outcome != lifecycle.OutcomeSucceeded && t.Outcome != lifecycle.OutcomeNotNeeded {
			kind = corev1.EventTypeWarning
		}
		r.event(job, kind, t.Operation+string(t.Outcome), t.Operation, "%s %s: %s", t.Operation, t.Outcome, t.Reason)
	}
}

func (r *FlinkJobReconciler) event(job *v1alpha1.FlinkJob, kind, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(job, nil, kind, reason, action, note, args...)
	}
}

func (r *FlinkJobReconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// sameJSON reports whether a and b are stored as the same JSON: what the
// API server would keep of them is the same.
func sameJSON(a, b *v1alpha1.FlinkJobStatus) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
}

func phaseName(p lifecycle.Phase) string {
	if p == "" {
		return "Start"
	}
	return string(p)
}
