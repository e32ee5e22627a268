package appfake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// ShutdownOnFinish is the Flink setting that keeps an application
// cluster's JobManager after its job ended when set to "false".
const ShutdownOnFinish = "execution.shutdown-on-application-finish"

// ErrUnavailable is the error of a Deploy call that fails before doing
// anything (FailDeploys).
var ErrUnavailable = errors.New("appfake: the cluster manager is unavailable")

// Request is the job a Deployer starts: the fields of
// lifecycle.DeployRequest the fake uses.
type Request struct {
	// JobID is the job's id.
	JobID flinkapi.JobID
	// Args and Parallelism are the job's arguments and default
	// parallelism (0: the cluster's).
	Args        []string
	Parallelism int
	// Configuration is the job's Flink configuration: its restore path
	// (execution.savepoint.path, execution.savepoint.ignore-unclaimed-state)
	// and execution.shutdown-on-application-finish are read from it.
	Configuration map[string]string
}

// Cluster is an application cluster the Deployer started. It has the
// fields of lifecycle.Cluster and converts to it.
type Cluster struct {
	// Name identifies the cluster: "app-" and the first 12 characters of
	// its job id, with a generation suffix ("-2") when a cluster of the
	// same job was deleted before.
	Name string `json:"name"`
	// URL is the address of its JobManager's REST API.
	URL string `json:"url,omitempty"`
	// JobID is the job it runs.
	JobID flinkapi.JobID `json:"jobID,omitempty"`
}

// Deletion records a Delete that removed a cluster: which, and the state
// its job was in on the fake at that moment.
type Deletion struct {
	Cluster Cluster
	// JobState is the job's state when its cluster was deleted; empty if
	// the fake knew no such job.
	JobState flinkapi.JobState
}

// Option configures a Deployer.
type Option func(*Deployer)

// FailDeploys makes the next n Deploy calls fail with ErrUnavailable
// before doing anything.
func FailDeploys(n int) Option { return func(d *Deployer) { d.fail = n } }

// NeverStart makes Deploy create clusters whose JobManager never starts:
// no job runs, and the cluster does not exist (Exists false).
func NeverStart() Option { return func(d *Deployer) { d.broken = true } }

// cluster is a cluster the Deployer started, and its endpoint.
type cluster struct {
	Cluster
	app     *flinktest.Application
	deleted bool
}

// Deployer starts each job in an application cluster on a shared
// flinktest.Server. Its methods are safe for concurrent use.
type Deployer struct {
	srv *flinktest.Server
	c   *flinkapi.Client // of the shared server: the jar runs and cancels
	jar flinkapi.JarID

	mu        sync.Mutex
	clusters  map[string]*cluster       // by name, deleted ones too
	current   map[flinkapi.JobID]string // job id → the name of its cluster not deleted
	gens      map[flinkapi.JobID]int    // clusters started per job id
	requests  []Request
	deletions []Deletion
	fail      int
	broken    bool
}

// New returns a Deployer of application clusters on srv. It uploads the
// jar of flinktest's counter job, which every cluster runs. Close it when
// done.
func New(ctx context.Context, srv *flinktest.Server, opts ...Option) (*Deployer, error) {
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		return nil, err
	}
	jar, err := c.UploadJarReader(ctx, "app.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass)))
	if err != nil {
		return nil, fmt.Errorf("appfake: uploading the job's jar: %w", err)
	}
	d := &Deployer{srv: srv, c: c, jar: jar, clusters: map[string]*cluster{}, current: map[flinkapi.JobID]string{}, gens: map[flinkapi.JobID]int{}}
	for _, o := range opts {
		o(d)
	}
	return d, nil
}

// SetFailDeploys makes the next n Deploy calls fail with ErrUnavailable.
func (d *Deployer) SetFailDeploys(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = n
}

// SetNeverStart makes the clusters Deploy creates from now on never start
// (see NeverStart), or start again.
func (d *Deployer) SetNeverStart(never bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.broken = never
}

// Name is the name of the first cluster of job id.
func Name(id flinkapi.JobID) string {
	s := string(id)
	if len(s) > 12 {
		s = s[:12]
	}
	return "app-" + s
}

// Deploy starts an application cluster running the job of req and returns
// it, or returns the cluster it started for req.JobID before if that was
// not deleted. A jar run whose job started although its answer was an
// error (a fault injected after the request took effect) starts the
// cluster and returns the error: a later Deploy returns that cluster. A cluster deleted before is never returned: a Deploy of its
// job id starts a new one, whose jar run finds the job Flink knows under
// that id.
func (d *Deployer) Deploy(ctx context.Context, req Request) (Cluster, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests = append(d.requests, req)
	if d.fail > 0 {
		d.fail--
		return Cluster{}, ErrUnavailable
	}
	if name, ok := d.current[req.JobID]; ok {
		return d.clusters[name].Cluster, nil
	}
	conf := req.Configuration
	if !d.broken {
		_, known := d.srv.Job(req.JobID)
		_, err := d.c.RunJar(ctx, d.jar, flinkapi.RunJarRequest{JobID: req.JobID, ProgramArgs: req.Args, Parallelism: req.Parallelism,
			SavepointPath: conf["execution.savepoint.path"], AllowNonRestoredState: conf["execution.savepoint.ignore-unclaimed-state"] == "true",
			FlinkConfiguration: conf})
		if err != nil && !flinkapi.IsDuplicateJob(err) {
			if _, started := d.srv.Job(req.JobID); known || !started {
				return Cluster{}, err
			}
			// The job started, its answer lost: the cluster exists, and
			// the caller did not learn it.
			cl := d.start(req.JobID, conf)
			return Cluster{}, fmt.Errorf("appfake: cluster %s started, its answer lost: %w", cl.Name, err)
		}
	}
	return d.start(req.JobID, conf).Cluster, nil
}

// start registers a new cluster of job id with d.mu held.
func (d *Deployer) start(id flinkapi.JobID, conf map[string]string) *cluster {
	app := d.srv.Application(id, conf[ShutdownOnFinish] != "false")
	if d.broken {
		app.Close()
	}
	d.gens[id]++
	name := Name(id)
	if g := d.gens[id]; g > 1 {
		name = fmt.Sprintf("%s-%d", name, g)
	}
	cl := &cluster{Cluster: Cluster{Name: name, URL: app.URL, JobID: id}, app: app}
	d.clusters[name] = cl
	d.current[id] = name
	return cl
}

// Delete deletes the cluster c names: its JobManager stops answering, and
// its job is cancelled on the shared server if it still runs there (the
// job goes with its cluster). Deleting a cluster that is gone, or that
// the Deployer never started, is success; after an error, a Delete again
// cancels the job again.
func (d *Deployer) Delete(ctx context.Context, c Cluster) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cl, ok := d.clusters[c.Name]
	if !ok {
		return nil
	}
	info, known := d.srv.Job(cl.JobID)
	if !cl.deleted {
		cl.deleted = true
		cl.app.Close()
		if d.current[cl.JobID] == cl.Name {
			delete(d.current, cl.JobID)
		}
		del := Deletion{Cluster: cl.Cluster}
		if known {
			del.JobState = info.State
		}
		d.deletions = append(d.deletions, del)
	}
	if _, served := d.current[cl.JobID]; known && !served && !info.State.IsGloballyTerminal() {
		if err := d.c.CancelJob(ctx, cl.JobID); err != nil {
			return fmt.Errorf("appfake: cancelling the job %s of cluster %s: %w", cl.JobID, cl.Name, err)
		}
	}
	return nil
}

// Exists reports whether the cluster c names exists: started, not
// deleted, and its JobManager running (not exited with its job).
func (d *Deployer) Exists(c Cluster) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	cl, ok := d.clusters[c.Name]
	return ok && !cl.deleted && cl.app.Running()
}

// URL is the address of the REST API of the cluster c names: its
// Application's URL, or c.URL for a cluster the Deployer never started.
func (d *Deployer) URL(c Cluster) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cl, ok := d.clusters[c.Name]; ok {
		return cl.app.URL
	}
	return c.URL
}

// Client returns a client of the REST API of c's JobManager (URL), which
// does not retry: the callers under test retry themselves.
func (d *Deployer) Client(c Cluster) (*flinkapi.Client, error) {
	return flinkapi.NewClient(d.URL(c), flinkapi.WithRetryPolicy(flinkapi.NoRetry))
}

// Running lists the names of the clusters whose JobManager runs, sorted.
func (d *Deployer) Running() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for name, cl := range d.clusters {
		if !cl.deleted && cl.app.Running() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Deleted reports whether Delete removed the cluster named name.
func (d *Deployer) Deleted(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	cl, ok := d.clusters[name]
	return ok && cl.deleted
}

// Deletions lists the clusters Delete removed, oldest first.
func (d *Deployer) Deletions() []Deletion {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Deletion(nil), d.deletions...)
}

// Requests lists the requests of every Deploy call, failed ones too,
// oldest first.
func (d *Deployer) Requests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Request(nil), d.requests...)
}

// ExitWithJob makes the cluster of job id (not deleted) exit once its job
// ended from now on, as a JobManager configured with
// execution.shutdown-on-application-finish: true does; its address
// changes. It reports whether there was such a cluster.
func (d *Deployer) ExitWithJob(id flinkapi.JobID) bool {
	d.mu.Lock()
	name, ok := d.current[id]
	if !ok {
		d.mu.Unlock()
		return false
	}
	cl := d.clusters[name]
	old := cl.app
	cl.app = d.srv.Application(id, true)
	cl.URL = cl.app.URL
	d.mu.Unlock()
	old.Close()
	return true
}

// Close stops the JobManager endpoint of every cluster; the jobs stay on
// the shared server.
func (d *Deployer) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cl := range d.clusters {
		cl.app.Close()
	}
}
