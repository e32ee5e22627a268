package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the demo with the command line args, writing its phases to stdout
// and an error, if any, as one line to stderr. It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runner{}.run(ctx, args, stdout, stderr)
}

// Application is a set of streaming jobs, its streamlets, deployed and
// undeployed together.
type Application struct {
	Name       string
	Streamlets []Streamlet
}

// Streamlet is one streaming job of an application: flinkkit's test job
// counting Rate events a second.
type Streamlet struct {
	Name string
	Rate int
}

// Runtime deploys applications onto one Flink session cluster and
// undeploys them, addressing every streamlet by the name
// "application/streamlet". Undeploying stops each job with a savepoint that
// it records in Store under that name (lifecycle.Teardown); deploying
// restores each job from the savepoint recorded under its name, if the
// update policy finds it young enough (lifecycle.Upgrade with Store and
// Name, no Job). The jobs' state thus outlives the jobs.
type Runtime struct {
	Cluster *demo.Cluster
	Store   lifecycle.RestorePointStore
	Policy  policy.UpdatePolicy
	Out     *demo.Printer

	jobs        map[string]flinkapi.JobID // running jobs by name
	deployments map[string]int            // deployments by name, numbering the jobs
}

// Deployment is what Deploy did for one streamlet.
type Deployment struct {
	Name        string         // application/streamlet
	Job         flinkapi.JobID // the job that runs it
	JobName     string         // its Flink job name and folder of counts
	RestoreFrom string         // the savepoint it started from; empty: none
	Recorded    savepoint.Record
}

// Deploy starts every streamlet of app that is not running, each from the
// savepoint recorded under its name if there is one.
func (rt *Runtime) Deploy(ctx context.Context, app Application) ([]Deployment, error) {
	var deps []Deployment
	for _, s := range app.Streamlets {
		name := app.Name + "/" + s.Name
		if _, ok := rt.jobs[name]; ok {
			continue
		}
		rec, found, err := rt.Store.Get(ctx, name)
		if err != nil {
			return deps, fmt.Errorf("deploy %s: %w", name, err)
		}
		rt.deployments[name]++
		jobName := fmt.Sprintf("%s-%s-%d", app.Name, s.Name, rt.deployments[name])
		start := time.Now()
		var p lifecycle.Progress
		res, err := lifecycle.Run(ctx, &lifecycle.Upgrade{Env: lifecycle.Env{Client: rt.Cluster.Client, Timing: rt.Cluster.Timing}, Store: rt.Store, Name: name, FirstDeploy: !found,
			Policy: rt.Policy, JarID: rt.Cluster.JarID, Run: rt.Cluster.Run(jobName, s.Rate)}, &p, rt.Out.Report("deploy"))
		if err != nil {
			return deps, fmt.Errorf("deploy %s: %w", name, err)
		}
		if res.Outcome != lifecycle.OutcomeSucceeded {
			return deps, fmt.Errorf("deploy %s ended %s (%s): %s", name, res.Outcome, p.Decision, p.Reason)
		}
		rt.jobs[name] = p.JobID
		from := "without state (first deployment)"
		if p.RestoreFrom != "" {
			from = fmt.Sprintf("from its savepoint %s (%s old)", p.RestoreFrom, demo.Seconds(start.Sub(rec.Time)))
		}
		rt.Out.Phase("deploy", "%s: job %s (%s) RUNNING %s after %s", name, demo.Short(p.JobID), jobName, from, demo.Seconds(time.Since(start)))
		deps = append(deps, Deployment{Name: name, Job: p.JobID, JobName: jobName, RestoreFrom: p.RestoreFrom, Recorded: rec})
	}
	return deps, nil
}

// Undeploy stops every running streamlet of app with a savepoint, recorded
// under the streamlet's name for the next Deploy.
func (rt *Runtime) Undeploy(ctx context.Context, app Application) (map[string]savepoint.Record, error) {
	recs := map[string]savepoint.Record{}
	for _, s := range app.Streamlets {
		name := app.Name + "/" + s.Name
		job, ok := rt.jobs[name]
		if !ok {
			continue
		}
		start := time.Now()
		var p lifecycle.Progress
		res, err := lifecycle.Run(ctx, &lifecycle.Teardown{Env: lifecycle.Env{Client: rt.Cluster.Client, Timing: rt.Cluster.Timing, TargetDirectory: rt.Cluster.SavepointDir}, Job: job, Store: rt.Store, Name: name}, &p, rt.Out.Report("undeploy"))
		if err != nil {
			return recs, fmt.Errorf("undeploy %s: %w", name, err)
		}
		if res.Outcome != lifecycle.OutcomeSucceeded || !p.Recorded {
			return recs, fmt.Errorf("undeploy %s ended %s: %s", name, res.Outcome, p.Reason)
		}
		delete(rt.jobs, name)
		rec, _ := p.Record()
		recs[name] = rec
		rt.Out.Phase("undeploy", "%s: job %s stopped after %s; its savepoint %s recorded under its name", name, demo.Short(job),
			demo.Seconds(time.Since(start)), p.Location)
	}
	return recs, nil
}

// runner runs the demo; its hook lets tests look at what happened.
type runner struct {
	onDone func(result, *demo.Cluster)
}

// result is what the demo did.
type result struct {
	First, Second []Deployment                // the deployments before and after the undeploy
	Undeployed    map[string]savepoint.Record // the first undeploy's savepoints by name
	Final         map[string]savepoint.Record // the last undeploy's
	Store         lifecycle.RestorePointStore
}

// sensors is the demo's application: two streamlets counting at different
// rates.
var sensors = Application{Name: "sensors", Streamlets: []Streamlet{{Name: "ingest", Rate: 20}, {Name: "aggregate", Rate: 60}}}

const usageText = `Usage: go run ./examples/runtime [flags]

Runs a Cloudflow-style runtime with flinkkit: an application of two
streaming jobs (streamlets) is deployed, undeployed and redeployed by name,
each streamlet keeping its state across the undeploy in a restore-point store
(lifecycle.FileStore): the undeploy records each job's final savepoint under
"application/streamlet", the redeploy restores each job from its own.

Without --flink-url it runs against flinkkit's fake JobManager (package
flinktest) in real time and needs nothing else. With --flink-url and --jar it
runs flinkkit's test job (internal/testjob) on a real Flink session cluster
with two free task slots.

Flags:
`

func (r runner) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg demo.Config
	var stateDir string
	var timeout time.Duration
	fs := flag.NewFlagSet("runtime", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	fs.StringVar(&stateDir, "state-dir", "", "folder of the restore-point store, one JSON file per streamlet (default: a new temporary folder)")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "runtime: %v (see --help)\n", err)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "runtime: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	case timeout <= 0:
		fmt.Fprintf(stderr, "runtime: --timeout must be positive, got %v\n", timeout)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.demo(ctx, cfg, stateDir, demo.NewPrinter(stdout)); err != nil {
		fmt.Fprintf(stderr, "runtime: %s\n", demo.ErrorLine(err, timeout.String()))
		return 1
	}
	return 0
}

func (r runner) demo(ctx context.Context, cfg demo.Config, stateDir string, out *demo.Printer) error {
	begin := time.Now()
	if stateDir == "" {
		dir, err := os.MkdirTemp("", "flinkkit-runtime-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		stateDir = dir
	}
	store, err := lifecycle.NewFileStore(stateDir)
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", stateDir, err)
	}
	cl, err := demo.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	out.Phase("cluster", "%s, jar uploaded; restore points in %s", cl, stateDir)
	rt := &Runtime{Cluster: cl, Store: store, Out: out,
		Policy: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Hour),
			SavepointDeadline: policy.Duration(time.Minute), TransitionTimeout: policy.Duration(time.Minute)},
		jobs: map[string]flinkapi.JobID{}, deployments: map[string]int{}}
	res := result{Store: store}

	if res.First, err = rt.Deploy(ctx, sensors); err != nil {
		return err
	}
	if err := counting(ctx, cl, res.First, nil, out); err != nil {
		return err
	}
	if res.Undeployed, err = rt.Undeploy(ctx, sensors); err != nil {
		return err
	}
	if res.Second, err = rt.Deploy(ctx, sensors); err != nil {
		return err
	}
	if err := counting(ctx, cl, res.Second, res.First, out); err != nil {
		return err
	}
	if res.Final, err = rt.Undeploy(ctx, sensors); err != nil {
		return err
	}
	out.Phase("done", "in %s", demo.Seconds(time.Since(begin)))
	if r.onDone != nil {
		r.onDone(res, cl)
	}
	return nil
}

// counting waits until the jobs of deps count, and prints what each was
// restored from (as Flink reports it) and how its counts carry on from the
// deployment before it, if any.
func counting(ctx context.Context, cl *demo.Cluster, deps, before []Deployment, out *demo.Printer) error {
	for i, d := range deps {
		start := time.Now()
		if err := cl.WaitTasks(ctx, d.Job, time.Minute, func(e time.Duration) {
			out.Progress("running", fmt.Sprintf("%s: job %s is RUNNING; waiting for its tasks to run", d.Name, demo.Short(d.Job)), e)
		}); err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		// Let it count for a while.
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			if _, ok := cl.Events(d.JobName); ok && time.Since(start) > time.Second {
				break
			}
			if err := sleepCtx(ctx, cl.Timing.Poll); err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("%s: job %s (%s) counts", d.Name, demo.Short(d.Job), d.JobName)
		if d.RestoreFrom != "" {
			rc, err := cl.WaitRestored(ctx, d.Job, time.Minute)
			if err != nil {
				return fmt.Errorf("%s: %w", d.Name, err)
			}
			msg += "; Flink reports it restored from " + rc.ExternalPath
		}
		if now, ok := cl.Events(d.JobName); ok {
			msg += fmt.Sprintf("; %d events", now)
			if before != nil {
				if prev, ok := cl.Events(before[i].JobName); ok {
					msg += fmt.Sprintf(", %s had counted %d", before[i].JobName, prev)
				}
			}
		}
		out.Phase("running", "%s", msg)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
