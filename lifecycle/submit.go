package lifecycle

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Submit starts a job from a jar on a session cluster, optionally from a
// savepoint, with a job id chosen and recorded before the request so that
// a retried submission never starts a second job. Build it anew from its
// configuration whenever convenient: all its state is in the Progress
// passed to Step.
type Submit struct {
	// Env is the client, the clock, the timing and where to report:
	// shared by every operation.
	Env
	// JarID is an uploaded jar to run. If empty, JarFile is uploaded once
	// and its id recorded in Progress.Submit.JarID.
	JarID flinkapi.JarID
	// JarFile is the path of the jar file to upload when JarID is empty,
	// read from Env.Jars (see Jars: with none, it is refused).
	JarFile string
	// Run is the jar run request: entry class, arguments, parallelism,
	// SavepointPath to restore from. Its JobID is ignored: Step chooses it,
	// or uses JobID.
	Run flinkapi.RunJarRequest
	// JobID, if set, is the job id to submit with; empty: a new one.
	JobID flinkapi.JobID
	// Deployer, if set, starts the job instead of the jar upload and run:
	// for an application cluster, or any other way of starting a job.
	// JarID, JarFile and Run are then ignored, except Run.SavepointPath
	// and Run.AllowNonRestoredState, which reach it in the DeployRequest.
	// The Client still reads the job's state.
	Deployer Deployer

	// replaces is the job the new one replaces (Upgrade and Restart): a
	// job under the new job's id that Flink shows started before it is
	// no earlier run's of this submission, and is never taken for the
	// new job; with derive the id derived from it is tried instead.
	replaces flinkapi.JobID
	derive   bool
}

// stepDeploy starts the job through the Deployer, in a cluster of its
// own, recorded in Progress.Submit.Cluster.
func (s *Submit) stepDeploy(ctx context.Context, p *Progress, late bool) Result {
	if names, _ := secretNames(s.Run.ProgramArgs); len(names) > 0 {
		return refused(p, "the job's arguments name secrets, "+deployerSecrets)
	}
	p.Requests++
	p.Submit.NewJobID = p.JobID // a job of this id may run from now on
	req := DeployRequest{JobID: p.JobID, JarFile: s.JarFile, EntryClass: s.Run.EntryClass, Args: s.Run.ProgramArgs,
		Parallelism: s.Run.Parallelism, RestorePath: s.Run.SavepointPath, AllowNonRestoredState: s.Run.AllowNonRestoredState}
	req.FlinkConfiguration = ApplicationConfiguration(DeployRequest{JobID: p.JobID, FlinkConfiguration: s.Run.FlinkConfiguration,
		RestorePath: s.Run.SavepointPath, AllowNonRestoredState: s.Run.AllowNonRestoredState})
	c, err := s.Deployer.Deploy(ctx, req)
	switch {
	case err == nil && c.IsZero():
		return refused(p, "the Deployer returned no cluster for job "+string(p.JobID))
	case err == nil:
		p.Submit.Cluster = c
		p.Phase, p.Requests, p.LastError = PhaseWaitRunning, 0, ""
		return Result{RequeueAfter: s.Timing.poll()}
	case errors.Is(err, ErrDeployRefused), ctx.Err() == nil && permanent(err):
		return refused(p, "the deploy was refused: "+err.Error())
	case late:
		// The one more Deploy past the deadline (Deploy is idempotent
		// for the job id: it finds a cluster an earlier call started)
		// failed too.
		p.LastError = err.Error()
		return finish(p, OutcomeTimedOut, s.timedOut(p))
	}
	p.LastError = err.Error()
	return Result{RequeueAfter: s.Timing.backoff(p.Requests)}
}

// refused ends a submission that Flink or the Deployer refused for good:
// nothing was started, so no job id is left for the caller to adopt.
func refused(p *Progress, reason string) Result {
	p.Submit.NewJobID = ""
	return finish(p, OutcomeSubmitFailed, reason)
}

// Step does at most one request. The first Step records the job id in
// p.JobID and sends nothing. Then it uploads the jar (unless JarID is
// set), runs it with that job id, and reads the job's state until it is
// RUNNING. After a run request that may have reached Flink (a transport
// error or a 5xx), the next Step looks the job id up first and runs the
// jar again only if Flink does not know it; an answer that the id is in
// use counts as submitted. The operation ends Succeeded once the job
// runs, SubmitFailed when Flink refuses the jar, JobFailed when the job
// fails before it runs (with the root cause of Flink's exception in the
// Reason, read in one more step: for a savepoint Flink cannot restore, its
// message says why), or TimedOut at the deadline. Step returns an error
// only for a canceled context.
func (s *Submit) Step(ctx context.Context, p *Progress) (Result, error) {
	op := *s
	return bound(ctx, p, opSubmit, s.JobID, &op.Env, s.Run.ProgramArgs, func(ctx context.Context) (Result, error) { return op.step(ctx, p) })
}

// step is Step without the check of p's binding: Upgrade and Restart
// submit through it on their own Progress.
func (s *Submit) step(ctx context.Context, p *Progress) (Result, error) {
	return frame(ctx, p, opSubmit, nil, nil, func() (Result, error) { return s.advance(ctx, p) })
}

// advance is one step of s on p, between the frame's checks.
func (s *Submit) advance(ctx context.Context, p *Progress) (Result, error) {
	now := s.clock().Now()
	if p.Phase == "" {
		s.begin(p, now)
		return Result{}, nil
	}
	if !now.Before(p.Deadline) {
		if res, ended := s.pastDeadline(ctx, p, now); ended {
			return res, nil
		}
	}
	return s.stepPhase(ctx, p, now)
}

// begin records what the submission's first request needs: its
// deadline, the job id and the jar (or that it is to be uploaded).
func (s *Submit) begin(p *Progress, now time.Time) {
	startAt(p, now)
	p.Deadline = now.Add(orDefault(s.Timing.Submit, defaultSubmitTimeout))
	p.JobID = s.JobID
	if p.JobID == "" {
		p.JobID = flinkapi.NewJobID()
	}
	p.Submit.JarID = s.JarID
	p.Phase = PhaseSubmit
	// An upload of the jar file made or found earlier (by a preflight)
	// is looked up before it is run, and uploaded again if it is gone.
	if (p.Submit.JarID == "" || s.JarFile != "") && s.Deployer == nil {
		p.Phase = PhaseUpload
	}
}

// pastDeadline handles a step after p's deadline: it reports true with
// the step's Result when the step ends there (the submission timed out,
// or a Deployer is asked once more), and false when the phase is to be
// stepped as usual (its deadline moved, or its job's state is read once
// more first).
func (s *Submit) pastDeadline(ctx context.Context, p *Progress, now time.Time) (Result, bool) {
	switch {
	case p.Phase == PhaseFailureCause, p.Phase == PhaseWaitRunning:
		// The job's state is read once more first (stepWait): the
		// deadline may have passed while the caller was away.
		return Result{}, false
	case (p.Phase == PhaseUpload || p.Phase == PhaseSubmit) && p.Requests == 0 && p.LastError == "":
		// No request of the phase failed: the time passed while the
		// caller was away, not waiting for Flink. The phase's
		// deadline counts from its first request.
		p.Deadline = now.Add(orDefault(s.Timing.Submit, defaultSubmitTimeout))
		return Result{}, false
	case p.Phase == PhaseSubmit && s.Deployer != nil:
		// A Deploy whose answer was lost may have started the
		// cluster: Deploy once more, which finds it, before the
		// submission times out.
		return s.stepDeploy(ctx, p, true), true
	default:
		return finish(p, OutcomeTimedOut, s.timedOut(p)), true
	}
}

// stepPhase takes the step of p's phase.
func (s *Submit) stepPhase(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	switch p.Phase {
	case PhaseUpload:
		return s.stepUpload(ctx, p), nil
	case PhaseSubmit:
		if s.Deployer != nil {
			return s.stepDeploy(ctx, p, false), nil
		}
		if p.Requests > 0 {
			return s.stepLookup(ctx, p), nil
		}
		return s.stepRun(ctx, p), nil
	case PhaseWaitRunning, PhaseFailureCause:
		api, err := s.reader(p)
		if err != nil {
			return Result{}, err
		}
		if p.Phase == PhaseFailureCause {
			return s.stepFailureCause(ctx, api, p), nil
		}
		return s.stepWait(ctx, api, p, now), nil
	}
	return finish(p, OutcomeSubmitFailed, "unknown phase "+string(p.Phase)+" of a submission"), nil
}

func (s *Submit) stepUpload(ctx context.Context, p *Progress) Result {
	var jar flinkapi.JarID
	var err error
	if p.Submit.JarID != "" {
		jar, err = s.Jars.listedOrUploaded(ctx, s.Client, s.JarFile, p.Submit.JarID)
	} else {
		jar, err = s.Jars.upload(ctx, s.Client, s.JarFile)
	}
	if err != nil {
		if permanent(err) || errors.Is(err, errJarGone) {
			return finish(p, OutcomeSubmitFailed, "jar upload failed: "+errMessage(err))
		}
		p.Requests++
		p.LastError = errMessage(err)
		return Result{RequeueAfter: s.Timing.backoff(p.Requests)}
	}
	p.Submit.JarID, p.Phase, p.Requests, p.LastError = jar, PhaseSubmit, 0, ""
	return Result{}
}

// stepLookup asks Flink for the recorded job id after a run request whose
// answer was lost.
func (s *Submit) stepLookup(ctx context.Context, p *Progress) Result {
	_, err := s.Client.Job(ctx, p.JobID)
	switch {
	case err == nil:
		p.Phase, p.LastError = PhaseWaitRunning, ""
		return Result{}
	case flinkapi.IsJobNotFound(err):
		p.Requests = 0 // not submitted: the next Step runs the jar again
		return Result{}
	}
	p.LastError = errMessage(err)
	return Result{RequeueAfter: s.Timing.backoff(2)}
}

func (s *Submit) stepRun(ctx context.Context, p *Progress) Result {
	req := s.Run
	req.JobID = p.JobID
	p.Requests++
	p.Submit.NewJobID = p.JobID // a job of this id may run from now on
	_, err := s.Client.RunJar(ctx, p.Submit.JarID, req)
	if flinkapi.IsDuplicateJob(err) && s.replaces != "" {
		if res, other := s.otherJob(ctx, p); other {
			return res
		}
	}
	switch {
	case err == nil, flinkapi.IsDuplicateJob(err):
		// Flink answers a jar run once the job is submitted, before it
		// runs: its state is read as the wait's polls say.
		p.Phase, p.Requests, p.LastError = PhaseWaitRunning, 0, ""
		return Result{RequeueAfter: s.waitDelay(p, s.clock().Now())}
	case permanent(err):
		return refused(p, "Flink refused the job: "+errWithCause(err))
	}
	p.LastError = errMessage(err)
	return Result{RequeueAfter: s.Timing.backoff(p.Requests)}
}

// otherJob checks a job id in use, answered to the run request, against
// Flink's start times: a job that started before the job being replaced
// is not one an earlier run of this submission started (its id was
// reused: a deployment created again under its name after its job was
// left running, or a JobManager that forgot the job the id had), and is
// neither waited for nor adopted. With derive the next Step runs the jar
// under the id derived from it; else the submission is refused. It
// reports false when the job may be this submission's. A jobs overview
// that cannot be read is read again, after the run is sent once more.
func (s *Submit) otherJob(ctx context.Context, p *Progress) (Result, bool) {
	// Flink's answer is the job list the look-up needs: the id is held,
	// by a job that may be this submission's until its start time shows
	// it is not; the id derived from it is not known to be held.
	held := []flinkapi.JobIDStatus{{ID: p.JobID, Status: flinkapi.JobRunning}}
	next, _, _, _, err := resolveDerived(ctx, s.Client, held, p.JobID, true, s.replaces)
	switch {
	case err != nil:
		p.Requests, p.Submit.NewJobID, p.LastError = 0, "", errMessage(err)
		return Result{RequeueAfter: s.Timing.backoff(2)}, true
	case next == p.JobID:
		return Result{}, false
	}
	msg := "job " + string(p.JobID) + " runs under the new job's id and started before job " + string(s.replaces) + ", which the new job replaces: it is another's"
	if !s.derive {
		return refused(p, msg+"; choose another JobID"), true
	}
	p.JobID = next
	p.Requests, p.Submit.NewJobID, p.LastError = 0, "", msg+"; the job is started under "+string(p.JobID)
	return Result{}, true
}

// timedOut is the Reason of a submission whose deadline passed.
func (s *Submit) timedOut(p *Progress) string {
	r := "the deadline passed in phase " + string(p.Phase)
	if p.LastError != "" {
		r += ": " + p.LastError
	}
	return r
}

// reader is the client that reads the new job: that of its cluster once
// a Deployer started one, else the Client.
func (s *Submit) reader(p *Progress) (API, error) {
	if s.Deployer == nil || p.Submit.Cluster.IsZero() {
		return s.Client, nil
	}
	return clusterClient(s.Deployer, p.Submit.Cluster)
}

func (s *Submit) stepWait(ctx context.Context, api API, p *Progress, now time.Time) Result {
	state, err := api.JobStatus(ctx, p.JobID)
	past := !now.Before(p.Deadline)
	switch {
	case err == nil:
	case past:
		p.LastError = errMessage(err)
		return finish(p, OutcomeTimedOut, s.timedOut(p))
	case isClusterGone(err):
		// The Deployer's new cluster is gone before its job ran (it
		// failed to start, or was deleted): no wait brings it back.
		return finish(p, OutcomeSubmitFailed, "the new job's cluster "+p.Submit.Cluster.Name+" no longer exists: it did not start, or was deleted ("+errMessage(err)+")")
	case flinkapi.IsJobNotFound(err):
		// Flink may list a job only after its submission has been
		// processed; the deadline ends the wait.
		p.LastError = errMessage(err)
		return Result{RequeueAfter: s.waitDelay(p, now)}
	default:
		p.LastError = errMessage(err)
		return Result{RequeueAfter: s.Timing.backoff(2)}
	}
	p.LastError = ""
	switch {
	case state == flinkapi.JobRunning:
		return finish(p, OutcomeSucceeded, "the job is RUNNING")
	case state.IsGloballyTerminal():
		reason := "the job is " + string(state) + " before it ran"
		if state == flinkapi.JobFailed {
			// The next Step reads why, for the Reason.
			p.Phase, p.Reason = PhaseFailureCause, reason
			return Result{}
		}
		return finish(p, OutcomeJobFailed, reason)
	case past:
		p.LastError = "the job is " + string(state)
		return finish(p, OutcomeTimedOut, s.timedOut(p))
	}
	return Result{RequeueAfter: s.waitDelay(p, now)}
}

// waitDelay is when to read the state of a job being started again: soon
// after the submission began (its deadline is counted from then), at
// Timing.Poll later.
func (s *Submit) waitDelay(p *Progress, now time.Time) time.Duration {
	return s.Timing.pollSince(p.Deadline.Add(-orDefault(s.Timing.Submit, defaultSubmitTimeout)), now)
}

// stepFailureCause ends a submission whose job failed before it ran, with
// the root cause of Flink's newest exception in the Reason (such as a
// savepoint path Flink cannot restore). Without an answer the Reason stays
// as it was: the failure is certain, only its explanation is missing.
func (s *Submit) stepFailureCause(ctx context.Context, api API, p *Progress) Result {
	reason := p.Reason
	if ex, err := api.JobExceptions(ctx, p.JobID, 1); err == nil && len(ex.Entries) > 0 {
		e := ex.Entries[0]
		cause := flinkapi.RootCause(e.StackTrace)
		if cause == "" {
			cause = e.Message
		}
		if cause != "" {
			reason += ": " + cause
		}
	}
	return finish(p, OutcomeJobFailed, reason)
}

// permanent reports whether err is an answer that a retry would not change:
// a 400 (that is not a duplicate job), invalid input, or a feature the
// cluster lacks.
func permanent(err error) bool {
	return errors.Is(err, flinkapi.ErrBadRequest) || errors.Is(err, flinkapi.ErrInvalidInput) || errors.Is(err, flinkapi.ErrUnsupported) ||
		errors.Is(err, ErrInvalidSpec) || errors.Is(err, errJarMissing)
}

// errWithCause is errMessage followed by the root cause of Flink's stack
// trace when it says more: a jar run that fails answers "Could not execute
// application." and names the reason (such as a savepoint path Flink
// cannot restore) only in the innermost cause.
func errWithCause(err error) string {
	msg := errMessage(err)
	var ae *flinkapi.APIError
	if errors.As(err, &ae) {
		if c := flinkapi.RootCause(ae.StackTrace); c != "" && !strings.Contains(msg, c) {
			msg += ": " + c
		}
	}
	return msg
}

// SubmitProgress is the record of a Submit in a Progress: on its own, or
// inside Upgrade, Restart, Rescale, BlueGreen or Canary.
type SubmitProgress struct {
	// JarID is the uploaded jar Submit runs.
	JarID flinkapi.JarID `json:"jarID,omitempty"`
	// NewJobID is the job Submit, Upgrade, Restart, Rescale or BlueGreen
	// started or adopted: recorded in the step that sends the request that
	// submits it (the jar run, or the Deployer's Deploy) before it is sent,
	// and never cleared, whatever the outcome. Non-empty, a job of that id
	// may run (also after TimedOut): the caller adopts it as the
	// deployment's job and names it in the next operation, never the job it
	// replaced. Empty, no submission was sent (Progress.JobID may already
	// hold the id chosen for it), or it was refused for good (SubmitFailed:
	// Flink refused the jar run, or the Deployer the deploy), so that
	// nothing runs under it, or BlueGreen cancelled it (BlueGreenAborted:
	// Flink confirmed it ended).
	NewJobID flinkapi.JobID `json:"newJobID,omitempty"`
	// Cluster is the cluster a Deployer started for NewJobID, recorded
	// once Deploy returned it: its client reads the new job.
	Cluster Cluster `json:"cluster,omitzero"`
	// Adopted reports that NewJobID was started by an earlier operation
	// on the same job (whose Progress was lost) and adopted by this one.
	Adopted bool `json:"adopted,omitempty"`
}
