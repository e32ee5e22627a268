package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

// fleet is n jobs on one fake session cluster, each with its Controller,
// sharing one SharedObservation.
type fleet struct {
	srv    *flinktest.Server
	c      *flinkapi.Client
	shared *SharedObservation
	specs  []JobSpec
	sts    []JobStatus
	ctrls  []*Controller
	fake   *fleetFake // BenchmarkFleetPoll's JobManager, in a process of its own
}

func newFleet(t testing.TB, n int, poll time.Duration) *fleet {
	srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithSeed(1), flinktest.WithSlots(n+4))
	f := newFleetOn(t, n, poll, srv.URL, srv.Clock(), t.TempDir())
	f.srv = srv
	return f
}

// newFleetOn is newFleet on the JobManager at url, whose time clock
// reads, with the jobs' jar in dir.
func newFleetOn(t testing.TB, n int, poll time.Duration, url string, clock *flinktest.Clock, dir string) *fleet {
	c, err := flinkapi.NewClient(url, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(dir, "job.jar")
	if err := os.WriteFile(jar, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fleet{c: c, shared: &SharedObservation{Client: c, Clock: clock}}
	jars := jarsOf(t, jar)
	for i := range n {
		f.specs = append(f.specs, JobSpec{
			Job: JobTemplate{JarFile: jar, Args: []string{"--out", fmt.Sprintf("/out/%d", i), "--keys", "2", "--rate", "10", "--checkpoint-interval", "10000"},
				FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
			Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, Backoff: policy.Duration(time.Second)},
		})
		f.ctrls = append(f.ctrls, &Controller{Env: Env{Client: c, Clock: clock, Jars: jars}, Name: fmt.Sprintf("fleet/job-%d", i),
			PollInterval: poll, Shared: f.shared})
	}
	f.sts = make([]JobStatus, n)
	return f
}

// converge calls each job's Controller until its spec converged.
func (f *fleet) converge(t testing.TB) {
	for i := range f.sts {
		for range 400 {
			if f.sts[i].Converged(f.specs[i]) {
				break
			}
			res, err := f.ctrls[i].Reconcile(context.Background(), f.specs[i], &f.sts[i])
			if err != nil {
				t.Fatal(err)
			}
			f.srv.Clock().Advance(min(res.RequeueAfter, time.Second))
		}
		if !f.sts[i].Converged(f.specs[i]) {
			t.Fatalf("job %d did not converge: %s %s", i, f.sts[i].Reason, f.sts[i].Message)
		}
	}
}

// poll calls every Controller once.
func (f *fleet) poll(t testing.TB) {
	for i := range f.sts {
		f.reconcile(t, i)
	}
}

// reconcile calls job i's Controller once.
func (f *fleet) reconcile(t testing.TB, i int) {
	if _, err := f.ctrls[i].Reconcile(context.Background(), f.specs[i], &f.sts[i]); err != nil {
		t.Fatal(err)
	}
}

// TestSharedObservationAtRest: a fleet at rest sends one overview per
// MaxAge and no request per job; a job that fails, is cancelled from the
// Flink UI or fails over is seen through the overview and handled as
// without it (restarted from its newest state, as its restart policy
// says).
func TestSharedObservationAtRest(t *testing.T) {
	const n, poll = 20, 30 * time.Second
	f := newFleet(t, n, poll)
	f.converge(t)
	f.poll(t) // settled at rest
	f.srv.ClearRequests()
	for range 10 {
		f.poll(t)
		f.srv.Clock().Advance(poll)
	}
	perJob, overviews := 0, 0
	for _, q := range f.srv.Requests() {
		if q.Route == "GET /jobs/overview" {
			overviews++
		} else {
			perJob++
		}
	}
	if perJob != 0 || overviews > 10 || overviews < 5 {
		t.Fatalf("10 polls of %d jobs at rest: %d overviews, %d other requests: %v", n, overviews, perJob, routes(f.srv))
	}
	for i := range f.sts {
		if f.sts[i].State != policy.Running || !f.sts[i].Converged(f.specs[i]) {
			t.Fatalf("job %d at rest: %s %s", i, f.sts[i].State, f.sts[i].Reason)
		}
	}

	// Job 3 fails for good, job 7 is cancelled from the Flink UI.
	failed, cancelled := f.sts[3].JobID, f.sts[7].JobID
	if err := f.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CancelJob(context.Background(), cancelled); err != nil {
		t.Fatal(err)
	}
	f.srv.ClearRequests()
	f.srv.Clock().Advance(poll)
	f.poll(t)
	if f.sts[3].Situation == SituationRunning || f.sts[7].Situation == SituationRunning {
		t.Fatalf("after a poll: job 3 %s, job 7 %s", f.sts[3].Situation, f.sts[7].Situation)
	}
	others := 0
	for _, q := range f.srv.Requests() {
		if q.Route != "GET /jobs/overview" && !contains(q.Path, string(failed)) && !contains(q.Path, string(cancelled)) && q.Route != "GET /overview" && q.Route != "GET /jobs" {
			others++
		}
	}
	if others > 4 {
		t.Errorf("the change of two jobs made %d requests about others: %v", others, routes(f.srv))
	}
	// Both are restarted from their newest state: the spec's restart
	// policy (FromLatestState) covers a job cancelled from outside.
	for range 100 {
		f.poll(t)
		f.srv.Clock().Advance(time.Second)
	}
	if f.sts[3].JobID == failed || f.sts[3].State != policy.Running {
		t.Errorf("the failed job: %s %s %s: %s", f.sts[3].JobID, f.sts[3].State, f.sts[3].Reason, f.sts[3].Message)
	}
	if f.sts[7].JobID == cancelled || f.sts[7].State != policy.Running || f.sts[7].Action != ActionRestart {
		t.Errorf("the cancelled job: %s %s %s %s: %s", f.sts[7].JobID, f.sts[7].Action, f.sts[7].State, f.sts[7].Reason, f.sts[7].Message)
	}
	for _, i := range []int{3, 7} {
		if info, _ := f.srv.Job(f.sts[i].JobID); info.RestoredFrom == "" {
			t.Errorf("job %d was restarted without state", i)
		}
	}
}

// TestSharedObservationOneRead: concurrent Controllers wait for the
// read in flight; an error of the read is not kept past MaxAge.
func TestSharedObservationOneRead(t *testing.T) {
	srv := flinktest.NewServer(flinktest.WithVersion("2.3.0"))
	t.Cleanup(srv.Close)
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		t.Fatal(err)
	}
	s := &SharedObservation{Client: c, Clock: srv.Clock(), MaxAge: 10 * time.Second}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, ok, err := s.job(context.Background(), "0123456789abcdef0123456789abcdef"); err != nil || ok {
				t.Errorf("Job = %v, %v", ok, err)
			}
		})
	}
	wg.Wait()
	if s.Reads() != 1 {
		t.Errorf("50 concurrent callers: %d reads", s.Reads())
	}
	if err := srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 1}); err != nil {
		t.Fatal(err)
	}
	srv.Clock().Advance(10 * time.Second)
	if _, _, err := s.job(context.Background(), "0123456789abcdef0123456789abcdef"); err == nil {
		t.Error("the 503 of the read is not returned")
	}
	srv.Clock().Advance(10 * time.Second)
	if _, _, err := s.job(context.Background(), "0123456789abcdef0123456789abcdef"); err != nil || s.Reads() != 3 {
		t.Errorf("after MaxAge: %v, %d reads", err, s.Reads())
	}
}

// TestTemplateSameAsFingerprint: comparing templates field by field
// agrees with comparing their fingerprints.
func TestTemplateSameAsFingerprint(t *testing.T) {
	base := JobTemplate{JarFile: "/a.jar", JarID: "x.jar", EntryClass: "C", Args: []string{"--a", "1"}, Parallelism: 2,
		FlinkConfiguration: map[string]string{"k": "v"}, JarDigest: "d1"}
	variants := []func(*JobTemplate){
		func(*JobTemplate) {},
		func(t *JobTemplate) { t.JarFile = "/b.jar" },
		func(t *JobTemplate) { t.JarID = "y.jar" },
		func(t *JobTemplate) { t.EntryClass = "D" },
		func(t *JobTemplate) { t.Args = []string{"--a", "2"} },
		func(t *JobTemplate) { t.Args = nil },
		func(t *JobTemplate) { t.Args = []string{} },
		func(t *JobTemplate) { t.Parallelism = 3 },
		func(t *JobTemplate) { t.FlinkConfiguration = nil },
		func(t *JobTemplate) { t.FlinkConfiguration = map[string]string{} },
		func(t *JobTemplate) { t.FlinkConfiguration = map[string]string{"k": "w"} },
		func(t *JobTemplate) { t.JarDigest = "d2" },
	}
	for i, f := range variants {
		for j, g := range variants {
			a, b := base, base
			a.Args, b.Args = slices.Clone(base.Args), slices.Clone(base.Args)
			a.FlinkConfiguration, b.FlinkConfiguration = maps.Clone(base.FlinkConfiguration), maps.Clone(base.FlinkConfiguration)
			f(&a)
			g(&b)
			if got, want := a.sameAs(b), a.Fingerprint() == b.Fingerprint(); got != want {
				t.Errorf("variants %d and %d: sameAs %v, fingerprints equal %v", i, j, got, want)
			}
		}
	}
}

// TestSharedObservationHealth: with health judged, a job at rest costs
// one request every other poll (its checkpoint statistics), half of the
// fleet at each, its restarts carried over; a failover is seen through
// the overview and read in full, and counted.
func TestSharedObservationHealth(t *testing.T) {
	const n, poll = 10, 30 * time.Second
	f := newFleet(t, n, poll)
	for i := range f.specs {
		f.specs[i].Health = policy.HealthPolicy{Action: policy.HealthReport}
		f.specs[i].Job.Args = append(f.specs[i].Job.Args, "--restart-attempts", "5")
	}
	f.converge(t)
	f.poll(t)
	f.srv.Clock().Advance(poll)
	f.poll(t)
	f.srv.ClearRequests()
	samples := make([]int, n)
	for i := range f.sts {
		samples[i] = len(f.sts[i].Health.Samples)
	}
	const polls = 10
	most := 0
	for range polls {
		f.srv.Clock().Advance(poll)
		before := len(f.srv.Requests())
		f.poll(t)
		sent := len(f.srv.Requests()) - before
		most = max(most, sent)
		// The overview, and the jobs whose health slot this is: about
		// half of the fleet, never all of it.
		due := 0
		for i := range f.sts {
			if healthSlot(f.sts[i].JobID, f.srv.Clock().Now(), poll) {
				due++
			}
		}
		if sent != 1+due {
			t.Errorf("a poll sent %d requests, want the overview and the checkpoints of the %d jobs in their health slot", sent, due)
		}
	}
	perJob := 0
	for _, q := range f.srv.Requests() {
		if q.Route != "GET /jobs/overview" {
			perJob++
			if q.Route != "GET /jobs/:jobid/checkpoints" {
				t.Errorf("at rest with health: %s", q.Route)
			}
		}
	}
	if perJob != n*polls/2 || most >= n {
		t.Errorf("%d polls of %d jobs with health: %d requests of their own, want %d; %d in one poll (the overview and all the jobs')", polls, n, perJob, n*polls/2, most)
	}
	for i := range f.sts {
		if got := len(f.sts[i].Health.Samples) - samples[i]; got < polls/2 {
			t.Errorf("job %d: %d health samples in %d polls", i, got, polls)
		}
	}
	// A failover of job 2: its restarts are read again and counted.
	before := f.sts[2].Health.Samples[len(f.sts[2].Health.Samples)-1].Restarts
	if err := f.srv.FailJob(f.sts[2].JobID, "java.lang.RuntimeException: flaky"); err != nil {
		t.Fatal(err)
	}
	f.srv.ClearRequests()
	for range 3 {
		f.srv.Clock().Advance(poll)
		f.poll(t)
	}
	after := f.sts[2].Health.Samples[len(f.sts[2].Health.Samples)-1].Restarts
	if after != before+1 {
		t.Errorf("restarts after a failover: %d, before %d", after, before)
	}
}

// TestSharedObservationJarRebuilt: with a SharedObservation, the jar
// every job of a fleet runs is read once per overview read, not once per
// job, and a new build of it under the same path is seen at the first
// call after the next overview read (within MaxAge): every job is
// upgraded to it.
func TestSharedObservationJarRebuilt(t *testing.T) {
	const n, poll = 4, 30 * time.Second
	f := newFleet(t, n, poll)
	f.converge(t)
	f.poll(t)
	before := map[flinkapi.JobID]bool{}
	for i := range f.sts {
		before[f.sts[i].JobID] = true
	}
	jarFile := f.specs[0].Job.JarFile
	digest := f.sts[0].Deployed.JarDigest
	rebuilt := append(flinktest.MinimalJar(flinktest.CounterJobClass), []byte("rebuilt")...)
	if err := os.WriteFile(jarFile, rebuilt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(jarFile, time.Now(), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Within the overview's MaxAge the jar is not read again.
	if d, err := f.shared.jarDigest(context.Background(), f.ctrls[0].Jars, jarFile); err != nil || d != digest {
		t.Fatalf("digest before the next overview read: %.12s, %v; want the cached %.12s", d, err, digest)
	}
	f.srv.Clock().Advance(DefaultSharedMaxAge)
	for range 200 {
		done := true
		for i := range f.sts {
			if before[f.sts[i].JobID] || !f.sts[i].Converged(f.specs[i]) {
				done = false
			}
		}
		if done {
			break
		}
		f.poll(t)
		f.srv.Clock().Advance(time.Second)
	}
	for i := range f.sts {
		st := &f.sts[i]
		if before[st.JobID] || st.Deployed.JarDigest == digest || st.Deployed.JarDigest == "" {
			t.Errorf("job %d: %s runs digest %.12s (was %.12s): want a new job of the rebuilt jar", i, st.JobID, st.Deployed.JarDigest, digest)
		}
	}
}

// TestSharedObservationDetailsReused: a job at rest is observed with the
// same details while its overview entry is unchanged but for its
// duration, and with new ones once the entry changes.
func TestSharedObservationDetailsReused(t *testing.T) {
	s := &SharedObservation{}
	ov := flinkapi.JobOverview{ID: "a1", Name: "a", State: flinkapi.JobRunning, StartTime: time.Unix(100, 0),
		LastModification: time.Unix(110, 0), Duration: time.Second, Tasks: flinkapi.TaskCounts{Running: 2, Total: 2}}
	d1 := s.details(ov)
	ov.Duration = time.Minute
	if d2 := s.details(ov); d2 != d1 {
		t.Error("a new duration built new details")
	}
	ov.LastModification = time.Unix(120, 0)
	d3 := s.details(ov)
	if d3 == d1 || d3.Timestamps[flinkapi.JobRunning] != ov.LastModification || d3.Vertices[0].Parallelism != 2 {
		t.Errorf("after a change: %+v; want new details", d3)
	}
}

// sortedIDs returns ids sorted.
func sortedIDs(ids []flinkapi.JobID) []flinkapi.JobID {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// TestSharedObservationChanges: Changes names exactly the jobs whose
// overview entry changed between two reads: none at rest, a job failed
// and one cancelled from the Flink UI, one started outside; every job
// once when the JobManager stops answering, none while it stays down, and
// every job again when it answers.
func TestSharedObservationChanges(t *testing.T) {
	const n = 6
	f := newFleet(t, n, time.Minute)
	f.converge(t)
	f.poll(t)
	ctx := context.Background()
	next := func(what string) []flinkapi.JobID {
		t.Helper()
		f.srv.Clock().Advance(DefaultSharedMaxAge)
		ids, err := f.shared.Changes(ctx)
		if err != nil && !strings.Contains(what, "down") {
			t.Fatalf("%s: %v", what, err)
		}
		return sortedIDs(ids)
	}
	if ids, err := f.shared.Changes(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("first call: %v, %v; want none", ids, err)
	}
	for i := range 3 {
		if ids := next("at rest"); len(ids) != 0 {
			t.Fatalf("read %d at rest: changes %v", i, ids)
		}
	}

	failed, cancelled := f.sts[1].JobID, f.sts[4].JobID
	if err := f.srv.FailJob(failed, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CancelJob(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	if got, want := next("failed and cancelled"), sortedIDs([]flinkapi.JobID{failed, cancelled}); !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	jar, err := f.c.UploadJar(ctx, f.specs[0].Job.JarFile)
	if err != nil {
		t.Fatal(err)
	}
	outside, err := f.c.RunJar(ctx, jar, f.specs[0].Job.run())
	if err != nil {
		t.Fatal(err)
	}
	// The failed job restarts under Flink's own strategy or stays
	// failed; either way only those three may change now.
	got := next("started outside")
	if !slices.Contains(got, outside) {
		t.Fatalf("changes %v: the job started outside (%s) is not among them", got, outside)
	}
	for _, id := range got {
		if id != outside && id != failed && id != cancelled {
			t.Errorf("changes %v: %s did not change", got, id)
		}
	}
	next("settle")
	if ids := next("settled"); len(ids) != 0 {
		t.Fatalf("settled: changes %v", ids)
	}

	// Down: every job once, then nothing while down; back: every job.
	all := map[flinkapi.JobID]bool{}
	jobs, err := f.c.JobsOverview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		all[j.ID] = true
	}
	if err := f.srv.Inject(flinktest.Fault{Kind: flinktest.FaultStatus, Route: "GET /jobs/overview", Status: 503, Times: 2}); err != nil {
		t.Fatal(err)
	}
	if got := next("down"); len(got) != len(all) {
		t.Errorf("first read down: %d changes, want every job (%d)", len(got), len(all))
	}
	if got := next("still down"); len(got) != 0 {
		t.Errorf("second read down: changes %v, want none", got)
	}
	if got := next("back"); len(got) != len(all) {
		t.Errorf("back: %d changes, want every job (%d)", len(got), len(all))
	}
	if got := next("back, at rest"); len(got) != 0 {
		t.Errorf("back at rest: changes %v", got)
	}
}

// TestSharedObservationRun: Run reads the overview every two MaxAge on
// its clock and hands the changes to its callback until its context
// ends.
func TestSharedObservationRun(t *testing.T) {
	f := newFleet(t, 3, time.Minute)
	f.converge(t)
	f.poll(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := f.shared.Changes(ctx); err != nil { // the watch starts
		t.Fatal(err)
	}
	victim := f.sts[2].JobID
	if err := f.c.CancelJob(ctx, victim); err != nil {
		t.Fatal(err)
	}
	var got []flinkapi.JobID
	reads, start := f.shared.Reads(), f.srv.Clock().Now()
	// The fake's clock moves on with each Sleep of Run.
	err := f.shared.Run(ctx, func(ids []flinkapi.JobID) {
		got = append(got, ids...)
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want the context's end", err)
	}
	took := f.srv.Clock().Now().Sub(start)
	if !slices.Equal(got, []flinkapi.JobID{victim}) || f.shared.Reads() <= reads || took > 2*DefaultSharedMaxAge {
		t.Errorf("Run handed %v after %d reads and %v; want the cancelled job %s within two MaxAge", got, f.shared.Reads()-reads, took, victim)
	}
}

// TestSharedObservationResync: a job at rest is called back after the
// poll interval until its shared overview is watched, then at its
// resync (the first between half and one and a half Resync later, then
// every Resync); one whose health is judged at its next health check;
// one whose savepoint is due sooner, as before.
func TestSharedObservationResync(t *testing.T) {
	const poll = 30 * time.Second
	f := newFleet(t, 3, poll)
	f.converge(t)
	f.poll(t)
	ctx := context.Background()
	requeue := func(i int) time.Duration {
		t.Helper()
		res, err := f.ctrls[i].Reconcile(ctx, f.specs[i], &f.sts[i])
		if err != nil {
			t.Fatal(err)
		}
		if !f.sts[i].Settled || f.sts[i].State != policy.Running {
			t.Fatalf("job %d not at rest: %s %s", i, f.sts[i].Reason, f.sts[i].Message)
		}
		return res.RequeueAfter
	}
	if got := requeue(0); got != poll {
		t.Errorf("unwatched: RequeueAfter %v, want the poll interval %v", got, poll)
	}
	if _, err := f.shared.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	f.specs[1].Health.Action = policy.HealthReport
	requeue(1)
	got := requeue(1)
	if now := f.srv.Clock().Now(); got <= 0 || got > 2*poll || !healthSlot(f.sts[1].JobID, now.Add(got), poll) {
		t.Errorf("watched, health judged: RequeueAfter %v, want the next health check within two poll intervals %v", got, 2*poll)
	}
	f.specs[2].Savepoints.Interval = policy.Duration(2 * time.Minute)
	for range 3 {
		if got := requeue(2); got > 2*time.Minute || got <= 0 {
			t.Errorf("watched, a savepoint every 2m: RequeueAfter %v, want at most 2m", got)
		}
	}
	got = requeue(0)
	if got < DefaultResync/2 || got >= DefaultResync*3/2 {
		t.Errorf("watched: RequeueAfter %v, want within half and one and a half DefaultResync %v", got, DefaultResync)
	}
	f.srv.Clock().Advance(got)
	if _, err := f.shared.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	if got := requeue(0); got != DefaultResync {
		t.Errorf("watched, at its resync: RequeueAfter %v, want DefaultResync %v", got, DefaultResync)
	}
	f.ctrls[0].Resync = time.Second
	if got := requeue(0); got < poll/2 || got >= poll*3/2 {
		t.Errorf("watched, Resync 1s: RequeueAfter %v, want a resync every poll interval %v at least", got, poll)
	}
}

// TestResyncAndHealthSpread: the resyncs and the health checks of a
// fleet called at once spread over their intervals, each job's at its
// own times, and keep their intervals.
func TestResyncAndHealthSpread(t *testing.T) {
	const n, poll, resync = 1000, 30 * time.Second, 10 * time.Minute
	now := time.Date(2026, time.January, 1, 0, 0, 7, 0, time.UTC)
	perPoll := map[int64]int{}
	healthNow := 0
	for i := range n {
		id := flinkapi.JobID(fmt.Sprintf("%032x", i+1))
		d := resyncIn(id, now, resync)
		if d < resync/2 || d >= resync*3/2 {
			t.Fatalf("job %d: resync in %v, want within [%v, %v)", i, d, resync/2, resync*3/2)
		}
		if again := resyncIn(id, now.Add(d), resync); again != resync {
			t.Fatalf("job %d: the resync after its resync in %v, want %v", i, again, resync)
		}
		perPoll[int64((d-resync/2)/poll)]++
		h := nextHealthSlot(id, now, poll)
		if h <= 0 || h > 2*poll || !healthSlot(id, now.Add(h), poll) || healthSlot(id, now.Add(h+poll), poll) {
			t.Fatalf("job %d: next health check in %v, want within (0, %v], in its slot, every other poll", i, h, 2*poll)
		}
		if healthSlot(id, now, poll) {
			healthNow++
		}
	}
	for k, m := range perPoll {
		if m > 2*n*int(poll)/int(resync) {
			t.Errorf("%d resyncs in poll %d of the resync interval, want about %d", m, k, n*int(poll)/int(resync))
		}
	}
	if healthNow < n*2/5 || healthNow > n*3/5 {
		t.Errorf("%d health checks of %d jobs in one poll, want about half", healthNow, n)
	}
}

// TestSharedObservationCachedDetails: when the watched overview shows a
// job at rest cancelled while Flink's cache of its details still shows it
// running, the Controller calls it back once that cache expired, not
// after Resync, and then sees the cancellation.
func TestSharedObservationCachedDetails(t *testing.T) {
	f := newFleet(t, 2, 30*time.Second)
	f.shared.MaxAge = time.Second
	f.converge(t)
	f.poll(t)
	ctx := context.Background()
	if _, err := f.shared.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	f.poll(t)
	id := f.sts[0].JobID // its details are read, and cached for 3s
	if _, err := f.c.Job(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := f.c.CancelJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	f.srv.Clock().Advance(time.Second)
	if d, err := f.c.Job(ctx, id); err != nil || d.State != flinkapi.JobRunning {
		t.Fatalf("the details 1s after the cancel: %v, %v; want the cached RUNNING for this test", d.State, err)
	}
	ids, err := f.shared.Changes(ctx)
	if err != nil || !slices.Equal(ids, []flinkapi.JobID{id}) {
		t.Fatalf("changes %v, %v; want %s", ids, err, id)
	}
	res, err := f.ctrls[0].Reconcile(ctx, f.specs[0], &f.sts[0])
	if err != nil {
		t.Fatal(err)
	}
	if f.sts[0].JobState != flinkapi.JobRunning || res.RequeueAfter > defaultCacheDuration+time.Second {
		t.Fatalf("with the details cached: %s, RequeueAfter %v; want RUNNING and a call back within Flink's cache time (%v)",
			f.sts[0].JobState, res.RequeueAfter, defaultCacheDuration)
	}
	f.srv.Clock().Advance(res.RequeueAfter)
	if _, err := f.ctrls[0].Reconcile(ctx, f.specs[0], &f.sts[0]); err != nil {
		t.Fatal(err)
	}
	if f.sts[0].JobState != flinkapi.JobCanceled {
		t.Errorf("job %s: %s %s after the cache expired; want it seen CANCELED", id, f.sts[0].JobState, f.sts[0].Reason)
	}
}

// TestSharedObservationWatchStops: a watch that stops being called is
// not relied on: three MaxAge after the last Changes, a job at rest is
// called back after the poll interval again.
func TestSharedObservationWatchStops(t *testing.T) {
	const poll = 30 * time.Second
	f := newFleet(t, 1, poll)
	f.converge(t)
	f.poll(t)
	ctx := context.Background()
	if _, err := f.shared.Changes(ctx); err != nil {
		t.Fatal(err)
	}
	call := func() time.Duration {
		t.Helper()
		res, err := f.ctrls[0].Reconcile(ctx, f.specs[0], &f.sts[0])
		if err != nil {
			t.Fatal(err)
		}
		return res.RequeueAfter
	}
	if got := call(); got < DefaultResync/2 {
		t.Fatalf("watched: RequeueAfter %v, want its resync, %v at least", got, DefaultResync/2)
	}
	f.srv.Clock().Advance(3*DefaultSharedMaxAge + time.Second)
	if got := call(); got != poll {
		t.Errorf("the watch stopped 46s ago: RequeueAfter %v, want the poll interval %v", got, poll)
	}
}

// TestControllerKeepsNoCallerMaps: the status a call writes never shares
// the caller's arguments or configuration: changing the spec's in place
// afterwards leaves the status as it was.
func TestControllerKeepsNoCallerMaps(t *testing.T) {
	f := newFleet(t, 1, 30*time.Second)
	spec := &f.specs[0]
	spec.Job.FlinkConfiguration = map[string]string{"pipeline.name": "a"}
	f.converge(t)
	spec.Job.FlinkConfiguration = map[string]string{"pipeline.name": "b"}
	spec.Job.Args = append(slices.Clone(spec.Job.Args), "--extra")
	res, err := f.ctrls[0].Reconcile(context.Background(), *spec, &f.sts[0])
	if err != nil || res.RequeueAfter <= 0 {
		t.Fatal(res, err)
	}
	st := &f.sts[0]
	if st.Target.IsZero() {
		t.Fatalf("no upgrade started: %s %s", st.Reason, st.Message)
	}
	spec.Job.FlinkConfiguration["pipeline.name"] = "changed in place"
	spec.Job.Args[0] = "changed in place"
	if st.Target.FlinkConfiguration["pipeline.name"] != "b" || st.Target.Args[0] == "changed in place" {
		t.Errorf("the status changed with the caller's spec: %v %v", st.Target.FlinkConfiguration, st.Target.Args)
	}
}

// sleepCounter is a Clock that ends its context after a number of
// sleeps, and calls each at the middle and a second before the end of
// every sleep.
type sleepCounter struct {
	Clock
	sleeps int
	cancel context.CancelFunc
	each   func()
}

func (c *sleepCounter) Sleep(ctx context.Context, d time.Duration) error {
	if c.sleeps--; c.sleeps < 0 {
		c.cancel()
	}
	for _, step := range []time.Duration{d / 2, d - d/2 - time.Second, time.Second} {
		if err := c.Clock.Sleep(ctx, step); err != nil {
			return err
		}
		if step != time.Second {
			c.each()
		}
	}
	return nil
}

// TestSharedObservationRunReadsOncePerPoll: watched by Run at the
// default MaxAge, the overview is read once per default poll (every two
// MaxAge), and the Controllers called between the reads (every one,
// twice per read) are served the overview Run read and send no read of
// their own.
func TestSharedObservationRunReadsOncePerPoll(t *testing.T) {
	f := newFleet(t, 3, DefaultControllerPoll)
	f.converge(t)
	f.poll(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const polls = 20
	clock := &sleepCounter{Clock: f.shared.Clock, sleeps: polls, cancel: cancel}
	f.shared.Clock = clock
	calls := 0
	clock.each = func() {
		for i := range f.ctrls {
			calls++
			if _, err := f.ctrls[i].Reconcile(context.Background(), f.specs[i], &f.sts[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	reads, start := f.shared.Reads(), f.srv.Clock().Now()
	if err := f.shared.Run(ctx, func([]flinkapi.JobID) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	took, n := f.srv.Clock().Now().Sub(start), f.shared.Reads()-reads
	perPoll := float64(n) / (float64(took) / float64(DefaultControllerPoll))
	if n < polls || perPoll > 1.1 || calls < 2*polls*len(f.ctrls) {
		t.Errorf("%d overview reads in %v and %d calls: %.2f per %v poll, want 1", n, took, calls, perPoll, DefaultControllerPoll)
	}
}

// scriptedOverview answers each read of the overview with the next list;
// it has no other call.
type scriptedOverview struct {
	API
	lists [][]flinkapi.JobOverview
}

func (o *scriptedOverview) JobsOverview(context.Context) ([]flinkapi.JobOverview, error) {
	l := o.lists[0]
	o.lists = o.lists[1:]
	return slices.Clone(l), nil
}

// TestSharedObservationChangesByPosition: Changes names what changed
// whether the overview lists the jobs in the order of the read before
// (compared by position) or in another (through the index), and jobs
// coming and going at the same count.
func TestSharedObservationChangesByPosition(t *testing.T) {
	job := func(id string, state flinkapi.JobState, running int) flinkapi.JobOverview {
		return flinkapi.JobOverview{ID: flinkapi.JobID(id), Name: "n-" + id, State: state, Tasks: flinkapi.TaskCounts{Running: running, Total: 2}}
	}
	a, b, c, d := job("a", flinkapi.JobRunning, 2), job("b", flinkapi.JobRunning, 2), job("c", flinkapi.JobRunning, 2), job("d", flinkapi.JobRunning, 2)
	longer := b
	longer.Duration = time.Hour
	steps := []struct {
		list []flinkapi.JobOverview
		want []flinkapi.JobID
	}{
		{[]flinkapi.JobOverview{a, b, c}, nil},
		{[]flinkapi.JobOverview{a, longer, c}, nil}, // only the duration grew
		{[]flinkapi.JobOverview{a, job("b", flinkapi.JobFailing, 1), c}, []flinkapi.JobID{"b"}},
		{[]flinkapi.JobOverview{c, a, job("b", flinkapi.JobFailing, 1)}, nil}, // reordered
		{[]flinkapi.JobOverview{c, a, b}, []flinkapi.JobID{"b"}},
		{[]flinkapi.JobOverview{c, a, d}, []flinkapi.JobID{"b", "d"}}, // b gone, d new
		{[]flinkapi.JobOverview{c, job("a", flinkapi.JobCanceled, 0), d}, []flinkapi.JobID{"a"}},
	}
	src := &scriptedOverview{}
	for _, s := range steps {
		src.lists = append(src.lists, s.list)
	}
	clock := flinktest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &SharedObservation{Client: src, Clock: clock}
	for i, st := range steps {
		ids, err := s.Changes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := sortedIDs(ids); !slices.Equal(got, st.want) {
			t.Errorf("read %d: changes %v, want %v", i, got, st.want)
		}
		for _, j := range st.list {
			if got, ok, _ := s.job(context.Background(), j.ID); !ok || got != j {
				t.Errorf("read %d: job %s = %v %v, want %v", i, j.ID, got, ok, j)
			}
		}
		clock.Advance(DefaultSharedMaxAge)
	}
}

// TestSameEntryAtComparesEveryField: the comparison of overview entries
// by position tells apart two entries that differ in any field but the
// duration (a field added to flinkapi.JobOverview included), as
// sameEntry does.
func TestSameEntryAtComparesEveryField(t *testing.T) {
	a := flinkapi.JobOverview{ID: "a", Name: "n", State: flinkapi.JobRunning, StartTime: time.Unix(1, 0), LastModification: time.Unix(2, 0), Tasks: flinkapi.TaskCounts{Running: 1, Total: 1}}
	var set func(v reflect.Value)
	set = func(v reflect.Value) {
		switch {
		case v.Type() == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Unix(99, 0)))
		case v.Kind() == reflect.String:
			v.SetString(v.String() + "x")
		case v.CanInt():
			v.SetInt(v.Int() + 1)
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				set(v.Field(i))
			}
		default:
			t.Fatalf("a field of kind %s: teach this test to change it", v.Kind())
		}
	}
	typ := reflect.TypeFor[flinkapi.JobOverview]()
	for i := range typ.NumField() {
		b := a
		set(reflect.ValueOf(&b).Elem().Field(i))
		want := typ.Field(i).Name == "Duration"
		if got := sameEntryAt(&a, &b); got != want || sameEntry(a, b) != want {
			t.Errorf("entries differing in %s: sameEntryAt %v, sameEntry %v; want %v", typ.Field(i).Name, got, sameEntry(a, b), want)
		}
	}
}
