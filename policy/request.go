package policy

import (
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// RestoreRequest is a user's explicit request to start the job from state
// they chose: after an incident, to roll back to older state, to move a
// job between clusters, or to bootstrap a deployment from state taken
// elsewhere. It is meant to be embedded in a custom resource's spec.
//
// Token identifies one request: the user changes it each time they ask
// again, and the caller records the token of the last request carried out
// (Observations.RestoreHandled), so a request is never replayed. A
// request whose Token is the handled one is ignored.
//
// +kubebuilder:object:generate=false
type RestoreRequest struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. flinkkit writes no request: whoever writes one may
	// set it to the FormatVersion it was written for, and Validate refuses
	// a version newer than this release reads.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Path is the savepoint's (or retained checkpoint's) location, as
	// Flink's savepointPath takes it: "s3://bucket/savepoints/savepoint-…".
	Path string `json:"path,omitempty"`
	// Token is chosen by the user and changes with every new request.
	Token string `json:"token,omitempty"`
	// Time is when the state was taken, if known. It gives the state's age
	// for CheckAge and for the warning of decisions that do not check it.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	Time time.Time `json:"time,omitzero"`
	// CheckAge applies the update policy's MaxStateAge to the request: a
	// request for older state, or of unknown age, is refused. Without it
	// an older request goes ahead with a warning.
	CheckAge bool `json:"checkAge,omitempty"`
	// AllowNonRestoredState lets the new job skip state that no operator of
	// the new job graph claims (Flink's allowNonRestoredState), in addition
	// to the update policy's setting.
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`
	// CancelWithoutSavepoint cancels a running job without taking a
	// savepoint first: the state the job has now is lost unless a retained
	// checkpoint keeps it. By default a running job is stopped with a
	// savepoint, so the user can go back to it.
	CancelWithoutSavepoint bool `json:"cancelWithoutSavepoint,omitempty"`
}

// IsZero reports whether r asks for nothing: every field is unset, but
// for a FormatVersion this release reads. A request of a newer format
// version is not zero, whatever its fields: it may ask for what this
// release cannot see, and Validate refuses it.
func (r RestoreRequest) IsZero() bool {
	if checkFormat("RestoreRequest", r.FormatVersion) == nil {
		r.FormatVersion = 0
	}
	return r == RestoreRequest{}
}

// Validate reports what makes r unusable, as *FieldError values joined
// with errors.Join: a request needs both a path and a token, and the path
// must be one line without surrounding spaces. The zero request is valid.
// A FormatVersion newer than this release reads is reported alone, by an
// error matching ErrUnknownFormat.
func (r RestoreRequest) Validate() error {
	if err := checkFormat("RestoreRequest", r.FormatVersion); err != nil {
		return err
	}
	if r.IsZero() {
		return nil
	}
	var errs []error
	switch {
	case r.Path == "":
		errs = append(errs, &FieldError{Field: "path", Message: "a restore request needs the path of a savepoint or retained checkpoint"})
	case strings.TrimSpace(r.Path) != r.Path || strings.ContainsFunc(r.Path, unicode.IsControl):
		errs = append(errs, &FieldError{Field: "path", Value: r.Path, Message: "must be one line without leading or trailing spaces"})
	}
	if strings.TrimSpace(r.Token) == "" {
		errs = append(errs, &FieldError{Field: "token", Value: r.Token,
			Message: "a restore request needs a token, changed for every new request, so that it is carried out once"})
	}
	return errors.Join(errs...)
}

// Reasons of decisions on a restore request (EvaluateUpdate).
const (
	// ReasonRestoreRequested (Proceed or CancelFirst): the user asked to
	// start from RestoreRequest.Path; it takes precedence over the state
	// the policy would choose.
	ReasonRestoreRequested Reason = "RestoreRequested"
	// ReasonSavepointBeforeRestore (StopWithSavepoint): a restore was
	// requested and the job runs: stop it with a savepoint first, so the
	// state it has now can be gone back to, then start from the requested
	// path.
	ReasonSavepointBeforeRestore Reason = "SavepointBeforeRestore"
	// ReasonInvalidRestoreRequest (Block): the request lacks a path or a
	// token, its path is malformed, or it is of a format version newer
	// than this release reads.
	ReasonInvalidRestoreRequest Reason = "InvalidRestoreRequest"
	// ReasonRestoreRequestTooOld (Block): the request asked for the age
	// check and its state is older than MaxStateAge.
	ReasonRestoreRequestTooOld Reason = "RestoreRequestTooOld"
	// ReasonRestoreRequestAgeUnknown (Block): the request asked for the age
	// check but does not say when its state was taken.
	ReasonRestoreRequestAgeUnknown Reason = "RestoreRequestAgeUnknown"
)

// WarningStateOlderThanMaxAge is Details.Warning of a decision that
// restores from requested state older than the policy's MaxStateAge
// without checking it (RestoreRequest.CheckAge is off).
const WarningStateOlderThanMaxAge Reason = "StateOlderThanMaxAge"

// Pending reports whether r asks for something that was not carried out
// yet, given the token of the last request handled: a request with
// another token, or one without a token (which is invalid, and is refused
// as such rather than ignored).
func (r RestoreRequest) Pending(handled string) bool {
	return !r.IsZero() && (r.Token == "" || r.Token != handled)
}

// evaluateRestore decides an update that carries out a pending restore
// request; d holds the Details known so far and p has its defaults.
func evaluateRestore(d *Decision, p *UpdatePolicy, obs *Observations, now time.Time) {
	req := &obs.Restore
	d.Details.Requested = true
	if err := req.Validate(); err != nil {
		d.Action, d.Reason, d.Details.Failure = ActionBlock, ReasonInvalidRestoreRequest, err.Error()
		return
	}
	rp := RestorePoint{Kind: KindSavepoint, Path: req.Path, Time: req.Time,
		AllowNonRestoredState: p.AllowNonRestoredState || req.AllowNonRestoredState}
	maxAge := p.MaxStateAge.Std()
	old := !req.Time.IsZero() && !young(rp, maxAge, now)
	switch {
	case req.CheckAge && req.Time.IsZero():
		d.Action, d.Reason = ActionBlock, ReasonRestoreRequestAgeUnknown
		return
	case req.CheckAge && old:
		d.Action, d.Reason, d.Details.Newest = ActionBlock, ReasonRestoreRequestTooOld, rp
		return
	case old:
		d.Details.Warning = WarningStateOlderThanMaxAge
	}
	job := obs.Job
	timeout := p.TransitionTimeout.Std()
	if !obs.JobManagerReachable {
		if !obs.FirstDeploy {
			unreachable(d, obs.LastContact, timeout, now)
			return
		}
		job = nil
		d.Details.JobState = ""
	}
	cancel := p.Mode == UpgradeStateless || req.CancelWithoutSavepoint
	if !cancel && savepointWait(d, &obs.Savepoint, p.SavepointDeadline.Std(), now) {
		return
	}
	proceed := func(a Action) {
		d.Action, d.Reason, d.RestorePoint = a, ReasonRestoreRequested, rp
		d.RequeueAfter = defaultPollInterval
	}
	switch {
	case job == nil || job.State.IsTerminal():
		proceed(ActionProceed)
	case job.State == flinkapi.JobRunning && cancel:
		proceed(ActionCancelFirst)
	case job.State == flinkapi.JobRunning:
		restoreRunning(d, p, obs, now, proceed)
	case transitionWait(d, job, timeout, now):
	case job.State == flinkapi.JobCancelling:
		stuckBlock(d, job, timeout, now)
	default:
		proceed(ActionCancelFirst)
		d.Reason = ReasonJobStuck
		d.Details.Since, d.Details.Limit = transitionSince(job, now), timeout
	}
}

// restoreRunning decides for a RUNNING job when a restore is requested:
// a savepoint first, retried while attempts remain; then the job keeps
// running unless the policy lets it go without one.
func restoreRunning(d *Decision, p *UpdatePolicy, obs *Observations, now time.Time, proceed func(Action)) {
	spLimit := p.SavepointDeadline.Std()
	st := &obs.Savepoint
	if st.Location != "" {
		// The job's state is saved: it can be cancelled.
		proceed(ActionCancelFirst)
		return
	}
	failed, timedOut := savepointEnded(st, spLimit, now)
	if !failed {
		d.Action, d.Reason = ActionStopWithSavepoint, ReasonSavepointBeforeRestore
		d.Deadline = now.Add(spLimit)
		d.RequeueAfter = defaultPollInterval
		return
	}
	attempts := max(obs.SavepointAttempts, 1)
	d.Details.Count, d.Details.Max = attempts, p.SavepointAttempts
	d.Details.TimedOut, d.Details.Failure = timedOut, st.Failure
	d.Details.Since, d.Details.Limit = st.TriggerTime, spLimit
	switch {
	case attempts < p.SavepointAttempts:
		d.Action, d.Reason = ActionStopWithSavepoint, ReasonSavepointRetry
		d.Deadline = now.Add(spLimit)
		d.RequeueAfter = defaultPollInterval
	case p.FallbackToLastState || p.AllowStartWithoutState:
		// The policy accepts losing the running job's newest state.
		proceed(ActionCancelFirst)
	case timedOut:
		d.Action, d.Reason = ActionBlock, ReasonSavepointTimedOut
	default:
		d.Action, d.Reason = ActionBlock, ReasonSavepointFailed
	}
}

// writeRequest explains the decisions particular to a restore request;
// false for other reasons.
func writeRequest(b *strings.Builder, d *Decision) bool {
	t := &d.Details
	switch d.Reason {
	case ReasonRestoreRequested:
		b.WriteString("restore requested: ")
		switch {
		case d.Action == ActionCancelFirst:
			b.WriteString("cancel the job without a savepoint, then ")
		case t.JobState == "":
			b.WriteString("no job runs; ")
		default:
			b.WriteString("the job is ")
			b.WriteString(string(t.JobState))
			b.WriteString("; ")
		}
		b.WriteString("start the new job from ")
		b.WriteString(d.RestorePoint.Path)
		writeRequestAge(b, d.RestorePoint.Time, t)
	case ReasonSavepointBeforeRestore:
		b.WriteString("restore requested and the job is RUNNING: stop it with a savepoint first, so its current state is kept (deadline ")
		writeClock(b, d.Deadline)
		b.WriteString("), then start from the requested path")
	case ReasonInvalidRestoreRequest:
		b.WriteString("the restore request is invalid: ")
		b.WriteString(oneLine(t.Failure))
	case ReasonRestoreRequestTooOld:
		b.WriteString("the requested state is ")
		writeDur(b, age(t.Newest.Time, t.Now))
		b.WriteString(" old, older than the limit of ")
		writeDur(b, t.MaxStateAge)
		b.WriteString(", and the request asks for the age check; drop checkAge or raise maxStateAge to restore it anyway")
	case ReasonRestoreRequestAgeUnknown:
		b.WriteString("the request asks for the age check, but does not say when its state was taken; set its time or drop checkAge")
	default:
		return false
	}
	return true
}

func writeRequestAge(b *strings.Builder, taken time.Time, t *Details) {
	if taken.IsZero() {
		b.WriteString(" (age unknown; not checked)")
		return
	}
	b.WriteString(" (")
	writeDur(b, age(taken, t.Now))
	b.WriteString(" old")
	if t.Warning == WarningStateOlderThanMaxAge {
		b.WriteString("; warning: older than the limit of ")
		writeDur(b, t.MaxStateAge)
		b.WriteString(", not checked as the request does not ask for it")
	}
	b.WriteString(")")
}

// DeepCopyInto copies in into out. in must be non-nil.
func (in *RestoreRequest) DeepCopyInto(out *RestoreRequest) { *out = *in }

// DeepCopy returns a copy of in, or nil for nil.
func (in *RestoreRequest) DeepCopy() *RestoreRequest {
	if in == nil {
		return nil
	}
	out := new(RestoreRequest)
	in.DeepCopyInto(out)
	return out
}
