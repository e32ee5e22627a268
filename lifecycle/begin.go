package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
)

// checkStatus reports what in st no Controller of this release writes.
func checkStatus(st *JobStatus) error {
	if err := checkFormats(st); err != nil {
		return err
	}
	if _, ok := actions[st.Action]; !ok && st.Action != "" {
		return fmt.Errorf("%w: unknown action %q", ErrInvalidStatus, st.Action)
	}
	if err := checkStatusProgress(st); err != nil {
		return err
	}
	if op := actions[st.Action].operation; op != "" && st.InFlight() {
		// What the action's Step would refuse, refused before the status
		// is changed.
		job := st.JobID
		if op == opDispose {
			job = ""
		}
		if err := check(&st.Progress, op, job); err != nil {
			return err
		}
	}
	return nil
}

// checkFormats reports a Progress or history in st of a format this
// release does not read.
func checkFormats(st *JobStatus) error {
	if err := format.Check("lifecycle.Progress", st.Progress.FormatVersion, FormatVersion); err != nil {
		return err
	}
	// Histories a later flinkkit wrote decode to their version alone:
	// refused here, before they are used or written back.
	if err := st.Savepoints.CheckFormat(); err != nil {
		return err
	}
	return st.Health.CheckFormat()
}

// checkStatusProgress reports a phase, outcome or recorded location of
// st's Progress that no action of this release writes.
func checkStatusProgress(st *JobStatus) error {
	p := &st.Progress
	switch {
	case !knownPhases[p.Phase]:
		return fmt.Errorf("%w: progress in unknown phase %q", ErrInvalidStatus, p.Phase)
	case !knownOutcomes[p.Outcome] || !knownOutcomes[p.Replace.Ending] || !knownOutcomes[p.Replace.StopOutcome]:
		return fmt.Errorf("%w: progress with unknown outcome %q", ErrInvalidStatus, p.Outcome)
	case p.Phase != "" && (p.Outcome != "") != (p.Phase == PhaseDone):
		return fmt.Errorf("%w: progress in phase %q with outcome %q", ErrInvalidStatus, p.Phase, p.Outcome)
	case p.Phase != "" && st.Action == "":
		return fmt.Errorf("%w: progress in phase %q of no action", ErrInvalidStatus, p.Phase)
	case p.Phase == PhaseRecord && !reportedByFlink(p):
		return fmt.Errorf("%w: progress records the location %q, which Flink did not report for job %s", ErrInvalidStatus,
			teardownRecord(p).Location, jobName(p.Replace.PreviousJobID))
	}
	return nil
}

// withDigest is spec with the digest of its jar file's content, read
// from Env.Jars when the file changed since it was last read; a file
// that does not exist keeps the digest of the deployed template of the
// same file. A file Jars refuses is an error matching ErrInvalidSpec,
// returned before any of it is read; a context that ends during the read
// is its error. Arguments that name secrets where a Deployer starts the
// job are an error matching ErrInvalidSpec too.
func (c *Controller) withDigest(ctx context.Context, spec JobSpec, st *JobStatus) (JobSpec, error) {
	if names, _ := secretNames(spec.Job.Args); len(names) > 0 && c.Deployer != nil {
		return spec, fmt.Errorf("%w: job.args name secrets (%s), %s", ErrInvalidSpec, strings.Join(names, ", "), deployerSecrets)
	}
	return c.digested(ctx, spec, st)
}

// digested is withDigest once the spec's arguments are known to be ones
// the Controller may run.
func (c *Controller) digested(ctx context.Context, spec JobSpec, st *JobStatus) (JobSpec, error) {
	t := &spec.Job
	if t.JarFile == "" || t.JarID != "" || c.Deployer != nil {
		return spec, nil
	}
	digest := c.Jars.digest
	if c.Shared != nil {
		digest = func(ctx context.Context, file string) (string, error) { return c.Shared.jarDigest(ctx, c.Jars, file) }
	}
	d, err := digest(ctx, t.JarFile)
	switch {
	case errors.Is(err, ErrInvalidSpec):
		return spec, err
	case err != nil && ctx.Err() != nil:
		return spec, err
	case err != nil && st.Deployed.JarFile == t.JarFile:
		d = st.Deployed.JarDigest
	case err != nil:
		d = ""
	}
	// The spec may be stored in st: a copy of the caller's arguments, or
	// the status's own when they are equal.
	if len(t.Args) > 0 && slices.Equal(t.Args, st.Deployed.Args) {
		t.Args = st.Deployed.Args
	} else {
		t.Args = slices.Clone(t.Args)
	}
	if len(t.FlinkConfiguration) > 0 && sameConfig(t.FlinkConfiguration, st.Deployed.FlinkConfiguration) {
		t.FlinkConfiguration = st.Deployed.FlinkConfiguration
	}
	t.JarDigest = d
	return spec, nil
}

// jarID is the uploaded jar to run t with: its own, or the one uploaded
// from the same file before; empty: upload t.JarFile.
func (c *Controller) jarID(t JobTemplate, st *JobStatus) flinkapi.JarID {
	switch {
	case t.JarID != "":
		return t.JarID
	case st.JarID != "" && st.JarFile == t.JarFile && (st.JarDigest == t.JarDigest || t.JarDigest == "" || st.JarDigest == ""):
		// Uploaded from the same file, whose content did not change.
		return st.JarID
	}
	// The stable template's build, uploaded before the file was
	// rebuilt: a rollback runs it (keepStableJar).
	return stableJar(t, st)
}

// withSecrets returns ctx carrying the secrets that the job's arguments
// name, in the spec and in every template the status records (whose
// values may have reached Flink before), read from c.Secrets.
func (c *Controller) withSecrets(ctx context.Context, spec JobSpec, st *JobStatus) context.Context {
	lists := [][]string{spec.Job.Args, st.Deployed.Args, st.Target.Args, st.Stable.Args}
	if as := st.ActionSpec; as != nil {
		lists = append(lists, as.Job.Args)
	}
	return withSecrets(ctx, c.Secrets, lists...)
}

// begin checks st's format, owner and content, and only then records the
// format this release writes and the owner: a status that is refused is
// left as it was.
func (c *Controller) begin(ctx context.Context, st *JobStatus) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := format.Check("lifecycle.JobStatus", st.FormatVersion, FormatVersion); err != nil {
		return err
	}
	if st.Name != "" && st.Name != c.Name {
		return fmt.Errorf("%w: it was written for %q, not for %q", ErrForeignStatus, st.Name, c.Name)
	}
	if c.Store != nil && c.Name != "" {
		// The name is the restore points' key: refused here, before any
		// request, rather than by the store at the first delete.
		if err := checkName(c.Name); err != nil {
			return err
		}
	}
	if err := checkStatus(st); err != nil {
		return err
	}
	if st.FormatVersion < formatCheckpointAction {
		// A trigger in flight beside the job, as formats 3 to 6 kept it:
		// dropped (see CheckpointTrigger).
		st.Checkpoint.TriggerID, st.Checkpoint.Sent = "", false
	}
	st.FormatVersion, st.Name = FormatVersion, c.Name
	return nil
}
