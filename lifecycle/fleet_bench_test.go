package lifecycle

import (
	"bufio"
	"container/heap"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// benchFleets are the fleets of BenchmarkFleetPoll by size, set up once
// per run and kept for every count (-count) of it (a fleet of 5,000 jobs
// takes minutes to start on the fake).
var (
	benchFleetsMu sync.Mutex
	benchFleets   = map[int]*fleet{}
)

// benchFleet returns a fleet of n jobs at rest on a fake JobManager in a
// process of its own (fleetFake): started through the REST API and
// adopted (spec.Adopt), then settled.
func benchFleet(b *testing.B, n int) *fleet {
	benchFleetsMu.Lock()
	defer benchFleetsMu.Unlock()
	if f, ok := benchFleets[n]; ok {
		return f
	}
	fake := startFleetFake(b, n+4)
	f := newFleetOn(b, n, DefaultControllerPoll, fake.URL, fake.clock, fake.dir)
	f.fake = fake
	benchFleets[n] = f // kept for every count of the run, closed by TestMain
	ctx := context.Background()
	jar, err := f.c.UploadJar(ctx, f.specs[0].Job.JarFile)
	if err != nil {
		b.Fatal(err)
	}
	for i := range f.specs {
		run := f.specs[i].Job.run()
		run.JobID = flinkapi.JobID(fmt.Sprintf("%032x", i+1))
		if _, err := f.c.RunJar(ctx, jar, run); err != nil {
			b.Fatal(err)
		}
		f.specs[i].Adopt = run.JobID
	}
	fake.advance(b, 15*time.Second) // a checkpoint completed: stable
	f.poll(b)                       // adopted
	for i := range f.specs {
		f.specs[i].Adopt = ""
	}
	f.poll(b) // settled at rest
	for i := range f.sts {
		if !f.sts[i].Converged(f.specs[i]) || !f.sts[i].Settled {
			b.Fatalf("job %d not at rest: %s %s", i, f.sts[i].Reason, f.sts[i].Message)
		}
	}
	return f
}

// closeBenchFleets ends the fake JobManagers of benchFleets.
func closeBenchFleets() {
	benchFleetsMu.Lock()
	defer benchFleetsMu.Unlock()
	for n, f := range benchFleets {
		f.fake.close()
		delete(benchFleets, n)
	}
}

// held is a copy of what the caller keeps between polls: the statuses
// and the shared overview, or the informer's map and its last list.
func (f *fleet) held(impl string, known map[flinkapi.JobID]flinkapi.JobState, last []flinkapi.JobOverview) any {
	if impl == "informer" {
		return []any{maps.Clone(known), slices.Clone(last)}
	}
	sts := make([]JobStatus, len(f.sts))
	for i := range f.sts {
		f.sts[i].DeepCopyInto(&sts[i])
	}
	if impl == "shared" || impl == "watched" || impl == "changes" {
		f.shared.mu.Lock()
		defer f.shared.mu.Unlock()
		built := make([]flinkapi.JobDetails, 0, len(f.shared.built))
		for _, j := range f.shared.built {
			d := *j.details
			d.Timestamps, d.Vertices = maps.Clone(d.Timestamps), slices.Clone(d.Vertices)
			built = append(built, d)
		}
		rest := make([]restMemo, 0, len(f.shared.rest))
		for _, m := range f.shared.rest {
			c := *m
			c.spec, c.st = *m.spec.DeepCopy(), *m.st.DeepCopy()
			rest = append(rest, c)
		}
		return []any{sts, slices.Clone(f.shared.list), maps.Clone(f.shared.index), maps.Clone(f.shared.spare), maps.Clone(f.shared.built), built,
			maps.Clone(f.shared.rest), rest}
	}
	return sts
}

// heldPerJob is the heap that build's result holds, per job: the bytes
// it allocates (build copies what is held, and allocates nothing else).
func heldPerJob(n int, build func() any) float64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	v := build()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(v)
	return float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
}

// BenchmarkFleetPoll measures one poll of a fleet of n jobs at rest on
// one fake session cluster, then moves the clock on by the poll interval
// (untimed). impl=shared: every job's Controller called once, sharing a
// SharedObservation. impl=watched: the Controllers of the jobs
// SharedObservation.Changes names (none at rest) and of those whose
// Result.RequeueAfter ran out (a delaying queue, as a Kubernetes
// controller's): their resync (Controller.Resync) and, with health
// judged, their health checks. impl=changes: the watch alone (Changes,
// which reads the overview and compares it with the one before).
// Each poll of impl=watched and impl=changes is followed by the
// informer's poll (untimed), whose CPU time it reports beside its own
// (cpu/informer: the two run one after the other, under the same load,
// on a machine that other processes share). impl=unshared: every Controller without
// the SharedObservation. impl=informer: the baseline a user would write
// by hand, one GET /jobs/overview per poll and a comparison of each
// job's state with the one recorded, and, with health judged, each job's
// checkpoint statistics on the Controllers' schedule (healthSlot: every
// other poll, half of the fleet at each).
//
// The fake JobManager runs in a process of its own (fleetFake): the
// process's CPU time per poll (cpu-ns/op; ns/op is the time on the
// clock, which other processes on the machine stretch) is the caller's
// alone, its HTTP client's included, and none of the fake's. The
// overview is answered from a body rendered before the poll
// (overviewFront), as a JobManager answers from its cache. It reports the
// requests per job and poll, the most requests one poll sent
// (max-requests/poll) and the most CPU time one poll took
// (max-cpu-ns/poll), and the heap held per job between polls (the
// statuses, the shared overview and the memos of the jobs' last full
// calls at rest; the informer's map and last list).
func BenchmarkFleetPoll(b *testing.B) {
	for _, health := range []bool{false, true} {
		for _, n := range []int{10, 1000, 5000} {
			for _, impl := range []string{"shared", "watched", "changes", "unshared", "informer"} {
				if impl == "changes" && health {
					continue // the watch alone reads no checkpoints
				}
				b.Run(fmt.Sprintf("health=%v/n=%d/impl=%s", health, n, impl), func(b *testing.B) {
					benchFleetPoll(b, n, impl, health)
				})
			}
		}
	}
}

// benchPoll is one poll of BenchmarkFleetPoll's fleet: what it does in
// the timed part, the requests it counted, and its CPU times.
type benchPoll struct {
	f      *fleet
	impl   string
	health bool
	index  map[flinkapi.JobID]int
	known  map[flinkapi.JobID]flinkapi.JobState // the informer's states
	last   []flinkapi.JobOverview               // the informer's last list
	queue  dueQueue                             // impl=watched: when each Controller is to be called
	// counted: the requests the caller sent in the polls counted
	// (sent), the most in one poll (most), the fake's count after the
	// last poll (base).
	sent, most, base int
	// cpu: the process's CPU time in the timed part of the polls, and
	// the most of one poll (mostCPU); informerCPU: impl=watched and
	// impl=changes, the informer's poll after each poll, untimed.
	cpu, mostCPU, informerCPU time.Duration
}

// call calls job i's Controller and queues its next call.
func (p *benchPoll) call(b *testing.B, i int) {
	res, err := p.f.ctrls[i].Reconcile(context.Background(), p.f.specs[i], &p.f.sts[i])
	if err != nil {
		b.Fatal(err)
	}
	p.queue.push(i, p.f.fake.clock.Now().Add(res.RequeueAfter))
}

// informerPoll is the informer's poll: the overview read, each job's
// state compared with the one recorded, and, with health judged, the
// checkpoint statistics of the jobs whose health check is due.
func (p *benchPoll) informerPoll(b *testing.B) {
	ctx := context.Background()
	jobs, err := p.f.c.JobsOverview(ctx)
	if err != nil {
		b.Fatal(err)
	}
	now := p.f.fake.clock.Now()
	changed := 0
	for _, j := range jobs {
		if s, ok := p.known[j.ID]; ok && s != j.State {
			changed++
		}
		if p.health && healthSlot(j.ID, now, DefaultControllerPoll) {
			if _, err := p.f.c.Checkpoints(ctx, j.ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	if changed != 0 {
		b.Fatalf("%d jobs changed", changed)
	}
	p.last = jobs
}

// timed is the timed part of a poll.
func (p *benchPoll) timed(b *testing.B) {
	ctx := context.Background()
	switch p.impl {
	case "changes":
		// The watch alone, as the informer's read and compare.
		ids, err := p.f.shared.Changes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(ids) != 0 {
			b.Fatalf("%d jobs changed", len(ids))
		}
	case "watched":
		ids, err := p.f.shared.Changes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			p.call(b, p.index[id])
		}
		now := p.f.fake.clock.Now()
		for {
			i, ok := p.queue.pop(now)
			if !ok {
				break
			}
			p.call(b, i)
		}
	case "informer":
		p.informerPoll(b)
	default:
		p.f.poll(b)
	}
}

// poll is one poll: the timed part, then, untimed, the requests counted,
// impl=changes's informer, the clock moved on by the poll interval and
// the overview of the fake's new state frozen.
func (p *benchPoll) poll(b *testing.B) {
	cpu0 := processCPU(b)
	p.timed(b)
	cpu := processCPU(b) - cpu0
	p.cpu += cpu
	p.mostCPU = max(p.mostCPU, cpu)
	b.StopTimer()
	fake := p.f.fake
	count := fake.requests(b)
	p.sent += count - p.base
	p.most = max(p.most, count-p.base)
	p.base = count
	if p.impl == "changes" || p.impl == "watched" {
		// The informer's poll of the same overview, right after: the
		// two share the machine's load.
		cpu0 := processCPU(b)
		p.informerPoll(b)
		p.informerCPU += processCPU(b) - cpu0
		p.base = fake.requests(b)
	}
	fake.advance(b, DefaultControllerPoll)
	fake.freeze(b)
	b.StartTimer()
}

func benchFleetPoll(b *testing.B, n int, impl string, health bool) {
	f := benchFleet(b, n)
	f.shared.watched, f.shared.changed = false, nil // Changes starts the watch
	shared := f.shared
	if impl == "unshared" {
		shared = nil
	}
	p := &benchPoll{f: f, impl: impl, health: health, index: make(map[flinkapi.JobID]int, n),
		known: make(map[flinkapi.JobID]flinkapi.JobState, n)}
	now := f.fake.clock.Now()
	for i, c := range f.ctrls {
		c.Shared = shared
		f.specs[i].Health = policy.HealthPolicy{}
		if health {
			f.specs[i].Health.Action = policy.HealthReport
		}
		p.index[f.sts[i].JobID] = i
		p.known[f.sts[i].JobID] = f.sts[i].JobState
		p.queue.push(i, now) // a watch's first poll calls every job
	}
	f.fake.freeze(b)
	// Warm: the first polls after a change of impl or policy, and, for
	// a watch, until each job's resync comes at its own interval (the
	// first, after the call of every job, comes after up to one and a
	// half Resync).
	warm := 2
	if impl == "watched" && !health {
		warm += int(3 * DefaultResync / 2 / DefaultControllerPoll)
	}
	for range warm {
		p.poll(b)
	}
	p.sent, p.most, p.cpu, p.mostCPU, p.informerCPU = 0, 0, 0, 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.poll(b)
	}
	b.StopTimer()
	f.fake.thaw(b)
	b.ReportMetric(float64(p.sent)/float64(b.N*n), "requests/job/poll")
	b.ReportMetric(float64(p.most), "max-requests/poll")
	b.ReportMetric(float64(p.cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(p.mostCPU), "max-cpu-ns/poll")
	if impl == "changes" || impl == "watched" {
		b.ReportMetric(float64(p.cpu)/float64(p.informerCPU), "cpu/informer")
	}
	b.ReportMetric(heldPerJob(n, func() any { return f.held(impl, p.known, p.last) }), "heap-B/job")
	for i := range f.sts {
		if f.sts[i].State != "Running" {
			b.Fatalf("job %d: %s %s", i, f.sts[i].State, f.sts[i].Reason)
		}
	}
}

// dueQueue is a delaying queue of Controllers to call: each job's next
// call, the earliest first. A job queued again is called at its latest
// time only.
type dueQueue struct {
	at   map[int]time.Time // each job's next call
	heap dueHeap
}

type dueEntry struct {
	at time.Time
	i  int
}

type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// push queues job i's next call at at.
func (q *dueQueue) push(i int, at time.Time) {
	if q.at == nil {
		q.at = map[int]time.Time{}
	}
	q.at[i] = at
	heap.Push(&q.heap, dueEntry{at: at, i: i})
}

// pop returns a job whose call is due at now, if any.
func (q *dueQueue) pop(now time.Time) (int, bool) {
	for len(q.heap) > 0 && !q.heap[0].at.After(now) {
		e := heap.Pop(&q.heap).(dueEntry)
		if at, ok := q.at[e.i]; ok && at.Equal(e.at) {
			delete(q.at, e.i)
			return e.i, true
		}
	}
	return 0, false
}

// processCPU is the CPU time the process used so far, user and system,
// on every thread: the poll's, its HTTP client's and the garbage
// collector's (the fake JobManager runs in a process of its own).
func processCPU(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// fleetFakeEnv, set in a test process's environment, makes it serve
// BenchmarkFleetPoll's fake JobManager (TestMain): the number of task
// slots it has.
const fleetFakeEnv = "FLINKKIT_FLEET_FAKE_SLOTS"

// fleetFake is BenchmarkFleetPoll's fake JobManager (flinktest.Server
// behind an overviewFront) in a process of its own, the test binary run
// again with fleetFakeEnv set, so that the benchmark's CPU time is none
// of the fake's. Its clock moves only when advance moves it, with the
// benchmark's copy of it (clock); its control requests (/_fleet/...)
// are sent outside the timed polls.
type fleetFake struct {
	URL   string
	clock *flinktest.Clock // the fake's time, as the Controllers read it
	dir   string           // the jobs' jar
	cmd   *exec.Cmd
	stdin io.Closer // the process ends when it is closed
}

// startFleetFake starts a fake JobManager of slots task slots.
func startFleetFake(tb testing.TB, slots int) *fleetFake {
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fleetbench")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fleetFakeEnv+"="+strconv.Itoa(slots))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	f := &fleetFake{dir: dir, cmd: cmd, stdin: stdin}
	var now int64
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, serr := fmt.Sscan(line, &f.URL, &now); err != nil || serr != nil {
		f.close()
		tb.Fatalf("the fake JobManager's process: %q, %v, %v", line, err, serr)
	}
	f.clock = flinktest.NewClock(time.Unix(0, now).UTC())
	return f
}

// close ends the fake's process and removes the jar.
func (f *fleetFake) close() {
	_ = f.stdin.Close()
	_ = f.cmd.Wait()
	_ = os.RemoveAll(f.dir)
}

// control sends a control request and returns its answer.
func (f *fleetFake) control(tb testing.TB, method, path string) string {
	req, err := http.NewRequest(method, f.URL+"/_fleet/"+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s /_fleet/%s: %d %s %v", method, path, resp.StatusCode, body, err)
	}
	return string(body)
}

// advance moves the fake's clock, and the benchmark's, on by d.
func (f *fleetFake) advance(tb testing.TB, d time.Duration) {
	f.control(tb, http.MethodPost, "advance?d="+strconv.FormatInt(int64(d), 10))
	f.clock.Advance(d)
}

// freeze renders the fake's overview now and answers with it from then
// on; thaw passes the overview on to the fake again.
func (f *fleetFake) freeze(tb testing.TB) { f.control(tb, http.MethodPost, "freeze") }
func (f *fleetFake) thaw(tb testing.TB)   { f.control(tb, http.MethodPost, "thaw") }

// requests is how many requests the fake's callers sent so far: the
// overviews the front answered and every other request (not freeze's
// reads of the overview).
func (f *fleetFake) requests(tb testing.TB) int {
	n, err := strconv.Atoi(f.control(tb, http.MethodGet, "requests"))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// serveFleetFake serves a fleetFake of the given number of task slots:
// it writes its URL and its clock's time (in Unix nanoseconds) on one
// line and serves until its standard input ends. It returns the
// process's exit code.
func serveFleetFake(slots string) int {
	n, err := strconv.Atoi(slots)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1), flinktest.WithSlots(n))
	defer srv.Close()
	front := newOverviewFront(srv)
	defer front.Close()
	fmt.Printf("%s %d\n", front.URL, srv.Clock().Now().UnixNano())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// overviewFront stands between a benchmark's clients and the fake
// JobManager: it answers GET /jobs/overview with the body it froze (as a
// JobManager answers from its cache, and without the fake rendering
// 5,000 jobs inside the timed poll), passes every other request on to
// the fake and answers fleetFake's control requests.
type overviewFront struct {
	*httptest.Server
	fake   *flinktest.Server
	body   atomic.Pointer[[]byte]
	served atomic.Int64 // overviews answered from the frozen body
	others int          // the other requests passed on, those the fake recorded aside
}

func newOverviewFront(fake *flinktest.Server) *overviewFront {
	f := &overviewFront{fake: fake}
	target, err := url.Parse(fake.URL)
	if err != nil {
		panic(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_fleet/") {
			f.control(w, r)
			return
		}
		if body := f.body.Load(); body != nil && r.Method == http.MethodGet && r.URL.Path == "/jobs/overview" {
			f.served.Add(1)
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.Header().Set("Content-Length", strconv.Itoa(len(*body)))
			_, _ = w.Write(*body)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return f
}

// control answers fleetFake's control requests.
func (f *overviewFront) control(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_fleet/advance":
		d, err := strconv.ParseInt(r.URL.Query().Get("d"), 10, 64)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.fake.Clock().Advance(time.Duration(d))
	case "/_fleet/freeze":
		if err := f.freeze(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	case "/_fleet/thaw":
		f.body.Store(nil)
	case "/_fleet/requests":
		for _, q := range f.fake.Requests() {
			if q.Route != "GET /jobs/overview" {
				f.others++
			}
		}
		f.fake.ClearRequests()
		_, _ = io.WriteString(w, strconv.Itoa(int(f.served.Load())+f.others))
	default:
		http.NotFound(w, r)
	}
}

// freeze reads the fake's overview now and answers with it from then on.
func (f *overviewFront) freeze() error {
	resp, err := http.Get(f.fake.URL + "/jobs/overview")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("overview: %d", resp.StatusCode)
	}
	f.body.Store(&body)
	return nil
}

// BenchmarkOverviewDiff measures what a poll does with an overview of n
// jobs at rest once it is decoded: impl=changes, SharedObservation's
// comparison with the read before (the watch, Changes); impl=informer,
// the hand-written informer's comparison of each job's state with the
// one recorded, by id. Two lists of equal entries alternate, as two reads
// decode them.
func BenchmarkOverviewDiff(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		lists := [2][]flinkapi.JobOverview{}
		for k := range lists {
			for i := range n {
				lists[k] = append(lists[k], flinkapi.JobOverview{ID: flinkapi.JobID(fmt.Sprintf("%032x", i+1)), Name: fmt.Sprintf("job-%d", i),
					State: flinkapi.JobRunning, StartTime: time.Unix(1700000000, 0), Duration: time.Duration(k) * time.Second,
					LastModification: time.Unix(1700000100, 0), Tasks: flinkapi.TaskCounts{Running: 4, Total: 4}})
			}
		}
		b.Run(fmt.Sprintf("n=%d/impl=changes", n), func(b *testing.B) {
			s := &SharedObservation{Clock: flinktest.NewClock(time.Unix(1700000000, 0))}
			s.watched, s.changed = true, map[flinkapi.JobID]struct{}{}
			s.took(lists[1], nil)
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				s.took(lists[k], nil)
				k = 1 - k
			}
			if len(s.changed) != 0 {
				b.Fatalf("%d changed", len(s.changed))
			}
		})
		b.Run(fmt.Sprintf("n=%d/impl=informer", n), func(b *testing.B) {
			known := map[flinkapi.JobID]flinkapi.JobState{}
			for _, j := range lists[0] {
				known[j.ID] = j.State
			}
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				changed := 0
				for _, j := range lists[k] {
					if s, ok := known[j.ID]; ok && s != j.State {
						changed++
					}
				}
				if changed != 0 {
					b.Fatalf("%d changed", changed)
				}
				k = 1 - k
			}
		})
	}
}
