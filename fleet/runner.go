package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// Deployment is one job of a fleet as its source states it: a name, the
// cluster it runs on and its spec. Sync stores it as a Record.
type Deployment struct {
	// Name is the deployment's name: the Controller's Name and the key of
	// its Record (see Store for the names taken).
	Name string
	// Cluster names the cluster it runs on: a key of Runner.Clusters.
	Cluster string
	// Spec is the spec it should run.
	Spec lifecycle.JobSpec
	// Application, if set, names the application the deployment belongs
	// to: a group of deployments applied together (in one Sync), reported
	// with one verdict (Runner.Applications) and, once the source no
	// longer states the application, removed together.
	Application string
	// AdoptName, if set, adopts the running job of that Flink job name
	// on the cluster instead of deploying one (lifecycle.JobSpec.Adopt,
	// without the job's id in the source): the job is looked up among
	// the cluster's jobs that no deployment of the Store claims, once,
	// when the deployment has no job yet; exactly one running job must
	// have the name. Spec.Adopt and AdoptName are not set together.
	// The adopted job is taken to run the spec the deployment had when
	// Sync first stored it with AdoptName set (Record.AdoptSpec; Flink
	// does not show what a job was started with, beyond the parameters
	// a program registers): a change of the spec made after that, even
	// before the adoption lands, is carried out once the job is
	// adopted, as an upgrade from its state. A change made before that
	// Sync is taken as what the job runs.
	AdoptName string
}

// Runner keeps the deployments of a Store as their specs say, on the
// clusters it is given: the runtime every program that runs many jobs
// without Kubernetes needs (a GitOps reconciler over a directory of spec
// files, a streaming runtime, a command-line tool's daemon).
//
// Sync states which deployments there are; Pass calls the Controller of
// each deployment that is due, one call at a time per deployment and up
// to Parallel deployments at once, and stores its record after every
// call, whatever the call returned; Run does passes until its context
// ends, waking a deployment early when the watch of its cluster's shared
// overview names one of its jobs. A deployment removed from the source is
// torn down (Controller.Delete, under the spec its job last ran under)
// until that is done, and its record then deleted. A call that fails is
// tried again after a backoff that doubles with each failure in a row,
// from one second to MaxBackoff.
//
// The Controllers of one cluster share its client (and so its request
// budget: flinkapi.WithRequestBudget) and one lifecycle.SharedObservation,
// so a fleet at rest costs one overview read per poll and cluster,
// whatever the number of its deployments.
//
// The deployments of a cluster share one upload of each jar content, and
// each pass deletes the uploads none of them uses any more and lists the
// jobs none claims, at most once per cluster and Housekeeping.Interval
// (see the package documentation).
//
// One Runner acts on a Store at a time; a second one on the same Store
// would act beside it. Reading the Store (Store.List, as a plan does)
// never waits for the Runner. A Runner is safe for concurrent use: Sync
// may be called while Run runs.
type Runner struct {
	// Store keeps the deployments' records.
	Store Store
	// Clusters are the clusters the deployments run on, by name, each with
	// the Env its deployments' Controllers use: its client, jars,
	// secrets, timing and clock.
	Clusters map[string]lifecycle.Env
	// Controller is the template of every deployment's Controller: its
	// PollInterval, RetryInterval, restore-point Store, Namespace,
	// Storage and so on apply to each deployment. Its Env, Name and
	// Shared are set per deployment (the cluster's Env, the deployment's
	// Name, the cluster's shared overview).
	Controller lifecycle.Controller
	// Parallel is how many deployments are called at once; 0:
	// DefaultParallel.
	Parallel int
	// MaxBackoff bounds the wait after failed calls; 0: DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Clock tells the time and waits; nil: the wall clock.
	Clock lifecycle.Clock
	// OnResult, if set, is called after every call of a deployment's
	// Controller with what it said. It is called from the goroutine of
	// the call: it must not block for long.
	OnResult func(Result)
	// Housekeeping tunes the deletion of the jars no deployment uses
	// and the listing of the jobs none claims, which passes do on each
	// cluster (on by default; ClusterResults says what it did).
	Housekeeping Housekeeping

	mu       sync.Mutex
	deps     map[string]*deployment
	shared   map[string]*lifecycle.SharedObservation
	wake     chan struct{}
	watching map[string]bool
	metrics  map[string]*clusterMetrics
	listed   bool                    // the records are known: a pass need not list the Store
	adopted  map[flinkapi.JobID]bool // jobs this Runner found to adopt
	adoptMu  sync.Mutex              // held while a job to adopt is looked up
	jars     map[string]*clusterJars // the clusters' jars, by cluster
	sharing  map[string]*sharingAPI  // the clusters' clients for the Controllers
}

// DefaultParallel is how many deployments a Runner calls at once when
// Runner.Parallel is 0.
const DefaultParallel = 4

// DefaultMaxBackoff bounds the wait after failed calls when
// Runner.MaxBackoff is 0.
const DefaultMaxBackoff = 5 * time.Minute

// firstBackoff is the wait after the first failed call in a row.
const firstBackoff = time.Second

// Result is what the last call of one deployment's Controller said.
type Result struct {
	// Name and Cluster name the deployment, and Application its
	// application, if any.
	Name        string
	Cluster     string
	Application string
	// Verdict is the status's verdict after the call (JobStatus.Verdict);
	// empty before the first call.
	Verdict lifecycle.Verdict
	// Situation is the job's situation as the call saw it.
	Situation lifecycle.Situation
	// Removed says that the deployment is being torn down, its spec gone
	// from the source; Deleted that its teardown is done and its record
	// deleted.
	Removed bool
	Deleted bool
	// Err is the error of the last call (the Controller's, the Store's),
	// nil if it succeeded.
	Err error
	// Failures counts the failed calls in a row.
	Failures int
	// Calls counts the calls of this deployment since the Runner began.
	Calls int
	// Next is when the deployment is due again.
	Next time.Time
}

// ChangeSet is what Sync changed: the names of the deployments added,
// whose spec changed, removed (to be torn down), and left as they were.
type ChangeSet struct {
	Added     []string `json:"added,omitempty"`
	Changed   []string `json:"changed,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
}

// deployment is what the Runner keeps of one deployment between calls.
type deployment struct {
	// call is held while the deployment's record is read, acted on and
	// written: by a call of its Controller, or by Sync.
	call    sync.Mutex
	due     time.Time
	running bool
	// written counts Sync's writes of the record: a listing of the
	// Store begun before the last of them does not replace rec.
	written int
	// rec is the record as this Runner last stored or read it; nil: to
	// be read from the Store.
	rec    *Record
	jobs   []flinkapi.JobID
	result Result
}

// clusterMetrics counts the calls of one cluster's deployments.
type clusterMetrics struct {
	calls, errors int64
}

func (r *Runner) clock() lifecycle.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return wallClock{}
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }

// state returns the Runner's record of the deployment name, created due
// at once.
func (r *Runner) state(name string) *deployment {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deps == nil {
		r.deps = map[string]*deployment{}
	}
	d, ok := r.deps[name]
	if !ok {
		d = &deployment{result: Result{Name: name}}
		r.deps[name] = d
	}
	return d
}

// Sync makes the Store hold the deployments desired: a record for each
// one it lacks, the new spec of each whose spec changed, and each record
// whose deployment is not desired any more marked Removed, to be torn
// down by the next passes. The deployments named are due at once. It
// checks everything before it writes anything: a name that is not a
// deployment name, a name given twice, a cluster the Runner does not
// have, a spec that does not validate, or a deployment moved to another
// cluster (remove it first, or give it a new name) is an error naming
// the deployment, and nothing is written.
func (r *Runner) Sync(ctx context.Context, desired []Deployment) (ChangeSet, error) {
	recs, _, want, err := r.checked(ctx, desired)
	if err != nil {
		return ChangeSet{}, err
	}
	var cs ChangeSet
	for _, d := range desired {
		kind, err := r.syncOne(ctx, d)
		if err != nil {
			return cs, err
		}
		switch kind {
		case added:
			cs.Added = append(cs.Added, d.Name)
		case changed:
			cs.Changed = append(cs.Changed, d.Name)
		default:
			cs.Unchanged = append(cs.Unchanged, d.Name)
		}
	}
	for _, rec := range recs {
		if want[rec.Name] || rec.Removed {
			continue
		}
		if err := r.remove(ctx, rec.Name); err != nil {
			return cs, err
		}
		cs.Removed = append(cs.Removed, rec.Name)
	}
	for _, l := range [][]string{cs.Added, cs.Changed, cs.Removed, cs.Unchanged} {
		sort.Strings(l)
	}
	r.poke()
	return cs, nil
}

// checked lists the Store's records and checks desired against them
// (check): the records, by name too, and the names desired.
func (r *Runner) checked(ctx context.Context, desired []Deployment) (recs []Record, stored map[string]*Record, want map[string]bool, err error) {
	recs, err = r.Store.List(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	stored = make(map[string]*Record, len(recs))
	for i := range recs {
		stored[recs[i].Name] = &recs[i]
	}
	want = make(map[string]bool, len(desired))
	var problems []error
	for _, d := range desired {
		if err := r.check(d, want, stored[d.Name]); err != nil {
			problems = append(problems, err)
		}
		want[d.Name] = true
	}
	if len(problems) > 0 {
		return nil, nil, nil, errors.Join(problems...)
	}
	return recs, stored, want, nil
}

// check refuses d if Sync cannot store it.
func (r *Runner) check(d Deployment, seen map[string]bool, rec *Record) error {
	if err := checkName(d.Name); err != nil {
		return err
	}
	if seen[d.Name] {
		return fmt.Errorf("fleet: deployment %s is given twice", d.Name)
	}
	if _, ok := r.Clusters[d.Cluster]; !ok {
		return r.unknownCluster(d.Name, d.Cluster)
	}
	if rec != nil && !rec.Removed && rec.Cluster != d.Cluster {
		return fmt.Errorf("fleet: deployment %s moves from cluster %s to %s: remove it first (its job is torn down), or give it a new name", d.Name, rec.Cluster, d.Cluster)
	}
	if err := d.Spec.Validate(); err != nil {
		return fmt.Errorf("fleet: deployment %s: %w", d.Name, err)
	}
	if d.Application != "" {
		if err := checkName(d.Application); err != nil {
			return fmt.Errorf("fleet: deployment %s: application: %w", d.Name, err)
		}
	}
	if d.AdoptName != "" && d.Spec.Adopt != "" {
		return fmt.Errorf("fleet: deployment %s: adopt names job %s and adoptName %q: give one", d.Name, d.Spec.Adopt, d.AdoptName)
	}
	return nil
}

// unknownCluster is the error of the deployment name on cluster, which
// the Runner does not have.
func (r *Runner) unknownCluster(name, cluster string) error {
	return fmt.Errorf("fleet: deployment %s runs on cluster %q, which is not one of the runner's (%s)", name, cluster, strings.Join(r.clusterNames(), ", "))
}

func (r *Runner) clusterNames() []string {
	names := make([]string, 0, len(r.Clusters))
	for n := range r.Clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type syncKind int

const (
	unchanged syncKind = iota
	added
	changed
)

// syncOne stores d's spec in its record, under the deployment's lock.
func (r *Runner) syncOne(ctx context.Context, d Deployment) (syncKind, error) {
	st := r.state(d.Name)
	st.call.Lock()
	defer st.call.Unlock()
	rec, ok, err := r.Store.Load(ctx, d.Name)
	if err != nil {
		return unchanged, err
	}
	kind := changed
	switch {
	case !ok || rec.Removed && rec.Cluster != d.Cluster:
		// A new deployment, or one whose teardown on another cluster
		// the new one must not inherit: a fresh record.
		if ok && !rec.Status.Deleted {
			return unchanged, fmt.Errorf("fleet: deployment %s moves from cluster %s to %s while its job there is torn down: add it again once the teardown is done", d.Name, rec.Cluster, d.Cluster)
		}
		rec, kind = Record{Name: d.Name, Cluster: d.Cluster}, added
	case rec.Removed:
		kind = added
	case rec.states(d):
		return unchanged, nil
	}
	if rec.AdoptName != d.AdoptName {
		rec.Adopting, rec.AdoptSpec = "", nil
		if d.AdoptName != "" {
			spec := d.Spec
			rec.AdoptSpec = &spec
		}
	}
	rec.Spec, rec.Removed, rec.Application, rec.AdoptName = d.Spec, false, d.Application, d.AdoptName
	if err := r.Store.Save(ctx, &rec); err != nil {
		r.wrote(st, nil)
		return unchanged, err
	}
	r.wrote(st, &rec)
	return kind, nil
}

// remove marks the record of name Removed.
func (r *Runner) remove(ctx context.Context, name string) error {
	st := r.state(name)
	st.call.Lock()
	defer st.call.Unlock()
	rec, ok, err := r.Store.Load(ctx, name)
	if err != nil || !ok || rec.Removed {
		return err
	}
	rec.Removed = true
	if err := r.Store.Save(ctx, &rec); err != nil {
		r.wrote(st, nil)
		return err
	}
	r.wrote(st, &rec)
	return nil
}

// wrote records that Sync wrote rec as d's record (nil: the write
// failed, and the Store says what it holds) and makes d due at once.
func (r *Runner) wrote(d *deployment, rec *Record) {
	r.mu.Lock()
	d.due = time.Time{}
	d.written++
	d.rec = rec
	if rec == nil {
		r.listed = false
	}
	r.mu.Unlock()
}

// states reports whether rec stores d as it is: its spec, application
// and job to adopt.
func (rec *Record) states(d Deployment) bool {
	return sameSpec(rec.Spec, d.Spec) && rec.Application == d.Application && rec.AdoptName == d.AdoptName
}

// sameSpec reports whether a and b are the same spec, as stored.
func sameSpec(a, b lifecycle.JobSpec) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// Pass calls the Controller of every deployment of the Store that is
// due (all of them at the first pass), up to Parallel at once, and
// returns the results of all deployments. An error is returned only when
// the Store could not be listed; each deployment's own error is in its
// Result. The Store is listed at the first pass and after a write to it
// failed; otherwise the Runner acts on the records as it stored them.
// Once the calls are done, it does the housekeeping of each cluster that
// is due for it (Housekeeping; ClusterResults).
func (r *Runner) Pass(ctx context.Context) ([]Result, error) {
	if err := r.relist(ctx); err != nil {
		return nil, err
	}
	now := r.clock().Now()
	var due []string
	r.mu.Lock()
	for name, d := range r.deps {
		if d.rec != nil && !d.running && !now.Before(d.due) {
			d.running = true
			due = append(due, name)
		}
	}
	r.mu.Unlock()
	sort.Strings(due)

	limit := r.Parallel
	if limit <= 0 {
		limit = DefaultParallel
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, name := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.call(ctx, name)
		}()
	}
	wg.Wait()
	r.housekeep(ctx)
	return r.Results(), nil
}

// relist reads every record of the Store, unless the Runner knows them:
// a record Sync wrote since the listing began, or one a call holds, is
// kept as the Runner has it; a deployment gone from the Store is
// forgotten.
func (r *Runner) relist(ctx context.Context) error {
	r.mu.Lock()
	if r.listed {
		r.mu.Unlock()
		return nil
	}
	written := make(map[string]int, len(r.deps))
	for name, d := range r.deps {
		written[name] = d.written
	}
	r.mu.Unlock()
	recs, err := r.Store.List(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deps == nil {
		r.deps = map[string]*deployment{}
	}
	present := make(map[string]bool, len(recs))
	for i := range recs {
		rec := &recs[i]
		present[rec.Name] = true
		d, ok := r.deps[rec.Name]
		if !ok {
			d = &deployment{result: Result{Name: rec.Name, Cluster: rec.Cluster}}
			r.deps[rec.Name] = d
		}
		// A deployment that Sync created or wrote after the snapshot of
		// written has its own record, newer than the listing's.
		if !d.running && written[rec.Name] == d.written {
			d.rec = rec
		}
	}
	for name, d := range r.deps {
		// Only a deployment the snapshot knew, unwritten since, is one
		// the Store no longer holds: one taken on after the snapshot
		// (Sync adding it) may not have been saved when the Store was
		// listed.
		if w, known := written[name]; known && !present[name] && !d.running && d.written == w {
			delete(r.deps, name)
		}
	}
	r.listed = true
	return nil
}

// call calls the Controller of the deployment name once and stores its
// record.
func (r *Runner) call(ctx context.Context, name string) {
	d := r.state(name)
	d.call.Lock()
	defer d.call.Unlock()
	r.mu.Lock()
	rec := d.rec
	r.mu.Unlock()
	res, stored, deleted := r.step(ctx, name, rec, d)
	now := r.clock().Now()

	r.mu.Lock()
	d.running = false
	d.rec = stored
	if stored == nil && !deleted {
		r.listed = false // a write failed: the Store says what it holds
	}
	res.Calls = d.result.Calls + 1
	res.Failures = 0
	wait := res.Next.Sub(now)
	if res.Err != nil {
		res.Failures = d.result.Failures + 1
		wait = max(wait, r.backoff(res.Failures))
	}
	res.Next = now.Add(wait)
	d.due = res.Next
	d.result = res
	if deleted {
		delete(r.deps, name)
	}
	m := r.clusterMetrics(res.Cluster)
	m.calls++
	if res.Err != nil {
		m.errors++
	}
	r.mu.Unlock()
	if r.OnResult != nil {
		r.OnResult(res)
	}
}

// step calls the Controller of the deployment name (Reconcile, or
// Delete once it is removed) with its record (known, or read from the
// Store when known is nil), stores the record and, once a removed
// deployment's teardown is done, deletes it. It returns the record as
// stored (nil when it is not known to be: a write failed), and whether
// the deployment is gone. Result.Next holds the wait the Controller
// asked for, relative to the call's end.
func (r *Runner) step(ctx context.Context, name string, known *Record, d *deployment) (Result, *Record, bool) {
	res := Result{Name: name}
	var rec Record
	if known != nil {
		// A copy: the call changes the status in place, and the known
		// record is dropped if the write fails.
		rec = *known
	} else {
		loaded, ok, err := r.Store.Load(ctx, name)
		if err != nil || !ok {
			res.Err = err
			return res, nil, err == nil // gone from the Store: forget it
		}
		rec = loaded
	}
	res.Cluster, res.Removed, res.Application = rec.Cluster, rec.Removed, rec.Application
	env, ok := r.Clusters[rec.Cluster]
	if !ok {
		res.Err = r.unknownCluster(name, rec.Cluster)
		return res, &rec, false
	}
	ctrl := r.Controller
	ctrl.Env, ctrl.Name, ctrl.Shared = env, rec.Name, r.sharedOf(rec.Cluster, env)
	ctrl.Client = r.sharingOf(rec.Cluster, env)
	var cres lifecycle.Result
	var callErr error
	if rec.Removed {
		spec := rec.Spec
		if rec.Applied != nil {
			spec = *rec.Applied
		}
		cres, callErr = ctrl.Delete(ctx, spec, &rec.Status)
	} else {
		spec := rec.Spec
		if rec.AdoptName != "" {
			spec = rec.adoptionSpec()
			spec.Adopt, callErr = r.adopting(ctx, &rec)
		}
		if callErr == nil {
			rec.Applied = &spec
			cres, callErr = ctrl.Reconcile(ctx, spec, &rec.Status)
		}
	}
	saveErr := r.Store.Save(ctx, &rec)
	res.Verdict, res.Situation = rec.Status.Verdict, rec.Status.Situation
	res.Next = r.clock().Now().Add(cres.RequeueAfter)
	res.Err = errors.Join(callErr, saveErr)
	r.mu.Lock()
	d.jobs = jobsOf(&rec.Status, d.jobs[:0])
	r.mu.Unlock()
	if saveErr != nil {
		return res, nil, false
	}
	if res.Err != nil || !rec.Removed || !cres.Done {
		return res, &rec, false
	}
	if err := r.Store.Delete(ctx, name); err != nil {
		res.Err = err
		return res, nil, false
	}
	res.Deleted = true
	return res, nil, true
}

// jobsOf appends the ids of the jobs a status acts on: the job, and the
// one an action in flight starts.
func jobsOf(st *lifecycle.JobStatus, ids []flinkapi.JobID) []flinkapi.JobID {
	for _, id := range []flinkapi.JobID{st.JobID, st.Progress.JobID, st.Progress.Submit.NewJobID} {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// backoff is the wait after n failed calls in a row.
func (r *Runner) backoff(n int) time.Duration {
	limit := r.MaxBackoff
	if limit <= 0 {
		limit = DefaultMaxBackoff
	}
	d := firstBackoff
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// sharedOf returns the shared overview of the cluster name, created at
// its first use.
func (r *Runner) sharedOf(name string, env lifecycle.Env) *lifecycle.SharedObservation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared == nil {
		r.shared = map[string]*lifecycle.SharedObservation{}
	}
	s, ok := r.shared[name]
	if !ok {
		poll := r.Controller.PollInterval
		if poll <= 0 {
			poll = lifecycle.DefaultControllerPoll
		}
		s = &lifecycle.SharedObservation{Client: env.Client, Clock: env.Clock, MaxAge: poll / 2}
		r.shared[name] = s
	}
	return s
}

func (r *Runner) clusterMetrics(name string) *clusterMetrics {
	if r.metrics == nil {
		r.metrics = map[string]*clusterMetrics{}
	}
	m, ok := r.metrics[name]
	if !ok {
		m = &clusterMetrics{}
		r.metrics[name] = m
	}
	return m
}

// Results returns the last result of every deployment the Runner knows,
// ordered by name.
func (r *Runner) Results() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Result, 0, len(r.deps))
	for _, d := range r.deps {
		out = append(out, d.result)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run does passes until ctx ends, each as soon as a deployment is due,
// and watches every cluster's shared overview (SharedObservation.Run): a
// deployment whose job the overview shows changed is called at once.
// It returns ctx's error.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	r.mu.Unlock()
	var watches sync.WaitGroup
	defer watches.Wait() // a later Run watches again
	for {
		if _, err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			// The Store could not be listed: try again after a while.
			if err := r.clock().Sleep(ctx, firstBackoff); err != nil {
				return err
			}
			continue
		}
		r.watch(ctx, &watches)
		if err := r.sleep(ctx); err != nil {
			return err
		}
	}
}

// watch starts the watch of each cluster's shared overview not watched
// yet, counted in watches. A watch ends with the ctx of the Run that
// started it, which waits for it, so that a later Run of the same Runner
// watches again.
func (r *Runner) watch(ctx context.Context, watches *sync.WaitGroup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watching == nil {
		r.watching = map[string]bool{}
	}
	for name, s := range r.shared {
		if r.watching[name] {
			continue
		}
		r.watching[name] = true
		watches.Add(1)
		go func() {
			defer watches.Done()
			_ = s.Run(ctx, func(ids []flinkapi.JobID) { r.changed(name, ids) })
			r.mu.Lock()
			r.watching[name] = false
			r.mu.Unlock()
		}()
	}
}

// changed makes due at once the deployments of cluster whose jobs are
// among ids.
func (r *Runner) changed(cluster string, ids []flinkapi.JobID) {
	r.mu.Lock()
	any := false
	for _, d := range r.deps {
		if d.result.Cluster != cluster {
			continue
		}
		for _, id := range d.jobs {
			if slices.Contains(ids, id) {
				d.due, any = time.Time{}, true
				break
			}
		}
	}
	r.mu.Unlock()
	if any {
		r.poke()
	}
}

// poke wakes Run.
func (r *Runner) poke() {
	r.mu.Lock()
	w := r.wake
	r.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w <- struct{}{}:
	default:
	}
}

// sleep waits until the next deployment is due, Run is poked, or ctx
// ends.
func (r *Runner) sleep(ctx context.Context) error {
	now := r.clock().Now()
	wait := time.Duration(-1)
	r.mu.Lock()
	for _, d := range r.deps {
		if d.running {
			continue
		}
		if w := d.due.Sub(now); wait < 0 || w < wait {
			wait = w
		}
	}
	wake := r.wake
	r.mu.Unlock()
	if wait < 0 {
		wait = r.idle()
	}
	if wait <= 0 {
		return ctx.Err()
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-wake:
			cancel()
		case <-sctx.Done():
		}
	}()
	err := r.clock().Sleep(sctx, wait)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	_ = err // woken early
	return nil
}

// idle is how long Run waits with no deployment: until Sync adds one,
// or a poll interval.
func (r *Runner) idle() time.Duration {
	if p := r.Controller.PollInterval; p > 0 {
		return p
	}
	return lifecycle.DefaultControllerPoll
}
