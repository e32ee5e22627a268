package flinkapi

import (
	"context"
	"net/http"
	"time"
)

// DashboardConfig is the answer of GET /config.
type DashboardConfig struct {
	FlinkVersion    string        `json:"flink-version"`
	FlinkRevision   string        `json:"flink-revision"`
	RefreshInterval int64         `json:"refresh-interval"` // milliseconds
	TimezoneName    string        `json:"timezone-name"`
	TimezoneOffset  int64         `json:"timezone-offset"` // milliseconds
	Features        WebUIFeatures `json:"features"`
}

// WebUIFeatures are the switches of the web UI that matter to a client:
// without WebSubmit the cluster has no /jars routes.
type WebUIFeatures struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// Config returns the web UI configuration, which carries the Flink version.
// Prefer Version, which caches it.
//
// Flink REST: GET /config (1.0+)
func (c *Client) Config(ctx context.Context) (*DashboardConfig, error) {
	var out DashboardConfig
	if err := c.get(ctx, "/config", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClusterOverview is the answer of GET /overview.
type ClusterOverview struct {
	TaskManagers        int    `json:"taskmanagers"`
	TaskManagersBlocked int    `json:"taskmanagers-blocked"` // 1.16+
	SlotsTotal          int    `json:"slots-total"`
	SlotsAvailable      int    `json:"slots-available"`
	SlotsFreeAndBlocked int    `json:"slots-free-and-blocked"` // 1.16+
	JobsRunning         int    `json:"jobs-running"`
	JobsFinished        int    `json:"jobs-finished"`
	JobsCancelled       int    `json:"jobs-cancelled"`
	JobsFailed          int    `json:"jobs-failed"`
	FlinkVersion        string `json:"flink-version"`
	FlinkCommit         string `json:"flink-commit"`
}

// Overview returns the counts of task managers, slots and jobs.
//
// Flink REST: GET /overview (1.0+)
func (c *Client) Overview(ctx context.Context) (*ClusterOverview, error) {
	var out ClusterOverview
	if err := c.get(ctx, "/overview", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TaskManager is one entry of GET /taskmanagers.
type TaskManager struct {
	ID             string
	Path           string
	DataPort       int
	SlotsNumber    int
	FreeSlots      int
	Blocked        bool      // 1.16+
	LastHeartbeat  time.Time // from "timeSinceLastHeartbeat", which holds epoch milliseconds
	CPUCores       int
	PhysicalMemory int64 // bytes
}

type taskManagersWire struct {
	TaskManagers []taskManagerWire `json:"taskmanagers"`
}

type taskManagerWire struct {
	ID                     string `json:"id"`
	Path                   string `json:"path"`
	DataPort               int    `json:"dataPort"`
	SlotsNumber            int    `json:"slotsNumber"`
	FreeSlots              int    `json:"freeSlots"`
	Blocked                bool   `json:"blocked"`
	TimeSinceLastHeartbeat int64  `json:"timeSinceLastHeartbeat"`
	Hardware               struct {
		CPUCores       int   `json:"cpuCores"`
		PhysicalMemory int64 `json:"physicalMemory"`
	} `json:"hardware"`
}

// TaskManagers lists the task managers registered with the JobManager.
//
// Flink REST: GET /taskmanagers (1.0+)
func (c *Client) TaskManagers(ctx context.Context) ([]TaskManager, error) {
	var out taskManagersWire
	if err := c.get(ctx, "/taskmanagers", nil, &out); err != nil {
		return nil, err
	}
	tms := make([]TaskManager, len(out.TaskManagers))
	for i, w := range out.TaskManagers {
		tms[i] = TaskManager{
			ID: w.ID, Path: w.Path, DataPort: w.DataPort, SlotsNumber: w.SlotsNumber,
			FreeSlots: w.FreeSlots, Blocked: w.Blocked,
			// Despite its name Flink sends the epoch milliseconds of the last heartbeat.
			LastHeartbeat: FromMillis(w.TimeSinceLastHeartbeat),
			CPUCores:      w.Hardware.CPUCores, PhysicalMemory: w.Hardware.PhysicalMemory,
		}
	}
	return tms, nil
}

// ShutdownCluster asks the JobManager to shut the whole cluster down. It is
// not retried.
//
// Flink REST: DELETE /cluster (1.6+)
func (c *Client) ShutdownCluster(ctx context.Context) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/cluster"}, nil)
	return err
}
