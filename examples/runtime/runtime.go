package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Application is a set of streaming jobs, its streamlets, deployed and
// undeployed together: a fleet.Deployment each, of the fleet application
// Name.
type Application struct {
	Name       string      // the first part of its streamlets' names
	Streamlets []Streamlet // deployed and undeployed together
}

// Streamlet is one streaming job of an application: flinkkit's test job
// counting Rate events a second.
type Streamlet struct {
	Name string // the second part of its name, "application/streamlet"
	Rate int    // events a second; 0: demo.Rate
}

// cluster is the name of the one cluster of the runtime's fleet.
const cluster = "main"

// Runtime deploys applications onto one Flink session cluster and
// undeploys them through a fleet.Runner: each streamlet is a deployment
// named "application/streamlet" whose fleet.Record (its spec, the spec
// its job last ran under and its lifecycle.JobStatus) is kept in a
// fleet.DirStore in StateDir and stored after every call of its
// Controller, so a Runtime stopped at any point and started again on the
// same StateDir carries on where it stopped. Deploy syncs the
// application's deployments into the fleet and does passes until each
// job runs its spec stably; Undeploy syncs the fleet without them and
// does passes until the Runner has torn each down (Controller.Delete: the
// job stops with a final savepoint recorded in Store under the
// streamlet's name) and deleted its record. Deploying again starts a new
// record, from which the Controller restores the savepoint recorded under
// the name if the update policy finds it young enough: the jobs' state
// outlives the jobs.
type Runtime struct {
	// Cluster is the session cluster the jobs run on, with the test job's
	// jar uploaded.
	Cluster *demo.Cluster
	// Store keeps each streamlet's final savepoint under its name.
	Store lifecycle.RestorePointStore
	// StateDir is the folder of the fleet's records, one
	// <application>~<streamlet>.json each.
	StateDir string
	// Policy says how the jobs are stopped and how old a savepoint a
	// deployment may start from.
	Policy policy.UpdatePolicy
	// Out gets a line per streamlet deployed or undeployed, and the
	// progress in between.
	Out *demo.Printer

	saved func(fleet.Record) // if set, called after every record stored, one call at a time

	once   sync.Once
	runner *fleet.Runner
	err    error
	mu     sync.Mutex
	last   map[string]fleet.Record // the record last stored of each deployment
}

// Deployment is what Deploy did for one streamlet.
type Deployment struct {
	Name        string         // application/streamlet
	Number      int            // the deployment's number: its job is application-streamlet-Number
	Job         flinkapi.JobID // the job that runs it
	JobName     string         // its Flink job name and folder of counts: application-streamlet-Number
	RestoreFrom string         // the savepoint it started from; empty: none
}

// retryInterval is how long after an action that did not succeed the
// Controller tries it again (an undeploy that left its job running).
const retryInterval = 5 * time.Second

// fleet is the Runtime's Runner, made on first use.
func (rt *Runtime) fleet() (*fleet.Runner, error) {
	rt.once.Do(func() {
		dir, err := fleet.NewDirStore(rt.StateDir)
		if err != nil {
			rt.err = err
			return
		}
		cl := rt.Cluster
		rt.runner = &fleet.Runner{Store: &watchedStore{Store: dir, rt: rt},
			Clusters:   map[string]lifecycle.Env{cluster: {Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir}},
			Controller: lifecycle.Controller{Store: rt.Store, PollInterval: cl.Timing.Poll, RetryInterval: retryInterval},
			MaxBackoff: 5 * time.Second}
	})
	return rt.runner, rt.err
}

// watchedStore is the fleet's Store, noting each record it stores.
type watchedStore struct {
	fleet.Store
	rt *Runtime
}

func (s *watchedStore) Save(ctx context.Context, rec *fleet.Record) error {
	if err := s.Store.Save(ctx, rec); err != nil {
		return err
	}
	s.rt.mu.Lock()
	if s.rt.last == nil {
		s.rt.last = map[string]fleet.Record{}
	}
	s.rt.last[rec.Name] = *rec
	defer s.rt.mu.Unlock()
	if s.rt.saved != nil {
		s.rt.saved(*rec) // one at a time
	}
	return nil
}

// lastSaved is the record last stored of the deployment name.
func (rt *Runtime) lastSaved(name string) fleet.Record {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.last[name]
}

// Deploy deploys every streamlet of app as its nth deployment and returns
// once each one's job runs its spec stably: RUNNING, all its tasks
// running and a checkpoint completed. A streamlet being undeployed (a
// runtime stopped in an undeploy) is undeployed first; one deployed, or
// being deployed, carries on under the spec it was deployed with.
func (rt *Runtime) Deploy(ctx context.Context, app Application, n int) ([]Deployment, error) {
	r, err := rt.fleet()
	if err != nil {
		return nil, err
	}
	names := app.names()
	recs, err := r.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		if names[rec.Name] && rec.Removed {
			// Stopped in the middle of an undeploy: that ends first.
			if _, err := rt.Undeploy(ctx, app); err != nil {
				return nil, err
			}
			return rt.Deploy(ctx, app, n)
		}
	}
	specs := map[string]lifecycle.JobSpec{}
	for _, rec := range recs {
		specs[rec.Name] = rec.Spec // a deployment under way keeps its spec
	}
	desired := others(recs, names)
	for _, s := range app.Streamlets {
		name := app.Name + "/" + s.Name
		spec, ok := specs[name]
		if !ok {
			spec = lifecycle.JobSpec{Job: rt.Cluster.Job(jobName(name, n), s.Rate)}
			rt.Policy.DeepCopyInto(&spec.Update)
		}
		desired = append(desired, fleet.Deployment{Name: name, Cluster: cluster, Application: app.Name, Spec: spec})
	}
	if _, err := r.Sync(ctx, desired); err != nil {
		return nil, err
	}
	start := time.Now()
	deps := map[string]Deployment{}
	err = rt.passes(ctx, r, "deploy", names, func(name string, rec fleet.Record, ok bool) (bool, error) {
		if !ok || !rec.Status.Converged(rec.Spec) {
			return false, failed(name, &rec.Status)
		}
		if _, done := deps[name]; !done {
			deps[name] = rt.deployed(name, &rec.Status, numberOf(rec.Spec), start)
		}
		return true, nil
	})
	var out []Deployment
	for _, s := range app.Streamlets {
		if d, ok := deps[app.Name+"/"+s.Name]; ok {
			out = append(out, d)
		}
	}
	if err != nil {
		return out, fmt.Errorf("deploy %s: %w", app.Name, err)
	}
	return out, nil
}

// deployed reports the deployment whose job runs stably.
func (rt *Runtime) deployed(name string, st *lifecycle.JobStatus, n int, start time.Time) Deployment {
	d := Deployment{Name: name, Number: n, Job: st.JobID, JobName: jobName(name, n), RestoreFrom: st.UpgradeFrom.Location}
	from := "without state (first deployment)"
	switch {
	case d.RestoreFrom != "" && !st.UpgradeFrom.Time.IsZero():
		from = fmt.Sprintf("from its savepoint %s (%s old)", d.RestoreFrom, demo.Seconds(st.DeployedAt.Sub(st.UpgradeFrom.Time)))
	case d.RestoreFrom != "":
		from = "from its savepoint " + d.RestoreFrom
	case d.Number > 1:
		from = "without state (nothing recorded under its name)"
	}
	rt.Out.Phase("deploy", "%s: job %s (%s) RUNNING %s after %s", name, demo.Short(d.Job), d.JobName, from, demo.Seconds(time.Since(start)))
	return d
}

// Undeploy undeploys every streamlet of app: the Runner tears each one's
// job down (Controller.Delete: it stops with a final savepoint, recorded
// in Store under the streamlet's name for the next Deploy) and deletes
// its record. An undeploy under way when the runtime stopped carries on.
// It returns the savepoint each streamlet's undeploy recorded, by name.
func (rt *Runtime) Undeploy(ctx context.Context, app Application) (map[string]savepoint.Record, error) {
	r, err := rt.fleet()
	if err != nil {
		return nil, err
	}
	names := app.names()
	recs, err := r.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := r.Sync(ctx, others(recs, names)); err != nil {
		return nil, err
	}
	start := time.Now()
	err = rt.passes(ctx, r, "undeploy", names, func(name string, _ fleet.Record, ok bool) (bool, error) {
		if !ok {
			rt.undeployed(name, start)
		}
		return !ok, nil
	})
	recorded := map[string]savepoint.Record{}
	for name := range names {
		if rec, ok := rt.savepointOf(name); ok {
			recorded[name] = rec
		}
	}
	if err != nil {
		return recorded, fmt.Errorf("undeploy %s: %w", app.Name, err)
	}
	return recorded, nil
}

// undeployed reports the teardown of name, from its last record.
func (rt *Runtime) undeployed(name string, start time.Time) {
	st := rt.lastSaved(name).Status
	p, job := &st.Progress, demo.Short(st.JobID)
	switch {
	case st.JobID == "":
		rt.Out.Phase("undeploy", "%s: nothing was deployed", name)
	case p.Outcome == lifecycle.OutcomeSucceeded && p.Teardown.Recorded:
		rt.Out.Phase("undeploy", "%s: job %s stopped after %s; its savepoint %s recorded under its name", name, job,
			demo.Seconds(time.Since(start)), p.Savepoint.Location)
	default:
		rt.Out.Phase("undeploy", "%s: job %s no longer runs (%s), nothing new recorded under its name: %s", name, job, p.Outcome, p.Reason)
	}
}

// passes does passes of r until done reports true of each of the
// deployments names (their record, and whether there is one), each once,
// showing their progress as what.
func (rt *Runtime) passes(ctx context.Context, r *fleet.Runner, what string, names map[string]bool,
	done func(name string, rec fleet.Record, ok bool) (bool, error)) error {
	start, left := time.Now(), len(names)
	finished := map[string]bool{}
	for {
		results, err := r.Pass(ctx)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return err
		}
		next := time.Now().Add(time.Minute)
		for _, res := range results {
			if names[res.Name] && res.Err != nil && !finished[res.Name] {
				return fmt.Errorf("%s: %w", res.Name, res.Err)
			}
			next = minTime(next, res.Next)
		}
		for name := range names {
			if finished[name] {
				continue
			}
			rec, ok, err := r.Store.Load(ctx, name)
			if err != nil {
				return err
			}
			ok2, err := done(name, rec, ok)
			if err != nil {
				return err
			}
			if ok2 {
				finished[name], left = true, left-1
			} else if ok {
				rt.Out.Progress(what, name+": "+rec.Status.Message, time.Since(start))
			}
		}
		if left == 0 {
			return nil
		}
		if err := wait.Sleep(ctx, max(time.Until(next), 10*time.Millisecond)); err != nil {
			return err
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// failed returns an error for a deployment whose last action ended
// without success, or that waits for nothing that comes by itself: it
// does not go ahead without someone looking.
func failed(name string, st *lifecycle.JobStatus) error {
	v := st.Verdict
	if v != lifecycle.VerdictFailed && v != lifecycle.VerdictBlocked && v != lifecycle.VerdictInvalid {
		return nil
	}
	p := &st.Progress
	msg := fmt.Sprintf("%s: %s: %s", name, st.Reason, st.Message)
	if p.Outcome != "" && p.Outcome != lifecycle.OutcomeSucceeded {
		msg = fmt.Sprintf("%s: %s ended %s", name, st.Action, p.Outcome)
		if p.Replace.Decision != "" {
			msg += " (" + string(p.Replace.Decision) + ")"
		}
		msg += ": " + p.Reason
	}
	return fmt.Errorf("%s", msg)
}

// others are the deployments of recs that are not being removed and not
// named in names, as the fleet has them.
func others(recs []fleet.Record, names map[string]bool) []fleet.Deployment {
	var out []fleet.Deployment
	for _, rec := range recs {
		if !rec.Removed && !names[rec.Name] {
			out = append(out, fleet.Deployment{Name: rec.Name, Cluster: rec.Cluster, Spec: rec.Spec, Application: rec.Application, AdoptName: rec.AdoptName})
		}
	}
	return out
}

func (app Application) names() map[string]bool {
	names := map[string]bool{}
	for _, s := range app.Streamlets {
		names[app.Name+"/"+s.Name] = true
	}
	return names
}

// jobName is the Flink job name of the streamlet's nth deployment:
// "sensors-ingest-2" for sensors/ingest.
func jobName(name string, n int) string {
	return strings.ReplaceAll(name, "/", "-") + "-" + strconv.Itoa(n)
}

// numberOf is the number of the deployment whose spec is spec: the end
// of its job's name (the test job's --name argument).
func numberOf(spec lifecycle.JobSpec) int {
	for i, a := range spec.Job.Args {
		if a == "--name" && i+1 < len(spec.Job.Args) {
			n, _ := strconv.Atoi(spec.Job.Args[i+1][strings.LastIndex(spec.Job.Args[i+1], "-")+1:])
			return n
		}
	}
	return 0
}

// savepointOf is the savepoint the last undeploy of name recorded under
// it, if it recorded one.
func (rt *Runtime) savepointOf(name string) (savepoint.Record, bool) {
	st := rt.lastSaved(name).Status
	if rec, ok := st.Progress.Record(); ok && st.Action == lifecycle.ActionTeardown {
		return rec, true
	}
	return savepoint.Record{}, false
}
