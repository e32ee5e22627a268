package lifecycle

import (
	"context"
	"hash/fnv"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// DefaultSharedMaxAge is SharedObservation.MaxAge's default: half the
// Controller's default poll interval. Controllers polling on their own
// read the overview at most every MaxAge; watched (Run), it is read once
// every two MaxAge, once per default poll, whatever the fleet's size.
const DefaultSharedMaxAge = DefaultControllerPoll / 2

// SharedObservation is the job list of one session cluster, read with one
// GET /jobs/overview at most every MaxAge and shared by the Controllers
// of every job on that cluster (Controller.Shared), as an informer serves
// every reconcile of a Kubernetes controller. A Controller whose job is
// at rest (it runs the spec's job stably, nothing is due, no policy needs
// the job's own details) takes the job's state from it and sends no
// request of its own for the job; a job the overview shows changed
// (another state, tasks not all running, a new start, absent) is read
// in full as without it. A resync of a job at rest whose entry, spec
// and status are those of its last full call, with nothing timed due
// since, is a comparison with that call rather than a call in full
// (Controller.Resync). Health checks, the autoscaler and triggered
// checkpoints read the job's own details, as does every action. The
// jars the Controllers' specs name are read (stat, and the content when
// it changed) once per overview read too, not once per call: a jar
// rebuilt under the same path is seen within MaxAge (two MaxAge while
// watched).
//
// It is safe for concurrent use: concurrent Controllers wait for one
// read in flight rather than send their own. Create one per cluster
// (per JobManager URL) and keep it for the life of the program.
type SharedObservation struct {
	// Client reads the overview; give it the cluster's client (whose
	// request budget, flinkapi.WithRequestBudget, the read then counts
	// against).
	Client API
	// Clock is the time source; nil: the system clock.
	Clock Clock
	// MaxAge is how old an overview may be when it serves a Controller;
	// 0: DefaultSharedMaxAge. A job's change is seen at most MaxAge
	// after the overview showing it could have been read.
	MaxAge time.Duration

	mu        sync.Mutex
	at        time.Time
	list      []flinkapi.JobOverview       // the last overview read
	index     map[flinkapi.JobID]int       // position in list by id, reused by every read
	built     map[flinkapi.JobID]builtJob  // observations built from list, kept while unchanged
	rest      map[flinkapi.JobID]*restMemo // the last full call of each job at rest (Controller.resyncAtRest)
	jars      map[sharedJar]string         // jar digests by source and path, read since the overview was
	spare     map[flinkapi.JobID]int       // the index before, reused by the next read
	listed    bool                         // a read succeeded
	watched   bool                         // Changes was called: reads note the changes
	lastWatch time.Time                    // when Changes was last called
	changed   map[flinkapi.JobID]struct{}  // changes since the last Changes call
	err       error
	reading   chan struct{} // closed when the read in flight ends
	reads     int64
}

// builtJob is the details a job at rest is observed with, built from its
// overview entry ov and shared, read-only, by every call until the entry
// changes.
type builtJob struct {
	ov      flinkapi.JobOverview
	details *flinkapi.JobDetails
}

// Reads returns how many overview requests s sent so far.
func (s *SharedObservation) Reads() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Jobs returns the cluster's jobs as the overview lists them, from an
// overview at most MaxAge old (two MaxAge while watched), reading one if
// there is none: a caller that looks at every job of the cluster (which
// jobs no deployment claims, say) sends no request of its own while the
// Controllers keep the overview fresh. The slice is the caller's.
func (s *SharedObservation) Jobs(ctx context.Context) ([]flinkapi.JobOverview, error) {
	if err := s.fresh(ctx, true); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list), nil
}

// job returns the overview of job id from an overview at most MaxAge
// old (two MaxAge while watched, see Changes), reading one if there is
// none; ok is false when the cluster does
// not list the job. err is the read's error (the JobManager unreachable):
// the caller then reads the job itself.
func (s *SharedObservation) job(ctx context.Context, id flinkapi.JobID) (job flinkapi.JobOverview, ok bool, err error) {
	if err := s.fresh(ctx, true); err != nil {
		return flinkapi.JobOverview{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[id]
	if !ok {
		return flinkapi.JobOverview{}, false, nil
	}
	return s.list[i], true, nil
}

// details is the observed details of the running job whose overview
// entry is ov: the same value while the entry is unchanged (but for its
// duration), built once rather than at every call of a job at rest.
// Callers do not modify it.
func (s *SharedObservation) details(ov flinkapi.JobOverview) *flinkapi.JobDetails {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.built[ov.ID]; ok && sameEntry(b.ov, ov) {
		return b.details
	}
	d := sharedDetails(ov)
	if s.built == nil {
		s.built = map[flinkapi.JobID]builtJob{}
	}
	s.built[ov.ID] = builtJob{ov: ov, details: d}
	return d
}

// sameEntry reports whether two overview entries of a job differ only in
// the duration, which grows with every read.
func sameEntry(a, b flinkapi.JobOverview) bool {
	a.Duration, b.Duration = 0, 0
	return a == b
}

// sharedJar names a jar file in a source.
type sharedJar struct {
	jars *Jars
	path string
}

// jarDigest is the digest of the jar at path in jars (Jars.digest), read
// at most once per path between two reads of the overview: a jar rebuilt
// under the same name is seen within MaxAge, as a job's change is.
func (s *SharedObservation) jarDigest(ctx context.Context, jars *Jars, path string) (string, error) {
	k := sharedJar{jars: jars, path: path}
	s.mu.Lock()
	d, ok := s.jars[k]
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := jars.digest(ctx, path)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.jars == nil {
		s.jars = map[sharedJar]string{}
	}
	s.jars[k] = d
	s.mu.Unlock()
	return d, nil
}

// fresh makes the overview at most MaxAge old (for a Controller served
// by it, served: s.maxAge), reading it (once for all callers) when it is
// older.
func (s *SharedObservation) fresh(ctx context.Context, served bool) error {
	for {
		s.mu.Lock()
		now := clockOr(s.Clock).Now()
		maxAge := orDefault(s.MaxAge, DefaultSharedMaxAge)
		if served {
			maxAge = s.maxAge(now)
		}
		if !s.at.IsZero() && now.Sub(s.at) < maxAge && !now.Before(s.at) {
			err := s.err
			s.mu.Unlock()
			return err
		}
		if wait := s.reading; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		s.reading = done
		s.reads++
		s.mu.Unlock()
		jobs, err := s.Client.JobsOverview(ctx)
		s.mu.Lock()
		s.reading = nil
		close(done)
		if ctx.Err() != nil && err != nil {
			s.mu.Unlock()
			return err // this caller's context ended: not the cluster's answer
		}
		s.took(jobs, err)
		s.mu.Unlock()
		return err
	}
}

// took records a read of the overview: its jobs, or its error. When
// someone watches (Changes), it notes which jobs changed since the read
// before: those whose entry differs (but for its duration), those listed
// anew and those no longer listed; every job known, when a read fails
// after one that did not, or succeeds after one that failed.
func (s *SharedObservation) took(jobs []flinkapi.JobOverview, err error) {
	failedBefore := s.err != nil
	s.at, s.err = clockOr(s.Clock).Now(), err
	clear(s.jars)
	if err != nil {
		if s.watched && !failedBefore {
			s.noteAll(s.list)
		}
		return
	}
	old, oldIndex := s.list, s.index
	s.list = jobs
	if s.listed && s.samePositions(old, jobs, failedBefore) {
		// The same jobs in the same order, as a cluster at rest lists
		// them: the index and the built observations stay.
		return
	}
	s.reindex(jobs, oldIndex)
	listedBefore := s.listed
	s.listed = true
	if s.watched && (listedBefore || failedBefore) {
		s.noteChanged(old, oldIndex, jobs, failedBefore)
	}
}

// noteAll notes every job of list as changed.
func (s *SharedObservation) noteAll(list []flinkapi.JobOverview) {
	for _, j := range list {
		s.changed[j.ID] = struct{}{}
	}
}

// reindex indexes jobs by id, in the map of the read before last
// (spare), keeping oldIndex as the next spare, and forgets the built
// observations of jobs no longer listed.
func (s *SharedObservation) reindex(jobs []flinkapi.JobOverview, oldIndex map[flinkapi.JobID]int) {
	s.index, s.spare = s.spare, oldIndex
	if s.index == nil {
		s.index = make(map[flinkapi.JobID]int, len(jobs))
	}
	clear(s.index)
	for i, j := range jobs {
		s.index[j.ID] = i
	}
	for id := range s.built {
		if _, ok := s.index[id]; !ok {
			delete(s.built, id)
		}
	}
	for id := range s.rest {
		if _, ok := s.index[id]; !ok {
			delete(s.rest, id)
		}
	}
}

// noteChanged notes the jobs that changed from old (indexed by
// oldIndex) to jobs: every one listed after a failed read, those listed
// anew or whose entry differs, and those no longer listed.
func (s *SharedObservation) noteChanged(old []flinkapi.JobOverview, oldIndex map[flinkapi.JobID]int, jobs []flinkapi.JobOverview, failedBefore bool) {
	for _, j := range jobs {
		i, ok := oldIndex[j.ID]
		if failedBefore || !ok || !sameEntry(old[i], j) {
			s.changed[j.ID] = struct{}{}
		}
	}
	for _, j := range old {
		if _, ok := s.index[j.ID]; !ok {
			s.changed[j.ID] = struct{}{}
		}
	}
}

// samePositions reports whether jobs lists the jobs of old in the same
// order, comparing each entry with the one at its position, and notes
// those that changed while watched (all of them after a failed read).
// When it reports false, the entries it noted are among those the
// comparison by id notes.
func (s *SharedObservation) samePositions(old, jobs []flinkapi.JobOverview, failedBefore bool) bool {
	if len(old) != len(jobs) {
		return false
	}
	for i := range jobs {
		a, b := &old[i], &jobs[i]
		if a.ID != b.ID {
			return false
		}
		if s.watched && (failedBefore || !sameEntryAt(a, b)) {
			s.changed[b.ID] = struct{}{}
		}
	}
	return true
}

// sameEntryAt is sameEntry of the entries at a and b, without copying
// them.
func sameEntryAt(a, b *flinkapi.JobOverview) bool {
	return a.State == b.State && a.Tasks == b.Tasks && a.LastModification == b.LastModification &&
		a.StartTime == b.StartTime && a.EndTime == b.EndTime && a.ID == b.ID && a.Name == b.Name &&
		a.JobType == b.JobType && a.SchedulerType == b.SchedulerType
}

// Changes reads the overview if it is older than MaxAge and returns the
// ids of the jobs whose entry changed since the last call (in no
// particular order): another state, other task counts, a new start or
// last modification, listed anew or no longer listed; every job it
// knows after a read failed, and again once one succeeds, so that their
// Controllers see it. Changes are noted from the first call on: the
// first returns those its own read found, if any.
//
// It is the informer's event stream: a caller that calls the Controllers
// of the jobs Changes names at once needs to call a job at rest only for
// its own schedule, and the Controllers sharing s say so: while Changes
// is called at least every three MaxAge, they call a job at rest back
// at its resync (Controller.Resync) or its next health check rather
// than after PollInterval, and are served an
// overview up to two MaxAge old: a watch that calls Changes every two
// MaxAge (as Run does) reads the overview once for the whole fleet per
// default poll. err is the read's error.
func (s *SharedObservation) Changes(ctx context.Context) ([]flinkapi.JobID, error) {
	s.mu.Lock()
	if !s.watched {
		s.watched, s.changed = true, map[flinkapi.JobID]struct{}{}
	}
	s.lastWatch = clockOr(s.Clock).Now()
	s.mu.Unlock()
	err := s.fresh(ctx, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.changed) == 0 {
		return nil, err
	}
	ids := make([]flinkapi.JobID, 0, len(s.changed))
	for id := range s.changed {
		ids = append(ids, id)
	}
	clear(s.changed)
	return ids, err
}

// watching reports whether Changes was called within the last three
// MaxAge: someone calls the Controllers of the jobs whose overview
// changed. A watch that stopped is not relied on.
func (s *SharedObservation) watching() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watchingAt(clockOr(s.Clock).Now())
}

// watchingAt is watching at now, with s.mu held.
func (s *SharedObservation) watchingAt(now time.Time) bool {
	return s.watched && now.Sub(s.lastWatch) <= 3*orDefault(s.MaxAge, DefaultSharedMaxAge)
}

// maxAge is how old an overview may be when it serves a Controller's
// call at now, with s.mu held: MaxAge, and two MaxAge while it is
// watched (Changes, which Run calls every two MaxAge: the watcher calls
// the Controllers of the jobs each read shows changed, so that a change
// waits no longer than the next read). Changes itself reads an overview
// older than MaxAge.
func (s *SharedObservation) maxAge(now time.Time) time.Duration {
	d := orDefault(s.MaxAge, DefaultSharedMaxAge)
	if s.watchingAt(now) {
		return 2 * d
	}
	return d
}

// Run calls Changes every two MaxAge (once per default poll) until ctx
// ends and hands every id it returns to changed (from Run's goroutine; a
// slow changed delays the next read): one read per interval serves the
// whole fleet (see Changes), and a change is handed to changed at the
// read that shows it. It returns ctx's error.
func (s *SharedObservation) Run(ctx context.Context, changed func([]flinkapi.JobID)) error {
	clock := clockOr(s.Clock)
	interval := 2 * orDefault(s.MaxAge, DefaultSharedMaxAge)
	for {
		if ids, _ := s.Changes(ctx); len(ids) > 0 {
			changed(ids)
		}
		s.mu.Lock()
		next := s.at.Add(interval).Sub(clock.Now())
		s.mu.Unlock()
		if err := clock.Sleep(ctx, max(next, interval/20)); err != nil {
			return err
		}
	}
}

// atRest reports whether the job of st needs no read of its details
// while the shared overview shows it running unchanged: the Controller
// has a SharedObservation, the job runs in the session cluster, and at
// the last call it ran the spec's job stably, settled, with nothing in
// flight or pending, and no policy of the spec reads the job's own
// details (the autoscaler, triggered checkpoints). Health checks read
// the job's checkpoint statistics alone (observeShared).
func (c *Controller) atRest(spec JobSpec, st *JobStatus) bool {
	return c.Shared != nil && c.Deployer == nil && ranAtRest(st) && specAtRest(spec, st)
}

// ranAtRest reports whether, at the last call, the job of st ran stably
// in its cluster, settled, with nothing in flight.
func ranAtRest(st *JobStatus) bool {
	return st.JobID != "" && st.Settled && st.Situation == SituationRunning && st.JobState == flinkapi.JobRunning &&
		!st.InFlight() && !st.Suspended && !deleted(st) && st.runsStably() && !awaitsOwnCheckpoint(st)
}

// specAtRest reports whether spec asks nothing of the job of st but
// that it runs: the job it runs, no pending restore or request, no
// adoption, and no policy that reads the job's own details.
func specAtRest(spec JobSpec, st *JobStatus) bool {
	return spec.State != DesiredSuspended && spec.Job.equal(st.Deployed) &&
		!spec.Restore.Pending(st.RestoreHandled) && len(spec.Requests.Pending(st.RequestsHandled)) == 0 &&
		spec.Adopt == "" && !spec.Autoscale.Enabled && spec.Checkpoints.Interval <= 0
}

// awaitsOwnCheckpoint reports whether the job of st replaced one whose
// retained checkpoints wait for its first checkpoint of its own.
func awaitsOwnCheckpoint(st *JobStatus) bool {
	for i := range st.Replaced {
		if r := &st.Replaced[i]; r.NewJobID == st.JobID && !r.Checkpointed {
			return true
		}
	}
	return false
}

// observeShared is the observation of a job at rest from the shared
// overview: ok when the overview shows it RUNNING with every task
// running; then no request of the job's own is sent, or, when the spec
// judges its health, one: its checkpoint statistics, the restarts
// carried over from the last health sample while the overview shows no
// task of the job changed state since that sample was taken (a failover
// restarts its tasks, which moves the overview's last modification).
// Otherwise the caller reads the job in full; changed says whether the
// overview showed the job changed.
func (c *Controller) observeShared(ctx context.Context, api API, spec JobSpec, st *JobStatus) (obs Observation, ok, changed bool) {
	ov, listed, err := c.Shared.job(ctx, st.JobID)
	if err != nil {
		return Observation{}, false, false
	}
	if !listed || ov.State != flinkapi.JobRunning || ov.Tasks.Total == 0 || ov.Tasks.Running != ov.Tasks.Total {
		return Observation{}, false, true
	}
	obs = Observation{Read: true, Reachable: true, Job: c.Shared.details(ov), Shared: true, Restarts: -1, FreeSlots: -1}
	if spec.Health.Action == "" {
		return obs, true, false
	}
	last, sampled := lastSample(st)
	if !sampled || last.Restarts < 0 || ov.LastModification.IsZero() || !ov.LastModification.Before(last.Time) {
		return Observation{}, false, false // tasks changed state since, or no count to carry: read in full
	}
	if !c.healthDue(st.JobID, last, c.clock().Now()) {
		obs.HealthDeferred = true
		return obs, true, false
	}
	stats, err := api.Checkpoints(ctx, st.JobID)
	if err != nil {
		return Observation{}, false, false
	}
	obs.Checkpoints, obs.CheckpointsRead, obs.Restarts, obs.Requests = stats, true, last.Restarts, 1
	return obs, true, false
}

// healthDue reports whether a job at rest has its health judged at this
// call: in its health slots (healthSlot: every other poll interval, half
// of the jobs in each, by their ids), and in any case once its last
// sample is nearly two intervals old.
func (c *Controller) healthDue(job flinkapi.JobID, last policy.HealthSample, now time.Time) bool {
	p := c.poll()
	if now.Sub(last.Time) >= 2*p-p/4 {
		return true
	}
	return healthSlot(job, now, p)
}

// healthSlot reports whether now is in one of the job's health slots:
// every other poll interval p (counted from the Unix epoch), half of the
// jobs in each, by a hash of their ids: the health checks of a fleet
// started at once spread over two polls.
func healthSlot(job flinkapi.JobID, now time.Time, p time.Duration) bool {
	return (now.UnixNano()/int64(p)+int64(jobHash(job)))%2 == 0
}

// nextHealthSlot is how long after now the job's next health slot
// (healthSlot) begins: within two poll intervals p.
func nextHealthSlot(job flinkapi.JobID, now time.Time, p time.Duration) time.Duration {
	next := now.UnixNano()/int64(p) + 1
	if (next+int64(jobHash(job)))%2 != 0 {
		next++
	}
	return time.Unix(0, next*int64(p)).Sub(now)
}

// resyncIn is how long after now the job's next resync comes, for a
// resync every r: at the job's own times, one every r from an offset in
// r its id's hash gives (so that the resyncs of a fleet called at once
// spread over r), the first at least r/2 from now. A job called at its
// resync is called back r later: the resyncs keep their interval.
func resyncIn(job flinkapi.JobID, now time.Time, r time.Duration) time.Duration {
	offset, _ := bits.Mul64(uint64(jobHash(job))<<32, uint64(r)) // in [0, r)
	from := now.Add(r / 2).UnixNano()
	wait := (int64(offset) - from) % int64(r)
	if wait < 0 {
		wait += int64(r)
	}
	return r/2 + time.Duration(wait)
}

// jobHash is the FNV-1a hash of a job's id: where its health checks and
// resyncs fall among those of its fleet.
func jobHash(job flinkapi.JobID) uint32 {
	h := fnv.New32a()
	h.Write([]byte(job))
	return h.Sum32()
}

// lastSample is the newest health sample of the status's job.
func lastSample(st *JobStatus) (policy.HealthSample, bool) {
	h := &st.Health
	if h.JobID != st.JobID || len(h.Samples) == 0 {
		return policy.HealthSample{}, false
	}
	return h.Samples[len(h.Samples)-1], true
}

// sharedDetails are the details of a running job as its overview entry
// shows them (without its duration, which changes at every read).
func sharedDetails(ov flinkapi.JobOverview) *flinkapi.JobDetails {
	return &flinkapi.JobDetails{ID: ov.ID, Name: ov.Name, State: ov.State, StartTime: ov.StartTime,
		Timestamps: map[flinkapi.JobState]time.Time{flinkapi.JobRunning: ov.LastModification},
		// The overview counts tasks, not vertices: one entry stands for
		// all of them, every one running.
		Vertices: []flinkapi.JobVertex{{ID: "overview", Name: ov.Name, Parallelism: ov.Tasks.Total, Status: string(flinkapi.JobRunning)}}}
}
