package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// readJobs reads the job file at path, or every job file (*.yaml, *.yml,
// *.json) in the directory path, as deployments of the clusters named
// (each file's cluster:, which may be left out when there is one
// cluster), and returns them with the directory the Controller
// reads their jars from by default (the job files' directory). A job
// file holds a name, a cluster and the fields of lifecycle.JobSpec, decoded by
// fleet.DecodeDeployment: strictly, errors naming the file, the line and
// the field. A relative jarFile is taken relative to the file's directory.
func readJobs(path string, clusters []string) ([]fleet.Deployment, string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", badInput("job file: %v", err)
	}
	files, root := []string{path}, filepath.Dir(path)
	if fi.IsDir() {
		files, root = nil, path
		es, err := os.ReadDir(path)
		if err != nil {
			return nil, "", badInput("job files: %v", err)
		}
		for _, e := range es {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && !strings.HasPrefix(e.Name(), ".") && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, "", badInput("%s holds no job file (*.yaml, *.yml, *.json)", path)
		}
	}
	var deps []fleet.Deployment
	seen := map[string]string{}
	for _, f := range files {
		d, err := readJobFile(f)
		if err != nil {
			return nil, "", err
		}
		switch {
		case d.Cluster == "" && len(clusters) == 1:
			d.Cluster = clusters[0]
		case d.Cluster == "":
			return nil, "", badInput("job file %s: set cluster: one of the clusters of --clusters (%s)", f, strings.Join(clusters, ", "))
		case !slices.Contains(clusters, d.Cluster):
			return nil, "", badInput("job file %s: cluster %q is none of the clusters (%s): list it in a --clusters file", f, d.Cluster, strings.Join(clusters, ", "))
		}
		if other, dup := seen[d.Name]; dup {
			return nil, "", badInput("job files %s and %s both name %q: give each job its own name", other, f, d.Name)
		}
		seen[d.Name] = f
		deps = append(deps, d)
	}
	return deps, root, nil
}

// readJobs reads the job files of path (readJobs) as deployments of the
// clusters.
func (a *app) readJobs(path string) ([]fleet.Deployment, string, error) {
	names, err := a.clusterNames()
	if err != nil {
		return nil, "", err
	}
	return readJobs(path, names)
}

// readJobFile reads and validates the job file at path with
// fleet.DecodeDeployment: its name, its cluster (empty when it names
// none), its spec, and the application and the job to adopt by name it
// may state.
func readJobFile(path string) (fleet.Deployment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return fleet.Deployment{}, badInput("job file: %v", err)
	}
	d, err := fleet.DecodeDeployment(path, b)
	if err != nil {
		return fleet.Deployment{}, badInput("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if d.Name == "" {
		return fleet.Deployment{}, badInput("job file %s: set name: the deployment's name, under which its status and final savepoint are kept", path)
	}
	if err := checkName(d.Name); err != nil {
		return fleet.Deployment{}, badInput("job file %s: %v", path, err)
	}
	if j := d.Spec.Job.JarFile; j != "" && !filepath.IsAbs(j) {
		d.Spec.Job.JarFile = filepath.Join(filepath.Dir(path), j)
	}
	if j := d.Spec.Job.JarFile; j != "" {
		if _, err := os.Stat(j); err != nil {
			return fleet.Deployment{}, badInput("job file %s: job.jarFile: %v", path, err)
		}
	}
	return d, nil
}

// names are the names of deps.
func names(deps []fleet.Deployment) map[string]bool {
	out := map[string]bool{}
	for _, d := range deps {
		out[d.Name] = true
	}
	return out
}

// runner is the fleet.Runner of the applied jobs on their clusters
// (clusters), acting on those only names, or on all when only is nil, and
// its store. The Controllers' clients do not retry: their steps retry
// through their requeue.
func (a *app) runner(only map[string]bool) (*fleet.Runner, *records, error) {
	list, err := a.clusters()
	if err != nil {
		return nil, nil, err
	}
	envs := map[string]lifecycle.Env{}
	for _, cl := range list {
		flag := "--clusters " + a.clustersFile
		if a.clustersFile == "" {
			flag = "--flink-url"
		}
		c, err := a.newClientAt(cl.URL, flag, flinkapi.NoRetry)
		if err != nil {
			return nil, nil, err
		}
		envs[cl.Name] = a.env(c)
	}
	store, err := a.state().records(only)
	if err != nil {
		return nil, nil, err
	}
	rp, err := a.state().restorePoints()
	if err != nil {
		return nil, nil, err
	}
	r := &fleet.Runner{Store: store, Clusters: envs, Clock: a.clock,
		Controller: lifecycle.Controller{Store: rp, PollInterval: max(a.poll, time.Second), RetryInterval: 30 * time.Second}}
	return r, store, nil
}

// clusters are the clusters of the --clusters file, read by
// fleet.DecodeClusters, or else the one cluster defaultCluster at
// --flink-url.
func (a *app) clusters() ([]fleet.Cluster, error) {
	if a.clustersFile == "" {
		return []fleet.Cluster{{Name: defaultCluster, URL: a.url}}, nil
	}
	b, err := os.ReadFile(a.clustersFile)
	if err != nil {
		return nil, badInput("--clusters: %v", err)
	}
	list, err := fleet.DecodeClusters(a.clustersFile, b)
	if err == nil && len(list.Clusters) == 0 {
		err = fmt.Errorf("%s: lists no cluster", a.clustersFile)
	}
	if err != nil {
		return nil, badInput("--clusters %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return list.Clusters, nil
}

// clusterNames are the names of the clusters, or nil with the error of
// a --clusters file that cannot be read.
func (a *app) clusterNames() ([]string, error) {
	list, err := a.clusters()
	var names []string
	for _, c := range list {
		names = append(names, c.Name)
	}
	return names, err
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

const jobFileHelp = `A job file holds name: and the fields of lifecycle.JobSpec (job, update,
restart, health, rescale, savepoints, restore, rollback, blueGreen, state),
read strictly: an unknown field, a value of the wrong kind or a spec that
does not validate is an error naming the file, the line and the field. A
job whose spec does not set restart.mode is restarted from its newest state
when it fails or Flink loses it; "restart: {mode: Never}" opts out. With
--clusters, cluster: names the cluster the job runs on. application:
groups jobs applied, reported and removed together; adoptName: adopts the
running job of that Flink job name that no job file claims (see
"flinkctl jobs") instead of starting one.

Example job file:

  name: counter
  job:
    jarFile: counter.jar        # relative to the job file
    entryClass: com.example.Counter
    args: ["--rate", "100"]
    parallelism: 2
  update:
    mode: Savepoint             # stop with a savepoint, start from it
`

func (a *app) applyCmd() *cobra.Command {
	var file string
	var unreachable time.Duration
	var plan bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR",
		Short: "Deploy or update jobs as their YAML specs say, until they run stably",
		Long: `apply reads a job file, or every job file of a directory, and reconciles
each job against --flink-url through the fleet runner until it runs its spec
stably (all its tasks running, a checkpoint completed), an action fails, or
you interrupt it. Applied jobs that the files do not name are left as they
are (` + "`flinkctl run -f DIR`" + ` removes them).

The jobs' records are written to --state-dir after every step, atomically, so
apply again (after Ctrl-C, a crash or a change of the file) resumes the action
in flight instead of starting another. A name that was deleted restores from
its final savepoint. With --plan, apply is ` + "`flinkctl plan`" + `.

` + jobFileHelp + `
` + exitCodesHelp,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return badInput("apply needs -f FILE, the job file (see `flinkctl apply --help`)")
			}
			if plan {
				return a.plan(cmd.Context(), file, false, false)
			}
			return a.apply(cmd.Context(), file, unreachable)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the job file (YAML), or a directory of job files")
	cmd.Flags().BoolVar(&plan, "plan", false, "print what apply would do, and do nothing (flinkctl plan)")
	cmd.Flags().DurationVar(&unreachable, "unreachable-timeout", time.Minute, "give up (exit code 5) when the JobManager does not answer for this long")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

// applying is where apply stands with one deployment.
type applying struct {
	started   time.Time // Progress.Started of the action in the record when apply began
	inFlight  bool      // whether that action was in flight
	downSince time.Time // since when the JobManager does not answer
	done      bool
}

// apply reconciles the job files until each job converges.
func (a *app) apply(ctx context.Context, file string, unreachable time.Duration) error {
	deps, root, err := a.readJobs(file)
	if err != nil {
		return err
	}
	if err := a.useJars(root); err != nil {
		return err
	}
	a.resume = "flinkctl apply -f " + file
	unlock, err := a.state().lock(fleetLock)
	if err != nil {
		return err
	}
	defer unlock()
	r, store, err := a.runner(names(deps))
	if err != nil {
		return err
	}
	out := a.printer()
	states := map[string]*applying{}
	for _, d := range deps {
		rec, ok, err := store.Load(ctx, d.Name)
		if err != nil {
			return a.recordError(d.Name, err)
		}
		st := &rec.Status
		states[d.Name] = &applying{started: st.Progress.Started, inFlight: ok && st.InFlight()}
		if ok && st.InFlight() && !rec.Removed {
			out.Phase("apply", "%s: resuming %s (phase %s) from %s", d.Name, st.Action, st.Progress.Phase, a.state().deploymentPath(d.Name))
		}
	}
	if _, err := r.Sync(ctx, deps); err != nil {
		if errors.Is(err, lifecycle.ErrUnknownFormat) {
			return err
		}
		return badInput("%s", strings.TrimPrefix(err.Error(), "fleet: "))
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	start := a.now()
	for {
		results, err := r.Pass(ctx)
		if err != nil {
			return err
		}
		next := time.Duration(-1)
		left := 0
		for _, res := range results {
			s := states[res.Name]
			if s == nil || s.done {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			if res.Err != nil {
				return a.recordError(res.Name, res.Err)
			}
			rec, _, err := store.Load(ctx, res.Name)
			if err != nil {
				return err
			}
			if err := a.applyStep(ctx, out, r.Clusters[rec.Cluster].Client, &rec, s, unreachable, a.now().Sub(start)); err != nil {
				return err
			}
			if s.done {
				continue
			}
			left++
			if w := res.Next.Sub(a.now()); next < 0 || w < next {
				next = max(w, 0)
			}
		}
		if ctx.Err() == nil && left == 0 {
			return a.appliedAll(deps, store)
		}
		if ctx.Err() == nil {
			_ = a.sleep(ctx, next) // it ends early only with ctx, read below
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				msg := "not converged"
				for _, d := range deps {
					if s := states[d.Name]; !s.done {
						rec, _, _ := store.Load(context.Background(), d.Name)
						msg = fmt.Sprintf("%s: not converged within --timeout %v (%s: %s)", d.Name, a.timeout, rec.Status.Reason, rec.Status.Message)
						break
					}
				}
				return &exitError{code: exitTimedOut, msg: msg + "; the status is stored: apply again to go on"}
			}
			return err
		}
	}
}

// recordError is err of the deployment name's record or call.
func (a *app) recordError(name string, err error) error {
	if errors.Is(err, lifecycle.ErrUnknownFormat) || errors.Is(err, lifecycle.ErrForeignStatus) {
		return fmt.Errorf("%s: %w: use the flinkctl that wrote it, or move the file away", a.state().deploymentPath(name), err)
	}
	return err
}

// applyStep shows where the deployment of rec stands after a call, and
// says whether apply is done with it (s.done) or must end (the error).
func (a *app) applyStep(ctx context.Context, out *printer, c lifecycle.API, rec *deployment, s *applying, unreachable, elapsed time.Duration) error {
	name, spec, st := rec.Name, rec.Spec, &rec.Status
	a.showApply(ctx, out, c, name, st, elapsed)
	// Where apply stands follows from the status's verdict alone.
	v := st.VerdictFor(spec)
	p := &st.Progress
	// An action that ended while apply ran, without success.
	ended := st.Action != "" && !st.InFlight() && p.Outcome != "" && p.Outcome != lifecycle.OutcomeSucceeded && p.Outcome != lifecycle.OutcomeNotNeeded &&
		(s.inFlight || !p.Started.Equal(s.started))
	switch {
	case v == lifecycle.VerdictDone && st.Converged(spec):
		s.done = true
		return nil
	case v == lifecycle.VerdictDone:
		// A savepoint beside the job: stepped to its end and the job
		// read again, as Converge does.
	case v != lifecycle.VerdictFailed && v != lifecycle.VerdictBlocked && v != lifecycle.VerdictInvalid:
		// Progressing, or Waiting for what comes by itself.
	case ended:
		return &exitError{code: verdictCode(v, p.Outcome), msg: fmt.Sprintf("%s: %s %s: %s; the status is stored: fix the cause (or the job file) and apply again",
			name, st.Action, p.Outcome, p.Reason)}
	case !st.RetryPending(spec):
		// Nothing is done until the job file (or the cluster) changes.
		return &exitError{code: verdictCode(v, ""), msg: fmt.Sprintf("%s: %s: %s; change the job file and apply again", name, st.Reason, st.Message)}
	}
	if v == lifecycle.VerdictWaiting && st.Situation == lifecycle.SituationUnreachable {
		if s.downSince.IsZero() {
			s.downSince = a.now()
		} else if a.now().Sub(s.downSince) >= unreachable {
			where, flag := "at "+a.url, "--flink-url"
			if a.clustersFile != "" {
				where, flag = "of cluster "+rec.Cluster, "--clusters "+a.clustersFile
			}
			return &exitError{code: exitUnreachable, msg: fmt.Sprintf("%s: the JobManager %s did not answer for %v (%s): check %s; apply again to resume",
				name, where, unreachable, st.Message, flag)}
		}
	} else {
		s.downSince = time.Time{}
	}
	return nil
}

// appliedAll reports the converged deployments.
func (a *app) appliedAll(deps []fleet.Deployment, store *records) error {
	var recs []deployment
	for _, d := range deps {
		rec, _, err := store.Load(context.Background(), d.Name)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	if a.output == "json" {
		if len(recs) == 1 {
			return a.emitJSON(recs[0])
		}
		return a.emitJSON(recs)
	}
	for i := range recs {
		a.applied(a.printer(), &recs[i])
	}
	return nil
}

func (a *app) planCmd() *cobra.Command {
	var file string
	var prune, upload bool
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR",
		Short: "Print what apply (or run, with --prune) would do, and do nothing",
		Long: `plan reads the job file, or the job files of a directory, and prints for
each job whether it is added, changed or unchanged, and what its Controller
would do: the job's situation, the action with the state it would start
from and that state's age, or the state it would report, what blocks it,
and Flink's preflight of a new job (whether its state would be restored).
With --prune, applied jobs the files do not name are planned as removed,
as ` + "`flinkctl run -f DIR`" + ` removes them. It sends only reads to Flink (and, with
--upload-jars, the upload and deletion of a new jar the preflight needs)
and stores nothing; it never waits for a command at work.

The exit code is the worst verdict of the plans: 2 when a job is Invalid,
else 3 when one is Blocked (a plan whose preflight refuses it too), else 1
when one Failed or could not be planned, else 0 (Done, Progressing,
Waiting: what apply would carry out).

` + exitCodesHelp,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return badInput("plan needs -f FILE, the job file (see `flinkctl plan --help`)")
			}
			return a.plan(cmd.Context(), file, prune, upload)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the job file (YAML), or a directory of job files")
	cmd.Flags().BoolVar(&prune, "prune", false, "plan the applied jobs the files do not name as removed, as run does")
	cmd.Flags().BoolVar(&upload, "upload-jars", false, "upload a new jar for the preflight, and delete it again")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

// plan prints what apply (with prune, run) would do for the job files,
// changing nothing.
func (a *app) plan(ctx context.Context, file string, prune, upload bool) error {
	deps, root, err := a.readJobs(file)
	if err != nil {
		return err
	}
	if err := a.useJars(root); err != nil {
		return err
	}
	var only map[string]bool
	if !prune {
		only = names(deps)
	}
	r, _, err := a.runner(only)
	if err != nil {
		return err
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	p, err := r.Plan(ctx, deps, fleet.PlanOptions{UploadJars: upload})
	if err != nil {
		if errors.Is(err, lifecycle.ErrUnknownFormat) {
			return err
		}
		return badInput("%s", strings.TrimPrefix(err.Error(), "fleet: "))
	}
	return a.showPlan(p)
}

// planCode is the exit code of a plan, and the line that says why: the
// worst of its deployments' verdicts, Invalid (2) before Blocked (3)
// before Failed or not planned (1).
func planCode(p fleet.ChangePlan) (int, string) {
	rank := map[int]int{exitOK: 0, exitFailed: 1, exitBlocked: 2, exitBadInput: 3}
	code, why := exitOK, ""
	for _, d := range p.Deployments {
		c, w := exitOK, ""
		switch {
		case d.Error != "":
			c, w = exitFailed, d.Name+": cannot be planned: "+firstLine(d.Error)
		case d.Plan.Verdict == lifecycle.VerdictInvalid:
			c, w = exitBadInput, d.Name+": invalid: "+d.Plan.Message
		case d.Plan.Blocked != "" || d.Plan.Verdict == lifecycle.VerdictBlocked:
			c, w = exitBlocked, d.Name+": blocked: "+sayOnce(d.Plan.Blocked, d.Plan.Message)
		case d.Plan.Verdict == lifecycle.VerdictFailed:
			c, w = exitFailed, d.Name+": failed: "+d.Plan.Message
		}
		if rank[c] > rank[code] {
			code, why = c, w
		}
	}
	return code, why
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
func (a *app) applied(out *printer, d *deployment) {
	st := &d.Status
	from := ""
	if rf := st.Progress.Replace.RestoreFrom; rf != "" && st.Action != lifecycle.ActionSavepoint {
		from = ", restored from " + rf
	}
	out.Phase("applied", "%s: job %s runs the spec's job stably%s (status in %s)", d.Name, st.JobID, from, a.state().deploymentPath(d.Name))
}

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the stored status of an applied job, or list them all",
		Long: `status shows what flinkctl stored about the job NAME (from --state-dir, without
asking the cluster): its job id, state, reason, the action in flight, the
latest savepoint. Without NAME it lists every applied job. It reads the
records as they are and never waits for a command at work, so it works
while ` + "`flinkctl run`" + ` runs.

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
	row("cluster", d.Cluster)
	if d.Removed {
		row("removed", "yes; its job is being torn down, with a final savepoint")
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
	store, err := a.state().records(nil)
	if err != nil {
		return err
	}
	ds, err := store.List(context.Background())
	if err != nil {
		return err
	}
	if a.output == "json" {
		if ds == nil {
			ds = []deployment{}
		}
		return a.emitJSON(ds)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCLUSTER\tJOB\tSTATE\tREASON\tCONVERGED")
	for _, d := range ds {
		state := string(d.Status.State)
		if d.Removed {
			state = "Removing"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%v\n", d.Name, orDash(d.Cluster), orDash(string(d.Status.JobID)), orDash(state), orDash(d.Status.Reason), d.Status.Converged(d.Spec) && !d.Removed)
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
		Long: `delete removes the job NAME from the applied jobs: the fleet runner ends the
action in flight, then stops the job with a final savepoint (Controller.Delete
under the spec its job last ran under), records it in --state-dir's restore
points under NAME and deletes its record: a later apply of NAME starts from
it. A job whose policy keeps state is never cancelled without a savepoint
unless the job file sets allowCancelWithoutState. Interrupted, delete
resumes when run again.

With --plan, delete sends no change: it prints what it would do (the
action it would step or start, or the state it would report, and the first
savepoint it would dispose of) and exits; 3 when the plan is blocked.

` + exitCodesHelp,
		Args:              args("NAME"),
		ValidArgsFunction: a.completeNames,
		RunE: func(cmd *cobra.Command, as []string) error {
			return a.delete(cmd.Context(), as[0], plan)
		},
	}
	cmd.Flags().BoolVar(&plan, "plan", false, "print what delete would do, and do nothing")
	return cmd
}

// showPlan prints the plan p (as JSON with -o json), and ends with the
// exit code of its worst verdict (planCode).
func (a *app) showPlan(p fleet.ChangePlan) error {
	if a.output == "json" {
		if err := a.emitJSON(p); err != nil {
			return err
		}
	} else {
		fmt.Fprint(a.stdout, p.String())
	}
	if code, why := planCode(p); code != exitOK {
		return &exitError{code: code, msg: why}
	}
	return nil
}

// delete removes the applied job name through the runner, or with plan
// prints what that would do.
func (a *app) delete(ctx context.Context, name string, plan bool) error {
	if err := checkName(name); err != nil {
		return err
	}
	if !plan {
		a.resume = "flinkctl delete " + name
		unlock, err := a.state().lock(fleetLock)
		if err != nil {
			return err
		}
		defer unlock()
	}
	r, store, err := a.runner(map[string]bool{name: true})
	if err != nil {
		return err
	}
	d, found, err := store.Load(ctx, name)
	if err != nil {
		return a.recordError(name, err)
	}
	if !found {
		if plan {
			return badInput("no job named %q in %s: apply it first (`flinkctl status` lists them)", name, a.state().root)
		}
		a.printer().Phase("deleted", "%s is not applied (deleted already, or never applied): nothing to do", name)
		return nil
	}
	if j := d.Spec.Job.JarFile; j != "" {
		// An action in flight may upload the jar apply named, from
		// --jar-root or the directory apply read it from.
		if err := a.useJars(filepath.Dir(j)); err != nil {
			return err
		}
		env := r.Clusters[d.Cluster]
		env.Jars = a.jars
		r.Clusters[d.Cluster] = env
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	if plan {
		p, err := r.Plan(ctx, nil, fleet.PlanOptions{})
		if err != nil {
			return err
		}
		return a.showPlan(p)
	}
	if _, err := r.Sync(ctx, nil); err != nil {
		return err
	}
	out := a.printer()
	c := r.Clusters[d.Cluster].Client
	start := a.now()
	for {
		results, err := r.Pass(ctx)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return &exitError{code: exitTimedOut, msg: fmt.Sprintf("%s: not deleted within --timeout %v (%s); delete again to go on", name, a.timeout, d.Status.Message)}
			}
			return err
		}
		var res fleet.Result
		for _, r := range results {
			if r.Name == name {
				res = r
			}
		}
		if res.Err != nil {
			return a.recordError(name, res.Err)
		}
		cur, found, err := store.Load(ctx, name)
		if err != nil {
			return err
		}
		if found {
			d = cur
		} else if last, ok := store.lastSaved(name); ok {
			d = last
		}
		st := &d.Status
		a.showApply(ctx, out, c, name, st, a.now().Sub(start))
		switch {
		case !found:
			// Torn down, and its record deleted.
			if a.output == "json" {
				return a.emitJSON(d)
			}
			if loc := st.Latest.Location; loc != "" && (st.Progress.Outcome == lifecycle.OutcomeSucceeded || st.Suspended) {
				out.Phase("deleted", "%s: job %s stopped; final savepoint %s recorded as %s", name, orDash(string(st.JobID)), loc, name)
			} else {
				out.Phase("deleted", "%s: %s", name, sayOnce(st.Message, st.Progress.Reason))
			}
			return nil
		case st.Action == lifecycle.ActionTeardown && !st.InFlight() && st.Progress.Outcome != "" && st.Progress.Outcome != lifecycle.OutcomeSucceeded:
			return &exitError{code: verdictCode(st.VerdictFor(d.Spec), st.Progress.Outcome), msg: fmt.Sprintf("%s: the job was not stopped (%s: %s); it runs on: delete again to retry",
				name, st.Progress.Outcome, st.Progress.Reason)}
		}
		if err := a.sleep(ctx, max(res.Next.Sub(a.now()), 0)); err != nil {
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
