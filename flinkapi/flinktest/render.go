package flinktest

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// millis renders t as Flink does: epoch milliseconds, -1 for "never".
func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// millis0 renders t with 0 for "never", as the job's state timestamps do.
func millis0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

var allJobStates = []flinkapi.JobState{
	flinkapi.JobInitializing, flinkapi.JobCreated, flinkapi.JobRunning, flinkapi.JobFailing,
	flinkapi.JobFailed, flinkapi.JobCancelling, flinkapi.JobCanceled, flinkapi.JobFinished,
	flinkapi.JobRestarting, flinkapi.JobSuspended, flinkapi.JobReconciling,
}

// Execution states of tasks, as the task counts name them.
var executionStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING"}

// vertexState is what a vertex shows: its status and the execution state
// of its subtasks.
type vertexState struct {
	status string // aggregate status
	tasks  string // state of every subtask
}

// vertexStates returns the states of the source and the counter vertex.
func (j *job) vertexStates() (source, counter vertexState) {
	switch j.state {
	case flinkapi.JobCreated:
		v := vertexState{"CREATED", "CREATED"}
		return v, v
	case flinkapi.JobRunning:
		if j.tasksRunning {
			v := vertexState{"RUNNING", "RUNNING"}
			return v, v
		}
		v := vertexState{"CREATED", "SCHEDULED"}
		return v, v
	case flinkapi.JobRestarting:
		v := vertexState{"CANCELED", "CANCELED"}
		return v, v
	case flinkapi.JobCancelling:
		v := vertexState{"CANCELING", "CANCELING"}
		return v, v
	case flinkapi.JobCanceled:
		v := vertexState{"CANCELED", "CANCELED"}
		return v, v
	case flinkapi.JobFinished:
		v := vertexState{"FINISHED", "FINISHED"}
		return v, v
	case flinkapi.JobFailing:
		return vertexState{"CANCELING", "CANCELING"}, vertexState{"FAILED", "FAILED"}
	case flinkapi.JobFailed:
		return vertexState{"CANCELED", "CANCELED"}, vertexState{"FAILED", "FAILED"}
	}
	v := vertexState{"CREATED", "CREATED"}
	return v, v
}

// hasGraph reports whether the job has an execution graph with vertices:
// not while it initialises, nor when it never got past that.
func (j *job) hasGraph() bool {
	return !j.initFailed && j.state != flinkapi.JobInitializing
}

func taskCounts(state string, n int) map[string]int {
	m := make(map[string]int, len(executionStates))
	for _, s := range executionStates {
		m[s] = 0
	}
	m[state] += n
	return m
}

func (j *job) duration(now time.Time) int64 {
	end := now
	if !j.end.IsZero() {
		end = j.end
	}
	return end.Sub(j.submitted).Milliseconds()
}

// planNodes renders the vertices of the test job's plan, the counter's
// chain first as Flink lists them: the source, and the counter with the
// sink reading from it by key. The plan shows neither the uids nor the
// maximum parallelism, only the vertex ids derived from the uids.
func planNodes(sp jobSpec, parallelism int) []any {
	node := func(id, desc string) map[string]any {
		return map[string]any{"id": id, "parallelism": parallelism, "operator": "", "operator_strategy": "", "description": desc, "optimizer_properties": map[string]any{}}
	}
	counter := node(sp.counterID(), "counter<br/>+- discard: Writer<br/>")
	counter["inputs"] = []any{map[string]any{"num": 0, "id": sourceVertexID, "ship_strategy": "HASH", "exchange": "pipelined_bounded"}}
	return []any{counter, node(sourceVertexID, "Source: key-source<br/>")}
}

// renderDetails renders GET /jobs/:jobid for j at now.
func (s *Server) renderDetails(j *job, now time.Time) map[string]any {
	p := s.cfg.pers
	ts := make(map[string]int64, len(allJobStates))
	for _, st := range allJobStates {
		ts[string(st)] = millis0(j.ts[st])
	}
	d := map[string]any{
		"jid": j.id, "name": j.spec.name, "isStoppable": false, "state": j.state,
		"start-time": millis(j.submitted), "end-time": millis(j.end), "duration": j.duration(now),
		"maxParallelism": -1, "now": now.UnixMilli(), "timestamps": ts,
	}
	if p.hasJobType() {
		d["job-type"] = "STREAMING"
	}
	statusCounts := taskCounts("CREATED", 0)
	vertices := []any{}
	nodes := []any{}
	if j.hasGraph() {
		src, cnt := j.vertexStates()
		for _, v := range []struct {
			id, name, desc string
			st             vertexState
		}{
			{sourceVertexID, sourceVertexName, "Source: key-source<br/>", src},
			{j.spec.counterID(), counterVertex, "counter<br/>+- discard: Writer<br/>", cnt},
		} {
			start, end, dur := int64(-1), int64(-1), int64(-1)
			if !j.tasksStart.IsZero() && v.st.tasks != "SCHEDULED" && v.st.tasks != "CREATED" {
				start = j.tasksStart.UnixMilli()
				e := now
				if !j.tasksRunning && !j.tasksEnd.IsZero() {
					e = j.tasksEnd
					end = e.UnixMilli()
				}
				dur = e.Sub(j.tasksStart).Milliseconds()
			}
			vertices = append(vertices, map[string]any{
				"id": v.id, "slotSharingGroupId": "1dc39d4e4c4796f9355d096216cfb93e", "name": v.name,
				"maxParallelism": j.maxParallelism(v.id), "parallelism": j.parallelism, "status": v.st.status,
				"start-time": start, "end-time": end, "duration": dur,
				"tasks": taskCounts(v.st.tasks, j.parallelism), "metrics": vertexMetrics(v.st.tasks),
			})
			statusCounts[v.st.status]++
		}
		nodes = planNodes(j.spec, j.parallelism)
	}
	d["vertices"] = vertices
	d["status-counts"] = statusCounts
	if !j.hasGraph() {
		if p.isV2() {
			d["plan"] = map[string]any{"jid": "", "name": "", "type": "", "nodes": []any{}}
		}
	} else {
		d["plan"] = map[string]any{"jid": j.id, "name": j.spec.name, "type": "STREAMING", "nodes": nodes}
	}
	if p.hasApplicationFields() {
		d["application-id"], d["schedulerType"] = nil, nil
		if j.hasGraph() {
			d["application-id"], d["schedulerType"] = j.id, s.schedulerType()
			if j.app != "" {
				d["application-id"] = j.app
			}
		}
		d["pending-operators"] = 0
	}
	return d
}

func (s *Server) schedulerType() string {
	if s.cfg.adaptive {
		return "Adaptive"
	}
	return "Default"
}

func vertexMetrics(state string) map[string]any {
	complete := state != "RUNNING"
	return map[string]any{
		"read-bytes": 0, "read-bytes-complete": complete, "write-bytes": 0, "write-bytes-complete": complete,
		"read-records": 0, "read-records-complete": complete, "write-records": 0, "write-records-complete": complete,
		"accumulated-backpressured-time": 0, "accumulated-idle-time": 0, "accumulated-busy-time": 0.0,
	}
}

// renderOverview renders one entry of GET /jobs/overview.
func (s *Server) renderOverview(j *job, now time.Time) map[string]any {
	tasks := map[string]int{}
	for _, st := range executionStates {
		tasks[strings.ToLower(st)] = 0
	}
	total := 0
	if j.hasGraph() {
		src, cnt := j.vertexStates()
		for _, v := range []vertexState{src, cnt} {
			tasks[strings.ToLower(v.tasks)] += j.parallelism
			total += j.parallelism
		}
	}
	tasks["total"] = total
	o := map[string]any{
		"jid": j.id, "name": j.spec.name, "start-time": millis(j.submitted), "end-time": millis(j.end),
		"duration": j.duration(now), "state": j.state, "last-modification": millis(j.lastChange), "tasks": tasks,
	}
	if s.cfg.pers.hasApplicationFields() {
		o["jobType"] = "STREAMING"
		o["schedulerType"] = nil
		if j.hasGraph() {
			o["schedulerType"] = s.schedulerType()
		}
		o["pending-operators"] = 0
	}
	return o
}

// stateSize is the size of the test job's state in bytes: the source's
// position and one counter per key, or what SetVertexStateSize set.
func (j *job) stateSize() int64 {
	return j.vertexStateSize(sourceVertexID) + j.vertexStateSize(j.spec.counterID())
}

// sourceStateSize is the state size of the test job's source: its
// position.
const sourceStateSize = 265

// vertexStateSize is the state size of a vertex of the job in bytes: what
// SetVertexStateSize set, else the source's position or the counter's
// counts (one per key).
func (j *job) vertexStateSize(vertex string) int64 {
	if n, ok := j.stateBytes[vertex]; ok {
		return n
	}
	if vertex == sourceVertexID {
		return sourceStateSize
	}
	return 4000 - sourceStateSize + 40*int64(j.spec.keys)
}

// checkpointSize is the state size of vertex ("" for all) in completed
// checkpoint c: what its snapshot recorded.
func (j *job) checkpointSize(c *checkpoint, vertex string) int64 {
	if c.disk == nil {
		if vertex == "" {
			return j.stateSize()
		}
		return j.vertexStateSize(vertex)
	}
	if vertex == "" {
		return c.disk.sourceState + c.disk.counterState
	}
	n, _ := c.disk.size(vertex)
	return n
}

// renderCheckpoint renders one checkpoint of the statistics; withTasks
// adds the per-vertex statistics of the details endpoint.
func (s *Server) renderCheckpoint(j *job, c *checkpoint, withTasks bool) map[string]any {
	if c == nil {
		return nil
	}
	var format any
	if c.isSavepoint() {
		format = c.format
	}
	acked, size := c.subtasks, j.checkpointSize(c, "")
	latestAck := c.ack
	// frac is the part of each vertex's state acknowledged.
	frac := 1.0
	e2e := int64(0)
	className := "completed"
	switch c.status {
	case flinkapi.CheckpointInProgress:
		// Subtasks acknowledge one after the other over the checkpoint's
		// duration; the last one completes it.
		className, latestAck = "in_progress", time.Time{}
		acked, size = 0, 0
		frac = 0
		if now, span := s.clock.Now(), c.completeAt.Sub(c.trigger); span > 0 && now.After(c.trigger) {
			frac = min(float64(now.Sub(c.trigger))/float64(span), 1)
			acked = min(int(frac*float64(c.subtasks)), c.subtasks-1)
			size = int64(frac * float64(j.stateSize()))
			if acked > 0 {
				latestAck = now
			}
		}
	case flinkapi.CheckpointFailed:
		className, acked, size, latestAck = "failed", c.subtasks/2, sourceStateSize, c.failedAt
	}
	if latestAck.IsZero() {
		e2e = -1
	} else {
		e2e = latestAck.Sub(c.trigger).Milliseconds()
	}
	m := map[string]any{
		"className": className, "id": c.id, "status": c.status, "is_savepoint": c.isSavepoint(),
		"trigger_timestamp": c.trigger.UnixMilli(), "latest_ack_timestamp": millis(latestAck),
		"checkpointed_size": size, "state_size": size, "end_to_end_duration": e2e,
		"alignment_buffered": 0, "processed_data": 0, "persisted_data": 0,
		"num_subtasks": c.subtasks, "num_acknowledged_subtasks": acked, "checkpoint_type": c.kind,
		"tasks": map[string]any{},
	}
	if s.cfg.pers.hasSavepointFormat() {
		m["savepointFormat"] = format
	}
	switch c.status {
	case flinkapi.CheckpointCompleted:
		m["external_path"] = c.location
		m["discarded"] = c.discarded()
	case flinkapi.CheckpointFailed:
		m["failure_timestamp"] = c.failedAt.UnixMilli()
		m["failure_message"] = c.failureMsg
	}
	if withTasks {
		tasks := map[string]any{}
		// Each vertex's share: all of its state once completed, the part
		// acknowledged while in progress; a failed checkpoint has the
		// source's alone.
		share := func(v string) int64 {
			switch c.status {
			case flinkapi.CheckpointFailed:
				if v == sourceVertexID {
					return sourceStateSize
				}
				return 0
			case flinkapi.CheckpointInProgress:
				return int64(frac * float64(j.vertexStateSize(v)))
			}
			return j.checkpointSize(c, v)
		}
		for _, v := range []struct {
			id   string
			size int64
		}{{sourceVertexID, share(sourceVertexID)}, {j.spec.counterID(), share(j.spec.counterID())}} {
			tasks[v.id] = map[string]any{
				"id": c.id, "status": c.status, "latest_ack_timestamp": millis(latestAck),
				"checkpointed_size": max(v.size, 0), "state_size": max(v.size, 0), "end_to_end_duration": e2e,
				"alignment_buffered": 0, "processed_data": 0, "persisted_data": 0,
				"num_subtasks": c.subtasks / 2, "num_acknowledged_subtasks": acked / 2,
			}
		}
		m["tasks"] = tasks
	}
	return m
}

// renderStatistics renders GET /jobs/:jobid/checkpoints.
func (s *Server) renderStatistics(j *job) map[string]any {
	latest := map[string]any{
		"completed": s.renderCheckpoint(j, j.latest(false, flinkapi.CheckpointCompleted), false),
		"savepoint": s.renderCheckpoint(j, j.latest(true, flinkapi.CheckpointCompleted), false),
		"failed":    s.renderCheckpoint(j, j.latestAny(flinkapi.CheckpointFailed), false),
		"restored":  nil,
	}
	if r := j.restored; r != nil {
		latest["restored"] = map[string]any{"id": r.id, "restore_timestamp": r.at.UnixMilli(), "is_savepoint": r.savepoint, "external_path": r.location}
	}
	history := []any{}
	var durations, sizes []float64
	for _, c := range j.history() {
		history = append(history, s.renderCheckpoint(j, c, false))
		if c.status == flinkapi.CheckpointCompleted {
			durations = append(durations, float64(c.ack.Sub(c.trigger).Milliseconds()))
			sizes = append(sizes, float64(j.checkpointSize(c, "")))
		}
	}
	zeros := make([]float64, len(sizes))
	return map[string]any{
		"counts": j.counts,
		"summary": map[string]any{
			"checkpointed_size": summary(sizes, false), "state_size": summary(sizes, false),
			"end_to_end_duration": summary(durations, false), "alignment_buffered": summary(zeros, true),
			"processed_data": summary(zeros, false), "persisted_data": summary(zeros, false),
		},
		"latest":  latest,
		"history": history,
	}
}

// summary renders min, max, average and percentiles; Flink writes "NaN"
// for the percentiles of nothing (zeroNaN: 0.0 instead).
func summary(vals []float64, zeroNaN bool) map[string]any {
	m := map[string]any{"min": 0, "max": 0, "avg": 0}
	pct := []struct {
		name string
		q    float64
	}{{"p50", .5}, {"p90", .9}, {"p95", .95}, {"p99", .99}, {"p999", .999}}
	if len(vals) == 0 {
		for _, p := range pct {
			if zeroNaN {
				m[p.name] = 0.0
			} else {
				m[p.name] = "NaN"
			}
		}
		return m
	}
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	sum := 0.0
	for _, v := range sorted {
		sum += v
	}
	m["min"], m["max"], m["avg"] = int64(sorted[0]), int64(sorted[len(sorted)-1]), int64(sum/float64(len(sorted)))
	for _, p := range pct {
		i := int(math.Ceil(p.q*float64(len(sorted)))) - 1
		m[p.name] = sorted[max(0, min(i, len(sorted)-1))]
	}
	return m
}

// renderCheckpointConfig renders GET /jobs/:jobid/checkpoints/config.
func (s *Server) renderCheckpointConfig(j *job) map[string]any {
	mode, interval := "at_least_once", int64(math.MaxInt64)
	if j.checkpointing {
		mode, interval = "exactly_once", j.interval.Milliseconds()
	}
	return map[string]any{
		"mode": mode, "interval": interval, "timeout": 600000, "min_pause": 0, "max_concurrent": 1,
		"externalization":       map[string]bool{"enabled": j.retainOnFail, "delete_on_cancellation": !j.retainOnCancel},
		"state_backend":         "HashMapStateBackend",
		"checkpoint_storage":    "FileSystemCheckpointStorage",
		"unaligned_checkpoints": false, "tolerable_failed_checkpoints": 0, "aligned_checkpoint_timeout": 0,
		"checkpoints_after_tasks_finish": true, "state_changelog_enabled": false,
		"changelog_periodic_materialization_interval": 600000, "changelog_storage": "memory",
	}
}

// renderExceptions renders GET /jobs/:jobid/exceptions with at most max
// entries.
func (s *Server) renderExceptions(j *job, max int) map[string]any {
	p := s.cfg.pers
	entries := []any{}
	n := len(j.exceptions)
	for i := n - 1; i >= 0 && len(entries) < max; i-- {
		entries = append(entries, s.renderException(j.exceptions[i], true))
	}
	truncated := n > max
	out := map[string]any{"exceptionHistory": map[string]any{"entries": entries, "truncated": truncated}}
	if !p.hasLegacyExceptions() {
		return out
	}
	out["root-exception"], out["timestamp"] = nil, nil
	all := []any{}
	if n > 0 {
		last := j.exceptions[n-1]
		out["root-exception"] = last.trace
		out["timestamp"] = last.at.UnixMilli()
		tasks := last.concurrent
		if last.task != "" {
			tasks = []*exceptionEntry{last}
		}
		for _, t := range tasks {
			e := map[string]any{"exception": t.trace, "task": strings.SplitN(t.task, " - execution", 2)[0],
				"location": taskManagerHost + ":" + itoa(dataPort), "timestamp": t.at.UnixMilli()}
			if p.hasEndpoint() {
				e["endpoint"] = taskManagerHost + ":" + itoa(dataPort)
			}
			if p.hasTaskManagerID() {
				e["taskManagerId"] = taskManagerID
			}
			all = append(all, e)
		}
	}
	out["all-exceptions"] = all
	out["truncated"] = false
	return out
}

func (s *Server) renderException(e *exceptionEntry, top bool) map[string]any {
	p := s.cfg.pers
	m := map[string]any{"exceptionName": e.class, "stacktrace": e.trace, "timestamp": e.at.UnixMilli()}
	if p.hasFailureLabels() {
		m["failureLabels"] = map[string]string{}
	}
	if e.task != "" {
		m["taskName"] = e.task
		if p.hasLocation() {
			m["location"] = taskManagerHost + ":" + itoa(dataPort)
		}
		if p.hasEndpoint() {
			m["endpoint"] = taskManagerHost + ":" + itoa(dataPort)
		}
		if p.hasTaskManagerID() {
			m["taskManagerId"] = taskManagerID
		}
	}
	if top {
		conc := []any{}
		for _, c := range e.concurrent {
			conc = append(conc, s.renderException(c, false))
		}
		m["concurrentExceptions"] = conc
	}
	return m
}
