package faultmatrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/appfake"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// The controller's intervals, its limits in the suite, and the outcome
// words of the controller table.
const (
	ctrlPoll  = 5 * time.Second
	ctrlRetry = 20 * time.Second
	// ControllerMaxCalls bounds the calls of a change: every one must
	// converge or end named well within it.
	ControllerMaxCalls = 1500
	// ControllerHorizon is how long on the fake's clock the suite calls a
	// controller that does not converge before it takes the status's
	// Reason as the outcome: long enough for several retries of every
	// action. A change whose action ended twice in a row with the same
	// Reason, not converged, ends there too: its retries end the same.
	ControllerHorizon = 15 * time.Minute
	// OutcomeConverged and OutcomeDeleted are the outcomes of a change
	// carried out: status.Converged(spec), or Delete done with its
	// teardown Succeeded.
	OutcomeConverged = "Converged"
	OutcomeDeleted   = "Deleted"
)

// ControllerResult is one run of a controller scenario.
type ControllerResult struct {
	Scenario ControllerScenario
	// Resumed: the status went through JSON and a fresh Controller was
	// built after every call.
	Resumed bool
	// Outcome is OutcomeConverged, OutcomeDeleted, the outcome of a
	// Delete done otherwise, or the Reason of the status the change
	// ended in; "Refused" for a foreign or unknown stored status.
	Outcome string
	Status  lifecycle.JobStatus
	// Calls counts the calls of the change; Elapsed is the time they took
	// on the fake clock.
	Calls   int
	Elapsed time.Duration
	// Changed lists the calls that moved the change on (stepKey) or sent
	// a request changing the cluster: the crash points that are not the
	// same as the one before them but for the time.
	Changed []int
	// Decisive are the calls of Changed that sent a request changing the
	// cluster or recorded an id or restore point a later request uses
	// (idKey): where a crash can make a caller repeat or forget what
	// Flink did.
	Decisive []int
	// Mutating are the calls that sent a request changing the cluster.
	Mutating []int
	// PerCall is the number of requests of each call (without the
	// transport's replays), and Active whether an action was in flight
	// before or after it.
	PerCall []int
	Active  []bool
	// Routes lists the requests of the change, with the faults injected.
	Routes []string
	// Violations lists the broken invariants; empty if all held.
	Violations []string
	// Attacked reports that the scenario's Attack was made: the stop
	// accepted, the jar rewritten, the mode changed mid-action, the
	// status reused after the Delete, the fault at the cancel hit; always
	// for the attacks of the spec alone.
	Attacked bool
}

// traceCalls prints every call that moves a change on (CONTROLLER_TRACE=1).
var traceCalls = os.Getenv("CONTROLLER_TRACE") != ""

// cenv is the fake cluster and controller of one controller run.
type cenv struct {
	s       ControllerScenario
	srv     *flinktest.Server
	c       *flinkapi.Client
	store   *lifecycle.MemoryStore
	dir     string
	v       *violations
	initial map[flinkapi.JobID]bool
	// app, in application mode (ControllerScenario.App), starts the
	// jobs in application clusters; the Controller then has no
	// Env.Client.
	app *appfake.Deployer
	// restarted is set once the JobManager restarted (by an event or a
	// fault): Flink may then have forgotten what it knew.
	restarted bool
	// atk is what the run recorded of its attack (ControllerScenario.Attack).
	atk attackState
	// downSince is when each job was first seen ended (jobDown).
	downSince map[flinkapi.JobID]time.Time
}

func (e *cenv) controller() *lifecycle.Controller {
	jars, _ := lifecycle.JarDir(e.dir) // the directory of the jar; an error shows as the spec's
	c := &lifecycle.Controller{Env: lifecycle.Env{Client: e.c, Clock: e.srv.Clock(), Timing: timing, Jars: jars}, Store: e.store, Name: storeName,
		PollInterval: ctrlPoll, RetryInterval: ctrlRetry}
	if e.app != nil {
		c.Client, c.Deployer = nil, appDeployer{e.app}
	}
	return c
}

// close stops the fake and removes the run's files.
func (e *cenv) close() {
	if e.app != nil {
		e.app.Close()
	}
	e.srv.Close()
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}

// baseSpec is the converged spec every change but create starts from:
// the counter job with retained checkpoints, upgrades with a savepoint,
// restarts from the latest state; no policy starts without state.
func (e *cenv) baseSpec() lifecycle.JobSpec {
	args := jobArgs("/out", 0)
	if e.s.Attack == AttackNoCheckpointing {
		args[slices.Index(args, "--checkpoint-interval")+1] = "0"
	}
	return lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: filepath.Join(e.dir, "job.jar"), Args: args,
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}},
		Update:  updatePolicy(policy.UpgradeSavepoint),
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxStateAge: policy.Duration(restartMaxAge), Backoff: policy.Duration(time.Second)},
	}
}

// ExecuteController carries out the scenario's spec change with
// lifecycle.Controller against a new fake JobManager, from a status
// converged without faults, and checks the invariants after every call
// and at the end. With resume, the status goes through JSON and a fresh
// Controller is built after every call. The error reports a failure to
// set the run up, not a broken invariant.
func ExecuteController(ctx context.Context, s ControllerScenario, resume bool) (*ControllerResult, error) {
	e, spec, st, err := setupController(ctx, s)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &ControllerResult{Scenario: s, Resumed: resume}
	for _, ev := range s.Events {
		if ev.Foreign {
			e.refuseForeign(ctx, spec, st, res)
			res.Violations = e.v.list
			return res, nil
		}
	}
	for _, ev := range s.Events {
		if ev.Fault != nil && ev.Step == 0 {
			if err := e.srv.Inject(*ev.Fault); err != nil {
				return nil, fmt.Errorf("faultmatrix: %v: %w", ev, err)
			}
		}
	}
	e.drive(ctx, spec, st, resume, res)
	res.Attacked = e.attacked()
	res.Routes = routesOf(e.srv.Requests())
	res.Violations = e.v.list
	return res, nil
}

// setupController starts the fake, brings the job to the status the
// change starts from (without faults) and returns the spec of the change.
func setupController(ctx context.Context, s ControllerScenario) (*cenv, lifecycle.JobSpec, lifecycle.JobStatus, error) {
	opts := []flinktest.Option{flinktest.WithVersion(s.Version), flinktest.WithSeed(s.Seed), flinktest.WithSlots(4)}
	if s.StoreDuration > 0 {
		opts = append(opts, flinktest.WithStoreDuration(s.StoreDuration))
	}
	srv := flinktest.NewServer(opts...)
	e := &cenv{s: s, srv: srv, store: &lifecycle.MemoryStore{}, v: &violations{}, initial: map[flinkapi.JobID]bool{}}
	var st lifecycle.JobStatus
	fail := func(err error) (*cenv, lifecycle.JobSpec, lifecycle.JobStatus, error) {
		e.close()
		return nil, lifecycle.JobSpec{}, st, fmt.Errorf("faultmatrix: setting up %s: %w", s, err)
	}
	var err error
	if e.c, err = flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry)); err != nil {
		return fail(err)
	}
	if e.dir, err = os.MkdirTemp("", "faultmatrix-ctrl-"); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "job.jar"), flinktest.MinimalJar(flinktest.CounterJobClass), 0o600); err != nil {
		return fail(err)
	}
	if s.App {
		if e.app, err = appfake.New(ctx, srv); err != nil {
			return fail(err)
		}
	}
	spec := e.baseSpec()
	settle := func(spec lifecycle.JobSpec) error {
		for range 400 {
			if st.Converged(spec) {
				return nil
			}
			res, err := e.controller().Reconcile(ctx, spec, &st)
			if err != nil {
				return err
			}
			srv.Clock().Advance(res.RequeueAfter)
		}
		return fmt.Errorf("%+v did not converge: %s %s", spec.State, st.Reason, st.Message)
	}
	if s.Change != ChangeCreate {
		if err := settle(spec); err != nil {
			return fail(err)
		}
		srv.Clock().Advance(5 * time.Second)
	}
	switch s.Change {
	case ChangeUpdate:
		spec.Job.Args = append(spec.Job.Args, "--name", "v2")
	case ChangeBlueGreen:
		spec.Job.Args = append(spec.Job.Args, "--name", "v2")
		spec.BlueGreen = lifecycle.BlueGreenPolicy{Enabled: true, Window: policy.Duration(2 * time.Minute)}
	case ChangeSuspend:
		spec.State = lifecycle.DesiredSuspended
	case ChangeResume:
		spec.State = lifecycle.DesiredSuspended
		if err := settle(spec); err != nil {
			return fail(err)
		}
		srv.Clock().Advance(30 * time.Second)
		spec.State = lifecycle.DesiredRunning
	case ChangeRescale:
		spec.Job.Parallelism = 2
	case ChangeRestore:
		var p lifecycle.Progress
		op := &lifecycle.TakeSavepoint{Env: lifecycle.Env{Client: e.c, Clock: srv.Clock()}, Job: st.JobID}
		if _, err := lifecycle.Run(ctx, op, &p, nil); err != nil || p.Savepoint.Location == "" {
			return fail(fmt.Errorf("the savepoint to restore: %v (%s)", err, p.Reason))
		}
		srv.Clock().Advance(10 * time.Second)
		spec.Restore = policy.RestoreRequest{Path: p.Savepoint.Location, Token: "r1", Time: p.Savepoint.Status.TriggerTime}
	case ChangeRetention:
		// Four periodic savepoints, then a retention of one.
		periodic := spec
		periodic.Savepoints = lifecycle.SavepointPolicy{Interval: policy.Duration(10 * time.Second)}
		for end := srv.Clock().Now().Add(45 * time.Second); srv.Clock().Now().Before(end) || st.InFlight(); {
			res, err := e.controller().Reconcile(ctx, periodic, &st)
			if err != nil {
				return fail(err)
			}
			srv.Clock().Advance(res.RequeueAfter)
		}
		if n := len(st.Savepoints.Records); n < 4 {
			return fail(fmt.Errorf("%d savepoints in the history, want 4", n))
		}
		spec.Savepoints = lifecycle.SavepointPolicy{MaxCount: 1}
	}
	e.attackSpec(&spec)
	for _, j := range srv.Jobs() {
		e.initial[j.ID] = true
	}
	srv.ClearRequests()
	return e, spec, st, nil
}

// drive calls the controller until the change converged or ended named,
// checking after every call.
func (e *cenv) drive(ctx context.Context, spec lifecycle.JobSpec, st lifecycle.JobStatus, resume bool, res *ControllerResult) {
	clock := e.srv.Clock()
	start := clock.Now()
	fired := map[int]bool{}
	var away, latency time.Duration
	var since time.Time // when the action in flight started
	budget := OpUpgrade.budget(timing) + 2*time.Minute
	ctrl := e.controller()
	del := e.s.Change == ChangeDelete
	lastEnd := "" // the Reason the last action of the change ended with
	defer func() {
		res.Status, res.Elapsed = st, clock.Now().Sub(start)
	}()
	for n := 0; ; n++ {
		if n >= ControllerMaxCalls {
			e.v.add("nothing waits forever: the change did not converge or end within %d calls (%s: %s, action %s in phase %s)", ControllerMaxCalls, st.Reason, st.Message,
				st.Action, st.Progress.Phase)
			res.Outcome = st.Reason
			return
		}
		e.applyEvents(n, &st)
		e.attackBefore(ctx, n, st)
		wasDown := e.jobDown(st.JobID)
		before := *st.DeepCopy()
		logged := e.srv.RequestCount()
		deletions := e.deletions()
		now := clock.Now()
		var r lifecycle.Result
		var err error
		if del {
			r, err = ctrl.Delete(ctx, spec, &st)
		} else {
			r, err = ctrl.Reconcile(ctx, spec, &st)
		}
		res.Calls++
		sent := e.srv.RequestsSince(logged)
		latency += clock.Now().Sub(now)
		if err != nil {
			e.v.add("call %d returned an error: %v", n, err)
		}
		e.checkCall(n, spec, before, st, r, now, sent)
		e.attackAfter(n, &spec, before, st, sent, wasDown, del)
		if e.app != nil {
			e.checkClusters(n, before, st, e.app.Deletions()[deletions:])
		}
		if traceCalls && stepKey(before) != stepKey(st) {
			fmt.Printf("call %d at %v: %s phase %s outcome %s trigger %s (%s) attempts %d deadline %v; %s %s; sent %v\n", n, now.Sub(start), st.Action, st.Progress.Phase,
				st.Progress.Outcome, st.Progress.Savepoint.Status.TriggerID, st.Progress.Savepoint.Status.State, st.Progress.Replace.Attempts, st.Progress.Deadline.Sub(start), st.Reason,
				st.Progress.LastError, routesOf(sent))
		}
		if stepKey(before) != stepKey(st) || mutates(sent) {
			res.Changed = append(res.Changed, n)
			if idKey(before) != idKey(st) || mutates(sent) {
				res.Decisive = append(res.Decisive, n)
			}
			if mutates(sent) {
				res.Mutating = append(res.Mutating, n)
			}
		}
		res.PerCall = append(res.PerCall, len(reqlog.WithoutReplays(sent)))
		res.Active = append(res.Active, before.InFlight() || st.InFlight())
		switch {
		case !st.InFlight():
			since = time.Time{}
		case since.IsZero() || !before.InFlight() || before.Action != st.Action:
			since = now
		case clock.Now().Sub(since) > budget+away+latency:
			e.v.add("nothing waits forever: %s in flight for %v on the clock (phase %s), more than its deadlines allow", st.Action, clock.Now().Sub(since), st.Progress.Phase)
		}
		if d, lost, crashed := e.crash(n, sent, fired, before, &st); crashed {
			// The caller comes back after its absence with a fresh
			// Controller and the status it stored; the call's result,
			// if its answer was lost, is lost with it.
			clock.Advance(d)
			away += d
			ctrl = e.controller()
			r = lifecycle.Result{}
			if lost {
				continue
			}
		}
		if resume {
			b, err := json.Marshal(st)
			if err != nil {
				e.v.add("the status does not marshal: %v", err)
				return
			}
			st = lifecycle.JobStatus{}
			if err := json.Unmarshal(b, &st); err != nil {
				e.v.add("the status does not unmarshal: %v", err)
				return
			}
			ctrl = e.controller()
		}
		switch {
		case del && r.Done:
			res.Outcome = string(r.Outcome)
			if r.Outcome == lifecycle.OutcomeSucceeded {
				res.Outcome = OutcomeDeleted
			}
			if e.attackDeleted(ctx, spec, st, res.Outcome) {
				// The status of the deleted job, stored, is reconciled
				// again.
				del = false
				clock.Advance(ctrlPoll)
				continue
			}
			e.final(ctx, spec, st, res.Outcome)
			return
		case !del && st.Converged(spec) && !e.attackPending(spec) && e.retained(spec, st):
			res.Outcome = OutcomeConverged
			e.final(ctx, spec, st, res.Outcome)
			return
		case !st.InFlight() && clock.Now().Sub(start) >= ControllerHorizon+away:
			res.Outcome = st.Reason
			e.final(ctx, spec, st, res.Outcome)
			return
		case r.Outcome != "" && before.InFlight() && !st.InFlight() && st.Action != lifecycle.ActionSavepoint && st.Action != lifecycle.ActionDispose:
			// An action ended in this call (not an ended one reported
			// again).
			if st.Reason == lastEnd && st.Progress.Outcome != lifecycle.OutcomeSucceeded {
				res.Outcome = st.Reason
				e.final(ctx, spec, st, res.Outcome)
				return
			}
			lastEnd = st.Reason
		}
		if crashed := r == (lifecycle.Result{}); crashed {
			continue // back from the crash: called again at once
		}
		if !r.Done && (r.RequeueAfter <= 0 || r.RequeueAfter > time.Hour) {
			e.v.add("call %d asked to be called again after %v", n, r.RequeueAfter)
		}
		clock.Advance(r.RequeueAfter)
	}
}

// deletions counts the clusters deleted so far in application mode.
func (e *cenv) deletions() int {
	if e.app == nil {
		return 0
	}
	return len(e.app.Deletions())
}

// applyEvents does the events due before call n (those of call 0 are
// injected before the change).
func (e *cenv) applyEvents(n int, st *lifecycle.JobStatus) {
	if n == 0 {
		return
	}
	for _, ev := range e.s.Events {
		if ev.Step != n {
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
			e.restarted = true
			e.srv.RestartJobManager(o)
		case ev.FailJob:
			_ = e.srv.FailJob(st.JobID, jobCause)
		}
	}
}

// crash applies the crash events due after call n, as env.crash does
// after a step: a lost answer puts the status back to what was stored
// before the call. It reports whether the caller crashed, and how long
// it stays away.
func (e *cenv) crash(n int, sent []flinktest.Request, fired map[int]bool, before lifecycle.JobStatus, st *lifecycle.JobStatus) (away time.Duration, lost, crashed bool) {
	changed := mutates(sent)
	for i, ev := range e.s.Events {
		if fired[i] {
			continue
		}
		if !(ev.Crash && ev.Step == n || ev.LoseAnswer && !ev.Crash && n >= ev.Step && changed) {
			continue
		}
		fired[i] = true
		if ev.LoseAnswer {
			*st = before
		}
		// What the caller stored, read back by the restarted caller.
		b, _ := json.Marshal(*st)
		*st = lifecycle.JobStatus{}
		if err := json.Unmarshal(b, st); err != nil {
			e.v.add("the status does not unmarshal: %v", err)
		}
		return ev.Away, ev.LoseAnswer, true
	}
	return 0, false, false
}

// checkCall checks the invariants that hold after every call: before is
// the status stored before it, now the time it began, sent its requests.
func (e *cenv) checkCall(n int, spec lifecycle.JobSpec, before, st lifecycle.JobStatus, r lifecycle.Result, now time.Time, sent []flinktest.Request) {
	for _, q := range sent {
		if q.Fault != "" && len(q.Fault) >= 7 && q.Fault[:7] == "restart" {
			e.restarted = true
		}
	}
	if k := len(reqlog.WithoutReplays(sent)); k > lifecycle.MaxRequestsPerCall {
		e.v.add("requests: call %d sent %d requests, more than lifecycle.MaxRequestsPerCall (%d): %v", n, k, lifecycle.MaxRequestsPerCall, routesOf(sent))
	}
	bp := before.Progress
	for _, q := range reqlog.WithoutReplays(sent) {
		switch q.Route {
		case routeSavepoint, routeStop:
			if id := reqlog.BodyOf(q).TriggerID; id == "" || id != string(bp.Savepoint.Status.TriggerID) {
				e.v.add("ids: call %d sent a trigger with id %q; the status stored before it recorded %q", n, id, bp.Savepoint.Status.TriggerID)
			}
		case routeRun:
			b := reqlog.BodyOf(q)
			if b.JobID == "" || b.JobID != string(bp.JobID) && b.JobID != string(bp.Submit.NewJobID) {
				e.v.add("ids: call %d ran a jar with job id %q; the status stored before it recorded %q / %q", n, b.JobID, bp.JobID, bp.Submit.NewJobID)
			}
			switch {
			case b.SavepointPath == "":
				if at, ok := e.stateWithin(now, restartMaxAge); ok {
					e.v.add("state: call %d started a job without state while %s (%v old) exists", n, at.Location, now.Sub(at.Taken))
				}
			case b.SavepointPath != bp.Replace.RestoreFrom:
				e.v.add("state: call %d started a job from %q; the status stored before it recorded %q", n, b.SavepointPath, bp.Replace.RestoreFrom)
			case !e.exists(b.SavepointPath) && b.SavepointPath != spec.Restore.Path:
				// (The path of the spec's restore request is sent as the
				// user asked, whether it exists or not.)
				e.v.add("state: call %d started a job from %q, which does not exist", n, b.SavepointPath)
			}
		case routeCancel:
			if bp.Replace.RestoreFrom == "" && bp.Savepoint.Location == "" {
				e.v.add("state: call %d cancelled a stateful job without a restore point recorded before (action %s, phase %s)", n, before.Action, bp.Phase)
			}
		}
	}
	if k := len(st.Savepoints.Records); k > lifecycle.MaxStoredSavepoints {
		e.v.add("history: the status holds %d savepoints, more than lifecycle.MaxStoredSavepoints (%d)", k, lifecycle.MaxStoredSavepoints)
	}
	e.checkLedger(n, st, false)
	if st.Reason == "" {
		e.v.add("reason: call %d left the status without a reason", n)
	}
	limit := 1
	if st.Action == lifecycle.ActionBlueGreen && st.InFlight() {
		limit = 2 // the old job, and the new one beside it in the window
	}
	if live := liveJobs(e.srv); len(live) > limit {
		e.v.add("jobs: %d jobs of the deployment run at once after call %d (action %s, in flight %v): %v", len(live), n, st.Action, st.InFlight(), live)
	}
	if st.Action == lifecycle.ActionBlueGreen && st.Progress.BlueGreen.Healthy.IsZero() && before.JobID != "" {
		// The old job is never stopped (or cancelled) before the new one
		// is recorded healthy.
		for _, q := range reqlog.WithoutReplays(sent) {
			stops := q.Route == routeStop || q.Route == routeCancel || q.Route == routeSavepoint && reqlog.BodyOf(q).CancelJob
			if stops && strings.Contains(q.Path, string(before.JobID)) {
				e.v.add("blue/green: call %d sent %s %s, a stop of the old job %s, before the new one was healthy", n, q.Method, q.Path, before.JobID)
			}
		}
	}
}

// stateWithin returns a restore point on the fake that is at most maxAge
// old at now: a savepoint not disposed of, or a retained checkpoint of a
// job Flink knows as FAILED or CANCELED.
func (e *cenv) stateWithin(now time.Time, maxAge time.Duration) (flinktest.Snapshot, bool) {
	for _, s := range e.srv.Snapshots() {
		if s.Removed || s.Completed.After(now) || now.Sub(s.Taken) > maxAge {
			continue
		}
		if !s.Savepoint {
			j, ok := e.srv.Job(s.Job)
			if !ok || j.State != flinkapi.JobFailed && j.State != flinkapi.JobCanceled {
				continue
			}
		}
		return s, true
	}
	return flinktest.Snapshot{}, false
}

// restoreRequested reports whether job was submitted from the path of
// the spec's restore request: Flink may have refused it (the job then
// names no state), as the user asked.
func (e *cenv) restoreRequested(job flinkapi.JobID, spec lifecycle.JobSpec) bool {
	if spec.Restore.Path == "" {
		return false
	}
	for _, q := range reqlog.WithoutReplays(e.srv.Requests()) {
		if b := reqlog.BodyOf(q); q.Route == routeRun && b.JobID == string(job) && b.SavepointPath == spec.Restore.Path {
			return true
		}
	}
	return false
}

func (e *cenv) exists(loc string) bool {
	ok, _ := e.srv.SavepointExists(loc)
	return ok
}

// liveJobs lists the jobs of the fake that have not ended.
func liveJobs(srv *flinktest.Server) []string {
	var alive []string
	for _, j := range srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			alive = append(alive, string(j.ID)+" "+string(j.State))
		}
	}
	return alive
}

// final checks the end of a change: the outcome, the jobs and the
// restore points.
func (e *cenv) final(ctx context.Context, spec lifecycle.JobSpec, st lifecycle.JobStatus, outcome string) {
	if e.s.Attack != "" && (e.s.Attack != AttackReuseAfterDelete || e.atk.fired) {
		defer e.attackFinal(ctx, spec, st, outcome)
	}
	if st.InFlight() {
		e.v.add("ends named: the change ended with %s in flight (phase %s)", st.Action, st.Progress.Phase)
	}
	if len(outcome) > len("InProgress") && outcome[len(outcome)-len("InProgress"):] == "InProgress" {
		e.v.add("ends named: the change ended in %s", outcome)
	}
	if e.app != nil {
		e.finalClusters(spec, st, outcome)
	}
	// The retention is carried out once the change converged; a run
	// that ended otherwise may end with a disposal under way.
	e.checkLedger(-1, st, outcome == OutcomeConverged)
	live := liveJobs(e.srv)
	switch {
	case outcome == OutcomeConverged && spec.State == lifecycle.DesiredSuspended, outcome == OutcomeDeleted:
		if len(live) != 0 {
			e.v.add("jobs: %s, but %v run", outcome, live)
		}
	case outcome == OutcomeConverged:
		if len(live) != 1 || st.JobState != flinkapi.JobRunning {
			e.v.add("jobs: converged with %v running (status says %s %s)", live, st.JobID, st.JobState)
		}
	}
	// A job the change stopped or cancelled left a restore point the
	// status (or the store) names, unless a JobManager restart made Flink
	// forget it.
	known := map[string]bool{st.Latest.Location: true, st.Progress.Savepoint.Location: true, st.Progress.Replace.RestoreFrom: true, st.UpgradeFrom.Location: true}
	for _, r := range st.Savepoints.Records {
		known[r.Location] = true
	}
	if rec, ok, _ := e.store.Get(ctx, storeName); ok {
		known[rec.Location] = true
	}
	delete(known, "")
	for _, j := range e.srv.Jobs() {
		if !e.initial[j.ID] && j.RestoredFrom == "" && e.s.Change != ChangeCreate && !e.restoreRequested(j.ID, spec) {
			e.v.add("state: the new job %s started without state", j.ID)
		}
		if (j.State == flinkapi.JobCanceled || j.State == flinkapi.JobFinished) && len(known) == 0 && !e.restarted {
			e.v.add("state: job %s ended %s and the status names no restore point", j.ID, j.State)
		}
	}
	if outcome == OutcomeDeleted {
		want := st.Progress.Savepoint.Location
		if want == "" {
			want = st.Progress.Replace.RestoreFrom
		}
		if rec, ok, err := e.store.Get(ctx, storeName); err != nil || !ok || rec.Location != want {
			e.v.add("state: deleted with %q, the store holds %+v (%v, %v)", want, rec, ok, err)
		}
	}
}

// refuseForeign hands the controller stored statuses that are not its
// own (another deployment's, a newer format's) and checks that each is
// refused with an error before any request, and left as it was.
func (e *cenv) refuseForeign(ctx context.Context, spec lifecycle.JobSpec, st lifecycle.JobStatus, res *ControllerResult) {
	other, newer := *st.DeepCopy(), *st.DeepCopy()
	other.Name = "app/other"
	newer.FormatVersion = lifecycle.FormatVersion + 1
	cases := []struct {
		name string
		st   lifecycle.JobStatus
		want error
	}{
		{"a status of another deployment", other, lifecycle.ErrForeignStatus},
		{"a status of a newer format", newer, lifecycle.ErrUnknownFormat},
	}
	for _, c := range cases {
		for _, del := range []bool{false, true} {
			logged := e.srv.RequestCount()
			q := *c.st.DeepCopy()
			var err error
			if del {
				_, err = e.controller().Delete(ctx, spec, &q)
			} else {
				_, err = e.controller().Reconcile(ctx, spec, &q)
			}
			res.Calls++
			a, _ := json.Marshal(q)
			b, _ := json.Marshal(c.st)
			if !errors.Is(err, c.want) {
				e.v.add("refused: the controller was handed %s (delete %v): %v; want an error matching %v", c.name, del, err, c.want)
			}
			if string(a) != string(b) {
				e.v.add("refused: the controller changed %s it refused", c.name)
			}
			if k := e.srv.RequestCount() - logged; k > 0 {
				e.v.add("refused: the controller sent %d requests for %s", k, c.name)
			}
		}
	}
	res.Outcome = "Refused"
}

// CompareController checks a run resumed after every call against the
// uninterrupted run of the same scenario: the same outcome and the same
// requests with the same faults.
func CompareController(run, resumed *ControllerResult) []string {
	var out []string
	if run.Outcome != resumed.Outcome {
		out = append(out, fmt.Sprintf("resumable: outcome %q uninterrupted, %q resumed", run.Outcome, resumed.Outcome))
	}
	return append(out, compareRoutes(run.Routes, resumed.Routes)...)
}

// idKey is what a call records for the requests after it: the trigger
// id, the job ids, the restore point, the savepoint location.
func idKey(st lifecycle.JobStatus) string {
	p := st.Progress
	return fmt.Sprint(st.Action, "|", p.Savepoint.Status.TriggerID, "|", p.JobID, "|", p.Submit.NewJobID, "|", p.Replace.RestoreFrom, "|", p.Savepoint.Location, "|", st.JobID)
}

// mutates reports whether reqs hold a request that changes the cluster.
func mutates(reqs []flinktest.Request) bool {
	for _, r := range reqs {
		switch r.Route {
		case routeSavepoint, routeStop, routeCancel, routeRun, routeUpload, routeDispose:
			return true
		}
	}
	return false
}

// stepKey is what a call moves on: the action, its phase and outcome,
// the ids and restore points it recorded, the job and the deployment's
// state. Calls that leave it as it was only polled again.
func stepKey(st lifecycle.JobStatus) string {
	p := st.Progress
	return fmt.Sprint(st.Action, "|", p.Phase, "|", p.Outcome, "|", p.Savepoint.Status.TriggerID, "|", p.Savepoint.Status.State, "|", p.JobID, "|", p.Submit.NewJobID, "|",
		p.Replace.RestoreFrom, "|", p.Savepoint.Location, "|", st.JobID, "|", st.JobState, "|", st.State, "|", st.Reason, "|", st.Suspended)
}

// retained reports whether the change's retention is carried out: for
// the retention change, no disposal in progress and one savepoint kept
// (the newest of the history) beside those in use (Latest, UpgradeFrom)
// and those whose disposal failed (they wait for their retry).
func (e *cenv) retained(_ lifecycle.JobSpec, st lifecycle.JobStatus) bool {
	if e.s.Change != ChangeRetention {
		return true
	}
	return st.Disposing.Location == "" && keptBeyondUse(st) <= 1
}

// keptBeyondUse counts the savepoints of the history that are not in use
// (Latest, UpgradeFrom) and whose disposal did not fail.
func keptBeyondUse(st lifecycle.JobStatus) int {
	n := 0
	for _, r := range st.Savepoints.Records {
		if r.Location != st.Latest.Location && r.Location != st.UpgradeFrom.Location && !r.Disposal().Failed() {
			n++
		}
	}
	return n
}

// checkLedger checks the savepoint ledger after call n: a savepoint on
// the fake's storage that the deployment took is in the status's
// history (one an action in flight took aside: it is recorded when the
// action ends); at the end of a change that converged (final), no record
// of the history names a savepoint that is gone (but one whose disposal
// failed and waits for its retry), and the retention holds.
func (e *cenv) checkLedger(n int, st lifecycle.JobStatus, final bool) {
	in := map[string]bool{}
	for _, r := range st.Savepoints.Records {
		in[r.Location] = true
	}
	gone := map[string]bool{}
	for _, s := range e.srv.Snapshots() {
		if !s.Savepoint {
			continue
		}
		if s.Removed {
			gone[s.Location] = true
			continue
		}
		if !in[s.Location] && e.s.Change == ChangeRetention && !st.InFlight() {
			e.v.add("ledger: after call %d the savepoint %s is on storage and not in the history", n, s.Location)
		}
	}
	if !final || e.s.Change != ChangeRetention {
		return
	}
	for _, r := range st.Savepoints.Records {
		// A record whose disposal failed (one whose answers were lost
		// too) waits for its retry, which confirms it gone.
		if gone[r.Location] && !r.Disposal().Failed() {
			e.v.add("ledger: the history keeps %s, which was disposed of", r.Location)
		}
	}
	if k := keptBeyondUse(st); k > 1 && e.s.Attack == "" {
		e.v.add("ledger: %d savepoints kept beyond those in use with a retention of one (history %d)", k, len(st.Savepoints.Records))
	}
}
