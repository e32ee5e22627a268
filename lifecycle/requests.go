package lifecycle

import (
	"fmt"
	"time"

	"github.com/flinkkit/flinkkit/policy"
)

// ActionRequests asks for one-shot actions (format 5), each by a token:
// a non-empty token that differs from the one JobStatus.RequestsHandled
// records asks for its action once; the same token again asks for
// nothing. Any string serves as a token (a counter, a time, a UUID); an
// operator's annotation or a kubectl patch writes a new one to ask again.
//
// The Controller records a token as handled in the status before the
// action sends its first request (the action's first step sends none),
// so that a crash, a lost status write or a retry never carries it out
// twice, and a status write lost before that record carries it out once
// all the same. A request is carried out once whatever its outcome: a
// savepoint that failed is not tried again for the same token (the
// status's Action, Progress.Outcome and Reason say how it ended); write
// a new token to ask again.
//
// Requests wait while an action is in flight, while the spec's Job or
// restore request changes the job (the change goes first) and while the
// spec asks for the job suspended; several pending at once are carried
// out one at a time in this order: Savepoint, Checkpoint,
// Restart, Rollback, each as soon as the job is in a state it applies to
// (one that waits does not hold up the next). While one waits, the
// status's Message says so.
type ActionRequests struct {
	// Savepoint asks for a savepoint of the running job, which keeps
	// running (ActionSavepointRequest): taken with savepoint.ReasonUser
	// and recorded in the savepoint history like the periodic ones. It
	// waits until the job runs with all its tasks running.
	Savepoint string `json:"savepoint,omitempty"`
	// Checkpoint asks for a checkpoint of the running job through the
	// REST API (ActionCheckpointRequest; Flink 1.17+, on older releases it
	// ends Unsupported and nothing is sent). It waits until the job runs
	// with all its tasks running. JobStatus.Checkpoint records the id of
	// the checkpoint it completed.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Restart asks for the job restarted with its state, from the same
	// template (ActionRestartRequest): the running job is stopped and
	// started again as the update policy's mode says (Savepoint: stopped
	// with a savepoint and started from it; LastState: from its newest
	// checkpoint; Stateless: without state). A job that failed, was lost,
	// cancelled or halted is started again from its newest state, as a
	// restart chooses it (its newest savepoint or retained checkpoint
	// within the RestartPolicy's MaxStateAge), whatever the update mode;
	// one that Flink restarts itself as a running one. It waits while
	// the job starts, while the JobManager does not answer, and for a
	// finished job.
	Restart string `json:"restart,omitempty"`
	// Rollback asks for the job sent back to the last stable template
	// (JobStatus.Stable) from the state the upgrade started from
	// (ActionRollback), whether or not RollbackPolicy is enabled; the
	// template rolled back from is not deployed again until the spec's Job
	// changes. With nothing to roll back to (no stable template known, or
	// the stable one is the one deployed) or no state to go back with
	// (an upgrade that kept state but recorded none), the token is recorded
	// as handled and nothing else happens: Reason ReasonNothingToRollBack
	// or ReasonNoRollbackState. It waits like Restart.
	Rollback string `json:"rollback,omitempty"`
}

// RequestKind names one of the one-shot requests of ActionRequests. The
// strings are stable.
type RequestKind string

// Kinds of requests, named after their fields in ActionRequests.
const (
	RequestSavepoint  RequestKind = "Savepoint"
	RequestCheckpoint RequestKind = "Checkpoint"
	RequestRestart    RequestKind = "Restart"
	RequestRollback   RequestKind = "Rollback"
)

// requestKinds lists the kinds of requests in the order in which pending
// ones are carried out.
var requestKinds = []RequestKind{RequestSavepoint, RequestCheckpoint, RequestRestart, RequestRollback}

// maxRequestTokenLength bounds a token of ActionRequests, in bytes: the
// length of a Kubernetes object name.
const maxRequestTokenLength = 253

// Reasons of a Rollback request that had nothing to do: its token is
// recorded as handled, and the job is left as it is.
const (
	// ReasonNothingToRollBack: no stable template is known, or the job
	// runs it.
	ReasonNothingToRollBack = "NothingToRollBack"
	// ReasonNoRollbackState: the upgrade kept state but recorded none to
	// go back with.
	ReasonNoRollbackState = "NoRollbackState"
)

// Pending returns the kinds of the requests of r whose tokens handled
// does not record, in the order Savepoint, Checkpoint, Restart, Rollback.
func (r ActionRequests) Pending(handled ActionRequests) []RequestKind {
	var out []RequestKind
	for _, k := range requestKinds {
		if tok := r.token(k); tok != "" && tok != handled.token(k) {
			out = append(out, k)
		}
	}
	return out
}

func (r ActionRequests) token(k RequestKind) string {
	switch k {
	case RequestSavepoint:
		return r.Savepoint
	case RequestCheckpoint:
		return r.Checkpoint
	case RequestRestart:
		return r.Restart
	case RequestRollback:
		return r.Rollback
	}
	return ""
}

func (r *ActionRequests) set(k RequestKind, tok string) {
	switch k {
	case RequestSavepoint:
		r.Savepoint = tok
	case RequestCheckpoint:
		r.Checkpoint = tok
	case RequestRestart:
		r.Restart = tok
	case RequestRollback:
		r.Rollback = tok
	}
}

// validate reports the tokens of r that are too long, each naming its
// field.
func (r ActionRequests) validate() []error {
	var errs []error
	for _, k := range requestKinds {
		if n := len(r.token(k)); n > maxRequestTokenLength {
			errs = append(errs, fmt.Errorf("requests.%s: a token of %d bytes is longer than %d", fieldName(k), n, maxRequestTokenLength))
		}
	}
	return errs
}

// fieldName is the JSON name of k's field in ActionRequests.
func fieldName(k RequestKind) string {
	s := []byte(k)
	s[0] += 'a' - 'A'
	return string(s)
}

// planRequests plans the first pending request of the spec that applies
// to the job's situation (the job at rest: no action in flight, no change
// of the spec's Job to carry out), and reports whether it did: p then
// starts the request's action, or, for a request with nothing to do,
// reports why (p.Request set either way: the token is recorded as
// handled).
func (c *Controller) planRequests(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p *Plan) bool {
	for _, k := range spec.Requests.Pending(st.RequestsHandled) {
		if c.planRequest(spec, st, obs, now, p, k) {
			p.Request = k
			return true
		}
	}
	return false
}

// planRequest plans request k, or reports that it waits.
func (c *Controller) planRequest(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p *Plan, k RequestKind) bool {
	switch k {
	case RequestSavepoint, RequestCheckpoint:
		if p.Situation != SituationRunning || !tasksRunning(obs.Job) || k == RequestSavepoint && st.LateSavepoint.Pending() {
			return false
		}
		p.Action, p.Target = ActionSavepointRequest, st.Deployed
		if k == RequestCheckpoint {
			p.Action = ActionCheckpointRequest
		}
		return true
	case RequestRestart:
		if !restartable(p.Situation) {
			return false
		}
		p.Action, p.Target = ActionRestartRequest, st.Deployed
		c.restorePoint(spec, st, obs, now, p)
		return true
	case RequestRollback:
		if !restartable(p.Situation) {
			return false
		}
		c.planRollbackRequest(spec, st, obs, now, p)
		return true
	}
	return false
}

// restartable reports whether a Restart or Rollback request applies to a
// job in situation s: one that runs (or that Flink restarts itself), or
// one that is down.
func restartable(s Situation) bool {
	return s == SituationRunning || s == SituationRestarting || s.down()
}

// planRollbackRequest plans a Rollback request: a rollback to the last
// stable template, or, with nothing to roll back to, the reason why.
func (c *Controller) planRollbackRequest(spec JobSpec, st *JobStatus, obs Observation, now time.Time, p *Plan) {
	switch {
	case st.Stable.IsZero() || st.Deployed.equal(st.Stable):
		p.Reason = ReasonNothingToRollBack
		p.Message = "the rollback request " + quoteToken(spec.Requests.Rollback) + " has nothing to do: no stable job other than the deployed one is known"
	case st.UpgradeFrom.Location == "" && spec.Update.Mode != policy.UpgradeStateless:
		p.Reason = ReasonNoRollbackState
		p.Message = "the rollback request " + quoteToken(spec.Requests.Rollback) +
			" has nothing to do: the upgrade recorded no state to go back to the stable job with"
	default:
		p.Action, p.Target = ActionRollback, st.Stable
		c.restorePoint(spec, st, obs, now, p)
		return
	}
	p.State = policy.DeploymentStateOf(c.policyObservations(st, obs, now), policy.Recorded{JobID: st.JobID})
	p.RequeueAfter = soon // the job is planned as usual at the next call
}

func quoteToken(tok string) string { return fmt.Sprintf("%q", tok) }

// requestsWaiting adds to p, which starts no action, the pending
// requests that wait for the job to be in a state they apply to.
func (c *Controller) requestsWaiting(spec JobSpec, st *JobStatus, p Plan) Plan {
	pending := spec.Requests.Pending(st.RequestsHandled)
	if p.Action != "" || p.Request != "" || len(pending) == 0 {
		return p
	}
	p.Settled = false
	msg := fmt.Sprintf("the %s request %s waits", pending[0], quoteToken(spec.Requests.token(pending[0])))
	if len(pending) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(pending)-1)
	}
	switch pending[0] {
	case RequestSavepoint, RequestCheckpoint:
		msg += " for the job to run all its tasks"
		if pending[0] == RequestSavepoint && st.LateSavepoint.Pending() {
			msg += " and the savepoint triggered at " + stamp(st.LateSavepoint.TriggerTime) + " past its deadline to be found"
		}
	default:
		msg += " for the job to run or be down"
	}
	if p.Message != "" {
		msg = p.Message + "; " + msg
	}
	p.Message = msg
	return p
}

// takeRequest records the token of the request plan carries out as
// handled, before the action's first step (which sends nothing): the
// caller stores it with the action, so that the request is carried out
// once per token.
func (c *Controller) takeRequest(spec JobSpec, st *JobStatus, plan Plan) {
	if plan.Request != "" && !plan.InFlight {
		st.RequestsHandled.set(plan.Request, spec.Requests.token(plan.Request))
	}
}
