package flinkapi

import "context"

// JobConfig is the configuration of a job as Flink shows it: what the
// program set for itself when it built the job.
type JobConfig struct {
	// ID and Name are the job's.
	ID   JobID
	Name string
	// Parallelism is the job's default parallelism (job-parallelism): the
	// program's own, else the jar run's, else the cluster's
	// parallelism.default.
	Parallelism int
	// Parameters are the program's global job parameters (user-config),
	// which is where a program that keeps its arguments there (for
	// example through ParameterTool) shows them. Empty when it keeps
	// none.
	Parameters map[string]string
}

type jobConfigWire struct {
	ID        JobID  `json:"jid"`
	Name      string `json:"name"`
	Execution struct {
		Parallelism int               `json:"job-parallelism"`
		UserConfig  map[string]string `json:"user-config"`
	} `json:"execution-config"`
}

// JobConfig returns the configuration of one job: its name, default
// parallelism and the program's global job parameters.
//
// Flink REST: GET /jobs/:jobid/config (every version; 1.x also names the
// execution mode, which the client does not read)
func (c *Client) JobConfig(ctx context.Context, id JobID) (*JobConfig, error) {
	path, err := jobPath(id, "/config")
	if err != nil {
		return nil, err
	}
	var w jobConfigWire
	if err := c.get(ctx, path, nil, &w); err != nil {
		return nil, err
	}
	return &JobConfig{ID: w.ID, Name: w.Name, Parallelism: w.Execution.Parallelism,
		Parameters: w.Execution.UserConfig}, nil
}
