package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Finalizer keeps a deleted FlinkJob until its job is torn down with a final
// savepoint.
const Finalizer = "flinkkit.dev/teardown"

// ConditionReady is the condition type that says whether the job runs with
// the current spec.
const ConditionReady = "Ready"

// Defaults of the reconciler's intervals.
const (
	DefaultPollInterval  = 30 * time.Second
	DefaultRetryInterval = time.Minute
	// soon is the RequeueAfter for "at once": after an operation's step
	// that asks for no wait, or once an operation ended and the job is to
	// be observed again.
	soon = 10 * time.Millisecond
)

// FlinkJobReconciler keeps each FlinkJob's Flink job running as its spec
// says. Every reconcile either steps the operation in flight once, or
// observes the job, asks package policy what to do, and starts an operation
// of package lifecycle; it stores the status (with the operation's
// Progress) before it returns, and requeues instead of waiting.
type FlinkJobReconciler struct {
	// Client reads and writes FlinkJobs.
	Client client.Client
	// Flink is the REST client of the session cluster, typically a
	// *flinkapi.Client with flinkapi.NoRetry: the operations retry with
	// backoff through RequeueAfter, so nothing sleeps in a reconcile.
	Flink lifecycle.API
	// Recorder, if set, receives an event for every phase change of an
	// operation.
	Recorder events.EventRecorder
	// Store, if set, keeps each job's final savepoint under
	// "<namespace>/<name>" when the FlinkJob is deleted; a FlinkJob created
	// again with that name starts from it.
	Store lifecycle.RestorePointStore
	// Clock tells the time; nil: the wall clock. Tests pass flinktest's.
	Clock lifecycle.Clock
	// Timing sets the operations' deadlines and poll interval; zero fields
	// take lifecycle's defaults. The savepoint deadline is the update
	// policy's SavepointDeadline.
	Timing lifecycle.Timing
	// PollInterval is how often a job at rest is observed
	// (DefaultPollInterval).
	PollInterval time.Duration
	// RetryInterval is how long after an operation that did not succeed
	// it may be tried again (DefaultRetryInterval).
	RetryInterval time.Duration
}

// SetupWithManager registers the reconciler with mgr.
func (r *FlinkJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.FlinkJob{}).Named("flinkjob").Complete(r)
}

// Reconcile moves one FlinkJob one step towards its spec.
func (r *FlinkJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job v1alpha1.FlinkJob
	if err := r.Client.Get(ctx, req.NamespacedName, &job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, &job)
	}
	if controllerutil.AddFinalizer(&job, Finalizer) {
		if err := r.Client.Update(ctx, &job); err != nil {
			return ctrl.Result{}, err
		}
	}
	job.Status.ObservedGeneration = job.Generation
	var (
		wait time.Duration
		err  error
	)
	if job.Status.InFlight() {
		wait, err = r.step(ctx, &job)
	} else {
		wait, err = r.observe(ctx, &job)
	}
	return r.persist(ctx, &job, wait, err)
}

// persist stores the status, whatever happened, before the reconcile
// returns: the Progress in it is what a later reconcile resumes from.
func (r *FlinkJobReconciler) persist(ctx context.Context, job *v1alpha1.FlinkJob, wait time.Duration, err error) (ctrl.Result, error) {
	if uerr := r.Client.Status().Update(ctx, job); uerr != nil {
		return ctrl.Result{}, errors.Join(err, uerr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

// observe looks at the job at rest and starts the operation the spec and
// the policies ask for, if any.
func (r *FlinkJobReconciler) observe(ctx context.Context, job *v1alpha1.FlinkJob) (time.Duration, error) {
	st, now := &job.Status, r.now()
	if st.RetryAt != nil && now.Before(st.RetryAt.Time) && job.Generation == st.OperationGeneration {
		// A new spec is tried at once; the same one after RetryAt.
		return st.RetryAt.Sub(now), nil
	}
	if err := errors.Join(job.Spec.Update.Validate(), job.Spec.Restart.Validate()); err != nil {
		// The CRD does not check flinkkit's enums and limits; the
		// policies do. Nothing is done until the spec is fixed.
		r.setReady(job, metav1.ConditionFalse, "InvalidSpec", err.Error())
		return r.pollInterval(), nil
	}
	if job.Generation != st.DeployedGeneration || st.JobID == "" {
		if st.DeployedGeneration == 0 {
			return r.start(ctx, job, v1alpha1.OperationDeploy)
		}
		return r.start(ctx, job, v1alpha1.OperationUpdate)
	}

	details, err := r.Flink.Job(ctx, st.JobID)
	if err != nil && !flinkapi.IsJobNotFound(err) {
		st.JobState, st.DeploymentState = "", policy.Unknown
		r.setReady(job, metav1.ConditionUnknown, "JobManagerUnreachable", err.Error())
		return r.pollInterval(), nil
	}
	obs := policy.Observations{
		JobManagerReachable: true,
		LastContact:         now,
		LatestSavepoint:     st.LatestSavepoint,
		Restarts:            st.Restarts,
	}
	if st.LastRestart != nil {
		obs.LastRestart = st.LastRestart.Time
	}
	st.JobState = ""
	if details != nil {
		st.JobState = details.State
		obs.Job = &policy.Job{ID: details.ID, State: details.State, StartTime: details.StartTime,
			EndTime: details.EndTime, StateSince: details.Timestamps[details.State]}
	}
	st.DeploymentState = policy.DeploymentStateOf(obs, policy.Recorded{JobID: st.JobID})

	if st.DeploymentState == policy.Running {
		r.setReady(job, metav1.ConditionTrue, string(policy.Running), "job "+string(st.JobID)+" runs the current spec")
		return r.savepointIfDue(ctx, job, details)
	}
	// Not running: the restart policy says whether to start it again
	// (FAILED or lost), wait (Flink's own restart, a backoff), or leave it
	// (FINISHED, CANCELED, restarts disabled or used up).
	if st.DeploymentState == policy.Failed || st.DeploymentState == policy.Lost || st.DeploymentState == policy.Suspended {
		// A retained checkpoint is a restore point too; lifecycle.Restart
		// checks again that Flink keeps it.
		if cps, err := r.Flink.Checkpoints(ctx, st.JobID); err == nil && cps.LatestCompleted != nil {
			obs.LatestCheckpoint = policy.Checkpoint{Path: cps.LatestCompleted.ExternalPath, Time: cps.LatestCompleted.TriggerTime}
		}
	}
	d := policy.EvaluateRestart(job.Spec.Restart, obs, now)
	if d.Action == policy.ActionRestart {
		return r.start(ctx, job, v1alpha1.OperationRestart)
	}
	r.setReady(job, metav1.ConditionFalse, string(d.Reason), fmt.Sprintf("job %s is %s: %s", st.JobID, st.DeploymentState, d.Message()))
	if d.RequeueAfter > 0 {
		return min(d.RequeueAfter, r.pollInterval()), nil
	}
	return r.pollInterval(), nil
}

// savepointIfDue starts a periodic savepoint when the spec's interval
// says one is due, and otherwise returns when to look again.
func (r *FlinkJobReconciler) savepointIfDue(ctx context.Context, job *v1alpha1.FlinkJob, details *flinkapi.JobDetails) (time.Duration, error) {
	st := &job.Status
	in := savepoint.ScheduleInput{
		Interval: job.Spec.SavepointInterval.Std(),
		JobState: details.State,
		JobStart: details.StartTime,
		Last:     st.LatestSavepoint,
	}
	if st.Operation == v1alpha1.OperationSavepoint {
		in.Current = st.Progress.Savepoint
	}
	due, _, next := savepoint.Due(in, r.now())
	if due {
		return r.start(ctx, job, v1alpha1.OperationSavepoint)
	}
	wait := r.pollInterval()
	if !next.IsZero() {
		wait = max(min(wait, next.Sub(r.now())), soon)
	}
	return wait, nil
}

// start records a new operation in the status and takes its first step,
// which sends no request: it records the trigger or job id that later
// requests use, and persist stores it before the next step sends them.
func (r *FlinkJobReconciler) start(ctx context.Context, job *v1alpha1.FlinkJob, op v1alpha1.Operation) (time.Duration, error) {
	st := &job.Status
	st.Operation, st.OperationGeneration = op, job.Generation
	st.Progress = lifecycle.Progress{}
	st.RetryAt = nil
	return r.step(ctx, job)
}

// step advances the operation in flight by one Step, and applies its
// result to the status once it ended.
func (r *FlinkJobReconciler) step(ctx context.Context, job *v1alpha1.FlinkJob) (time.Duration, error) {
	st := &job.Status
	res, err := r.operation(ctx, job).Step(ctx, &st.Progress)
	if err != nil {
		return 0, fmt.Errorf("%s of %s: %w", st.Operation, job.Name, err)
	}
	if !res.Done {
		if state, ok := operationStates[st.Operation]; ok {
			st.DeploymentState = state
			r.setReady(job, metav1.ConditionFalse, string(st.Operation)+"InProgress",
				fmt.Sprintf("%s: phase %s %s", st.Operation, st.Progress.Phase, st.Progress.LastError))
		}
		return max(res.RequeueAfter, soon), nil
	}
	r.finish(job)
	return soon, nil
}

// operationStates are the deployment states while an operation is in
// flight, as policy.DeploymentStateOf names them; a periodic savepoint
// leaves the state as it is.
var operationStates = map[v1alpha1.Operation]policy.DeploymentState{
	v1alpha1.OperationDeploy:   policy.Deploying,
	v1alpha1.OperationUpdate:   policy.Updating,
	v1alpha1.OperationRestart:  policy.Restarting,
	v1alpha1.OperationTeardown: policy.Stopping,
}

// operation builds the lifecycle operation of the status's Operation from
// the spec and the status. It holds no state of its own: everything it
// needs to resume is in the Progress passed to Step.
func (r *FlinkJobReconciler) operation(ctx context.Context, job *v1alpha1.FlinkJob) lifecycle.Stepper {
	st, spec := &job.Status, &job.Spec
	hook, logger := r.onTransition(job), slog.New(logr.ToSlogHandler(log.FromContext(ctx)))
	name := job.Namespace + "/" + job.Name
	switch st.Operation {
	case v1alpha1.OperationDeploy, v1alpha1.OperationUpdate:
		return &lifecycle.Upgrade{
			Env: lifecycle.Env{Client: r.Flink, Timing: r.Timing, Clock: r.Clock, OnTransition: hook, Logger: logger}, Job: st.JobID, Policy: spec.Update, FirstDeploy: st.DeployedGeneration == 0,
			Latest: st.LatestSavepoint, Store: r.Store, Name: name,
			JarID: r.jarID(job), JarFile: spec.JarFile, Run: runRequest(spec),
		}
	case v1alpha1.OperationRestart:
		op := &lifecycle.Restart{
			Env: lifecycle.Env{Client: r.Flink, Timing: r.Timing, Clock: r.Clock, OnTransition: hook, Logger: logger}, Job: st.JobID, Policy: spec.Restart, Restarts: st.Restarts,
			Latest: st.LatestSavepoint, Store: r.Store, Name: name,
			JarID: r.jarID(job), JarFile: spec.JarFile, Run: runRequest(spec),
		}
		if st.LastRestart != nil {
			op.LastRestart = st.LastRestart.Time
		}
		return op
	case v1alpha1.OperationSavepoint:
		timing := r.Timing
		timing.Savepoint = spec.Update.WithDefaults().SavepointDeadline.Std()
		return &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: r.Flink, Timing: timing, Clock: r.Clock}, Job: st.JobID, Reason: savepoint.ReasonScheduled}
	default: // OperationTeardown
		timing := r.Timing
		timing.Savepoint = spec.Update.WithDefaults().SavepointDeadline.Std()
		return &lifecycle.Teardown{
			Env: lifecycle.Env{Client: r.Flink, Timing: timing, Clock: r.Clock, OnTransition: hook, Logger: logger}, Job: st.JobID, Mode: spec.Update.Mode, AllowCancelWithoutState: spec.AllowCancelWithoutState,
			Store: r.Store, Name: name}
	}
}

// finish applies the outcome of the operation that ended to the status:
// the savepoint it took, the job it started, the restart it made.
func (r *FlinkJobReconciler) finish(job *v1alpha1.FlinkJob) {
	st, p, now := &job.Status, &job.Status.Progress, r.now()
	if rec, ok := p.Record(); ok {
		st.Savepoints = st.Savepoints.Add(rec)
		if rec.Time.After(st.LatestSavepoint.Time) {
			st.LatestSavepoint = rec
		}
	}
	replacing := st.Operation == v1alpha1.OperationDeploy || st.Operation == v1alpha1.OperationUpdate || st.Operation == v1alpha1.OperationRestart
	if replacing && p.NewJobID != "" {
		// A new job was (or may have been) submitted, or an earlier
		// one adopted: from now on it is the job to observe, so that a
		// retry never starts a second one.
		st.JobID = p.NewJobID
		if p.JarID != "" {
			st.JarID, st.JarFile = p.JarID, job.Spec.JarFile
		}
	}
	switch p.Outcome {
	case lifecycle.OutcomeSucceeded:
		switch st.Operation {
		case v1alpha1.OperationDeploy, v1alpha1.OperationUpdate:
			st.DeployedGeneration = st.OperationGeneration
		case v1alpha1.OperationRestart:
			st.Restarts = job.Spec.Restart.CountRestart(st.Restarts, timeOf(st.LastRestart), now)
			st.LastRestart = &metav1.Time{Time: now}
		case v1alpha1.OperationSavepoint:
			r.event(job, corev1.EventTypeNormal, "SavepointTaken", "Savepoint", "savepoint at %s", p.Location)
		}
	case lifecycle.OutcomeNotNeeded:
	default:
		if st.Operation == v1alpha1.OperationSavepoint {
			// The job runs on; savepoint.Due tries again one interval
			// after the failed attempt.
			r.event(job, corev1.EventTypeWarning, "SavepointFailed", "Savepoint", "%s: %s", p.Outcome, p.Reason)
			break
		}
		st.RetryAt = &metav1.Time{Time: now.Add(r.retryInterval())}
		r.setReady(job, metav1.ConditionFalse, string(st.Operation)+string(p.Outcome), p.Reason)
	}
}

// reconcileDelete tears the job down with a final savepoint and then
// lets the FlinkJob go. An operation in flight ends first (each ends by
// its deadlines); a teardown that left the job running is tried again
// after RetryInterval.
func (r *FlinkJobReconciler) reconcileDelete(ctx context.Context, job *v1alpha1.FlinkJob) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(job, Finalizer) {
		return ctrl.Result{}, nil
	}
	st, now := &job.Status, r.now()
	var (
		wait time.Duration
		err  error
	)
	switch {
	case st.InFlight():
		wait, err = r.step(ctx, job)
	case st.Operation == v1alpha1.OperationTeardown && st.Progress.Done() && st.Progress.Stopped(),
		st.JobID == "":
		// Torn down, or nothing was ever submitted. A teardown that
		// found the job ended without a restore point said so in an
		// event (onTransition); trying again cannot bring it back.
		if err := r.Client.Status().Update(ctx, job); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(job, Finalizer)
		return ctrl.Result{}, r.Client.Update(ctx, job)
	case st.Operation == v1alpha1.OperationTeardown && st.RetryAt != nil && now.Before(st.RetryAt.Time):
		wait = st.RetryAt.Sub(now)
	default:
		wait, err = r.start(ctx, job, v1alpha1.OperationTeardown)
	}
	return r.persist(ctx, job, wait, err)
}

// onTransition turns the phase changes of an operation into events.
func (r *FlinkJobReconciler) onTransition(job *v1alpha1.FlinkJob) func(lifecycle.Transition) {
	return func(t lifecycle.Transition) {
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

func (r *FlinkJobReconciler) setReady(job *v1alpha1.FlinkJob, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{
		Type: ConditionReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: job.Generation, LastTransitionTime: metav1.NewTime(r.now()),
	})
}

// jarID is the uploaded jar to run, unless the spec names another file.
func (r *FlinkJobReconciler) jarID(job *v1alpha1.FlinkJob) flinkapi.JarID {
	if job.Status.JarFile != job.Spec.JarFile {
		return ""
	}
	return job.Status.JarID
}

func runRequest(spec *v1alpha1.FlinkJobSpec) flinkapi.RunJarRequest {
	return flinkapi.RunJarRequest{
		EntryClass: spec.EntryClass, ProgramArgs: spec.Args, Parallelism: spec.Parallelism,
		FlinkConfiguration: spec.FlinkConfiguration,
	}
}

func (r *FlinkJobReconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

func (r *FlinkJobReconciler) pollInterval() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return DefaultPollInterval
}

func (r *FlinkJobReconciler) retryInterval() time.Duration {
	if r.RetryInterval > 0 {
		return r.RetryInterval
	}
	return DefaultRetryInterval
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func phaseName(p lifecycle.Phase) string {
	if p == "" {
		return "Start"
	}
	return string(p)
}
