package lifecycle

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// The rule for the retained checkpoints of replaced jobs (see the
// package documentation): noteReplaced records a replaced job when an
// action ends, awaitsCheckpoint makes the observation read the new job's
// checkpoint statistics until it completed one of its own, and
// cleanupRetained removes at rest what retainedRemovals allows.

// MaxReplacedJobs bounds JobStatus.Replaced: beyond it the oldest
// records are forgotten, their checkpoints left where they are.
const MaxReplacedJobs = 8

// MaxCleanupAttempts bounds the failed cleanups of one replaced job; the
// record then stays, with its Error, until MaxReplacedJobs pushes it out.
const MaxCleanupAttempts = 10

// CleanupError is why the removal of a replaced job's checkpoints failed
// last. The strings are stable.
type CleanupError string

// Cleanup errors.
const (
	// CleanupListFailed: Storage.List of the job's directory failed;
	// tried again at a later call.
	CleanupListFailed CleanupError = "ListFailed"
	// CleanupDeleteFailed: a Storage.Delete failed; tried again at a
	// later call.
	CleanupDeleteFailed CleanupError = "DeleteFailed"
	// CleanupRefused: the Storage refused the path (ErrStoragePath),
	// which is not tried again.
	CleanupRefused CleanupError = "Refused"
)

// ReplacedJob is a job the deployment replaced whose retained
// checkpoints are still to be removed (format 5).
type ReplacedJob struct {
	// JobID is the replaced job.
	JobID flinkapi.JobID `json:"jobID"`
	// CheckpointDir is the directory its checkpoints lie under, as
	// <CheckpointDir>/<JobID>/chk-N; empty until known (from the
	// replaced job's checkpoint paths or configuration, else from the
	// new job's checkpoint path).
	CheckpointDir string `json:"checkpointDir,omitempty"`
	// NewJobID is the job whose own completed checkpoint frees the
	// replaced job's: the one that replaced it, or the one that replaced
	// that before it completed a checkpoint.
	NewJobID flinkapi.JobID `json:"newJobID"`
	// Restored is the location NewJobID started from, and ClaimMode the
	// claim mode it was started with (empty: Flink's default, NO_CLAIM).
	Restored  string             `json:"restored,omitempty"`
	ClaimMode flinkapi.ClaimMode `json:"claimMode,omitempty"`
	// Checkpointed is set once NewJobID was seen with a completed
	// checkpoint of its own.
	Checkpointed bool `json:"checkpointed,omitempty"`
	// Waiting is set once all that is left waits for a location the
	// status names to be named no more: the directory is listed again
	// only then.
	Waiting bool `json:"waiting,omitempty"`
	// Attempts counts the cleanups that failed, Error is why the last
	// one failed (empty once one went through).
	Attempts int          `json:"attempts,omitempty"`
	Error    CleanupError `json:"error,omitempty"`
}

// claimKeeps reports whether r's new job may reference the checkpoint it
// restored from the replaced job's directory dir: started from it with
// CLAIM, LEGACY or a mode this release does not know.
func (r *ReplacedJob) claimKeeps(dir string) bool {
	switch {
	case r.Restored == "" || !within(r.Restored, dir):
		return false
	case r.ClaimMode == "" || r.ClaimMode == flinkapi.ClaimModeNoClaim:
		return false
	}
	return true
}

// giveUp reports whether r is not tried again.
func (r *ReplacedJob) giveUp() bool {
	return r.Error == CleanupRefused || r.Attempts >= MaxCleanupAttempts
}

// Configuration keys of the job's claim mode and checkpoint directory.
const (
	keyClaimMode        = "execution.state-recovery.claim-mode" // 1.20+
	keyRestoreMode      = "execution.savepoint-restore-mode"    // 1.15 to 1.19
	keyCheckpointDir    = "execution.checkpointing.dir"         // 1.20+
	keyOldCheckpointDir = "state.checkpoints.dir"
)

// claimMode is the claim mode of a job run with run: its ClaimMode, else
// its configuration's, else empty (NO_CLAIM).
func claimMode(run flinkapi.RunJarRequest) flinkapi.ClaimMode {
	if run.ClaimMode != "" {
		return run.ClaimMode
	}
	for _, k := range []string{keyClaimMode, keyRestoreMode} {
		if v := strings.TrimSpace(run.FlinkConfiguration[k]); v != "" {
			return flinkapi.ClaimMode(strings.ToUpper(v))
		}
	}
	return ""
}

// configuredCheckpointDir is the checkpoint directory t's configuration
// sets; empty: the cluster's.
func configuredCheckpointDir(t JobTemplate) string {
	for _, k := range []string{keyCheckpointDir, keyOldCheckpointDir} {
		if v := strings.TrimSpace(t.FlinkConfiguration[k]); v != "" {
			return strings.TrimSuffix(v, "/")
		}
	}
	return ""
}

// checkpointDirOf is the checkpoint directory of loc, a checkpoint of
// job: <dir>/<job>/chk-N (or a file in it); empty if loc is none.
func checkpointDirOf(job flinkapi.JobID, loc string) string {
	parts := strings.Split(strings.TrimSuffix(loc, "/"), "/")
	for i := len(parts) - 1; i >= 2; i-- {
		if isCheckpointName(parts[i]) && parts[i-1] == string(job) && job != "" {
			return strings.Join(parts[:i-1], "/")
		}
	}
	return ""
}

// noteReplaced records, before adopt makes the new job the deployment's
// job, that the action in st.Progress replaced the deployment's job by
// a new one (it succeeded, or saw the old job ended): its retained
// checkpoints are removed once the new job completed a checkpoint. A
// record of a job the new one replaced before it completed a checkpoint
// now waits for the newer job. Nothing without a Storage.
func (c *Controller) noteReplaced(st *JobStatus) {
	p := &st.Progress
	old, nw := p.Replace.PreviousJobID, p.Submit.NewJobID
	if c.Storage == nil || old == "" || nw == "" || old == nw || st.JobID != old || p.Outcome != OutcomeSucceeded && !stoppedOld(p) && !goneOld(p) {
		return
	}
	mode := claimMode(st.Target.run())
	passReplaced(st, old, nw, mode)
	if slices.ContainsFunc(st.Replaced, func(r ReplacedJob) bool { return r.JobID == old }) {
		return // recorded by an earlier call whose status was stored
	}
	st.Replaced = append(st.Replaced, ReplacedJob{JobID: old, CheckpointDir: replacedDir(st, old), NewJobID: nw, Restored: p.Replace.RestoreFrom, ClaimMode: mode})
	if n := len(st.Replaced); n > MaxReplacedJobs {
		st.Replaced = slices.Clone(st.Replaced[n-MaxReplacedJobs:])
	}
}

// passReplaced hands the records of jobs that old replaced before it
// completed a checkpoint on to nw, which replaced old: they now wait for
// nw's checkpoint, and what old restored no longer counts unless the
// record's claim mode keeps it.
func passReplaced(st *JobStatus, old, nw flinkapi.JobID, mode flinkapi.ClaimMode) {
	for i := range st.Replaced {
		r := &st.Replaced[i]
		if r.NewJobID != old || r.Checkpointed {
			continue
		}
		if !r.claimKeeps(jobDir(r)) {
			// What the job in between restored no longer counts.
			r.Restored, r.ClaimMode = st.Progress.Replace.RestoreFrom, mode
		}
		r.NewJobID = nw
	}
}

// replacedDir is the checkpoint directory of the replaced job old: the
// deployed template's, or the one its observed checkpoint or restore
// point lies in.
func replacedDir(st *JobStatus, old flinkapi.JobID) string {
	p := &st.Progress
	dir := configuredCheckpointDir(st.Deployed)
	for _, loc := range []string{p.Replace.Observed.Checkpoint, p.Replace.RestoreFrom} {
		if d := checkpointDirOf(old, loc); dir == "" && d != "" {
			dir = d
		}
	}
	return dir
}

// goneOld reports whether p is an Upgrade's or Restart's (also within a
// Rescale) that saw the job it replaces stopped for good or forgotten by
// Flink (Progress.Stopped): a JobManager restart without high
// availability leaves its retained checkpoints, and its savepoints, on
// storage.
func goneOld(p *Progress) bool {
	switch p.Operation {
	case opUpgrade, opRestart, opRescale:
		return p.Stopped()
	}
	return false
}

// noteCancelled records the job beside the deployment's that a canary,
// or a blue/green upgrade that was aborted, started and cancelled (Flink
// confirmed it ended; its id is derived from the deployment's job, which
// runs on): its retained checkpoints are removed once the deployment's
// job completed a checkpoint of its own, as a replaced job's are. Nothing
// without a Storage.
func (c *Controller) noteCancelled(st *JobStatus, id flinkapi.JobID) {
	if c.Storage == nil || id == "" || id == st.JobID || slices.ContainsFunc(st.Replaced, func(r ReplacedJob) bool { return r.JobID == id }) {
		return
	}
	st.Replaced = append(st.Replaced, ReplacedJob{JobID: id, CheckpointDir: configuredCheckpointDir(st.Target), NewJobID: st.JobID})
	if n := len(st.Replaced); n > MaxReplacedJobs {
		st.Replaced = slices.Clone(st.Replaced[n-MaxReplacedJobs:])
	}
}

// awaitsCheckpoint reports whether the running job d is one whose own
// completed checkpoint frees a replaced job's: the observation then
// reads its checkpoint statistics.
func (c *Controller) awaitsCheckpoint(st *JobStatus, d *flinkapi.JobDetails) bool {
	if c.Storage == nil || d.State != flinkapi.JobRunning || st.NoCheckpointing == st.JobID {
		return false
	}
	return slices.ContainsFunc(st.Replaced, func(r ReplacedJob) bool { return r.NewJobID == st.JobID && !r.Checkpointed })
}

// ownCheckpoint is a checkpoint (no savepoint) the job that started at
// start completed: not the one it restored, which was taken before.
func ownCheckpoint(stats *flinkapi.CheckpointStatistics, start time.Time) (flinkapi.CheckpointStats, bool) {
	if stats == nil {
		return flinkapi.CheckpointStats{}, false
	}
	own := func(cp flinkapi.CheckpointStats) bool {
		return cp.Status == flinkapi.CheckpointCompleted && !cp.IsSavepoint && !cp.TriggerTime.Before(start) && !start.IsZero()
	}
	if cp := stats.LatestCompleted; cp != nil && own(*cp) {
		return *cp, true
	}
	for _, cp := range stats.History {
		if own(cp) {
			return cp, true
		}
	}
	return flinkapi.CheckpointStats{}, false
}

// cleanupRetained is the Controller's rule for replaced jobs at rest:
// it records that the running job completed a checkpoint of its own,
// and once the deployment is settled with no action in flight removes
// what the replaced jobs' records allow. Failures are kept in the
// records and tried again at later calls; they never block an action.
func (c *Controller) cleanupRetained(ctx context.Context, spec JobSpec, st *JobStatus, obs Observation, plan Plan) {
	if c.Storage == nil || len(st.Replaced) == 0 {
		return
	}
	c.noteCheckpointed(st, obs)
	if !plan.Settled || st.InFlight() || !slices.ContainsFunc(st.Replaced, due) {
		return
	}
	refs, ok := c.references(ctx, spec, st)
	if !ok {
		return
	}
	var keep []ReplacedJob
	for _, r := range st.Replaced {
		if r.JobID == st.JobID {
			// A record that names the deployment's job: its checkpoints
			// are never removed, whatever the record says.
			continue
		}
		if !due(r) || r.Waiting && referenced(jobDir(&r), refs) || !c.clean(ctx, &r, refs) {
			keep = append(keep, r)
		}
	}
	st.Replaced = keep
}

// due reports whether r's checkpoints may be removed now.
func due(r ReplacedJob) bool { return r.Checkpointed && r.CheckpointDir != "" && !r.giveUp() }

// noteCheckpointed marks the records waiting for the running job's own
// checkpoint once obs shows one, and fills in a checkpoint directory
// still unknown from its path when the job's template sets none of its
// own.
func (c *Controller) noteCheckpointed(st *JobStatus, obs Observation) {
	if obs.Job == nil || obs.Job.State != flinkapi.JobRunning {
		return
	}
	cp, ok := ownCheckpoint(obs.Checkpoints, obs.Job.StartTime)
	if !ok {
		return
	}
	for i := range st.Replaced {
		r := &st.Replaced[i]
		if r.NewJobID != st.JobID {
			continue
		}
		r.Checkpointed = true
		if r.CheckpointDir == "" && configuredCheckpointDir(st.Deployed) == "" {
			r.CheckpointDir = checkpointDirOf(st.JobID, cp.ExternalPath)
		}
	}
}

// references are the locations the status and the spec name: never
// deleted, nor what they may share. ok is false when the restore-point
// store could not be read.
func (c *Controller) references(ctx context.Context, spec JobSpec, st *JobStatus) (refs []string, ok bool) {
	refs = []string{st.Latest.Location, st.UpgradeFrom.Location, spec.Restore.Path}
	if st.ActionSpec != nil {
		refs = append(refs, st.ActionSpec.Restore.Path)
	}
	if st.InFlight() {
		refs = append(refs, st.Progress.Replace.RestoreFrom)
	}
	for _, r := range st.Savepoints.Records {
		refs = append(refs, r.Location)
	}
	if c.Store != nil && c.Name != "" {
		rec, found, err := c.Store.Get(ctx, c.Name)
		if err != nil {
			return nil, false
		}
		if found {
			refs = append(refs, rec.Location)
		}
	}
	return slices.DeleteFunc(refs, func(s string) bool { return s == "" }), true
}

// clean removes what r allows of its job's directory and reports whether
// r is done: nothing is left that it may remove later.
func (c *Controller) clean(ctx context.Context, r *ReplacedJob, refs []string) bool {
	dir := jobDir(r)
	entries, err := c.Storage.List(ctx, dir)
	if err != nil {
		r.failed(err, CleanupListFailed)
		return false
	}
	rm := retainedRemovals(dir, entries, r, refs)
	for _, p := range rm.delete {
		if err := c.Storage.Delete(ctx, p); err != nil {
			r.failed(err, CleanupDeleteFailed)
			return false
		}
	}
	r.Error, r.Waiting = "", rm.wait
	return !rm.wait
}

// referenced reports whether a reference lies within dir, or dir within
// a reference.
func referenced(dir string, refs []string) bool {
	return slices.ContainsFunc(refs, func(ref string) bool { return within(ref, dir) || within(dir, ref) })
}

// failed records a failed cleanup of r.
func (r *ReplacedJob) failed(err error, kind CleanupError) {
	r.Attempts++
	r.Error = kind
	if errors.Is(err, ErrStoragePath) {
		r.Error = CleanupRefused
	}
}

// jobDir is the directory of r's job's checkpoints.
func jobDir(r *ReplacedJob) string {
	if r.CheckpointDir == "" {
		return ""
	}
	return strings.TrimSuffix(r.CheckpointDir, "/") + "/" + string(r.JobID)
}

// removals is what the rule removes of a replaced job's directory, in
// order, and whether anything left waits for a reference to go.
type removals struct {
	delete []string
	wait   bool
}

// retainedRemovals is the rule for the entries of dir, the directory of
// r's job: its chk-N directories that no reference names and that r's
// claim mode does not keep; then, when no checkpoint stays that may
// share them and no reference lies within dir, the directory itself with
// shared/ and taskowned/. Entries of other names are never removed.
func retainedRemovals(dir string, entries []string, r *ReplacedJob, refs []string) removals {
	var out removals
	claimKeeps := r.claimKeeps(dir)
	keepShared, other := claimKeeps, false
	if referenced(dir, refs) {
		keepShared, out.wait = true, true // a referenced checkpoint may share files
	}
	for _, e := range entries {
		name := path.Base(strings.TrimSuffix(e, "/"))
		switch {
		case !isCheckpointName(name):
			other = other || name != "shared" && name != "taskowned"
		case claimKeeps && within(r.Restored, e):
		case referenced(e, refs):
		default:
			out.delete = append(out.delete, e)
		}
	}
	if !keepShared && !other {
		out.delete = append(out.delete, dir) // shared/, taskowned/, and the directory
	}
	return out
}

// within reports whether location a is b or lies under it, comparing
// file: URIs and plain paths alike.
func within(a, b string) bool {
	ca, cb := canonical(a), canonical(b)
	return ca != "" && cb != "" && (ca == cb || strings.HasPrefix(ca, cb+"/"))
}

// canonical is loc without a trailing slash, a file: URI as its path.
func canonical(loc string) string {
	if rest, ok := strings.CutPrefix(loc, "file:"); ok {
		if host, ok := strings.CutPrefix(rest, "//"); ok {
			_, p, _ := strings.Cut(host, "/")
			rest = "/" + p
		}
		loc = path.Clean(rest)
	}
	return strings.TrimSuffix(loc, "/")
}
