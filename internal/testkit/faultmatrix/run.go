package faultmatrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Fixed ids: the same schedule always sends the same requests.
const (
	mainJob  flinkapi.JobID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
	newJob   flinkapi.JobID = "0123456789abcdef0123456789abcdef"
	jobCause                = "java.lang.RuntimeException: failed by the schedule"
	// MaxSteps bounds the steps of each operation of a run: every one must
	// end well within it.
	MaxSteps = 400
	// storeName is the restore point name of teardown and redeploy.
	storeName = "app/counter"
)

// The timings of every operation, and the policies' limits.
var (
	timing = lifecycle.Timing{Savepoint: 2 * time.Minute, Stop: time.Minute, Submit: time.Minute, Poll: time.Second}
	// crashTiming is the timing of the crash-and-absence schedules:
	// lifecycle's default deadlines (savepoint 10 minutes, stop and
	// submission 5), so that an absence of up to 10 minutes ends within
	// a deadline about as often as past it.
	crashTiming = lifecycle.Timing{Poll: time.Second}
	// upgradeMaxAge and restartMaxAge are the policies' maximum state ages.
	upgradeMaxAge = time.Hour
	restartMaxAge = 30 * time.Minute
	// redeployGap is the time between a teardown and the redeploy.
	redeployGap = 30 * time.Minute
	// blueGreenWindow is the window of the blue/green upgrade.
	blueGreenWindow = 2 * time.Minute
	// restartAge is how long the job has been FAILED when Restart starts.
	restartAge = 20 * time.Minute
)

func updatePolicy(mode policy.UpgradeMode) policy.UpdatePolicy {
	return policy.UpdatePolicy{Mode: mode, MaxStateAge: policy.Duration(upgradeMaxAge), SavepointDeadline: policy.Duration(2 * time.Minute),
		TransitionTimeout: policy.Duration(2 * time.Minute)}
}

// budget is the longest an operation may take on the fake clock, from the
// deadlines of the phases it may go through, not counting injected
// latency and a slack of backoffs: past it the operation is stuck.
func (op Op) budget(timing lifecycle.Timing) time.Duration {
	timing = timing.WithDefaults()
	sp, stop, submit := timing.Savepoint, timing.Stop, timing.Submit
	observe := stop + 2*time.Minute // an observation may wait TransitionTimeout
	switch op {
	case OpTakeSavepoint:
		return sp
	case OpStop, OpCancelWithSavepoint, OpSavepointThenCancel:
		return sp + stop
	case OpCancelStateless:
		return stop
	case OpTeardown:
		return sp + 3*stop
	case OpUpgrade, OpUpgradeLastState:
		return observe + 2*(sp+stop+observe) + stop + submit
	case OpRestart:
		return observe + submit
	case OpSubmit:
		return submit
	case OpRedeploy:
		return (sp + 3*stop) + (observe + submit)
	case OpDispose:
		return 3 * stop
	case OpBlueGreen:
		return observe + sp + submit + blueGreenWindow + 2*stop
	}
	return 0
}

// Result is one run of a schedule.
type Result struct {
	Schedule Schedule
	// Resumed: the Progress went through JSON and a fresh operation was
	// built after every step.
	Resumed bool
	// Outcome is the outcome of the run: the last operation's, prefixed
	// with "teardown " when a redeploy ended in its teardown.
	Outcome string
	// Progress holds the final Progress of each operation of the run (two
	// for a redeploy).
	Progress []lifecycle.Progress
	// Steps counts the steps of all operations; Elapsed is the time they
	// took on the fake clock.
	Steps   int
	Elapsed time.Duration
	// Routes lists the requests of the run, with the faults injected,
	// without the transport's replays of a request whose connection
	// broke.
	Routes []string
	// Violations lists the broken invariants; empty if all held.
	Violations []string
}

// stage is one operation of a run.
type stage struct {
	name string
	mk   func() lifecycle.Stepper
}

// env is the fake cluster of one run.
type env struct {
	s       Schedule
	srv     *flinktest.Server
	c       *flinkapi.Client
	jar     flinkapi.JarID
	jarFile string
	store   *lifecycle.MemoryStore
	latest  savepoint.Record
	history savepoint.History
	dispose *lifecycle.DisposeSavepoints
	// stateful: the operation's policy keeps state and allows no start
	// or cancel without it.
	stateful bool
	maxAge   time.Duration
	v        *violations
	// restarts are the times the JobManager restarted.
	restarts []time.Time
	// decided maps a restore path to when Progress.Replace.RestoreFrom named it.
	decided map[string]time.Time
	// initial holds the jobs before the operation.
	initial map[flinkapi.JobID]bool
	// trigger is the trigger id of the latest savepoint or stop request,
	// and triggerState the last state the Progress recorded for it.
	trigger      string
	triggerState savepoint.State
	// timing is the timing of the operations.
	timing lifecycle.Timing
	// stored is the Progress stored before the current step, sent the
	// requests of the step, and fired the crash events done.
	stored lifecycle.Progress
	sent   []flinktest.Request
	fired  map[int]bool
	// overlap is since when two jobs run (a blue/green upgrade).
	overlap time.Time
}

type violations struct{ list []string }

func (v *violations) add(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, m := range v.list {
		if m == msg {
			return
		}
	}
	v.list = append(v.list, msg)
}

// Execute runs a schedule against a new fake JobManager and checks the
// invariants after every step and at the end. With resume, the Progress
// goes through JSON and a fresh operation is built after every step, as by
// a caller that restarts after each one. The error reports a failure to
// set the run up, not a broken invariant.
func Execute(ctx context.Context, s Schedule, resume bool) (*Result, error) {
	e, err := setup(ctx, s)
	if err != nil {
		return nil, err
	}
	defer e.srv.Close()
	if e.jarFile != "" {
		defer os.RemoveAll(filepath.Dir(e.jarFile))
	}
	for _, ev := range s.Events {
		if ev.Fault != nil && ev.Step == 0 {
			if err := e.srv.Inject(*ev.Fault); err != nil {
				return nil, fmt.Errorf("faultmatrix: %v: %w", ev, err)
			}
		}
	}
	res := &Result{Schedule: s, Resumed: resume}
	for _, ev := range s.Events {
		if ev.Foreign {
			e.refuseForeign(ctx, res)
			res.Outcome = "Refused"
			res.Violations = e.v.list
			return res, nil
		}
	}
	start := e.srv.Clock().Now()
	step := 0
	var latency time.Duration
	for i, st := range e.stages() {
		if i > 0 {
			prev := res.Progress[i-1]
			if prev.Outcome != lifecycle.OutcomeSucceeded || !prev.Teardown.Recorded {
				res.Outcome = "teardown " + string(prev.Outcome)
				break
			}
			e.srv.Clock().Advance(redeployGap)
			start = start.Add(redeployGap)
		}
		p, out, lat := e.drive(ctx, st, resume, &step)
		latency += lat
		res.Progress = append(res.Progress, p)
		res.Outcome = string(out)
		if out == "" {
			break
		}
	}
	res.Steps = step
	res.Elapsed = e.srv.Clock().Now().Sub(start)
	if limit := s.Op.budget(e.timing) + 2*time.Minute + latency; res.Elapsed > limit {
		e.v.add("invariant 4: the operation took %v on the clock, more than its deadlines allow (%v)", res.Elapsed, limit)
	}
	e.final(ctx, res)
	res.Routes = routesOf(e.srv.Requests())
	res.Violations = e.v.list
	return res, nil
}

// routesOf names the requests of reqs, without replays, by route and the
// fault injected into them.
func routesOf(reqs []flinktest.Request) []string {
	var out []string
	for _, r := range reqlog.WithoutReplays(reqs) {
		name := r.Route
		if r.Fault != "" {
			name += " [" + r.Fault + "]"
		}
		out = append(out, name)
	}
	return out
}

func setup(ctx context.Context, s Schedule) (*env, error) {
	opts := []flinktest.Option{flinktest.WithVersion(s.Version), flinktest.WithSeed(s.Seed)}
	if s.StoreDuration > 0 {
		opts = append(opts, flinktest.WithStoreDuration(s.StoreDuration))
	}
	srv := flinktest.NewServer(opts...)
	e := &env{s: s, srv: srv, store: &lifecycle.MemoryStore{}, v: &violations{}, decided: map[string]time.Time{}, initial: map[flinkapi.JobID]bool{},
		fired: map[int]bool{}, timing: timing}
	if s.Crashes() {
		e.timing = crashTiming
	}
	fail := func(err error) (*env, error) {
		srv.Close()
		return nil, fmt.Errorf("faultmatrix: setting up %s: %w", s, err)
	}
	c, err := flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry))
	if err != nil {
		return fail(err)
	}
	e.c = c
	if e.jar, err = c.UploadJarReader(ctx, "job.jar", bytes.NewReader(flinktest.MinimalJar(flinktest.CounterJobClass))); err != nil {
		return fail(err)
	}
	if _, err := c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: mainJob, ProgramArgs: jobArgs("/out", s.RestartAttempts),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		return fail(err)
	}
	clock := srv.Clock()
	clock.Advance(5 * time.Second)
	e.stateful = s.Op != OpCancelStateless
	switch s.Op {
	case OpUpgrade:
		rec, err := e.takeSavepoint(ctx)
		if err != nil {
			return fail(err)
		}
		e.latest = rec
		clock.Advance(10 * time.Second)
		e.maxAge = upgradeMaxAge
	case OpUpgradeLastState, OpRedeploy, OpBlueGreen:
		e.maxAge = upgradeMaxAge
	case OpRestart:
		for i := 0; i <= s.RestartAttempts+1; i++ {
			if info, _ := srv.Job(mainJob); info.State == flinkapi.JobFailed {
				break
			}
			_ = srv.FailJob(mainJob, jobCause)
			clock.Advance(5 * time.Second)
		}
		if info, _ := srv.Job(mainJob); info.State != flinkapi.JobFailed {
			return fail(fmt.Errorf("the job is %s, not FAILED", info.State))
		}
		clock.Advance(restartAge)
		e.maxAge = restartMaxAge
	case OpSubmit:
		dir, err := os.MkdirTemp("", "faultmatrix-")
		if err != nil {
			return fail(err)
		}
		e.jarFile = filepath.Join(dir, "job.jar")
		if err := os.WriteFile(e.jarFile, flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
			os.RemoveAll(dir)
			return fail(err)
		}
	case OpDispose:
		for range 3 {
			rec, err := e.takeSavepoint(ctx)
			if err != nil {
				return fail(err)
			}
			e.history = e.history.Add(rec)
			clock.Advance(10 * time.Second)
		}
		e.dispose = &lifecycle.DisposeSavepoints{Env: lifecycle.Env{Client: c, Timing: e.timing, Clock: clock}, History: e.history, Retention: savepoint.RetentionOptions{MaxCount: 1}}
	}
	for _, j := range srv.Jobs() {
		e.initial[j.ID] = true
	}
	srv.ClearRequests()
	return e, nil
}

func jobArgs(out string, restartAttempts int) []string {
	return []string{"--out", out, "--keys", "2", "--rate", "10", "--checkpoint-interval", "1000", "--restart-attempts", strconv.Itoa(restartAttempts)}
}

// takeSavepoint takes a savepoint of the main job without faults.
func (e *env) takeSavepoint(ctx context.Context) (savepoint.Record, error) {
	var p lifecycle.Progress
	op := &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: e.c, Clock: e.srv.Clock()}, Job: mainJob, Reason: savepoint.ReasonScheduled}
	if _, err := lifecycle.Run(ctx, op, &p, nil); err != nil {
		return savepoint.Record{}, err
	}
	rec, ok := p.Record()
	if !ok {
		return rec, fmt.Errorf("savepoint: %s: %s", p.Outcome, p.Reason)
	}
	return rec, nil
}

// stages returns the operations of the run.
func (e *env) stages() []stage {
	clock := e.srv.Clock()
	newRun := flinkapi.RunJarRequest{ProgramArgs: jobArgs("/out2", e.s.RestartAttempts)}
	stop := func(strategy lifecycle.StopStrategy, mode policy.UpgradeMode) stage {
		return stage{name: string(e.s.Op), mk: func() lifecycle.Stepper {
			return &lifecycle.Stop{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Job: mainJob, Strategy: strategy, Mode: mode}
		}}
	}
	teardown := stage{name: "teardown", mk: func() lifecycle.Stepper {
		return &lifecycle.Teardown{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Job: mainJob, Store: e.store, Name: storeName}
	}}
	switch e.s.Op {
	case OpTakeSavepoint:
		return []stage{{name: "savepoint", mk: func() lifecycle.Stepper {
			return &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Job: mainJob}
		}}}
	case OpStop:
		return []stage{stop(lifecycle.StopWithSavepoint, "")}
	case OpCancelWithSavepoint:
		return []stage{stop(lifecycle.CancelWithSavepoint, "")}
	case OpSavepointThenCancel:
		return []stage{stop(lifecycle.SavepointThenCancel, "")}
	case OpCancelStateless:
		return []stage{stop("", policy.UpgradeStateless)}
	case OpUpgrade, OpUpgradeLastState:
		mode := policy.UpgradeSavepoint
		if e.s.Op == OpUpgradeLastState {
			mode = policy.UpgradeLastState
		}
		return []stage{{name: "upgrade", mk: func() lifecycle.Stepper {
			return &lifecycle.Upgrade{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Job: mainJob, Policy: updatePolicy(mode), Latest: e.latest, JarID: e.jar, Run: newRun,
				JobID: newJob}
		}}}
	case OpRestart:
		return []stage{{name: "restart", mk: func() lifecycle.Stepper {
			return &lifecycle.Restart{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Job: mainJob, JarID: e.jar, Run: newRun, JobID: newJob, Policy: policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxStateAge: policy.Duration(restartMaxAge),
				Backoff: policy.Duration(30 * time.Second), TransitionTimeout: policy.Duration(2 * time.Minute)}}
		}}}
	case OpSubmit:
		return []stage{{name: "submit", mk: func() lifecycle.Stepper {
			jars, _ := lifecycle.JarDir(filepath.Dir(e.jarFile)) // an error shows as the submission's
			return &lifecycle.Submit{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock, Jars: jars}, JarFile: e.jarFile, Run: newRun, JobID: newJob}
		}}}
	case OpTeardown:
		return []stage{teardown}
	case OpRedeploy:
		return []stage{teardown, {name: "redeploy", mk: func() lifecycle.Stepper {
			return &lifecycle.Upgrade{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Store: e.store, Name: storeName, Policy: updatePolicy(""), JarID: e.jar, Run: newRun,
				JobID: newJob}
		}}}
	case OpDispose:
		return []stage{{name: "dispose", mk: func() lifecycle.Stepper { return e.dispose }}}
	case OpBlueGreen:
		return []stage{{name: "blue-green", mk: func() lifecycle.Stepper {
			return &lifecycle.BlueGreen{Env: lifecycle.Env{Client: e.c, Timing: e.timing, Clock: clock}, Job: mainJob, JarID: e.jar, Run: newRun, JobID: newJob,
				Window: blueGreenWindow}
		}}}
	}
	return nil
}

// applyEvents does the events due before step n.
func (e *env) applyEvents(n int) {
	for _, ev := range e.s.Events {
		if ev.Step != n || n == 0 {
			continue
		}
		switch {
		case ev.Fault != nil:
			_ = e.srv.Inject(*ev.Fault)
		case ev.Restart != nil:
			o := *ev.Restart
			if ev.LoseJobs {
				for _, j := range e.srv.Jobs() {
					o.Lose = append(o.Lose, j.ID)
				}
			}
			e.restarts = append(e.restarts, e.srv.Clock().Now())
			e.srv.RestartJobManager(o)
		case ev.FailJob:
			id := mainJob
			if e.s.Op == OpSubmit {
				id = newJob
			}
			_ = e.srv.FailJob(id, jobCause)
		}
	}
}

// drive runs one operation to its end, checking after every step. It
// returns the final Progress, the outcome ("" if the operation did not
// end) and the latency injected into its requests.
func (e *env) drive(ctx context.Context, st stage, resume bool, step *int) (lifecycle.Progress, lifecycle.Outcome, time.Duration) {
	var p lifecycle.Progress
	var latency time.Duration
	op := st.mk()
	clock := e.srv.Clock()
	for n := 0; ; n++ {
		if n >= MaxSteps {
			e.v.add("invariant 4: %s did not end within %d steps (phase %s, deadline %v)", st.name, MaxSteps, p.Phase, p.Deadline)
			return p, "", latency
		}
		e.applyEvents(*step)
		*step++
		before := p
		e.stored = p
		logged := e.srv.RequestCount()
		now := clock.Now()
		res, err := op.Step(ctx, &p)
		e.sent = e.srv.RequestsSince(logged)
		latency += clock.Now().Sub(now)
		if err != nil {
			e.v.add("%s: Step returned an error: %v", st.name, err)
			return p, "", latency
		}
		e.checkStep(st.name, before, p, res, now, e.srv.RequestsSince(logged))
		if res.Done && (res.Outcome != p.Outcome || p.Phase != lifecycle.PhaseDone) {
			e.v.add("%s: Result %+v does not match Progress (phase %s, outcome %s)", st.name, res, p.Phase, p.Outcome)
		}
		if away, crashed := e.crash(*step-1, &p); crashed {
			// The caller comes back after its absence with a new
			// operation and the Progress it stored (without the
			// step's answer, if it was lost).
			clock.Advance(away)
			latency += away
			op = st.mk()
			if !p.Done() {
				continue
			}
			res = lifecycle.Result{Done: true, Outcome: p.Outcome}
		}
		if res.Done {
			return p, p.Outcome, latency
		}
		if resume {
			b, err := json.Marshal(p)
			if err != nil {
				e.v.add("%s: Progress does not marshal: %v", st.name, err)
				return p, "", latency
			}
			p = lifecycle.Progress{}
			if err := json.Unmarshal(b, &p); err != nil {
				e.v.add("%s: Progress does not unmarshal: %v", st.name, err)
				return p, "", latency
			}
			op = st.mk()
		}
		clock.Advance(res.RequeueAfter)
	}
}

// crash applies the crash events due after step n (counted over the run):
// a Crash at n, or the first LoseAnswer from its Step on whose step sent
// a request that changes the cluster. A lost answer puts p back to what
// was stored before the step. It reports whether the caller crashed, and
// how long it stays away.
func (e *env) crash(n int, p *lifecycle.Progress) (time.Duration, bool) {
	changed := false
	for _, r := range e.sent {
		switch r.Route {
		case routeSavepoint, routeStop, routeCancel, routeRun, routeUpload, routeDispose:
			changed = true
		}
	}
	for i, ev := range e.s.Events {
		if e.fired[i] {
			continue
		}
		due := ev.Crash && ev.Step == n || ev.LoseAnswer && !ev.Crash && n >= ev.Step && changed
		if !due {
			continue
		}
		e.fired[i] = true
		if ev.LoseAnswer {
			*p = e.stored
		}
		return ev.Away, true
	}
	return 0, false
}

// refuseForeign hands the operation's first stage stored statuses that
// are not its own, and checks that each is refused with an error before
// any request, and left as it was.
func (e *env) refuseForeign(ctx context.Context, res *Result) {
	st := e.stages()[0]
	var own lifecycle.Progress
	if _, err := st.mk().Step(ctx, &own); err != nil {
		e.v.add("%s: the first Step of a fresh Progress: %v", st.name, err)
		return
	}
	other := own
	other.Target = "ffffffffffffffffffffffffffffffff"
	op := own
	op.Operation = map[bool]string{true: "Teardown", false: "Upgrade"}[own.Operation != "Teardown"]
	unknownPhase, unknownOutcome, newer := own, own, own
	unknownPhase.Phase, unknownOutcome.Phase, unknownOutcome.Outcome = "Teleport", lifecycle.PhaseDone, "Vanished"
	newer.FormatVersion = lifecycle.FormatVersion + 1
	cases := []struct {
		name string
		p    lifecycle.Progress
		want error
	}{
		{"a status of another job", other, lifecycle.ErrForeignProgress},
		{"a status of " + op.Operation, op, lifecycle.ErrForeignProgress},
		{"a status done, naming no operation", lifecycle.Progress{Phase: lifecycle.PhaseDone, Outcome: lifecycle.OutcomeSucceeded}, lifecycle.ErrInvalidProgress},
		{"an unknown phase", unknownPhase, lifecycle.ErrInvalidProgress},
		{"an unknown outcome", unknownOutcome, lifecycle.ErrInvalidProgress},
		{"a newer format", newer, lifecycle.ErrUnknownFormat},
	}
	for _, c := range cases {
		logged := e.srv.RequestCount()
		q := c.p
		r, err := st.mk().Step(ctx, &q)
		if !errors.Is(err, c.want) || r.Done {
			e.v.add("invariant 9: %s was handed %s: Step = %+v, %v; want an error matching %v", st.name, c.name, r, err, c.want)
		}
		if q != c.p {
			e.v.add("invariant 9: %s changed %s it refused", st.name, c.name)
		}
		if n := e.srv.RequestCount() - logged; n > 0 {
			e.v.add("invariant 9: %s sent %d requests for %s", st.name, n, c.name)
		}
	}
	res.Steps = 1 + len(cases)
}

// checkStep checks the invariants that hold after every step: before is
// the Progress the caller stored before it, now the time it began, and
// reqs the requests it sent.
func (e *env) checkStep(name string, before, p lifecycle.Progress, res lifecycle.Result, now time.Time, reqs []flinktest.Request) {
	// 2: a location once seen is kept, or replaced by a newer savepoint.
	if before.Savepoint.Location != "" && p.Savepoint.Location != before.Savepoint.Location && !e.newer(p.Savepoint.Location, before.Savepoint.Location) {
		e.v.add("invariant 2: %s dropped the savepoint location %q (now %q)", name, before.Savepoint.Location, p.Savepoint.Location)
	}
	for _, r := range reqs {
		// 7: a blue/green upgrade stops the old job only once the new
		// one was confirmed healthy.
		if e.s.Op == OpBlueGreen && (r.Route == routeCancel || r.Route == routeStop || r.Route == routeSavepoint && reqlog.BodyOf(r).CancelJob) &&
			strings.Contains(r.Path, string(mainJob)) && before.BlueGreen.Healthy.IsZero() {
			e.v.add("invariant 7: %s stopped the old job before the new one was healthy (phase %s)", name, before.Phase)
		}
		switch r.Route {
		case routeSavepoint, routeStop:
			// 6: the trigger id is recorded before the request using it.
			id := reqlog.BodyOf(r).TriggerID
			if id == "" || id != string(before.Savepoint.Status.TriggerID) {
				e.v.add("invariant 6: %s sent a trigger with id %q; the stored progress recorded %q", name, id, before.Savepoint.Status.TriggerID)
			}
			// Only a failure earns a new trigger id: not a savepoint
			// that completed, unless the operation failed after it (the
			// job failed while stopping).
			if e.trigger != "" && id != e.trigger && !failed(e.triggerState) {
				for _, s := range e.srv.Snapshots() {
					if string(s.TriggerID) == e.trigger && !s.Completed.After(r.Time) {
						e.v.add("invariant 6: %s sent a new trigger id although the savepoint of the previous one completed at %s (recorded as %s)",
							name, s.Location, e.triggerState)
					}
				}
			}
			e.trigger = id
		case routeRun:
			// 7: a blue/green upgrade records the savepoint it starts the
			// new job from before the submission.
			if e.s.Op == OpBlueGreen && (before.Savepoint.Location == "" || before.Replace.RestoreFrom != before.Savepoint.Location || reqlog.BodyOf(r).SavepointPath != before.Replace.RestoreFrom) {
				e.v.add("invariant 7: %s submitted the new job from %q; the stored progress recorded the savepoint %q, restore point %q",
					name, reqlog.BodyOf(r).SavepointPath, before.Savepoint.Location, before.Replace.RestoreFrom)
			}
			// 5: the job id is recorded before the submission.
			b := reqlog.BodyOf(r)
			if b.JobID == "" || b.JobID != string(before.JobID) {
				e.v.add("invariant 5: %s ran a jar with job id %q; the stored progress recorded %q", name, b.JobID, before.JobID)
			}
			// 1: the restore point still holds the state when the new job
			// starts from it (a retained checkpoint may have been
			// subsumed between its observation and the cancel).
			if b.SavepointPath != "" && !e.exists(b.SavepointPath) {
				e.v.add("invariant 1: %s started the new job from %q, which no longer exists: the old job's state after it is lost", name, b.SavepointPath)
			}
		case routeCancel:
			// 1: a stateful job is cancelled only with a restore point
			// recorded first.
			if e.stateful && strings.Contains(r.Path, string(mainJob)) && before.Replace.RestoreFrom == "" && before.Savepoint.Location == "" {
				e.v.add("invariant 1: %s cancelled the job without a restore point recorded first (phase %s, outcome of the stop %q)", name, before.Phase, before.Replace.StopOutcome)
			}
		}
	}
	if e.trigger != "" && string(p.Savepoint.Status.TriggerID) == e.trigger {
		e.triggerState = p.Savepoint.Status.State
	}
	// 3: remember when the restore point was chosen.
	if p.Replace.RestoreFrom != "" && p.Replace.RestoreFrom != before.Replace.RestoreFrom {
		if _, ok := e.decided[p.Replace.RestoreFrom]; !ok {
			e.decided[p.Replace.RestoreFrom] = now
		}
	}
	// 4: a step taken at or past its phase's deadline ends the phase,
	// unless it was one of the few reads that find out what became of a
	// savepoint whose deadline passed, and it failed.
	late := p.Savepoint.Status.Active() && p.Savepoint.Status.LastUpdate.Equal(now) && p.Requests > 0 && p.Requests < 3 &&
		(p.Requests == before.Requests+1 || p.Requests == 1 && before.Savepoint.Status.LastUpdate.Before(before.Savepoint.Status.Deadline))
	if !before.Deadline.IsZero() && !now.Before(before.Deadline) && !res.Done && p.Phase == before.Phase && p.Deadline.Equal(before.Deadline) && !late {
		e.v.add("invariant 4: %s stayed in phase %s past its deadline %v", name, p.Phase, before.Deadline)
	}
	if !res.Done && p.Phase != "" && p.Deadline.IsZero() {
		e.v.add("invariant 4: %s is in phase %s without a deadline", name, p.Phase)
	}
	e.checkJobs(name)
	if e.s.Op == OpBlueGreen {
		e.checkWindow(name, p, now)
	}
}

// checkWindow checks invariant 7 of a blue/green upgrade after every step:
// two live jobs only inside the window, never a third job, and never both
// running longer than the window's deadlines allow.
func (e *env) checkWindow(name string, p lifecycle.Progress, now time.Time) {
	alive, started := 0, 0
	for _, j := range e.srv.Jobs() {
		if !e.initial[j.ID] {
			started++
		}
		if !j.State.IsGloballyTerminal() {
			alive++
		}
	}
	switch {
	case started > 1:
		e.v.add("invariant 7: %s started %d new jobs", name, started)
	case alive > 2:
		e.v.add("invariant 7: %d live jobs", alive)
	case alive == 2 && p.Done() && p.Outcome != lifecycle.OutcomeTimedOut:
		e.v.add("invariant 7: %s ended %s with both jobs running", name, p.Outcome)
	case alive < 2:
		e.overlap = time.Time{}
		return
	}
	if e.overlap.IsZero() {
		e.overlap = now
	}
	var away time.Duration
	for _, ev := range e.s.Events {
		away += ev.Away
	}
	t := e.timing.WithDefaults()
	limit := t.Submit + blueGreenWindow + 2*t.Stop + t.Savepoint + away + 2*time.Minute
	if d := e.srv.Clock().Now().Sub(e.overlap); d > limit {
		e.v.add("invariant 7: both jobs ran for %v, longer than the window and the stop allow (%v)", d, limit)
	}
}

// exists reports whether loc names a completed snapshot that was not
// removed (checked right after the step that sent the request).
func (e *env) exists(loc string) bool {
	if loc == "" {
		return false
	}
	ok, _ := e.srv.SavepointExists(loc)
	return ok
}

// newer reports whether the snapshot at loc holds newer state than the one
// at old.
func (e *env) newer(loc, old string) bool {
	var a, b *flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		switch s.Location {
		case loc:
			a = &s
		case old:
			b = &s
		}
	}
	return a != nil && b != nil && a.Taken.After(b.Taken)
}

// checkJobs checks invariant 5 on the fake's jobs: at most one job of the
// deployment runs, and only the operations that start jobs start one.
func (e *env) checkJobs(name string) {
	alive := []string{}
	for _, j := range e.srv.Jobs() {
		if e.s.Op == OpSubmit && j.ID == mainJob {
			continue // not part of the submitted deployment
		}
		if !e.initial[j.ID] && !e.startsJobs() {
			e.v.add("invariant 5: %s started a job (%s) though it starts none", name, j.ID)
		}
		if !j.State.IsGloballyTerminal() {
			alive = append(alive, string(j.ID)+" "+string(j.State))
		}
	}
	if len(alive) > 1 && e.s.Op != OpBlueGreen {
		e.v.add("invariant 5: two jobs of the deployment run at once: %v", alive)
	}
}

// failed reports a final state of a savepoint other than success.
func failed(st savepoint.State) bool {
	return st.Final() && st != savepoint.Succeeded
}

func (e *env) takesSavepoints() bool {
	switch e.s.Op {
	case OpCancelStateless, OpRestart, OpSubmit, OpDispose:
		return false
	}
	return true
}

// stopsJobs reports whether the operation stops the main job with a
// savepoint.
func (e *env) stopsJobs() bool {
	switch e.s.Op {
	case OpStop, OpUpgrade, OpTeardown, OpRedeploy:
		return true
	}
	return false
}

func (e *env) startsJobs() bool {
	switch e.s.Op {
	case OpUpgrade, OpUpgradeLastState, OpRestart, OpSubmit, OpRedeploy, OpBlueGreen:
		return true
	}
	return false
}

// restartedBetween reports whether the JobManager restarted in (from, to].
func (e *env) restartedBetween(from, to time.Time) bool {
	for _, t := range e.restarts {
		if t.After(from) && !t.After(to) {
			return true
		}
	}
	return false
}

// final checks the invariants on the end state.
func (e *env) final(ctx context.Context, res *Result) {
	end := e.srv.Clock().Now()
	for _, r := range e.srv.Requests() {
		if strings.HasPrefix(r.Fault, "restart") {
			e.restarts = append(e.restarts, r.Time)
		}
	}
	snaps := map[string]flinktest.Snapshot{}
	for _, s := range e.srv.Snapshots() {
		snaps[s.Location] = s
	}
	locations, restores := map[string]bool{}, map[string]bool{}
	attempts := 0
	for _, p := range res.Progress {
		if p.Savepoint.Location != "" {
			locations[p.Savepoint.Location] = true
			// 2: a location names a savepoint that exists, and the record
			// carries it.
			if s, ok := snaps[p.Savepoint.Location]; !ok || s.Removed {
				e.v.add("invariant 2: the location %q names no savepoint on the fake's disk", p.Savepoint.Location)
			}
			if rec, ok := p.Record(); !ok || rec.Location != p.Savepoint.Location {
				e.v.add("invariant 2: Record() = %+v, %v for the location %q", rec, ok, p.Savepoint.Location)
			}
		}
		if p.Replace.RestoreFrom != "" {
			restores[p.Replace.RestoreFrom] = true
		}
		attempts += p.Replace.Attempts
	}
	// 2: a savepoint that our triggers completed, with no JobManager
	// restart since that could make Flink forget it, is known.
	triggers := map[string]bool{}
	for _, r := range e.srv.Requests() {
		if r.Route == routeSavepoint || r.Route == routeStop {
			triggers[reqlog.BodyOf(r).TriggerID] = true
		}
	}
	for _, s := range snaps {
		if !s.Savepoint || s.TriggerID == "" || !triggers[string(s.TriggerID)] || s.Completed.After(end) || len(locations) > 0 {
			continue
		}
		if !e.restartedBetween(s.Completed.Add(-time.Nanosecond), end) {
			e.v.add("invariant 2: the savepoint %s completed at %v (trigger %s) but no operation learnt its location", s.Location, s.Completed, s.TriggerID)
		}
	}
	// 6: operations that take no savepoint send no trigger, and an
	// upgrade takes no more savepoints than its policy allows.
	if len(triggers) > 0 && !e.takesSavepoints() {
		e.v.add("invariant 6: %d trigger ids were sent by an operation that takes no savepoint", len(triggers))
	}
	if limit := updatePolicy("").WithDefaults().SavepointAttempts; attempts > limit {
		e.v.add("invariant 6: %d savepoint attempts, the policy allows %d", attempts, limit)
	}
	// 1 and 3: new jobs start from the state the policy allows.
	for _, j := range e.srv.Jobs() {
		if e.initial[j.ID] || j.State == flinkapi.JobFailed && j.RestoredFrom == "" {
			continue
		}
		if j.RestoredFrom == "" {
			if e.stateful && e.s.Op != OpSubmit {
				e.v.add("invariant 1: the new job %s started without state", j.ID)
			}
			continue
		}
		if !restores[j.RestoredFrom] {
			e.v.add("invariant 3: the new job %s restored from %q, which no Progress.RestoreFrom recorded", j.ID, j.RestoredFrom)
			continue
		}
		s, ok := snaps[j.RestoredFrom]
		at, decided := e.decided[j.RestoredFrom]
		switch {
		case !ok:
			e.v.add("invariant 3: the new job %s restored from %q, unknown to the fake", j.ID, j.RestoredFrom)
		case decided && e.maxAge > 0 && at.Sub(s.Taken) > e.maxAge:
			e.v.add("invariant 3: the new job %s restored from state %v old when chosen, more than the maximum %v", j.ID, at.Sub(s.Taken), e.maxAge)
		}
	}
	// 1: the job was not cancelled without a restore point, nor stopped
	// without one being learnt (unless a JobManager restart made Flink
	// forget the savepoint: the outcome then says so).
	if info, ok := e.srv.Job(mainJob); ok && e.stateful && e.s.Op != OpSubmit && len(locations) == 0 && len(restores) == 0 {
		switch {
		case info.State == flinkapi.JobCanceled:
			e.v.add("invariant 1: the job ended CANCELED and no restore point was recorded")
		case info.State == flinkapi.JobFinished && e.stopsJobs() && !e.restartedBetween(time.Time{}, end):
			e.v.add("invariant 1: the job was stopped (FINISHED) and no restore point was recorded")
		}
	}
	switch e.s.Op {
	case OpTeardown, OpRedeploy:
		if p := res.Progress[0]; p.Teardown.Recorded {
			want := p.Savepoint.Location
			if want == "" || p.Replace.RestoreKind == policy.KindCheckpoint && p.Replace.RestoreFrom != "" {
				// The retained checkpoint of a job that had ended, or of
				// one that ran on past its savepoint when it is newer.
				want = p.Replace.RestoreFrom
			}
			if rec, ok, err := e.store.Get(ctx, storeName); err != nil || !ok || rec.Location != want {
				e.v.add("invariant 2: teardown recorded %q, the store holds %+v (%v, %v)", want, rec, ok, err)
			}
		}
	case OpDispose:
		e.checkDisposal(res, snaps)
	}
}

// checkDisposal checks that exactly the chosen savepoints are gone.
func (e *env) checkDisposal(res *Result, snaps map[string]flinktest.Snapshot) {
	if len(res.Progress) == 0 {
		return
	}
	p := res.Progress[0]
	chosen := map[string]bool{}
	for _, r := range e.dispose.Chosen(&p) {
		chosen[r.Location] = true
	}
	for _, r := range e.history.Records {
		s := snaps[r.Location]
		switch {
		case !chosen[r.Location] && s.Removed:
			e.v.add("invariant 2: the savepoint %s was kept by the retention but is gone", r.Location)
		case chosen[r.Location] && p.Outcome == lifecycle.OutcomeSucceeded && !s.Removed:
			e.v.add("dispose: %s was chosen and the operation succeeded, but it still exists", r.Location)
		}
	}
}

// Compare checks a run resumed after every step against the uninterrupted
// run of the same schedule: the same outcome, the same requests with the
// same faults, no more trigger ids, and nothing lost.
func Compare(run, resumed *Result) []string {
	var out []string
	if run.Outcome != resumed.Outcome {
		out = append(out, fmt.Sprintf("resumable: outcome %q uninterrupted, %q resumed", run.Outcome, resumed.Outcome))
	}
	for i := range min(len(run.Progress), len(resumed.Progress)) {
		a, b := run.Progress[i], resumed.Progress[i]
		if (a.Savepoint.Location == "") != (b.Savepoint.Location == "") || a.Replace.Attempts != b.Replace.Attempts || a.Replace.RestoreKind != b.Replace.RestoreKind || a.Teardown.Recorded != b.Teardown.Recorded {
			out = append(out, fmt.Sprintf("resumable: operation %d differs: location %q/%q, attempts %d/%d, restore kind %q/%q, recorded %v/%v",
				i, a.Savepoint.Location, b.Savepoint.Location, a.Replace.Attempts, b.Replace.Attempts, a.Replace.RestoreKind, b.Replace.RestoreKind, a.Teardown.Recorded, b.Teardown.Recorded))
		}
	}
	return append(out, compareRoutes(run.Routes, resumed.Routes)...)
}

// compareRoutes compares the requests of an uninterrupted and a resumed run.
func compareRoutes(run, resumed []string) []string {
	var out []string
	n := min(len(run), len(resumed))
	for i := range n {
		if run[i] != resumed[i] {
			out = append(out, fmt.Sprintf("resumable: request %d is %q uninterrupted, %q resumed", i, run[i], resumed[i]))
			return out
		}
	}
	if len(run) != len(resumed) {
		out = append(out, fmt.Sprintf("resumable: %d requests uninterrupted, %d resumed", len(run), len(resumed)))
	}
	return out
}
