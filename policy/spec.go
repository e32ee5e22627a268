package policy

import (
	"errors"
	"strconv"
	"time"
)

// UpgradeMode says how a job's state is carried across an update.
type UpgradeMode string

// Upgrade modes.
const (
	// UpgradeStateless cancels the job and starts the new one without state.
	UpgradeStateless UpgradeMode = "Stateless"
	// UpgradeSavepoint stops a running job with a savepoint and restores the
	// new one from it (takeSavepointOnUpdate: true in other operators). A
	// retained checkpoint is used only if FallbackToLastState allows it.
	UpgradeSavepoint UpgradeMode = "Savepoint"
	// UpgradeLastState takes no new savepoint when young enough state exists:
	// the new job restores from the newest savepoint or retained checkpoint
	// within MaxStateAge (takeSavepointOnUpdate: false). Without such state
	// it takes a savepoint first.
	UpgradeLastState UpgradeMode = "LastState"
)

// RestartMode says whether a job that failed is started again.
type RestartMode string

// Restart modes.
const (
	// RestartNever leaves a failed job failed.
	RestartNever RestartMode = "Never"
	// RestartFromLatestState restarts a failed or lost job from the newest
	// savepoint or retained checkpoint within MaxStateAge.
	RestartFromLatestState RestartMode = "FromLatestState"
)

// Defaults that WithDefaults fills in for unset (zero) fields.
const (
	DefaultUpgradeMode       = UpgradeSavepoint
	defaultMaxStateAge       = Duration(24 * time.Hour)
	defaultSavepointDeadline = Duration(10 * time.Minute)
	DefaultSavepointAttempts = 2
	DefaultTransitionTimeout = Duration(5 * time.Minute)
	defaultRestartMode       = RestartNever
	defaultMaxRestarts       = 3
	defaultRestartWindow     = Duration(time.Hour)
	defaultRestartBackoff    = Duration(30 * time.Second)
)

// defaultPollInterval is the longest RequeueAfter a decision asks for while
// something is in progress (a savepoint, a transitional job state, an
// action just taken).
const defaultPollInterval = 10 * time.Second

// UpdatePolicy says how a job is updated when its spec changes. It is meant
// to be embedded in a custom resource's spec. Zero fields take the defaults
// listed at WithDefaults.
type UpdatePolicy struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. flinkkit writes no policy: whoever writes one may set it
	// to the FormatVersion it was written for, and Validate refuses a
	// version newer than this release reads.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Mode is the upgrade mode. Default: Savepoint.
	// +kubebuilder:validation:Enum=Stateless;Savepoint;LastState
	Mode UpgradeMode `json:"mode,omitempty"`
	// MaxStateAge is the oldest state (savepoint or checkpoint, by the time
	// it was taken) an update may restore from. Default: 24h.
	MaxStateAge Duration `json:"maxStateAge,omitzero"`
	// AllowNonRestoredState lets the new job skip state that no operator
	// of the new job graph claims (Flink's allowNonRestoredState).
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`
	// FallbackToLastState lets a Savepoint-mode update restore from the
	// newest state within MaxStateAge, retained checkpoints included, when
	// the savepoint cannot be taken (it failed or timed out after
	// SavepointAttempts tries, or the job is not running). Default: false.
	FallbackToLastState bool `json:"fallbackToLastState,omitempty"`
	// SavepointDeadline is how long a savepoint may stay in flight before it
	// counts as timed out. Default: 10m.
	SavepointDeadline Duration `json:"savepointDeadline,omitzero"`
	// SavepointAttempts is how many savepoints (each with a new trigger id)
	// an update may trigger before it falls back or blocks. Default: 2.
	// +kubebuilder:validation:Minimum=0
	SavepointAttempts int `json:"savepointAttempts,omitempty"`
	// TransitionTimeout is how long a job may stay in a transitional state
	// (CANCELLING, RESTARTING, INITIALIZING, ...) or the JobManager may stay
	// silent before the decision stops waiting. Default: 5m.
	TransitionTimeout Duration `json:"transitionTimeout,omitzero"`
	// AllowStartWithoutState lets a stateful update start the new job
	// without state when no state within MaxStateAge exists at all. It is
	// an explicit opt-in to losing state. Default: false.
	AllowStartWithoutState bool `json:"allowStartWithoutState,omitempty"`
}

// WithDefaults returns p with every unset (zero) field set to its default:
// Mode Savepoint, MaxStateAge 24h, SavepointDeadline 10m,
// SavepointAttempts 2, TransitionTimeout 5m. Booleans stay false.
func (p UpdatePolicy) WithDefaults() UpdatePolicy {
	if p.Mode == "" {
		p.Mode = DefaultUpgradeMode
	}
	if p.MaxStateAge == 0 {
		p.MaxStateAge = defaultMaxStateAge
	}
	if p.SavepointDeadline == 0 {
		p.SavepointDeadline = defaultSavepointDeadline
	}
	if p.SavepointAttempts == 0 {
		p.SavepointAttempts = DefaultSavepointAttempts
	}
	if p.TransitionTimeout == 0 {
		p.TransitionTimeout = DefaultTransitionTimeout
	}
	return p
}

// Validate reports every field of p that holds a value the policy cannot
// use, as *FieldError values joined with errors.Join. Zero values are
// valid: they mean "default". A FormatVersion newer than this release
// reads is reported alone, by an error matching ErrUnknownFormat: the
// other fields may mean what this release does not know.
func (p UpdatePolicy) Validate() error {
	if err := checkFormat("UpdatePolicy", p.FormatVersion); err != nil {
		return err
	}
	var errs []error
	switch p.Mode {
	case "", UpgradeStateless, UpgradeSavepoint, UpgradeLastState:
	default:
		errs = append(errs, &FieldError{Field: "mode", Value: string(p.Mode),
			Message: "unknown upgrade mode; want Stateless, Savepoint or LastState"})
	}
	errs = checkNonNegative(errs, "maxStateAge", p.MaxStateAge)
	errs = checkNonNegative(errs, "savepointDeadline", p.SavepointDeadline)
	errs = checkNonNegative(errs, "transitionTimeout", p.TransitionTimeout)
	if p.SavepointAttempts < 0 {
		errs = append(errs, &FieldError{Field: "savepointAttempts", Value: strconv.Itoa(p.SavepointAttempts),
			Message: "must not be negative (0 means the default, 2)"})
	}
	return errors.Join(errs...)
}

// RestartPolicy says whether and how a job that failed is started again. It
// is meant to be embedded in a custom resource's spec. Zero fields take the
// defaults listed at WithDefaults.
type RestartPolicy struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. flinkkit writes no policy: whoever writes one may set it
	// to the FormatVersion it was written for, and Validate refuses a
	// version newer than this release reads.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Mode is Never or FromLatestState. Default: Never.
	// +kubebuilder:validation:Enum=Never;FromLatestState
	Mode RestartMode `json:"mode,omitempty"`
	// MaxRestarts is how many restarts are allowed within Window.
	// Default: 3.
	// +kubebuilder:validation:Minimum=0
	MaxRestarts int `json:"maxRestarts,omitempty"`
	// Window is the period MaxRestarts counts over. A restart more than
	// Window after the previous one starts a new count. Default: 1h.
	Window Duration `json:"window,omitzero"`
	// Backoff is the least time between the later of the last restart and
	// the job's failure, and the next restart. Default: 30s.
	Backoff Duration `json:"backoff,omitzero"`
	// MaxStateAge is the oldest state a restart may restore from.
	// Default: 24h.
	MaxStateAge Duration `json:"maxStateAge,omitzero"`
	// TransitionTimeout is how long a job may stay in a transitional state,
	// or the JobManager may stay silent, before the decision stops waiting.
	// Default: 5m.
	TransitionTimeout Duration `json:"transitionTimeout,omitzero"`
}

// WithDefaults returns p with every unset (zero) field set to its default:
// Mode Never, MaxRestarts 3, Window 1h, Backoff 30s, MaxStateAge 24h,
// TransitionTimeout 5m.
func (p RestartPolicy) WithDefaults() RestartPolicy {
	if p.Mode == "" {
		p.Mode = defaultRestartMode
	}
	if p.MaxRestarts == 0 {
		p.MaxRestarts = defaultMaxRestarts
	}
	if p.Window == 0 {
		p.Window = defaultRestartWindow
	}
	if p.Backoff == 0 {
		p.Backoff = defaultRestartBackoff
	}
	if p.MaxStateAge == 0 {
		p.MaxStateAge = defaultMaxStateAge
	}
	if p.TransitionTimeout == 0 {
		p.TransitionTimeout = DefaultTransitionTimeout
	}
	return p
}

// Validate reports every field of p that holds a value the policy cannot
// use, as *FieldError values joined with errors.Join. Zero values are
// valid: they mean "default". A FormatVersion newer than this release
// reads is reported alone, by an error matching ErrUnknownFormat.
func (p RestartPolicy) Validate() error {
	if err := checkFormat("RestartPolicy", p.FormatVersion); err != nil {
		return err
	}
	var errs []error
	switch p.Mode {
	case "", RestartNever, RestartFromLatestState:
	default:
		errs = append(errs, &FieldError{Field: "mode", Value: string(p.Mode),
			Message: "unknown restart mode; want Never or FromLatestState"})
	}
	if p.MaxRestarts < 0 {
		errs = append(errs, &FieldError{Field: "maxRestarts", Value: strconv.Itoa(p.MaxRestarts),
			Message: "must not be negative (0 means the default, 3; use mode Never for no restarts)"})
	}
	errs = checkNonNegative(errs, "window", p.Window)
	errs = checkNonNegative(errs, "backoff", p.Backoff)
	errs = checkNonNegative(errs, "maxStateAge", p.MaxStateAge)
	errs = checkNonNegative(errs, "transitionTimeout", p.TransitionTimeout)
	return errors.Join(errs...)
}

// restartsInWindow returns how many of restarts still count against
// MaxRestarts at now: all of them while now is within Window of the last
// restart, none after. Record CountRestart's result when restarting.
func (p RestartPolicy) restartsInWindow(restarts int, lastRestart, now time.Time) int {
	p = p.WithDefaults()
	if lastRestart.IsZero() || now.Sub(lastRestart) >= p.Window.Std() || restarts < 0 {
		return 0
	}
	return restarts
}

// CountRestart returns the restart count to record when the job is
// restarted at now, given the count and time recorded at the last restart.
func (p RestartPolicy) CountRestart(restarts int, lastRestart, now time.Time) int {
	return p.restartsInWindow(restarts, lastRestart, now) + 1
}

// FieldError is one invalid field of a policy. Field is the field's JSON
// name.
//
// +kubebuilder:object:generate=false
type FieldError struct {
	Field   string // JSON name of the field, such as "maxStateAge"
	Value   string // the rejected value, formatted
	Message string // what is wrong and what is accepted
}

// Error formats the field, its value and what is wrong with it.
func (e *FieldError) Error() string {
	return "policy: " + e.Field + " " + strconv.Quote(clip(e.Value, 64)) + ": " + e.Message
}

func checkNonNegative(errs []error, field string, d Duration) []error {
	if d < 0 {
		errs = append(errs, &FieldError{Field: field, Value: d.String(), Message: "must not be negative (0 means the default)"})
	}
	return errs
}
