package flinktest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Application is the JobManager of an application cluster on the fake: a
// REST endpoint of its own (URL) that serves one job of the Server, as an
// application cluster's JobManager serves the one job it started with.
// Its job lists show only that job, and a request about another job is
// answered as Flink answers for a job it does not know. Faults injected
// into the Server, its clock and a JobManager restart apply to it too:
// the jobs, savepoints and checkpoints of every Application live in the
// one Server, as on a shared file system.
//
// With shutdownOnFinish (Flink's default,
// execution.shutdown-on-application-finish: true), the JobManager exits
// once its job has ended: every later request gets a connection reset.
// Close stops it, as deleting the cluster does.
type Application struct {
	// URL is the base URL of the application cluster's REST API.
	URL string
	// Job is the job it serves.
	Job flinkapi.JobID

	s                *Server
	ts               *httptest.Server
	shutdownOnFinish bool

	mu     sync.Mutex
	closed bool
	exited bool
}

// Application starts the JobManager endpoint of an application cluster
// serving job id, which the caller runs on s (a jar run with that job id,
// as the cluster's entry point would). Close it when done.
func (s *Server) Application(id flinkapi.JobID, shutdownOnFinish bool) *Application {
	a := &Application{Job: id, s: s, shutdownOnFinish: shutdownOnFinish}
	a.ts = httptest.NewServer(http.HandlerFunc(a.serveHTTP))
	a.URL = a.ts.URL
	return a
}

// Close stops the JobManager; later requests are refused. Closing twice
// is harmless.
func (a *Application) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	a.mu.Unlock()
	a.ts.CloseClientConnections()
	a.ts.Close()
}

// Running reports whether the JobManager still runs: not closed, and not
// exited after its job ended (with shutdownOnFinish).
func (a *Application) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.closed && !a.exitedLocked()
}

// exitedLocked reports, with a.mu held, whether the JobManager exited
// because its job ended; once exited it stays so.
func (a *Application) exitedLocked() bool {
	if a.exited || !a.shutdownOnFinish {
		return a.exited
	}
	if info, ok := a.s.Job(a.Job); ok && info.State.IsGloballyTerminal() {
		a.exited = true
	}
	return a.exited
}

func (a *Application) serveHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	gone := a.closed || a.exitedLocked()
	a.mu.Unlock()
	if gone {
		a.s.recordRequest(Request{Time: a.s.clock.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}, 0, "application exited")
		a.s.reset(w)
		return
	}
	p := strings.TrimPrefix(path.Clean("/"+r.URL.EscapedPath()), "/v1")
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "jobs" && parts[1] != "overview" && !a.owns(parts[1]):
		// Another job: this JobManager does not know it.
		if len(parts) == 2 && r.Method == http.MethodGet {
			writeError(w, jobNotFoundError(parts[1], framesDispatcher))
		} else {
			writeError(w, jobNotFoundServerError(flinkapi.JobID(parts[1])))
		}
		return
	case r.Method == http.MethodGet && (p == "/jobs" || p == "/jobs/overview"):
		rec := httptest.NewRecorder()
		a.s.serveHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		body := rec.Body.Bytes()
		if rec.Code == http.StatusOK {
			body = a.filter(body)
			w.Header().Del("Content-Length")
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
		return
	}
	a.s.serveHTTP(w, r)
}

// owns reports whether the path segment id names the application's job.
func (a *Application) owns(id string) bool {
	return strings.EqualFold(id, string(a.Job))
}

// filter keeps only the application's job in a job list (GET /jobs) or
// overview (GET /jobs/overview).
func (a *Application) filter(body []byte) []byte {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return body
	}
	for _, key := range []string{"jobs"} {
		var items []map[string]any
		if json.Unmarshal(doc[key], &items) != nil {
			continue
		}
		kept := items[:0]
		for _, it := range items {
			id, _ := it["id"].(string)
			if id == "" {
				id, _ = it["jid"].(string)
			}
			if a.owns(id) {
				kept = append(kept, it)
			}
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return body
		}
		doc[key] = b
	}
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(doc); err != nil {
		return body
	}
	return out.Bytes()
}
