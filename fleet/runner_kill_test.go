package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// errKilled is what a killed process's requests and writes get.
var errKilled = errors.New("the process was killed")

// process is one run of a program built on a Runner, which dies at its
// k-th request to a JobManager or write to the Store: the request is
// sent and its answer lost, or not sent, as the draw says; the write is
// done or not. After its death nothing it does reaches Flink or the
// Store.
type process struct {
	mu     sync.Mutex
	rng    *rand.Rand
	left   int
	dead   bool
	cancel context.CancelFunc
}

// step counts one request or write; it reports whether it goes through
// and whether its answer reaches the process.
func (p *process) step() (send, answer bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return false, false
	}
	p.left--
	if p.left > 0 {
		return true, true
	}
	p.dead = true
	p.cancel()
	return p.rng.IntN(2) == 0, false
}

func (p *process) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

type killingTransport struct {
	p    *process
	next http.RoundTripper
}

func (t killingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	send, answer := t.p.step()
	if !send {
		return nil, errKilled
	}
	// A request sent is carried out whatever becomes of its sender.
	res, err := t.next.RoundTrip(req.Clone(context.WithoutCancel(req.Context())))
	if !answer {
		if err == nil {
			res.Body.Close()
		}
		return nil, errKilled
	}
	return res, err
}

type killingStore struct {
	p    *process
	next Store
}

func (s killingStore) Load(ctx context.Context, name string) (Record, bool, error) {
	if s.p.isDead() {
		return Record{}, false, errKilled
	}
	return s.next.Load(ctx, name)
}

func (s killingStore) List(ctx context.Context) ([]Record, error) {
	if s.p.isDead() {
		return nil, errKilled
	}
	return s.next.List(ctx)
}

func (s killingStore) Save(ctx context.Context, rec *Record) error {
	send, _ := s.p.step()
	if !send {
		return errKilled
	}
	if err := s.next.Save(context.WithoutCancel(ctx), rec); err != nil {
		return err
	}
	if s.p.isDead() {
		return errKilled
	}
	return nil
}

func (s killingStore) Delete(ctx context.Context, name string) error {
	send, _ := s.p.step()
	if !send {
		return errKilled
	}
	if err := s.next.Delete(context.WithoutCancel(ctx), name); err != nil {
		return err
	}
	if s.p.isDead() {
		return errKilled
	}
	return nil
}

// TestRunnerSurvivesKills kills the program running a fleet at random
// points (a request sent or not, its answer lost, a record written or
// not), hundreds of times, while its deployments are added, changed and
// removed, and checks after every pass that no deployment has two live
// jobs and that a job started in place of another carries its state;
// in the end an uninterrupted run carries the last change set out.
// Flink misbehaves beside the kills: some requests get a 503 or lose
// their answer after taking effect, some savepoints fail, and
// JobManagers restart with high availability between and during calls.
// FLINKKIT_FLEET_KILLS sets the number of kills (default 200),
// FLINKKIT_FLEET_SEED the seed, FLINKKIT_FLEET_FAULTS=0 turns Flink's
// faults off.
func TestRunnerSurvivesKills(t *testing.T) {
	kills := envInt(t, "FLINKKIT_FLEET_KILLS", 200)
	seed := uint64(envInt(t, "FLINKKIT_FLEET_SEED", 1))
	faults := envInt(t, "FLINKKIT_FLEET_FAULTS", 1) != 0
	rng := rand.New(rand.NewPCG(seed, 7))
	f := newFakeFleet(t, "east", "west")
	clusters := []string{"east", "west"}
	restarts := 0
	if faults {
		for _, name := range clusters {
			f.injectFlaky(name)
		}
	}
	var desired []Deployment
	next := 0
	add := func() {
		cluster := []string{"east", "west"}[next%2]
		d := f.deployment(cluster, fmt.Sprintf("job-%02d", next), 10)
		if next%3 != 0 {
			// Most run app.jar, one upload of each of its builds per
			// cluster shared by them.
			d = f.fileDeployment(cluster, d.Name, 10)
		}
		d.Application = fmt.Sprintf("app-%d", next%3)
		desired = append(desired, d)
		next++
	}
	// adopt starts a job by hand and adds a deployment that adopts it by
	// its name.
	adopted := map[string]flinkapi.JobID{}
	claimedByHand := map[flinkapi.JobID]bool{} // jobs started by hand that a deployment's Controller adopted
	adopt := func() {
		cluster := []string{"east", "west"}[next%2]
		d := f.deployment(cluster, fmt.Sprintf("job-%02d", next), 10)
		d.Spec.Job.Args = append(d.Spec.Job.Args, "--name", d.Name)
		d.AdoptName = d.Name
		// Started by hand through a flaky JobManager: sent again until the
		// job is there.
		id := flinkapi.NewJobID()
		for try := 0; ; try++ {
			_, err := f.clients[cluster].RunJar(context.Background(), f.jars[cluster], flinkapi.RunJarRequest{JobID: id, ProgramArgs: d.Spec.Job.Args})
			if _, ok := f.servers[cluster].Job(id); ok {
				break
			}
			if try == 20 {
				t.Fatalf("starting %s by hand: %v", d.Name, err)
			}
			f.clock.Advance(time.Second)
		}
		adopted[d.Name] = id
		desired = append(desired, d)
		next++
	}
	for range 6 {
		add()
	}
	removed := map[string]bool{}
	synced := map[string]bool{} // deployments a Sync stored
	killed, builds := 0, 1
	grace, interval := 2*time.Minute, time.Minute
	deleted := map[flinkapi.JarID]bool{}
	noteDeleted := func(r *Runner) {
		for _, c := range r.ClusterResults() {
			for _, id := range c.Deleted {
				deleted[id] = true
			}
		}
	}
	for epoch := 0; killed < kills; epoch++ {
		switch x := rng.IntN(20); {
		case x < 6:
			// A deployment that adopts is changed only once a Sync has
			// stored it: the spec it is first stored with is the one its
			// adopted job is taken to run (Record.AdoptSpec), and no
			// runner can know of an earlier one.
			if i := rng.IntN(len(desired)); desired[i].AdoptName == "" || synced[desired[i].Name] {
				desired[i] = withRate(desired[i], 10+rng.IntN(50))
			}
		case x == 6 && len(desired) > 4:
			i := rng.IntN(len(desired))
			removed[desired[i].Name] = true
			desired = slices.Delete(desired, i, i+1)
		case x == 7 && len(desired) < 8:
			add()
		case x == 8 && len(desired) < 8:
			adopt()
		case x == 9:
			builds++
			f.buildJar(strconv.Itoa(builds))
		case x == 10 && faults:
			// A JobManager restarts between two runs of the program.
			restarts++
			f.servers[clusters[rng.IntN(2)]].RestartJobManager(flinktest.RestartOptions{HA: true, Downtime: time.Duration(rng.IntN(5000)) * time.Millisecond})
		case x == 11 && faults:
			// A JobManager restarts at one of the next requests, its
			// answer lost, the request carried out or not.
			restarts++
			if err := f.servers[clusters[rng.IntN(2)]].Inject(flinktest.Fault{Kind: flinktest.FaultRestart, Times: 1, Probability: 0.1,
				After: rng.IntN(2) == 0, Restart: flinktest.RestartOptions{HA: true, Downtime: time.Duration(rng.IntN(5000)) * time.Millisecond}}); err != nil {
				t.Fatal(err)
			}
		}
		p := &process{rng: rng, left: 1 + rng.IntN(60)}
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel = cancel
		r := f.runnerOf(p)
		r.Housekeeping = Housekeeping{Interval: interval, JarGrace: grace}
		if _, err := r.Sync(ctx, desired); err == nil {
			for _, d := range desired {
				synced[d.Name] = true
			}
			for pass := 0; pass < 30 && !p.isDead(); pass++ {
				res, err := r.Pass(ctx)
				if err != nil {
					break
				}
				where := fmt.Sprintf("seed %d, epoch %d, pass %d", seed, epoch, pass)
				f.check(t, where)
				f.checkJarsKept(t, r, where)
				noteDeleted(r)
				for name := range adopted {
					// Adopted once its Controller took the job on, not when
					// the look-up recorded it: a deployment removed in
					// between leaves the job as it found it.
					if rec, ok, _ := f.store.Load(context.Background(), name); ok && rec.Adopting != "" && rec.Status.JobID == rec.Adopting {
						claimedByHand[rec.Adopting] = true
					}
				}
				f.clock.Advance(nextWait(res, f.clock.Now()))
			}
		}
		if p.isDead() {
			killed++
		}
		cancel()
		f.clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
	}

	// Flink is well again: the last change set must be carried out.
	for _, srv := range f.servers {
		srv.ClearFaults()
	}
	r := f.runnerOf(&process{left: math.MaxInt, cancel: func() {}})
	r.Housekeeping = Housekeeping{Interval: interval, JarGrace: grace}
	if _, err := r.Sync(context.Background(), desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "the last change set carried out", 2000, func(res []Result) bool { return len(res) == len(desired) && allDone(res) })
	f.check(t, "the end")
	// At rest for the grace and the interval: every upload of the runner
	// left is one a deployment uses.
	f.passFor(t, r, grace+2*interval, func() { f.checkJarsKept(t, r, "the end"); noteDeleted(r) })
	uploaded := 0
	for cluster, srv := range f.servers {
		named := f.namedJars(cluster)
		for _, id := range fleetJars(srv) {
			if !named[id] {
				t.Errorf("%s: jar %s stays, unused for %s", cluster, id, grace+2*interval)
			}
		}
		uploaded += reqlog.JarUploads(srv.Requests())
	}
	if builds > 1 && len(deleted) == 0 {
		t.Errorf("%d builds of app.jar, and no upload was deleted", builds)
	}
	for _, d := range desired {
		rec, ok, err := f.store.Load(context.Background(), d.Name)
		if !ok || err != nil || !sameSpec(rec.Spec, d.Spec) {
			t.Fatalf("%s: record %v, %v", d.Name, ok, err)
		}
		j, ok := f.servers[d.Cluster].Job(rec.Status.JobID)
		if !ok || j.State != flinkapi.JobRunning || !slices.Equal(j.ProgramArgs, d.Spec.Job.Args) {
			t.Errorf("%s: its job %s runs %v (%s), want %v", d.Name, rec.Status.JobID, j.ProgramArgs, j.State, d.Spec.Job.Args)
		}
	}
	for name, id := range adopted {
		if removed[name] {
			continue
		}
		rec, _, _ := f.store.Load(context.Background(), name)
		if rec.Adopting != id {
			t.Errorf("%s adopted %q, want the job started by hand, %s", name, rec.Adopting, id)
		}
	}
	for _, a := range r.Applications() {
		if a.Verdict != lifecycle.VerdictDone {
			t.Errorf("application %s: %s", a.Name, a.Verdict)
		}
	}
	for name := range removed {
		if _, ok, _ := f.store.Load(context.Background(), name); ok {
			t.Errorf("%s was removed and its record is still stored", name)
		}
		for _, srv := range f.servers {
			for _, j := range srv.Jobs() {
				// A job started by hand for a deployment removed before it
				// adopted the job is left as it is.
				leftAlone := j.ID == adopted[name] && !claimedByHand[j.ID]
				if deploymentOf(j) == name && !j.State.IsGloballyTerminal() && !leftAlone {
					t.Errorf("%s was removed and its job %s is %s (adopted %s, by hand claimed %v, args %v)", name, j.ID, j.State, adopted[name], claimedByHand[j.ID], j.ProgramArgs)
				}
			}
		}
	}
	t.Logf("seed %d: %d JobManager restarts drawn", seed, restarts)
	t.Logf("seed %d: %d kills, %d deployments at the end, %d removed, %d adopted, %d applications, %d builds of app.jar, %d uploads, %d deleted",
		seed, killed, len(desired), len(removed), len(adopted), len(r.Applications()), builds, uploaded, len(deleted))
}

// injectFlaky makes cluster's JobManager misbehave at random: 5 % of
// requests answered 503, 3 % carried out with their answer lost, a fifth
// of savepoints and stops failed.
func (f *fakeFleet) injectFlaky(cluster string) {
	srv := f.servers[cluster]
	for _, fault := range []flinktest.Fault{
		{Kind: flinktest.FaultStatus, Status: 503, Probability: 0.05},
		{Kind: flinktest.FaultReset, After: true, Probability: 0.03},
		{Kind: flinktest.FaultSavepointFails, Probability: 0.2},
	} {
		if err := srv.Inject(fault); err != nil {
			f.t.Fatal(err)
		}
	}
}

// runnerOf is the Runner of a process that dies as p says.
func (f *fakeFleet) runnerOf(p *process) *Runner {
	envs := map[string]lifecycle.Env{}
	for name, srv := range f.servers {
		c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry),
			flinkapi.WithHTTPClient(&http.Client{Transport: killingTransport{p, http.DefaultTransport}}))
		if err != nil {
			f.t.Fatal(err)
		}
		envs[name] = lifecycle.Env{Client: c, Clock: f.clock, Jars: f.sources, TargetDirectory: "file://" + clusterDir(name) + "/savepoints"}
	}
	r := f.runner()
	r.Clusters, r.Store = envs, killingStore{p, f.store}
	r.Controller.Storage = fakeDisks{f, p}
	return r
}

// clusterDir is the directory of cluster's savepoints and checkpoints
// on its fake JobManager's simulated disk.
func clusterDir(cluster string) string { return "/flinktest/" + cluster }

// fakeDisks is the Storage of a fleet's savepoints and checkpoints: the
// simulated disk of the fake JobManager whose directory a path lies in.
// A process that died reaches none of it.
type fakeDisks struct {
	f *fakeFleet
	p *process // nil: one that does not die
}

func (d fakeDisks) server(path string) (*flinktest.Server, error) {
	if d.p != nil && d.p.isDead() {
		return nil, errKilled
	}
	local := strings.TrimPrefix(strings.TrimPrefix(path, "file://"), "file:")
	for name, srv := range d.f.servers {
		if strings.HasPrefix(local, clusterDir(name)+"/") {
			return srv, nil
		}
	}
	return nil, fmt.Errorf("%s is on no cluster's disk", path)
}

func (d fakeDisks) Entries(_ context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	srv, err := d.server(dir)
	if err != nil {
		return nil, err
	}
	var out []lifecycle.StorageEntry
	for _, e := range srv.ListStorage(dir) {
		out = append(out, lifecycle.StorageEntry{Path: e.Path, Dir: e.Dir, Size: e.Size, Modified: e.Modified})
	}
	return out, nil
}

func (d fakeDisks) List(ctx context.Context, dir string) ([]string, error) {
	es, err := d.Entries(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Path)
	}
	return out, nil
}

func (d fakeDisks) Delete(_ context.Context, path string) error {
	srv, err := d.server(path)
	if err != nil {
		return err
	}
	if d.p != nil {
		if send, _ := d.p.step(); !send {
			return errKilled
		}
	}
	srv.RemoveStorage(path)
	return nil
}

// deploymentOf is the deployment a job of the fake runs for, from its
// --out argument.
func deploymentOf(j flinktest.JobInfo) string {
	for i, a := range j.ProgramArgs {
		if a == "--out" && i+1 < len(j.ProgramArgs) {
			return strings.TrimPrefix(j.ProgramArgs[i+1], "/out/")
		}
	}
	return ""
}

// check fails t if a deployment has two live jobs, or a job that
// replaced another of its deployment started without its state.
func (f *fakeFleet) check(t *testing.T, where string) {
	t.Helper()
	for cluster, srv := range f.servers {
		jobs := srv.Jobs()
		slices.SortFunc(jobs, func(a, b flinktest.JobInfo) int { return a.Submitted.Compare(b.Submitted) })
		live := map[string][]flinkapi.JobID{}
		seen := map[string]bool{}
		for _, j := range jobs {
			name := deploymentOf(j)
			if !j.State.IsGloballyTerminal() {
				live[name] = append(live[name], j.ID)
			}
			if seen[name] && j.Initial == "" {
				t.Fatalf("%s: job %s of %s on %s started without the state of the jobs before it", where, j.ID, name, cluster)
			}
			seen[name] = true
		}
		for name, ids := range live {
			if len(ids) > 1 {
				t.Fatalf("%s: %s has %d live jobs on %s: %v", where, name, len(ids), cluster, ids)
			}
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// withRate is d with its job's --rate set to rate.
func withRate(d Deployment, rate int) Deployment {
	args := slices.Clone(d.Spec.Job.Args)
	for i := range args {
		if args[i] == "--rate" && i+1 < len(args) {
			args[i+1] = strconv.Itoa(rate)
		}
	}
	d.Spec.Job.Args = args
	return d
}

// flakyStore fails a share of its writes: before writing, or after
// (the record written, the answer an error), as a disk or a database
// that times out does.
type flakyStore struct {
	Store
	mu     sync.Mutex
	rng    *rand.Rand
	fail   bool
	failed int
}

func (s *flakyStore) draw() (fail, written bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fail = s.fail && s.rng.IntN(5) == 0
	if fail {
		s.failed++
	}
	return fail, s.rng.IntN(2) == 0
}

func (s *flakyStore) Save(ctx context.Context, rec *Record) error {
	fail, written := s.draw()
	if fail && !written {
		return errors.New("the store timed out")
	}
	if err := s.Store.Save(ctx, rec); err != nil {
		return err
	}
	if fail {
		return errors.New("the store timed out")
	}
	return nil
}

// TestRunnerFlakyStore: one Runner goes on through writes that fail
// (some of them written all the same) while its deployments change: no
// deployment has two live jobs, and once the store is reliable again
// the last change set is carried out and stored.
func TestRunnerFlakyStore(t *testing.T) {
	seed := uint64(envInt(t, "FLINKKIT_FLEET_SEED", 1))
	rng := rand.New(rand.NewPCG(seed, 11))
	f := newFakeFleet(t, "east", "west")
	store := &flakyStore{Store: f.store, rng: rand.New(rand.NewPCG(seed, 13)), fail: true}
	r := f.runner()
	r.Store = store
	var desired []Deployment
	for i := range 6 {
		desired = append(desired, f.deployment([]string{"east", "west"}[i%2], fmt.Sprintf("job-%02d", i), 10))
	}
	ctx := context.Background()
	for round := range 40 {
		if round%4 == 0 {
			i := rng.IntN(len(desired))
			desired[i] = withRate(desired[i], 10+rng.IntN(50))
		}
		if round == 20 {
			desired = desired[1:] // one removed
		}
		_, _ = r.Sync(ctx, desired) // may fail: the next round syncs again
		for range 5 {
			res, err := r.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f.check(t, fmt.Sprintf("seed %d, round %d", seed, round))
			f.clock.Advance(nextWait(res, f.clock.Now()))
		}
	}
	store.mu.Lock()
	store.fail = false
	failed := store.failed
	store.mu.Unlock()
	if failed < 20 {
		t.Fatalf("%d writes failed; want the runner to go through many", failed)
	}
	t.Logf("seed %d: %d writes failed", seed, failed)
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "carried out", 1000, func(res []Result) bool { return len(res) == len(desired) && allDone(res) })
	for _, d := range desired {
		rec, ok, err := f.store.Load(ctx, d.Name)
		if !ok || err != nil || !sameSpec(rec.Spec, d.Spec) {
			t.Fatalf("%s: stored %v, %v", d.Name, ok, err)
		}
		j, ok := f.servers[d.Cluster].Job(rec.Status.JobID)
		if !ok || j.State != flinkapi.JobRunning || !slices.Equal(j.ProgramArgs, d.Spec.Job.Args) {
			t.Errorf("%s: its stored job %s runs %v (%s), want %v", d.Name, rec.Status.JobID, j.ProgramArgs, j.State, d.Spec.Job.Args)
		}
	}
	if _, ok, _ := f.store.Load(ctx, "job-00"); ok {
		t.Error("job-00 was removed and its record is still stored")
	}
}
