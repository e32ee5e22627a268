package randdriver

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// norm is a location as the fake names it ("file:/a/b" for "/a/b/",
// "file:///a/b" and "file:/a/b"), so that locations compare equal
// however a status spells them.
func norm(loc string) string {
	loc = strings.TrimSpace(loc)
	switch {
	case loc == "":
		return ""
	case strings.HasPrefix(loc, "/"):
		return "file:" + path.Clean(loc)
	case strings.HasPrefix(loc, "file://localhost/"):
		return "file:" + path.Clean(strings.TrimPrefix(loc, "file://localhost"))
	case strings.HasPrefix(loc, "file:"):
		return "file:" + path.Clean("/"+strings.TrimLeft(strings.TrimPrefix(loc, "file:"), "/"))
	}
	return strings.TrimRight(loc, "/")
}

// disposalPath is the savepoint a disposal request names.
func disposalPath(q flinktest.Request) string {
	var b struct {
		Path string `json:"savepoint-path"`
	}
	_ = json.Unmarshal([]byte(q.Body), &b)
	return b.Path
}

// neverDispose is the set of savepoints that may not be disposed of at a
// call that ended in st, each with why: the newest of the history, the
// status's Latest, UpgradeFrom (a rollback's state, but in a Delete),
// the restore point of the last action, a Delete's final savepoint (its
// teardown's), the store's record, the spec's restore request's path,
// and the one the deployment's live job started from while the history
// holds no savepoint of that job: a savepoint is self-contained, and the
// job's own is newer state than the one it started from (an import or a
// checkpoint does not count).
func (d *driver) neverDispose(ctx context.Context, st lifecycle.JobStatus, w *world) map[string]string {
	set := map[string]string{}
	add := func(loc, why string) {
		switch n := norm(loc); {
		case n == "":
		case set[n] == "":
			set[n] = why
		default:
			set[n] += ", " + why
		}
	}
	add(st.Latest.Location, "the status's Latest")
	if !d.deleting {
		// A Delete disposes of the savepoints a rollback would restore
		// (SavepointPolicy.DisposeOnDelete): no rollback follows it.
		add(st.UpgradeFrom.Location, "UpgradeFrom")
	}
	add(st.Progress.Replace.RestoreFrom, "the restore point of "+string(st.Action))
	if st.Action == lifecycle.ActionTeardown {
		add(st.Progress.Savepoint.Location, "the Delete's final savepoint")
	}
	if rec, ok, _ := d.store.Get(ctx, storeName); ok {
		add(rec.Location, "the store's record")
	}
	add(d.spec.Restore.Path, "the spec's restore request")
	newest := -1
	for i, r := range st.Savepoints.Records {
		if newest < 0 || r.Time.After(st.Savepoints.Records[newest].Time) {
			newest = i
		}
	}
	if newest >= 0 {
		add(st.Savepoints.Records[newest].Location, "the newest savepoint of the history")
	}
	if j, ok := w.jobs[st.JobID]; ok && !j.State.IsGloballyTerminal() && !hasOwnSavepoint(st, j.RestoredFrom) {
		add(j.RestoredFrom, "the savepoint job "+string(st.JobID)+" started from, and its only state in the history")
	}
	return set
}

// hasOwnSavepoint reports whether the history of st holds a savepoint
// the job st.JobID took, other than from.
func hasOwnSavepoint(st lifecycle.JobStatus, from string) bool {
	for _, r := range st.Savepoints.Records {
		if r.JobID == st.JobID && norm(r.Location) != norm(from) {
			return true
		}
	}
	return false
}

// checkDisposals checks the disposals a call sent: none of a savepoint
// of the never-dispose set of the call.
func (d *driver) checkDisposals(ctx context.Context, st lifecycle.JobStatus, sent []flinktest.Request, w *world) {
	var set map[string]string
	for _, q := range sent {
		if q.Route != routeDisposal || !took(q) {
			continue
		}
		d.res.Seen["disposals sent"]++
		if set == nil {
			set = d.neverDispose(ctx, st, w)
		}
		loc := disposalPath(q)
		if why := set[norm(loc)]; why != "" {
			d.violateKey(NeverDisposeDisposed, norm(loc), "%s (%s/%s) sent the disposal of %s, %s", d.callName(), st.Action, st.Progress.Phase, loc, why)
		}
	}
}

// callName names the call in progress: Reconcile or Delete.
func (d *driver) callName() string {
	if d.deleting {
		return "Delete"
	}
	return "Reconcile"
}

// noteTriggers records the trigger ids of the savepoints and stops of
// the controller's requests.
func (d *driver) noteTriggers(sent []flinktest.Request) {
	for _, q := range sent {
		if q.Route == routeSavepoint || q.Route == routeStop {
			if t := reqlog.BodyOf(q).TriggerID; t != "" {
				d.ctrlTriggers[t] = true
			}
		}
	}
}

// checkLedger checks that every savepoint the controller triggered (of
// any job) since the caller last dropped its status is in the history
// of st (or is its Latest, UpgradeFrom, the last action's savepoint, the
// store's record, the disposal in progress) or disposed of. It runs
// once no action is in flight: at the end of a Delete, and at the end
// of a run.
func (d *driver) checkLedger(ctx context.Context, st lifecycle.JobStatus) {
	known := map[string]bool{norm(st.Latest.Location): true, norm(st.UpgradeFrom.Location): true, norm(st.Progress.Savepoint.Location): true,
		norm(st.Disposing.Location): true}
	for _, r := range st.Savepoints.Records {
		known[norm(r.Location)] = true
	}
	if rec, ok, _ := d.store.Get(ctx, storeName); ok {
		known[norm(rec.Location)] = true
	}
	for _, s := range d.srv.Snapshots() {
		if l := st.LateSavepoint; l.Pending() && l.TriggerID == s.TriggerID {
			continue // still looked up: the status records it
		}
		if !s.Savepoint || s.Removed || !d.ctrlTriggers[string(s.TriggerID)] || s.Completed.Before(d.ledgerSince) || known[norm(s.Location)] ||
			!d.learnable(s) && !d.foundOnStorage(st, s) {
			continue
		}
		d.violateKey(SavepointLeaked, norm(s.Location), "savepoint %s of job %s (trigger %s, completed %v) is on storage, neither in the history nor disposed of (%s %s/%s)",
			s.Location, s.Job, s.TriggerID, d.rel(s.Completed), st.Action, st.State, st.Reason)
	}
}

// foundOnStorage reports whether the controller could have found
// savepoint s on storage: the status's last audit of the Storage ran
// after s completed, read every directory it listed (no failure, no
// truncation) and no listing was cut short since s completed.
func (d *driver) foundOnStorage(st lifecycle.JobStatus, s flinktest.Snapshot) bool {
	a := st.Audit
	return a != nil && !a.Truncated && a.ListFailures == 0 && a.Time.After(s.Completed) && d.storage.lastCut.Before(s.Completed)
}

// learnable reports whether the controller could learn of savepoint s
// from Flink: one of its requests about s's job was answered after s
// completed and before Flink forgot it (a JobManager restart, with high
// availability or not, forgets trigger ids and the checkpoint history;
// a run under the same id starts another job). A savepoint Flink forgot
// before the controller asked shows only on storage, which the
// controller does not list for savepoints. A restart at the instant s
// completed forgets it too: the fake completes what is due as it
// restarts, and the request that met the restart got no answer.
func (d *driver) learnable(s flinktest.Snapshot) bool {
	forgot := time.Time{}
	for _, t := range d.jmRestarts {
		if !t.Before(s.Completed) {
			forgot = t
			break
		}
	}
	if sub := d.submitted[s.Job]; sub.After(s.Completed) && (forgot.IsZero() || sub.Before(forgot)) {
		forgot = sub
	}
	for _, q := range d.ctrlReqs {
		if pathJob(q.Path) != s.Job || q.Status < 200 || q.Status > 299 || q.Time.Before(s.Completed) {
			continue
		}
		if !forgot.IsZero() && !q.Time.Before(forgot) {
			return false
		}
		return true
	}
	return false
}

// checkDetached checks that no call touches a detached job unless the
// spec adopts it: no stop, cancel or savepoint of it, and no status that
// takes it for the deployment's job.
func (d *driver) checkDetached(st lifecycle.JobStatus, sent []flinktest.Request) {
	d.forgetEndedDetached()
	for _, q := range sent {
		id := pathJob(q.Path)
		if !d.detached[id] || d.spec.Adopt == id || !mutating(q) || !took(q) {
			continue
		}
		d.violateKey(DetachedTouched, "req|"+string(id)+"|"+q.Route, "%s sent %s to the detached job %s, which the spec does not adopt", st.Action, q.Route, id)
	}
	if id := st.JobID; d.detached[id] && d.spec.Adopt != id && st.Detached != id {
		d.violateKey(DetachedTouched, "own|"+string(id), "the status takes the detached job %s for the deployment's (%s %s/%s), and the spec does not adopt it",
			id, st.Action, st.State, st.Reason)
		delete(d.detached, id)
		delete(d.foreign, id) // the deployment's from now on, rightly or not
	}
}

// forgetEndedDetached forgets the detached jobs whose id now names
// another job: the detached job ended or Flink forgot it (a JobManager
// restart without high availability), and a jar run under its id (the
// deployment's derived id, once re-created) started another job. That job is not the detached one: the controller may
// take it for its own.
func (d *driver) forgetEndedDetached() {
	for id := range d.detached {
		run, ok := d.detachedRun[id]
		if !ok {
			continue // when it was submitted is not known: it stays detached
		}
		if d.submitted[id].Equal(run) {
			continue // no jar run under its id since: still the detached job
		}
		delete(d.detached, id)
		delete(d.detachedRun, id)
		if d.foreign[id] == "detached" {
			delete(d.foreign, id)
		}
	}
}

// checkpointless reports whether job j runs without periodic
// checkpoints (its --checkpoint-interval is 0).
func checkpointless(j flinktest.JobInfo) bool {
	return argValue(j.ProgramArgs, "--checkpoint-interval") == "0"
}

// checkStable checks a status converged on a RUNNING job: all its
// tasks run (or ran within Flink's cache of job details), and the job
// completed a checkpoint since it was submitted under its id, unless it
// runs without checkpointing (JobStatus.NoCheckpointing: its running
// tasks stand in).
func (d *driver) checkStable(st lifecycle.JobStatus, j flinktest.JobInfo, w *world, after time.Time) {
	tasks := j.TasksRunning || after.Sub(d.tasksSeen[j.ID]) <= refreshInterval
	var why string
	switch {
	case !tasks:
		why = "its tasks do not all run"
	case !checkpointless(j):
		since := d.submitted[j.ID]
		done := false
		for _, s := range w.snapshots() {
			if s.Job == j.ID && !s.Savepoint && !s.Completed.Before(since) {
				done = true
				break
			}
		}
		if !done {
			why = "it completed no checkpoint since its submission at " + d.rel(since).String()
		}
	}
	if why != "" {
		d.violateKey(ConvergedTooEarly, string(j.ID)+"|"+d.submitted[j.ID].String(), "converged (%s/%s, %s) on job %s, submitted %v ago, while %s",
			st.State, st.Reason, st.Action, j.ID, after.Sub(j.Submitted), why)
	}
}

// checkRollbackBuild checks that a jar run of a rollback runs the build
// of the template it rolls back to: the build the jar at the spec's path
// held when the spec named that template.
func (d *driver) checkRollbackBuild(st lifecycle.JobStatus, q flinktest.Request, id flinkapi.JobID) {
	if st.Action != lifecycle.ActionRollback {
		return
	}
	name := argValue(st.Target.Args, "--name")
	want, ok := d.buildOfName[name]
	got, known := d.jarBuild[pathJar(q.Path)]
	if !ok || !known {
		return
	}
	if !d.rebuiltAt.IsZero() {
		d.res.Seen["rollbacks after a rebuild"]++
	}
	if got != want {
		d.violateKey(RollbackRanNewBuild, "rb|"+string(id), "the rollback to %s ran job %s from jar %s of build %d; the template rolled back to ran build %d",
			name, id, pathJar(q.Path), got, want)
	}
}

// checkDiscarded checks a jar run from path that Flink refused: a
// checkpoint it had discarded by then is no restore point.
func (d *driver) checkDiscarded(st lifecycle.JobStatus, id flinkapi.JobID, loc string, w *world) {
	s, ok := w.snapshot(loc)
	if !ok {
		for _, x := range w.snapshots() {
			if norm(x.Location) == norm(loc) {
				s, ok = x, true
			}
		}
	}
	if !ok || s.Savepoint || !s.Removed {
		return
	}
	// One per checkpoint: a start tried again from the same one (every
	// retry interval) is the same violation.
	d.violateKey(DiscardedCheckpointStart, norm(loc), "%s ran job %s from checkpoint %s of job %s (completed %v), which Flink had discarded",
		st.Action, id, loc, s.Job, d.rel(s.Completed))
}

// checkFailed checks that a FAILED job of the deployment is started
// again when the restart policy allows it: the spec asks for the job
// running, its restart policy restarts from the latest state with
// restarts left, state to restart from exists (a retained checkpoint of
// the failed job, or the status's Latest), nothing of the deployment
// and no foreign job lives, and the job did not fail on a refused
// restore path. Blue/green with a change pending is StuckBlueGreen's.
func (d *driver) checkFailed(st lifecycle.JobStatus, w *world, running, over, bg bool) {
	j, known := w.jobs[st.JobID]
	cond := running && !over && !bg && known && j.State == flinkapi.JobFailed && !st.Suspended && !d.refusedJobs[st.JobID] &&
		d.spec.Restart.Mode == policy.RestartFromLatestState && st.Restarts < d.spec.Restart.WithDefaults().MaxRestarts &&
		len(d.ownLive()) == 0 && !d.foreignLive() && d.hasState(st, w)
	key := "failed|" + string(st.JobID) + "|" + j.Submitted.String()
	if _, held := d.holds[key]; cond && !held {
		d.res.Seen["failed jobs a restart is due for"]++
	}
	if t := d.holding(key, cond); t > StuckAfter {
		d.violateKey(FailedNeverRestarted, key, "job %s FAILED and was not started again for %v without the caller's absences, with %d of %d restarts used (%s %s/%s: %s)",
			st.JobID, t, st.Restarts, d.spec.Restart.WithDefaults().MaxRestarts, st.Action, st.State, st.Reason, st.Message)
	}
}

// hasState reports whether the deployment has state to restart from: a
// retained checkpoint of its job, or a Latest on storage.
func (d *driver) hasState(st lifecycle.JobStatus, w *world) bool {
	if st.Latest.Location != "" && d.exists(st.Latest.Location) && !d.refused[st.Latest.Location] {
		return true
	}
	for _, s := range w.snapshots() {
		if s.Job == st.JobID && !s.Savepoint && !s.Removed {
			return true
		}
	}
	return false
}
