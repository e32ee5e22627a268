package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The audit at work: with a Storage, Reconcile audits the deployment's
// savepoint and checkpoint directories (Audit) once an action that
// starts, stops or replaces a job ended, or a routine one that did not
// succeed (auditAfter), and every
// AuditInterval, and before it starts the deployment's job again
// from the newest state the status knows while the job is gone, and
// applies what it found to the status (applyAudit): storage is the
// ledger's ground truth. Between audits a call sends no Storage request
// for it.

// DefaultAuditInterval is Controller.AuditInterval's default: an audit
// of the storage every hour, besides those after the actions that start,
// stop or replace a job.
const DefaultAuditInterval = time.Hour

// AuditSummary is what the Controller's last audit of the storage found
// and did (JobStatus.Audit): the complete audit is StorageAudit, which
// ApplyAudit returns.
type AuditSummary struct {
	// Time is when it ran.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Time time.Time `json:"time,omitzero"`
	// Requests is the Storage requests it sent (at most
	// MaxAuditRequests).
	Requests int `json:"requests,omitempty"`
	// Truncated is set when it reached MaxAuditRequests: some entries
	// were not read.
	Truncated bool `json:"truncated,omitempty"`
	// ListFailures counts the listings that failed: the audit is done
	// again after the Controller's RetryInterval, doubled for each audit
	// in a row whose listings failed (FailedInARow, this one included),
	// at most AuditInterval later.
	ListFailures int `json:"listFailures,omitempty"`
	FailedInARow int `json:"failedInARow,omitempty"`
	// Counts are its entries by kind (AuditKind), without Foreign ones.
	Counts map[AuditKind]int `json:"counts,omitempty"`
	// Recorded counts the savepoints it entered into the history
	// (savepoint.ReasonFound).
	Recorded int `json:"recorded,omitempty"`
	// RestorePoint is the one of them it made the restore point
	// (JobStatus.Latest), if any.
	RestorePoint string `json:"restorePoint,omitempty"`
	// Replaced are the jobs whose checkpoint directories it added to
	// JobStatus.Replaced, to be removed.
	Replaced []flinkapi.JobID `json:"replaced,omitempty"`
	// Due is set when an action that owes an audit ended since (one
	// that starts, stops or replaces a job, or a routine one that did
	// not succeed): the next call audits.
	Due bool `json:"due,omitempty"`
}

// DeepCopy returns a deep copy of in, or nil for nil.
func (in *AuditSummary) DeepCopy() *AuditSummary {
	if in == nil {
		return nil
	}
	out := *in
	out.Counts = maps.Clone(in.Counts)
	out.Replaced = slices.Clone(in.Replaced)
	return &out
}

// AuditApplied is what the Controller did with a StorageAudit
// (StorageAudit.Applied).
type AuditApplied struct {
	// Recorded are the Unrecorded savepoints it entered into the history,
	// with the reason savepoint.ReasonFound and the time their _metadata
	// was written (or, where the Storage tells no time, the audit's: such
	// a savepoint is never made the restore point).
	Recorded []string `json:"recorded,omitempty"`
	// RestorePoint is the one of them made JobStatus.Latest: the newest
	// state of the deployment's job the status knows.
	RestorePoint string `json:"restorePoint,omitempty"`
	// Replaced are the jobs whose checkpoint directories, Replaced
	// entries that JobStatus.Replaced did not list, it added there: the
	// Controller removes them once the running job completed a
	// checkpoint of its own, as it does those of the jobs it replaced.
	Replaced []flinkapi.JobID `json:"replaced,omitempty"`
	// Skipped says why Unrecorded or Replaced entries were left as they
	// are.
	Skipped []string `json:"skipped,omitempty"`
}

// auditInterval is AuditInterval, its default for 0; negative: none.
func (c *Controller) auditInterval() time.Duration {
	if c.AuditInterval < 0 {
		return 0
	}
	return orDefault(c.AuditInterval, DefaultAuditInterval)
}

// ApplyAudit audits the storage now, as Audit does, and applies what it
// found to st as Reconcile does at its audits: every Unrecorded savepoint
// of one of the deployment's jobs is entered into the history
// (savepoint.ReasonFound; retention then bounds and disposes of it as it
// does the deployment's own), the newest of the current job's becomes the
// restore point (Latest) when it is newer than anything the status knows
// of the job, and the checkpoint directories of replaced jobs that
// JobStatus.Replaced does not list are added there, to be removed.
// Foreign entries are never touched. It sends no request but those of
// Audit (no Delete), and records the summary in st.Audit; what it did is
// StorageAudit.Applied. It refuses a status with an action in flight
// (ErrActionInFlight): store st after it as after Reconcile.
func (c *Controller) ApplyAudit(ctx context.Context, spec JobSpec, st *JobStatus) (StorageAudit, error) {
	if c.Storage == nil {
		return StorageAudit{}, ErrNoStorage
	}
	if err := c.begin(ctx, st); err != nil {
		return StorageAudit{}, err
	}
	if st.InFlight() {
		return StorageAudit{}, ErrActionInFlight
	}
	a, err := c.audit(ctx, spec, st, true, true)
	if err != nil {
		return StorageAudit{}, err
	}
	c.applyAudit(st, &a, c.clock().Now())
	return a, nil
}

// ErrActionInFlight is returned by ApplyAudit for a status with an
// action in flight: its audit waits until the action ended.
var ErrActionInFlight = errors.New("lifecycle: an action is in flight: the audit is applied once it ended")

// auditDue reports whether a call at now audits the storage for st,
// which has no action in flight: an action that owes one ended since the
// last audit (auditAfter), or AuditInterval passed since it (a negative
// interval: only after actions), or auditRetry since one whose listing
// failed, or the call starts the job again from the status's state while
// the job is gone (plan): a newer savepoint of the job on storage
// is then its restore point.
func (c *Controller) auditDue(st *JobStatus, plan Plan, now time.Time) bool {
	if c.Storage == nil || plan.InFlight || st.InFlight() {
		return false
	}
	if restartsGone(plan) {
		return true
	}
	s := st.Audit
	switch {
	case s != nil && s.Due:
		return true
	case s != nil && s.ListFailures > 0 && !now.Before(s.Time.Add(c.auditRetry(s))):
		return true // a listing failed: tried again, later after each failure
	}
	iv := c.auditInterval()
	return iv > 0 && (s == nil || !now.Before(s.Time.Add(iv)))
}

// auditRetry is how long after an audit whose listing failed (s) the
// next one comes: RetryInterval, doubled for each audit in a row that
// failed, at most AuditInterval (RetryInterval when there is none), so
// that a store that keeps failing is not read at every retry.
func (c *Controller) auditRetry(s *AuditSummary) time.Duration {
	d, limit := c.retry(), c.auditInterval()
	if limit <= 0 {
		return d
	}
	for i := 1; i < s.FailedInARow && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// auditAfter reports whether the end of action with outcome owes an
// audit: every end of an action that starts, stops or replaces a job
// does, and the end of a routine one beside the running job (a
// savepoint, a checkpoint, a disposal) that did not succeed, save a
// savepoint past its deadline, which is looked up as late
// (JobStatus.LateSavepoint) and recorded when it completes; one that
// succeeded wrote what its trigger recorded, nothing else, and the
// interval's audit reads storage anyway.
func auditAfter(action JobAction, outcome Outcome) bool {
	switch action {
	case ActionSavepoint, ActionSavepointRequest:
		return outcome != OutcomeSucceeded && outcome != OutcomeNotNeeded && outcome != OutcomeTimedOut
	case ActionCheckpoint, ActionCheckpointRequest, ActionDispose:
		return outcome != OutcomeSucceeded && outcome != OutcomeNotNeeded
	}
	return true
}

// restartsGone reports whether plan starts the deployment's job again
// from the state the status knows (not a rollback's, nor a new
// savepoint's) while nothing of it runs: down, suspended or deleted.
func restartsGone(plan Plan) bool {
	switch plan.Action {
	case ActionRestart, ActionDeploy, ActionUpgrade, ActionHealthRestart, ActionRestartRequest, ActionRescale, ActionAutoscale:
	default:
		return false
	}
	return !plan.NewSavepoint && (plan.Situation.down() || plan.Situation == SituationSuspended || plan.Situation == SituationDeleted)
}

// auditInCall runs the audit Reconcile owes st now (auditDue), within
// the call's requests to Flink (obs.Requests: its one GET only when one
// is left), and applies it; it reports whether the status's savepoints
// changed, so that the call plans again. A failed audit (a canceled
// context) changes nothing.
func (c *Controller) auditInCall(ctx context.Context, spec JobSpec, st *JobStatus, obs *Observation, plan Plan, now time.Time) bool {
	if !c.auditDue(st, plan, now) {
		return false
	}
	flink := obs.Requests < MaxRequestsPerCall && plan.Situation != SituationUnreachable
	a, err := c.audit(ctx, spec, st, flink, true)
	if err != nil {
		return false
	}

	obs.Requests += a.FlinkRequests
	latest := st.Latest.Location
	c.applyAudit(st, &a, now)
	return len(a.Applied.Recorded) > 0 || st.Latest.Location != latest
}

// auditBeforeDelete audits the storage, with a Storage, before a Delete
// starts its teardown or keeps the newest state of a job that is gone
// (p): a savepoint on storage that the status lacks is then recorded,
// the newest the restore point the teardown starts from or keeps, and
// the rest disposed of as the policy says once the job is torn down.
// Without its GET to Flink: the savepoint directories matter here.
func (c *Controller) auditBeforeDelete(ctx context.Context, spec JobSpec, st *JobStatus, p deletePlan, now time.Time) {
	if c.Storage == nil || st.InFlight() || p.step != deleteStepTeardown && p.step != deleteStepKeep {
		return
	}
	if a, err := c.audit(ctx, spec, st, false, true); err == nil {
		c.applyAudit(st, &a, now)
	}
}

// markAuditDue records that an action that owes an audit ended with
// outcome (auditAfter): the next call audits.
func (c *Controller) markAuditDue(st *JobStatus, outcome Outcome) {
	if c.Storage == nil || !auditAfter(st.Action, outcome) {
		return
	}
	if st.Audit == nil {
		st.Audit = &AuditSummary{}
	}
	st.Audit.Due = true
}

// applyAudit applies a to st (see ApplyAudit) and records its summary.
func (c *Controller) applyAudit(st *JobStatus, a *StorageAudit, now time.Time) {
	do := &AuditApplied{}
	a.Applied = do
	c.recordFound(st, a, do, now)
	c.addReplaced(st, a, do)
	sum := &AuditSummary{Time: now, Requests: a.Requests, Truncated: a.Truncated, ListFailures: a.ListFailures,
		Recorded: len(do.Recorded), RestorePoint: do.RestorePoint, Replaced: slices.Clone(do.Replaced)}
	if a.ListFailures > 0 {
		sum.FailedInARow = 1
		if st.Audit != nil {
			sum.FailedInARow += st.Audit.FailedInARow
		}
	}
	for k, t := range a.Totals {
		if k != AuditForeign && t.Count > 0 {
			if sum.Counts == nil {
				sum.Counts = map[AuditKind]int{}
			}
			sum.Counts[k] = t.Count
		}
	}
	st.Audit = sum
}

// recordFound enters a's Unrecorded savepoints into the history, and
// makes the newest of the current job's the restore point when it is
// the newest state the status knows; the newest of any of the
// deployment's jobs when the status knows no restore point (a job that
// never ran took the place of one stopped with a savepoint that Flink
// forgot).
func (c *Controller) recordFound(st *JobStatus, a *StorageAudit, do *AuditApplied, now time.Time) {
	var newest, anyJob savepoint.Record
	for _, e := range a.Of(AuditUnrecorded) {
		if e.JobID == "" {
			do.Skipped = append(do.Skipped, e.Path+": its name fits more than one of the deployment's jobs")
			continue
		}
		loc := foundLocation(st, e.Path)
		if slices.ContainsFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return within(r.Location, loc) && within(loc, r.Location) }) {
			continue
		}
		rec := savepoint.Record{Location: loc, Time: e.Modified, Reason: savepoint.ReasonFound, JobID: e.JobID}
		switch {
		case rec.Time.IsZero():
			rec.Time = now // no time known: bounded by the retention from now on, never the restore point
		case strings.EqualFold(string(e.JobID), string(st.JobID)) && rec.Time.After(newest.Time):
			newest = rec
		}
		if !e.Modified.IsZero() && rec.Time.After(anyJob.Time) {
			anyJob = rec
		}
		st.Savepoints = st.Savepoints.Add(rec)
		do.Recorded = append(do.Recorded, loc)
	}
	if newest.Location == "" && st.Latest.Location == "" {
		newest = anyJob
	}
	if newest.Location != "" && newerThanKnown(st, newest) && completedAfterKnown(a, newest) {
		st.Latest = newest
		do.RestorePoint = newest.Location
	}
}

// completedAfterKnown reports whether rec, a savepoint found on storage
// (its Time is when its _metadata was written), completed after every
// snapshot of the ledger that a found there (RestorePoint, InHistory).
// A record's Time is when its trigger was recorded, which may be long
// before the snapshot completed (the trigger is sent later, and the
// snapshot takes its time): one taken from outside meanwhile, completed
// before the deployment's own, is found with a later Time than that
// record's all the same. Storage's times of both are compared instead.
func completedAfterKnown(a *StorageAudit, rec savepoint.Record) bool {
	for _, e := range a.Entries {
		if (e.Kind == AuditRestorePoint || e.Kind == AuditInHistory) && !e.Modified.IsZero() && !e.Modified.Before(rec.Time) {
			return false
		}
	}
	return true
}

// foundLocation is the location of a savepoint found at p as the status
// records the savepoints of its directory, so that a record of it that
// Flink's answers add later names it alike (the history tells savepoints
// apart by their location's text): the directory as a record of the
// history or a restore point spells it, else p, a plain absolute path as
// Flink reports it (a file: URI).
func foundLocation(st *JobStatus, p string) string {
	dir, name := parentDir(p), p[strings.LastIndex(p, "/")+1:]
	known := append([]savepoint.Record{st.Latest, st.UpgradeFrom}, st.Savepoints.Records...)
	for _, r := range known {
		if d := parentDir(strings.TrimSuffix(r.Location, "/")); d != "" && canonical(d) == canonical(dir) {
			return d + "/" + name
		}
	}
	if strings.HasPrefix(p, "/") {
		return "file:" + p
	}
	return p
}

// newerThanKnown reports whether rec is newer than every state of its
// job the status knows: Latest, the rollback's state, the history's
// other records.
func newerThanKnown(st *JobStatus, rec savepoint.Record) bool {
	for _, r := range append([]savepoint.Record{st.Latest, st.UpgradeFrom}, st.Savepoints.Records...) {
		if r.Location != rec.Location && !r.Time.Before(rec.Time) {
			return false
		}
	}
	return true
}

// addReplaced adds to JobStatus.Replaced the jobs of a's Replaced
// entries that it does not list: never the current job, the action's
// new job, a detached job, nor one while no job of the deployment is
// there to free them (its own checkpoint frees them), and no more than
// MaxReplacedJobs records in all.
func (c *Controller) addReplaced(st *JobStatus, a *StorageAudit, do *AuditApplied) {
	dirs := map[flinkapi.JobID]string{}
	for _, e := range a.Of(AuditReplaced) {
		if e.JobID == "" {
			continue
		}
		if dir := parentDir(parentDir(e.Path)); dir != "" {
			dirs[flinkapi.JobID(strings.ToLower(string(e.JobID)))] = dir
		}
	}
	if len(dirs) == 0 {
		return
	}
	if st.JobID == "" || st.Deleted {
		do.Skipped = append(do.Skipped, fmt.Sprintf("%d replaced jobs' checkpoints: no job of the deployment runs to free them", len(dirs)))
		return
	}
	for _, id := range slices.Sorted(maps.Keys(dirs)) {
		switch {
		case keepsCheckpoints(st, id):
			continue
		case len(st.Replaced) >= MaxReplacedJobs:
			do.Skipped = append(do.Skipped, fmt.Sprintf("checkpoints of job %s: %d replaced jobs are recorded already", id, MaxReplacedJobs))
			continue
		}
		st.Replaced = append(st.Replaced, ReplacedJob{JobID: id, CheckpointDir: dirs[id], NewJobID: st.JobID,
			Restored: st.RestoredFrom, ClaimMode: claimMode(st.Deployed.run())})
		do.Replaced = append(do.Replaced, id)
	}
}

// keepsCheckpoints reports whether the checkpoints of job id are not the
// audit's to add to JobStatus.Replaced: the current job's, the last
// action's jobs', a detached job's, or already listed.
func keepsCheckpoints(st *JobStatus, id flinkapi.JobID) bool {
	same := func(x flinkapi.JobID) bool { return x != "" && strings.EqualFold(string(x), string(id)) }
	p := &st.Progress
	if same(st.JobID) || same(p.Submit.NewJobID) || same(st.Detached) || same(st.LateSavepoint.JobID) {
		return true
	}
	return slices.ContainsFunc(st.Replaced, func(r ReplacedJob) bool { return same(r.JobID) })
}
