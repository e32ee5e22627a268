package flinktest

import (
	"fmt"
	"sort"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// cluster is the state of one JobManager process: its jobs, the results of
// asynchronous operations and the REST caches. A restart replaces it.
type cluster struct {
	s    *Server
	jobs []*job // in submission order
	byID map[flinkapi.JobID]*job
	// apps are the applications (2.3) by id; appOrder their ids in
	// submission order.
	apps     map[string]*application
	appOrder []string

	savepointOps  map[opKey]*operation // savepoints and stops share one cache
	checkpointOps map[opKey]*operation
	disposals     map[flinkapi.TriggerID]*operation

	graphCache map[flinkapi.JobID]cachedJob
	statsCache map[flinkapi.JobID]cachedJob

	horizon time.Time // the time advance is heading for
	mayWait bool      // a job may wait for slots in CREATED: scheduleWaiting looks

	// queue holds every job's next event, dirty the jobs whose next event
	// may have changed since it was queued: jobs a request looked up by
	// id, new jobs and jobs given slots. advance queues them again first.
	queue eventQueue
	dirty []*job
	// waiting are the jobs waiting for slots in CREATED (and possibly
	// some that stopped waiting), in submission order; usedSlots is the
	// sum of the parallelism of the jobs holding slots.
	waiting   []*job
	usedSlots int
	// expireAt is a time before which no result expires (see expire).
	expireAt time.Time
}

type cachedJob struct {
	at time.Time
	j  *job
}

type opKey struct {
	trigger flinkapi.TriggerID
	job     flinkapi.JobID
}

type opKind int

const (
	opSavepoint opKind = iota + 1
	opStop
	opCheckpoint
	opDisposal
)

// operation is an asynchronous operation of the JobManager.
type operation struct {
	kind         opKind
	key          opKey
	done         bool
	doneAt       time.Time
	completeAt   time.Time // disposals: when they finish
	path         string    // disposals: the savepoint to remove
	location     string
	checkpointID int64
	failure      *failureCause
	cancelJob    bool // savepoint with cancel-job: cancel when done
}

func (o *operation) succeed(t time.Time, location string, checkpointID int64) {
	o.done, o.doneAt, o.location, o.checkpointID = true, t, location, checkpointID
}

func (o *operation) fail(t time.Time, f *failureCause) {
	o.done, o.doneAt, o.failure = true, t, f
}

func newCluster(s *Server) *cluster {
	return &cluster{
		s:             s,
		byID:          map[flinkapi.JobID]*job{},
		apps:          map[string]*application{},
		savepointOps:  map[opKey]*operation{},
		checkpointOps: map[opKey]*operation{},
		disposals:     map[flinkapi.TriggerID]*operation{},
		graphCache:    map[flinkapi.JobID]cachedJob{},
		statsCache:    map[flinkapi.JobID]cachedJob{},
	}
}

// advance runs the cluster's clock-driven events up to now, in time order
// (ties: jobs in submission order, then disposals). The server's lock must
// be held.
//
// The jobs' next events wait in a heap that lives as long as the cluster.
// An event changes its own job and, through scheduleWaiting, the jobs it
// gives slots to; a request changes only jobs it looks up by id (job) or
// submits, which are marked dirty. Only those are queued again, so a
// request costs O(log jobs) plus O(log jobs) per event it catches up on,
// whatever the number of jobs.
func (s *Server) advance(now time.Time) {
	cl := s.cl
	cl.horizon = now
	q := &cl.queue
	cl.requeue()
	var disposals []*operation // pending, in the order they complete
	if len(cl.disposals) > 0 {
		disposals = cl.disposalsInOrder()
	}
	for {
		// The earliest job event; a stale entry is looked at again.
		jobIdx := -1
		var jobT time.Time
		var jobF func(time.Time)
		for len(q.ents) > 0 && !q.ents[0].t.After(now) {
			e := q.ents[0]
			t, f := cl.nextEvent(cl.jobs[e.idx])
			if f != nil && t.Equal(e.t) {
				jobIdx, jobT, jobF = e.idx, t, f
				break
			}
			q.update(cl, e.idx)
		}
		bestT, bestF := jobT, jobF
		if len(disposals) > 0 {
			if op := disposals[0]; !op.completeAt.After(now) && (bestF == nil || op.completeAt.Before(bestT)) {
				bestT, bestF = op.completeAt, func(t time.Time) { s.finishDisposal(op, t) }
				jobIdx = -1
				disposals = disposals[1:]
			}
		}
		if bestF == nil {
			break
		}
		bestF(bestT)
		if jobIdx >= 0 {
			q.update(cl, jobIdx)
		}
		cl.scheduleWaiting(bestT)
		cl.requeue()
	}
	s.syncShared(now)
	cl.expire(now)
}

// job returns the job of the id (nil if none) for a request or a method of
// the Server, which may change it: its next event is looked at again.
func (cl *cluster) job(id flinkapi.JobID) *job {
	j := cl.byID[id]
	if j != nil {
		cl.markDirty(j)
	}
	return j
}

// markDirty has advance queue the job's next event again.
func (cl *cluster) markDirty(j *job) {
	if !j.dirty {
		j.dirty = true
		cl.dirty = append(cl.dirty, j)
	}
}

// requeue puts the dirty jobs in the queue at their next events.
func (cl *cluster) requeue() {
	q := &cl.queue
	for len(q.pos) < len(cl.jobs) {
		q.pos = append(q.pos, -1)
	}
	for _, j := range cl.dirty {
		j.dirty = false
		q.update(cl, j.idx)
	}
	clear(cl.dirty)
	cl.dirty = cl.dirty[:0]
}

// eventQueue is a min-heap of the jobs' next event times, ties by the
// job's index in cluster.jobs (submission order).
type eventQueue struct {
	ents []queued
	pos  []int // per job index: its place in ents, -1 if none
}

type queued struct {
	t   time.Time
	idx int
}

// update puts job i at the time of its next event, or takes it out if it
// has none.
func (q *eventQueue) update(cl *cluster, i int) {
	t, f := cl.nextEvent(cl.jobs[i])
	p := q.pos[i]
	switch {
	case f == nil && p < 0:
	case f == nil:
		last := len(q.ents) - 1
		q.swap(p, last)
		q.ents = q.ents[:last]
		q.pos[i] = -1
		if p < last {
			q.fix(p)
		}
	case p < 0:
		q.ents = append(q.ents, queued{t, i})
		q.pos[i] = len(q.ents) - 1
		q.up(len(q.ents) - 1)
	default:
		q.ents[p].t = t
		q.fix(p)
	}
}

func (q *eventQueue) less(a, b int) bool {
	x, y := q.ents[a], q.ents[b]
	return x.t.Before(y.t) || x.t.Equal(y.t) && x.idx < y.idx
}

func (q *eventQueue) swap(a, b int) {
	q.ents[a], q.ents[b] = q.ents[b], q.ents[a]
	q.pos[q.ents[a].idx], q.pos[q.ents[b].idx] = a, b
}

func (q *eventQueue) fix(p int) {
	if !q.down(p) {
		q.up(p)
	}
}

func (q *eventQueue) up(p int) {
	for p > 0 {
		parent := (p - 1) / 2
		if !q.less(p, parent) {
			return
		}
		q.swap(p, parent)
		p = parent
	}
}

// down moves the entry at p down; it reports whether it moved.
func (q *eventQueue) down(p int) bool {
	start := p
	for {
		c := 2*p + 1
		if c >= len(q.ents) {
			break
		}
		if r := c + 1; r < len(q.ents) && q.less(r, c) {
			c = r
		}
		if !q.less(c, p) {
			break
		}
		q.swap(p, c)
		p = c
	}
	return p > start
}

// nextEvent returns the job's earliest pending event and what it does.
func (cl *cluster) nextEvent(j *job) (time.Time, func(time.Time)) {
	var bestT time.Time
	var bestF func(time.Time)
	consider := func(t time.Time, f func(time.Time)) {
		if t.IsZero() || f == nil {
			return
		}
		if bestF == nil || t.Before(bestT) {
			bestT, bestF = t, f
		}
	}
	if j.phase != nil {
		consider(j.phaseAt, j.phase)
	}
	for _, p := range j.pending {
		if !p.jobFailAt.IsZero() && p.jobFailAt.Before(p.completeAt) {
			consider(p.jobFailAt, func(t time.Time) {
				cl.failJob(j, t, userCause(p.jobFailCause))
			})
			continue
		}
		consider(p.completeAt, func(t time.Time) { cl.completeCheckpoint(j, p, t) })
	}
	if idx := j.failEventIndex(); idx >= 0 {
		at := j.baseAt.Add(timeForEvents(idx+1-j.base, j.spec.rateMilli))
		consider(at, func(t time.Time) { cl.counterFails(j, t, idx) })
	}
	if j.spec.records > 0 && j.counting && j.tasksRunning {
		at := j.baseAt.Add(timeForEvents(j.spec.records-j.base, j.spec.rateMilli))
		consider(at, func(t time.Time) { cl.sourceEnds(j, t) })
	}
	if j.checkpointing && j.tasksRunning && j.stopping == nil && !j.nextTrigger.IsZero() {
		consider(j.nextTrigger, func(t time.Time) { cl.periodicCheckpoint(j, t) })
	}
	if j.waitingSlots {
		consider(j.slotDeadline, func(t time.Time) { cl.slotsTimedOut(j, t) })
	}
	return bestT, bestF
}

// disposalsInOrder returns the pending disposals by completion time, then
// trigger id.
func (cl *cluster) disposalsInOrder() []*operation {
	var out []*operation
	for _, op := range cl.disposals {
		if !op.done {
			out = append(out, op)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		return x.completeAt.Before(y.completeAt) || x.completeAt.Equal(y.completeAt) && x.key.trigger < y.key.trigger
	})
	return out
}

// expire forgets results older than the store duration. It looks at them
// only once one may have expired: a result that ends after a look ends at
// or after the look's time, as events and requests come in time order, so
// none expires before the earliest expiry of those done at the look, or
// before the look's time plus the store duration.
func (cl *cluster) expire(now time.Time) {
	if now.Before(cl.expireAt) {
		return
	}
	ttl := cl.s.cfg.storeDuration
	cl.expireAt = now.Add(ttl)
	for _, ops := range []map[opKey]*operation{cl.savepointOps, cl.checkpointOps} {
		for k, op := range ops {
			cl.expireOp(op, now, ttl, func() { delete(ops, k) })
		}
	}
	for k, op := range cl.disposals {
		cl.expireOp(op, now, ttl, func() { delete(cl.disposals, k) })
	}
}

// expireOp removes a result that expired at now, or brings the next look
// forward to when it expires.
func (cl *cluster) expireOp(op *operation, now time.Time, ttl time.Duration, remove func()) {
	if !op.done {
		return
	}
	at := op.doneAt.Add(ttl)
	switch {
	case !now.Before(at):
		remove()
	case at.Before(cl.expireAt):
		cl.expireAt = at
	}
}

// freeSlots returns the slots no job holds.
func (cl *cluster) freeSlots() int {
	return cl.s.cfg.slots - cl.usedSlots
}

// scheduleWaiting gives free slots to jobs waiting in CREATED, oldest
// first; the jobs it schedules are queued again.
func (cl *cluster) scheduleWaiting(t time.Time) {
	if !cl.mayWait {
		return
	}
	free := cl.freeSlots()
	kept := cl.waiting[:0]
	for _, j := range cl.waiting {
		if !j.waitingSlots {
			j.waitListed = false
			continue
		}
		if j.state != flinkapi.JobCreated || free < j.parallelism {
			kept = append(kept, j)
			continue
		}
		free -= j.parallelism
		j.waitingSlots, j.waitListed = false, false
		j.usesSlots = true
		cl.usedSlots += j.parallelism
		j.schedule(t.Add(scheduleDelay), func(t time.Time) { cl.toRunning(j, t) })
		cl.markDirty(j)
	}
	clear(cl.waiting[len(kept):])
	cl.waiting = kept
	if len(kept) == 0 {
		cl.mayWait = false // until toCreated makes a job wait again
	}
}

// waitForSlots makes the job wait in CREATED for slots.
func (cl *cluster) waitForSlots(j *job) {
	j.waitingSlots = true
	cl.mayWait = true
	if j.waitListed {
		return
	}
	j.waitListed = true
	// Jobs start waiting about in submission order: look from the end.
	i := len(cl.waiting)
	for i > 0 && cl.waiting[i-1].idx > j.idx {
		i--
	}
	cl.waiting = append(cl.waiting, nil)
	copy(cl.waiting[i+1:], cl.waiting[i:])
	cl.waiting[i] = j
}

// submit adds a job in INITIALIZING at t, restoring from initial (nil:
// none) or failing to start when restorePath names no snapshot.
func (cl *cluster) submit(j *job, t time.Time, restorePath string) {
	j.ts = map[flinkapi.JobState]time.Time{}
	j.submitted = t
	j.restartsLeft = j.spec.restartAttempts
	j.nextID = 1
	j.setState(flinkapi.JobInitializing, t)
	j.s, j.idx = cl.s, len(cl.jobs)
	cl.jobs = append(cl.jobs, j)
	cl.byID[j.id] = j
	cl.markDirty(j)
	if j.restoreFails(restorePath) {
		// The jar run waits for the job to initialise and reports the
		// failure; the job stays, FAILED.
		cl.initFails(j, t, restorePath)
		return
	}
	j.schedule(t.Add(initDelay), func(t time.Time) { cl.toCreated(j, t) })
}

func (cl *cluster) toCreated(j *job, t time.Time) {
	j.unschedule()
	j.setState(flinkapi.JobCreated, t)
	if snap := j.initial; snap != nil {
		j.restored = &restoreInfo{id: snap.checkpointID, at: t, savepoint: snap.savepoint, location: snap.location}
		j.counts.Restored++
		j.nextID = snap.checkpointID + 1
	}
	cl.waitForSlots(j)
	j.slotDeadline = t.Add(slotTimeout)
	cl.scheduleWaiting(t)
}

func (cl *cluster) toRunning(j *job, t time.Time) {
	j.unschedule()
	j.setState(flinkapi.JobRunning, t)
	cl.recordRescale(j, flinkapi.RescaleInitialSchedule, 0, t)
	j.schedule(t.Add(deployDelay), func(t time.Time) { cl.tasksUp(j, t) })
}

// tasksUp: every task runs; the source starts from the restored state.
func (cl *cluster) tasksUp(j *job, t time.Time) {
	j.unschedule()
	j.tasksRunning = true
	j.tasksStart = t
	j.lastChange = t
	start := int64(0)
	if j.restored != nil {
		if snap := cl.s.snapshots[j.restored.location]; snap != nil {
			start = snap.events
		} else if j.initial != nil {
			start = j.initial.events
		}
	}
	cl.s.syncFiles(j, t)
	// A --fail-once counter started after the mark was written does not
	// fail.
	j.failedBefore = j.spec.failOnce && cl.s.failMarks[j.spec.out]
	j.resume(t, start)
	j.filesN = start
	j.attemptStart = start
	if j.checkpointing {
		j.nextTrigger = t.Add(j.interval)
	}
}

// restoreFails reports whether j, restored from path (none: ""), fails
// to start: path names no snapshot, or j cannot restore it.
func (j *job) restoreFails(path string) bool {
	return path != "" && (j.initial == nil || j.restoreFault != "")
}

// restoreCause is the exception that fails the restore of j from path:
// its restoreFault, else a path that names no snapshot.
func (j *job) restoreCause(path string) jexc {
	if j.restoreFault != "" {
		return jexc{class: classIllegalState, msg: j.restoreFault, frames: framesRestore}
	}
	return jexc{class: classFileNotFound, frames: framesFileSystem, msg: fmt.Sprintf(
		"Cannot find checkpoint or savepoint file/directory '%s' on file system '%s'.", path, scheme(path))}
}

func (cl *cluster) initFails(j *job, t time.Time, restorePath string) {
	j.unschedule()
	j.initFailed = true
	cause := j.restoreCause(restorePath)
	e := &exceptionEntry{class: classJobInit, at: t, trace: trace(
		jexc{class: classJobInit, msg: "Could not start the JobMaster.", frames: framesJobMaster},
		wrapped(classCompletion, wrapped(classRuntime, cause, nil), framesCompletion),
		wrapped(classRuntime, cause, framesFileSystem),
		cause,
	)}
	j.exceptions = append(j.exceptions, e)
	j.setState(flinkapi.JobFailed, t)
	cl.terminate(j, t, flinkapi.JobFailed)
}

// periodicCheckpoint triggers the job's next periodic checkpoint. When the
// clock jumps far ahead it skips checkpoints that would drop out of the
// history anyway, counting them.
func (cl *cluster) periodicCheckpoint(j *job, t time.Time) {
	horizon := cl.horizon
	if other := cl.nextOtherEvent(j); !other.IsZero() && other.Before(horizon) {
		horizon = other
	}
	if n := int64(horizon.Sub(t)/j.interval) - historySize - 2; n > 0 && len(j.pending) == 0 {
		// n checkpoints complete without anything else happening to the job.
		j.counts.Total += n
		j.counts.Completed += n
		j.nextID += n
		t = t.Add(time.Duration(n) * j.interval)
		for _, c := range j.checkpoints {
			if c.kind == typeCheckpoint && c.disk != nil {
				c.disk.removed = true
			}
		}
	}
	cl.triggerCheckpoint(j, t, typeCheckpoint, nil)
	j.nextTrigger = t.Add(j.interval)
}

// nextOtherEvent is the job's next event other than a periodic checkpoint.
func (cl *cluster) nextOtherEvent(j *job) time.Time {
	saved := j.checkpointing
	j.checkpointing = false
	t, _ := cl.nextEvent(j)
	j.checkpointing = saved
	return t
}

// checkpointDuration is how long a checkpoint of j takes.
func (j *job) checkpointDuration() time.Duration {
	d := time.Duration(maxCheckpointMs) * time.Millisecond
	if j.interval > 0 && j.interval/2 < d {
		d = j.interval / 2
	}
	return d + j.spec.snapshotDelay
}

// triggerCheckpoint starts a checkpoint (kind CHECKPOINT) of a job whose
// tasks run. op, if set, is completed with the checkpoint id.
func (cl *cluster) triggerCheckpoint(j *job, t time.Time, kind string, op *operation) *checkpoint {
	c := &checkpoint{
		id: j.nextID, kind: kind, status: flinkapi.CheckpointInProgress, trigger: t,
		completeAt: t.Add(j.checkpointDuration()), events: j.eventsAt(t), op: op, subtasks: j.subtasks(),
	}
	j.nextID++
	c.location = fmt.Sprintf("file:%s/%s/chk-%d", cl.s.cfg.checkpointDir, j.id, c.id)
	j.counts.Total++
	j.counts.InProgress++
	j.addCheckpoint(c)
	return c
}

// addCheckpoint records a new pending checkpoint and forgets old ones that
// neither the history nor the "latest" entries show any more.
func (j *job) addCheckpoint(c *checkpoint) {
	j.checkpoints = append(j.checkpoints, c)
	j.pending = append(j.pending, c)
	if len(j.checkpoints) < 4*historySize {
		return
	}
	keep := map[*checkpoint]bool{}
	for _, h := range j.history() {
		keep[h] = true
	}
	for _, p := range j.pending {
		keep[p] = true
	}
	for _, l := range []*checkpoint{j.latest(false, flinkapi.CheckpointCompleted), j.latest(true, flinkapi.CheckpointCompleted), j.latestAny(flinkapi.CheckpointFailed)} {
		if l != nil {
			keep[l] = true
		}
	}
	kept := j.checkpoints[:0]
	for _, o := range j.checkpoints {
		if keep[o] {
			kept = append(kept, o)
		}
	}
	clear(j.checkpoints[len(kept):])
	j.checkpoints = kept
}

// triggerSavepoint starts a savepoint, or the synchronous savepoint of a
// stop, of a job whose tasks run.
func (cl *cluster) triggerSavepoint(j *job, t time.Time, stop bool, dir string, format string, op *operation) *checkpoint {
	kind, took := typeSavepoint, cl.s.cfg.savepointDuration
	if stop {
		kind = typeSyncSavepoint
		cl.s.syncFiles(j, t)
		j.freeze(t)
		if cl.s.cfg.stopDurationSet {
			took = cl.s.cfg.stopDuration
		}
	}
	c := &checkpoint{
		id: j.nextID, kind: kind, status: flinkapi.CheckpointInProgress, trigger: t,
		completeAt: t.Add(took + j.spec.snapshotDelay), events: j.eventsAt(t), op: op, subtasks: j.subtasks(),
		format: format,
	}
	j.nextID++
	c.location = savepointLocation(dir, j.id, cl.s.newHex()[:12])
	j.counts.Total++
	j.counts.InProgress++
	j.addCheckpoint(c)
	if stop {
		j.stopping = c
	}
	return c
}

func removePending(j *job, c *checkpoint) {
	for i, p := range j.pending {
		if p == c {
			j.pending = append(j.pending[:i], j.pending[i+1:]...)
			return
		}
	}
}

// completeCheckpoint ends a pending checkpoint at t: it completes, or fails
// when a fault says so.
func (cl *cluster) completeCheckpoint(j *job, c *checkpoint, t time.Time) {
	if c.failWith != "" {
		cl.failCheckpoint(j, c, t, c.failWith)
		return
	}
	removePending(j, c)
	c.status = flinkapi.CheckpointCompleted
	c.ack = t
	c.completeAt = time.Time{}
	j.counts.InProgress--
	j.counts.Completed++
	snap := &snapshot{location: c.location, job: j.id, checkpointID: c.id, savepoint: c.isSavepoint(), events: c.events, keys: j.spec.keys,
		taken: c.trigger, completed: t, counter: j.spec.counterID(), counterMax: j.maxParallelism(j.spec.counterID()),
		sourceState: j.vertexStateSize(sourceVertexID), counterState: j.vertexStateSize(j.spec.counterID())}
	if c.op != nil && c.op.kind != opCheckpoint {
		snap.trigger = c.op.key.trigger
	}
	c.disk = snap
	cl.s.snapshots[snap.location] = snap
	if c.kind == typeCheckpoint {
		// state.checkpoints.num-retained: 1; older checkpoints are subsumed.
		for _, o := range j.checkpoints {
			if o != c && o.kind == typeCheckpoint && o.disk != nil && o.id < c.id {
				o.disk.removed = true
			}
		}
		if j.owned != nil && j.owned.checkpointID < c.id {
			j.owned.removed = true
		}
	}
	if op := c.op; op != nil {
		if op.kind == opCheckpoint {
			op.succeed(t, "", c.id)
		} else if c.stopFailure == "" {
			op.succeed(t, c.location, 0)
		}
	}
	switch {
	case c.kind == typeSyncSavepoint && c.stopFailure != "":
		// The savepoint exists; the job fails on its way to FINISHED.
		j.stopping = nil
		stopExc := jexc{class: classStopping, msg: fmt.Sprintf("A savepoint has been created at: %s, but the corresponding job %s failed during stopping. The savepoint is consistent, but might have uncommitted transactions. If you want to commit the transaction please restart a job from this savepoint.", c.location, j.id), frames: framesStopping}
		inconsistent := jexc{class: classFlinkException, msg: "Inconsistent execution state after stopping with savepoint. At least one execution is still in one of the following states: FAILED.", frames: framesStopping}
		if c.op != nil {
			c.op.fail(t, completionFailure(stopExc, inconsistent))
		}
		cl.failJob(j, t, userCause(c.stopFailure))
	case c.kind == typeSyncSavepoint:
		j.stopping = nil
		cl.s.syncFiles(j, t)
		j.setState(flinkapi.JobFinished, t)
		cl.terminate(j, t, flinkapi.JobFinished)
	case c.op != nil && c.op.cancelJob:
		cl.cancel(j, t)
	}
}

// failCheckpoint fails a pending checkpoint with msg (a CheckpointException
// message). A failed stop leaves the job running.
func (cl *cluster) failCheckpoint(j *job, c *checkpoint, t time.Time, msg string) {
	removePending(j, c)
	c.status = flinkapi.CheckpointFailed
	c.failedAt = t
	c.failureMsg = msg
	c.completeAt = time.Time{}
	j.counts.InProgress--
	j.counts.Failed++
	if c.op != nil && !c.op.done {
		c.op.fail(t, completionFailure(jexc{class: classCheckpoint, msg: msg, frames: framesCheckpoint}))
	}
	if j.stopping == c {
		j.stopping = nil
		if j.state == flinkapi.JobRunning && j.tasksRunning {
			j.resume(t, j.eventsAt(t))
			if j.checkpointing {
				j.nextTrigger = t.Add(j.interval)
			}
		}
	}
}

// abortPending fails every pending checkpoint of the job with msg.
func (cl *cluster) abortPending(j *job, t time.Time, msg string) {
	for len(j.pending) > 0 {
		cl.failCheckpoint(j, j.pending[0], t, msg)
	}
	j.stopping = nil
}

// notRunningFailure is the failure of a checkpoint or savepoint triggered
// while the job's tasks do not all run.
func notRunningFailure(j *job) jexc {
	return jexc{class: classCheckpoint, frames: framesTasksNotRunning, msg: fmt.Sprintf(
		"Checkpoint triggering task %s (1/%d) of job %s is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.",
		sourceVertexName, j.parallelism, j.id)}
}

// userCause turns a fault's cause ("a.b.SomeException: message" or just a
// message) into an exception.
func userCause(cause string) jexc {
	if cause == "" {
		cause = "flinktest: injected task failure"
	}
	if class, msg, ok := cutClass(cause); ok {
		return jexc{class: class, msg: msg, frames: framesTask}
	}
	return jexc{class: classRuntime, msg: cause, frames: framesTask}
}

// cutClass splits "a.b.C: message" into class and message.
func cutClass(s string) (class, msg string, ok bool) {
	c, m, found := cutString(s, ": ")
	if !flinkapi.IsJavaClassName(c) {
		return "", "", false
	}
	if !found {
		return c, "", true
	}
	return c, m, true
}

func cutString(s, sep string) (string, string, bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// counterFails: a key reached --fail-at at event index idx.
func (cl *cluster) counterFails(j *job, t time.Time, idx int64) {
	k := int64(j.spec.keys)
	key := fmt.Sprintf("key-%d", idx%k)
	count := idx/k + 1
	// The count is written before the function throws.
	cl.s.syncFiles(j, t)
	if files := cl.s.outDirs[j.spec.out]; j.spec.out != "" && files != nil {
		files[key] = count
	} else if j.spec.out != "" {
		cl.s.outDirs[j.spec.out] = map[string]int64{key: count}
	}
	if j.spec.failOnce {
		cl.s.failMarks[j.spec.out] = true // written before the function throws
	}
	j.base, j.baseAt = idx+1, t
	j.setCounting(false)
	j.filesN = idx + 1
	cause := jexc{class: classIllegalState, frames: framesCounter,
		msg: fmt.Sprintf("flinkkit test job: %s reached count %d (--fail-at %d)", key, count, j.spec.failAt) + labelled(j.spec.label)}
	cl.failJob(j, t, cause)
}

// failJob handles a task failure at t: the job restarts from its latest
// checkpoint if its restart strategy allows, else it fails.
func (cl *cluster) failJob(j *job, t time.Time, cause jexc) {
	if j.state.IsGloballyTerminal() || j.state == flinkapi.JobFailing {
		return
	}
	cl.s.syncFiles(j, t)
	if j.counting {
		j.freeze(t)
	}
	task := &exceptionEntry{class: cause.class, trace: trace(cause), at: t, task: j.taskName()}
	j.tasksRunning = false
	j.tasksEnd = t
	if j.restartsLeft > 0 {
		j.restartsLeft--
		cl.abortPending(j, t, "FailoverRegion is restarting.")
		j.exceptions = append(j.exceptions, task)
		j.setState(flinkapi.JobRestarting, t)
		j.schedule(t.Add(j.spec.restartDelay), func(t time.Time) { cl.restartJob(j, t) })
		return
	}
	strategy := "NoRestartBackoffTimeStrategy"
	if j.spec.restartAttempts > 0 {
		strategy = fmt.Sprintf("FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=%d, backoffTimeMS=%d)", j.spec.restartAttempts, j.spec.restartDelay.Milliseconds())
	}
	root := jexc{class: classJobException, msg: "Recovery is suppressed by " + strategy, frames: framesFailover}
	j.setState(flinkapi.JobFailing, t)
	cl.abortPending(j, t, "Checkpoint Coordinator is suspending.")
	failedAt := t.Add(failingDelay)
	j.exceptions = append(j.exceptions, &exceptionEntry{class: classJobException, trace: trace(root, cause), at: failedAt, concurrent: []*exceptionEntry{task}})
	j.schedule(failedAt, func(t time.Time) {
		j.unschedule()
		j.setState(flinkapi.JobFailed, t)
		cl.terminate(j, t, flinkapi.JobFailed)
	})
}

// restartJob restarts a failed job's tasks from its latest checkpoint.
func (cl *cluster) restartJob(j *job, t time.Time) {
	j.unschedule()
	j.attempt++
	if c := j.latest(false, flinkapi.CheckpointCompleted); c != nil && c.disk != nil && !c.disk.removed {
		j.restored = &restoreInfo{id: c.id, at: t, savepoint: false, location: c.location}
		j.counts.Restored++
	} else if j.restored != nil {
		// No checkpoint yet: the snapshot the job started from again.
		r := *j.restored
		r.at = t
		j.restored = &r
		j.counts.Restored++
	}
	j.setState(flinkapi.JobRunning, t)
	j.schedule(t.Add(deployDelay), func(t time.Time) { cl.tasksUp(j, t) })
}

func (cl *cluster) slotsTimedOut(j *job, t time.Time) {
	j.waitingSlots = false
	cause := jexc{class: classNoResource, msg: "Could not acquire the minimum required resources.", frames: framesFailover}
	j.exceptions = append(j.exceptions, &exceptionEntry{class: classNoResource, trace: trace(cause), at: t})
	j.setState(flinkapi.JobFailed, t)
	cl.terminate(j, t, flinkapi.JobFailed)
}

// cancel starts cancelling a job at t.
func (cl *cluster) cancel(j *job, t time.Time) {
	if j.state.IsGloballyTerminal() || j.state == flinkapi.JobCancelling {
		return
	}
	cl.s.syncFiles(j, t)
	if j.counting {
		j.freeze(t)
	}
	if j.state == flinkapi.JobInitializing {
		j.initFailed = true
	}
	j.setState(flinkapi.JobCancelling, t)
	cl.abortPending(j, t, "Checkpoint Coordinator is suspending.")
	j.waitingSlots = false
	j.schedule(t.Add(cancelDelay), func(t time.Time) {
		j.unschedule()
		j.setState(flinkapi.JobCanceled, t)
		cl.terminate(j, t, flinkapi.JobCanceled)
	})
}

// terminate releases what a job in a globally terminal state held and
// removes its checkpoints unless they are retained.
func (cl *cluster) terminate(j *job, t time.Time, how flinkapi.JobState) {
	cl.s.syncFiles(j, t)
	if j.counting {
		j.freeze(t)
	}
	j.unschedule()
	cl.abortPending(j, t, "Checkpoint Coordinator is suspending.")
	if j.tasksRunning || j.tasksEnd.IsZero() {
		j.tasksEnd = t
	}
	j.tasksRunning = false
	if j.usesSlots {
		cl.usedSlots -= j.parallelism
	}
	j.usesSlots = false
	j.waitingSlots = false
	j.nextTrigger = time.Time{}
	retain := how == flinkapi.JobCanceled && j.retainOnCancel || how == flinkapi.JobFailed && j.retainOnFail
	if !retain {
		// Flink's CompletedCheckpointStore, shut down in a globally
		// terminal state, discards every checkpoint it holds whose
		// properties say so: the job's own, the one a failover recovered
		// it from included; never a snapshot it was submitted with.
		for _, c := range j.checkpoints {
			if c.kind == typeCheckpoint && c.disk != nil {
				c.disk.removed = true
			}
		}
		if j.owned != nil {
			j.owned.removed = true
		}
	}
}

// syncFiles writes the .count files of the events the job processed up to
// t: after each event the test job writes the key's new count.
func (s *Server) syncFiles(j *job, t time.Time) {
	if j.spec.out == "" || !j.counting {
		return
	}
	n := j.eventsAt(t)
	if n <= j.filesN {
		return
	}
	files := s.outDirs[j.spec.out]
	if files == nil {
		files = map[string]int64{}
		s.outDirs[j.spec.out] = files
	}
	k := int64(j.spec.keys)
	for m := max(j.filesN, n-k); m < n; m++ {
		files[fmt.Sprintf("key-%d", m%k)] = m/k + 1
	}
	j.filesN = n
}

// scheme returns the file system scheme of a location, as Flink names it
// in errors.
func scheme(loc string) string {
	for i := 0; i < len(loc); i++ {
		if loc[i] == ':' {
			return loc[:i]
		}
		if loc[i] == '/' {
			break
		}
	}
	return "file"
}

// labelled is the end of a --fail-at failure's message that names the
// job's --label, as the counter job's.
func labelled(label string) string {
	if label == "" {
		return ""
	}
	return " label " + label
}
