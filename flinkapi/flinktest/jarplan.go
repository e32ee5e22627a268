package flinktest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// programFailed is the answer of a jar plan whose program failed while it
// built its job graph: the handler does not map the failure to a status,
// so Flink answers 500 with the trace, a ProgramInvocationException inside
// a CompletionException.
func programFailed(cause ...jexc) *restError {
	pie := cause[0]
	return serverError(append([]jexc{wrapped(classCompletion, pie, framesJarHandler)}, cause...)...)
}

// handleJarPlan answers POST /jars/:jarid/plan: the plan of the job the
// jar's program builds with the request's arguments, without running it.
// The test job's --parallelism, --uid-suffix and --max-parallelism shape
// it as they shape a running job; the plan shows no maximum parallelism.
func handleJarPlan(q *request, w http.ResponseWriter) *restError {
	p := q.s.cfg.pers
	b, e := q.parseBody(bodyJarPlan, p.jarPlanFields())
	if e != nil {
		return e
	}
	entryClass, e := b.str("entryClass")
	if e != nil {
		return e
	}
	args, e := b.strings("programArgsList")
	if e != nil {
		return e
	}
	if len(args) == 0 && !p.isV2() {
		s, e := b.str("programArgs")
		if e != nil {
			return e
		}
		args = strings.Fields(s)
	}
	parallelism, e := b.integer("parallelism")
	if e != nil {
		return e
	}
	rawID, e := b.str("jobId")
	if e != nil {
		return e
	}
	id := flinkapi.JobID(rawID)
	if rawID != "" {
		if _, err := flinkapi.ParseJobID(rawID); err != nil {
			return badFormat(simpleName(bodyJarPlan), jexc{class: classJSONMapping, msg: fmt.Sprintf(
				"Cannot deserialize value of type `org.apache.flink.api.common.JobID` from String \"%s\" (through reference chain: %s[\"jobId\"])", rawID, bodyJarPlan)})
		}
	}
	if _, e := b.stringMap("flinkConfiguration"); e != nil {
		return e
	}

	jarID := q.params["jarid"]
	_, jr := q.s.findJar(jarID)
	if jr == nil {
		missing := jexc{class: classRestHandler, msg: fmt.Sprintf("Jar file %s/%s does not exist", uploadDir, jarID), frames: framesJarHandler}
		return serverError(wrapped(classCompletion, missing, framesJarHandler), missing)
	}
	if entryClass == "" && len(jr.entries) > 0 {
		entryClass = jr.entries[0]
	}
	if entryClass == "" {
		return programFailed(jexc{class: classProgramInvocation, frames: framesJarHandler, msg: fmt.Sprintf(
			"Neither a 'Main-Class', nor a 'program-class' entry was found in the jar file '%s/%s'.", uploadDir, jarID)})
	}
	if !jr.hasClass(entryClass) {
		return programFailed(jexc{class: classProgramInvocation, frames: framesJarHandler, msg: fmt.Sprintf(
			"The program's entry point class '%s' was not found in the jar file.", entryClass)},
			jexc{class: "java.lang.ClassNotFoundException", msg: entryClass})
	}
	spec, err := parseArgs(args, q.s.cfg.checkpointInterval, entryClass == CounterJobClass)
	if err != nil {
		return programFailed(
			jexc{class: classProgramInvocation, msg: "The main method caused an error: " + err.Error(), frames: framesJarHandler},
			jexc{class: classIllegalArgument, msg: err.Error(), frames: []string{"dev.flinkkit.testjob.CounterJob$Options.parse(CounterJob.java:260)", "dev.flinkkit.testjob.CounterJob.main(CounterJob.java:73)"}},
		)
	}
	if id == "" {
		id = flinkapi.JobID(q.s.newHex())
	}
	// As for a jar run: the test job's --parallelism wins, else the
	// request's, else parallelism.default (1).
	par := 1
	if parallelism > 0 {
		par = parallelism
	}
	if spec.parallelism > 0 {
		par = spec.parallelism
	}
	writeJSON(w, http.StatusOK, map[string]any{"plan": map[string]any{
		"jid": id, "name": spec.name, "type": "STREAMING", "nodes": planNodes(spec, par),
	}})
	return nil
}
