package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Application is a set of streaming jobs, its streamlets, deployed and
// undeployed together.
type Application struct {
	Name       string      // the first part of its streamlets' names
	Streamlets []Streamlet // deployed and undeployed in this order
}

// Streamlet is one streaming job of an application: flinkkit's test job
// counting Rate events a second.
type Streamlet struct {
	Name string // the second part of its name, "application/streamlet"
	Rate int    // events a second; 0: demo.Rate
}

// Runtime deploys applications onto one Flink session cluster and
// undeploys them. Each streamlet is a lifecycle.JobSpec kept by a
// lifecycle.Controller under the name "application/streamlet"; its
// lifecycle.JobStatus is in a state file of its own (StreamletState),
// read before and written after every call of the Controller, so a
// Runtime stopped at any point and started again on the same StateDir
// carries on where it stopped. Undeploying deletes the job
// (Controller.Delete): it stops with a final savepoint recorded in Store
// under the streamlet's name. Deploying again starts from a fresh status,
// from which the Controller restores the savepoint recorded under the name
// if the update policy finds it young enough. The jobs' state thus
// outlives the jobs.
type Runtime struct {
	// Cluster is the session cluster the jobs run on, with the test job's
	// jar uploaded.
	Cluster *demo.Cluster
	// Store keeps each streamlet's final savepoint under its name.
	Store lifecycle.RestorePointStore
	// StateDir is the folder of the streamlets' state files, one
	// <application>~<streamlet>.json each.
	StateDir string
	// Policy says how the jobs are stopped and how old a savepoint a
	// deployment may start from.
	Policy policy.UpdatePolicy
	// Out gets a line per streamlet deployed or undeployed, and the
	// progress in between.
	Out *demo.Printer

	saved func(name string, s StreamletState) // if set, called after every save

	sharedOnce sync.Once
	shared     *lifecycle.SharedObservation // the cluster's overview, shared by every streamlet's Controller
}

// StreamletFormat is the format version of the StreamletState this
// release writes and reads.
const StreamletFormat = 1

// StreamletState is what the runtime keeps of one streamlet: its state
// file, replaced atomically after every call of the Controller.
type StreamletState struct {
	// FormatVersion is StreamletFormat; a newer one is refused.
	FormatVersion int `json:"formatVersion"`
	// Deployment counts the streamlet's deployments, the current one
	// included: the Nth runs as the Flink job application-streamlet-N,
	// writing its counts to the folder of that name.
	Deployment int `json:"deployment"`
	// Undeployed reports that the current deployment was undeployed: its
	// job is stopped and its final savepoint recorded in the Store.
	Undeployed bool `json:"undeployed,omitempty"`
	// Spec is the deployment's job spec, fixed when it began: a runtime
	// started again carries on with it, although it uploaded the jar
	// again under another id.
	Spec lifecycle.JobSpec `json:"spec"`
	// Status is the Controller's status of the deployment's job.
	Status lifecycle.JobStatus `json:"status"`
}

// Deployment is what Deploy did for one streamlet.
type Deployment struct {
	Name        string         // application/streamlet
	Number      int            // the streamlet's deployments so far, this one included
	Job         flinkapi.JobID // the job that runs it
	JobName     string         // its Flink job name and folder of counts: application-streamlet-Number
	RestoreFrom string         // the savepoint it started from; empty: none
}

// Deploy deploys every streamlet of app and returns once each one's job
// runs its spec stably: RUNNING, all its tasks running and a checkpoint
// completed. A streamlet that is not deployed gets a new deployment: a
// fresh JobStatus, from which the Controller starts the job from the
// savepoint recorded under the streamlet's name, or without state when
// there is none. A streamlet that is deployed, or was being deployed when
// the runtime stopped, is reconciled until it runs; one that was being
// undeployed is undeployed first, then deployed anew.
func (rt *Runtime) Deploy(ctx context.Context, app Application) ([]Deployment, error) {
	var deps []Deployment
	for _, s := range app.Streamlets {
		d, err := rt.deploy(ctx, app.Name+"/"+s.Name, s)
		if err != nil {
			return deps, fmt.Errorf("deploy %s/%s: %w", app.Name, s.Name, err)
		}
		deps = append(deps, d)
	}
	return deps, nil
}

// Undeploy undeploys every deployed streamlet of app, each through
// Controller.Delete until it is done: the job stops with a final savepoint,
// recorded in Store under the streamlet's name for the next Deploy. An
// undeploy that was under way when the runtime stopped carries on from its
// status. It returns the savepoint of each streamlet's last undeploy by
// name.
func (rt *Runtime) Undeploy(ctx context.Context, app Application) (map[string]savepoint.Record, error) {
	recs := map[string]savepoint.Record{}
	for _, s := range app.Streamlets {
		name := app.Name + "/" + s.Name
		st, err := rt.load(name)
		if err == nil && st.Deployment > 0 {
			err = rt.undeploy(ctx, name, &st)
		}
		if err != nil {
			return recs, fmt.Errorf("undeploy %s: %w", name, err)
		}
		if rec, ok := st.Status.Progress.Record(); ok && st.Status.Action == lifecycle.ActionTeardown {
			recs[name] = rec
		}
	}
	return recs, nil
}

func (rt *Runtime) deploy(ctx context.Context, name string, s Streamlet) (Deployment, error) {
	st, err := rt.load(name)
	if err != nil {
		return Deployment{}, err
	}
	if st.Deployment > 0 && !st.Undeployed && st.Status.Action == lifecycle.ActionTeardown {
		// Stopped in the middle of an undeploy: that ends first.
		if err := rt.undeploy(ctx, name, &st); err != nil {
			return Deployment{}, err
		}
	}
	if st.Deployment == 0 || st.Undeployed {
		n := st.Deployment + 1
		st = StreamletState{Deployment: n, Spec: rt.spec(name, s, n)}
		if err := rt.save(name, st); err != nil {
			return Deployment{}, err
		}
	}
	spec, ctrl, start := st.Spec, rt.controller(name), time.Now()
	for {
		res, err := ctrl.Reconcile(ctx, spec, &st.Status)
		if err := rt.save(name, st); err != nil {
			return Deployment{}, err
		}
		if err != nil {
			return Deployment{}, err
		}
		if st.Status.Converged(spec) {
			break
		}
		if err := failed(&st.Status, res); err != nil {
			return Deployment{}, err
		}
		rt.Out.Progress("deploy", name+": "+st.Status.Message, time.Since(start))
		if err := sleep(ctx, res.RequeueAfter); err != nil {
			return Deployment{}, err
		}
	}
	d := Deployment{Name: name, Number: st.Deployment, Job: st.Status.JobID, JobName: jobName(name, st.Deployment),
		RestoreFrom: st.Status.UpgradeFrom.Location}
	from := "without state (first deployment)"
	switch {
	case d.RestoreFrom != "" && !st.Status.UpgradeFrom.Time.IsZero():
		from = fmt.Sprintf("from its savepoint %s (%s old)", d.RestoreFrom, demo.Seconds(st.Status.DeployedAt.Sub(st.Status.UpgradeFrom.Time)))
	case d.RestoreFrom != "":
		from = "from its savepoint " + d.RestoreFrom
	case d.Number > 1:
		from = "without state (nothing recorded under its name)"
	}
	rt.Out.Phase("deploy", "%s: job %s (%s) RUNNING %s after %s", name, demo.Short(d.Job), d.JobName, from, demo.Seconds(time.Since(start)))
	return d, nil
}

// undeploy deletes the job of st's deployment, unless that is done.
func (rt *Runtime) undeploy(ctx context.Context, name string, st *StreamletState) error {
	if st.Undeployed {
		return nil
	}
	spec, ctrl, start := st.Spec, rt.controller(name), time.Now()
	for {
		res, err := ctrl.Delete(ctx, spec, &st.Status)
		st.Undeployed = res.Done
		if err := rt.save(name, *st); err != nil {
			return err
		}
		if err != nil {
			return err
		}
		if res.Done {
			break
		}
		rt.Out.Progress("undeploy", name+": "+st.Status.Message, time.Since(start))
		if err := sleep(ctx, res.RequeueAfter); err != nil {
			return err
		}
	}
	p, job := &st.Status.Progress, demo.Short(st.Status.JobID)
	switch {
	case st.Status.JobID == "":
		rt.Out.Phase("undeploy", "%s: nothing was deployed", name)
	case p.Outcome == lifecycle.OutcomeSucceeded && p.Teardown.Recorded:
		rt.Out.Phase("undeploy", "%s: job %s stopped after %s; its savepoint %s recorded under its name", name, job,
			demo.Seconds(time.Since(start)), p.Savepoint.Location)
	default:
		rt.Out.Phase("undeploy", "%s: job %s no longer runs (%s), nothing new recorded under its name: %s", name, job, p.Outcome, p.Reason)
	}
	return nil
}

// spec is the JobSpec of the streamlet's nth deployment on the cluster as
// it is now: with the jar uploaded by this run.
func (rt *Runtime) spec(name string, s Streamlet, n int) lifecycle.JobSpec {
	spec := lifecycle.JobSpec{Job: rt.Cluster.Job(jobName(name, n), s.Rate)}
	rt.Policy.DeepCopyInto(&spec.Update)
	return spec
}

// retryInterval is how long after an action that did not succeed the
// Controller tries it again (an undeploy that left its job running).
const retryInterval = 5 * time.Second

func (rt *Runtime) controller(name string) *lifecycle.Controller {
	cl := rt.Cluster
	rt.sharedOnce.Do(func() {
		// Streamlets at rest are checked with one overview of the
		// cluster per poll between them, not a request each.
		rt.shared = &lifecycle.SharedObservation{Client: cl.Client, MaxAge: cl.Timing.Poll / 2}
	})
	return &lifecycle.Controller{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir},
		Store: rt.Store, Name: name, PollInterval: cl.Timing.Poll, RetryInterval: retryInterval, Shared: rt.shared}
}

// failed returns an error for an action that ended in the call (res)
// without success: the deployment does not go ahead without someone
// looking. (A spec the Controller cannot act on is Reconcile's error.)
func failed(st *lifecycle.JobStatus, res lifecycle.Result) error {
	p := &st.Progress
	switch {
	case res.Outcome != "" && res.Outcome != lifecycle.OutcomeSucceeded && res.Outcome != lifecycle.OutcomeNotNeeded:
		msg := fmt.Sprintf("%s ended %s", st.Action, p.Outcome)
		if p.Replace.Decision != "" {
			msg += " (" + string(p.Replace.Decision) + ")"
		}
		return fmt.Errorf("%s: %s", msg, p.Reason)
	}
	return nil
}

// jobName is the Flink job name of the streamlet's nth deployment:
// "sensors-ingest-2" for sensors/ingest.
func jobName(name string, n int) string {
	return strings.ReplaceAll(name, "/", "-") + "-" + strconv.Itoa(n)
}

func (rt *Runtime) file(name string) string {
	return filepath.Join(rt.StateDir, strings.ReplaceAll(name, "/", "~")+".json")
}

// load reads the streamlet's state file; the zero StreamletState if there
// is none.
func (rt *Runtime) load(name string) (StreamletState, error) {
	var st StreamletState
	b, err := os.ReadFile(rt.file(name))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err == nil && st.FormatVersion > StreamletFormat {
		err = fmt.Errorf("format version %d; this release reads up to %d", st.FormatVersion, StreamletFormat)
	}
	if err != nil {
		return StreamletState{}, fmt.Errorf("state file %s: %w", rt.file(name), err)
	}
	return st, nil
}

// save replaces the streamlet's state file with st.
func (rt *Runtime) save(name string, st StreamletState) error {
	st.FormatVersion = StreamletFormat
	if err := writeJSON(rt.file(name), st); err != nil {
		return fmt.Errorf("saving the state of %s: %w", name, err)
	}
	if rt.saved != nil {
		rt.saved(name, st)
	}
	return nil
}

// writeJSON replaces the file at path with v as JSON, atomically: written
// to a temporary file in the same folder, synced, renamed over path, and
// the folder synced, so that a process stopped at any point leaves the old
// file or the new one, whole.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }
