package flinktest

import (
	"net/http"

	"github.com/flinkkit/flinkkit/flinkapi"
)

func handleConfig(q *request, w http.ResponseWriter) *restError {
	p := q.s.cfg.pers
	writeJSON(w, http.StatusOK, map[string]any{
		"refresh-interval": q.s.cfg.refreshInterval.Milliseconds(),
		"timezone-name":    "Coordinated Universal Time",
		"timezone-offset":  0,
		"flink-version":    p.name,
		"flink-revision":   p.revision(),
		"features":         map[string]bool{"web-submit": true, "web-cancel": true, "web-rescale": false, "web-history": false},
	})
	return nil
}

func handleOverview(q *request, w http.ResponseWriter) *restError {
	var running, finished, cancelled, failed int
	for _, j := range q.cl.jobs {
		switch j.state {
		case flinkapi.JobFinished:
			finished++
		case flinkapi.JobCanceled:
			cancelled++
		case flinkapi.JobFailed:
			failed++
		default:
			running++
		}
	}
	tms := 0
	if q.s.cfg.slots > 0 {
		tms = 1
	}
	o := map[string]any{
		"taskmanagers": tms, "slots-total": q.s.cfg.slots, "slots-available": q.cl.freeSlots(),
		"jobs-running": running, "jobs-finished": finished, "jobs-cancelled": cancelled, "jobs-failed": failed,
		"flink-version": q.s.cfg.pers.name, "flink-commit": q.s.cfg.pers.commit(),
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

func handleTaskManagers(q *request, w http.ResponseWriter) *restError {
	tms := []any{}
	if slots := q.s.cfg.slots; slots > 0 {
		free := q.cl.freeSlots()
		used := slots - free
		res := func(n int) map[string]any {
			return map[string]any{"cpuCores": float64(n), "taskHeapMemory": 64 * n, "taskOffHeapMemory": 0,
				"managedMemory": 32 * n, "networkMemory": 16 * n, "extendedResources": map[string]any{}}
		}
		tm := map[string]any{
			"id":   taskManagerID,
			"path": "pekko.tcp://flink@127.0.0.1:33079/user/rpc/taskmanager_0",
			// Despite its name, the epoch milliseconds of the last
			// heartbeat; heartbeats come every second.
			"dataPort": dataPort, "jmxPort": -1, "timeSinceLastHeartbeat": q.now.Truncate(1e9).UnixMilli(),
			"slotsNumber": slots, "freeSlots": free,
			"totalResource": res(slots), "freeResource": res(free),
			"hardware": map[string]any{"cpuCores": 2, "physicalMemory": int64(25275990016), "freeMemory": int64(389283840), "managedMemory": int64(134217728)},
			"memoryConfiguration": map[string]any{
				"frameworkHeap": 134217728, "taskHeap": 268435456, "frameworkOffHeap": 134217728, "taskOffHeap": 0,
				"networkMemory": 67108864, "managedMemory": 134217728, "jvmMetaspace": 201326592, "jvmOverhead": 134217728,
				"totalFlinkMemory": 738197504, "totalProcessMemory": 1073741824,
			},
		}
		if q.s.cfg.pers.isV2() {
			tm["assignedTasks"] = 2 * used
		}
		tms = append(tms, tm)
	}
	writeJSON(w, http.StatusOK, map[string]any{"taskmanagers": tms})
	return nil
}

// handleShutdown stops the cluster: it answers, then refuses everything.
func handleShutdown(q *request, w http.ResponseWriter) *restError {
	writeJSON(w, http.StatusOK, map[string]any{})
	q.s.shutdown = true
	return nil
}
