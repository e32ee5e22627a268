package lifecycle

import (
	"context"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// restMemo is what a SharedObservation keeps of the last full call of a
// job at rest (restCall) that left its status as it found it: while the
// job's overview entry, the caller's spec, the stored status, the jar's
// digest and the Controller's settings are the ones of that call, and
// nothing timed comes due (until), a full call would plan nothing, send
// no request and leave the status as it is. A resync then compares, as
// an informer's handler compares the object it is handed again, and
// returns when to call again.
type restMemo struct {
	ov     flinkapi.JobOverview // the job's overview entry (sameEntry)
	spec   JobSpec              // the caller's spec
	st     JobStatus            // the status before the call, and after
	digest string               // the spec's jar digest, read through the overview's cache
	jars   *Jars
	store  bool // a Store was set (the Name is checked with it)
	name   string
	ns     string
	poll   time.Duration
	resync time.Duration
	retry  time.Duration
	at     time.Time // the call's time
	until  time.Time // the first time something timed may be due; zero: none
}

// restCall is what Reconcile's full call reports for restMemo: the spec
// it planned with (effective, with its jar's digest), its observation,
// its plan and its time.
type restCall struct {
	spec JobSpec
	obs  Observation
	plan Plan
	now  time.Time
}

// mayRest reports whether a call with spec and st may end as a full
// call that a later resync can stand in for (restMemo): the job was at
// rest at the last call, and nothing but the overview and time bears on
// it. The health check (every other poll) and the Storage's audits are
// work of their own, done by full calls.
func (c *Controller) mayRest(spec JobSpec, st *JobStatus) bool {
	return c.Shared != nil && c.Deployer == nil && c.Storage == nil && spec.Health.Action == "" &&
		ranAtRest(st) && specAtRest(spec, st) && len(st.Replaced) == 0 && !st.LateSavepoint.Pending() &&
		st.Disposing == (SavepointDisposal{})
}

// resyncAtRest is the resync of a job at rest, without the full call,
// when the SharedObservation's restMemo of it holds: the job's overview
// entry, spec, st and the Controller's settings are those of the full
// call that recorded it, the overview is watched, and nothing timed has
// come due since. ok false: the full call is to be made. It reads the
// overview when it is older than the full call would allow (as the full
// call would), and changes nothing in st.
func (c *Controller) resyncAtRest(ctx context.Context, spec JobSpec, st *JobStatus) (res Result, ok bool) {
	if c.Shared == nil || c.Deployer != nil || c.Storage != nil || st.JobID == "" || ctx.Err() != nil {
		return Result{}, false
	}
	m := c.Shared.restMemo(st.JobID)
	if m == nil {
		return Result{}, false
	}
	now := c.clock().Now()
	if now.Before(m.at) || !m.until.IsZero() && !now.Before(m.until) ||
		m.jars != c.Jars || m.store != (c.Store != nil) || m.name != c.Name || m.ns != c.Namespace ||
		m.poll != c.poll() || m.resync != c.resync() || m.retry != c.retry() || !c.Shared.watching() {
		return Result{}, false
	}
	ov, listed, err := c.Shared.job(ctx, st.JobID)
	if err != nil || !listed || !sameEntry(ov, m.ov) {
		return Result{}, false
	}
	if t := &spec.Job; t.JarFile != "" && t.JarID == "" {
		if d, err := c.Shared.jarDigest(ctx, c.Jars, t.JarFile); err != nil || d != m.digest {
			return Result{}, false
		}
	}
	if !same(&spec, &m.spec) || !same(st, &m.st) {
		return Result{}, false
	}
	wait := resyncIn(st.JobID, now, c.resync())
	if !m.until.IsZero() {
		wait = min(wait, m.until.Sub(now))
	}
	return Result{RequeueAfter: c.bounded(wait)}, true
}

// noteRest records, after a full call, the restMemo a later resync
// stands in with, when the call (rc) found the job at rest through the
// shared overview alone, planned nothing, sent no request and left the
// status as it found it (before): a full call with the same entry,
// spec, status and settings does the same until something timed comes
// due. Otherwise it forgets the job's memo.
func (c *Controller) noteRest(spec JobSpec, before, st *JobStatus, rc *restCall, res Result, err error) {
	if c.Shared == nil {
		return
	}
	until, ok := c.restUntil(rc, st, res, err)
	if !ok || !same(before, st) {
		c.Shared.setRestMemo(st.JobID, nil, nil)
		return
	}
	// A copy of the status as the call left it: the strings it shares
	// with the caller's are compared by their address at the resyncs.
	m := &restMemo{spec: *spec.DeepCopy(), st: *st.DeepCopy(), jars: c.Jars, store: c.Store != nil, name: c.Name, ns: c.Namespace,
		poll: c.poll(), resync: c.resync(), retry: c.retry(), at: rc.now, until: until}
	if t := rc.spec.Job; t.JarFile != "" && t.JarID == "" {
		m.digest = t.JarDigest
	}
	c.Shared.setRestMemo(st.JobID, rc.obs.Job, m)
}

// restUntil reports whether the full call rc left the job at rest with
// nothing done and nothing read but the shared overview, and until when
// a call like it does the same: the next savepoint of the schedule, the
// first savepoint the retention's MaxAge makes go, the retry of a
// failed disposal (zero: none of them).
func (c *Controller) restUntil(rc *restCall, st *JobStatus, res Result, err error) (time.Time, bool) {
	if rc == nil || err != nil || res.Outcome != "" || res.Done {
		return time.Time{}, false
	}
	obs, plan, spec, now := &rc.obs, &rc.plan, rc.spec, rc.now
	if !obs.Shared || obs.OverviewChanged || obs.Requests != 0 || obs.Job == nil || obs.CheckpointsRead ||
		plan.Action != "" || plan.InFlight || !plan.Settled || plan.Situation != SituationRunning || plan.Dispose != "" ||
		!c.mayRest(spec, st) || !c.Shared.watching() {
		return time.Time{}, false
	}
	due, until := c.savepointDue(spec, st, obs.Job, now)
	if due {
		return time.Time{}, false
	}
	later := func(t time.Time) {
		if t.After(now) && (until.IsZero() || t.Before(until)) {
			until = t
		}
	}
	maxAge := c.retentionFor(spec, st).MaxAge
	for _, r := range st.Savepoints.Records {
		if maxAge > 0 && !r.Time.IsZero() {
			later(r.Time.Add(maxAge))
		}
		if d := r.Disposal(); d.Failed() && !d.GaveUp {
			later(d.RetryAt)
		}
	}
	return until, true
}

// restMemo returns the memo of job id's last full call at rest, if any.
func (s *SharedObservation) restMemo(id flinkapi.JobID) *restMemo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rest[id]
}

// setRestMemo keeps m as job id's memo when the job's overview entry is
// still the one its full call observed (details, built from it); nil
// m, or another entry: it forgets the job's memo.
func (s *SharedObservation) setRestMemo(id flinkapi.JobID, details *flinkapi.JobDetails, m *restMemo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.built[id]
	if m == nil || !ok || b.details != details {
		delete(s.rest, id)
		return
	}
	m.ov = b.ov
	if s.rest == nil {
		s.rest = map[flinkapi.JobID]*restMemo{}
	}
	s.rest[id] = m
}
