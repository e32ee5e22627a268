package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// The savepoint ledger: the savepoints of JobStatus.Savepoints are the
// deployment's, each on storage until a disposal of it succeeded, and
// only then removed from the history. The retention of the spec's
// SavepointPolicy chooses which go, whenever the Controller is called and
// no action is in flight, whatever the job's situation (running,
// suspended, failed, down), as long as a JobManager is there to dispose
// of them. One request per call at most.

// MaxDisposeAttempts is how many disposals of one savepoint may fail
// before the Controller gives up on it (savepoint.Disposal.GaveUp): it
// then stays in the history, reported, and is not tried again.
const MaxDisposeAttempts = 5

// maxDisposeBackoff bounds the wait between two disposals of a savepoint
// that failed.
const maxDisposeBackoff = 6 * time.Hour

// maxDisposalMessage bounds savepoint.Disposal.Message, in bytes.
const maxDisposalMessage = 512

// SavepointDisposal is the disposal of one savepoint in progress (format
// 5): recorded before its request is sent, so that a caller that lost the
// answer polls it, or sends it again, rather than forget it.
type SavepointDisposal struct {
	// Location is the savepoint being disposed of.
	Location string `json:"location,omitempty"`
	// TriggerID is the id of Flink's disposal operation, once it answered.
	TriggerID flinkapi.TriggerID `json:"triggerID,omitempty"`
	// Started is when this disposal started: past the controller's stop
	// timeout (Timing.Stop) without an answer it counts as failed.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Started time.Time `json:"started,omitzero"`
}

// retentionFor is the retention a call applies: the spec's policy,
// bounded by what a status holds, and what may not go (neverDisposed).
func (c *Controller) retentionFor(spec JobSpec, st *JobStatus) savepoint.RetentionOptions {
	r := c.retention(spec.Savepoints, st)
	if r.MaxCount <= 0 || r.MaxCount > MaxStoredSavepoints {
		r.MaxCount = MaxStoredSavepoints
	}
	r.InUse = append(r.InUse, neverDisposed(spec, st)...)
	return r
}

// neverDisposed lists the savepoints of st that no disposal may touch
// in a call with spec (invariant 16), as far as the status and the spec
// say: the job's newest state (Latest, and the newest record of the
// history), the state a rollback restores (UpgradeFrom, until the
// deployment is deleted: no rollback follows a Delete), the restore
// point of the last or in-flight action and the restore requests (the
// action's and the spec's), the state the deployment's job started from
// until it has a savepoint of its own (standsOn), and the savepoint or
// state a teardown kept: a Delete's final savepoint. The restore-point
// store's record is read at the act (storedRestorePoint).
func neverDisposed(spec JobSpec, st *JobStatus) []string {
	p := &st.Progress
	locs := []string{st.Latest.Location, p.Replace.RestoreFrom, p.Replace.Request.Path, spec.Restore.Path, standsOn(st)}
	if !deleted(st) {
		locs = append(locs, st.UpgradeFrom.Location)
	}
	if newest, ok := st.Savepoints.Latest(); ok {
		locs = append(locs, newest.Location)
	}
	if as := st.ActionSpec; as != nil {
		locs = append(locs, as.Restore.Path)
	}
	if st.Action == ActionTeardown {
		locs = append(locs, p.Savepoint.Location, p.Savepoint.Status.Location, teardownRecord(p).Location)
	}
	return slices.DeleteFunc(locs, func(l string) bool { return l == "" })
}

// standsOn is the state the deployment's job was started from
// (JobStatus.RestoredFrom) while it is the job's only state the status
// knows of: "" once the deployment is deleted, and once the history
// holds a savepoint the job completed. A savepoint is self-contained, so
// the job's own is newer state a restart or an upgrade starts from; an
// import or a checkpoint of the job (which Flink may discard at the
// next one) does not free it; an import counts only when its record
// names the job.
func standsOn(st *JobStatus) string {
	loc := st.RestoredFrom
	if loc == "" || st.JobID == "" || deleted(st) {
		return ""
	}
	own := func(r savepoint.Record) bool { return r.JobID == st.JobID && r.Location != loc }
	if slices.ContainsFunc(st.Savepoints.Records, own) {
		return ""
	}
	return loc
}

// nextDisposal is the savepoint the ledger disposes of at this call:
// the one in progress, else the oldest the retention chooses; "" when
// none, when an action is in flight or starts, or when no JobManager is
// there to dispose of it. A recorded disposal whose request Flink has
// not acknowledged is passed over when its savepoint is now one that
// may not go (neverDisposed, or a location of kept): it was chosen
// before, and is not sent again (dropKeptDisposal forgets it).
func (c *Controller) nextDisposal(spec JobSpec, st *JobStatus, p *Plan, now time.Time, kept ...string) string {
	if p.Action != "" || p.InFlight || p.Situation == SituationUnreachable || !c.canDispose(st) || len(st.Savepoints.Records) == 0 {
		return "" // (with no savepoint recorded, none to dispose of)
	}
	if d := recordedDisposal(spec, st, kept); d != "" {
		return d
	}
	r := c.retentionFor(spec, st)
	r.InUse = append(r.InUse, kept...)
	if chosen := savepoint.ChooseDisposals(st.Savepoints.Records, r, now); len(chosen) > 0 {
		return chosen[0].Location
	}
	return ""
}

// recordedDisposal is the savepoint of the disposal recorded in st to go
// on with: "" when none is recorded, when its savepoint left the
// history, or when it is one that may not go now (neverDisposed or
// kept) and Flink has not acknowledged its request.
func recordedDisposal(spec JobSpec, st *JobStatus, kept []string) string {
	d := st.Disposing
	switch {
	case d.Location == "" || !hasLocation(st.Savepoints.Records, d.Location):
		return ""
	case d.TriggerID == "" && mayNotGo(spec, st, kept, d.Location):
		return ""
	}
	return d.Location
}

// mayNotGo reports whether loc is one of the savepoints no disposal may
// touch in this call: neverDisposed, or a location of kept.
func mayNotGo(spec JobSpec, st *JobStatus, kept []string, loc string) bool {
	return slices.Contains(neverDisposed(spec, st), loc) || slices.Contains(kept, loc)
}

// canDispose reports whether savepoints can be disposed of: by a
// JobManager (the session cluster, or the job's application cluster
// while it exists) or, with none up, through the Controller's Storage
// (disposeOnStorage).
func (c *Controller) canDispose(st *JobStatus) bool {
	return c.Deployer == nil || !st.Cluster.IsZero() || c.Storage != nil
}

// disposeOnStorage reports whether savepoints are disposed of through
// the Controller's Storage: on application clusters, while none runs
// (the job suspended, or deleted with its cluster).
func (c *Controller) disposeOnStorage(st *JobStatus) bool {
	return c.Deployer != nil && st.Cluster.IsZero() && c.Storage != nil
}

// deleteOnStorage disposes of the savepoint at loc by deleting it
// through the Controller's Storage (one request), and returns when to
// call again.
func (c *Controller) deleteOnStorage(ctx context.Context, st *JobStatus, loc string, now time.Time) time.Duration {
	d := &st.Disposing
	if d.Location != loc || d.TriggerID != "" {
		// A disposal a JobManager acknowledged before its cluster went:
		// done on storage instead.
		*d = SavepointDisposal{Location: loc, Started: now}
	}
	err := c.Storage.Delete(ctx, loc)
	switch {
	case err == nil:
		c.disposed(ctx, st, loc, "savepoint "+loc+" deleted from storage (no JobManager is up to dispose of it)")
		return soon
	case errors.Is(err, ErrStoragePath):
		return c.disposeFailed(ctx, st, savepoint.DisposalRefused, errMessage(err), now)
	}
	return c.disposeError(ctx, st, err, now)
}

// deleteDisposals are the savepoints a Delete disposes of once the job
// is torn down: those the policy (SavepointPolicy.DisposeOnDelete) or
// the record (savepoint.OnDeleteDispose) says, never the final one
// (Latest, and the teardown's savepoint whatever the times of other
// records) nor any other that may not go (neverDisposed, kept), nor one
// a record keeps, nor one given up.
func (c *Controller) nextDeleteDisposal(spec JobSpec, st *JobStatus, now time.Time, kept ...string) (loc string, wait time.Duration) {
	if !c.canDispose(st) {
		return "", 0
	}
	if d := recordedDisposal(spec, st, kept); d != "" {
		return d, 0
	}
	never := append(neverDisposed(spec, st), kept...)
	for _, r := range st.Savepoints.Records {
		onDelete, d := r.OnDelete(), r.Disposal()
		goes := onDelete == savepoint.OnDeleteDispose || onDelete == savepoint.OnDeletePolicy && spec.Savepoints.DisposeOnDelete
		if !goes || slices.Contains(never, r.Location) || d.GaveUp {
			continue
		}
		if w := d.RetryAt.Sub(now); d.Failed() && w > 0 {
			if wait == 0 || w < wait {
				wait = w
			}
			continue
		}
		return r.Location, 0
	}
	return "", wait
}

// disposeChecked is the act of the ledger's disposals, in Reconcile and
// in Delete: choose names the savepoint to dispose of (and how long to
// wait for one whose retry has not come), given locations kept beyond
// neverDisposed. The choice is made again from the status as it is at
// the act, and a savepoint the restore-point store keeps under the
// Controller's Name (read now) is kept too. A recorded disposal whose
// savepoint may not go any more is dropped, its record kept, before
// anything is sent. It takes one step of the disposal chosen and
// returns it, and when to call again; loc is "" when nothing was sent
// (wait then is when a failed disposal may be tried again). A store
// that cannot be read sends nothing, with its error.
func (c *Controller) disposeChecked(ctx context.Context, spec JobSpec, st *JobStatus, now time.Time,
	choose func(kept ...string) (string, time.Duration)) (loc string, wait time.Duration, err error) {
	loc, wait = choose()
	switch {
	case loc == "":
		c.dropKeptDisposal(ctx, spec, st, nil)
		return "", wait, nil
	case loc == st.Disposing.Location && st.Disposing.TriggerID != "":
		// Acknowledged by Flink: polled, nothing is sent.
		return loc, c.dispose(ctx, st, loc, now), nil
	}
	stored, err := c.storedRestorePoint(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("lifecycle: reading the restore point of %q before a disposal: %w", c.Name, err)
	}
	var kept []string
	if stored != "" {
		kept = []string{stored}
	}
	c.dropKeptDisposal(ctx, spec, st, kept)
	if loc, wait = choose(kept...); loc == "" {
		return "", wait, nil
	}
	return loc, c.dispose(ctx, st, loc, now), nil
}

// storedRestorePoint is the location the restore-point store keeps for
// the Controller's Name; "" without a store or name, or when it keeps
// none.
func (c *Controller) storedRestorePoint(ctx context.Context) (string, error) {
	if c.Store == nil || c.Name == "" {
		return "", nil
	}
	rec, ok, err := c.Store.Get(ctx, c.Name)
	if err != nil || !ok {
		return "", err
	}
	return rec.Location, nil
}

// dropKeptDisposal forgets the disposal recorded in st when its
// savepoint may not go now (neverDisposed, or a location of kept) and
// Flink has not acknowledged its request: chosen in an earlier call
// (a restore or a record since made it one to keep), it is not sent.
// The savepoint's record stays in the history.
func (c *Controller) dropKeptDisposal(ctx context.Context, spec JobSpec, st *JobStatus, kept []string) {
	d := st.Disposing
	if d.Location == "" || d.TriggerID != "" || !mayNotGo(spec, st, kept, d.Location) {
		return
	}
	st.Disposing = SavepointDisposal{}
	c.reportDisposal(ctx, st, d.Location, OutcomeNotNeeded, "the disposal of savepoint "+d.Location+
		" is dropped before it was sent: the savepoint is in use now (the job's newest state, a restore point, a restore request's or the store's)")
}

// dispose takes one step of the disposal of loc (one request) and
// returns when to call again.
func (c *Controller) dispose(ctx context.Context, st *JobStatus, loc string, now time.Time) time.Duration {
	if c.disposeOnStorage(st) {
		return c.deleteOnStorage(ctx, st, loc, now)
	}
	api, err := c.jobAPI(st)
	if err != nil {
		return c.retry()
	}
	d := &st.Disposing
	if d.Location != loc {
		*d = SavepointDisposal{Location: loc, Started: now}
	}
	if d.TriggerID == "" {
		op, err := api.DisposeSavepoint(ctx, loc)
		if err != nil {
			return c.disposeError(ctx, st, err, now)
		}
		d.TriggerID = op.TriggerID
		return c.Timing.poll()
	}
	res, err := api.OperationStatus(ctx, flinkapi.Operation{Kind: flinkapi.OpSavepointDisposal, TriggerID: d.TriggerID})
	switch {
	case flinkapi.IsTriggerNotFound(err):
		// Flink forgot it (a JobManager restart): sent again; a savepoint
		// it had disposed of is then not found, which counts as done.
		d.TriggerID = ""
		return soon
	case err != nil:
		return c.disposeError(ctx, st, err, now)
	case !res.Completed():
		if c.disposalLate(d, now) {
			return c.disposeFailed(ctx, st, savepoint.DisposalUnreachable, "the disposal did not complete in time", now)
		}
		return c.Timing.poll()
	case res.Succeeded(), res.Failure.FilesNotFound():
		// Gone: what a disposal is for (an earlier one whose answer was
		// lost may have removed the files). Only now is it forgotten.
		c.disposed(ctx, st, loc, "savepoint "+loc+" disposed of")
		return soon
	}
	msg := "the disposal failed"
	if res.Failure != nil {
		msg = savepoint.FailureMessage(res.Failure)
	}
	return c.disposeFailed(ctx, st, savepoint.DisposalFailed, msg, now)
}

// disposed forgets the savepoint at loc, gone from storage, and the
// disposal in progress, and reports it.
func (c *Controller) disposed(ctx context.Context, st *JobStatus, loc, why string) {
	st.Savepoints = st.Savepoints.Remove(loc)
	st.Disposing = SavepointDisposal{}
	c.reportDisposal(ctx, st, loc, OutcomeSucceeded, why)
}

// disposalLate reports whether the disposal d has run past its deadline.
func (c *Controller) disposalLate(d *SavepointDisposal, now time.Time) bool {
	return !now.Before(d.Started.Add(orDefault(c.Timing.Stop, defaultStopTimeout)))
}

// disposeError handles a request of the disposal that failed: a refusal
// fails the disposal, a transient error is tried again until the
// disposal's deadline.
func (c *Controller) disposeError(ctx context.Context, st *JobStatus, err error, now time.Time) time.Duration {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return soon
	case permanent(err):
		return c.disposeFailed(ctx, st, savepoint.DisposalRefused, errMessage(err), now)
	case c.disposalLate(&st.Disposing, now):
		return c.disposeFailed(ctx, st, savepoint.DisposalUnreachable, errMessage(err), now)
	}
	return c.Timing.backoff(2)
}

// disposeFailed records on the savepoint's record that its disposal
// failed, and when it may be tried again (backing off, at most
// MaxDisposeAttempts times).
func (c *Controller) disposeFailed(ctx context.Context, st *JobStatus, why savepoint.DisposalError, msg string, now time.Time) time.Duration {
	loc := st.Disposing.Location
	st.Disposing = SavepointDisposal{}
	i := slices.IndexFunc(st.Savepoints.Records, func(r savepoint.Record) bool { return r.Location == loc })
	if i < 0 {
		return soon
	}
	r := st.Savepoints.Records[i]
	d := r.Disposal()
	d.Attempts++
	d.Error, d.Message = why, truncate(msg, maxDisposalMessage)
	d.RetryAt = now.Add(disposeBackoff(c.retry(), d.Attempts))
	d.GaveUp = d.Attempts >= MaxDisposeAttempts
	r.SetDisposal(d)
	st.Savepoints = st.Savepoints.Add(r)
	note := fmt.Sprintf("savepoint %s not disposed of (%s, attempt %d of %d): %s", loc, d.Error, d.Attempts, MaxDisposeAttempts, d.Message)
	c.reportDisposal(ctx, st, loc, OutcomeDisposeFailed, note)
	return soon
}

// reportDisposal reports the end of a disposal of the ledger as a
// transition of the Dispose action to Done, to Env.OnTransition and the
// logger.
func (c *Controller) reportDisposal(ctx context.Context, st *JobStatus, loc string, o Outcome, why string) {
	p := Progress{JobID: st.JobID, Phase: PhaseDone, Outcome: o, Reason: why, Savepoint: SavepointProgress{Location: loc}}
	report(ctx, string(ActionDispose), c.OnTransition, c.Logger, PhaseWaitDisposed, &p)
}

// disposeBackoff is the wait after the n-th failed disposal: base,
// doubled for each failure before, at most maxDisposeBackoff.
func disposeBackoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxDisposeBackoff; i++ {
		d *= 2
	}
	return min(d, maxDisposeBackoff)
}

// ErrInvalidSavepoint is matched by the error ImportSavepoint returns for
// a record it cannot import.
var ErrInvalidSavepoint = errors.New("lifecycle: invalid savepoint record")

// ImportSavepoint adds a savepoint taken elsewhere (by another operator,
// the Flink CLI, a job this status did not run) to the status's history,
// with Reason Imported unless rec names one. It becomes Latest, the
// state a deploy or restart starts from, when it is newer than Latest.
// Retention keeps an imported savepoint (Reason Imported) unless
// SavepointPolicy.DisposeUser allows its disposal; one imported under
// another Reason is bounded like the savepoints of that reason;
// rec.OnDelete() says what a Delete does with it. The record needs a
// Location and the Time it was taken (an age is computed from it); a
// location already in the history is refused, and so is a record the
// status could not hold (MaxStoredSavepoints).
func (s *JobStatus) ImportSavepoint(rec savepoint.Record) error {
	var errs []error
	if err := checkLocation(rec.Location); err != nil {
		errs = append(errs, err)
	}
	if rec.Time.IsZero() {
		errs = append(errs, errors.New("time: the time the savepoint was taken is needed"))
	}
	if rec.Reason == "" {
		rec.Reason = savepoint.ReasonImported
	}
	if !rec.Reason.Valid() {
		errs = append(errs, fmt.Errorf("reason %q: not a savepoint reason", rec.Reason))
	}
	if !rec.OnDelete().Valid() {
		errs = append(errs, fmt.Errorf("onDelete %q: want Keep, Dispose or empty", rec.OnDelete()))
	}
	if hasLocation(s.Savepoints.Records, rec.Location) {
		errs = append(errs, fmt.Errorf("location %s: already in the history", rec.Location))
	}
	if len(s.Savepoints.Records) >= MaxStoredSavepoints {
		errs = append(errs, fmt.Errorf("the history holds %d savepoints, as many as a status holds (MaxStoredSavepoints)", len(s.Savepoints.Records)))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidSavepoint, errors.Join(errs...))
	}
	rec.SetDisposal(savepoint.Disposal{})
	s.Savepoints = s.Savepoints.Add(rec)
	if rec.Time.After(s.Latest.Time) || s.Latest.Location == "" {
		s.Latest = rec
	}
	return nil
}

// checkLocation reports what makes loc no savepoint location Flink could
// restore from.
func checkLocation(loc string) error {
	switch {
	case loc == "":
		return errors.New("location: empty")
	case len(loc) > flinkapi.MaxStoragePath:
		return fmt.Errorf("location: %d bytes, more than %d", len(loc), flinkapi.MaxStoragePath)
	case strings.IndexFunc(loc, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Errorf("location %q: contains a control character", loc)
	case slices.Contains(strings.FieldsFunc(loc, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
		return fmt.Errorf("location %q: a \"..\" segment names another directory", loc)
	}
	return nil
}
