package lifecycle

import (
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// What Flink's answers and state locations say, read by the operations
// and the Controller alike.

// noCheckpointInterval: Flink reports the interval of a job without
// periodic checkpoints as the largest long, in milliseconds; any
// interval of a year or more is taken as off.
const noCheckpointInterval = 365 * 24 * time.Hour

// retainedState is the newest state of a job that its checkpoints keep:
// its latest completed checkpoint (not a savepoint) with an external path
// that Flink has not discarded. A JobManager that failed over shows no
// completed checkpoint until the job completes one, although the
// checkpoint it restored the job from is still the job's newest state:
// that one is returned then, timed at its restore (when it was taken is
// not shown; no later than that). Zero: none.
func retainedState(stats *flinkapi.CheckpointStatistics) policy.Checkpoint {
	if stats == nil {
		return policy.Checkpoint{}
	}
	if c := stats.LatestCompleted; c != nil {
		if c.ExternalPath == "" || c.Discarded || c.IsSavepoint {
			return policy.Checkpoint{}
		}
		return policy.Checkpoint{Path: c.ExternalPath, Time: c.TriggerTime}
	}
	if r := stats.LatestRestored; r != nil && !r.IsSavepoint && r.ExternalPath != "" {
		return policy.Checkpoint{Path: r.ExternalPath, Time: r.RestoreTime}
	}
	return policy.Checkpoint{}
}

func latestCompletedTime(stats *flinkapi.CheckpointStatistics) time.Time {
	if stats == nil || stats.LatestCompleted == nil {
		return time.Time{}
	}
	return stats.LatestCompleted.TriggerTime
}

// tasksRunning reports whether d and all its vertices run.
func tasksRunning(d *flinkapi.JobDetails) bool {
	if d == nil || d.State != flinkapi.JobRunning || len(d.Vertices) == 0 {
		return false
	}
	for _, v := range d.Vertices {
		if v.Status != string(flinkapi.JobRunning) {
			return false
		}
	}
	return true
}

// parentDir is the directory loc lies in; empty for none.
func parentDir(loc string) string {
	i := strings.LastIndex(strings.TrimSuffix(loc, "/"), "/")
	if i <= 0 || strings.HasSuffix(loc[:i], ":") || strings.HasSuffix(loc[:i], ":/") {
		return ""
	}
	return loc[:i]
}

// isCheckpointName reports whether name is chk-N.
func isCheckpointName(name string) bool {
	n, ok := strings.CutPrefix(name, "chk-")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// truncate is s cut to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// cachedDiscarded reports whether stats of a job that has not ended
// show its latest completed checkpoint discarded: Flink subsumed it
// after its cache answered them.
func cachedDiscarded(stats *flinkapi.CheckpointStatistics) bool {
	c := stats.LatestCompleted
	return c != nil && c.Discarded && !c.IsSavepoint
}

// planOf is the running job's plan from its details: every vertex with
// its parallelism and maximum parallelism.
func planOf(d *flinkapi.JobDetails) []policy.PlanVertex {
	out := make([]policy.PlanVertex, 0, len(d.Vertices))
	for _, v := range d.Vertices {
		out = append(out, policy.PlanVertex{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: max(v.MaxParallelism, 0)})
	}
	return out
}

// heldSlots is the task slots a job's tasks hold: with slot sharing, as
// many as its widest vertex has tasks deployed or running.
func heldSlots(d *flinkapi.JobDetails) int {
	_, held := slotsNeeded(d)
	return held
}

// slotsNeeded is the task slots job d needs (its largest vertex, with
// Flink's default slot sharing) and those it holds.
func slotsNeeded(d *flinkapi.JobDetails) (need, held int) {
	for _, v := range d.Vertices {
		need = max(need, v.Parallelism)
		t := v.Tasks
		held = max(held, t.Deploying+t.Initializing+t.Running)
	}
	return need, held
}
