package flinktest

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// uploadDir is where the fake pretends to keep uploaded jars.
const uploadDir = "/tmp/flinktest/upload/flink-web-upload"

// jar is an uploaded jar.
type jar struct {
	id       flinkapi.JarID
	name     string
	uploaded time.Time
	entries  []string // entry classes named in the manifest
	classes  map[string]bool
	isZip    bool
}

// hasClass reports whether the jar has the class: named in its manifest or
// present as a class file. The fake cannot look into a file that is no
// jar; it accepts any valid class name for one.
func (j *jar) hasClass(name string) bool {
	if !flinkapi.IsJavaClassName(name) && !flinkapi.IsJavaClassName("p."+name) {
		return false
	}
	return !j.isZip || contains(j.entries, name) || j.classes[strings.ReplaceAll(name, ".", "/")+".class"]
}

// MinimalJar returns a minimal jar file whose manifest names mainClass as its
// entry class, to upload to the fake (it runs no code of its own).
func MinimalJar(mainClass string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	fmt.Fprintf(w, "Manifest-Version: 1.0\r\nCreated-By: flinktest\r\nMain-Class: %s\r\n\r\n", mainClass)
	_ = zw.Close()
	return buf.Bytes()
}

// readJar reads the entry classes of a jar as Flink lists them
// ("program-class", else "Main-Class", comma separated) and the names of
// its class files. A file that is no jar has none.
func readJar(data []byte) (entries []string, classes map[string]bool, ok bool) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, false
	}
	classes = map[string]bool{}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".class") {
			classes[f.Name] = true
		}
	}
	return manifestEntries(zr), classes, true
}

func manifestEntries(zr *zip.Reader) []string {
	for _, f := range zr.File {
		if f.Name != "META-INF/MANIFEST.MF" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil
		}
		defer rc.Close()
		attrs := map[string]string{}
		sc := bufio.NewScanner(io.LimitReader(rc, 1<<20))
		var last string
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			if strings.HasPrefix(line, " ") && last != "" {
				attrs[last] += line[1:] // continuation line
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				last = strings.TrimSpace(k)
				attrs[last] = strings.TrimSpace(v)
			}
		}
		cls := attrs["program-class"]
		if cls == "" {
			cls = attrs["Main-Class"]
		}
		var out []string
		for _, c := range strings.Split(cls, ",") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

func handleJarUpload(q *request, w http.ResponseWriter) *restError {
	files, err := uploadedFiles(q.r, q.body)
	if err != nil || len(files) != 1 {
		return handlerError(http.StatusBadRequest, jexc{class: classRestHandler, frames: framesRestHandler,
			msg: fmt.Sprintf("Exactly 1 file must be sent, received %d.", len(files))})
	}
	f := files[0]
	if !strings.HasSuffix(f.name, ".jar") {
		return handlerError(http.StatusBadRequest, jexc{class: classRestHandler, frames: framesRestHandler, msg: "Only Jar files are allowed."})
	}
	j := &jar{
		id:       flinkapi.JarID(q.s.newUUID() + "_" + f.name),
		name:     f.name,
		uploaded: q.now,
	}
	j.entries, j.classes, j.isZip = readJar(f.data)
	q.s.jars = append(q.s.jars, j)
	writeJSON(w, http.StatusOK, map[string]string{"filename": uploadDir + "/" + string(j.id), "status": "success"})
	return nil
}

type uploadedFile struct {
	name string
	data []byte
}

// uploadedFiles returns the files of a multipart/form-data body.
func uploadedFiles(r *http.Request, body []byte) ([]uploadedFile, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		return nil, fmt.Errorf("not a multipart body")
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var files []uploadedFile
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return files, err
		}
		if p.FileName() == "" {
			continue
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return files, err
		}
		files = append(files, uploadedFile{name: path.Base(p.FileName()), data: data})
	}
}

func handleJarList(q *request, w http.ResponseWriter) *restError {
	files := []any{}
	for i := len(q.s.jars) - 1; i >= 0; i-- {
		j := q.s.jars[i]
		entries := []any{}
		for _, e := range j.entries {
			entries = append(entries, map[string]any{"name": e, "description": nil})
		}
		files = append(files, map[string]any{"id": j.id, "name": j.name, "uploaded": j.uploaded.UnixMilli(), "entry": entries})
	}
	writeJSON(w, http.StatusOK, map[string]any{"address": "http://" + q.r.Host, "files": files})
	return nil
}

func (s *Server) findJar(id string) (int, *jar) {
	for i, j := range s.jars {
		if string(j.id) == id {
			return i, j
		}
	}
	return -1, nil
}

func handleJarDelete(q *request, w http.ResponseWriter) *restError {
	id := q.params["jarid"]
	i, j := q.s.findJar(id)
	if j == nil {
		// Flink answers 400, not 404, for a jar it does not have.
		return handlerError(http.StatusBadRequest, jexc{class: classRestHandler, frames: []string{
			"org.apache.flink.runtime.webmonitor.handlers.JarDeleteHandler.lambda$handleRequest$0(JarDeleteHandler.java:80)",
			"java.base/java.util.concurrent.CompletableFuture$AsyncSupply.run(CompletableFuture.java:1768)",
		}, msg: fmt.Sprintf("File %s does not exist in %s.", id, uploadDir)})
	}
	q.s.jars = append(q.s.jars[:i], q.s.jars[i+1:]...)
	writeJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// applicationError is the 400 of a jar run whose program failed: Flink
// wraps the cause in several layers.
func applicationError(cause ...jexc) *restError {
	chain := []jexc{
		{class: classRestHandler, msg: "Could not execute application.", frames: framesJarRun},
		wrapped(classCompletion, jexc{class: classFlinkRuntime, msg: "Could not execute application."}, framesCompletion),
		{class: classFlinkRuntime, msg: "Could not execute application.", frames: framesJarHandler},
	}
	return handlerError(http.StatusBadRequest, append(chain, cause...)...)
}

// jobFailedToExecute is the cause chain of a program whose job submission
// failed.
func jobFailedToExecute(name string, cause ...jexc) []jexc {
	return append([]jexc{
		{class: classProgramInvocation, msg: fmt.Sprintf("The main method caused an error: Failed to execute job '%s'.", name), frames: framesJarHandler},
		{class: classFlinkException, msg: fmt.Sprintf("Failed to execute job '%s'.", name), frames: framesJarHandler},
	}, cause...)
}

func handleJarRun(q *request, w http.ResponseWriter) *restError { return runJar(q, w, false) }

// handleJarRunApplication is POST /jars/:jarid/run-application (2.3): the
// jar's program runs as an application of its own, whose job the fake
// starts as a jar run would; Flink answers 202 with the application's id
// without waiting for the job.
func handleJarRunApplication(q *request, w http.ResponseWriter) *restError { return runJar(q, w, true) }

// runJar runs a jar: as a job (the jar run; on 2.3 inside an application
// named after it, whose id is the job's) or, with asApp, as an application.
func runJar(q *request, w http.ResponseWriter, asApp bool) *restError {
	p := q.s.cfg.pers
	class, fields := bodyJarRun, p.jarRunFields()
	if asApp {
		class, fields = bodyJarRunApp, p.jarRunApplicationFields()
	}
	b, e := q.parseBody(class, fields)
	if e != nil {
		return e
	}
	var appID string
	if asApp {
		raw, e := b.str("applicationId")
		if e != nil {
			return e
		}
		if raw != "" {
			parsed, err := flinkapi.ParseApplicationID(raw)
			if err != nil {
				return badFormat(simpleName(class), jexc{class: classJSONMapping, msg: fmt.Sprintf(
					"Cannot deserialize value of type `org.apache.flink.api.common.ApplicationID` from String \"%s\" (through reference chain: %s[\"applicationId\"])", raw, class)})
			}
			appID = string(parsed)
			if q.cl.apps[appID] != nil {
				dup := jexc{class: "org.apache.flink.runtime.client.DuplicateApplicationSubmissionException", msg: "Application has already been submitted.", frames: framesDispatcher}
				return handlerError(http.StatusBadRequest,
					jexc{class: classRestHandler, msg: "Could not submit application.", frames: framesJarRun},
					wrapped(classCompletion, dup, framesCompletion), dup)
			}
		}
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
	var id flinkapi.JobID
	if rawID != "" {
		parsed, err := flinkapi.ParseJobID(rawID)
		if err != nil {
			return badFormat(simpleName(class), jexc{class: classJSONMapping, msg: fmt.Sprintf(
				"Cannot deserialize value of type `org.apache.flink.api.common.JobID` from String \"%s\" (through reference chain: %s[\"jobId\"])", rawID, class)})
		}
		id = parsed
	}
	savepointPath, e := b.str("savepointPath")
	if e != nil {
		return e
	}
	allowNonRestored, e := b.boolean("allowNonRestoredState")
	if e != nil {
		return e
	}
	modes := []string{"CLAIM", "NO_CLAIM", "LEGACY"}
	if p.isV2() {
		modes = modes[:2]
	}
	if _, e = b.enum("restoreMode", "org.apache.flink.core.execution.RecoveryClaimMode", modes...); e != nil {
		return e
	}
	if _, e = b.enum("claimMode", "org.apache.flink.core.execution.RecoveryClaimMode", modes...); e != nil {
		return e
	}
	conf, e := b.stringMap("flinkConfiguration")
	if e != nil {
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
		cause := jexc{class: classProgramInvocation, frames: framesJarHandler, msg: fmt.Sprintf(
			"Neither a 'Main-Class', nor a 'program-class' entry was found in the jar file '%s/%s'.", uploadDir, jarID)}
		return serverError(wrapped(classCompletion, cause, framesJarHandler), cause)
	}
	if !jr.hasClass(entryClass) {
		cause := jexc{class: classProgramInvocation, frames: framesJarHandler, msg: fmt.Sprintf(
			"The program's entry point class '%s' was not found in the jar file.", entryClass)}
		return serverError(wrapped(classCompletion, cause, framesJarHandler), cause,
			jexc{class: "java.lang.ClassNotFoundException", msg: entryClass})
	}
	strict := entryClass == CounterJobClass
	spec, err := parseArgs(args, q.s.cfg.checkpointInterval, strict)
	if err != nil && asApp {
		// The application's main method runs after the answer: the
		// application fails without a job.
		if appID == "" {
			appID = q.s.newHex()
		}
		q.cl.addApp(appID, entryClass, nil, q.now)
		writeJSON(w, http.StatusAccepted, map[string]any{"applicationid": appID})
		return nil
	}
	if err != nil {
		return applicationError(
			jexc{class: classProgramInvocation, msg: "The main method caused an error: " + err.Error(), frames: framesJarHandler},
			jexc{class: classIllegalArgument, msg: err.Error(), frames: []string{"dev.flinkkit.testjob.CounterJob$Options.parse(CounterJob.java:260)", "dev.flinkkit.testjob.CounterJob.main(CounterJob.java:73)"}},
		)
	}

	prog := &program{
		jar: jr.id, entryClass: entryClass, args: args, spec: spec, parallelism: parallelism,
		jobID: id, savepointPath: savepointPath, allowNonRestored: allowNonRestored, conf: conf,
	}
	if id == "" {
		id = flinkapi.JobID(q.s.newHex())
	}
	if q.cl.byID[id] != nil {
		dup := jexc{class: classDuplicateJob, msg: "Job has already been submitted.", frames: framesDispatcher}
		if p.isV2() {
			dup = jexc{class: "org.apache.flink.runtime.client.DuplicateApplicationSubmissionException", msg: "Application has already been submitted.", frames: framesDispatcher}
		}
		return applicationError(jobFailedToExecute(spec.name, dup)...)
	}

	j := q.s.programJob(prog, id)
	switch {
	case asApp:
		if appID == "" {
			appID = q.s.newHex()
		}
		j.app = appID
	case p.hasApplications():
		j.app = string(id)
	}
	q.cl.submit(j, q.now, savepointPath)
	if j.restoreFails(savepointPath) && !asApp {
		// The submission waits for the job to initialise; restoring fails
		// it, and the jar run reports that while the job stays FAILED.
		cause := j.restoreCause(savepointPath)
		return applicationError(jobFailedToExecute(spec.name,
			wrapped(classRuntime, jexc{class: classJobInit, msg: "Could not start the JobMaster."}, framesJarHandler),
			jexc{class: classJobInit, msg: "Could not start the JobMaster.", frames: framesJobMaster},
			wrapped(classCompletion, wrapped(classRuntime, cause, nil), framesCompletion),
			wrapped(classRuntime, cause, framesFileSystem),
			cause,
		)...)
	}
	if asApp {
		q.cl.addApp(appID, entryClass, j, q.now)
		q.cl.apps[appID].prog = prog
		writeJSON(w, http.StatusAccepted, map[string]any{"applicationid": appID})
		return nil
	}
	if p.hasApplications() {
		q.cl.addApp(string(id), "SingleJobApplication("+spec.name+")", j, q.now)
	}
	res := map[string]any{"jobid": id}
	if p.isV2() {
		res["applicationId"] = id
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// program is what a jar run or a run-application asked the JobManager to
// run. An application that Flink 2.3 executes again after a JobManager
// failover runs it again: its job restores from the request's savepoint
// (not from a checkpoint) and gets the request's job id, or a new one if
// the request fixed none.
type program struct {
	jar              flinkapi.JarID
	entryClass       string
	args             []string
	spec             jobSpec
	parallelism      int            // the request's; 0: none
	jobID            flinkapi.JobID // the request's fixed job id; "": none
	savepointPath    string
	allowNonRestored bool
	conf             map[string]string
}

// programJob returns the job the program submits, with id, not yet
// submitted.
func (s *Server) programJob(pr *program, id flinkapi.JobID) *job {
	j := &job{id: id, jar: pr.jar, entryClass: pr.entryClass, args: pr.args, spec: pr.spec}
	// The test job's --parallelism wins; without it, the jar run's, else
	// the cluster's parallelism.default (1).
	j.parallelism = 1
	if pr.parallelism > 0 {
		j.parallelism = pr.parallelism
	}
	if pr.spec.parallelism > 0 {
		j.parallelism = pr.spec.parallelism
	}
	j.checkpointing = pr.spec.checkpointEvery > 0
	j.interval = pr.spec.checkpointEvery
	switch pr.conf["execution.checkpointing.externalized-checkpoint-retention"] {
	case "RETAIN_ON_CANCELLATION":
		j.retainOnCancel, j.retainOnFail = true, true
	case "DELETE_ON_CANCELLATION":
		j.retainOnFail = true
	}
	if pr.savepointPath != "" {
		j.restoredFrom = pr.savepointPath
		if snap := s.snapshots[normalizeLocation(pr.savepointPath)]; snap != nil && !snap.removed {
			j.initial = snap
			j.restoreFault = j.restoreMismatch(snap, pr.allowNonRestored)
		}
	}
	return j
}
