package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// resolveJob turns a JOB argument into a job id: a job id, or the name of
// an applied job.
func (a *app) resolveJob(arg string) (flinkapi.JobID, error) {
	if id, err := flinkapi.ParseJobID(arg); err == nil {
		return id, nil
	}
	if checkName(arg) == nil {
		if d, ok, err := a.state().loadDeployment(arg); err == nil && ok && d.Status.JobID != "" {
			return d.Status.JobID, nil
		}
	}
	return "", badInput("%q is neither a job id (32 hex digits) nor the name of an applied job (see `flinkctl jobs`)", arg)
}

// jobCommand completes cmd, a command on one JOB argument: a job id or
// the name of an applied job, resolved to its job id for run, which
// gets the argument as given too and the client.
func (a *app) jobCommand(cmd *cobra.Command, run func(cmd *cobra.Command, arg string, job flinkapi.JobID, c *flinkapi.Client) error) *cobra.Command {
	cmd.Args, cmd.ValidArgsFunction = args("JOB"), a.completeJobs
	cmd.RunE = func(cmd *cobra.Command, as []string) error {
		job, err := a.resolveJob(as[0])
		if err != nil {
			return err
		}
		c, err := a.flink()
		if err != nil {
			return err
		}
		return run(cmd, as[0], job, c)
	}
	return cmd
}

// completeJobs completes the ids of the cluster's jobs and the names of
// the applied jobs.
func (a *app) completeJobs(cmd *cobra.Command, as []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(as) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names, _ := a.state().deployments()
	if c, err := a.flink(); err == nil {
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		if jobs, err := c.JobsOverview(ctx); err == nil {
			for _, j := range jobs {
				names = append(names, string(j.ID)+"\t"+j.Name+" ("+string(j.State)+")")
			}
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// runOp runs op to its end with lifecycle.Run, storing its Progress in the
// state directory under key after every step (before the next one sends
// what it recorded), so that the same command run again after an
// interruption resumes the operation. The stored Progress is removed once
// the operation ended.
func (a *app) runOp(ctx context.Context, key, name string, op lifecycle.Stepper) (lifecycle.Progress, lifecycle.Result, error) {
	unlock, err := a.state().lock("op-" + key)
	if err != nil {
		return lifecycle.Progress{}, lifecycle.Result{}, err
	}
	defer unlock()
	path := a.state().path("operations", fileKey(key)+".json")
	var p lifecycle.Progress
	out := a.printer()
	found, err := readJSON(path, &p)
	switch {
	case err != nil:
		return p, lifecycle.Result{}, err
	case found && p.Done():
		p = lifecycle.Progress{}
	case found:
		out.Phase(name, "resuming the %s stored in %s (phase %s)", p.Operation, path, p.Phase)
	}
	ctx, cancel := a.withTimeout(ctx)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	report := out.Report(name)
	client := opClient(op)
	res, err := lifecycle.Run(ctx, op, &p, func(r lifecycle.Report) {
		if werr := writeJSON(path, r.Progress); werr != nil {
			stop(werr)
		}
		if a.output != "json" {
			// The progress line shows the savepoint's acknowledgement,
			// which Run does not read: one request per line.
			r.Savepoint, r.HasSavepoint = savepointProgress(ctx, client, &r.Progress)
		}
		report(r)
	})
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return p, res, cause
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return p, res, &exitError{code: exitTimedOut, msg: fmt.Sprintf("%s: not done within --timeout %v (phase %s); run the command again to go on", name, a.timeout, p.Phase)}
	}
	if err != nil {
		return p, res, err
	}
	if res.Done {
		if err := removeFile(path); err != nil {
			return p, res, err
		}
	}
	return p, res, nil
}

// recordSavepoint adds the savepoint of p to the history of job.
func (a *app) recordSavepoint(job flinkapi.JobID, p *lifecycle.Progress) error {
	rec, ok := p.Record()
	if !ok || rec.Location == "" {
		return nil
	}
	h, err := a.state().history(job)
	if err != nil {
		return err
	}
	return a.state().saveHistory(job, h.Add(rec))
}

// opResult is the JSON result of an imperative operation.
type opResult struct {
	Job      flinkapi.JobID         `json:"jobID"`
	Outcome  lifecycle.Outcome      `json:"outcome"`
	Reason   string                 `json:"reason,omitempty"`
	Location string                 `json:"location,omitempty"`
	Strategy lifecycle.StopStrategy `json:"strategy,omitempty"`
}

// finishOp reports the end of an operation and returns its exit error.
func (a *app) finishOp(name string, job flinkapi.JobID, p *lifecycle.Progress, text string) error {
	if a.output == "json" {
		if err := a.emitJSON(opResult{Job: job, Outcome: p.Outcome, Reason: p.Reason, Location: p.Savepoint.Location, Strategy: p.Stop.Strategy}); err != nil {
			return err
		}
	}
	if code := outcomeCode(p.Outcome); code != exitOK {
		return &exitError{code: code, msg: fmt.Sprintf("%s of job %s: %s: %s", name, job, p.Outcome, p.Reason)}
	}
	if a.output != "json" {
		a.printer().Phase(name, "%s", text)
	}
	return nil
}

// jobRow is a job of `jobs -o json`, in the JSON style of the stored
// status (status -o json): lowerCamel names, the same name for the same
// fact (jobID, jobState, name: the applied job's name), times in RFC 3339
// and durations as strings such as "1m30s".
type jobRow struct {
	JobID            flinkapi.JobID      `json:"jobID"`
	JobName          string              `json:"jobName"`
	JobState         flinkapi.JobState   `json:"jobState"`
	StartTime        time.Time           `json:"startTime,omitzero"`
	EndTime          time.Time           `json:"endTime,omitzero"`
	Duration         policy.Duration     `json:"duration"`
	LastModification time.Time           `json:"lastModification,omitzero"`
	Tasks            flinkapi.TaskCounts `json:"tasks"`
	// Name is the applied job (flinkctl apply) the job belongs to.
	Name string `json:"name,omitempty"`
}

// owners maps the job of each applied job that is not deleted to its
// name.
func (a *app) owners() map[flinkapi.JobID]string {
	owners := map[flinkapi.JobID]string{}
	names, _ := a.state().deployments()
	for _, n := range names {
		if d, ok, err := a.state().loadDeployment(n); err == nil && ok && !d.Removed && d.Status.JobID != "" {
			owners[d.Status.JobID] = n
		}
	}
	return owners
}

func (a *app) jobsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "jobs",
		Short: "List the cluster's jobs in a table",
		Long: `jobs lists the jobs of the cluster: id, state, running tasks, start time,
name, and the applied job (flinkctl apply) it belongs to.

` + exitCodesHelp,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.flink()
			if err != nil {
				return err
			}
			ctx, cancel := a.withTimeout(cmd.Context())
			defer cancel()
			jobs, err := c.JobsOverview(ctx)
			if err != nil {
				return err
			}
			sort.Slice(jobs, func(i, j int) bool { return jobs[i].StartTime.After(jobs[j].StartTime) })
			owners := a.owners()
			if a.output == "json" {
				rows := []jobRow{}
				for _, j := range jobs {
					rows = append(rows, jobRow{JobID: j.ID, JobName: j.Name, JobState: j.State, StartTime: j.StartTime, EndTime: j.EndTime,
						Duration: policy.Duration(j.Duration), LastModification: j.LastModification, Tasks: j.Tasks, Name: owners[j.ID]})
				}
				return a.emitJSON(rows)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "JOB ID\tSTATE\tTASKS\tSTARTED\tNAME\tAPPLIED AS")
			for _, j := range jobs {
				fmt.Fprintf(w, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.State, j.Tasks.Running, j.Tasks.Total,
					j.StartTime.UTC().Format(time.RFC3339), j.Name, orDash(owners[j.ID]))
			}
			return w.Flush()
		},
	}
}

func (a *app) savepointCmd() *cobra.Command {
	var dir string
	cmd := a.jobCommand(&cobra.Command{
		Use:   "savepoint JOB",
		Short: "Take a savepoint of a running job, which keeps running",
		Long: `savepoint triggers a savepoint of JOB (a job id, or the name of an applied
job) with a trigger id recorded first, follows it to its end and prints its
location; on a terminal a live line shows the acknowledged subtasks, the
size written and the time elapsed. The savepoint is added to JOB's history in
--state-dir, which "savepoints dispose --job" applies a retention to.
Interrupted, the same command resumes the same savepoint.

` + exitCodesHelp,
	}, func(cmd *cobra.Command, arg string, job flinkapi.JobID, c *flinkapi.Client) error {
		a.resume = "flinkctl savepoint " + arg
		env := a.env(c)
		env.TargetDirectory = dir
		p, _, err := a.runOp(cmd.Context(), "savepoint-"+string(job), "savepoint", &lifecycle.TakeSavepoint{Env: env, Job: job})
		if err != nil {
			return err
		}
		if err := a.recordSavepoint(job, &p); err != nil {
			return err
		}
		return a.finishOp("savepoint", job, &p, fmt.Sprintf("job %s: savepoint %s", job, p.Savepoint.Location))
	})
	cmd.Flags().StringVar(&dir, "target-dir", "", "where the savepoint goes (default: the cluster's savepoint directory)")
	return cmd
}

func (a *app) stopCmd() *cobra.Command {
	var strategy, mode, dir string
	var drain bool
	cmd := a.jobCommand(&cobra.Command{
		Use:   "stop JOB",
		Short: "Stop a job with a savepoint (strategy chosen by the cluster's version, or forced)",
		Long: `stop stops JOB (a job id, or the name of an applied job) keeping its state:
the strategy is chosen by the cluster's Flink version (Flink's stop with a
savepoint on every version flinkkit supports, 1.15 on), or forced with
--strategy. A job is never cancelled after its savepoint failed: it keeps
running, and stop exits 1. CancelWithoutState needs --mode Stateless.
The savepoint is added to JOB's history in --state-dir. Interrupted, the
same command resumes the same stop.

The job of an applied job (flinkctl apply) is stopped under its lock, and
the stop is recorded in its status: suspended, the savepoint its newest
state. The next apply starts it again from that savepoint, unless the job
file says state: Suspended. Stopping it without a savepoint is refused.

Strategies: StopWithSavepoint, CancelWithSavepoint, SavepointThenCancel,
CancelWithoutState.

` + exitCodesHelp,
	}, func(cmd *cobra.Command, arg string, job flinkapi.JobID, c *flinkapi.Client) error {
		ctx := cmd.Context()
		v, err := c.Version(ctx)
		if err != nil {
			return err
		}
		chosen, err := lifecycle.ChooseStopStrategy(v, policy.UpgradeMode(mode), lifecycle.StopStrategy(strategy))
		if err != nil {
			return err
		}
		// A job that apply manages: its deployment is locked while the
		// job stops (no apply acts on it meanwhile), and the stop is
		// recorded in its status.
		name := a.owners()[job]
		if name != "" {
			unlock, err := a.state().lock(fleetLock)
			if err != nil {
				return err
			}
			defer unlock()
			d, err := a.loadNamed(name)
			if err != nil {
				return err
			}
			switch {
			case d.Removed || d.Status.JobID != job:
				name = "" // no longer its job
			case d.Status.InFlight():
				return &exitError{code: exitBlocked, msg: fmt.Sprintf("job %s is the job of %s, whose %s is in flight: let `flinkctl apply` finish it first, or `flinkctl delete %s`",
					job, name, d.Status.Action, name)}
			case chosen == lifecycle.CancelWithoutState && policy.UpgradeMode(mode) == policy.UpgradeStateless:
				return &exitError{code: exitBlocked, msg: fmt.Sprintf("job %s is the job of %s: stopping it without a savepoint would leave its status without state to start from; `flinkctl stop %s` keeps its state, `flinkctl delete %s` ends it for good",
					job, name, arg, name)}
			}
		}
		a.resume = "flinkctl stop " + arg
		env := a.env(c)
		env.TargetDirectory = dir
		if a.output != "json" {
			a.printer().Phase("stop", "job %s with %s (Flink %s)", job, chosen, v)
		}
		p, _, err := a.runOp(ctx, "stop-"+string(job), "stop", &lifecycle.Stop{Env: env, Job: job, Mode: policy.UpgradeMode(mode), Strategy: chosen, Drain: drain})
		if err != nil {
			return err
		}
		if err := a.recordSavepoint(job, &p); err != nil {
			return err
		}
		text := fmt.Sprintf("job %s stopped (%s)", job, p.Stop.Strategy)
		if p.Savepoint.Location != "" {
			text += "; savepoint " + p.Savepoint.Location
		}
		if name != "" && p.Outcome == lifecycle.OutcomeSucceeded && p.Savepoint.Location != "" {
			if err := a.recordStop(ctx, c, name, job, &p); err != nil {
				return err
			}
			text += fmt.Sprintf("; recorded in %s's status as suspended: `flinkctl apply` starts it again from this savepoint, unless its job file says state: Suspended", name)
		}
		return a.finishOp("stop", job, &p, text)
	})
	cmd.Flags().StringVar(&strategy, "strategy", "", "force a strategy: StopWithSavepoint, CancelWithSavepoint, SavepointThenCancel or CancelWithoutState")
	cmd.Flags().StringVar(&mode, "mode", string(policy.UpgradeSavepoint), "the job's upgrade mode: Savepoint, LastState or Stateless (only Stateless allows CancelWithoutState)")
	cmd.Flags().BoolVar(&drain, "drain", false, "emit MAX_WATERMARK before a StopWithSavepoint, firing all event-time timers")
	cmd.Flags().StringVar(&dir, "target-dir", "", "where the savepoint goes (default: the cluster's savepoint directory)")
	_ = cmd.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions([]string{string(lifecycle.StopWithSavepoint), string(lifecycle.CancelWithSavepoint),
		string(lifecycle.SavepointThenCancel), string(lifecycle.CancelWithoutState)}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// recordStop records in the status of the applied job name that its job
// was stopped by `flinkctl stop` with the savepoint of p: suspended, the
// savepoint its newest state, as the Controller records a job it
// suspended itself. The next apply of a spec that says Running deploys
// the job from that savepoint; one that says Suspended finds it done;
// delete keeps the savepoint under the name. The caller holds name's
// lock.
func (a *app) recordStop(ctx context.Context, c *flinkapi.Client, name string, job flinkapi.JobID, p *lifecycle.Progress) error {
	d, err := a.loadNamed(name)
	if err != nil {
		return err
	}
	st := &d.Status
	rec, ok := p.Record()
	if !ok || rec.Location == "" {
		rec = savepoint.Record{Location: p.Savepoint.Location, Time: a.now(), JobID: job, Reason: savepoint.ReasonUser}
	}
	// Recorded as the controller records a savepoint: into the history,
	// which the retention trims by disposing, never by forgetting.
	st.Savepoints = st.Savepoints.Add(rec)
	if rec.Time.After(st.Latest.Time) || st.Latest.Location == "" {
		st.Latest = rec
	}
	st.JobState = flinkapi.JobCanceled
	if p.Stop.Strategy == lifecycle.StopWithSavepoint {
		st.JobState = flinkapi.JobFinished
	}
	if s, err := c.JobStatus(ctx, job); err == nil && s.IsGloballyTerminal() {
		st.JobState = s
	}
	st.Suspended, st.Settled, st.Situation = true, false, lifecycle.SituationSuspended
	st.State, st.Reason = policy.Suspended, lifecycle.ReasonSuspended
	st.Message = fmt.Sprintf("stopped by `flinkctl stop` (%s) with the savepoint %s; apply starts it again from it, unless the job file says state: Suspended",
		p.Stop.Strategy, rec.Location)
	return a.state().saveDeployment(&d)
}

// jobState says whether a job has state to lose: checkpointing on, or a
// checkpoint or savepoint completed. why says what shows it.
func jobState(ctx context.Context, c *flinkapi.Client, job flinkapi.JobID) (has bool, why string, err error) {
	if _, err := c.JobStatus(ctx, job); err != nil {
		return false, "", err
	}
	cfg, err := c.CheckpointConfig(ctx, job)
	switch {
	case err == nil && cfg.Interval > 0 && cfg.Interval < 365*24*time.Hour:
		return true, fmt.Sprintf("it checkpoints every %v", cfg.Interval), nil
	case err != nil && !errors.Is(err, flinkapi.ErrNotFound):
		return false, "", err
	}
	stats, err := c.Checkpoints(ctx, job)
	switch {
	case err == nil && stats.Counts.Completed > 0:
		return true, fmt.Sprintf("it has %d completed checkpoints or savepoints", stats.Counts.Completed), nil
	case err != nil && !errors.Is(err, flinkapi.ErrNotFound):
		return false, "", err
	}
	return false, "", nil
}

func (a *app) cancelCmd() *cobra.Command {
	var force bool
	cmd := a.jobCommand(&cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a job without a savepoint; refused for a job with state unless --force",
		Long: `cancel cancels JOB (a job id, or the name of an applied job) without taking a
savepoint, and waits until it is CANCELED. A job with state (checkpointing
on, or a checkpoint or savepoint completed) is refused, exit code 3, unless
--force: cancelling it loses what was not checkpointed; "flinkctl stop JOB"
keeps it.

` + exitCodesHelp,
	}, func(cmd *cobra.Command, arg string, job flinkapi.JobID, c *flinkapi.Client) error {
		ctx := cmd.Context()
		if !force {
			has, why, err := jobState(ctx, c, job)
			if err != nil {
				return err
			}
			if has {
				return &exitError{code: exitBlocked, msg: fmt.Sprintf("refused to cancel job %s: it has state (%s), which a cancel loses; `flinkctl stop %s` keeps it in a savepoint, --force cancels anyway",
					job, why, arg)}
			}
		}
		a.resume = "flinkctl cancel " + arg
		p, _, err := a.runOp(ctx, "cancel-"+string(job), "cancel", &lifecycle.Stop{Env: a.env(c), Job: job, Mode: policy.UpgradeStateless,
			Strategy: lifecycle.CancelWithoutState})
		if err != nil {
			return err
		}
		return a.finishOp("cancel", job, &p, fmt.Sprintf("job %s cancelled, no state kept", job))
	})
	cmd.Flags().BoolVar(&force, "force", false, "cancel a job with state too, losing it")
	return cmd
}

func (a *app) savepointsCmd() *cobra.Command {
	var storageDir string
	cmd := &cobra.Command{
		Use:   "savepoints [NAME] [--storage-dir DIR]",
		Short: "Savepoint histories: show one beside what lies on storage; dispose of old savepoints by a retention",
		Long: `savepoints NAME shows the savepoint history of the applied job NAME (its
status in --state-dir) and its restore points. With --storage-dir DIR, the
directory (or mount) on this machine where the cluster's checkpoints and
savepoints lie, as the file: or absolute paths Flink writes, it also audits
what lies there for the job, reading only under DIR and changing nothing:
savepoints the history lacks, incomplete snapshots, history records gone
from storage, retained checkpoints of the running and of replaced jobs,
with their sizes (see lifecycle.Controller.Audit).

` + exitCodesHelp,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeNames,
		RunE: func(cmd *cobra.Command, as []string) error {
			if len(as) == 0 {
				return cmd.Help()
			}
			return a.showSavepoints(cmd.Context(), as[0], storageDir)
		},
	}
	cmd.Flags().StringVar(&storageDir, "storage-dir", "", "audit the cluster's state under this local directory (file: or absolute paths) against the history")
	cmd.AddCommand(a.disposeCmd())
	return cmd
}

// savepointsResult is the JSON result of savepoints NAME.
type savepointsResult struct {
	Name        string                  `json:"name"`
	JobID       flinkapi.JobID          `json:"jobID,omitempty"`
	Latest      savepoint.Record        `json:"latest,omitzero"`
	UpgradeFrom savepoint.Record        `json:"upgradeFrom,omitzero"`
	Savepoints  []savepoint.Record      `json:"savepoints"`
	Audit       *lifecycle.StorageAudit `json:"audit,omitempty"`
}

// showSavepoints prints the history of the applied job name and, with
// storageDir, the audit of what lies under it.
func (a *app) showSavepoints(ctx context.Context, name, storageDir string) error {
	d, err := a.loadNamed(name)
	if err != nil {
		return err
	}
	st := &d.Status
	res := savepointsResult{Name: name, JobID: st.JobID, Latest: st.Latest, UpgradeFrom: st.UpgradeFrom, Savepoints: st.Savepoints.Records}
	if res.Savepoints == nil {
		res.Savepoints = []savepoint.Record{}
	}
	if storageDir != "" {
		root, err := filepath.Abs(storageDir)
		if err != nil {
			return badInput("--storage-dir: %v", err)
		}
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return badInput("--storage-dir %s: not a directory", storageDir)
		}
		c, err := a.flink()
		if err != nil {
			return err
		}
		ctrl, err := a.controller(c, name)
		if err != nil {
			return err
		}
		ctrl.Storage = scopedStorage{root: root}
		audit, err := ctrl.Audit(ctx, d.Spec, *st)
		if err != nil {
			return err
		}
		res.Audit = &audit
	}
	if a.output == "json" {
		return a.emitJSON(res)
	}
	fmt.Fprintf(a.stdout, "%s: job %s, %d savepoints in the history\n", name, orDash(string(st.JobID)), len(res.Savepoints))
	for _, r := range res.Savepoints {
		mark := ""
		switch r.Location {
		case st.Latest.Location:
			mark = "  (latest)"
		case st.UpgradeFrom.Location:
			mark = "  (rollback point)"
		}
		fmt.Fprintf(a.stdout, "  %s  %-9s %s%s\n", r.Time.UTC().Format(time.RFC3339), orDash(string(r.Reason)), r.Location, mark)
	}
	if res.Audit != nil {
		fmt.Fprint(a.stdout, res.Audit.String())
	}
	return nil
}

// scopedStorage is the local file system under root, read only: paths
// elsewhere are refused (lifecycle.ErrStoragePath), and nothing is
// deleted.
type scopedStorage struct{ root string }

// check refuses a path outside root.
func (s scopedStorage) check(p string) error {
	local := strings.TrimPrefix(p, "file:")
	if rest, ok := strings.CutPrefix(local, "//"); ok {
		_, path, _ := strings.Cut(rest, "/")
		local = "/" + path
	}
	local = filepath.Clean(local)
	if local != s.root && !strings.HasPrefix(local, s.root+string(filepath.Separator)) {
		return fmt.Errorf("%w: %s is not under --storage-dir %s", lifecycle.ErrStoragePath, p, s.root)
	}
	return nil
}

func (s scopedStorage) List(ctx context.Context, dir string) ([]string, error) {
	if err := s.check(dir); err != nil {
		return nil, err
	}
	return lifecycle.LocalStorage{}.List(ctx, dir)
}

func (s scopedStorage) Entries(ctx context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	if err := s.check(dir); err != nil {
		return nil, err
	}
	return lifecycle.LocalStorage{}.Entries(ctx, dir)
}

func (s scopedStorage) Delete(_ context.Context, p string) error {
	return fmt.Errorf("%w: flinkctl savepoints reads, it does not delete %s", lifecycle.ErrStoragePath, p)
}

func (a *app) disposeCmd() *cobra.Command {
	var job string
	var keep int
	var maxAge time.Duration
	var yes, disposeUpdate, disposeUser bool
	cmd := &cobra.Command{
		Use:   "dispose [NAME] [--job JOB] [--keep N] [--max-age D] [--yes]",
		Short: "Dispose of old savepoints by a retention; a dry run unless --yes",
		Long: `dispose applies a retention to a savepoint history and disposes of what it
chooses through Flink's savepoint disposal: the savepoints of the applied job
NAME (its status in --state-dir), or with --job those flinkctl took of JOB
(savepoint, stop). --keep N keeps the newest N, --max-age D disposes of
those older than D. Never disposed of: the newest savepoint, the one the job
runs from, its rollback point and the final savepoint recorded under NAME;
for NAME also those taken for an update or by a user unless
--dispose-update/--dispose-user.

Without --yes it is a dry run: it lists what it would dispose of and exits 0.

` + exitCodesHelp,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeNames,
		RunE: func(cmd *cobra.Command, as []string) error {
			if len(as) == 1 == (job != "") {
				return badInput("name either an applied job (NAME) or --job JOB, not both and not neither")
			}
			if keep <= 0 && maxAge <= 0 {
				return badInput("set --keep N (N > 0) or --max-age D, the retention to apply")
			}
			if keep < 0 || maxAge < 0 {
				return badInput("--keep and --max-age must not be negative")
			}
			ret := savepoint.RetentionOptions{MaxCount: keep, MaxAge: maxAge, DisposeUpdate: disposeUpdate, DisposeUser: disposeUser}
			if job != "" {
				id, err := a.resolveJob(job)
				if err != nil {
					return err
				}
				ret.DisposeUser, ret.DisposeUpdate = true, true // all taken by hand with flinkctl
				return a.dispose(cmd.Context(), "job-"+string(id), ret, yes,
					func() (savepoint.History, error) { return a.state().history(id) },
					func(h savepoint.History) error { return a.state().saveHistory(id, h) })
			}
			return a.disposeNamed(cmd.Context(), as[0], ret, yes)
		},
	}
	cmd.Flags().StringVar(&job, "job", "", "dispose of the savepoints flinkctl took of this job (id or name)")
	cmd.Flags().IntVar(&keep, "keep", 0, "keep the newest N savepoints")
	cmd.Flags().DurationVar(&maxAge, "max-age", 0, "dispose of savepoints older than this (e.g. 72h)")
	cmd.Flags().BoolVar(&yes, "yes", false, "dispose of them; without it, only list them (dry run)")
	cmd.Flags().BoolVar(&disposeUpdate, "dispose-update", false, "NAME: savepoints taken for an update may go too")
	cmd.Flags().BoolVar(&disposeUser, "dispose-user", false, "NAME: savepoints taken by a user may go too")
	return cmd
}

// disposeNamed disposes of savepoints of the applied job name.
func (a *app) disposeNamed(ctx context.Context, name string, ret savepoint.RetentionOptions, yes bool) error {
	if err := checkName(name); err != nil {
		return err
	}
	unlock, err := a.state().lock(fleetLock)
	if err != nil {
		return err
	}
	defer unlock()
	d, err := a.loadNamed(name)
	if err != nil {
		return err
	}
	if d.Status.InFlight() {
		return &exitError{code: exitBlocked, msg: fmt.Sprintf("%s: %s is in flight; let `flinkctl apply` finish it first", name, d.Status.Action)}
	}
	st := &d.Status
	for _, loc := range []string{st.Latest.Location, st.UpgradeFrom.Location, st.Progress.Replace.RestoreFrom} {
		if loc != "" {
			ret.InUse = append(ret.InUse, loc)
		}
	}
	store, err := a.state().restorePoints()
	if err != nil {
		return err
	}
	if rec, ok, err := store.Get(ctx, name); err != nil {
		return err
	} else if ok {
		ret.InUse = append(ret.InUse, rec.Location)
	}
	return a.dispose(ctx, "deployment-"+name, ret, yes,
		func() (savepoint.History, error) { return st.Savepoints, nil },
		func(h savepoint.History) error { st.Savepoints = h; return a.state().saveDeployment(&d) })
}

// disposeResult is the JSON result of savepoints dispose.
type disposeResult struct {
	DryRun   bool               `json:"dryRun"`
	Chosen   []savepoint.Record `json:"chosen"`
	Disposed []string           `json:"disposed"`
	Failed   []string           `json:"failed,omitempty"`
	Reason   string             `json:"reason,omitempty"`
}

// dispose applies ret to the history load reads, and with yes disposes of
// what it chose, then saves the history without them.
func (a *app) dispose(ctx context.Context, key string, ret savepoint.RetentionOptions, yes bool,
	load func() (savepoint.History, error), save func(savepoint.History) error) error {
	h, err := load()
	if err != nil {
		return err
	}
	out := a.printer()
	chosen := savepoint.ChooseDisposals(h.Records, ret, a.now())
	res := disposeResult{DryRun: !yes, Chosen: chosen, Disposed: []string{}}
	if res.Chosen == nil {
		res.Chosen = []savepoint.Record{}
	}
	if !yes || len(chosen) == 0 {
		if a.output == "json" {
			return a.emitJSON(res)
		}
		verb := "would dispose of"
		if yes {
			verb = "disposes of"
		}
		out.Phase("dispose", "%s %d of %d savepoints", verb, len(chosen), len(h.Records))
		for _, r := range chosen {
			fmt.Fprintf(a.stdout, "  %s  %s  %s\n", r.Time.UTC().Format(time.RFC3339), orDash(string(r.Reason)), r.Location)
		}
		if !yes && len(chosen) > 0 {
			fmt.Fprintln(a.stdout, "dry run: add --yes to dispose of them")
		}
		return nil
	}
	c, err := a.flink()
	if err != nil {
		return err
	}
	a.resume = "the same savepoints dispose command"
	op := &lifecycle.DisposeSavepoints{Env: a.env(c), History: h, Retention: ret}
	p, _, err := a.runOp(ctx, "dispose-"+key, "dispose", op)
	if err != nil {
		return err
	}
	// Those dealt with, less those the Reason names as failed (a
	// savepoint already gone counts as disposed of).
	done := op.Chosen(&p)
	for i, r := range done {
		if i >= p.Dispose.Disposed {
			break
		}
		if strings.Contains(p.Reason, r.Location+": ") && !strings.Contains(p.Reason, r.Location+": already gone") {
			res.Failed = append(res.Failed, r.Location)
		} else {
			res.Disposed = append(res.Disposed, r.Location)
		}
	}
	res.Chosen, res.Reason = done, p.Reason
	if err := save(h.Remove(res.Disposed...)); err != nil {
		return err
	}
	if a.output == "json" {
		if err := a.emitJSON(res); err != nil {
			return err
		}
	} else {
		out.Phase("dispose", "%d of %d savepoints disposed of", len(res.Disposed), len(done))
		for _, l := range res.Disposed {
			fmt.Fprintf(a.stdout, "  disposed  %s\n", l)
		}
	}
	if p.Outcome != lifecycle.OutcomeSucceeded {
		return &exitError{code: exitFailed, msg: "dispose: " + p.Reason}
	}
	return nil
}

// opClient is the client of the operations that take savepoints.
func opClient(op lifecycle.Stepper) lifecycle.API {
	switch o := op.(type) {
	case *lifecycle.TakeSavepoint:
		return o.Client
	case *lifecycle.Stop:
		return o.Client
	}
	return nil
}
