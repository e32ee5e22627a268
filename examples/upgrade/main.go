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
	"strconv"
	"strings"
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

// jobName is the name the Controller keeps the job under: its status
// file is <state-dir>/counter.json, and its final savepoint is recorded
// under it in the restore-point store.
const jobName = "counter"

// options are the command line's settings.
type options struct {
	cluster  demo.Config
	stateDir string
	interval time.Duration
	timeout  time.Duration
}

// runner runs the demo; its hooks let tests look at the fake JobManager.
type runner struct {
	// onDone, if set, is called with what the demo did before the cluster
	// is closed.
	onDone func(result, *demo.Cluster)
}

// result is what the demo did, as the job's status recorded it.
type result struct {
	First, Upgraded, Restarted flinkapi.JobID
	Periodic                   savepoint.Record   // the periodic savepoint of the first job
	UpgradeFrom                savepoint.Record   // the savepoint the upgrade stopped the first job with
	RestartFrom                string             // what the restart restored the job from
	RestartKind                policy.RestoreKind // Savepoint or Checkpoint
	Final                      savepoint.Record   // the Delete's final savepoint, as the store keeps it
	StatusFile                 string             // the file of the job's status
	Status                     lifecycle.JobStatus
}

const usageText = `Usage: go run ./examples/upgrade [flags]

Keeps one Flink job as its spec says with flinkkit's job controller
(lifecycle.Controller), one line per phase: each phase changes the job's spec
and runs the controller until the job runs as the spec says
(Controller.Converge), saving the job's status to a file after every call
(lifecycle.StatusFile). The phases: deploy the job; a periodic savepoint;
upgrade it to new arguments, which the controller does with a
stop-with-savepoint, the new job restored from it; the job fails and the
controller restarts it from its newest state; delete it, its final savepoint
kept under the job's name (lifecycle.FileStore).

Without --flink-url it runs against flinkkit's fake JobManager (package
flinktest) in real time and needs nothing else. With --flink-url and --jar it
runs flinkkit's test job (internal/testkit/testjob) on a real Flink session cluster;
the upgraded job is started with --fail-at and --fail-once so that it fails
by itself, once.

Flags:
`

func (r runner) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.cluster.RegisterFlags(fs)
	fs.StringVar(&o.stateDir, "state-dir", "", "folder of the job's status file (counter.json) and of the restore-point store (restore-points/) (default: a new temporary folder)")
	fs.DurationVar(&o.interval, "savepoint-interval", 3*time.Second, "interval of the periodic savepoint the spec asks for, counted from the job's start and its latest savepoint")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "upgrade: %v (see --help)\n", err)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "upgrade: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	case o.interval <= 0:
		fmt.Fprintf(stderr, "upgrade: --savepoint-interval must be positive, got %v\n", o.interval)
		return 2
	case o.timeout <= 0:
		fmt.Fprintf(stderr, "upgrade: --timeout must be positive, got %v\n", o.timeout)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := r.demo(ctx, o, demo.NewPrinter(stdout)); err != nil {
		fmt.Fprintf(stderr, "upgrade: %s\n", demo.ErrorLine(err, o.timeout.String()))
		return 1
	}
	return 0
}

// session is the controller of the demo's job and where its status is
// kept.
type session struct {
	ctrl *lifecycle.Controller
	file *lifecycle.StatusFile
	st   lifecycle.JobStatus
	out  *demo.Printer
	// ended is the status as it was when the last action of each kind
	// ended.
	ended map[lifecycle.JobAction]lifecycle.JobStatus
}

// converge runs the controller until the job runs as spec says, showing
// the status's message after every call as the progress of phase name.
func (s *session) converge(ctx context.Context, name string, spec lifecycle.JobSpec) error {
	start := time.Now()
	err := s.ctrl.Converge(ctx, spec, &s.st, s.save(name, start))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// until runs the controller until done says so, saving the status after
// every call; an action that ends without success is an error.
func (s *session) until(ctx context.Context, name string, spec lifecycle.JobSpec, done func(*lifecycle.JobStatus) bool) error {
	save := s.save(name, time.Now())
	for {
		res, err := s.ctrl.Reconcile(ctx, spec, &s.st)
		if serr := save(&s.st); serr != nil {
			return fmt.Errorf("%s: %w", name, errors.Join(err, serr))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if res.Outcome != "" && res.Outcome != lifecycle.OutcomeSucceeded && res.Outcome != lifecycle.OutcomeNotNeeded {
			return fmt.Errorf("%s: %w", name, &lifecycle.ActionError{Action: s.st.Action, Outcome: res.Outcome, Reason: s.st.Progress.Reason})
		}
		if done(&s.st) {
			return nil
		}
		if err := sleep(ctx, res.RequeueAfter); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// save returns the save function of phase name: it stores the status in
// its file and shows its message as the phase's progress.
func (s *session) save(name string, start time.Time) func(*lifecycle.JobStatus) error {
	return func(st *lifecycle.JobStatus) error {
		if err := s.file.Save(st); err != nil {
			return err
		}
		if st.Action != "" && !st.InFlight() {
			s.ended[st.Action] = *st.DeepCopy()
		}
		msg := string(st.Situation)
		if st.InFlight() {
			msg += ", " + string(st.Action) + " " + string(st.Progress.Phase)
		}
		if st.Message != "" {
			msg += ": " + st.Message
		}
		s.out.Progress(name, msg, time.Since(start))
		return nil
	}
}

// status says in a few words what the status records: where the job
// stood at the last call (Situation), the last action and how it ended,
// and the restore point: the state the action started the job from, or
// else the newest savepoint.
func status(st *lifecycle.JobStatus) string {
	s := fmt.Sprintf("status: %s", st.Situation)
	if st.Action != "" {
		s += fmt.Sprintf(", %s %s", st.Action, st.Progress.Outcome)
	}
	point := "none"
	switch {
	case st.Action == lifecycle.ActionDeploy || st.Action == lifecycle.ActionUpgrade || st.Action == lifecycle.ActionRestart:
		if st.Progress.Replace.RestoreFrom != "" {
			point = strings.ToLower(string(st.Progress.Replace.RestoreKind)) + " " + st.Progress.Replace.RestoreFrom
		}
	case st.Latest.Location != "":
		point = "savepoint " + st.Latest.Location
	}
	return s + ", restore point " + point
}

// statusOf is status of the phase whose action is a: the status when a
// ended, with the situation of the last call, and the action that ended
// after it, if another one did (a periodic savepoint).
func (s *session) statusOf(a lifecycle.JobAction) string {
	st, ok := s.ended[a]
	if !ok {
		return status(&s.st)
	}
	st.Situation = s.st.Situation
	line := status(&st)
	if s.st.Action != a {
		line += fmt.Sprintf("; then %s %s", s.st.Action, s.st.Progress.Outcome)
	}
	return line
}

// demo runs the phases.
func (r runner) demo(ctx context.Context, o options, out *demo.Printer) error {
	begin := time.Now()
	cl, err := demo.Open(ctx, o.cluster)
	if err != nil {
		return err
	}
	defer cl.Close()

	dir := o.stateDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flinkkit-upgrade-"); err != nil {
			return err
		}
	}
	store, err := lifecycle.NewFileStore(filepath.Join(dir, "restore-points"))
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", dir, err)
	}
	file, err := lifecycle.OpenStatusFile(filepath.Join(dir, jobName+".json"))
	if err != nil {
		return fmt.Errorf("--state-dir %s: %w", dir, err)
	}
	defer file.Close()
	s := &session{ended: map[lifecycle.JobAction]lifecycle.JobStatus{}, file: file, out: out, ctrl: &lifecycle.Controller{
		Env:   lifecycle.Env{Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir},
		Store: store, Name: jobName, PollInterval: cl.Timing.Poll, RetryInterval: 5 * time.Second,
	}}
	if st, ok, err := file.Load(); err != nil {
		return err
	} else if ok && !st.Deleted {
		return fmt.Errorf("--state-dir %s: the status in %s records a job that was not deleted (%s): use another --state-dir", dir, file.Path(), st.JobID)
	} else {
		s.st = st // a job deleted before is deployed anew from the savepoint kept under its name
	}
	out.Phase("cluster", "%s, jar uploaded; the job's status in %s", cl, file.Path())
	var res result
	res.StatusFile = file.Path()

	// Deploy: the spec names the job and the policies of its updates and
	// restarts.
	start := time.Now()
	spec := lifecycle.JobSpec{
		Job: cl.Job("counter-v1", 0),
		Update: policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Hour),
			SavepointDeadline: policy.Duration(time.Minute), TransitionTimeout: policy.Duration(time.Minute)},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxRestarts: 3, Window: policy.Duration(time.Hour),
			Backoff: policy.Duration(time.Second), MaxStateAge: policy.Duration(time.Hour), TransitionTimeout: policy.Duration(time.Minute)},
	}
	if err := s.converge(ctx, "deploy", spec); err != nil {
		return err
	}
	res.First = s.st.JobID
	running := s.st.DeployedAt
	out.Phase("deploy", "job %s (counter-v1) RUNNING stably after %s; %s",
		demo.Short(res.First), demo.Seconds(time.Since(start)), s.statusOf(lifecycle.ActionDeploy))

	// A periodic savepoint: the spec asks for one every interval.
	start = time.Now()
	spec.Savepoints = lifecycle.SavepointPolicy{Interval: policy.Duration(o.interval)}
	if err := s.until(ctx, "savepoint", spec, func(st *lifecycle.JobStatus) bool {
		return st.Latest.Location != "" && !st.InFlight() && st.Situation == lifecycle.SituationRunning
	}); err != nil {
		return err
	}
	res.Periodic = s.st.Latest
	out.Phase("savepoint", "%s savepoint of job %s after %s (every %v from the job's start and its latest savepoint); %s",
		strings.ToLower(string(res.Periodic.Reason)), demo.Short(res.First), demo.Seconds(time.Since(start)), o.interval, s.statusOf(lifecycle.ActionSavepoint))

	// Upgrade: new arguments. On a real cluster the new version fails by
	// itself (--fail-at, once: --fail-once) about ten seconds after it
	// starts: the first version counted at most Rate/Keys a second per
	// key, and the new one continues from there.
	v2 := cl.Job("counter-v2", 0)
	var failAt int
	if cl.Fake == nil {
		failAt = demo.Rate / demo.Keys * (int(time.Since(running).Seconds()) + 10)
		v2.Args = append(v2.Args, "--fail-at", strconv.Itoa(failAt), "--fail-once", "true", "--restart-attempts", "0")
	}
	spec.Job = v2
	plan, err := s.ctrl.Plan(ctx, spec, s.st)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	out.Phase("plan", "%s", plan)
	start = time.Now()
	if err := s.converge(ctx, "upgrade", spec); err != nil {
		return err
	}
	res.Upgraded, res.UpgradeFrom = s.st.JobID, s.st.UpgradeFrom
	out.Phase("upgrade", "job %s stopped with a savepoint, job %s (counter-v2) RUNNING stably from it after %s; %s",
		demo.Short(res.First), demo.Short(res.Upgraded), demo.Seconds(time.Since(start)), s.statusOf(lifecycle.ActionUpgrade))
	before, _ := cl.Events("counter-v1")
	if err := showRestored(ctx, cl, res.Upgraded, "counter-v1", before, "counter-v2", res.UpgradeFrom.Location, out); err != nil {
		return err
	}

	// The job fails.
	start = time.Now()
	how := fmt.Sprintf("it fails when a key's count reaches %d (--fail-at, --fail-once: once per --out folder)", failAt)
	if cl.Fake != nil {
		how = "failed by flinktest's Server.FailJob, no restart attempts"
		// Fail it once it has a checkpoint, which the restart can use.
		if err := cl.WaitCheckpoint(ctx, res.Upgraded, time.Minute, func(d time.Duration) {
			out.Progress("fail", fmt.Sprintf("job %s is RUNNING; waiting for its first checkpoint", demo.Short(res.Upgraded)), d)
		}); err != nil {
			return err
		}
		if err := cl.Fake.FailJob(res.Upgraded, "java.lang.IllegalStateException: failure injected by the demo"); err != nil {
			return fmt.Errorf("failing job %s: %w", res.Upgraded, err)
		}
	}
	err = cl.WaitState(ctx, res.Upgraded, flinkapi.JobFailed, 2*time.Minute, func(st flinkapi.JobState, d time.Duration) {
		out.Progress("fail", fmt.Sprintf("job %s is %s; %s", demo.Short(res.Upgraded), st, how), d)
	})
	if err != nil {
		return err
	}
	out.Phase("fail", "job %s FAILED after %s: %s", demo.Short(res.Upgraded), demo.Seconds(time.Since(start)), cl.WaitFailureCause(ctx, res.Upgraded))
	before, _ = cl.Events("counter-v2")

	// Restart: the spec is unchanged; the controller finds the job failed
	// and restarts it under the restart policy from its newest state.
	start = time.Now()
	if err := s.converge(ctx, "restart", spec); err != nil {
		return err
	}
	rs := s.ended[lifecycle.ActionRestart]
	res.Restarted = s.st.JobID
	res.RestartFrom, res.RestartKind = rs.Progress.Replace.RestoreFrom, rs.Progress.Replace.RestoreKind
	if _, ok := s.ended[lifecycle.ActionRestart]; !ok || res.Restarted == res.Upgraded {
		return fmt.Errorf("restart: the controller did not restart the job: %s (%s)", status(&s.st), s.st.Message)
	}
	out.Phase("restart", "%s: job %s (counter-v2) RUNNING stably from the newest state after %s, restart %d of %d within %v; %s",
		rs.Progress.Replace.Decision, demo.Short(res.Restarted), demo.Seconds(time.Since(start)), s.st.Restarts, spec.Restart.MaxRestarts, spec.Restart.Window, s.statusOf(lifecycle.ActionRestart))
	if err := showRestored(ctx, cl, res.Restarted, "the failed job", before, "counter-v2", res.RestartFrom, out); err != nil {
		return err
	}

	// Delete: a final savepoint, kept in the store under the job's name.
	start = time.Now()
	save := s.save("delete", start)
	for {
		r, err := s.ctrl.Delete(ctx, spec, &s.st)
		if serr := save(&s.st); serr != nil {
			return fmt.Errorf("delete: %w", errors.Join(err, serr))
		}
		if err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		if r.Done {
			break
		}
		if err := sleep(ctx, r.RequeueAfter); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
	}
	rec, ok, err := store.Get(ctx, jobName)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if !ok || s.st.Progress.Outcome != lifecycle.OutcomeSucceeded {
		return fmt.Errorf("delete: %s (%s): nothing kept under %q", status(&s.st), s.st.Progress.Reason, jobName)
	}
	res.Final = rec
	out.Phase("delete", "job %s stopped with a final savepoint after %s, kept under %q: %s; %s",
		demo.Short(res.Restarted), demo.Seconds(time.Since(start)), jobName, rec.Location, s.statusOf(lifecycle.ActionTeardown))
	out.Phase("done", "in %s", demo.Seconds(time.Since(begin)))
	res.Status = s.st
	if r.onDone != nil {
		r.onDone(res, cl)
	}
	return nil
}
