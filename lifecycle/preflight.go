package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// PreflightPolicy says what the Controller checks before an upgrade or
// rescale stops the old job: the plan of the new job, which Flink builds
// from the jar without running it (POST /jars/:jarid/plan), against the
// old job's vertices (a vertex whose state the new job would not restore,
// a parallelism above a vertex's maximum), and the task slots the new job
// needs against those of the session cluster. A check that refuses ends
// the action Blocked before anything is stopped; the old job runs on.
// The zero value checks everything.
type PreflightPolicy struct {
	// Disabled turns the preflight off: the old job is stopped first and
	// the new job's start tells.
	Disabled bool `json:"disabled,omitempty"`
	// ElasticSlots says that the session cluster starts TaskManagers on
	// demand (Flink's native Kubernetes or YARN session mode): its free
	// task slots do not bound a new job, and they are not checked.
	ElasticSlots bool `json:"elasticSlots,omitempty"`
}

// PreflightSkip says why an upgrade ran no preflight.
type PreflightSkip string

// Why a preflight did not run.
const (
	// PreflightSkipApplication: the new job starts in a cluster of its
	// own (a Deployer), where no JobManager has its jar before.
	PreflightSkipApplication PreflightSkip = "ApplicationCluster"
	// PreflightSkipNotUploaded (Plan only): the new jar is not uploaded
	// yet, so Flink cannot plan its job; the action uploads it and checks
	// before anything is stopped.
	PreflightSkipNotUploaded PreflightSkip = "NotUploaded"
)

// Preflight is what the preflight of an Upgrade read and found, before
// the old job was touched (Progress.Replace.Preflight, format 4).
type Preflight struct {
	// Skipped says why no check ran; empty when it did.
	Skipped PreflightSkip `json:"skipped,omitempty"`
	// New are the vertices of the new job's plan, once NewRead.
	New     []policy.PlanVertex `json:"new,omitempty"`
	NewRead bool                `json:"newRead,omitempty"`
	// Old are the old job's vertices, once OldRead, and Held the task
	// slots its running tasks hold (free again once it stops).
	Old     []policy.PlanVertex `json:"old,omitempty"`
	OldRead bool                `json:"oldRead,omitempty"`
	Held    int                 `json:"held,omitempty"`
	// State is the state each old vertex holds in the old job's snapshot
	// the new job's state is judged from, once StateRead: read only when
	// the new plan lacks vertices of the old job, from the details of the
	// newest completed checkpoint or savepoint (or of the one the new
	// job restores, when that is known).
	State     policy.StateSizes `json:"state,omitzero"`
	StateRead bool              `json:"stateRead,omitempty"`
	// FreeSlots and TotalSlots are the session cluster's, once SlotsRead.
	FreeSlots  int  `json:"freeSlots,omitempty"`
	TotalSlots int  `json:"totalSlots,omitempty"`
	SlotsRead  bool `json:"slotsRead,omitempty"`
	// Verdict is the comparison, once made.
	Verdict *policy.PreflightVerdict `json:"verdict,omitempty"`
}

// DeepCopy returns a deep copy of in, or nil for nil.
func (in *Preflight) DeepCopy() *Preflight {
	if in == nil {
		return nil
	}
	out := *in
	out.New, out.Old = slices.Clone(in.New), slices.Clone(in.Old)
	in.State.DeepCopyInto(&out.State)
	out.Verdict = in.Verdict.DeepCopy()
	return &out
}

// startPreflight begins the preflight of r on p, or records why none
// runs; it reports whether one runs.
//
// seed, if set, is the old job's part of the preflight (Old, Held,
// OldRead) from the job details that the call which started the
// operation read: it is recorded, and the job is not read again.
func (r *replacer) startPreflight(p *Progress, seed *Preflight) bool {
	if r.preflight == nil || r.preflight.Disabled {
		return false
	}
	if r.deployer != nil {
		p.Replace.Preflight = &Preflight{Skipped: PreflightSkipApplication}
		return false
	}
	p.Replace.Preflight = &Preflight{}
	if seed != nil && seed.OldRead && r.job != "" {
		p.Replace.Preflight.Old, p.Replace.Preflight.Held, p.Replace.Preflight.OldRead = seed.Old, seed.Held, true
	}
	p.Phase = PhasePreflight
	return true
}

// stepPreflight sends the preflight's next request (one per step): the
// jar's upload if it has no id yet, the new job's plan, the old job's
// vertices, when the new plan lacks some of them their state (the old
// job's checkpoint statistics, then a snapshot's details), the cluster's
// slots; then compares them, and ends the
// operation Blocked when the verdict refuses, before anything is
// stopped, or goes on to observe the old job.
func (r *replacer) stepPreflight(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	if !now.Before(p.Deadline) && p.LastError != "" {
		return finish(p, OutcomeTimedOut, "the deadline passed during the preflight: "+p.LastError), nil
	}
	f := r.preflightRun()
	more, err := f.read(ctx, p)
	switch {
	case err != nil:
		return f.failed(p, err), nil
	case more:
		return Result{}, nil
	}
	return r.preflightVerdict(ctx, p, now)
}

// preflightRun is the preflight of r.
func (r *replacer) preflightRun() *preflightRun {
	return &preflightRun{client: r.client, pol: r.preflight, job: r.job, jarID: r.submit.JarID, jarFile: r.submit.JarFile, jars: r.submit.Jars, run: r.submit.Run,
		timing: r.timing}
}

// preflightRun reads what a preflight compares: of an Upgrade, whose new
// job starts once the old one stopped (the slots the old job holds count
// as free), or of a BlueGreen or Canary, whose new job runs beside the
// old one (Beside: only the cluster's free slots count).
type preflightRun struct {
	client  API
	pol     *PreflightPolicy
	job     flinkapi.JobID // the old job; empty: none
	jarID   flinkapi.JarID // configured; empty: Progress.JarID, once JarFile is uploaded
	jarFile string
	jars    *Jars // where jarFile is read
	run     flinkapi.RunJarRequest
	timing  Timing
	beside  bool
}

// read sends the preflight's next request and records its answer in
// p.Preflight; it reports false, sending nothing, once all is read.
func (f *preflightRun) read(ctx context.Context, p *Progress) (bool, error) {
	pf, api := p.Replace.Preflight, f.client
	var err error
	switch {
	case p.Submit.JarID == "" && f.jarID == "":
		var jar flinkapi.JarID
		if jar, err = f.jars.upload(ctx, f.client, f.jarFile); err == nil {
			p.Submit.JarID = jar
		}
	case !pf.NewRead:
		var plan *flinkapi.Plan
		if plan, err = api.JarPlan(ctx, f.jar(p), f.run.PlanRequest()); err == nil {
			pf.New, pf.NewRead = policy.NewJobPlan(plan, nil).Vertices, true
		}
	case !pf.OldRead && f.job != "":
		var d *flinkapi.JobDetails
		d, err = f.client.Job(ctx, f.job)
		switch {
		case err == nil:
			pf.Old, pf.Held, pf.OldRead = planOf(d), heldSlots(d), true
		case flinkapi.IsJobNotFound(err):
			pf.OldRead, err = true, nil // nothing to compare with: the observation finds it gone
		}
	case !pf.StateRead && f.job != "" && pf.dropsVertices():
		err = readOldState(ctx, api, f.job, f.run.SavepointPath, pf)
	case f.checkSlots() && !pf.SlotsRead:
		var ov *flinkapi.ClusterOverview
		if ov, err = api.Overview(ctx); err == nil {
			pf.FreeSlots, pf.TotalSlots, pf.SlotsRead = ov.SlotsAvailable, ov.SlotsTotal, true
		}
	default:
		return false, nil
	}
	if err == nil {
		p.LastError, p.Requests = "", 0
	}
	return true, err
}

// jar is the jar the new job runs: the configured one, or the one the
// preflight uploaded.
func (f *preflightRun) jar(p *Progress) flinkapi.JarID {
	if f.jarID != "" {
		return f.jarID
	}
	return p.Submit.JarID
}

func (f *preflightRun) checkSlots() bool {
	return f.pol != nil && !f.pol.ElasticSlots
}

// failed handles a failed request of the preflight: a program that cannot
// build its job graph, or a jar Flink does not have, ends the operation
// before anything is stopped; any other error is tried again.
func (f *preflightRun) failed(p *Progress, err error) Result {
	switch {
	case flinkapi.IsProgramError(err), flinkapi.IsJarNotFound(err), permanent(err):
		p.Replace.Decision = policy.ReasonPreflightRefused
		return finish(p, OutcomeBlocked, "preflight: Flink cannot build the new job's plan ("+errWithCause(err)+")"+leftAlone(f.job))
	}
	p.Requests++
	p.LastError = errMessage(err)
	return Result{RequeueAfter: f.timing.backoff(p.Requests)}
}

// verdict judges what f read into p.Preflight, and records it there.
func (f *preflightRun) verdict(p *Progress) policy.PreflightVerdict {
	v := p.Replace.Preflight.judge(f.run.AllowNonRestoredState, f.checkSlots(), f.beside)
	p.Replace.Preflight.Verdict = &v
	return v
}

// leftAlone says what a refused preflight left: nothing started, and the
// old job, if there is one, as it was (it need not run: a redeploy's
// job has ended).
func leftAlone(job flinkapi.JobID) string {
	if job == "" {
		return "; nothing was started"
	}
	return "; nothing was started, the job " + string(job) + " is left as it was"
}

// preflightVerdict compares what the preflight read: it ends the
// operation Blocked when the verdict refuses, else goes on to observe the
// old job.
func (r *replacer) preflightVerdict(ctx context.Context, p *Progress, now time.Time) (Result, error) {
	v := r.preflightRun().verdict(p)
	p.LastError = ""
	if !v.Allowed() {
		p.Replace.Decision = policy.ReasonPreflightRefused
		return finish(p, OutcomeBlocked, "preflight: "+v.Message()+leftAlone(r.job)), nil
	}
	if r.job == "" {
		p.Replace.Observed.Missing = true
		return r.decide(ctx, p, now)
	}
	// The verdict sent nothing: the old job's state is read in this
	// step.
	p.Phase = PhaseObserve
	return r.stepObserve(ctx, p, now)
}

// judge compares what pf read: the new plan against the old job's
// vertices, and the slots it needs against the free ones and those the
// old job holds (beside: the free ones only, as both jobs run at once).
// With no old job only the new plan and the slots are checked, and a new
// job is refused only if the cluster could never run it; one that has to
// wait for slots to free up waits.
func (pf *Preflight) judge(allowNonRestored, checkSlots, beside bool) policy.PreflightVerdict {
	opts := policy.PreflightOptions{AllowNonRestoredState: allowNonRestored, CheckSlots: checkSlots && pf.SlotsRead,
		AvailableSlots: pf.FreeSlots + pf.Held}
	if beside {
		opts.AvailableSlots = pf.FreeSlots
	}
	if pf.StateRead {
		opts.OldState = pf.State
	}
	old := policy.JobPlan{Vertices: pf.Old}
	if len(pf.Old) == 0 {
		old, opts.AvailableSlots = policy.JobPlan{Vertices: pf.New}, pf.TotalSlots
	}
	return policy.ComparePlans(old, policy.JobPlan{Vertices: pf.New}, opts)
}

// dropsVertices reports whether the new plan, once read, lacks vertices of
// the old job's: then the preflight reads what state they hold.
func (pf *Preflight) dropsVertices() bool {
	if !pf.NewRead || !pf.OldRead {
		return false
	}
	for _, o := range pf.Old {
		if !slices.ContainsFunc(pf.New, func(n policy.PlanVertex) bool { return n.ID == o.ID }) {
			return true
		}
	}
	return false
}

// readOldState sends the next request that reads the state of the old
// job's vertices into pf.State: the job's checkpoint statistics, which
// name the snapshot (the one restore names, if it is set, else the newest
// completed checkpoint or savepoint), then that snapshot's details, which
// give each vertex's state size. What Flink cannot tell (no snapshot, one
// out of the history, details it does not answer) is recorded as unknown,
// and the preflight goes on; an error worth trying again is returned.
func readOldState(ctx context.Context, api API, job flinkapi.JobID, restore string, pf *Preflight) error {
	st := &pf.State
	if st.CheckpointID == 0 {
		stats, err := api.Checkpoints(ctx, job)
		switch {
		case err == nil:
		case errors.Is(err, flinkapi.ErrNotFound): // a job without checkpointing answers 404
			*st, pf.StateRead = policy.StateSizes{Unknown: policy.StateNoSnapshot}, true
			return nil
		case flinkapi.IsRetryable(err):
			return err
		default:
			*st, pf.StateRead = policy.StateSizes{Unknown: policy.StateDetailsUnavailable}, true
			return nil
		}
		id, savepoint, unknown := pickSnapshot(stats, restore)
		if unknown != "" {
			*st, pf.StateRead = policy.StateSizes{Unknown: unknown}, true
			return nil
		}
		st.CheckpointID, st.Savepoint = id, savepoint
		return nil
	}
	d, err := api.CheckpointDetails(ctx, job, st.CheckpointID)
	switch {
	case err == nil && d.Status == flinkapi.CheckpointCompleted:
		st.Known, st.Unknown, st.Bytes = true, "", make(map[string]int64, len(d.Vertices))
		for id, v := range d.Vertices {
			st.Bytes[id] = v.StateSize
		}
	case err != nil && flinkapi.IsRetryable(err) && !errors.Is(err, flinkapi.ErrNotFound):
		return err
	default: // left the history (404), or not completed
		st.Unknown = policy.StateDetailsUnavailable
	}
	pf.StateRead = true
	return nil
}

// pickSnapshot returns the snapshot of the statistics whose details the
// preflight reads: the completed one at restore, if it is set, else the
// newest completed checkpoint or savepoint; or why there is none.
func pickSnapshot(stats *flinkapi.CheckpointStatistics, restore string) (int64, bool, policy.StateUnknown) {
	var all []flinkapi.CheckpointStats
	for _, c := range []*flinkapi.CheckpointStats{stats.LatestCompleted, stats.LatestSavepoint} {
		if c != nil {
			all = append(all, *c)
		}
	}
	all = append(all, stats.History...)
	var best *flinkapi.CheckpointStats
	for i := range all {
		c := &all[i]
		if c.Status != flinkapi.CheckpointCompleted {
			continue
		}
		if restore != "" {
			if strings.TrimSuffix(c.ExternalPath, "/") == strings.TrimSuffix(restore, "/") {
				return c.ID, c.IsSavepoint, ""
			}
			continue
		}
		if best == nil || c.ID > best.ID {
			best = c
		}
	}
	switch {
	case restore != "":
		return 0, false, policy.StateRestoreNotInHistory
	case best == nil:
		return 0, false, policy.StateNoSnapshot
	}
	return best.ID, best.IsSavepoint, ""
}
