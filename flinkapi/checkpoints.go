package flinkapi

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// CheckpointStatus is the status of one checkpoint in the statistics.
type CheckpointStatus string

// Checkpoint statuses.
const (
	CheckpointInProgress CheckpointStatus = "IN_PROGRESS"
	CheckpointCompleted  CheckpointStatus = "COMPLETED"
	CheckpointFailed     CheckpointStatus = "FAILED"
)

// CheckpointStats describes one checkpoint or savepoint.
type CheckpointStats struct {
	ID                      int64
	Status                  CheckpointStatus
	IsSavepoint             bool
	SavepointFormat         string // CANONICAL or NATIVE for savepoints (1.16+)
	CheckpointType          string // CHECKPOINT, SAVEPOINT, SYNC_SAVEPOINT, UNALIGNED_CHECKPOINT, ...
	TriggerTime             time.Time
	LatestAck               time.Time
	StateSize               int64 // bytes
	CheckpointedSize        int64 // bytes (1.15+)
	EndToEndDuration        time.Duration
	NumSubtasks             int
	NumAcknowledgedSubtasks int
	ExternalPath            string // where a completed checkpoint or savepoint lies
	Discarded               bool   // the files were removed (subsumed checkpoints)
	FailureTime             time.Time
	FailureMessage          string
	// Vertices are the checkpoint's statistics per job vertex, by vertex
	// id (Flink's "tasks"): only CheckpointDetails reads them; nil from
	// Checkpoints.
	Vertices map[string]VertexCheckpointStats
}

// VertexCheckpointStats is one job vertex's part of a checkpoint.
type VertexCheckpointStats struct {
	Status CheckpointStatus
	// StateSize is the size of the state of all the operators of the
	// vertex's chain, all subtasks together, in bytes (full, not
	// incremental); 0: the vertex holds no state in the checkpoint.
	StateSize               int64
	NumSubtasks             int
	NumAcknowledgedSubtasks int
}

// checkpointTasksWire is the per-vertex part of a checkpoint's details.
type checkpointTasksWire struct {
	Tasks map[string]taskCheckpointStatsWire `json:"tasks"`
}

// taskCheckpointStatsWire is Flink's TaskCheckpointStatistics, of the
// fields all versions from 1.15 send.
type taskCheckpointStatsWire struct {
	Status                  CheckpointStatus `json:"status"`
	StateSize               int64            `json:"state_size"`
	NumSubtasks             int              `json:"num_subtasks"`
	NumAcknowledgedSubtasks int              `json:"num_acknowledged_subtasks"`
}

// checkpointDetailsWire is the answer of the checkpoint details.
type checkpointDetailsWire struct {
	checkpointStatsWire
	checkpointTasksWire
}

type checkpointStatsWire struct {
	ID                      int64            `json:"id"`
	Status                  CheckpointStatus `json:"status"`
	IsSavepoint             bool             `json:"is_savepoint"`
	SavepointFormat         string           `json:"savepointFormat"`
	CheckpointType          string           `json:"checkpoint_type"`
	TriggerTimestamp        int64            `json:"trigger_timestamp"`
	LatestAckTimestamp      int64            `json:"latest_ack_timestamp"`
	StateSize               int64            `json:"state_size"`
	CheckpointedSize        int64            `json:"checkpointed_size"`
	EndToEndDuration        int64            `json:"end_to_end_duration"`
	NumSubtasks             int              `json:"num_subtasks"`
	NumAcknowledgedSubtasks int              `json:"num_acknowledged_subtasks"`
	ExternalPath            string           `json:"external_path"`
	Discarded               bool             `json:"discarded"`
	FailureTimestamp        int64            `json:"failure_timestamp"`
	FailureMessage          string           `json:"failure_message"`
}

func (w *checkpointStatsWire) convert() *CheckpointStats {
	if w == nil {
		return nil
	}
	c := w.value()
	return &c
}

func (w *checkpointStatsWire) value() CheckpointStats {
	return CheckpointStats{
		ID: w.ID, Status: w.Status, IsSavepoint: w.IsSavepoint, SavepointFormat: w.SavepointFormat,
		CheckpointType: w.CheckpointType, TriggerTime: FromMillis(w.TriggerTimestamp),
		LatestAck: FromMillis(w.LatestAckTimestamp), StateSize: w.StateSize, CheckpointedSize: w.CheckpointedSize,
		EndToEndDuration: DurationFromMillis(w.EndToEndDuration), NumSubtasks: w.NumSubtasks,
		NumAcknowledgedSubtasks: w.NumAcknowledgedSubtasks, ExternalPath: w.ExternalPath, Discarded: w.Discarded,
		FailureTime: FromMillis(w.FailureTimestamp), FailureMessage: w.FailureMessage,
	}
}

// CheckpointCounts counts a job's checkpoints by outcome.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// RestoredCheckpoint is the checkpoint or savepoint a job was restored from.
type RestoredCheckpoint struct {
	ID           int64
	RestoreTime  time.Time
	IsSavepoint  bool
	ExternalPath string
}

// CheckpointStatistics is the answer of GET /jobs/:jobid/checkpoints.
type CheckpointStatistics struct {
	Counts          CheckpointCounts
	LatestCompleted *CheckpointStats // newest completed checkpoint, nil if none
	LatestSavepoint *CheckpointStats // newest completed savepoint, nil if none
	LatestFailed    *CheckpointStats
	LatestRestored  *RestoredCheckpoint
	History         []CheckpointStats // newest first, bounded by web.checkpoints.history
}

type checkpointStatisticsWire struct {
	Counts CheckpointCounts `json:"counts"`
	Latest struct {
		Completed *checkpointStatsWire `json:"completed"`
		Savepoint *checkpointStatsWire `json:"savepoint"`
		Failed    *checkpointStatsWire `json:"failed"`
		Restored  *restoredWire        `json:"restored"`
	} `json:"latest"`
	History []checkpointStatsWire `json:"history"`
}

type restoredWire struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// decodeBody reads the answer with readCheckpoints, or encoding/json
// where it gives up.
func (w *checkpointStatisticsWire) decodeBody(raw []byte) error {
	if readCheckpoints(raw, w) {
		return nil
	}
	*w = checkpointStatisticsWire{}
	return json.Unmarshal(raw, w)
}

// Checkpoints returns the checkpoint statistics of a job: counts, the latest
// completed checkpoint and savepoint, and the recent history. A job without
// checkpointing answers 404 ("Checkpointing has not been enabled").
//
// Flink REST: GET /jobs/:jobid/checkpoints (1.0+)
func (c *Client) Checkpoints(ctx context.Context, job JobID) (*CheckpointStatistics, error) {
	path, err := jobPath(job, "/checkpoints")
	if err != nil {
		return nil, err
	}
	w := new(checkpointStatisticsWire)
	if err := c.get(ctx, path, nil, w); err != nil {
		return nil, err
	}
	out := &CheckpointStatistics{
		Counts:          w.Counts,
		LatestCompleted: w.Latest.Completed.convert(),
		LatestSavepoint: w.Latest.Savepoint.convert(),
		LatestFailed:    w.Latest.Failed.convert(),
		History:         make([]CheckpointStats, len(w.History)),
	}
	if r := w.Latest.Restored; r != nil {
		out.LatestRestored = &RestoredCheckpoint{ID: r.ID, RestoreTime: FromMillis(r.RestoreTimestamp), IsSavepoint: r.IsSavepoint, ExternalPath: r.ExternalPath}
	}
	for i := range w.History {
		out.History[i] = w.History[i].value()
	}
	return out, nil
}

// CheckpointDetails returns the statistics of one checkpoint of the
// history, with its statistics per job vertex (Vertices). A checkpoint
// that left the history (web.checkpoints.history) answers 404.
//
// Flink REST: GET /jobs/:jobid/checkpoints/details/:checkpointid (1.0+)
func (c *Client) CheckpointDetails(ctx context.Context, job JobID, checkpointID int64) (*CheckpointStats, error) {
	if checkpointID < 0 {
		return nil, invalidInput("checkpoint id must not be negative, got %d", checkpointID)
	}
	path, err := jobPath(job, "/checkpoints/details/"+strconv.FormatInt(checkpointID, 10))
	if err != nil {
		return nil, err
	}
	var w checkpointDetailsWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	out := w.convert()
	if w.Tasks != nil {
		out.Vertices = make(map[string]VertexCheckpointStats, len(w.Tasks))
		for id, t := range w.Tasks {
			out.Vertices[id] = VertexCheckpointStats(t)
		}
	}
	return out, nil
}

// CheckpointConfig is the checkpointing configuration of a job.
type CheckpointConfig struct {
	Mode                       string // "exactly_once" or "at_least_once", as Flink writes it
	Interval                   time.Duration
	Timeout                    time.Duration
	MinPause                   time.Duration
	MaxConcurrent              int
	ExternalizationEnabled     bool // retained checkpoints
	DeleteOnCancellation       bool
	StateBackend               string
	CheckpointStorage          string
	UnalignedCheckpoints       bool
	TolerableFailedCheckpoints int
}

type checkpointConfigWire struct {
	Mode            string `json:"mode"`
	Interval        int64  `json:"interval"`
	Timeout         int64  `json:"timeout"`
	MinPause        int64  `json:"min_pause"`
	MaxConcurrent   int    `json:"max_concurrent"`
	Externalization struct {
		Enabled              bool `json:"enabled"`
		DeleteOnCancellation bool `json:"delete_on_cancellation"`
	} `json:"externalization"`
	StateBackend               string `json:"state_backend"`
	CheckpointStorage          string `json:"checkpoint_storage"`
	UnalignedCheckpoints       bool   `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints int    `json:"tolerable_failed_checkpoints"`
}

// CheckpointConfig returns how a job checkpoints.
//
// Flink REST: GET /jobs/:jobid/checkpoints/config (1.0+)
func (c *Client) CheckpointConfig(ctx context.Context, job JobID) (*CheckpointConfig, error) {
	path, err := jobPath(job, "/checkpoints/config")
	if err != nil {
		return nil, err
	}
	var w checkpointConfigWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	return &CheckpointConfig{
		Mode: w.Mode, Interval: DurationFromMillis(w.Interval), Timeout: DurationFromMillis(w.Timeout),
		MinPause: DurationFromMillis(w.MinPause), MaxConcurrent: w.MaxConcurrent,
		ExternalizationEnabled: w.Externalization.Enabled, DeleteOnCancellation: w.Externalization.DeleteOnCancellation,
		StateBackend: w.StateBackend, CheckpointStorage: w.CheckpointStorage,
		UnalignedCheckpoints: w.UnalignedCheckpoints, TolerableFailedCheckpoints: w.TolerableFailedCheckpoints,
	}, nil
}

// CheckpointType is the kind of checkpoint to trigger (1.17+).
type CheckpointType string

// Checkpoint types for TriggerCheckpoint.
const (
	CheckpointConfigured  CheckpointType = "CONFIGURED" // as the job is configured
	CheckpointFull        CheckpointType = "FULL"
	CheckpointIncremental CheckpointType = "INCREMENTAL" // not supported by Flink yet (FLINK-33723)
)

// CheckpointRequest describes a checkpoint to trigger.
type CheckpointRequest struct {
	Type      CheckpointType // empty: CONFIGURED
	TriggerID TriggerID      // empty: the client chooses one
}

type checkpointRequestWire struct {
	CheckpointType CheckpointType `json:"checkpointType,omitempty"`
	TriggerID      TriggerID      `json:"triggerId,omitempty"`
}

// TriggerCheckpoint starts a checkpoint; its result carries the checkpoint
// id. It is retried with the same trigger id.
//
// Flink REST: POST /jobs/:jobid/checkpoints (1.17+)
func (c *Client) TriggerCheckpoint(ctx context.Context, job JobID, req CheckpointRequest) (Operation, error) {
	path, err := jobPath(job, "/checkpoints")
	if err != nil {
		return Operation{}, err
	}
	switch req.Type {
	case "", CheckpointConfigured, CheckpointFull, CheckpointIncremental:
	default:
		return Operation{}, invalidInput("checkpoint type %q: want CONFIGURED, FULL or INCREMENTAL", req.Type)
	}
	if req.TriggerID == "" {
		req.TriggerID = NewTriggerID()
	} else if err := req.TriggerID.Validate(); err != nil {
		return Operation{}, err
	}
	if _, err := c.requireFeature(ctx, FeatureCheckpointTrigger); err != nil {
		return Operation{}, err
	}
	return c.trigger(ctx, OpCheckpoint, job, path, checkpointRequestWire{req.Type, req.TriggerID}, true)
}
