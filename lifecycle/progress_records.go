package lifecycle

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// formatRecords is the first format that keeps what only some operations
// record in one record per operation (Progress.Stop, Submit, Replace, ...)
// instead of at the top level of the Progress.
const formatRecords = 8

// UnmarshalJSON reads a Progress of any format: one of format 8 or later
// as it is, one of an older format, which kept every field at the top
// level, into the records of format 8 (flatProgress says where each
// field goes).
func (p *Progress) UnmarshalJSON(b []byte) error {
	type plain Progress
	var v struct {
		FormatVersion int `json:"formatVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.FormatVersion >= formatRecords {
		return json.Unmarshal(b, (*plain)(p))
	}
	// The header, and any record a caller filled before the first Step
	// (which writes the format): an older format's "savepoint" is the
	// status of the trigger, read by flatProgress.
	var q struct {
		plain
		Savepoint json.RawMessage `json:"savepoint"`
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	var f flatProgress
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*p = Progress(q.plain)
	f.into(p)
	return savepointInto(p, q.Savepoint)
}

// savepointInto reads the "savepoint" of a Progress of an older format
// into p: the status of its trigger, or, in a Progress this release wrote
// before its first Step recorded the format, the record of format 8 (an
// object with a "status" or a "resend").
func savepointInto(p *Progress, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return err
	}
	if keys["status"] != nil || keys["resend"] != nil {
		return json.Unmarshal(raw, &p.Savepoint)
	}
	return json.Unmarshal(raw, &p.Savepoint.Status)
}

// flatProgress holds the fields but "savepoint" (savepointInto) that a
// Progress of format 7 or older kept at its top level and format 8 keeps in the record of the operation that
// sets them, under the same JSON names but for the few the record
// renames (disposeFailed, rescalePath, checkpointID).
type flatProgress struct {
	Resend      time.Time    `json:"resend"`
	Location    string       `json:"location"`
	Strategy    StopStrategy `json:"strategy"`
	Unconfirmed bool         `json:"unconfirmed"`

	JarID    flinkapi.JarID `json:"jarID"`
	NewJobID flinkapi.JobID `json:"newJobID"`
	Cluster  Cluster        `json:"cluster"`
	Adopted  bool           `json:"adopted"`

	PreviousJobID flinkapi.JobID        `json:"previousJobID"`
	Ending        Outcome               `json:"ending"`
	Observed      Observed              `json:"observed"`
	Decision      policy.Reason         `json:"decision"`
	RestoreFrom   string                `json:"restoreFrom"`
	RestoreKind   policy.RestoreKind    `json:"restoreKind"`
	Attempts      int                   `json:"attempts"`
	StopOutcome   Outcome               `json:"stopOutcome"`
	Request       policy.RestoreRequest `json:"request"`
	Preflight     *Preflight            `json:"preflight"`

	Recorded bool `json:"recorded"`

	Disposed      int                `json:"disposed"`
	DisposeFailed int                `json:"disposeFailed"`
	Disposal      flinkapi.TriggerID `json:"disposal"`

	NewJobStart time.Time `json:"newJobStart"`
	Healthy     time.Time `json:"healthy"`
	AbortReason string    `json:"abortReason"`

	Parallelism int                `json:"parallelism"`
	Scheduler   policy.Scheduler   `json:"scheduler"`
	RescalePath policy.RescalePath `json:"rescalePath"`
	Vertices    string             `json:"vertices"`

	CheckpointID int64 `json:"checkpointID"`
}

// into sets each field f holds in the record of p that keeps it. The
// parallelism of a BlueGreen or a Canary was the task slots its new job
// needs.
func (f *flatProgress) into(p *Progress) {
	set(&p.Savepoint.Resend, f.Resend)
	set(&p.Savepoint.Location, f.Location)
	set(&p.Stop.Strategy, f.Strategy)
	set(&p.Stop.Unconfirmed, f.Unconfirmed)
	set(&p.Submit.JarID, f.JarID)
	set(&p.Submit.NewJobID, f.NewJobID)
	set(&p.Submit.Cluster, f.Cluster)
	set(&p.Submit.Adopted, f.Adopted)
	set(&p.Replace.PreviousJobID, f.PreviousJobID)
	set(&p.Replace.Ending, f.Ending)
	set(&p.Replace.Observed, f.Observed)
	set(&p.Replace.Decision, f.Decision)
	set(&p.Replace.RestoreFrom, f.RestoreFrom)
	set(&p.Replace.RestoreKind, f.RestoreKind)
	set(&p.Replace.Attempts, f.Attempts)
	set(&p.Replace.StopOutcome, f.StopOutcome)
	set(&p.Replace.Request, f.Request)
	set(&p.Replace.Preflight, f.Preflight)
	set(&p.Teardown.Recorded, f.Recorded)
	set(&p.Dispose.Disposed, f.Disposed)
	set(&p.Dispose.Failed, f.DisposeFailed)
	set(&p.Dispose.Disposal, f.Disposal)
	set(&p.BlueGreen.NewJobStart, f.NewJobStart)
	set(&p.BlueGreen.Healthy, f.Healthy)
	set(&p.BlueGreen.AbortReason, f.AbortReason)
	slots := p.Operation == opBlueGreen || p.Operation == opCanary
	set(&p.BlueGreen.Slots, pick(slots, f.Parallelism))
	set(&p.Rescale.Parallelism, pick(!slots, f.Parallelism))
	set(&p.Rescale.Scheduler, f.Scheduler)
	set(&p.Rescale.Path, f.RescalePath)
	set(&p.Rescale.Vertices, f.Vertices)
	set(&p.Checkpoint.ID, f.CheckpointID)
}

// set stores v in dst unless v is its type's zero value.
func set[T any](dst *T, v T) {
	if !reflect.ValueOf(&v).Elem().IsZero() {
		*dst = v
	}
}

// pick returns v if ok, else v's zero value.
func pick[T any](ok bool, v T) T {
	if !ok {
		var zero T
		return zero
	}
	return v
}
