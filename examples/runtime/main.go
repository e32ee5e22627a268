package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/internal/wait"
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

// runner runs the demo; its fields let tests choose the cluster and look
// at what happened.
type runner struct {
	cluster *demo.Cluster      // if set, the cluster to run on, left open; else demo.Open's
	onSave  func(fleet.Record) // called after every record the fleet stores
	onDone  func(result, *demo.Cluster)
}

// result is what the demo did.
type result struct {
	First, Second []Deployment                // the deployments before and after the undeploy, if this run did them
	Undeployed    map[string]savepoint.Record // the first undeploy's savepoints by name, likewise
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
"application/streamlet", the redeploy restores each job from its own. Each
streamlet is a deployment of a fleet.Runner whose record is saved
in --state-dir after every step: interrupted (Ctrl-C) and run again with the
same --state-dir, the runtime carries on where it stopped, and run again
after it finished, it deploys the application anew from the last undeploy's
savepoints. With --state-dir on a real cluster, the jobs write their counts
under <state-dir>/out unless --out says otherwise.

Without --flink-url it runs against flinkkit's fake JobManager (package
flinktest) in real time and needs nothing else. With --flink-url and --jar it
runs flinkkit's test job (internal/testkit/testjob) on a real Flink session cluster
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
	fs.StringVar(&stateDir, "state-dir", "", "folder of the restore-point store and of the fleet's records, one JSON file per streamlet; run again on it, the runtime carries on (default: a new temporary folder)")
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

// demoFormat is the format version of the demo's position file.
const demoFormat = 1

// position is the demo's position file, <state-dir>/demo.json: the next
// step of a run that was interrupted, and the number of the application's
// last deployment.
type position struct {
	FormatVersion int `json:"formatVersion"`
	Step          int `json:"step"`
	Deployment    int `json:"deployment,omitempty"`
	// Numbered says that the deploy of Step has its number, Deployment.
	Numbered bool `json:"numbered,omitempty"`
}

func (r runner) demo(ctx context.Context, cfg demo.Config, stateDir string, out *demo.Printer) error {
	begin := time.Now()
	if stateDir != "" && cfg.FlinkURL != "" && cfg.Out == "" {
		// The deployments' specs name the folder of their counts: one
		// that stays where it is when the runtime is started again.
		cfg.Out = filepath.Join(stateDir, "out")
	}
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
	posFile := filepath.Join(stateDir, "demo.json")
	pos, err := readPosition(posFile)
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", stateDir, err)
	}
	rt := &Runtime{Store: store, StateDir: filepath.Join(stateDir, "streamlets"), Out: out,
		Policy: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Hour),
			SavepointDeadline: policy.Duration(time.Minute), TransitionTimeout: policy.Duration(time.Minute)},
		saved: r.onSave}
	cl := r.cluster
	if cl == nil {
		if cfg.FlinkURL == "" {
			// A new fake JobManager knows none of the jobs and savepoints
			// of an earlier run's.
			if recs, err := listRecords(ctx, rt.StateDir); err != nil {
				return fmt.Errorf("--state-dir %s: %w", stateDir, err)
			} else if len(recs) > 0 {
				return fmt.Errorf("--state-dir %s holds the state of an earlier run on a fake JobManager, whose jobs and savepoints ended with it: "+
					"give a new --state-dir, or carry on on a real cluster (--flink-url)", stateDir)
			}
		}
		if cl, err = demo.Open(ctx, cfg); err != nil {
			return err
		}
		defer cl.Close()
	}
	rt.Cluster = cl
	out.Phase("cluster", "%s, jar uploaded; restore points and statuses in %s", cl, stateDir)
	res := result{Store: store}
	steps := []struct {
		name string
		do   func() error
	}{
		{"deploy", func() (err error) {
			if res.First, err = rt.Deploy(ctx, sensors, pos.Deployment); err != nil {
				return err
			}
			return counting(ctx, cl, res.First, out)
		}},
		{"undeploy", func() (err error) { res.Undeployed, err = rt.Undeploy(ctx, sensors); return err }},
		{"redeploy", func() (err error) {
			if res.Second, err = rt.Deploy(ctx, sensors, pos.Deployment); err != nil {
				return err
			}
			return counting(ctx, cl, res.Second, out)
		}},
		{"undeploy", func() (err error) { res.Final, err = rt.Undeploy(ctx, sensors); return err }},
	}
	if pos.Step >= len(steps) {
		pos.Step = 0
	}
	if pos.Step > 0 {
		out.Phase("resume", "the last run stopped in step %d of %d (%s); carrying on from the statuses it saved", pos.Step+1, len(steps), steps[pos.Step].name)
	}
	for i := pos.Step; i < len(steps); i++ {
		if steps[i].name != "undeploy" && !pos.Numbered {
			// A deploy begins: the application's next deployment, its
			// number written before any of its jobs is.
			pos.Deployment, pos.Numbered = pos.Deployment+1, true
			if err := writePosition(posFile, pos); err != nil {
				return fmt.Errorf("saving the demo's position: %w", err)
			}
		}
		if err := steps[i].do(); err != nil {
			return err
		}
		// Done with the last step: a run on the same --state-dir starts
		// from the first step again, deploying anew from the last
		// undeploy's savepoints.
		pos.Step, pos.Numbered = (i+1)%len(steps), false
		if err := writePosition(posFile, pos); err != nil {
			return fmt.Errorf("saving the demo's position: %w", err)
		}
	}
	out.Phase("done", "in %s", demo.Seconds(time.Since(begin)))
	if r.onDone != nil {
		r.onDone(res, cl)
	}
	return nil
}

// listRecords lists the fleet's records in dir, if there is such a
// folder.
func listRecords(ctx context.Context, dir string) ([]fleet.Record, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	s, err := fleet.NewDirStore(dir)
	if err != nil {
		return nil, err
	}
	return s.List(ctx)
}

// writePosition replaces the position file with pos: a new file renamed
// over it.
func writePosition(file string, pos position) error {
	pos.FormatVersion = demoFormat
	b, err := json.Marshal(pos)
	if err == nil {
		err = os.WriteFile(file+".tmp", b, 0o644)
	}
	if err == nil {
		err = os.Rename(file+".tmp", file)
	}
	return err
}

// readPosition reads the demo's position file; step 0 if there is none.
func readPosition(file string) (position, error) {
	var pos position
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return pos, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &pos)
	}
	if err == nil && (pos.FormatVersion > demoFormat || pos.Step < 0) {
		err = fmt.Errorf("format version %d, step %d: not written by this release", pos.FormatVersion, pos.Step)
	}
	if err != nil {
		return position{}, fmt.Errorf("%s: %w", file, err)
	}
	return pos, nil
}

// counting lets the jobs of deps count for a moment, and prints what each
// was restored from (as Flink reports it) and how its counts carry on from
// the deployment before it, if any.
func counting(ctx context.Context, cl *demo.Cluster, deps []Deployment, out *demo.Printer) error {
	for _, d := range deps {
		start := time.Now()
		for deadline := start.Add(2 * time.Second); time.Now().Before(deadline); {
			if _, ok := cl.Events(d.JobName); ok && time.Since(start) > time.Second {
				break
			}
			out.Progress("running", fmt.Sprintf("%s: job %s (%s) counts", d.Name, demo.Short(d.Job), d.JobName), time.Since(start))
			if err := wait.Sleep(ctx, cl.Timing.Poll); err != nil {
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
			if d.Number > 1 {
				before := jobName(d.Name, d.Number-1)
				if prev, ok := cl.Events(before); ok {
					msg += fmt.Sprintf(", %s had counted %d", before, prev)
				}
			}
		}
		out.Phase("running", "%s", msg)
	}
	return nil
}
