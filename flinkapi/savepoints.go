package flinkapi

import (
	"context"
	"strings"
)

// FormatType is the binary format of a savepoint (1.15+).
type FormatType string

// Savepoint formats.
const (
	FormatCanonical FormatType = "CANONICAL" // portable between state backends
	FormatNative    FormatType = "NATIVE"    // the state backend's own format: faster, less portable
)

func (f FormatType) validate() error {
	switch f {
	case "", FormatCanonical, FormatNative:
		return nil
	}
	return invalidInput("savepoint format type %q: want CANONICAL or NATIVE", f)
}

// SavepointRequest describes a savepoint to trigger.
type SavepointRequest struct {
	// TargetDirectory is where the savepoint is written; empty uses the
	// cluster's default (execution.checkpointing.savepoint-dir). Without
	// either, Flink fails the operation.
	TargetDirectory string
	// FormatType is the savepoint format (1.15+); empty uses Flink's default.
	FormatType FormatType
	// CancelJob cancels the job once the savepoint completes ("cancel with
	// savepoint"). Prefer StopWithSavepoint on Flink 1.9 and later.
	CancelJob bool
	// TriggerID makes the trigger idempotent (1.15+): a trigger with an id
	// Flink already knows starts nothing new. Record it before calling, and
	// send the same id again after an error. Empty: the client chooses one
	// when the cluster supports it.
	TriggerID TriggerID
}

type savepointRequestWire struct {
	TargetDirectory string     `json:"target-directory,omitempty"`
	CancelJob       bool       `json:"cancel-job"`
	TriggerID       TriggerID  `json:"triggerId,omitempty"`
	FormatType      FormatType `json:"formatType,omitempty"`
}

// TriggerSavepoint starts a savepoint and returns its operation; read the
// result with OperationStatus or a Waiter. Flink acknowledges every trigger:
// an unknown or finished job shows up as a failure of the operation. The
// request is retried only when it carries a trigger id.
//
// Flink REST: POST /jobs/:jobid/savepoints (1.5+; triggerId and formatType 1.15+)
func (c *Client) TriggerSavepoint(ctx context.Context, job JobID, req SavepointRequest) (Operation, error) {
	path, err := jobPath(job, "/savepoints")
	if err != nil {
		return Operation{}, err
	}
	if err := checkTargetDirectory(req.TargetDirectory); err != nil {
		return Operation{}, err
	}
	if err := req.FormatType.validate(); err != nil {
		return Operation{}, err
	}
	trigger, err := c.triggerID(ctx, req.TriggerID, req.FormatType)
	if err != nil {
		return Operation{}, err
	}
	body := savepointRequestWire{TargetDirectory: req.TargetDirectory, CancelJob: req.CancelJob, TriggerID: trigger, FormatType: req.FormatType}
	return c.trigger(ctx, OpSavepoint, job, path, body, trigger != "")
}

// StopRequest describes a stop with savepoint.
type StopRequest struct {
	// TargetDirectory: as in SavepointRequest.
	TargetDirectory string
	// Drain emits MAX_WATERMARK before stopping, firing all event-time
	// timers: use it only when the job ends for good.
	Drain bool
	// FormatType: as in SavepointRequest (1.15+).
	FormatType FormatType
	// TriggerID: as in SavepointRequest (1.15+).
	TriggerID TriggerID
}

type stopRequestWire struct {
	TargetDirectory string     `json:"targetDirectory,omitempty"`
	Drain           bool       `json:"drain"`
	TriggerID       TriggerID  `json:"triggerId,omitempty"`
	FormatType      FormatType `json:"formatType,omitempty"`
}

// StopWithSavepoint takes a savepoint and then stops the job (it ends
// FINISHED). Read the result, with the savepoint's location, with
// OperationStatus or a Waiter. The request is retried only when it carries a
// trigger id.
//
// Flink REST: POST /jobs/:jobid/stop (1.9+; triggerId and formatType 1.15+)
func (c *Client) StopWithSavepoint(ctx context.Context, job JobID, req StopRequest) (Operation, error) {
	path, err := jobPath(job, "/stop")
	if err != nil {
		return Operation{}, err
	}
	if err := checkTargetDirectory(req.TargetDirectory); err != nil {
		return Operation{}, err
	}
	if err := req.FormatType.validate(); err != nil {
		return Operation{}, err
	}
	if _, err := c.requireFeature(ctx, FeatureStopWithSavepoint); err != nil {
		return Operation{}, err
	}
	trigger, err := c.triggerID(ctx, req.TriggerID, req.FormatType)
	if err != nil {
		return Operation{}, err
	}
	body := stopRequestWire{TargetDirectory: req.TargetDirectory, Drain: req.Drain, TriggerID: trigger, FormatType: req.FormatType}
	return c.trigger(ctx, OpStopWithSavepoint, job, path, body, trigger != "")
}

// triggerID checks the version-gated trigger fields and returns the trigger
// id to send: the caller's, a new one if the cluster supports them, or none.
func (c *Client) triggerID(ctx context.Context, id TriggerID, format FormatType) (TriggerID, error) {
	v, err := c.Version(ctx)
	if err != nil {
		return "", err
	}
	if format != "" {
		if err := v.require(FeatureSavepointFormatType); err != nil {
			return "", err
		}
	}
	if id != "" {
		if err := id.Validate(); err != nil {
			return "", err
		}
		return id, v.require(FeatureClientTriggerID)
	}
	if v.Supports(FeatureClientTriggerID) {
		return NewTriggerID(), nil
	}
	return "", nil
}

func checkTargetDirectory(dir string) error {
	if dir == "" {
		return nil
	}
	if strings.TrimSpace(dir) == "" {
		return invalidInput("target directory is blank; leave it empty to use the cluster's default")
	}
	return checkStoragePath("target directory", dir)
}

// MaxStoragePath is the longest savepoint path or target directory the
// client sends, in bytes: file systems and object stores take far less
// (4,096 is Linux's PATH_MAX), and a longer one is a mistake.
const MaxStoragePath = 4096

// checkStoragePath refuses a savepoint path or target directory before
// it is sent: one over MaxStoragePath bytes, with a control character, or
// with a ".." segment, which would name a directory other than the one
// written.
func checkStoragePath(what, p string) error {
	if len(p) > MaxStoragePath {
		return invalidInput("%s is %d bytes long, over the %d the client sends: %q", what, len(p), MaxStoragePath, truncate(p, 100))
	}
	if i := strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return invalidInput("%s %q contains a control character (byte %d)", what, truncate(p, 100), i)
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return invalidInput("%s %q has a \"..\" segment: give the directory itself", what, truncate(p, 100))
		}
	}
	return nil
}

type disposalRequestWire struct {
	Path string `json:"savepoint-path"`
}

// DisposeSavepoint deletes a savepoint's files through the JobManager. It is
// not retried: Flink's disposal request has no client trigger id.
//
// A path over MaxStoragePath bytes, with a control character or a ".."
// segment is refused before anything is sent (ErrInvalidInput).
//
// Flink REST: POST /savepoint-disposal
func (c *Client) DisposeSavepoint(ctx context.Context, savepointPath string) (Operation, error) {
	if strings.TrimSpace(savepointPath) == "" {
		return Operation{}, invalidInput("savepoint path is empty")
	}
	if err := checkStoragePath("savepoint path", savepointPath); err != nil {
		return Operation{}, err
	}
	body := disposalRequestWire{Path: savepointPath}
	return c.trigger(ctx, OpSavepointDisposal, "", "/savepoint-disposal", body, false)
}
