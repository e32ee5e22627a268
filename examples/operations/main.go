package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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

// options are the command line's settings.
type options struct {
	cluster  demo.Config
	interval time.Duration
	timeout  time.Duration
}

// runner runs the demo; its hooks let tests look at the fake JobManager.
type runner struct {
	// onDone, if set, is called with what the demo did before the cluster
	// is closed.
	onDone func(result, *demo.Cluster)
}

// result is what the demo did.
type result struct {
	First, Upgraded, Restarted flinkapi.JobID
	Periodic                   savepoint.Record   // the periodic savepoint
	Upgrade                    savepoint.Record   // the upgrade's stop-with-savepoint
	RestartFrom                string             // what the restart restored from
	RestartKind                policy.RestoreKind // Savepoint or Checkpoint
	Final                      string             // the teardown's savepoint
}

const usageText = `Usage: go run ./examples/operations [flags]

Runs the lifecycle of a Flink job with the single operations of flinkkit's
package lifecycle, each called on its own, one line per phase: submit
the job, take a periodic savepoint, upgrade it with a stop-with-savepoint
and restore the new job from that savepoint, make the job fail, restart it
from its latest state under a restart policy, and stop it with a final
savepoint. (examples/upgrade does the same with lifecycle.Controller,
which chooses these operations itself.)

Without --flink-url it runs against flinkkit's fake JobManager (package
flinktest) in real time and needs nothing else. With --flink-url and --jar it
runs flinkkit's test job (internal/testkit/testjob) on a real Flink session cluster;
the upgraded job is started with --fail-at so that it fails by itself.

Flags:
`

func (r runner) run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("operations", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.cluster.RegisterFlags(fs)
	fs.DurationVar(&o.interval, "savepoint-interval", 3*time.Second, "interval of the periodic savepoint, counted from the job's start")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "operations: %v (see --help)\n", err)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "operations: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	case o.interval <= 0:
		fmt.Fprintf(stderr, "operations: --savepoint-interval must be positive, got %v\n", o.interval)
		return 2
	case o.timeout <= 0:
		fmt.Fprintf(stderr, "operations: --timeout must be positive, got %v\n", o.timeout)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := r.demo(ctx, o, demo.NewPrinter(stdout)); err != nil {
		fmt.Fprintf(stderr, "operations: %s\n", demo.ErrorLine(err, o.timeout.String()))
		return 1
	}
	return 0
}

// demo runs the phases.
func (r runner) demo(ctx context.Context, o options, out *demo.Printer) error {
	begin := time.Now()
	cl, err := demo.Open(ctx, o.cluster)
	if err != nil {
		return err
	}
	defer cl.Close()
	out.Phase("cluster", "%s, jar uploaded", cl)
	var res result

	// Submit the first version of the job.
	start := time.Now()
	var sub lifecycle.Progress
	if err := runOp(ctx, "submit", &lifecycle.Submit{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing}, JarID: cl.JarID, Run: cl.Run("counter-v1")},
		&sub, out); err != nil {
		return err
	}
	res.First = sub.JobID
	running := time.Now()
	out.Phase("submit", "job %s (counter-v1) RUNNING after %s", demo.Short(res.First), demo.Seconds(time.Since(start)))

	// A periodic savepoint, when the schedule says it is due.
	if res.Periodic, err = periodicSavepoint(ctx, cl, res.First, running, o.interval, out); err != nil {
		return err
	}

	// Upgrade to the second version with a stop-with-savepoint. On a real
	// cluster the new version fails by itself (--fail-at) about ten seconds
	// after it starts: the first version counted at most Rate/Keys a second
	// per key, and the new one continues from there.
	var fault []string
	if cl.Fake == nil {
		perKey := demo.Rate / demo.Keys
		failAt := perKey * (int(time.Since(running).Seconds()) + 10)
		fault = []string{"--fail-at", strconv.Itoa(failAt), "--restart-attempts", "0"}
	}
	start = time.Now()
	update := policy.UpdatePolicy{Mode: policy.UpgradeSavepoint, MaxStateAge: policy.Duration(time.Hour),
		SavepointDeadline: policy.Duration(time.Minute), TransitionTimeout: policy.Duration(time.Minute)}
	var up lifecycle.Progress
	if err := runOp(ctx, "upgrade", &lifecycle.Upgrade{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir}, Job: res.First, Policy: update, Latest: res.Periodic,
		JarID: cl.JarID, Run: cl.Run("counter-v2", fault...)},
		&up, out); err != nil {
		return err
	}
	res.Upgraded = up.JobID
	res.Upgrade, _ = up.Record()
	out.Phase("upgrade", "job %s stopped with savepoint %s (%s); job %s (counter-v2) RUNNING from it after %s",
		demo.Short(res.First), up.Savepoint.Location, up.Stop.Strategy, demo.Short(res.Upgraded), demo.Seconds(time.Since(start)))
	if err := showRestored(ctx, cl, res.Upgraded, "counter-v1", "counter-v2", up.Replace.RestoreFrom, out); err != nil {
		return err
	}

	// The job fails.
	start = time.Now()
	var how string
	if len(fault) > 1 {
		how = "it fails when a key's count reaches " + fault[1]
	}
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

	// The restart policy restores it from its latest state.
	start = time.Now()
	restart := policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxRestarts: 3, Window: policy.Duration(time.Hour),
		Backoff: policy.Duration(time.Second), MaxStateAge: policy.Duration(time.Hour), TransitionTimeout: policy.Duration(time.Minute)}
	var rs lifecycle.Progress
	if err := runOp(ctx, "restart", &lifecycle.Restart{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing}, Job: res.Upgraded, Policy: restart, Latest: res.Upgrade,
		JarID: cl.JarID, Run: cl.Run("counter-v2-restarted")}, &rs, out); err != nil {
		return err
	}
	res.Restarted, res.RestartFrom, res.RestartKind = rs.JobID, rs.Replace.RestoreFrom, rs.Replace.RestoreKind
	stateTime := rs.Replace.Observed.Latest.Time
	if rs.Replace.RestoreKind == policy.KindCheckpoint {
		stateTime = rs.Replace.Observed.CheckpointTime
	}
	n := restart.CountRestart(0, time.Time{}, time.Now())
	out.Phase("restart", "%s: job %s (counter-v2-restarted) RUNNING from %s %s, the newest state (%s old), after %s; restart %d of %d within %v",
		rs.Replace.Decision, demo.Short(res.Restarted), strings.ToLower(string(rs.Replace.RestoreKind)), rs.Replace.RestoreFrom,
		demo.Seconds(start.Sub(stateTime)), demo.Seconds(time.Since(start)), n, restart.MaxRestarts, restart.Window)
	if err := showRestored(ctx, cl, res.Restarted, "counter-v2", "counter-v2-restarted", rs.Replace.RestoreFrom, out); err != nil {
		return err
	}

	// Stop it for good with a final savepoint.
	start = time.Now()
	var td lifecycle.Progress
	if err := runOp(ctx, "teardown", &lifecycle.Teardown{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir}, Job: res.Restarted}, &td, out); err != nil {
		return err
	}
	res.Final = td.Savepoint.Location
	out.Phase("teardown", "job %s stopped with a final savepoint %s after %s", demo.Short(res.Restarted), td.Savepoint.Location, demo.Seconds(time.Since(start)))
	out.Phase("done", "in %s", demo.Seconds(time.Since(begin)))
	if r.onDone != nil {
		r.onDone(res, cl)
	}
	return nil
}

// runOp runs a lifecycle operation to its end, showing its progress as
// phase name, and fails unless it succeeded.
func runOp(ctx context.Context, name string, op lifecycle.Stepper, p *lifecycle.Progress, out *demo.Printer) error {
	res, err := lifecycle.Run(ctx, op, p, out.Report(name))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if res.Outcome != lifecycle.OutcomeSucceeded {
		return fmt.Errorf("%s ended %s: %s", name, res.Outcome, p.Reason)
	}
	return nil
}

// periodicSavepoint waits until savepoint.Due says the periodic savepoint
// of job is due and takes it; a failed savepoint is tried again when the
// schedule says so, up to three times.
func periodicSavepoint(ctx context.Context, cl *demo.Cluster, job flinkapi.JobID, started time.Time, interval time.Duration, out *demo.Printer) (savepoint.Record, error) {
	in := savepoint.ScheduleInput{Interval: interval, JobStart: started}
	wait := time.Now()
	for attempt := 1; ; {
		st, err := cl.Client.JobStatus(ctx, job)
		if err != nil {
			return savepoint.Record{}, fmt.Errorf("savepoint: job %s: %w", job, err)
		}
		in.JobState = st
		due, reason, next := savepoint.Due(in, time.Now())
		if due {
			// The job is RUNNING before its tasks are, and a savepoint
			// fails until they run.
			ok, err := cl.TasksRunning(ctx, job)
			if err == nil && ok {
				var p lifecycle.Progress
				start := time.Now()
				res, err := lifecycle.Run(ctx, &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: cl.Client, Timing: cl.Timing, TargetDirectory: cl.SavepointDir}, Job: job, Reason: reason}, &p, out.Report("savepoint"))
				if err != nil {
					return savepoint.Record{}, fmt.Errorf("savepoint: %w", err)
				}
				if rec, ok := p.Record(); ok && res.Outcome == lifecycle.OutcomeSucceeded {
					out.Phase("savepoint", "%s savepoint of job %s at %s after %s (due every %v from the job's start)",
						strings.ToLower(string(reason)), demo.Short(job), rec.Location, demo.Seconds(time.Since(start)), interval)
					return rec, nil
				}
				if attempt == 3 {
					return savepoint.Record{}, fmt.Errorf("savepoint ended %s after %d attempts: %s", res.Outcome, attempt, p.Reason)
				}
				attempt++
				in.Current = p.Savepoint.Status // the schedule tries again one interval later
				out.Progress("savepoint", fmt.Sprintf("%s: %s; trying again in %v", res.Outcome, p.Reason, interval), time.Since(wait))
			} else {
				out.Progress("savepoint", "due; waiting for the job's tasks to run", time.Since(wait))
			}
		} else {
			out.Progress("savepoint", fmt.Sprintf("job %s is %s; the periodic savepoint is due %s after its start",
				demo.Short(job), st, demo.Seconds(next.Sub(started))), time.Since(wait))
		}
		t := time.NewTimer(cl.Timing.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return savepoint.Record{}, fmt.Errorf("savepoint: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// showRestored prints what Flink says job was restored from, and how the
// counts of the job before it (previous) carry on in it (name).
func showRestored(ctx context.Context, cl *demo.Cluster, job flinkapi.JobID, previous, name, want string, out *demo.Printer) error {
	start := time.Now()
	if err := cl.WaitTasks(ctx, job, time.Minute, func(d time.Duration) {
		out.Progress("restored", fmt.Sprintf("job %s is RUNNING; waiting for its tasks to run", demo.Short(job)), d)
	}); err != nil {
		return fmt.Errorf("restored: %w", err)
	}
	rc, err := cl.WaitRestored(ctx, job, time.Minute)
	if err != nil {
		return fmt.Errorf("restored: %w", err)
	}
	note := ""
	if !demo.SameLocation(rc.ExternalPath, want) {
		note = fmt.Sprintf(" (not %s, the one chosen)", want)
	}
	counts := ""
	if before, ok := cl.Events(previous); ok {
		// The new job writes its counts once it counted an event; let it
		// count for a second.
		var first int64
		var seen time.Time
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(cl.Timing.Poll) {
			now, ok := cl.Events(name)
			switch {
			case !ok:
				continue
			case seen.IsZero():
				first, seen = now, time.Now()
			case now > first && time.Since(seen) >= time.Second:
				counts = fmt.Sprintf("; %s had counted %d events, %s is at %d", previous, before, name, now)
			}
			if counts != "" {
				break
			}
		}
	}
	out.Phase("restored", "Flink reports job %s restored from %s%s after %s%s", demo.Short(job), rc.ExternalPath, note,
		demo.Seconds(time.Since(start)), counts)
	return nil
}
