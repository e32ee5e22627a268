package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// The jars of a fleet's deployments: one upload per jar content and
// cluster, shared by every deployment that runs it, and the
// housekeeping that deletes the uploads no deployment uses any more.

// Defaults of Housekeeping.
const (
	// DefaultHousekeepingInterval is Housekeeping.Interval's default.
	DefaultHousekeepingInterval = 5 * time.Minute
	// DefaultJarGrace is Housekeeping.JarGrace's default.
	DefaultJarGrace = 10 * time.Minute
)

// Housekeeping tunes what a Runner's passes do besides calling the
// deployments' Controllers, on each cluster at most once per Interval:
// read the cluster's jars (one GET /jars) and delete the uploads of the
// Runner that no deployment of the Store uses, unused for JarGrace; and
// list the jobs no deployment claims (ClusterResult.Unclaimed, from the
// cluster's shared overview: no request of its own), which are reported
// and never stopped.
type Housekeeping struct {
	// Off turns the housekeeping off: no jar is deleted and no
	// unclaimed job is listed. Jars are shared all the same.
	Off bool
	// Interval is the least time between two housekeepings of a
	// cluster; 0: DefaultHousekeepingInterval.
	Interval time.Duration
	// JarGrace is how long an upload stays after it was uploaded, last
	// handed to a deployment, or last seen used by one; 0:
	// DefaultJarGrace.
	JarGrace time.Duration
}

// isFleetJar reports whether a jar of that name was uploaded by a
// Controller or a Plan of a Runner: its name says its content
// (lifecycle.JarNameDigest). A jar named otherwise (a user's own
// upload, one of another program) is never deleted.
func isFleetJar(name string) bool {
	d, _ := lifecycle.JarNameDigest(name)
	return d != ""
}

// ClusterResult is what the last housekeeping of one cluster found and
// did.
type ClusterResult struct {
	// Name names the cluster.
	Name string
	// At is when the housekeeping ran; zero: it has not yet.
	At time.Time
	// Jars counts the Runner's uploads the cluster holds after the
	// housekeeping's deletions; Deleted are those it deleted (or found
	// already gone).
	Jars    int
	Deleted []flinkapi.JarID
	// Unclaimed are the jobs of the cluster that have not ended and that
	// no deployment claims, started before lifecycle.DefaultJobGrace, by
	// name and start time (without their vertices: Runner.Unclaimed reads
	// those). Nothing stops them.
	Unclaimed []UnclaimedJob
	// Err is the housekeeping's first error, nil if it had none.
	Err error
}

// clusterJars is what a Runner keeps of one cluster's jars.
type clusterJars struct {
	// mu is held while an upload is looked up and made, and while the
	// housekeeping reads what is used and deletes: a jar handed to a
	// deployment is never deleted between its look-up and its use.
	mu sync.Mutex
	// handed is when each upload was last handed to a deployment's
	// Controller, used when the housekeeping last saw a record name it.
	handed, used map[flinkapi.JarID]time.Time

	// The following are guarded by Runner.mu.
	last             time.Time // the last housekeeping
	result           ClusterResult
	uploads, deleted int64
}

func (j *clusterJars) hand(id flinkapi.JarID, now time.Time) {
	if j.handed == nil {
		j.handed = map[flinkapi.JarID]time.Time{}
	}
	j.handed[id] = now
}

// sharingAPI is a cluster's client as the Controllers of its
// deployments use it: their look-ups and uploads of shared jars
// (lifecycle.JarSharing) are made one at a time, never while the
// housekeeping deletes, and the upload each is handed is recorded as in
// use.
type sharingAPI struct {
	lifecycle.API
	r    *Runner
	jars *clusterJars
}

// ShareJar runs find under the lock of the cluster's jars, and records
// the jar it returns as handed to a deployment, and its upload.
func (a *sharingAPI) ShareJar(ctx context.Context, find func() (flinkapi.JarID, bool, error)) (flinkapi.JarID, error) {
	a.jars.mu.Lock()
	defer a.jars.mu.Unlock()
	id, uploaded, err := find()
	if id != "" {
		a.jars.hand(id, a.r.clock().Now())
	}
	if uploaded {
		a.r.mu.Lock()
		a.jars.uploads++
		a.r.mu.Unlock()
	}
	return id, err
}

// withoutRetries is the client c with every request sent once, as a
// Controller uses a *flinkapi.Client.
func withoutRetries(c lifecycle.API) lifecycle.API {
	if fc, ok := c.(*flinkapi.Client); ok && fc != nil {
		return fc.WithoutRetries()
	}
	return c
}

// jarsLocked returns the Runner's record of the jars of cluster name,
// created at its first use; r.mu is held.
func (r *Runner) jarsLocked(name string) *clusterJars {
	if r.jars == nil {
		r.jars = map[string]*clusterJars{}
	}
	j, ok := r.jars[name]
	if !ok {
		j = &clusterJars{result: ClusterResult{Name: name}}
		r.jars[name] = j
	}
	return j
}

// sharingOf returns the client of cluster name for its deployments'
// Controllers (sharingAPI), created at its first use.
func (r *Runner) sharingOf(name string, env lifecycle.Env) lifecycle.API {
	if env.Client == nil || r.Controller.Deployer != nil {
		return env.Client
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sharing == nil {
		r.sharing = map[string]*sharingAPI{}
	}
	a, ok := r.sharing[name]
	if !ok {
		a = &sharingAPI{API: withoutRetries(env.Client), r: r, jars: r.jarsLocked(name)}
		r.sharing[name] = a
	}
	return a
}

// housekeep does the housekeeping of every cluster that is due for it.
func (r *Runner) housekeep(ctx context.Context) {
	if r.Housekeeping.Off || r.Controller.Deployer != nil {
		return
	}
	interval := r.Housekeeping.Interval
	if interval <= 0 {
		interval = DefaultHousekeepingInterval
	}
	for _, name := range r.clusterNames() {
		env := r.Clusters[name]
		if env.Client == nil || ctx.Err() != nil {
			continue
		}
		now := r.clock().Now()
		r.mu.Lock()
		j := r.jarsLocked(name)
		due := j.last.IsZero() || now.Sub(j.last) >= interval || now.Before(j.last)
		for _, d := range r.deps {
			// A call in flight may hold a jar its record does not name
			// yet: the housekeeping waits for a pass without one.
			if d.running && (d.rec == nil || d.rec.Cluster == name) {
				due = false
			}
		}
		r.mu.Unlock()
		if !due {
			continue
		}
		res := r.housekeepCluster(ctx, name, env, j)
		r.mu.Lock()
		j.last, j.result = now, res
		j.deleted += int64(len(res.Deleted))
		r.mu.Unlock()
	}
}

// housekeepCluster reads the jars of cluster name and the records of
// every deployment on it, deletes the Runner's uploads none of them
// uses (lifecycle.SessionPlan) unused for the grace, and lists the jobs
// none claims.
func (r *Runner) housekeepCluster(ctx context.Context, name string, env lifecycle.Env, j *clusterJars) ClusterResult {
	res := ClusterResult{Name: name, At: r.clock().Now()}
	j.mu.Lock()
	defer j.mu.Unlock()
	claims, err := r.claimsOf(ctx, name)
	if err != nil {
		res.Err = fmt.Errorf("fleet: housekeeping of cluster %s: listing the records: %w", name, err)
		return res
	}
	jars, err := env.Client.ListJars(ctx)
	if err != nil {
		res.Err = fmt.Errorf("fleet: housekeeping of cluster %s: listing the jars: %w", name, err)
		return res
	}
	jobs, jobsErr := r.sharedOf(name, env).Jobs(ctx)
	now := r.clock().Now()
	// The grace is applied below, from what the Runner knows of each
	// jar: the plan lists every jar of the Runner that no claim uses.
	plan := lifecycle.SessionPlan(jars, jobs, claims, lifecycle.SessionOptions{JarGrace: time.Nanosecond,
		Keep: func(jar flinkapi.Jar) bool { return !isFleetJar(jar.Name) }}, now.Add(time.Nanosecond))
	unused := map[flinkapi.JarID]bool{}
	for _, jar := range plan.UnusedJars {
		unused[jar.ID] = true
	}
	if j.used == nil {
		j.used = map[flinkapi.JarID]time.Time{}
	}
	listed := map[flinkapi.JarID]bool{}
	grace := r.Housekeeping.JarGrace
	if grace <= 0 {
		grace = DefaultJarGrace
	}
	for _, jar := range jars {
		if !isFleetJar(jar.Name) {
			continue
		}
		listed[jar.ID] = true
		if !unused[jar.ID] {
			j.used[jar.ID] = now
			res.Jars++
			continue
		}
		since := jar.Uploaded
		for _, t := range []time.Time{j.used[jar.ID], j.handed[jar.ID]} {
			if t.After(since) {
				since = t
			}
		}
		if now.Sub(since) < grace || res.Err != nil {
			res.Jars++
			continue
		}
		if err := env.Client.DeleteJar(ctx, jar.ID); err != nil && !flinkapi.IsJarNotFound(err) {
			res.Err = fmt.Errorf("fleet: housekeeping of cluster %s: deleting jar %s: %w", name, jar.ID, err)
			res.Jars++
			continue
		}
		res.Deleted = append(res.Deleted, jar.ID)
		delete(listed, jar.ID)
	}
	// What is known of jars the cluster no longer lists is forgotten.
	for _, m := range []map[flinkapi.JarID]time.Time{j.used, j.handed} {
		for id := range m {
			if !listed[id] {
				delete(m, id)
			}
		}
	}
	if jobsErr != nil {
		res.Err = errors.Join(res.Err, fmt.Errorf("fleet: housekeeping of cluster %s: listing the jobs: %w", name, jobsErr))
		return res
	}
	for _, job := range plan.Unclaimed {
		res.Unclaimed = append(res.Unclaimed, UnclaimedJob{ID: job.ID, Name: job.Name, State: job.State, StartTime: job.StartTime})
	}
	sort.Slice(res.Unclaimed, func(i, k int) bool {
		a, b := res.Unclaimed[i], res.Unclaimed[k]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.StartTime.Before(b.StartTime)
	})
	return res
}

// claimsOf returns what every deployment on cluster holds, read now:
// the record of each as the Store lists it and as the Runner last
// stored it (a write that failed may have been written), under its spec
// and the spec its job last ran under, and the jobs being adopted.
func (r *Runner) claimsOf(ctx context.Context, cluster string) ([]lifecycle.Claim, error) {
	recs, err := r.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	for _, d := range r.deps {
		if d.rec != nil {
			recs = append(recs, *d.rec)
		}
	}
	var claims []lifecycle.Claim
	for id := range r.adopted {
		claims = append(claims, lifecycle.Claim{Status: lifecycle.JobStatus{JobID: id}})
	}
	r.mu.Unlock()
	for i := range recs {
		rec := &recs[i]
		if rec.Cluster != cluster {
			continue
		}
		claims = append(claims, lifecycle.Claim{Spec: rec.Spec, Status: rec.Status})
		if rec.Applied != nil {
			claims = append(claims, lifecycle.Claim{Spec: *rec.Applied})
		}
		if rec.Adopting != "" {
			claims = append(claims, lifecycle.Claim{Status: lifecycle.JobStatus{JobID: rec.Adopting}})
		}
	}
	return claims, nil
}

// ClusterResults returns what the last housekeeping of each cluster
// found and did, ordered by cluster name.
func (r *Runner) ClusterResults() []ClusterResult {
	names := r.clusterNames()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ClusterResult, 0, len(names))
	for _, name := range names {
		res := ClusterResult{Name: name}
		if j, ok := r.jars[name]; ok {
			res = j.result
		}
		out = append(out, res)
	}
	return out
}
