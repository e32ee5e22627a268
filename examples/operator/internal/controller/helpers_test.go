package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flinkkit/flinkkit/examples/operator/api/v1alpha1"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// maxReconciles bounds every drive: each scenario must settle well within it.
const maxReconciles = 300

// harness is a fake Kubernetes API (controller-runtime's fake client, with
// the status subresource) and a fake Flink JobManager (flinktest, on its
// manual clock), with the reconciler between them.
type harness struct {
	t      *testing.T
	srv    *flinktest.Server
	k8s    client.Client
	status *statusLog
	r      *FlinkJobReconciler
	events *eventLog
	store  *lifecycle.MemoryStore
	key    types.NamespacedName
	jar    string
}

func newHarness(t *testing.T, opts ...flinktest.Option) *harness {
	t.Helper()
	opts = append([]flinktest.Option{flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1)}, opts...)
	srv := flinktest.NewServer(opts...)
	t.Cleanup(srv.Close)
	flink, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	jar := counterJar(t)
	h := &harness{t: t, srv: srv, events: &eventLog{}, store: &lifecycle.MemoryStore{}, jar: jar,
		key: types.NamespacedName{Namespace: "streaming", Name: "counter"}}
	h.k8s = newFakeClient(t)
	h.status = &statusLog{}
	h.r = &FlinkJobReconciler{
		Client: &recordingClient{Client: h.k8s, log: h.status}, Flink: flink, Recorder: h.events, Store: h.store, Clock: srv.Clock(),
		Shared: &lifecycle.SharedObservation{Client: flink, Clock: srv.Clock(), MaxAge: 5 * time.Second},
		Timing: lifecycle.Timing{Poll: time.Second}, PollInterval: 10 * time.Second, RetryInterval: time.Minute,
		Jars: testJars(t),
	}
	return h
}

// testJarRoot is the tests' --jar-root: every counterJar is in a
// directory of its own under it.
var testJarRoot = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "operator-jars-")
	if err != nil {
		panic(err)
	}
	return dir
})

// testJars is the reconcilers' Jars: testJarRoot.
func testJars(t testing.TB) *lifecycle.Jars { return jarsIn(t, testJarRoot()) }

// jarsIn is the Jars of dir.
func jarsIn(t testing.TB, dir string) *lifecycle.Jars {
	t.Helper()
	j, err := lifecycle.JarDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// counterJar writes a jar of flinktest's counter job under testJarRoot.
func counterJar(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(testJarRoot(), "jar-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	jar := filepath.Join(dir, "counter.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	return jar
}

func newFakeClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil { // the application clusters' objects
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.FlinkJob{}).Build()
}

// spec is the counter job's spec, restarting from its latest state, with
// checkpoints Flink retains (so they are restore points).
func (h *harness) spec() v1alpha1.FlinkJobSpec { return counterSpec(h.jar) }

// counterSpec is the spec of the counter job in jar.
func counterSpec(jar string) v1alpha1.FlinkJobSpec {
	return v1alpha1.FlinkJobSpec{JobSpec: lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{
			JarFile: jar,
			Args:    []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000"},
			FlinkConfiguration: map[string]string{
				"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
			},
		},
		Restart: policyFromLatestState(),
	}}
}

// create creates the FlinkJob. The fake client does not maintain
// metadata.generation and metadata.uid, so the tests set them as the API
// server would.
func (h *harness) create(spec v1alpha1.FlinkJobSpec) {
	h.t.Helper()
	job := &v1alpha1.FlinkJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.key.Namespace, Name: h.key.Name, Generation: 1, UID: types.UID("uid-" + h.key.Name)},
		Spec:       spec,
	}
	if err := h.k8s.Create(context.Background(), job); err != nil {
		h.t.Fatal(err)
	}
}

// edit changes the spec and bumps the generation.
func (h *harness) edit(change func(*v1alpha1.FlinkJobSpec)) {
	h.t.Helper()
	job := h.get()
	change(&job.Spec)
	job.Generation++
	if err := h.k8s.Update(context.Background(), job); err != nil {
		h.t.Fatal(err)
	}
}

// get returns the FlinkJob, or nil once it is gone.
func (h *harness) get() *v1alpha1.FlinkJob {
	h.t.Helper()
	var job v1alpha1.FlinkJob
	if err := h.k8s.Get(context.Background(), h.key, &job); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		h.t.Fatal(err)
	}
	return &job
}

// reconcile runs one reconcile and returns its result.
func (h *harness) reconcile() ctrl.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
	if err != nil {
		h.t.Fatalf("Reconcile: %v\nstatus: %s", err, h.statusJSON())
	}
	if res.RequeueAfter <= 0 && !h.invalid() {
		h.t.Fatalf("Reconcile asked for no requeue: %+v\nstatus: %s", res, h.statusJSON())
	}
	return res
}

// invalid reports whether the FlinkJob's spec is one the controller
// cannot act on: its reconcile waits for the next spec, with no requeue.
func (h *harness) invalid() bool {
	job := h.get()
	if job == nil {
		return false
	}
	c := findReady(job)
	return c != nil && c.Reason == lifecycle.ReasonInvalidSpec
}

// until reconciles, moving the fake clock by each RequeueAfter as the
// controller's work queue would, until done holds for the FlinkJob (nil
// once it is gone). check, if set, runs after every reconcile. A reconcile
// that fails because its status update was lost (h.status.loseEvery) is
// retried a second later, as the work queue's backoff would.
func (h *harness) until(what string, done func(*v1alpha1.FlinkJob) bool, check func(*v1alpha1.FlinkJob)) *v1alpha1.FlinkJob {
	h.t.Helper()
	for range maxReconciles {
		res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: h.key})
		switch {
		case errors.Is(err, errLost) || apierrors.IsConflict(err):
			res.RequeueAfter = time.Second
		case err != nil:
			h.t.Fatalf("%s: Reconcile: %v\nstatus: %s", what, err, h.statusJSON())
		}
		job := h.get()
		if check != nil {
			check(job)
		}
		if done(job) {
			return job
		}
		if res.RequeueAfter <= 0 {
			h.t.Fatalf("%s: no requeue (%+v) before the goal\nstatus: %s", what, res, h.statusJSON())
		}
		h.srv.Clock().Advance(res.RequeueAfter)
	}
	h.t.Fatalf("%s: not reached within %d reconciles\nstatus: %s\nevents:\n%s", what, maxReconciles, h.statusJSON(), h.events)
	return nil
}

// runs reports whether job runs its spec's job, stable, at rest: Ready.
func runs(job *v1alpha1.FlinkJob) bool {
	if job == nil {
		return false
	}
	st := &job.Status
	return st.ObservedGeneration == job.Generation && !st.InFlight() && st.State == policy.Running &&
		st.Reason == string(policy.Running) && st.Deployed.Fingerprint() == job.Spec.Job.Fingerprint()
}

// running waits until the job runs the current spec.
func (h *harness) running(what string) *v1alpha1.FlinkJob {
	h.t.Helper()
	j := h.until(what, runs, nil)
	// Let the tasks run a little before the test looks at them.
	h.srv.Clock().Advance(time.Second)
	return j
}

// failedForGood creates a FlinkJob whose restart policy is Never, with
// checkpoints Flink retains after a failure or without, fails its job and
// reconciles until the status says Failed; it returns the failed job's id.
func (h *harness) failedForGood(retained bool) flinkapi.JobID {
	h.t.Helper()
	spec := h.spec()
	spec.Restart = policy.RestartPolicy{}
	if !retained {
		spec.Job.FlinkConfiguration = nil
	}
	h.create(spec)
	old := h.running("create").Status.JobID
	if err := h.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
		h.t.Fatal(err)
	}
	h.until("failed", func(j *v1alpha1.FlinkJob) bool { return j.Status.State == policy.Failed }, nil)
	return old
}

func (h *harness) statusJSON() string {
	job := h.get()
	if job == nil {
		return "(gone)"
	}
	b, _ := json.MarshalIndent(job.Status, "", "  ")
	return string(b)
}

// live returns the server's jobs that have not ended.
func (h *harness) live() []flinktest.JobInfo { return liveJobs(h.srv) }

// liveJobs returns srv's jobs that have not ended.
func liveJobs(srv *flinktest.Server) []flinktest.JobInfo {
	var out []flinktest.JobInfo
	for _, j := range srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			out = append(out, j)
		}
	}
	return out
}

// jobs returns the server's jobs in the given state.
func (h *harness) jobs(state flinkapi.JobState) []flinktest.JobInfo {
	var out []flinktest.JobInfo
	for _, j := range h.srv.Jobs() {
		if j.State == state {
			out = append(out, j)
		}
	}
	return out
}

// count counts the requests of a route in the server's log.
func (h *harness) count(route string) int { return countRoute(h.srv, route) }

// countRoute counts the requests of a route in srv's log.
func countRoute(srv *flinktest.Server, route string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Route == route {
			n++
		}
	}
	return n
}

// triggerIDs returns the distinct trigger ids of savepoint and stop
// requests in the server's log.
func (h *harness) triggerIDs() []string { return triggerIDs(h.t, h.srv) }

// triggerIDs returns the distinct trigger ids of savepoint and stop
// requests in srv's log.
func triggerIDs(t testing.TB, srv *flinktest.Server) []string {
	t.Helper()
	seen := map[string]bool{}
	var ids []string
	for _, r := range srv.Requests() {
		if r.Route != "POST /jobs/:jobid/savepoints" && r.Route != "POST /jobs/:jobid/stop" {
			continue
		}
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("trigger body %q: %v", r.Body, err)
		}
		if !seen[body.TriggerID] {
			seen[body.TriggerID] = true
			ids = append(ids, body.TriggerID)
		}
	}
	return ids
}

// jarRunJobIDs returns the distinct job ids of the jar runs in srv's log.
func jarRunJobIDs(t testing.TB, srv *flinktest.Server) []string {
	t.Helper()
	var ids []string
	for _, r := range srv.Requests() {
		if r.Route != "POST /jars/:jarid/run" {
			continue
		}
		var body struct {
			JobID string `json:"jobId"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("jar run body %q: %v", r.Body, err)
		}
		if !slices.Contains(ids, body.JobID) {
			ids = append(ids, body.JobID)
		}
	}
	return ids
}

// eventLog records events as "Type Reason: note".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, eventtype+" "+reason+": "+fmt.Sprintf(note, args...))
}

// has reports whether an event starts with prefix.
func (l *eventLog) has(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, "\n")
}

// errLost is the error of a status update that recordingClient lost.
var errLost = errors.New("status update lost")

// statusLog records the statuses the reconciler stored, and loses every
// loseEvery-th update (0: none), as an update that loses a conflict: the
// status is not written and the update fails. With conflictEvery, every
// conflictEvery-th update loses a real conflict on the API server: just
// before it, other (a client of the API server) changes the FlinkJob's
// annotations, so that the update's resourceVersion is stale.
type statusLog struct {
	mu            sync.Mutex
	loseEvery     int
	conflictEvery int
	other         client.Client
	updates       int
	lost          int
	conflicts     int
	last          *v1alpha1.FlinkJob
	stores        []string // every status stored, as JSON
}

// recordingClient is a Kubernetes client whose status updates go through a
// statusLog.
type recordingClient struct {
	client.Client
	log *statusLog
}

func (c *recordingClient) Status() client.SubResourceWriter {
	return &recordingStatus{SubResourceWriter: c.Client.Status(), log: c.log}
}

type recordingStatus struct {
	client.SubResourceWriter
	log *statusLog
}

func (w *recordingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	l := w.log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.updates++
	if l.loseEvery > 0 && l.updates%l.loseEvery == 0 {
		l.lost++
		return errLost
	}
	if l.conflictEvery > 0 && l.updates%l.conflictEvery == 0 {
		if err := l.bump(ctx, obj); err != nil {
			return err
		}
		err := w.SubResourceWriter.Update(ctx, obj, opts...)
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("status update with a stale resourceVersion: %v, want a conflict", err)
		}
		l.conflicts++
		return err
	}
	if err := w.SubResourceWriter.Update(ctx, obj, opts...); err != nil {
		return err
	}
	l.last = obj.(*v1alpha1.FlinkJob).DeepCopy()
	if b, err := json.Marshal(l.last.Status); err == nil {
		l.stores = append(l.stores, string(b))
	}
	return nil
}

// bump changes obj's annotations on the API server through l.other.
func (l *statusLog) bump(ctx context.Context, obj client.Object) error {
	var job v1alpha1.FlinkJob
	if err := l.other.Get(ctx, client.ObjectKeyFromObject(obj), &job); err != nil {
		return err
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations["test.flinkkit.dev/bump"] = fmt.Sprint(l.updates)
	return l.other.Update(ctx, &job)
}

// stored returns the status last stored, and how many updates were made
// and lost.
func (l *statusLog) stored() (*v1alpha1.FlinkJob, int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.updates, l.lost
}

func policyFromLatestState() policy.RestartPolicy {
	return policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(10 * time.Second)}
}
