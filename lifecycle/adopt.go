package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// DeletePolicy says what Controller.Delete does with the job
// (JobSpec.OnDelete). The strings are stable.
type DeletePolicy string

// Delete policies.
const (
	// DeleteTeardown: the job is stopped with a final savepoint (the
	// default).
	DeleteTeardown DeletePolicy = "Teardown"
	// DeleteDetach: the job is left running, untouched: Delete sends
	// nothing to it and records the status as deleted, the job detached
	// (JobStatus.Detached).
	DeleteDetach DeletePolicy = "Detach"
)

// Reasons of an adoption and a detach.
const (
	// ReasonAdoptFailed: the job JobSpec.Adopt names cannot be adopted
	// (unknown to Flink, ended, or not in a session cluster the
	// Controller reads); nothing was started.
	ReasonAdoptFailed = "AdoptFailed"
	// ReasonDetached: Delete left the job running, no longer managed
	// (DeleteDetach).
	ReasonDetached = "Detached"
	// ReasonForeignJob: a deploy would find a job that has not ended
	// under the id derived for its new job, and nothing the status
	// records shows that this deployment started it (Plan only; the
	// action ends OutcomeForeignJob). Plan.Adopt names the job.
	ReasonForeignJob = "ForeignJob"
)

// adoptTarget is the job spec asks to adopt in st: spec.Adopt when st is
// fresh (no job recorded, or a status after a Delete) and no action is
// in flight; empty otherwise. A status that records a job of its own
// never adopts another, nor the same one again.
func adoptTarget(spec JobSpec, st *JobStatus) flinkapi.JobID {
	if spec.Adopt == "" || st.InFlight() || st.JobID != "" && !deleted(st) {
		return ""
	}
	return spec.Adopt
}

// adoptable reports whether a job in state s exists and is not ending:
// running, starting, or restarting itself.
func adoptable(s flinkapi.JobState) bool {
	switch s {
	case flinkapi.JobRunning, flinkapi.JobCreated, flinkapi.JobInitializing, flinkapi.JobRestarting, flinkapi.JobFailing, flinkapi.JobReconciling:
		return true
	}
	return false
}

// observeAdopt reads the job to adopt: its details, and the checkpoint
// statistics of one that can be adopted (two GETs at most).
func (c *Controller) observeAdopt(ctx context.Context, api API, id flinkapi.JobID) (Observation, error) {
	obs := Observation{Restarts: -1, FreeSlots: -1, Requests: 1}
	d, err := api.Job(ctx, id)
	switch {
	case errors.Is(err, flinkapi.ErrMisconfigured):
		return obs, err
	case err != nil && !flinkapi.IsJobNotFound(err):
		obs.Error = errMessage(err)
		return obs, nil
	}
	obs.Reachable, obs.Job = true, d
	if d == nil || !adoptable(d.State) {
		return obs, nil
	}
	obs.Requests++
	obs.CheckpointsRead = true
	stats, err := api.Checkpoints(ctx, id)
	switch {
	case err == nil && cachedDiscarded(stats):
		// Flink discards a running job's checkpoint once a newer one
		// completed: these statistics came from its cache, filled
		// before that one completed.
		obs.CheckpointsError = "the checkpoint statistics Flink answered from its cache show the latest checkpoint discarded"
		return obs, nil
	case err == nil:
		obs.Checkpoints = stats
	case errors.Is(err, flinkapi.ErrNotFound) && !flinkapi.IsJobNotFound(err):
		obs.CheckpointsAbsent = true
		return obs, nil
	default:
		// A failover, a leader election: no answer that the job has no
		// state. The adoption waits for a read that answers.
		obs.CheckpointsError = errMessage(err)
		return obs, nil
	}
	if checkpointRecord(obs).Location == "" {
		return obs, nil
	}
	// Its latest checkpoint is state that outlives the job only if the
	// job retains its checkpoints: Flink discards them when it ends
	// otherwise.
	obs.Requests++
	cfg, err := api.CheckpointConfig(ctx, id)
	switch {
	case err == nil:
		obs.CheckpointsRetained = retains(cfg, flinkapi.JobFailed)
	case !permanent(err):
		obs.CheckpointsError = errMessage(err)
	}
	return obs, nil
}

// planAdopt plans the adoption spec asks for in a fresh status: the
// Adopt action for a job that runs, else the reason it cannot be adopted.
// ok is false when no adoption is pending. While one is, nothing else is
// planned: no deploy starts a second job beside the one to adopt.
func (c *Controller) planAdopt(spec JobSpec, st *JobStatus, obs Observation, p Plan) (Plan, bool) {
	id := adoptTarget(spec, st)
	if id == "" {
		return p, false
	}
	p.RequeueAfter = c.poll()
	d := obs.Job
	switch {
	case c.Deployer != nil:
		return adoptRefused(p, fmt.Sprintf("job %s cannot be adopted: this Controller starts its jobs through a Deployer and reads no session cluster; nothing was started", id)), true
	case d == nil && !obs.Reachable:
		p.State, p.Reason = policy.Unknown, string(policy.ReasonJobManagerUnreachable)
		p.Message = fmt.Sprintf("job %s to adopt could not be read (%s); nothing was started", id, orText(obs.Error, "not observed"))
		return p, true
	case d == nil || d.ID != id:
		return adoptRefused(p, fmt.Sprintf("job %s to adopt is unknown to Flink; nothing was started", id)), true
	case !adoptable(d.State):
		return adoptRefused(p, fmt.Sprintf("job %s to adopt is %s: only a job that runs (or starts, or restarts) is adopted; nothing was started", id, d.State)), true
	case obs.CheckpointsError != "":
		// Adopted only with its newest state known.
		p.State, p.Reason = policy.Unknown, string(policy.ReasonJobManagerUnreachable)
		p.Message = fmt.Sprintf("the checkpoints of job %s to adopt could not be read (%s); read again before it is adopted", id, obs.CheckpointsError)
		p.RequeueAfter = min(c.poll(), max(c.Timing.backoff(2), c.Timing.cache()))
		return p, true
	}
	p.Action, p.Target = ActionAdopt, spec.Job
	p.Message = adoptMessage(d, obs)
	return p, true
}

func adoptRefused(p Plan, why string) Plan {
	p.State, p.Reason, p.Blocked, p.Message = policy.DeployFailed, ReasonAdoptFailed, why, why
	return p
}

func orText(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// adoptMessage says what an adoption of d records.
func adoptMessage(d *flinkapi.JobDetails, obs Observation) string {
	msg := fmt.Sprintf("job %s (%s since %s) adopted as the deployment's job, not restarted", d.ID, d.State, jobStart(d, time.Time{}).UTC().Format(time.RFC3339))
	if rec := adoptedState(obs); rec.Location != "" {
		msg += "; its newest state is " + rec.Location
	}
	return msg
}

// jobStart is d's start time, or otherwise when it is unknown.
func jobStart(d *flinkapi.JobDetails, otherwise time.Time) time.Time {
	if d.StartTime.IsZero() {
		return otherwise
	}
	return d.StartTime
}

// adoptedSavepoint is the newest savepoint of the job in obs: its latest
// completed one, or the one it was started from.
func adoptedSavepoint(obs Observation) savepoint.Record {
	stats, d := obs.Checkpoints, obs.Job
	if stats == nil || d == nil {
		return savepoint.Record{}
	}
	var sp, restored savepoint.Record
	if s := stats.LatestSavepoint; s != nil && s.ExternalPath != "" && !s.Discarded {
		sp = savepoint.Record{Location: s.ExternalPath, Time: s.TriggerTime, JobID: d.ID, Reason: savepoint.ReasonUser}
	}
	if r := stats.LatestRestored; r != nil && r.IsSavepoint && r.ExternalPath != "" {
		restored = savepoint.Record{Location: r.ExternalPath, Time: r.RestoreTime, Reason: savepoint.ReasonUser}
	}
	return newest(sp, restored)
}

// adoptedCheckpoint is the latest checkpoint of the job in obs if it
// outlives the job: the job retains its checkpoints
// (Observation.CheckpointsRetained). A checkpoint of a job that does
// not is discarded at its next one and when the job ends: no state to
// restart it from.
func adoptedCheckpoint(obs Observation) savepoint.Record {
	if !obs.CheckpointsRetained {
		return savepoint.Record{}
	}
	return checkpointRecord(obs)
}

// adoptedState is the newest state of the job in obs: a savepoint
// (adoptedSavepoint) or its retained checkpoint (adoptedCheckpoint), by
// time.
func adoptedState(obs Observation) savepoint.Record {
	return newest(adoptedSavepoint(obs), adoptedCheckpoint(obs))
}

// adoptJob carries out the Adopt action: the job in obs becomes the
// deployment's job, running spec's Job as the spec asserts, with its
// newest state, stable if it is, and reports the transition to Done. It
// sends no request; a status write lost after it adopts the job again at
// the next call.
func (c *Controller) adoptJob(ctx context.Context, spec JobSpec, st *JobStatus, obs Observation, now time.Time) (Result, error) {
	d := obs.Job
	if st.JobID != d.ID {
		// Another job than the one the status knew: nothing of that
		// one's life carries over but the savepoint history, the jar
		// uploaded and the restore requests handled.
		*st = JobStatus{FormatVersion: st.FormatVersion, Name: st.Name, Savepoints: st.Savepoints, JarID: st.JarID, JarFile: st.JarFile,
			JarDigest: st.JarDigest, RestoreHandled: st.RestoreHandled, Situation: st.Situation}
	}
	st.JobID, st.JobState, st.DeployedAt = d.ID, d.State, jobStart(d, now)
	spec.Job.DeepCopyInto(&st.Deployed)
	spec.Job.DeepCopyInto(&st.Target)
	st.Deleted, st.Detached, st.Suspended, st.Result, st.Cluster = false, "", false, JobResult{}, Cluster{}
	st.Action, st.ActionSpec, st.RetryAt = ActionAdopt, nil, time.Time{}
	if sp := adoptedSavepoint(obs); sp.Location != "" && !hasLocation(st.Savepoints.Records, sp.Location) {
		c.recordSavepoint(st, sp)
	}
	if cp := adoptedCheckpoint(obs); cp.Location != "" && cp.Time.After(st.Latest.Time) {
		st.Latest = cp
	}
	if stableNow(d, obs) {
		st.markStable()
	}
	msg := adoptMessage(d, obs)
	st.Progress = Progress{Phase: PhaseDone, Outcome: OutcomeSucceeded, JobID: d.ID, Reason: msg}
	c.set(st, policy.Running, ActionReason(ActionAdopt, OutcomeSucceeded), msg)
	report(ctx, string(ActionAdopt), c.OnTransition, c.Logger, "", &st.Progress)
	return Result{RequeueAfter: soon, Outcome: OutcomeSucceeded}, nil
}

// adopted is the operation of ActionAdopt: the adoption is recorded
// whole when it starts (adoptJob), so it is never in flight.
type adopted struct{}

func (adopted) Step(_ context.Context, p *Progress) (Result, error) {
	return Result{Done: true, Outcome: p.Outcome}, nil
}

func buildAdopted(*Controller, JobSpec, *JobStatus, opBase) Stepper { return adopted{} }

// detach carries out a Delete under DeleteDetach: the job runs on, and
// the status records it deleted and the job detached. It sends nothing.
// An OnDelete this release does not know is refused: nothing is done.
func (c *Controller) detach(spec JobSpec, st *JobStatus) (Result, error) {
	if spec.OnDelete != DeleteDetach {
		err := fmt.Errorf("%w: %w", ErrInvalidSpec, onDeleteError(spec.OnDelete))
		c.set(st, st.State, ReasonInvalidSpec, err.Error())
		return Result{RequeueAfter: c.poll()}, err
	}
	st.Deleted, st.Detached = true, st.JobID
	c.set(st, policy.Deleted, ReasonDetached, fmt.Sprintf("job %s is detached: it runs on, no longer managed; nothing was sent to it", st.JobID))
	return Result{Done: true, Outcome: OutcomeSucceeded}, nil
}

// forgetDetached makes a deploy from the status of a detached job start
// a job of its own: the detached job stays the record in
// JobStatus.Detached and is never read, stopped or replaced. A
// checkpoint of it recorded while it ran on (latestRanOn) is no longer
// the newest state unless a Storage (storage) shows it at the start: the
// detached job ran on, and Flink discards it once the next completes.
func forgetDetached(st *JobStatus, a JobAction, storage bool) {
	if a != ActionDeploy || st.Detached == "" || st.JobID != st.Detached {
		return
	}
	if !storage && latestRanOn(st) {
		st.Latest = newestRecord(st.Savepoints.Records)
	}
	st.JobID, st.JobState, st.Cluster, st.Stable, st.StableJobID = "", "", Cluster{}, JobTemplate{}, ""
}

func onDeleteError(p DeletePolicy) error {
	return fmt.Errorf("onDelete: unknown policy %q; want Teardown or Detach", p)
}

// adoptErrors are the errors of s's Adopt and OnDelete, for Validate.
func (s JobSpec) adoptErrors() []error {
	var errs []error
	if s.Adopt != "" {
		if err := s.Adopt.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("adopt: %w", err))
		}
	}
	switch s.OnDelete {
	case "", DeleteTeardown, DeleteDetach:
	default:
		errs = append(errs, onDeleteError(s.OnDelete))
	}
	return errs
}

// detachedFrom is the detached job a deploy from st starts beside: the
// status records no job of its own (forgetDetached).
func detachedFrom(st *JobStatus) flinkapi.JobID {
	if st.JobID != "" {
		return ""
	}
	return st.Detached
}

// planDerived is the look-up of Controller.Plan for a plan that starts
// a job where none runs: the job the action would find under its new
// job's derived id (one request, GET /jobs). A job there that has not
// ended is named in p.Adopt: taken over when its id derives from the
// deployment's own job, else (an id derived from the Name or from a
// detached job) the plan is blocked, as the action would end
// OutcomeForeignJob. A job list that cannot be read leaves p as it is:
// the action reads it again.
func (c *Controller) planDerived(ctx context.Context, api API, st *JobStatus, obs Observation, p *Plan) {
	if p.InFlight || c.Deployer != nil || !actions[p.Action].replaces && p.Action != ActionRestart {
		return
	}
	id, from := c.firstDerived(st, p.Action)
	owned := from != ""
	if id == "" || owned && obs.Job != nil && !obs.Job.State.IsGloballyTerminal() {
		// The job runs: the action stops it first, and looks up the
		// ids derived from it only once it has ended.
		return
	}
	jobs, err := api.ListJobs(ctx)
	if err != nil {
		return
	}
	// As the action's look-up: a job that started before the
	// deployment's own is passed over, never shown as its own.
	found, state, _, ok, err := resolveDerived(ctx, api, jobs, id, true, from)
	if err != nil || !ok || state == "" || state.IsGloballyTerminal() {
		return
	}
	p.Adopt = found
	if !owned {
		msg := foreignMessage(found, state)
		p.Blocked, p.Reason, p.Message, p.State = msg, ReasonForeignJob, msg, policy.DeployFailed
	}
}

// firstDerived is the first id the new job of action a would get from
// st (replacer.firstJobID), and the deployment's own job it derives
// from: empty for an id derived from the Name or from a detached job.
func (c *Controller) firstDerived(st *JobStatus, a JobAction) (id, from flinkapi.JobID) {
	job, detached := st.JobID, detachedFrom(st)
	if a == ActionDeploy && st.Detached != "" && st.JobID == st.Detached {
		job, detached = "", st.Detached // forgetDetached
	}
	switch {
	case job != "":
		return derivedJobID(strings.ToLower(string(job))), job
	case detached != "":
		return detachedJobID(detached), ""
	case c.Name != "":
		return nameJobID(c.Namespace, c.Name), ""
	}
	return "", ""
}
