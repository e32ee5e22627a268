package flinktest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Defaults of a Server.
const (
	defaultVersion            = "1.20.5"
	defaultSavepointDuration  = 300 * time.Millisecond
	defaultCheckpointInterval = time.Second
	defaultStoreDuration      = 5 * time.Minute
	defaultRefreshInterval    = 3 * time.Second
	defaultSlots              = 4
	defaultSavepointDir       = "/tmp/flinktest/savepoints"
	defaultCheckpointDir      = "/tmp/flinktest/checkpoints"
)

// clockStart is where the manual clock of a Server without WithClock
// starts: a fixed instant, so that runs are repeatable.
var clockStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// maxLoggedBody bounds the request bodies the request log keeps.
const maxLoggedBody = 1 << 20

// Server is a fake Flink JobManager serving the REST API over HTTP on the
// loopback interface. Create it with NewServer and stop it with Close. Its
// methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of the REST API, "http://127.0.0.1:port".
	URL string

	ts    *httptest.Server
	clock *Clock
	cfg   config

	mu sync.Mutex // guards everything below
	cl *cluster   // the JobManager's state; replaced on restart
	// Kept across JobManager restarts: the disk and the blob store.
	jars      []*jar
	snapshots map[string]*snapshot // savepoints and checkpoints by location
	outDirs   map[string]map[string]int64
	failMarks map[string]bool // out folders with the mark of a --fail-once failure
	writers   outWriters      // the jobs writing to outDirs
	rng       *rand.Rand
	faults    []*faultState
	log       []Request
	downUntil time.Time // the JobManager is down (restarting) until then
	shutdown  bool      // DELETE /cluster was called
	// vertexMetrics are the metrics tests set (SetVertexMetrics).
	vertexMetrics map[vertexKey]VertexMetrics
}

// config is what the options set.
type config struct {
	pers               personality
	clock              *Clock
	realTime           bool
	savepointDuration  time.Duration
	stopDuration       time.Duration // with stopDurationSet: a stop's, apart from savepointDuration
	stopDurationSet    bool
	checkpointInterval time.Duration
	storeDuration      time.Duration
	refreshInterval    time.Duration
	autoAdvance        time.Duration
	slots              int
	seed               int64
	savepointDir       string
	checkpointDir      string
	adaptive           bool
	rescaleHistory     int // web.adaptive-scheduler.rescale-history.size
}

// Option configures a Server. NewServer panics on an invalid option, as
// httptest does on a failure to listen: both are mistakes in the test.
type Option func(*config) error

// WithVersion sets the Flink version the fake plays ("1.19.1", "1.20.5",
// "2.3.0", ...; default "1.20.5"). It decides which endpoints exist,
// which request fields are accepted (1.15 to 1.19 reject unknown fields with
// 400) and which response fields are sent. Versions 1.15 to 2.x are
// supported.
func WithVersion(v string) Option {
	return func(c *config) error {
		p, err := newPersonality(v)
		if err != nil {
			return fmt.Errorf("flinktest: WithVersion: %w", err)
		}
		c.pers = p
		return nil
	}
}

// WithClock makes the server read time from clock, which the test
// advances. Without it (and without WithRealTime) the server has its own
// manual clock, starting at 2026-01-01T00:00:00Z; Server.Clock returns it.
func WithClock(clock *Clock) Option {
	return func(c *config) error {
		if clock == nil {
			return fmt.Errorf("flinktest: WithClock: clock is nil")
		}
		c.clock = clock
		return nil
	}
}

// WithRealTime makes the server follow the wall clock, for demos and
// tools: jobs start, checkpoints happen and savepoints complete in real
// time. Tests should prefer the default manual clock.
func WithRealTime() Option {
	return func(c *config) error {
		c.realTime = true
		return nil
	}
}

// WithSavepointDuration sets how long a savepoint or a stop with savepoint
// takes from trigger to completion (default 300ms).
func WithSavepointDuration(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("flinktest: WithSavepointDuration: negative duration %v", d)
		}
		c.savepointDuration = d
		return nil
	}
}

// WithStopDuration sets how long the synchronous savepoint of a stop
// with savepoint takes from trigger to completion, apart from the
// savepoints WithSavepointDuration times (default: the same duration).
func WithStopDuration(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("flinktest: WithStopDuration: negative duration %v", d)
		}
		c.stopDuration, c.stopDurationSet = d, true
		return nil
	}
}

// WithCheckpointInterval sets the checkpoint interval of jobs whose program
// arguments do not set one with --checkpoint-interval (default 1s). Zero
// disables periodic checkpoints.
func WithCheckpointInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("flinktest: WithCheckpointInterval: negative interval %v", d)
		}
		if d > 0 && d < 10*time.Millisecond {
			return fmt.Errorf("flinktest: WithCheckpointInterval: %v is below Flink's minimum of 10ms", d)
		}
		c.checkpointInterval = d
		return nil
	}
}

// WithStoreDuration sets how long results of asynchronous operations are
// kept after they complete (rest.async.store-duration, default 5
// minutes). After that their trigger ids are unknown (404).
func WithStoreDuration(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("flinktest: WithStoreDuration: duration must be positive, got %v", d)
		}
		c.storeDuration = d
		return nil
	}
}

// WithRefreshInterval sets web.refresh-interval (default 3s): Flink caches
// what it answers about a job's execution graph (details, exceptions,
// checkpoint configuration) and its checkpoint statistics for this long,
// so those answers may be that old. Zero disables the caches. GET /jobs/:jobid/status, /jobs and
// /jobs/overview are never cached.
func WithRefreshInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("flinktest: WithRefreshInterval: negative interval %v", d)
		}
		c.refreshInterval = d
		return nil
	}
}

// WithAutoAdvance moves the server's manual clock forward by d before
// answering each request. It lets clients that wait in real time between
// polls, such as flinkapi.Waiter, see time pass on a manual clock without
// any sleeping in the test.
func WithAutoAdvance(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("flinktest: WithAutoAdvance: negative duration %v", d)
		}
		c.autoAdvance = d
		return nil
	}
}

// WithSlots sets the task slots of the cluster's single TaskManager
// (default 4). A job needs as many free slots as its parallelism; until it
// gets them it stays CREATED, and it fails after Flink's slot request
// timeout (5 minutes). Zero means no TaskManager.
func WithSlots(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("flinktest: WithSlots: negative slot count %d", n)
		}
		c.slots = n
		return nil
	}
}

// WithSeed seeds the random choices of the server: the ids it generates
// (jars, jobs, triggers, savepoint directories) and which requests faults
// with a probability hit. The same seed and the same requests give the
// same answers. Default 1.
func WithSeed(seed int64) Option {
	return func(c *config) error {
		c.seed = seed
		return nil
	}
}

// WithSavepointDir sets the cluster's default savepoint directory
// (execution.checkpointing.savepoint-dir, default
// "/tmp/flinktest/savepoints"), a local path. An empty dir configures none: then savepoints without a
// target directory fail, as in Flink.
func WithSavepointDir(dir string) Option {
	return func(c *config) error {
		if dir != "" && !strings.HasPrefix(dir, "/") {
			return fmt.Errorf("flinktest: WithSavepointDir: %q is not an absolute path", dir)
		}
		c.savepointDir = dir
		return nil
	}
}

// WithCheckpointDir sets the directory under which checkpoints are written,
// one folder per job (default "/tmp/flinktest/checkpoints"), a local path.
func WithCheckpointDir(dir string) Option {
	return func(c *config) error {
		if !strings.HasPrefix(dir, "/") {
			return fmt.Errorf("flinktest: WithCheckpointDir: %q is not an absolute path", dir)
		}
		c.checkpointDir = dir
		return nil
	}
}

// WithAdaptiveScheduler runs jobs with Flink's adaptive scheduler
// (jobmanager.scheduler: adaptive): the resource requirements endpoints
// (1.18+) answer and accept parallelism bounds instead of failing with 500.
func WithAdaptiveScheduler() Option {
	return func(c *config) error {
		c.adaptive = true
		return nil
	}
}

// WithRescaleHistory sets web.adaptive-scheduler.rescale-history.size
// (Flink 2.3+): each job of the adaptive scheduler (WithAdaptiveScheduler)
// keeps its last size rescales, which GET /jobs/:jobid/rescales/history
// and /rescales/details/:rescaleuuid serve: its first schedule, then each
// in-place rescale that changes its parallelism. 0, the default, keeps
// none: the history is empty and no rescale is found, as on Flink with the
// option unset. Without the adaptive scheduler the routes answer 404, as
// Flink does.
func WithRescaleHistory(size int) Option {
	return func(c *config) error {
		if size < 0 {
			return fmt.Errorf("flinktest: WithRescaleHistory: size %d is negative", size)
		}
		c.rescaleHistory = size
		return nil
	}
}

// NewServer starts a fake JobManager with an empty session cluster: one
// TaskManager, no jars, no jobs. It panics on an invalid option.
func NewServer(opts ...Option) *Server {
	p, _ := newPersonality(defaultVersion)
	cfg := config{
		pers:               p,
		savepointDuration:  defaultSavepointDuration,
		checkpointInterval: defaultCheckpointInterval,
		storeDuration:      defaultStoreDuration,
		refreshInterval:    defaultRefreshInterval,
		slots:              defaultSlots,
		seed:               1,
		savepointDir:       defaultSavepointDir,
		checkpointDir:      defaultCheckpointDir,
	}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("flinktest: NewServer: option %d is nil", i))
		}
		if err := o(&cfg); err != nil {
			panic(err.Error())
		}
	}
	clock := cfg.clock
	switch {
	case clock != nil && cfg.realTime:
		panic("flinktest: NewServer: WithClock and WithRealTime exclude each other")
	case cfg.realTime:
		clock = newWallClock()
	case clock == nil:
		clock = NewClock(clockStart)
	}
	s := &Server{
		clock:     clock,
		cfg:       cfg,
		snapshots: map[string]*snapshot{},
		outDirs:   map[string]map[string]int64{},
		failMarks: map[string]bool{},
		rng:       rand.New(rand.NewPCG(uint64(cfg.seed), uint64(cfg.seed)^0x5eed5eed5eed5eed)),
	}
	s.cl = newCluster(s)
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.ts.URL
	return s
}

// Close shuts the server down and waits for the requests in flight.
func (s *Server) Close() { s.ts.Close() }

// Clock returns the server's clock, to advance it.
func (s *Server) Clock() *Clock { return s.clock }

// SavepointDir returns the cluster's default savepoint directory, a local
// path ("" if none is configured).
func (s *Server) SavepointDir() string { return s.cfg.savepointDir }

// CheckpointDir returns the directory under which checkpoints are written.
func (s *Server) CheckpointDir() string { return s.cfg.checkpointDir }

// Request is one request the server received, with the status it
// answered.
type Request struct {
	Time   time.Time // on the server's clock, when it arrived
	Method string
	Path   string // without the query
	Query  string // the raw query, without "?"
	Body   string // up to 1 MiB of the request body
	// Route is the route pattern the request matched, as in Fault.Route
	// ("POST /jobs/:jobid/savepoints"); empty for an unknown route.
	Route string
	// Status is the status code answered; 0 when the connection was closed
	// without an answer.
	Status int
	// Fault names the fault injected into the request, if any.
	Fault string
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// RequestCount is the number of requests received so far:
// len(Requests()), without copying the log.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// RequestsSince returns the requests received after the first n, oldest
// first: Requests()[n:], without copying the ones before (none when the
// log holds n or fewer, as after ClearRequests).
func (s *Server) RequestsSince(n int) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n >= len(s.log) {
		return nil
	}
	return append([]Request(nil), s.log[max(n, 0):]...)
}

// ClearRequests empties the request log.
func (s *Server) ClearRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// serveHTTP answers one request: it records it, injects faults, and hands
// it to the route's handler with the cluster advanced to the present.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if !s.clock.isWall() && s.cfg.autoAdvance > 0 {
		s.clock.Advance(s.cfg.autoAdvance)
	}
	rt, params := matchRoute(r.Method, strings.TrimPrefix(path.Clean("/"+r.URL.EscapedPath()), "/v1"))
	if rt != nil && !rt.exists(s.cfg.pers) {
		rt = nil // an endpoint of a later release
	}
	entry := Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Body: string(body[:min(len(body), maxLoggedBody)]),
	}
	if rt != nil {
		entry.Route = rt.name()
	}

	s.mu.Lock()
	entry.Time = s.clock.Now()
	down := s.shutdown || entry.Time.Before(s.downUntil)
	var faults []*faultState
	if !down {
		faults = s.matchFaults(&entry, params)
	}
	s.mu.Unlock()
	if down {
		s.recordRequest(entry, 0, "down")
		s.reset(w)
		return
	}

	// Latencies apply first; at most one other fault decides the answer.
	var names []string
	var decisive *faultState
	for _, f := range faults {
		names = append(names, f.describe())
		if f.Kind == FaultLatency {
			s.delay(r, f.Delay)
		} else {
			decisive = f
		}
	}
	fault := strings.Join(names, ", ")
	if decisive != nil && !decisive.After {
		switch decisive.Kind {
		case FaultStatus:
			rec := &statusRecorder{ResponseWriter: w}
			writeError(rec, s.injectedError(decisive, r, params))
			s.recordRequest(entry, rec.status, fault)
			return
		case FaultReset:
			s.recordRequest(entry, 0, fault)
			s.reset(w)
			return
		case FaultRestart:
			s.restartFromFault(decisive, "")
			if decisive.Restart.Downtime > 0 {
				s.recordRequest(entry, 0, fault)
				s.reset(w)
				return
			}
			// The new JobManager answers the request.
		}
	}
	if decisive == nil || !decisive.After {
		rec := &statusRecorder{ResponseWriter: w}
		s.handle(rec, r, rt, params, body)
		s.recordRequest(entry, rec.status, fault)
		return
	}

	// The request takes effect; then the fault replaces the answer.
	s.mu.Lock()
	cl, apps := s.cl, len(s.cl.appOrder)
	s.mu.Unlock()
	s.handle(httptest.NewRecorder(), r, rt, params, body)
	pending := ""
	if rt != nil && rt.name() == "POST /jars/:jarid/run-application" {
		s.mu.Lock()
		if s.cl == cl && len(cl.appOrder) > apps {
			pending = cl.appOrder[len(cl.appOrder)-1]
		}
		s.mu.Unlock()
	}
	switch decisive.Kind {
	case FaultStatus:
		rec := &statusRecorder{ResponseWriter: w}
		writeError(rec, s.injectedError(decisive, r, params))
		s.recordRequest(entry, rec.status, fault)
	case FaultRestart:
		s.restartFromFault(decisive, pending)
		fallthrough
	default:
		s.recordRequest(entry, 0, fault)
		s.reset(w)
	}
}

// handle runs the route's handler with the cluster advanced to now.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, rt *route, params map[string]string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.advance(now)
	if rt == nil {
		writeError(w, unknownRoute(r))
		return
	}
	req := &request{s: s, cl: s.cl, now: now, r: r, params: params, body: body, query: r.URL.Query()}
	if e := rt.handler(req, w); e != nil {
		writeError(w, e)
	}
}

// unknownRoute is Flink's answer for a path no handler serves: GETs reach
// the web UI's file server, other methods the router.
func unknownRoute(r *http.Request) *restError {
	if r.Method == http.MethodGet {
		return plainError(http.StatusNotFound, "Unable to load requested file "+r.URL.Path+".")
	}
	return plainError(http.StatusNotFound, "Not found: "+r.URL.Path)
}

func (s *Server) recordRequest(e Request, status int, fault string) {
	e.Status, e.Fault = status, fault
	s.mu.Lock()
	s.log = append(s.log, e)
	s.mu.Unlock()
}

// reset closes the client's connection without an answer.
func (s *Server) reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0) // RST instead of FIN
	}
	_ = conn.Close()
}

// delay holds a request for d: on a manual clock the clock moves forward
// by d at once, on a wall clock the request waits.
func (s *Server) delay(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	if !s.clock.isWall() {
		s.clock.Advance(d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
	}
}

// request is one request in the hands of a handler, with the server locked.
type request struct {
	s      *Server
	cl     *cluster
	now    time.Time
	r      *http.Request
	params map[string]string
	body   []byte
	query  url.Values
}

// jobID returns the :jobid path parameter, or Flink's 400 for a malformed
// one.
func (q *request) jobID() (flinkapi.JobID, *restError) {
	raw := q.params["jobid"]
	id, err := flinkapi.ParseJobID(raw)
	if err != nil {
		return "", badParameter(fmt.Sprintf("Cannot resolve path parameter (jobid) from value \"%s\".", raw))
	}
	return id, nil
}

// triggerID returns the :triggerid path parameter.
func (q *request) triggerID() (flinkapi.TriggerID, *restError) {
	raw := q.params["triggerid"]
	id, err := flinkapi.ParseTriggerID(raw)
	if err != nil {
		return "", badParameter(fmt.Sprintf("Cannot resolve path parameter (triggerid) from value \"%s\".", raw))
	}
	return id, nil
}

// newHex returns 32 random hex characters from the server's seeded source.
func (s *Server) newHex() string {
	const digits = "0123456789abcdef"
	var b [32]byte
	for i := range b {
		b[i] = digits[s.rng.IntN(16)]
	}
	return string(b[:])
}

// newUUID returns a random version 4 UUID from the seeded source.
func (s *Server) newUUID() string {
	h := []byte(s.newHex())
	h[12] = '4'
	h[16] = "89ab"[s.rng.IntN(4)]
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}
