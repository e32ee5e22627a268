package randdriver

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// Routes the checks read, as flinktest names them.
const (
	routeRun        = "POST /jars/:jarid/run"
	routeUpload     = "POST /jars/upload"
	routeCancel     = "PATCH /jobs/:jobid"
	routeStop       = "POST /jobs/:jobid/stop"
	routeSavepoint  = "POST /jobs/:jobid/savepoints"
	routeDetails    = "GET /jobs/:jobid"
	routeDisposal   = "POST /savepoint-disposal"
	checkpointRoute = "/checkpoints"
)

// refreshInterval is how long the fake serves job details from its
// cache (flinktest's default, Flink's web.refresh-interval).
const refreshInterval = 3 * time.Second

// pathJob is the job id of a /jobs/:jobid/... path.
func pathJob(path string) flinkapi.JobID {
	_, rest, ok := strings.Cut(path, "/jobs/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return flinkapi.JobID(id)
}

// pathJar is the jar id of a /jars/:jarid/run path.
func pathJar(path string) flinkapi.JarID {
	_, rest, ok := strings.Cut(path, "/jars/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return flinkapi.JarID(id)
}

// mutating reports whether q changes the cluster.
func mutating(q flinktest.Request) bool {
	switch q.Route {
	case routeRun, routeUpload, routeCancel, routeStop, routeSavepoint, routeDisposal:
		return true
	}
	return false
}

// took reports whether q took effect on the fake: answered with success,
// or dropped after it took effect.
func took(q flinktest.Request) bool {
	return q.Status >= 200 && q.Status < 300 || q.Status == 0 && strings.Contains(q.Fault, "after")
}

func argValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// world is what the fake holds after a call.
type world struct {
	jobs  map[flinkapi.JobID]flinktest.JobInfo
	snaps []flinktest.Snapshot
	srv   *flinktest.Server
}

func (w *world) snapshots() []flinktest.Snapshot {
	if w.snaps == nil {
		w.snaps = w.srv.Snapshots()
	}
	return w.snaps
}

func (w *world) snapshot(loc string) (flinktest.Snapshot, bool) {
	for _, s := range w.snapshots() {
		if s.Location == loc {
			return s, true
		}
	}
	return flinktest.Snapshot{}, false
}

func (d *driver) world() *world {
	w := &world{jobs: map[flinkapi.JobID]flinktest.JobInfo{}, srv: d.srv}
	for _, j := range d.srv.Jobs() {
		w.jobs[j.ID] = j
	}
	return w
}

// violateKey records a violation of class c once per key.
func (d *driver) violateKey(c Class, key string, format string, args ...any) {
	k := string(c) + "|" + key
	if d.reported[k] {
		return
	}
	d.reported[k] = true
	d.violate(c, format, args...)
}

// checkCall checks the invariants after a call: before is the status
// stored before it, st the status it returned, now when it began, sent
// its requests and liveBefore the jobs that lived when it began.
func (d *driver) checkCall(ctx context.Context, before, st lifecycle.JobStatus, res lifecycle.Result, now time.Time,
	sent []flinktest.Request, liveBefore map[flinkapi.JobID]flinkapi.JobState) {
	after := d.now()
	if len(sent) > lifecycle.MaxRequestsPerCall {
		d.violate(TooManyRequests, "a call sent %d requests, more than %d: %v", len(sent), lifecycle.MaxRequestsPerCall, routesOf(sent))
	}
	for _, q := range sent {
		if q.Route == routeUpload && took(q) {
			d.refreshJars(ctx)
			break
		}
	}
	d.noteTriggers(sent)
	w := d.world()
	anyRunning := false
	for id, j := range w.jobs {
		if j.TasksRunning {
			d.tasksSeen[id] = after
		}
		if j.State == flinkapi.JobRunning {
			anyRunning = true
			d.seenRunning[id] = after
			if d.runningSince[id].IsZero() {
				d.runningSince[id] = after
			}
		} else {
			delete(d.runningSince, id)
		}
	}
	if anyRunning || d.lastRunning.IsZero() {
		d.lastRunning = after
	}

	for _, q := range sent {
		switch {
		case q.Route == routeRun:
			d.checkRun(ctx, before, st, q, w)
		case q.Route == routeCancel && took(q):
			d.checkCancel(before, st, q, liveBefore)
			d.act.stops = append(d.act.stops, pathJob(q.Path))
			if d.act.cancels == nil {
				d.act.cancels = map[flinkapi.JobID]bool{}
			}
			d.act.cancels[pathJob(q.Path)] = true
		case (q.Route == routeStop || q.Route == routeSavepoint && reqlog.BodyOf(q).CancelJob) && took(q):
			d.act.stops = append(d.act.stops, pathJob(q.Path))
		}
	}
	for _, id := range d.act.stops {
		if j, ok := w.jobs[id]; ok && (j.State == flinkapi.JobFinished || j.State == flinkapi.JobCanceled && d.act.cancels[id]) {
			d.act.stopped = true
		}
	}

	d.learnRefused(st)
	if st.Latest.Location != "" && d.refused[st.Latest.Location] {
		d.violateKey(RefusedRestoreBecameLatest, st.Latest.Location, "the status's Latest is %s, a restore path Flink refused", st.Latest.Location)
	}

	observed := false
	for _, q := range sent {
		if q.Route == routeDetails && q.Status == 200 && st.JobID != "" && pathJob(q.Path) == st.JobID {
			observed = true
		}
	}
	running := d.spec.State != lifecycle.DesiredSuspended && !d.deleting
	// Flink serves job details from a cache (web.refresh-interval, 3s
	// on the fake): a job seen running that recently may still read as
	// RUNNING.
	stale := after.Sub(d.seenRunning[st.JobID]) <= refreshInterval
	if running && observed && !stale && st.Converged(d.spec) {
		j, ok := w.jobs[st.JobID]
		if !ok || j.State != flinkapi.JobRunning {
			state := flinkapi.JobState("unknown to Flink")
			if ok {
				state = j.State
			}
			switch {
			case d.reused:
				d.violateKey(StatusReuseSilent, string(st.JobID), "the status reused after Delete is converged while job %s is %s", st.JobID, state)
			case ok && j.State == flinkapi.JobFinished && d.stoppedByUser(w, st.JobID):
				d.violateKey(ExternalStopMisread, string(st.JobID), "job %s, stopped with a savepoint from the Flink UI, is FINISHED and the status is converged (%s/%s: %s)",
					st.JobID, st.State, st.Reason, st.Message)
			default:
				d.violateKey(ConvergedNotRunning, string(st.JobID), "converged (%s/%s) while job %s is %s", st.State, st.Reason, st.JobID, state)
			}
		}
	}
	if running && observed && st.Converged(d.spec) {
		if j, ok := w.jobs[st.JobID]; ok && j.State == flinkapi.JobRunning {
			d.checkStable(st, j, w, after)
		}
	}
	d.checkDisposals(ctx, st, sent, w)
	d.checkDetached(st, sent)

	// An action that ended.
	ended := st.Action != "" && !st.InFlight() && (before.InFlight() || actionKey(before) != actionKey(st))
	if ended {
		d.checkEnded(st, w)
	}
	// Deploying at rest is right for a job Flink shows starting
	// (INITIALIZING after a failover, for example) and for one waiting
	// for task slots; not for an action that ended without a job.
	if !st.InFlight() && st.Action != "" && st.State == policy.Deploying && st.Situation != lifecycle.SituationStarting &&
		st.Reason != lifecycle.ReasonNotEnoughSlots {
		d.violateKey(StatusReuseSilent, "deploying|"+actionKey(st), "action %s ended (%s: %s) and the deployment still says Deploying", st.Action, st.Progress.Outcome, st.Progress.Reason)
	}

	// Two live jobs.
	live := len(d.ownLive())
	if live > 1 && !(st.Action == lifecycle.ActionBlueGreen && st.InFlight()) {
		if !d.twoLive {
			d.violate(TwoLiveJobs, "%d jobs live after a call (action %s, in flight %v, %s): %v", live, st.Action, st.InFlight(), st.Reason, d.ownLive())
		}
		d.twoLive = true
	} else {
		d.twoLive = false
	}

	d.checkProgress(st, w, after, observed)
	d.checkReuse(st, sent, after)
}

// learnRefused notes a refusal the controller's status records: the
// action ended SubmitFailed or JobFailed from a path Flink refused. That
// is how the controller learns of it, from Flink's answer to the run or
// from the failed job it finds; an answer lost on the way (a connection
// reset after Flink refused) tells it nothing, and a job Flink then
// forgets (a JobManager failover forgets ended jobs) is not found. The
// note counts once the status is stored (see call).
func (d *driver) learnRefused(st lifecycle.JobStatus) {
	p := st.Progress
	if !p.Done() || p.Outcome != lifecycle.OutcomeSubmitFailed && p.Outcome != lifecycle.OutcomeJobFailed || !d.refused[p.Replace.RestoreFrom] {
		return
	}
	d.refusedNow[p.Replace.RestoreFrom] = ""
	if p.Replace.Request.Path == p.Replace.RestoreFrom {
		d.refusedNow[p.Replace.RestoreFrom] = p.Replace.Request.Token
	}
}

// checkRefusedRun checks that a jar run of the controller does not start
// a job from a restore path Flink refused before, once the controller
// knows of the refusal (refusedKnown, see learnRefused). A refusal it
// was not told of does not count: Flink's answer came in a call that
// crashed or whose status write failed (the caller goes on from the
// status before), the answer was lost on the way, or the status was
// replaced by a fresh one. Sending the run again is then how the
// controller learns the answer (with the same job id, Flink answers it
// as a duplicate and nothing more runs). And a new restore request
// (another token) for the same path asks for it again: running it once
// more is what the user asked for.
func (d *driver) checkRefusedRun(st lifecycle.JobStatus, id flinkapi.JobID, path string) {
	tok, ok := d.refusedKnown[path]
	if path == "" || !ok {
		return
	}
	if r := st.Progress.Replace.Request; r.Path == path && r.Token != "" && r.Token != tok {
		return
	}
	d.violateKey(RefusedRestoreBecameLatest, "run|"+path, "%s ran job %s from %s, a restore path Flink had refused before", st.Action, id, path)
}

// checkRun checks a jar run of the controller: the state it starts the
// new job from.
func (d *driver) checkRun(ctx context.Context, before, st lifecycle.JobStatus, q flinktest.Request, w *world) {
	b := reqlog.BodyOf(q)
	id, path := flinkapi.JobID(b.JobID), b.SavepointPath
	info, known := w.jobs[id]
	if d.reused {
		d.runSinceReuse = true
	}
	exists := path != "" && d.exists(path)
	d.checkRefusedRun(st, id, path)
	// A refusal is Flink's answer to the path: an error the fake itself
	// gave (an injected one, a 503 say, never reached the job), or the
	// job it holds for the run.
	if path != "" && !exists && (q.Status >= 400 && q.Fault == "" || known && info.RestoredFrom == "") {
		d.refused[path] = true
		d.res.Seen["restore paths refused"]++
		if known {
			d.refusedJobs[id] = true
			// The job the fake holds under the id: the run's (failed
			// at once), or, for a run answered as a duplicate, the one
			// the id had. A detached job whose id a run took is gone.
			d.submitted[id] = info.Submitted
		}
		d.checkDiscarded(st, id, path, w)
		return
	}
	if !took(q) || !known {
		return
	}
	d.submitted[id] = info.Submitted
	delete(d.refusedJobs, id)
	d.checkJar(st, q)
	d.checkRollbackBuild(st, q, id)
	d.res.Seen["jobs started"]++
	if d.baselinePath != "" {
		d.res.Seen["jobs started after a restore"]++
	}
	// A run carries out a restore request when it restores the spec's
	// pending one, or the one the action in flight recorded when it
	// started (Progress.Replace.Request): a request the spec replaced since is
	// still carried out by the action that took it, as the user asked,
	// and the newer one by the next action. Reading only the spec's
	// request would take that deliberate restore for older state chosen
	// by the controller.
	restoring := path != "" && (path == d.spec.Restore.Path && d.spec.Restore.Pending(before.RestoreHandled) ||
		before.InFlight() && path == before.Progress.Replace.Request.Path)
	switch {
	case restoring, st.Action == lifecycle.ActionRollback:
		d.baseline, d.baselinePath = q.Time, path
		if restoring {
			d.res.Seen["restore requests carried out"]++
		}
		return
	case path == "" && d.act.mode == policy.UpgradeStateless:
		d.baseline, d.baselinePath = q.Time, ""
		return
	}
	var got flinktest.Snapshot
	if path != "" {
		s, ok := w.snapshot(path)
		if !ok {
			return // a path the fake never wrote: refused above
		}
		got = s
		if !d.baseline.IsZero() && d.baselinePath != "" && path != d.baselinePath && s.Completed.Before(d.baseline) {
			d.violateKey(RestartToReplacedSavepoint, "run|"+string(id), "%s ran job %s from %s (taken %v), state that the restore from %s replaced",
				st.Action, id, path, d.rel(s.Taken), d.baselinePath)
			return
		}
	}
	newest, ok := d.newestRestorePoint(ctx, before, st, w, q.Time, id, d.acceptsCheckpoints(st), d.unseenAtRun(q, w))
	if !ok || path != "" && !got.Taken.Before(newest.Taken) {
		return
	}
	what := "without state"
	if path != "" {
		what = "from " + path + " taken " + d.rel(got.Taken).String()
	}
	msg := "%s started job %s %s while %s (taken %v, savepoint %v) was the newest restore point (mode at the action's start %s, now %s)"
	args := []any{st.Action, id, what, newest.Location, d.rel(newest.Taken), newest.Savepoint, d.act.mode, d.spec.Update.Mode}
	switch {
	case d.userTriggers[string(newest.TriggerID)]:
		d.violateKey(ExternalStopMisread, "run|"+string(id), msg, args...)
	case d.modeChanged():
		d.violateKey(PolicyChangeMidAction, "run|"+string(id), msg, args...)
	case d.met404():
		d.violateKey(TransientTakenAsFinal, "run|"+string(id), msg+" after a 404 on a checkpoint route", args...)
	default:
		d.violateKey(OlderStateRestored, "run|"+string(id), msg, args...)
	}
}

// modeChanged reports whether the spec's update mode changed while the
// action was in flight and differs now from the one it started with.
func (d *driver) modeChanged() bool {
	mode := d.spec.Update.Mode
	if mode == "" {
		mode = policy.UpgradeSavepoint
	}
	return d.act.policyChanged && mode != d.act.mode
}

// rel is t on the run's clock, from its start.
func (d *driver) rel(t time.Time) time.Duration { return t.Sub(d.t0) }

// met404 reports whether the action in flight met an injected 404 on a
// checkpoint route.
func (d *driver) met404() bool {
	for _, q := range d.ctrlReqs[min(d.act.startReq, len(d.ctrlReqs)):] {
		if strings.Contains(q.Route, checkpointRoute) && strings.Contains(q.Fault, "404") {
			return true
		}
	}
	return false
}

func (d *driver) exists(loc string) bool {
	ok, _ := d.srv.SavepointExists(loc)
	return ok
}

// acceptsCheckpoints reports whether the action that ended in st may
// restore a retained checkpoint: a restart, or an update in LastState
// mode or with FallbackToLastState (of the spec the action started
// with). Savepoint mode without the fallback restores savepoints only,
// by the user's choice.
func (d *driver) acceptsCheckpoints(st lifecycle.JobStatus) bool {
	up := d.spec.Update
	if st.ActionSpec != nil {
		up = st.ActionSpec.Update
	}
	return st.Action == lifecycle.ActionRestart || up.Mode == policy.UpgradeLastState || up.FallbackToLastState
}

// newestRestorePoint is the newest state of the deployment a job started
// at t (job started) should start from: savepoints and retained
// checkpoints that exist, of jobs that ended, completed since the last
// deliberate restore, and known to the controller: the status or the
// store names the location, or it is in the checkpoint history of a job
// the status names and Flink still knows. unseen, if set, leaves out the snapshots the controller could not know
// of (see unseenAtRun), unless the status or the store names them.
func (d *driver) newestRestorePoint(ctx context.Context, before, st lifecycle.JobStatus, w *world, t time.Time, started flinkapi.JobID,
	checkpoints bool, unseen func(flinktest.Snapshot) bool) (flinktest.Snapshot, bool) {
	named := map[string]bool{before.Latest.Location: true, st.Latest.Location: true, before.Progress.Savepoint.Location: true, before.Progress.Replace.RestoreFrom: true,
		st.Progress.Savepoint.Location: true}
	for _, r := range before.Savepoints.Records {
		named[r.Location] = true
	}
	for _, r := range st.Savepoints.Records {
		named[r.Location] = true
	}
	if rec, ok, _ := d.store.Get(ctx, storeName); ok {
		named[rec.Location] = true
	}
	delete(named, "")
	related := map[flinkapi.JobID]bool{before.JobID: true, st.JobID: true, before.Progress.JobID: true, before.Progress.Submit.NewJobID: true,
		st.Progress.JobID: true, st.Progress.Submit.NewJobID: true}
	delete(related, "")
	var best flinktest.Snapshot
	found := false
	for _, s := range w.snapshots() {
		if s.Removed || s.Completed.After(t) || s.Job == started || !s.Savepoint && !checkpoints {
			continue
		}
		if !d.baseline.IsZero() && s.Completed.Before(d.baseline) && s.Location != d.baselinePath {
			continue
		}
		j, known := w.jobs[s.Job]
		if known && abandoned(w, j, s) {
			continue
		}
		known = known && w.served(j, s)
		if known && !j.State.IsGloballyTerminal() {
			continue // the job lives: its state is not lost
		}
		if !named[s.Location] && !(known && related[s.Job]) {
			continue // neither recorded nor in the history of a job the status names that Flink knows
		}
		if !named[s.Location] && unseen != nil && unseen(s) {
			continue
		}
		if !found || s.Taken.After(best.Taken) {
			best, found = s, true
		}
	}
	return best, found
}

// abandoned reports whether savepoint s of job j belongs to an execution
// j left: j failed over after s completed (a task failure, or a
// JobManager that failed over with high availability) and restored a
// checkpoint taken before s (not the path a jar run started it from).
// Flink recovers a job from its latest completed checkpoint, never from
// an intermediate savepoint: the job's state since derives from that
// checkpoint, and an exactly-once sink aborted the transactions opened
// after it, those s holds pending included. s is then no newer state of
// the job than the checkpoint, which the controller times at its restore.
func abandoned(w *world, j flinktest.JobInfo, s flinktest.Snapshot) bool {
	if !s.Savepoint || s.Job != j.ID || j.Restored == "" || j.Restored == j.RestoredFrom || !j.RestoredAt.After(s.Completed) {
		return false
	}
	r, ok := w.snapshot(j.Restored)
	return ok && !r.Savepoint && r.Taken.Before(s.Taken)
}

// served reports whether Flink's REST API serves snapshot s in the
// checkpoint history of job j, the job of s's id the JobManager knows
// now. A job id names several jobs over a run: the controller derives it
// from the deployment, so a deployment created again, or a jar run Flink
// refused (it leaves a FAILED job), reuses it. A snapshot of an earlier
// job of the same id, one a JobManager restarted without high
// availability forgot, is served by no route: the controller can learn it
// only from a status or the store that names it (a storage listing would
// find it; the controller does not list storage). Served are j's own
// snapshots (completed since its submission) and the one it restored
// from at its submission; a checkpoint a failed-over JobManager
// recovered j from only until j completes a checkpoint of its own, which
// subsumes it (Flink then discards it; the fake keeps its files), and
// only once j restored from it: Flink shows such a checkpoint only as
// its checkpoint statistics' latest restored, which a job recovered by a
// failover gets when it is created; a job that ended while it
// initialised (cancelled at once) shows none, and no route names the
// checkpoint then.
func (w *world) served(j flinktest.JobInfo, s flinktest.Snapshot) bool {
	if !s.Completed.Before(j.Submitted) {
		return true
	}
	if s.Location != j.Initial {
		return false
	}
	if s.Savepoint || s.Location == j.RestoredFrom {
		return true
	}
	if j.Restored != s.Location {
		return false
	}
	for _, x := range w.snapshots() {
		if x.Job == j.ID && !x.Savepoint && !x.Completed.Before(j.Submitted) {
			return false
		}
	}
	return true
}

// unseenAtRun returns whether a snapshot is one the controller could not
// know of when it sent the jar run q: a snapshot of a job that a user
// stopped with a savepoint (from the Flink UI, beside the controller),
// completed after the controller's last answered request about that job
// before q. Whatever the controller reads of a job shows only what
// completed by then, and a job someone else stops while the controller
// is not looking (between its last read of it and the run, which reads
// nothing of the old job: a blue/green upgrade reads the old job once
// more after its savepoint completed, then uploads and runs the jar)
// ends with state that no request of the controller could show before
// the run. A job the controller stopped itself is not left out: it
// decided the stop after its own reads.
func (d *driver) unseenAtRun(q flinktest.Request, w *world) func(flinktest.Snapshot) bool {
	last := map[flinkapi.JobID]time.Time{}
	for _, r := range d.ctrlReqs {
		if r.Route == q.Route && r.Path == q.Path && r.Body == q.Body && r.Time.Equal(q.Time) {
			break
		}
		if id := pathJob(r.Path); id != "" && r.Status >= 200 && r.Status < 300 {
			last[id] = r.Time
		}
	}
	return func(s flinktest.Snapshot) bool {
		read, ok := last[s.Job]
		return ok && d.stoppedByUser(w, s.Job) && s.Completed.After(read)
	}
}

// checkCancel checks a cancel of the controller: a running job of a
// state-keeping mode is cancelled only with a restore point recorded.
func (d *driver) checkCancel(before, st lifecycle.JobStatus, q flinktest.Request, liveBefore map[flinkapi.JobID]flinkapi.JobState) {
	id := pathJob(q.Path)
	if liveBefore[id] != flinkapi.JobRunning || st.Action == lifecycle.ActionRollback || st.Action == lifecycle.ActionHealthRestart {
		return
	}
	if d.spec.Restore.CancelWithoutSavepoint || before.Progress.Savepoint.Location != "" || before.Progress.Replace.RestoreFrom != "" {
		return
	}
	switch {
	case d.act.mode == policy.UpgradeStateless:
	case d.spec.Update.Mode == policy.UpgradeStateless && d.modeChanged():
		d.violateKey(PolicyChangeMidAction, "cancel|"+string(id), "%s cancelled running job %s without a restore point after the update mode changed to Stateless mid-action", st.Action, id)
	default:
		d.violateKey(StateLossStop, "cancel|"+string(id), "%s (mode %s) cancelled running job %s with no restore point recorded before", st.Action, d.act.mode, id)
	}
}

// checkJar checks that a job started after the jar was rebuilt at the
// same path runs the jar uploaded since.
func (d *driver) checkJar(st lifecycle.JobStatus, q flinktest.Request) {
	if d.rebuiltAt.IsZero() || q.Time.Before(d.rebuiltAt) {
		return
	}
	switch st.Action {
	case lifecycle.ActionDeploy, lifecycle.ActionUpgrade, lifecycle.ActionBlueGreen:
	default:
		return
	}
	v, err := strconv.Atoi(strings.TrimPrefix(argValue(st.Target.Args, "--name"), "v"))
	if err != nil || v < d.rebuiltVersion {
		return // the action deploys a template from before the rebuild
	}
	jar := pathJar(q.Path)
	up, ok := d.jarUploaded[jar]
	// Flink lists a jar's upload time in milliseconds: an upload in the
	// millisecond of the rebuild, after it, is listed as before it.
	if ok && up.Before(d.rebuiltAt.Truncate(time.Millisecond)) {
		d.violateKey(SameJarPathRunsOld, "jar|"+string(jar)+"|"+d.rebuiltAt.String(), "%s ran jar %s uploaded at %v, before the jar was rebuilt at the same path at %v",
			st.Action, jar, d.rel(up), d.rel(d.rebuiltAt))
	}
}

// refreshJars records the upload times of the jars the fake holds.
func (d *driver) refreshJars(ctx context.Context) {
	jars, err := d.user.ListJars(ctx)
	if err != nil {
		return
	}
	for _, j := range jars {
		if _, ok := d.jarUploaded[j.ID]; !ok {
			d.jarUploaded[j.ID] = j.Uploaded
		}
		if _, ok := d.jarBuild[j.ID]; !ok {
			d.jarBuild[j.ID] = d.fileBuild
		}
	}
}

// checkEnded checks an action that ended in the call.
func (d *driver) checkEnded(st lifecycle.JobStatus, w *world) {
	p := st.Progress
	if p.Savepoint.Location != "" {
		if s, ok := w.snapshot(p.Savepoint.Location); ok {
			var first time.Time
			for _, q := range d.ctrlReqs[min(d.act.startReq, len(d.ctrlReqs)):] {
				if (q.Route == routeSavepoint || q.Route == routeStop) && !q.Time.Before(d.act.start) {
					first = q.Time
					break
				}
			}
			// A user's stop savepoint is its job's final state, unless
			// the job ran on after it (a stop that failed the job).
			final := d.userTriggers[string(s.TriggerID)] && endedWith(w, s)
			if !first.IsZero() && s.Taken.Before(first) && !final {
				who := "an earlier trigger of the controller"
				if d.userTriggers[string(s.TriggerID)] {
					who = "the user"
				}
				newest := s
				for _, x := range w.snapshots() {
					if x.Job == s.Job && x.Taken.After(newest.Taken) {
						newest = x
					}
				}
				d.violateKey(StaleSavepointTaken, p.Savepoint.Location+"|"+string(st.Action), "%s ended %s with savepoint %s, taken at %v by %s, before its own first trigger at %v; the job's newest snapshot is %s taken at %v",
					st.Action, p.Outcome, p.Savepoint.Location, d.rel(s.Taken), who, d.rel(first), newest.Location, d.rel(newest.Taken))
			}
		}
	}
	if p.Outcome == lifecycle.OutcomeBlocked && d.act.stopped && d.modeChanged() {
		d.violateKey(PolicyChangeMidAction, "blocked|"+actionKey(st), "%s ended Blocked (%s) after it had stopped the job, once the spec's policies changed mid-action",
			st.Action, p.Reason)
	}
}

// endedWith reports whether snapshot s is the state job s.Job ended
// with: the job is gone or FINISHED; or it ended otherwise (a stop whose
// savepoint completed and then the job failed on its way to FINISHED)
// and took nothing after s. Such a savepoint is the job's newest state,
// whoever triggered it and whenever: an action that records it, even
// though it completed before the action's own trigger, records exactly
// what Flink serves as the job's newest restore point, and nothing newer
// exists for it to have found.
func endedWith(w *world, s flinktest.Snapshot) bool {
	j, known := w.jobs[s.Job]
	switch {
	case !known || j.State == flinkapi.JobFinished:
		return true
	case !j.State.IsGloballyTerminal():
		return false
	}
	for _, x := range w.snapshots() {
		if x.Job == s.Job && x.Taken.After(s.Taken) {
			return false
		}
	}
	return true
}

// checkProgress checks that the deployment does not stay stuck: actions
// and deletes end, blue/green deployments restart, checkpoint-less jobs
// converge, jobs that cannot run are reported.
func (d *driver) checkProgress(st lifecycle.JobStatus, w *world, after time.Time, observed bool) {
	if t := d.holding("action|"+d.act.start.String(), st.InFlight()); t > ActionWithin {
		d.violateKey(Stuck, "action|"+d.act.start.String(), "%s in flight for %v without the caller's absences (phase %s)", st.Action, t, st.Progress.Phase)
	}
	if t := d.holding("delete|"+d.deleteSince.String(), d.deleting); t > ActionWithin {
		d.violateKey(Stuck, "delete|"+d.deleteSince.String(), "Delete not done after %v without the caller's absences (%s/%s: %s)", t, st.State, st.Reason, st.Message)
	}
	over := d.spec.Job.Parallelism > d.slots
	// Once the job is torn down (Deleted), what is left of the Delete
	// (its disposals, audits while the storage fails) waits on the
	// storage, not on a job that cannot run: Stuck bounds it.
	if t := d.holding("delete-over|"+d.deleteSince.String(), d.deleting && over && !st.Deleted); t > DeleteWithin {
		d.violateKey(StuckUndeployable, "delete|"+d.deleteSince.String(), "the Delete of a job that cannot run (parallelism %d, %d slots) not done after %v without the caller's absences (%s/%s)",
			d.spec.Job.Parallelism, d.slots, t, st.State, st.Reason)
	}
	running := !d.deleting && d.spec.State != lifecycle.DesiredSuspended
	text := strings.ToLower(st.Reason + " " + st.Message + " " + st.Failure)
	silent := !strings.Contains(text, "slot") && !strings.Contains(text, "resource")
	if t := d.holding("over|"+d.spec.Job.Fingerprint(), running && over && silent); t > StuckAfter {
		d.violateKey(StuckUndeployable, "report|"+d.spec.Job.Fingerprint(), "parallelism %d above the %d slots for %v without the caller's absences, and the status does not say so: %s/%s: %s",
			d.spec.Job.Parallelism, d.slots, t, st.State, st.Reason, st.Message)
	}
	j, known := w.jobs[st.JobID]
	pending := st.Deployed.Fingerprint() != d.spec.Job.Fingerprint()
	down := st.JobID != "" && !st.Suspended && (!known || j.State == flinkapi.JobFailed)
	bgPending := running && d.spec.BlueGreen.Enabled && pending
	bg := bgPending && down && !over && d.spec.Restart.Mode == policy.RestartFromLatestState &&
		st.Restarts < d.spec.Restart.WithDefaults().MaxRestarts && len(d.ownLive()) == 0
	if t := d.holding("bg|"+d.spec.Job.Fingerprint(), bg); t > StuckAfter {
		d.violateKey(StuckBlueGreen, "bg|"+d.spec.Job.Fingerprint(), "blue/green with a change pending: job %s is %v and nothing has run for %v without the caller's absences (%s/%s: %s)",
			st.JobID, j.State, t, st.State, st.Reason, st.Message)
	}
	d.checkFailed(st, w, running, over, bgPending)
	background := st.Action == lifecycle.ActionSavepoint || st.Action == lifecycle.ActionDispose // beside the running job
	unstable := argValue(d.spec.Job.Args, "--checkpoint-interval") == "0" && running && (!st.InFlight() || background) && !pending && st.FailedJob == "" &&
		!d.spec.Restore.Pending(st.RestoreHandled) && !over && !st.Converged(d.spec) && known && j.State == flinkapi.JobRunning &&
		st.JobID == d.liveJob()
	if t := d.holding("stable|"+string(st.JobID), unstable); t > StuckAfter && observed {
		d.violateKey(NeverStable, "stable|"+string(st.JobID), "job %s without checkpointing has run the spec's job for %v and is not converged (%s/%s: %s)",
			st.JobID, t, st.State, st.Reason, st.Message)
	}
}

// stoppedByUser reports whether the newest savepoint of job id, the one
// a FINISHED job ended with, was taken by a user's stop.
func (d *driver) stoppedByUser(w *world, id flinkapi.JobID) bool {
	var last flinktest.Snapshot
	for _, s := range w.snapshots() {
		if s.Job == id && s.Savepoint && !s.Taken.Before(last.Taken) {
			last = s
		}
	}
	return last.TriggerID != "" && d.userTriggers[string(last.TriggerID)]
}

// liveJob is the one job that lives, if one does.
func (d *driver) liveJob() flinkapi.JobID {
	live := d.ownLive()
	if len(live) != 1 {
		return ""
	}
	for id := range live {
		return id
	}
	return ""
}

// checkReuse checks a status reused after Delete: it deploys the job
// again, or says why not.
func (d *driver) checkReuse(st lifecycle.JobStatus, sent []flinktest.Request, after time.Time) {
	quiet := d.reused && !d.deleting && d.spec.State != lifecycle.DesiredSuspended && !d.runSinceReuse &&
		(st.State == policy.Running || st.State == policy.Succeeded || st.Converged(d.spec))
	if t := d.holding("reuse|"+d.reusedAt.String(), quiet); t > StuckAfter {
		d.violateKey(StatusReuseSilent, "reuse|"+d.reusedAt.String(), "the status reused after Delete deployed nothing for %v and says %s/%s: %s",
			t, st.State, st.Reason, st.Message)
	}
}

// checkDeleted checks the end of a Delete: the store keeps the newest
// state, nothing lives, and the status says so.
func (d *driver) checkDeleted(ctx context.Context, st lifecycle.JobStatus, res lifecycle.Result) {
	rec, ok, _ := d.store.Get(ctx, storeName)
	d.tracef("delete done (%s); the store holds %q taken %v", res.Outcome, rec.Location, d.rel(rec.Time))
	w := d.world()
	kept := time.Time{} // the time of the stored state, from the fake's disk
	if ok {
		kept = rec.Time
		if s, found := w.snapshot(rec.Location); found {
			kept = s.Taken
		}
	}
	older := func(loc string, taken time.Time) bool { return !ok || rec.Location != loc && kept.Before(taken) }
	detached := st.Detached != "" && st.Detached == st.JobID
	switch latest, found := w.snapshot(st.Latest.Location); {
	case d.spec.Update.Mode == policy.UpgradeStateless, detached: // a detached job runs on with its state
	case st.Latest.Location != "" && found && !latest.Removed && older(latest.Location, latest.Taken):
		d.violate(DeleteLostState, "Delete done; the status's Latest is %s (taken %v) and the store holds %q (taken %v)",
			st.Latest.Location, d.rel(latest.Taken), rec.Location, d.rel(kept))
	default:
		newest, found := d.newestRestorePoint(ctx, st, st, w, d.now(), "", true, nil)
		if found && older(newest.Location, newest.Taken) {
			c := DeleteLostState
			if d.userTriggers[string(newest.TriggerID)] {
				c = ExternalStopMisread
			}
			d.violate(c, "Delete done; the newest restore point is %s (taken %v, savepoint %v) and the store holds %q (taken %v)",
				newest.Location, d.rel(newest.Taken), newest.Savepoint, rec.Location, d.rel(kept))
		}
	}
	if st.State == policy.Stopping || st.JobState == flinkapi.JobRunning && !detached {
		d.violate(StatusReuseSilent, "Delete done and the status still says %s, job %s %s", st.State, st.JobID, st.JobState)
	}
	live := d.ownLive()
	if detached {
		delete(live, st.Detached)
	}
	if len(live) > 0 {
		d.violate(LiveAfterDelete, "Delete done (%s) and jobs live: %v", res.Outcome, live)
	}
	d.checkLedger(ctx, st)
}
