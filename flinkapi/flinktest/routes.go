package flinktest

import (
	"net/http"
	"strings"
)

// route is one REST endpoint of the JobManager.
type route struct {
	method  string
	pattern string // Flink's notation: /jobs/:jobid/savepoints
	// exists reports whether the version has the endpoint; nil: all do.
	since   func(personality) bool
	handler func(*request, http.ResponseWriter) *restError
	parts   []string
}

func (rt *route) name() string { return rt.method + " " + rt.pattern }

func (rt *route) exists(p personality) bool { return rt.since == nil || rt.since(p) }

// routes lists the endpoints; static segments come before parameters in
// matching, as in Flink's router.
var routes []*route

func init() {
	add := func(method, pattern string, since func(personality) bool, h func(*request, http.ResponseWriter) *restError) {
		routes = append(routes, &route{method: method, pattern: pattern, since: since, handler: h, parts: strings.Split(strings.Trim(pattern, "/"), "/")})
	}
	get, post, patch, put, del := http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete
	// Cluster.
	add(get, "/config", nil, handleConfig)
	add(get, "/overview", nil, handleOverview)
	add(get, "/taskmanagers", nil, handleTaskManagers)
	add(del, "/cluster", nil, handleShutdown)
	// Jars.
	add(post, "/jars/upload", nil, handleJarUpload)
	add(get, "/jars", nil, handleJarList)
	add(post, "/jars/:jarid/run", nil, handleJarRun)
	add(post, "/jars/:jarid/plan", nil, handleJarPlan)
	add(del, "/jars/:jarid", nil, handleJarDelete)
	add(post, "/jars/:jarid/run-application", personality.hasApplications, handleJarRunApplication)
	// Applications.
	add(get, "/applications/overview", personality.hasApplications, handleApplicationsOverview)
	add(get, "/applications/:applicationid", personality.hasApplications, handleApplicationDetails)
	add(post, "/applications/:applicationid/cancel", personality.hasApplications, handleApplicationCancel)
	// Jobs.
	add(get, "/jobs", nil, handleJobList)
	add(get, "/jobs/overview", nil, handleJobsOverview)
	add(get, "/jobs/:jobid", nil, handleJobDetails)
	add(patch, "/jobs/:jobid", nil, handleCancel)
	add(get, "/jobs/:jobid/status", personality.hasJobStatus, handleJobStatus)
	add(get, "/jobs/:jobid/exceptions", nil, handleExceptions)
	add(patch, "/jobs/:jobid/rescaling", nil, handleRescaling)
	add(get, "/jobs/:jobid/resource-requirements", personality.hasResourceRequirements, handleGetRequirements)
	add(put, "/jobs/:jobid/resource-requirements", personality.hasResourceRequirements, handlePutRequirements)
	add(get, "/jobs/:jobid/rescales/history", personality.hasRescaleHistory, handleRescaleHistory)
	add(get, "/jobs/:jobid/rescales/details/:rescaleuuid", personality.hasRescaleHistory, handleRescaleDetails)
	add(get, "/jobs/:jobid/metrics", nil, handleJobMetrics)
	add(get, "/jobs/:jobid/execution-result", nil, handleExecutionResult)
	add(get, "/jobs/:jobid/accumulators", nil, handleAccumulators)
	add(get, "/jobs/:jobid/plan", nil, handlePlan)
	add(get, "/jobs/:jobid/vertices/:vertexid/subtasks/metrics", nil, handleVertexMetrics)
	add(get, "/jobs/:jobid/vertices/:vertexid/backpressure", nil, handleBackpressure)
	// Checkpoints.
	add(get, "/jobs/:jobid/checkpoints", nil, handleCheckpoints)
	add(get, "/jobs/:jobid/checkpoints/config", nil, handleCheckpointConfig)
	add(get, "/jobs/:jobid/config", nil, handleJobConfig)
	add(get, "/jobs/:jobid/checkpoints/details/:checkpointid", nil, handleCheckpointDetails)
	add(post, "/jobs/:jobid/checkpoints", personality.hasCheckpointTrigger, handleCheckpointTrigger)
	add(get, "/jobs/:jobid/checkpoints/:triggerid", personality.hasCheckpointTrigger, handleCheckpointStatus)
	// Savepoints.
	add(post, "/jobs/:jobid/savepoints", nil, handleSavepointTrigger)
	add(get, "/jobs/:jobid/savepoints/:triggerid", nil, handleSavepointStatus)
	add(post, "/jobs/:jobid/stop", nil, handleStop)
	add(post, "/savepoint-disposal", nil, handleDisposalTrigger)
	add(get, "/savepoint-disposal/:triggerid", nil, handleDisposalStatus)
}

// matchRoute finds the route of a request path (without the /v1 prefix)
// and its parameters. Routes of any version are returned; the caller checks
// that the server's version has it.
func matchRoute(method, p string) (*route, map[string]string) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var best *route
	var bestParams map[string]string
	bestStatic := -1
	for _, rt := range routes {
		if rt.method != method || len(rt.parts) != len(parts) {
			continue
		}
		params := map[string]string{}
		static := 0
		ok := true
		for i, seg := range rt.parts {
			if strings.HasPrefix(seg, ":") {
				if parts[i] == "" {
					ok = false
					break
				}
				params[seg[1:]] = parts[i]
				continue
			}
			if seg != parts[i] {
				ok = false
				break
			}
			static++
		}
		if ok && static > bestStatic {
			best, bestParams, bestStatic = rt, params, static
		}
	}
	return best, bestParams
}

// routeByName finds a route by its name, "METHOD /pattern", or by its
// pattern alone; several routes may share a pattern.
func routesByName(name string) []*route {
	var out []*route
	for _, rt := range routes {
		if rt.name() == name || rt.pattern == name {
			out = append(out, rt)
		}
	}
	return out
}
