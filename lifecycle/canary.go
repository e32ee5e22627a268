package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// Canary proves, with no downtime, that a new version of a running job
// on a session cluster restores the job's state, before an upgrade stops
// the old job: it takes a savepoint of the old job without stopping it,
// starts the new version from it beside the old job (the canary job),
// waits until the canary is healthy as BlueGreen's new job (restored,
// RUNNING with all its tasks, a checkpoint completed after its start,
// and Ready, if set), then cancels the canary. The old job is never
// touched: it runs on whatever the outcome. Once the canary passed
// (Succeeded), upgrade the job (Upgrade: stop with savepoint, start the
// new version from it); the Controller does so on its own
// (BlueGreenPolicy.Canary). A canary that fails, or is not healthy
// within the window, is cancelled: OutcomeCanaryFailed.
//
// It needs free task slots for the canary beside the old job, checked
// before the savepoint (with Preflight, the new job's plan against the
// free slots only). During the canary both jobs run and emit output: the
// canary's sinks must be idempotent or transactional, or write where they
// do no harm. The savepoint it took stays (Progress.Savepoint.Location): the
// canary's restore does not claim it.
//
// Build it anew from its configuration whenever convenient: all its state
// is in the Progress passed to Step, except Ready, which is asked again.
type Canary struct {
	// Env is the client, the clock, the timing and where to report.
	Env
	// Job is the running job whose state the canary restores.
	Job flinkapi.JobID
	// JarID, JarFile and Run describe the new version as for Submit;
	// Run.SavepointPath is set to the savepoint taken.
	JarID   flinkapi.JarID
	JarFile string
	Run     flinkapi.RunJarRequest
	// JobID, if set, is the canary job's id; it must differ from Job.
	// Empty: an id derived from Job (distinct from those of Upgrade and
	// BlueGreen), looked up in Flink's job list before the savepoint, so
	// that a Canary started again with a lost Progress adopts the canary
	// the first one started.
	JobID flinkapi.JobID
	// Slots is the number of free task slots the canary needs, as for
	// BlueGreen.
	Slots int
	// Window bounds the time from the canary running until it is healthy
	// (DefaultBlueGreenWindow).
	Window time.Duration
	// Ready, if set, is asked as BlueGreen.Ready.
	Ready func(ctx context.Context, api API, job flinkapi.JobID) (bool, error)
	// Preflight, if set and not Disabled, checks the new version's plan
	// against the old job and the free task slots first, as for BlueGreen.
	Preflight *PreflightPolicy
}

// canaryJobID is the id of the canary job of the job seed names.
func canaryJobID(seed flinkapi.JobID) flinkapi.JobID {
	return derivedJobID("canary\x00" + strings.ToLower(string(seed)))
}

// blueGreen is the BlueGreen that carries c out, up to the canary's
// health.
func (c *Canary) blueGreen() *BlueGreen {
	return &BlueGreen{Env: c.Env, Job: c.Job, JarID: c.JarID, JarFile: c.JarFile, Run: c.Run, JobID: c.JobID, Slots: c.Slots,
		Window: c.Window, Ready: c.Ready, Preflight: c.Preflight, canary: true}
}

// Step does at most one request. The operation goes as BlueGreen does
// (Preflight, Observe, CheckSlots, Adopt, the savepoint, the submission
// of the canary with p.NewJobID recorded before the jar run, its health)
// up to the canary healthy (p.Healthy), then cancels the canary (the
// phases of Stop on p.NewJobID). It ends Succeeded once Flink confirmed
// the healthy canary ended (p.NewJobID empty again, p.Location the
// savepoint it restored); Blocked when the old job does not run, the
// slots do not suffice, or the preflight refuses (p.Decision
// policy.ReasonPreflightRefused), with nothing started; in the outcome of
// a savepoint that failed; SubmitFailed when JobID is Job's;
// CanaryFailed when Flink refused the canary's jar run (a restore that
// failed shows so), or once a canary that failed or was not healthy in
// time was cancelled; TimedOut if a cancel of the canary
// timed out (p.NewJobID then names a job that may run). The old job is
// never stopped. Step returns an error only for a canceled context.
func (c *Canary) Step(ctx context.Context, p *Progress) (Result, error) {
	op := c.blueGreen()
	return bound(ctx, p, opCanary, c.Job, &op.Env, c.Run.ProgramArgs, func(ctx context.Context) (Result, error) {
		return frame(ctx, p, opCanary, c.OnTransition, c.Logger, func() (Result, error) {
			res, err := op.step(ctx, p)
			if res.Done && (p.Outcome == OutcomeBlueGreenAborted || p.Outcome == OutcomeSubmitFailed && p.Replace.RestoreFrom != "") {
				// (Flink refused the canary's jar run: it reports a restore
				// that failed, or a program that cannot run, as the job's
				// failure to start.)
				p.Outcome, res.Outcome, p.JobID = OutcomeCanaryFailed, OutcomeCanaryFailed, p.Replace.PreviousJobID
				p.Reason = "restore canary: " + p.Reason
			}
			return res, err
		})
	})
}

// derivedJobID is the id derived from the old job for the new one.
func (b *BlueGreen) derivedJobID() flinkapi.JobID {
	if b.canary {
		return canaryJobID(b.Job)
	}
	return blueGreenJobID(b.Job)
}

// cancelCanary starts the cancel of the canary, seen healthy: it proved
// that the new version restores the old job's state.
func (b *BlueGreen) cancelCanary(ctx context.Context, p *Progress) (Result, error) {
	p.Stop.Strategy, p.JobID = CancelWithoutState, p.Submit.NewJobID
	return subStep(ctx, p, b.stopOp(p))
}

// canaryCancelled steps the cancel of the healthy canary and ends the
// operation once Flink confirmed it ended.
func (b *BlueGreen) canaryCancelled(ctx context.Context, p *Progress) (Result, error) {
	res, err := b.stopOp(p).step(ctx, p)
	if err != nil || !res.Done {
		return res, err
	}
	p.Replace.StopOutcome = p.Outcome
	canary, reason := p.Submit.NewJobID, p.Reason
	switch p.Outcome {
	case OutcomeSucceeded, OutcomeJobGone, OutcomeJobTerminal:
		p.Submit.NewJobID, p.JobID = "", p.Replace.PreviousJobID // ended: nothing to adopt
		return finish(p, OutcomeSucceeded, fmt.Sprintf("restore canary passed: the job %s restored the savepoint %s of %s and completed a checkpoint; "+
			"it was cancelled (%s), the old job %s runs on untouched", canary, p.Replace.RestoreFrom, p.Replace.PreviousJobID, reason, p.Replace.PreviousJobID)), nil
	}
	p.JobID = p.Replace.PreviousJobID
	return finish(p, OutcomeTimedOut, fmt.Sprintf("the canary job %s was healthy, but cancelling it failed (%s): it may run beside the old job %s",
		canary, reason, p.Replace.PreviousJobID)), nil
}

// startPreflight begins BlueGreen's preflight, or records why none runs,
// and otherwise goes on to observe the old job.
func (b *BlueGreen) startPreflight(p *Progress) {
	p.Phase = PhaseObserve
	switch {
	case b.Preflight == nil || b.Preflight.Disabled:
	case b.Deployer != nil:
		p.Replace.Preflight = &Preflight{Skipped: PreflightSkipApplication}
	default:
		p.Replace.Preflight, p.Phase = &Preflight{}, PhasePreflight
	}
}

// stepPreflight sends the next request of BlueGreen's preflight (the
// jar's upload if it has no id, the new plan, the old job's vertices,
// the free slots), then judges: the new job runs beside the old one, so
// only the cluster's free slots count. A refusal ends the operation
// Blocked before the savepoint.
func (b *BlueGreen) stepPreflight(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if !now.Before(p.Deadline) && p.LastError != "" {
		return finish(p, OutcomeTimedOut, "the deadline passed during the preflight: "+p.LastError), nil
	}
	f := &preflightRun{client: b.oldAPI, pol: b.Preflight, job: b.Job, jarID: b.JarID, jarFile: b.JarFile, jars: b.Jars, run: b.Run,
		timing: b.Timing, beside: true}
	more, err := f.read(ctx, p)
	switch {
	case err != nil:
		return f.failed(p, err), nil
	case more:
		return Result{}, nil
	}
	v := f.verdict(p)
	p.LastError = ""
	if !v.Allowed() {
		p.Replace.Decision = policy.ReasonPreflightRefused
		return finish(p, OutcomeBlocked, "preflight: "+v.Message()+"; nothing was started, the old job "+string(b.Job)+" is left as it is"), nil
	}
	p.Phase = PhaseObserve
	return Result{}, nil
}
