package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// fakeFleet is a fleet on fake JobManagers that share one clock.
type fakeFleet struct {
	t       testing.TB
	clock   *flinktest.Clock
	servers map[string]*flinktest.Server
	clients map[string]*flinkapi.Client
	jars    map[string]flinkapi.JarID
	store   Store
	// jarDir holds app.jar (appJar), which deployments of fileDeployment
	// run; sources reads it.
	jarDir  string
	sources *lifecycle.Jars
}

func newFakeFleet(t testing.TB, clusters ...string) *fakeFleet {
	t.Helper()
	return newFakeFleetTB(t, 200, clusters...)
}

// newFakeFleetTB is a fleet on fake JobManagers of slots task slots
// each.
func newFakeFleetTB(t testing.TB, slots int, clusters ...string) *fakeFleet {
	t.Helper()
	f := &fakeFleet{t: t, clock: flinktest.NewClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
		servers: map[string]*flinktest.Server{}, clients: map[string]*flinkapi.Client{}, jars: map[string]flinkapi.JarID{}}
	for _, name := range clusters {
		srv := flinktest.NewServer(flinktest.WithVersion("1.20.5"), flinktest.WithClock(f.clock), flinktest.WithSlots(slots),
			flinktest.WithSavepointDir(clusterDir(name)+"/savepoints"), flinktest.WithCheckpointDir(clusterDir(name)+"/checkpoints"))
		t.Cleanup(srv.Close)
		c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
		if err != nil {
			t.Fatal(err)
		}
		jar, err := c.UploadJarReader(context.Background(), "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
		if err != nil {
			t.Fatal(err)
		}
		f.servers[name], f.clients[name], f.jars[name] = srv, c, jar
	}
	f.store = newMemStore()
	f.jarDir = t.TempDir()
	f.buildJar("1")
	var err error
	if f.sources, err = lifecycle.JarDir(f.jarDir); err != nil {
		t.Fatal(err)
	}
	return f
}

// runner is a Runner of the fleet, as a process starting afresh has it.
func (f *fakeFleet) runner() *Runner {
	envs := map[string]lifecycle.Env{}
	for name, c := range f.clients {
		envs[name] = lifecycle.Env{Client: c, Clock: f.clock, Jars: f.sources}
	}
	return &Runner{Store: f.store, Clusters: envs, Clock: f.clock,
		Controller: lifecycle.Controller{PollInterval: 30 * time.Second, RetryInterval: 30 * time.Second}}
}

// deployment is the deployment name on cluster, its job counting keys
// with the given rate.
func (f *fakeFleet) deployment(cluster, name string, rate int) Deployment {
	return Deployment{Name: name, Cluster: cluster, Spec: lifecycle.JobSpec{Job: lifecycle.JobTemplate{
		JarID: f.jars[cluster], Args: []string{"--out", "/out/" + name, "--rate", fmt.Sprint(rate)}}}}
}

// drive does passes of r, moving the clock to the next due deployment
// between them, until done reports true for the results of a pass.
func (f *fakeFleet) drive(r *Runner, what string, maxPasses int, done func([]Result) bool) []Result {
	f.t.Helper()
	for range maxPasses {
		res, err := r.Pass(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		if done(res) {
			return res
		}
		f.clock.Advance(nextWait(res, f.clock.Now()))
	}
	f.t.Fatalf("%s: not reached in %d passes; results: %s\nrecords: %s", what, maxPasses, describeResults(r.Results()), f.describeRecords())
	return nil
}

// nextWait is how long until the first of results is due, at least a
// millisecond.
func nextWait(results []Result, now time.Time) time.Duration {
	wait := time.Hour
	for _, r := range results {
		wait = min(wait, r.Next.Sub(now))
	}
	return max(wait, time.Millisecond)
}

// describeRecords describes the fleet's stored records, for a failure.
func (f *fakeFleet) describeRecords() string {
	recs, err := f.store.List(context.Background())
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, rec := range recs {
		st := &rec.Status
		fmt.Fprintf(&b, "\n  %s@%s: removed=%v job=%s %s %s action=%s phase=%s reason=%s msg=%q", rec.Name, rec.Cluster, rec.Removed,
			st.JobID, st.Verdict, st.Situation, st.Action, st.Progress.Phase, st.Reason, st.Message)
		if st.InFlight() {
			p, _ := json.Marshal(st.Progress)
			fmt.Fprintf(&b, "\n    progress %s", p)
		}
	}
	return b.String()
}

func describeResults(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "\n  %s@%s: %s %s removed=%v err=%v", r.Name, r.Cluster, r.Verdict, r.Situation, r.Removed, r.Err)
	}
	return b.String()
}

// allDone reports whether every result is Done without an error.
func allDone(results []Result) bool {
	for _, r := range results {
		if r.Verdict != lifecycle.VerdictDone || r.Err != nil {
			return false
		}
	}
	return len(results) > 0
}

// running returns the jobs of srv that have not reached a globally
// terminal state.
func running(srv *flinktest.Server) []flinkapi.JobID {
	var ids []flinkapi.JobID
	for _, j := range srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

// TestRunnerKeepsAFleet: 40 deployments on two clusters are deployed,
// kept at rest at the cost of the clusters' overview reads whatever
// their number, changed, and removed.
func TestRunnerKeepsAFleet(t *testing.T) {
	f := newFakeFleet(t, "east", "west")
	var desired []Deployment
	for i := range 40 {
		cluster := []string{"east", "west"}[i%2]
		desired = append(desired, f.deployment(cluster, fmt.Sprintf("job-%02d", i), 10))
	}
	r := f.runner()
	cs, err := r.Sync(context.Background(), desired)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Added) != 40 || len(cs.Changed)+len(cs.Removed)+len(cs.Unchanged) != 0 {
		t.Fatalf("first sync: %+v", cs)
	}
	f.drive(r, "deployed", 500, allDone)
	for name, srv := range f.servers {
		if n := len(running(srv)); n != 20 {
			t.Errorf("%s runs %d jobs, want 20", name, n)
		}
	}
	recs, err := f.store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Applied == nil || !sameSpec(*rec.Applied, rec.Spec) || rec.Status.JobID == "" {
			t.Errorf("%s: applied %v, job %q", rec.Name, rec.Applied != nil, rec.Status.JobID)
		}
		if j, ok := f.servers[rec.Cluster].Job(rec.Status.JobID); !ok || j.State != flinkapi.JobRunning {
			t.Errorf("%s: its job %s is not running on %s", rec.Name, rec.Status.JobID, rec.Cluster)
		}
	}

	// At rest: the requests per cluster in an hour.
	for _, srv := range f.servers {
		srv.ClearRequests()
	}
	end := f.clock.Now().Add(time.Hour)
	for f.clock.Now().Before(end) {
		res, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(nextWait(res, f.clock.Now()))
	}
	for name, srv := range f.servers {
		reqs := srv.Requests()
		perJob := map[string]int{}
		for _, q := range reqs {
			perJob[q.Method+" "+q.Path]++
		}
		t.Logf("%s at rest: %d requests in an hour (%v)", name, len(reqs), perJob)
		// 20 deployments, each called at least every resync (10
		// minutes): one overview read per poll of the cluster, no
		// request of its own for a job at rest, and the housekeeping's
		// one read of the jars per interval.
		reads, jarReads := perJob["GET /jobs/overview"], perJob["GET /jars"]
		if len(reqs) != reads+jarReads || reads > int(time.Hour/(30*time.Second))+5 ||
			jarReads == 0 || jarReads > int(time.Hour/DefaultHousekeepingInterval) {
			t.Errorf("%s: %d requests in an hour at rest, %d of them overview reads and %d jar reads; want one overview read per poll, one jar read per housekeeping interval and nothing else",
				name, len(reqs), reads, jarReads)
		}
	}

	// A change of four specs, and four removals.
	changed := map[string]flinkapi.JobID{}
	for i := range 4 {
		desired[i] = f.deployment(desired[i].Cluster, desired[i].Name, 20)
		rec, _, _ := f.store.Load(context.Background(), desired[i].Name)
		changed[desired[i].Name] = rec.Status.JobID
	}
	removed := desired[36:]
	cs, err = r.Sync(context.Background(), desired[:36])
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Changed) != 4 || len(cs.Removed) != 4 || len(cs.Unchanged) != 32 || len(cs.Added) != 0 {
		t.Fatalf("second sync: %+v", cs)
	}
	res := f.drive(r, "changed and removed", 500, func(res []Result) bool { return len(res) == 36 && allDone(res) })
	for _, x := range res {
		old, ok := changed[x.Name]
		if !ok {
			continue
		}
		rec, _, _ := f.store.Load(context.Background(), x.Name)
		if rec.Status.JobID == old || rec.Status.UpgradeFrom.Location == "" {
			t.Errorf("%s: job %s (was %s), upgraded from %q", x.Name, rec.Status.JobID, old, rec.Status.UpgradeFrom.Location)
		}
	}
	for _, d := range removed {
		if _, ok, err := f.store.Load(context.Background(), d.Name); ok || err != nil {
			t.Errorf("%s: record still stored (%v)", d.Name, err)
		}
	}
	for name, srv := range f.servers {
		if n := len(running(srv)); n != 18 {
			t.Errorf("%s runs %d jobs after the removals, want 18", name, n)
		}
	}
}

// TestRunnerSyncRefusesBadInput: nothing is written for a change set
// with a deployment the Runner cannot store.
func TestRunnerSyncRefusesBadInput(t *testing.T) {
	f := newFakeFleet(t, "east", "west")
	r := f.runner()
	if _, err := r.Sync(context.Background(), []Deployment{f.deployment("east", "orders", 1)}); err != nil {
		t.Fatal(err)
	}
	bad := f.deployment("east", "bad", 1)
	bad.Spec.Job.Parallelism = -2
	for _, tc := range []struct {
		name    string
		desired []Deployment
		want    string
	}{
		{"unknown cluster", []Deployment{f.deployment("north", "x", 1)}, `deployment x runs on cluster "north", which is not one of the runner's (east, west)`},
		{"twice", []Deployment{f.deployment("east", "x", 1), f.deployment("east", "x", 2)}, "deployment x is given twice"},
		{"bad name", []Deployment{f.deployment("east", "../x", 1)}, "../x"},
		{"moved", []Deployment{f.deployment("west", "orders", 1)}, "deployment orders moves from cluster east to west"},
		{"invalid spec", []Deployment{bad}, "deployment bad: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := append([]Deployment{f.deployment("east", "new", 1)}, tc.desired...)
			_, err := r.Sync(context.Background(), desired)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			recs, _ := f.store.List(context.Background())
			if len(recs) != 1 || recs[0].Name != "orders" || recs[0].Removed {
				t.Errorf("the store changed: %d records", len(recs))
			}
		})
	}
	if !errors.Is(func() error { _, err := r.Sync(context.Background(), []Deployment{bad}); return err }(), lifecycle.ErrInvalidSpec) {
		t.Error("an invalid spec's error does not match lifecycle.ErrInvalidSpec")
	}
}

// memStore is a Store in memory that keeps each record as its JSON, as
// a store on disk does, without the disk's syncs.
type memStore struct {
	mu   sync.Mutex
	recs map[string][]byte
}

func newMemStore() *memStore { return &memStore{recs: map[string][]byte{}} }

func (s *memStore) Load(_ context.Context, name string) (Record, bool, error) {
	if err := checkName(name); err != nil {
		return Record{}, false, err
	}
	s.mu.Lock()
	b, ok := s.recs[name]
	s.mu.Unlock()
	if !ok {
		return Record{}, false, nil
	}
	var rec Record
	err := json.Unmarshal(b, &rec)
	return rec, err == nil, err
}

func (s *memStore) Save(_ context.Context, rec *Record) error {
	if err := checkName(rec.Name); err != nil {
		return err
	}
	rec.FormatVersion = FormatVersion
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.recs[rec.Name] = b
	s.mu.Unlock()
	return nil
}

func (s *memStore) Delete(_ context.Context, name string) error {
	s.mu.Lock()
	delete(s.recs, name)
	s.mu.Unlock()
	return nil
}

func (s *memStore) List(ctx context.Context) ([]Record, error) {
	s.mu.Lock()
	names := make([]string, 0, len(s.recs))
	for n := range s.recs {
		names = append(names, n)
	}
	s.mu.Unlock()
	sort.Strings(names)
	out := make([]Record, 0, len(names))
	for _, n := range names {
		rec, ok, err := s.Load(ctx, n)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out, nil
}

// blockingList is a Store whose first List takes its listing and then
// waits until release is closed.
type blockingList struct {
	Store
	once    sync.Once
	listing chan struct{}
	release chan struct{}
}

func (s *blockingList) List(ctx context.Context) ([]Record, error) {
	first := false
	s.once.Do(func() { first = true })
	recs, err := s.Store.List(ctx)
	if first {
		close(s.listing)
		<-s.release
	}
	return recs, err
}

// TestRunnerSyncDuringTheFirstListing: a Sync that changes a stored
// deployment while the first pass of a new Runner lists the Store is
// not undone by that listing's older record.
func TestRunnerSyncDuringTheFirstListing(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	old := f.deployment("east", "orders", 10)
	if _, err := f.runner().Sync(ctx, []Deployment{old}); err != nil {
		t.Fatal(err)
	}
	store := &blockingList{Store: f.store, listing: make(chan struct{}), release: make(chan struct{})}
	r := f.runner()
	r.Store = store
	done := make(chan error, 1)
	go func() {
		_, err := r.Pass(ctx)
		done <- err
	}()
	<-store.listing
	changed := f.deployment("east", "orders", 20)
	if cs, err := r.Sync(ctx, []Deployment{changed}); err != nil || len(cs.Changed) != 1 {
		t.Fatalf("sync during the listing: %+v, %v", cs, err)
	}
	close(store.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec, _, err := f.store.Load(ctx, "orders")
	if err != nil || !sameSpec(rec.Spec, changed.Spec) {
		t.Fatalf("stored spec %v (%v), want the one Sync wrote, %v", rec.Spec.Job.Args, err, changed.Spec.Job.Args)
	}
}

// blockingSave is a Store whose first Save waits until release is
// closed, after closing saving.
type blockingSave struct {
	Store
	once    sync.Once
	saving  chan struct{}
	release chan struct{}
}

func (s *blockingSave) Save(ctx context.Context, rec *Record) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.saving)
		<-s.release
	}
	return s.Store.Save(ctx, rec)
}

// TestRunnerSyncAddsDuringTheFirstListing: a deployment that Sync adds
// while the first pass of a new Runner lists the Store (its record not
// saved yet when the listing ends, so the listing does not hold it) is
// kept and called, not forgotten as one the Store no longer holds.
func TestRunnerSyncAddsDuringTheFirstListing(t *testing.T) {
	f := newFakeFleet(t, "east")
	ctx := context.Background()
	saves := &blockingSave{Store: f.store, saving: make(chan struct{}), release: make(chan struct{})}
	store := &blockingList{Store: saves, listing: make(chan struct{}), release: make(chan struct{})}
	r := f.runner()
	r.Store = store
	passed := make(chan error, 1)
	go func() {
		_, err := r.Pass(ctx)
		passed <- err
	}()
	<-store.listing // the listing has read the Store, which holds nothing yet
	synced := make(chan error, 1)
	go func() {
		_, err := r.Sync(ctx, []Deployment{f.deployment("east", "payments", 10)})
		synced <- err
	}()
	<-saves.saving // Sync has taken the deployment on and is saving it
	close(store.release)
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	close(saves.release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	f.drive(r, "payments deployed", 300, allDone)
	if res := r.Results(); len(res) != 1 || res[0].Name != "payments" {
		t.Fatalf("results %s, want payments deployed", describeResults(res))
	}
}
