package lifecycle

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strconv"
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
// per size (a fleet of 5,000 jobs takes a while to start on the fake).
var (
	benchFleetsMu sync.Mutex
	benchFleets   = map[int]*fleet{}
)

// benchFleet returns a fleet of n jobs at rest: started through the REST
// API and adopted (spec.Adopt), then settled.
func benchFleet(b *testing.B, n int) *fleet {
	benchFleetsMu.Lock()
	defer benchFleetsMu.Unlock()
	if f, ok := benchFleets[n]; ok {
		return f
	}
	f := newFleet(b, n, DefaultControllerPoll)
	f.front = newOverviewFront(b, f.srv.URL)
	c, err := flinkapi.NewClient(f.front.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		b.Fatal(err)
	}
	f.c, f.shared.Client = c, c
	for _, ctrl := range f.ctrls {
		ctrl.Env.Client = c
	}
	ctx := context.Background()
	jar, err := c.UploadJar(ctx, f.specs[0].Job.JarFile)
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
	f.srv.Clock().Advance(15 * time.Second) // a checkpoint completed: stable
	f.poll(b)                               // adopted
	for i := range f.specs {
		f.specs[i].Adopt = ""
	}
	f.poll(b) // settled at rest
	for i := range f.sts {
		if !f.sts[i].Converged(f.specs[i]) || !f.sts[i].Settled {
			b.Fatalf("job %d not at rest: %s %s", i, f.sts[i].Reason, f.sts[i].Message)
		}
	}
	benchFleets[n] = f
	return f
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
		return []any{sts, slices.Clone(f.shared.list), maps.Clone(f.shared.index), maps.Clone(f.shared.spare), maps.Clone(f.shared.built), built}
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
// (untimed): impl=shared, every job's Controller called once, sharing a
// SharedObservation; impl=watched, the Controllers of the jobs
// SharedObservation.Changes names (none at rest) and of the twentieth of
// the fleet whose resync is due (every 20 polls); impl=changes, the
// watch alone (Changes, which reads the overview and compares it with
// the one before), followed by the informer's read and compare (untimed)
// whose CPU time it reports beside its own (cpu/informer: the two run
// one after the other, under the same load); impl=unshared, every
// Controller without the SharedObservation; impl=informer, the baseline
// a user would write by hand, one GET /jobs/overview per poll and a
// comparison of each job's state with the one recorded (with health
// judged, and each job's checkpoint statistics every other poll, when
// the Controllers read them). It reports the
// requests per job and poll, and the heap held per job between polls
// (the statuses and the shared overview; the informer's map and last
// list), and the process's CPU time per poll (cpu-ns/op: ns/op is the
// time on the clock, which other processes on the machine stretch). The
// overview is answered from a body rendered before the poll
// (overviewFront), as a JobManager answers from its cache: ns/op is the
// controller's work and the fake's for the other requests.
func BenchmarkFleetPoll(b *testing.B) {
	for _, health := range []bool{false, true} {
		for _, n := range []int{10, 1000, 5000} {
			for _, impl := range []string{"shared", "watched", "changes", "unshared", "informer"} {
				if (impl == "watched" || impl == "changes") && health {
					continue // health is judged at every poll: as shared
				}
				b.Run(fmt.Sprintf("health=%v/n=%d/impl=%s", health, n, impl), func(b *testing.B) {
					benchFleetPoll(b, n, impl, health)
				})
			}
		}
	}
}

// watchedResync is the resync of impl=watched in polls: 10 minutes of
// 30 s polls.
const watchedResync = 20

func benchFleetPoll(b *testing.B, n int, impl string, health bool) {
	f := benchFleet(b, n)
	f.shared.watched, f.shared.changed = false, nil // Changes starts the watch
	shared := f.shared
	if impl == "unshared" {
		shared = nil
	}
	for i, c := range f.ctrls {
		c.Shared = shared
		f.specs[i].Health = policy.HealthPolicy{}
		if health {
			f.specs[i].Health.Action = policy.HealthReport
		}
	}
	var last []flinkapi.JobOverview // the informer's last list
	known := map[flinkapi.JobID]flinkapi.JobState{}
	for _, st := range f.sts {
		known[st.JobID] = st.JobState
	}
	ctx := context.Background()
	index := make(map[flinkapi.JobID]int, n)
	for i, st := range f.sts {
		index[st.JobID] = i
	}
	polls := 0
	var cpu time.Duration // the process's CPU time in the timed part of the polls
	// impl=changes: the informer's read and compare after each poll,
	// untimed, and its CPU time.
	var informerCPU time.Duration
	informerReads := 0
	informerPoll := func() []flinkapi.JobOverview {
		jobs, err := f.c.JobsOverview(ctx)
		if err != nil {
			b.Fatal(err)
		}
		changed := 0
		for _, j := range jobs {
			if s, ok := known[j.ID]; ok && s != j.State {
				changed++
			}
			if health && polls%2 == 0 {
				// What a hand-written check of checkpoint progress
				// reads, on the controller's schedule: each job's
				// statistics every other poll (a minute at 30 s).
				if _, err := f.c.Checkpoints(ctx, j.ID); err != nil {
					b.Fatal(err)
				}
			}
		}
		if changed != 0 {
			b.Fatalf("%d jobs changed", changed)
		}
		return jobs
	}
	poll := func() {
		polls++
		cpu0 := processCPU(b)
		switch impl {
		case "changes":
			// The watch alone, as the informer's read and compare.
			ids, err := f.shared.Changes(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(ids) != 0 {
				b.Fatalf("%d jobs changed", len(ids))
			}
		case "watched":
			// The jobs the overview shows changed, and the twentieth of
			// the fleet whose resync (10 minutes: 20 polls) is due.
			ids, err := f.shared.Changes(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range ids {
				f.reconcile(b, index[id])
			}
			for i := polls % watchedResync; i < n; i += watchedResync {
				f.reconcile(b, i)
			}
		case "informer":
			last = informerPoll()
		default:
			f.poll(b)
		}
		// The fake's catching up with its clock and rendering the
		// overview are Flink's work, not the poll's: untimed.
		cpu += processCPU(b) - cpu0
		b.StopTimer()
		if impl == "changes" {
			// The informer's read and compare of the same overview,
			// right after: the two share the machine's load.
			cpu0 := processCPU(b)
			last = informerPoll()
			informerCPU += processCPU(b) - cpu0
			informerReads++
		}
		f.srv.Clock().Advance(DefaultControllerPoll)
		f.front.freeze(b)
		b.StartTimer()
	}
	f.front.freeze(b)
	poll() // warm: the first polls after a change of impl or policy
	poll()
	f.srv.ClearRequests()
	f.front.served.Store(0)
	cpu, informerCPU, informerReads = 0, 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		poll()
	}
	b.StopTimer()
	// The fake saw freeze's overviews and every other request; the
	// controllers' overviews were answered by the front.
	sent := int(f.front.served.Load()) - informerReads
	for _, q := range f.srv.Requests() {
		if q.Route != "GET /jobs/overview" {
			sent++
		}
	}
	f.front.thaw()
	b.ReportMetric(float64(sent)/float64(b.N*n), "requests/job/poll")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	if impl == "changes" {
		b.ReportMetric(float64(cpu)/float64(informerCPU), "cpu/informer")
	}
	b.ReportMetric(heldPerJob(n, func() any { return f.held(impl, known, last) }), "heap-B/job")
	for i := range f.sts {
		if f.sts[i].State != "Running" {
			b.Fatalf("job %d: %s %s", i, f.sts[i].State, f.sts[i].Reason)
		}
	}
}

// processCPU is the CPU time the process used so far, user and system,
// on every thread: the poll's, the HTTP servers' (the overview front's
// answers, the fake's) and the garbage collector's.
func processCPU(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// overviewFront stands between a benchmark's clients and the fake
// JobManager: it answers GET /jobs/overview with the body it froze (as a
// JobManager answers from its cache, and without the in-process fake
// rendering 5,000 jobs inside the timed poll) and passes every other
// request on to the fake.
type overviewFront struct {
	*httptest.Server
	fake   string
	body   atomic.Pointer[[]byte]
	served atomic.Int64 // overviews answered from the frozen body
}

func newOverviewFront(tb testing.TB, fake string) *overviewFront {
	target, err := url.Parse(fake)
	if err != nil {
		tb.Fatal(err)
	}
	f := &overviewFront{fake: fake}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body := f.body.Load(); body != nil && r.Method == http.MethodGet && r.URL.Path == "/jobs/overview" {
			f.served.Add(1)
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.Header().Set("Content-Length", strconv.Itoa(len(*body)))
			_, _ = w.Write(*body)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	// Kept with its fleet for the rest of the run (benchFleets).
	return f
}

// freeze reads the fake's overview now and answers with it from then on.
func (f *overviewFront) freeze(tb testing.TB) {
	resp, err := http.Get(f.fake + "/jobs/overview")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("overview: %d, %v", resp.StatusCode, err)
	}
	f.body.Store(&body)
}

// thaw passes the overview on to the fake again.
func (f *overviewFront) thaw() { f.body.Store(nil) }

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
