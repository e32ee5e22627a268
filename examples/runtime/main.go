package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/internal/wait"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, hooks{})
	stop()
	os.Exit(code)
}

// hooks let tests choose the cluster and watch the records stored.
type hooks struct {
	cluster *demo.Cluster                 // if set, the cluster to run on, left open; else demo.Open's
	store   func(fleet.Store) fleet.Store // if set, wraps the fleet's store
}

// The application: its streamlets and their rates (events a second).
var (
	application = "sensors"
	streamlets  = []struct {
		name string
		rate int
	}{{"ingest", 20}, {"aggregate", 60}}
	update = policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Hour),
		SavepointDeadline: policy.Duration(time.Minute), TransitionTimeout: policy.Duration(time.Minute)}
)

// steps are the versions of the application the runtime syncs one after
// the other; version 0 is none (the application removed).
var steps = []struct {
	name    string
	version int
}{{"deploy", 1}, {"upgrade", 2}, {"remove", 0}}

// run runs the runtime with the command line args, writing its steps to
// stdout and an error, if any, as one line to stderr. It returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) int {
	var cfg demo.Config
	var stateDir, metrics string
	var timeout time.Duration
	fs := flag.NewFlagSet("runtime", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	fs.StringVar(&stateDir, "state-dir", "", "folder of the restore points and of the streamlets' records; run again on it, the runtime carries on (default: a new temporary folder)")
	fs.StringVar(&metrics, "metrics", "", "file the Runner's metrics are written to after each step, in the Prometheus text format")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, "Usage: go run ./examples/runtime [flags]\n\nDeploys, upgrades and removes an application of two streaming jobs on fleet.Runner (see its package documentation).\n\nFlags:")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	case err == nil && fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case err == nil && timeout <= 0:
		err = fmt.Errorf("--timeout must be positive, got %v", timeout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runtime: %v (see --help)\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := runtime(ctx, cfg, stateDir, metrics, demo.NewPrinter(stdout), h); err != nil {
		fmt.Fprintf(stderr, "runtime: %s\n", demo.ErrorLine(err, timeout.String()))
		return 1
	}
	return 0
}

func runtime(ctx context.Context, cfg demo.Config, stateDir, metrics string, out *demo.Printer, h hooks) error {
	if stateDir == "" {
		dir, err := os.MkdirTemp("", "flinkkit-runtime-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		stateDir = dir
	} else if cfg.FlinkURL != "" && cfg.Out == "" {
		cfg.Out = filepath.Join(stateDir, "out") // the jobs' counts stay where a new run finds them
	}
	points, err := lifecycle.NewFileStore(stateDir)
	var dir *fleet.DirStore
	if err == nil {
		dir, err = fleet.NewDirStore(filepath.Join(stateDir, "streamlets"))
	}
	var recs []fleet.Record
	if err == nil {
		recs, err = dir.List(ctx)
	}
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", stateDir, err)
	}
	cl := h.cluster
	if cl == nil {
		if cfg.FlinkURL == "" && len(recs) > 0 {
			return fmt.Errorf("--state-dir %s holds the records of an earlier run on a fake JobManager, whose jobs ended with it: give a new --state-dir", stateDir)
		}
		if cl, err = demo.Open(ctx, cfg); err != nil {
			return err
		}
		defer cl.Close()
	}
	var store fleet.Store = dir
	if h.store != nil {
		store = h.store(dir)
	}
	called := make(chan struct{}, 1)
	r := &fleet.Runner{Store: store, MaxBackoff: 5 * time.Second,
		Clusters:   map[string]lifecycle.Env{"main": {Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir}},
		Controller: lifecycle.Controller{Store: points, PollInterval: cl.Timing.Poll, RetryInterval: 5 * time.Second},
		OnResult: func(fleet.Result) {
			select {
			case called <- struct{}{}:
			default:
			}
		}}
	out.Phase("cluster", "%s; restore points and records in %s", cl, stateDir)

	// The step to carry on with is the one the records show.
	first := 0
	for _, rec := range recs {
		if rec.Removed {
			first = 2
		} else if slices.Contains(rec.Spec.Job.Args, jobName(rec.Name, 2)) {
			first = max(first, 1)
		}
	}
	for i, s := range steps[first:] {
		if recs, err = store.List(ctx); err != nil {
			return err
		}
		if _, err := r.Sync(ctx, desired(cl, s.version, recs)); err != nil {
			return err
		}
		if i == 0 { // the Runner starts once the Store holds the first step's deployments
			runCtx, stopRun := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- r.Run(runCtx) }()
			defer func() { stopRun(); <-ran }()
		}
		if err := await(ctx, store, s.version, called, out.Progress, s.name); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if err := report(ctx, cl, store, points, s.name, s.version, out); err != nil {
			return err
		}
		if metrics != "" {
			if err := writeMetrics(r, metrics); err != nil {
				return err
			}
		}
	}
	return nil
}

// desired is the application's version v as the fleet's deployments; a
// streamlet whose record has that version keeps its spec (the jar of an
// earlier run had another id).
func desired(cl *demo.Cluster, v int, recs []fleet.Record) []fleet.Deployment {
	var deps []fleet.Deployment
	for _, s := range streamlets {
		name := application + "/" + s.name
		spec := lifecycle.JobSpec{Job: cl.Job(jobName(name, v), s.rate)}
		update.DeepCopyInto(&spec.Update)
		for _, rec := range recs {
			if rec.Name == name && slices.Equal(rec.Spec.Job.Args, spec.Job.Args) {
				spec = rec.Spec
			}
		}
		if v > 0 {
			deps = append(deps, fleet.Deployment{Name: name, Cluster: "main", Application: application, Spec: spec})
		}
	}
	return deps
}

// await waits until the Store holds the application's version v, each
// streamlet's job running it stably (v 0: no record left), woken by the
// Runner's calls.
func await(ctx context.Context, store fleet.Store, v int, called <-chan struct{}, progress func(string, string, time.Duration), step string) error {
	for start := time.Now(); ; {
		recs, err := store.List(ctx)
		if err != nil {
			return err
		}
		var busy *fleet.Record // the first one under way
		for i, rec := range recs {
			st := &rec.Status
			if v := st.Verdict; v == lifecycle.VerdictFailed || v == lifecycle.VerdictBlocked || v == lifecycle.VerdictInvalid {
				return fmt.Errorf("%s: %s: %s", rec.Name, st.Reason, st.Message)
			}
			if busy == nil && (v == 0 || !st.Converged(rec.Spec) || !slices.Contains(rec.Spec.Job.Args, jobName(rec.Name, v))) {
				busy = &recs[i]
			}
		}
		if busy == nil && len(recs) == min(v, 1)*len(streamlets) {
			return nil
		} else if busy != nil && busy.Status.Message != "" {
			progress(step, busy.Name+": "+busy.Status.Message, time.Since(start))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-called:
		}
	}
}

// report prints what a step did to each streamlet: the job of a version
// and what it started from, its counts a second later; the savepoint a
// removal recorded.
func report(ctx context.Context, cl *demo.Cluster, store fleet.Store, points lifecycle.RestorePointStore, step string, v int, out *demo.Printer) error {
	if v > 0 {
		if err := wait.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	for _, s := range streamlets {
		name := application + "/" + s.name
		if v == 0 {
			sp, ok, err := points.Get(ctx, name)
			if err != nil || !ok {
				return fmt.Errorf("%s: no savepoint recorded under its name (%v)", name, err)
			}
			out.Phase(step, "%s: job %s stopped; its savepoint %s recorded under its name", name, demo.Short(sp.JobID), sp.Location)
			continue
		}
		rec, _, err := store.Load(ctx, name)
		if err != nil {
			return err
		}
		st := &rec.Status
		msg := fmt.Sprintf("%s: job %s (%s) RUNNING without state", name, demo.Short(st.JobID), jobName(name, v))
		if st.UpgradeFrom.Location != "" {
			msg = strings.Replace(msg, "without state", "from the savepoint "+st.UpgradeFrom.Location, 1)
		}
		if n, ok := cl.Events(jobName(name, v)); ok {
			msg += fmt.Sprintf("; %d events", n)
		}
		if n, ok := cl.Events(jobName(name, v-1)); ok && v > 1 {
			msg += fmt.Sprintf(", version %d had counted %d", v-1, n)
		}
		out.Phase(step, "%s", msg)
	}
	return nil
}

// writeMetrics replaces file with the Runner's metrics.
func writeMetrics(r *fleet.Runner, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	err = r.WriteMetrics(f)
	return errors.Join(err, f.Close())
}

// jobName is the Flink job name of the streamlet's version v, and the
// folder of its counts: "sensors-ingest-2" for sensors/ingest.
func jobName(name string, v int) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(name, "/", "-"), v)
}
