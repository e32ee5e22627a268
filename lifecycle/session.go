package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Claim is what one deployment on a shared session cluster holds: its
// spec and its stored status, as the caller keeps them.
type Claim struct {
	Spec   JobSpec
	Status JobStatus
}

// jars are the uploaded jars c uses or may use again: the spec's, the
// one uploaded from its jar file, those of the deployed, stable and
// target templates, the upload of the stable template's build (a
// rollback runs it), and the one an operation in flight uploaded.
func (c Claim) jars() []flinkapi.JarID {
	st := &c.Status
	return []flinkapi.JarID{c.Spec.Job.JarID, st.JarID, st.Deployed.JarID, st.Stable.JarID, st.Target.JarID, st.Progress.Submit.JarID, st.StableJarID}
}

// jobs are the Flink jobs c runs or is about to run: its job, the one an
// operation in flight started or is about to start, the one it replaces,
// and one it may adopt (not one it found and refused as not its own:
// OutcomeForeignJob).
func (c Claim) jobs() []flinkapi.JobID {
	st, p := &c.Status, &c.Status.Progress
	adopt := p.Replace.Observed.Adopt
	if p.Outcome == OutcomeForeignJob {
		adopt = ""
	}
	return []flinkapi.JobID{st.JobID, p.JobID, p.Submit.NewJobID, p.Replace.PreviousJobID, p.Target, adopt}
}

// Defaults of SessionOptions.
const (
	// DefaultJarGrace is SessionOptions.JarGrace's default.
	DefaultJarGrace = 15 * time.Minute
	// DefaultJobGrace is SessionOptions.JobGrace's default.
	DefaultJobGrace = 5 * time.Minute
)

// SessionOptions tune the housekeeping of a session cluster.
type SessionOptions struct {
	// JarGrace keeps jars uploaded less than this long ago
	// (DefaultJarGrace): a submit may have uploaded one and not yet
	// stored its id.
	JarGrace time.Duration
	// JobGrace leaves out of the report jobs started less than this long
	// ago (DefaultJobGrace): a submit may have started one whose status
	// the caller has not stored yet.
	JobGrace time.Duration
	// Keep, if set, protects jars that are not flinkkit's: a jar for
	// which it returns true is never deleted.
	Keep func(flinkapi.Jar) bool
}

// SessionReport is what SessionPlan found and CleanSession did.
type SessionReport struct {
	// UnusedJars are the jars no claim uses, older than the grace, that
	// Keep does not protect: CleanSession deletes them.
	UnusedJars []flinkapi.Jar
	// Deleted are the jars CleanSession deleted (or found already gone).
	Deleted []flinkapi.JarID
	// Unclaimed are the jobs that have not ended and that no claim runs,
	// started before the grace. Nothing stops them; to stop one with a
	// savepoint recorded, run UnclaimedTeardown.
	Unclaimed []flinkapi.JobOverview
}

// SessionPlan is the pure part of CleanSession: from the cluster's jars
// and jobs, the claims of every deployment that uses the cluster, and the
// time, the jars to delete and the jobs no claim runs. Jars of a running
// job stay while a claim names them (a restart of the job runs its jar
// again); a claim of a deleted deployment should be left out.
func SessionPlan(jars []flinkapi.Jar, jobs []flinkapi.JobOverview, claims []Claim, opts SessionOptions, now time.Time) SessionReport {
	usedJars := map[flinkapi.JarID]bool{}
	claimed := map[flinkapi.JobID]bool{}
	for _, c := range claims {
		for _, j := range c.jars() {
			usedJars[j] = true
		}
		for _, j := range c.jobs() {
			claimed[j] = true
		}
	}
	var r SessionReport
	jarGrace, jobGrace := orDefault(opts.JarGrace, DefaultJarGrace), orDefault(opts.JobGrace, DefaultJobGrace)
	for _, j := range jars {
		if usedJars[j.ID] || now.Sub(j.Uploaded) < jarGrace || opts.Keep != nil && opts.Keep(j) {
			continue
		}
		r.UnusedJars = append(r.UnusedJars, j)
	}
	for _, j := range jobs {
		if j.State.IsGloballyTerminal() || claimed[j.ID] || now.Sub(j.StartTime) < jobGrace {
			continue
		}
		r.Unclaimed = append(r.Unclaimed, j)
	}
	slices.SortFunc(r.UnusedJars, func(a, b flinkapi.Jar) int { return a.Uploaded.Compare(b.Uploaded) })
	slices.SortFunc(r.Unclaimed, func(a, b flinkapi.JobOverview) int { return a.StartTime.Compare(b.StartTime) })
	return r
}

// CleanSession keeps a session cluster shared by many deployments tidy:
// it reads the cluster's jars and jobs (GET /jars, GET /jobs/overview),
// plans with SessionPlan, and deletes the jars no claim uses (DELETE
// /jars/:jarid; one Flink no longer knows counts as deleted). It stops no
// job; the report lists the jobs no claim runs. Every request is safe to
// repeat, so a caller that dies midway calls it again. It returns the
// report so far and the first error; claims must cover every deployment
// that uses the cluster's jars (or Keep must protect the others).
func CleanSession(ctx context.Context, c API, claims []Claim, opts SessionOptions, now time.Time) (SessionReport, error) {
	jars, err := c.ListJars(ctx)
	if err != nil {
		return SessionReport{}, fmt.Errorf("lifecycle: session housekeeping: listing the jars: %w", err)
	}
	jobs, err := c.JobsOverview(ctx)
	if err != nil {
		return SessionReport{}, fmt.Errorf("lifecycle: session housekeeping: listing the jobs: %w", err)
	}
	r := SessionPlan(jars, jobs, claims, opts, now)
	for _, j := range r.UnusedJars {
		if err := c.DeleteJar(ctx, j.ID); err != nil && !flinkapi.IsJarNotFound(err) {
			return r, fmt.Errorf("lifecycle: session housekeeping: deleting jar %s: %w", j.ID, err)
		}
		r.Deleted = append(r.Deleted, j.ID)
	}
	return r, nil
}

// UnclaimedName is the name under which UnclaimedTeardown records the
// savepoint of a job no claim ran.
func UnclaimedName(job flinkapi.JobID) string { return "unclaimed/" + string(job) }

// UnclaimedTeardown is the Teardown that stops a job of
// SessionReport.Unclaimed with a savepoint and records it in store under
// UnclaimedName(job); a job that cannot be stopped with a savepoint is
// left running (OutcomeLeftRunning). Run it like any operation, with its
// Progress stored after every Step.
func UnclaimedTeardown(env Env, store RestorePointStore, job flinkapi.JobID) *Teardown {
	return &Teardown{Env: env, Job: job, Store: store, Name: UnclaimedName(job)}
}
