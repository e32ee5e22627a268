package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// jobFile is what a job file holds: a name and a lifecycle.JobSpec.
type jobFile struct {
	Name string `json:"name"`
	lifecycle.JobSpec
}

// readJobFile reads and validates the job file at path. A relative
// jarFile is taken relative to the file's directory. The jar is read
// later, by the Controller, only from --jar-root (default: the job file's
// directory).
func readJobFile(path string) (string, lifecycle.JobSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", lifecycle.JobSpec{}, badInput("job file: %v", err)
	}
	var f jobFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return "", lifecycle.JobSpec{}, badInput("job file %s: %s", path, strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: "))
	}
	if f.Name == "" {
		return "", lifecycle.JobSpec{}, badInput("job file %s: set name: the deployment's name, under which its status and final savepoint are kept", path)
	}
	if err := checkName(f.Name); err != nil {
		return "", lifecycle.JobSpec{}, badInput("job file %s: %v", path, err)
	}
	if j := f.Job.JarFile; j != "" && !filepath.IsAbs(j) {
		f.Job.JarFile = filepath.Join(filepath.Dir(path), j)
	}
	if err := f.Validate(); err != nil {
		return "", lifecycle.JobSpec{}, badInput("job file %s: %s", path, strings.ReplaceAll(strings.TrimPrefix(err.Error(), "lifecycle: "), "\n", "; "))
	}
	if j := f.Job.JarFile; j != "" {
		if _, err := os.Stat(j); err != nil {
			return "", lifecycle.JobSpec{}, badInput("job file %s: job.jarFile: %v", path, err)
		}
	}
	return f.Name, f.JobSpec, nil
}

// controller is the Controller of the deployment name.
func (a *app) controller(c lifecycle.API, name string) (*lifecycle.Controller, error) {
	store, err := a.state().restorePoints()
	if err != nil {
		return nil, err
	}
	ctrl := &lifecycle.Controller{Env: a.env(c), Store: store, Name: name, PollInterval: max(a.poll, time.Second),
		RetryInterval: 30 * time.Second}
	// Once the job runs at rest, apply's waits read the cluster's
	// overview, as an operator of many jobs does.
	ctrl.Shared = &lifecycle.SharedObservation{Client: c, Clock: ctrl.Clock, MaxAge: ctrl.PollInterval / 2}
	return ctrl, nil
}

// session is what apply and delete act through: the lock of the
// deployment, its stored file, the Controller and its client.
type session struct {
	d      deployment
	found  bool
	c      *flinkapi.Client
	ctrl   *lifecycle.Controller
	unlock func()
}

// open takes the lock of the deployment name and reads its file. The
// Controller's client does not retry: its steps retry through their
// requeue.
func (a *app) open(name string) (*session, error) {
	c, err := a.newClient(flinkapi.NoRetry)
	if err != nil {
		return nil, err
	}
	unlock, err := a.state().lock(name)
	if err != nil {
		return nil, err
	}
	s := &session{c: c, unlock: unlock}
	if s.d, s.found, err = a.state().loadDeployment(name); err == nil {
		s.ctrl, err = a.controller(c, name)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	return s, nil
}

func (a *app) applyCmd() *cobra.Command {
	var file string
	var unreachable time.Duration
	var plan bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Deploy or update a job as its YAML spec says, until it runs stably",
		Long: `apply reads a job file (name: and the fields of lifecycle.JobSpec: job, update,
restart, health, rescale, savepoints, restore, rollback, blueGreen, state) and
reconciles it against --flink-url until the job runs the spec stably (all its
tasks running, a checkpoint completed), an action fails, or you interrupt it.

The job's status is written to --state-dir after every step, atomically, so
apply again (after Ctrl-C, a crash or a change of the file) resumes the action
in flight instead of starting another. A name that was deleted restores from
its final savepoint.

With --plan, apply sends no change: it reads the job, prints what it would
do (the job's situation, the action with the state it would start from and
that state's age, or the state it would report, and what blocks it), and
exits; 3 when the plan is blocked.

Example job file:

  name: counter
  job:
    jarFile: counter.jar        # relative to the job file
    entryClass: com.example.Counter
    args: ["--rate", "100"]
    parallelism: 2
  update:
    mode: Savepoint             # stop with a savepoint, start from it
  restart:
    mode: FromLatestState

` + exitCodesHelp,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return badInput("apply needs -f FILE, the job file (see `flinkctl apply --help`)")
			}
			if plan {
				return a.plan(cmd.Context(), file)
			}
			return a.apply(cmd.Context(), file, unreachable)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the job file (YAML)")
	cmd.Flags().BoolVar(&plan, "plan", false, "print what apply would do, and do nothing")
	cmd.Flags().DurationVar(&unreachable, "unreachable-timeout", time.Minute, "give up (exit code 5) when the JobManager does not answer for this long")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

// apply reconciles the job file until the job converges.
func (a *app) apply(ctx context.Context, file string, unreachable time.Duration) error {
	name, spec, err := readJobFile(file)
	if err != nil {
		return err
	}
	if err := a.useJars(filepath.Dir(file)); err != nil {
		return err
	}
	a.resume = "flinkctl apply -f " + file
	s, err := a.open(name)
	if err != nil {
		return err
	}
	defer s.unlock()
	c, ctrl, d := s.c, s.ctrl, s.d
	out := a.printer()
	switch {
	case !s.found || d.Deleted:
		d = deployment{Name: name}
	case d.Status.InFlight():
		out.Phase("apply", "%s: resuming %s (phase %s) from %s", name, d.Status.Action, d.Status.Progress.Phase, a.state().deploymentPath(name))
	}
	d.Spec = spec
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	start := a.now()
	var downSince time.Time
	for {
		res, err := ctrl.Reconcile(ctx, spec, &d.Status)
		if errors.Is(err, lifecycle.ErrUnknownFormat) || errors.Is(err, lifecycle.ErrForeignStatus) {
			return fmt.Errorf("%s: %w: use the flinkctl that wrote it, or move the file away", a.state().deploymentPath(name), err)
		}
		// Stored after every call, whatever it returned.
		if serr := a.state().saveDeployment(&d); serr != nil {
			return serr
		}
		st := &d.Status
		if err != nil {
			return err
		}
		a.showApply(ctx, out, c, name, st, a.now().Sub(start))
		// Where apply stands follows from the status's verdict alone.
		v := st.VerdictFor(spec)
		switch {
		case v == lifecycle.VerdictDone && st.Converged(spec):
			return a.applied(out, name, &d)
		case v == lifecycle.VerdictDone:
			// A savepoint beside the job: stepped to its end and the
			// job read again, as Converge does.
		case v != lifecycle.VerdictFailed && v != lifecycle.VerdictBlocked:
			// Progressing, or Waiting for what comes by itself.
		case res.Outcome != "" && res.Outcome != lifecycle.OutcomeSucceeded && res.Outcome != lifecycle.OutcomeNotNeeded:
			// The action ended in this call.
			return &exitError{code: verdictCode(v, res.Outcome), msg: fmt.Sprintf("%s: %s %s: %s; the status is stored: fix the cause (or the job file) and apply again",
				name, st.Action, res.Outcome, st.Progress.Reason)}
		case !st.RetryPending(spec):
			// Nothing is done until the job file (or the cluster) changes.
			return &exitError{code: verdictCode(v, ""), msg: fmt.Sprintf("%s: %s: %s; change the job file and apply again", name, st.Reason, st.Message)}
		}
		if v == lifecycle.VerdictWaiting && st.Situation == lifecycle.SituationUnreachable {
			if downSince.IsZero() {
				downSince = a.now()
			} else if a.now().Sub(downSince) >= unreachable {
				return &exitError{code: exitUnreachable, msg: fmt.Sprintf("%s: the JobManager at %s did not answer for %v (%s): check --flink-url; apply again to resume",
					name, a.url, unreachable, st.Message)}
			}
		} else {
			downSince = time.Time{}
		}
		if err := a.sleep(ctx, res.RequeueAfter); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return &exitError{code: exitTimedOut, msg: fmt.Sprintf("%s: not converged within --timeout %v (%s: %s); the status is stored: apply again to go on",
					name, a.timeout, st.Reason, st.Message)}
			}
			return err
		}
	}
}

// plan prints what apply would do for the job file, changing nothing.
func (a *app) plan(ctx context.Context, file string) error {
	name, spec, err := readJobFile(file)
	if err != nil {
		return err
	}
	if err := a.useJars(filepath.Dir(file)); err != nil {
		return err
	}
	s, err := a.open(name)
	if err != nil {
		return err
	}
	defer s.unlock()
	st := s.d.Status
	if !s.found || s.d.Deleted {
		st = lifecycle.JobStatus{}
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	p, err := s.ctrl.Plan(ctx, spec, st)
	if err != nil {
		return err
	}
	return a.showPlan(name, p)
}

// showApply shows where the deployment stands: the action in flight with
// its phase (and the savepoint's acknowledgement), or the job at rest.
func (a *app) showApply(ctx context.Context, out *printer, c lifecycle.API, name string, st *lifecycle.JobStatus, elapsed time.Duration) {
	if a.output == "json" {
		return
	}
	if st.InFlight() {
		r := lifecycle.Report{Progress: st.Progress, Elapsed: elapsed}
		r.Savepoint, r.HasSavepoint = savepointProgress(ctx, c, &st.Progress)
		out.Progress(name, string(st.Action)+" "+demo.Status(r), elapsed)
		return
	}
	out.Progress(name, st.Reason+": "+st.Message, elapsed)
}

// applied reports a converged deployment.
func (a *app) applied(out *printer, name string, d *deployment) error {
	if a.output == "json" {
		return a.emitJSON(d)
	}
	st := &d.Status
	from := ""
	if rf := st.Progress.Replace.RestoreFrom; rf != "" && st.Action != lifecycle.ActionSavepoint {
		from = ", restored from " + rf
	}
	out.Phase("applied", "%s: job %s runs the spec's job stably%s (status in %s)", name, st.JobID, from, a.state().deploymentPath(name))
	return nil
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the stored status of an applied job, or list them all",
		Long: `status shows what flinkctl stored about the job NAME (from --state-dir, without
asking the cluster): its job id, state, reason, the action in flight, the
latest savepoint. Without NAME it lists every applied job.

` + exitCodesHelp,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeNames,
		RunE: func(cmd *cobra.Command, as []string) error {
			if len(as) == 0 {
				return a.listDeployments()
			}
			return a.status(as[0])
		},
	}
}

// loadNamed loads the deployment name, which must exist.
func (a *app) loadNamed(name string) (deployment, error) {
	if err := checkName(name); err != nil {
		return deployment{}, err
	}
	d, ok, err := a.state().loadDeployment(name)
	if err == nil && !ok {
		err = badInput("no job named %q in %s: apply it first (`flinkctl status` lists them)", name, a.state().root)
	}
	return d, err
}

func (a *app) status(name string) error {
	d, err := a.loadNamed(name)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.emitJSON(d)
	}
	st := &d.Status
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s:\t%s\n", k, v)
		}
	}
	row("name", d.Name)
	if d.Deleted {
		row("deleted", "yes; the next apply of this name restores from its final savepoint")
	}
	row("job", string(st.JobID))
	row("job state", string(st.JobState))
	row("state", string(st.State))
	row("reason", st.Reason)
	row("message", st.Message)
	row("failure", st.Failure)
	if st.Action != "" {
		a := string(st.Action)
		if st.InFlight() {
			a += " (in flight, phase " + string(st.Progress.Phase) + ")"
		} else if st.Progress.Outcome != "" {
			a += " (" + string(st.Progress.Outcome) + ")"
		}
		row("last action", a)
	}
	if l := st.Latest; l.Location != "" {
		row("latest savepoint", fmt.Sprintf("%s (%s, %s)", l.Location, l.Reason, l.Time.UTC().Format(time.RFC3339)))
	}
	row("savepoints", fmt.Sprint(len(st.Savepoints.Records)))
	row("converged", fmt.Sprint(st.Converged(d.Spec)))
	row("verdict", string(st.VerdictFor(d.Spec)))
	return w.Flush()
}

func (a *app) listDeployments() error {
	names, err := a.state().deployments()
	if err != nil {
		return err
	}
	var ds []deployment
	for _, n := range names {
		d, ok, err := a.state().loadDeployment(n)
		if err != nil {
			return err
		}
		if ok {
			ds = append(ds, d)
		}
	}
	if a.output == "json" {
		if ds == nil {
			ds = []deployment{}
		}
		return a.emitJSON(ds)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tJOB\tSTATE\tREASON\tCONVERGED")
	for _, d := range ds {
		state := string(d.Status.State)
		if d.Deleted {
			state = "Deleted"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\n", d.Name, orDash(string(d.Status.JobID)), orDash(state), orDash(d.Status.Reason), d.Status.Converged(d.Spec) && !d.Deleted)
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// completeNames completes the names of the applied jobs.
func (a *app) completeNames(_ *cobra.Command, as []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(as) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, _ := a.state().deployments()
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (a *app) deleteCmd() *cobra.Command {
	var plan bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Stop an applied job with a final savepoint, recorded under its name",
		Long: `delete ends the action in flight, then stops the job NAME with a final
savepoint and records it in --state-dir's restore points under NAME: a later
apply of NAME starts from it. A job whose policy keeps state is never
cancelled without a savepoint unless the job file sets
allowCancelWithoutState. Interrupted, delete resumes when run again.

With --plan, delete sends no change: it prints what it would do (the
action it would step or start, or the state it would report, and the first
savepoint it would dispose of) and exits; 3 when the plan is blocked.

` + exitCodesHelp,
		Args:              args("NAME"),
		ValidArgsFunction: a.completeNames,
		RunE: func(cmd *cobra.Command, as []string) error {
			if plan {
				return a.planDelete(cmd.Context(), as[0])
			}
			return a.delete(cmd.Context(), as[0])
		},
	}
	cmd.Flags().BoolVar(&plan, "plan", false, "print what delete would do, and do nothing")
	return cmd
}

// showPlan prints the plan p of NAME (as JSON with -o json); a blocked
// plan exits 3.
func (a *app) showPlan(name string, p lifecycle.Plan) error {
	if a.output == "json" {
		if err := a.emitJSON(p); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "%s: %s\n", name, p)
	}
	if p.Blocked != "" {
		return &exitError{code: exitBlocked, msg: fmt.Sprintf("%s: blocked: %s", name, p.Blocked)}
	}
	return nil
}

// planDelete prints what delete would do for NAME.
func (a *app) planDelete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	s, err := a.open(name)
	if err != nil {
		return err
	}
	defer s.unlock()
	if !s.found {
		return badInput("no job named %q in %s: apply it first (`flinkctl status` lists them)", name, a.state().root)
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	p, err := s.ctrl.PlanDelete(ctx, s.d.Spec, s.d.Status)
	if err != nil {
		return err
	}
	return a.showPlan(name, p)
}

func (a *app) delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	a.resume = "flinkctl delete " + name
	s, err := a.open(name)
	if err != nil {
		return err
	}
	defer s.unlock()
	if !s.found {
		return badInput("no job named %q in %s: apply it first (`flinkctl status` lists them)", name, a.state().root)
	}
	if j := s.d.Spec.Job.JarFile; j != "" {
		// An action in flight may upload the jar apply named, from
		// --jar-root or the directory apply read it from.
		if err := a.useJars(filepath.Dir(j)); err != nil {
			return err
		}
		s.ctrl.Jars = a.jars
	}
	c, ctrl, d := s.c, s.ctrl, s.d
	out := a.printer()
	if d.Deleted {
		out.Phase("deleted", "%s was deleted already; its final savepoint: %s", name, orDash(d.Status.Latest.Location))
		return nil
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	start := a.now()
	for {
		res, err := ctrl.Delete(ctx, d.Spec, &d.Status)
		if errors.Is(err, lifecycle.ErrUnknownFormat) || errors.Is(err, lifecycle.ErrForeignStatus) {
			return fmt.Errorf("%s: %w", a.state().deploymentPath(name), err)
		}
		d.Deleted = res.Done
		if serr := a.state().saveDeployment(&d); serr != nil {
			return serr
		}
		if err != nil {
			return err
		}
		st := &d.Status
		a.showApply(ctx, out, c, name, st, a.now().Sub(start))
		switch {
		case res.Done:
			if a.output == "json" {
				return a.emitJSON(d)
			}
			if loc := st.Latest.Location; loc != "" && (st.Progress.Outcome == lifecycle.OutcomeSucceeded || st.Suspended) {
				out.Phase("deleted", "%s: job %s stopped; final savepoint %s recorded as %s", name, orDash(string(st.JobID)), loc, name)
			} else {
				out.Phase("deleted", "%s: %s", name, sayOnce(st.Message, st.Progress.Reason))
			}
			return nil
		case res.Outcome != "" && st.Action == lifecycle.ActionTeardown && res.Outcome != lifecycle.OutcomeSucceeded:
			return &exitError{code: verdictCode(st.VerdictFor(d.Spec), res.Outcome), msg: fmt.Sprintf("%s: the job was not stopped (%s: %s); it runs on: delete again to retry",
				name, res.Outcome, st.Progress.Reason)}
		}
		if err := a.sleep(ctx, res.RequeueAfter); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return &exitError{code: exitTimedOut, msg: fmt.Sprintf("%s: not deleted within --timeout %v (%s); delete again to go on", name, a.timeout, st.Message)}
			}
			return err
		}
	}
}

// sayOnce is msg, followed by reason unless msg says it already (the
// status's message often is the operation's reason).
func sayOnce(msg, reason string) string {
	switch {
	case reason == "" || strings.Contains(msg, reason):
		return msg
	case msg == "" || strings.Contains(reason, msg):
		return reason
	}
	return msg + ": " + reason
}

// savepointProgress reads how far the savepoint p waits for has got (its
// acknowledged subtasks and bytes) from the job's checkpoint statistics:
// one request, only while p waits for a savepoint.
func savepointProgress(ctx context.Context, c lifecycle.API, p *lifecycle.Progress) (savepoint.Progress, bool) {
	sp := p.Savepoint.Status
	if c == nil || p.Phase != lifecycle.PhaseSavepoint || !sp.NeedsPoll() {
		return savepoint.Progress{}, false
	}
	stats, err := c.Checkpoints(ctx, sp.JobID)
	if err != nil {
		return savepoint.Progress{}, false
	}
	return savepoint.FindProgress(sp, stats)
}
