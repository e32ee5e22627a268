package faultmatrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/reqlog"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Attack is something the controller meets in ordinary use beside the
// faults of the JobManager: someone else stops the job, the spec names a
// path Flink cannot restore, the policy changes while an action is in
// flight, the jar is rebuilt at its path. A row of the controller matrix
// makes one (ControllerScenario.Attack), and checks what matters after
// it besides the invariants of every row.
type Attack string

// The attacks of the controller matrix's rows after ControllerClasses'
// fault classes.
const (
	// AttackExternalStop: from call 2 on, the first time a job of the
	// deployment runs, someone else stops it with a savepoint through the
	// REST API (POST /jobs/:jobid/stop). Checked: the spec never reports
	// Converged while nothing runs, every job started after the stop
	// completed starts from its savepoint or newer state (a delete keeps
	// that state), and a running spec converges again.
	AttackExternalStop Attack = "external stop"
	// AttackRefusedPath: the change comes with a restore request naming a
	// path that does not exist; the job started from it fails at restore.
	// Checked: the path never becomes JobStatus.Latest nor the store's
	// record, and it is sent to Flink at most twice.
	AttackRefusedPath Attack = "refused restore path"
	// AttackFailoverAtCancel: the change runs in LastState mode, and the
	// JobManager restarts (with HA, its jobs recovered) answering the
	// first cancel. Checked: no job starts from state older than the
	// restore point recorded when the cancel was sent, and the change is
	// carried out.
	AttackFailoverAtCancel Attack = "failover at the cancel"
	// AttackPolicyChange: the change starts in LastState mode; after the
	// first call of its action that changed the cluster (the cancel of a
	// last-state upgrade) the spec's update mode becomes Savepoint.
	// Checked: the change is carried out (the action in flight is never
	// left blocked with the job cancelled).
	AttackPolicyChange Attack = "policy change"
	// AttackReuseAfterDelete: Delete to the end, then Reconcile with the
	// same stored status. Checked: a new job runs again, from the state
	// the Delete kept or newer.
	AttackReuseAfterDelete Attack = "reuse after delete"
	// AttackNoCheckpointing: the job runs with --checkpoint-interval 0.
	// Checked: the change is carried out (converged, or deleted).
	AttackNoCheckpointing Attack = "no checkpointing"
	// AttackTooFewSlots: the change asks for a parallelism of 8, twice the
	// fake's task slots. Checked: the change's preflight refuses it for
	// the slots before anything is stopped or started, or (a cluster that
	// starts TaskManagers on demand) the status says NotEnoughSlots at
	// some call; and the change ends not in flight, within the horizon.
	AttackTooFewSlots Attack = "too few slots"
	// AttackSameJarPath: before call 2 the jar file is rewritten with
	// other content and a later modification time at the same path.
	// Checked: the change ends converged with the job running a jar
	// uploaded after the rewrite.
	AttackSameJarPath Attack = "same-path jar"
)

// refusedPath is the restore path of AttackRefusedPath: no snapshot.
const refusedPath = "file:/nowhere/savepoint-404"

// tooManySlots is the parallelism of AttackTooFewSlots; the fake has 4
// task slots.
const tooManySlots = 8

// externalTrigger is the trigger id of the external stop.
const externalTrigger = flinkapi.TriggerID("e57e0000000000000000000000000001")

// The rows of the attacks.
const (
	ClassExternalStop     = "external stop with savepoint through REST"
	ClassRefusedPath      = "refused restore path"
	ClassFailoverAtCancel = "failover at the cancel, LastState, HA"
	ClassPolicyChange     = "policy change mid-action, LastState to Savepoint"
	ClassReuseAfterDelete = "status reused after delete"
	ClassNoCheckpointing  = "no checkpointing"
	ClassTooFewSlots      = "too few slots, parallelism 8 of 4"
	ClassSameJarPath      = "same-path jar rebuilt"
)

// attackClasses are the rows of the attacks: each applies to the spec
// changes it names (the others' cells stay empty).
var attackClasses = []Class{
	{Name: ClassExternalStop, Attack: AttackExternalStop, Events: noEvents,
		Changes: []Change{ChangeCreate, ChangeUpdate, ChangeSuspend, ChangeResume, ChangeDelete, ChangeRescale, ChangeRestore, ChangeBlueGreen}},
	{Name: ClassRefusedPath, Attack: AttackRefusedPath, Events: noEvents,
		Changes: []Change{ChangeCreate, ChangeUpdate, ChangeResume, ChangeRestore}},
	{Name: ClassFailoverAtCancel, Attack: AttackFailoverAtCancel, Events: func(Op) []Event {
		return faultOn([]string{routeCancel}, flinktest.Fault{Kind: flinktest.FaultRestart, Times: 1, Restart: flinktest.RestartOptions{HA: true, Downtime: 2 * time.Second}})
	}, Changes: []Change{ChangeUpdate, ChangeRescale}}, // the changes that cancel the job (a suspend, a delete and a restore request stop it)
	{Name: ClassPolicyChange, Attack: AttackPolicyChange, Events: noEvents,
		Changes: []Change{ChangeUpdate, ChangeSuspend, ChangeDelete, ChangeRescale, ChangeRestore}},
	{Name: ClassReuseAfterDelete, Attack: AttackReuseAfterDelete, Events: noEvents, Changes: []Change{ChangeDelete}},
	{Name: ClassNoCheckpointing, Attack: AttackNoCheckpointing, Events: noEvents,
		Changes: []Change{ChangeCreate, ChangeUpdate, ChangeSuspend, ChangeResume, ChangeDelete, ChangeRescale, ChangeBlueGreen}},
	{Name: ClassTooFewSlots, Attack: AttackTooFewSlots, Events: noEvents, Changes: []Change{ChangeCreate, ChangeUpdate, ChangeRescale}},
	{Name: ClassSameJarPath, Attack: AttackSameJarPath, Events: noEvents, Changes: []Change{ChangeCreate, ChangeUpdate, ChangeResume, ChangeRescale}},
}

func noEvents(Op) []Event { return nil }

// Applies reports whether the row c has a cell for the change ch.
func (c Class) Applies(ch Change) bool {
	return c.Changes == nil || slices.Contains(c.Changes, ch)
}

// attackState is what a run recorded of its attack.
type attackState struct {
	// fired: the attack was made (the stop accepted, the jar rewritten,
	// the mode changed, the delete done).
	fired bool
	// stopJob is the job the external stop stopped.
	stopJob flinkapi.JobID
	// oldJars are the jars uploaded before the jar was rewritten.
	oldJars map[flinkapi.JarID]bool
	// slots: the status said NotEnoughSlots after some call.
	slots bool
	// deleted is the job the Delete deleted, kept the store's record
	// after it.
	deleted flinkapi.JobID
	kept    savepoint.Record
	// cancelFrom is the newest restore point recorded before a cancel
	// (AttackFailoverAtCancel).
	cancelFrom time.Time
}

// attacked reports whether the run made its attack.
func (e *cenv) attacked() bool {
	switch e.s.Attack {
	case "":
		return false
	case AttackRefusedPath, AttackNoCheckpointing, AttackTooFewSlots:
		return true // in the spec from the start
	case AttackFailoverAtCancel:
		for _, q := range e.srv.Requests() {
			if q.Route == routeCancel && q.Fault != "" {
				return true
			}
		}
		return false
	}
	return e.atk.fired
}

// attackSpec applies the attack to the spec of the change.
func (e *cenv) attackSpec(spec *lifecycle.JobSpec) {
	switch e.s.Attack {
	case AttackRefusedPath:
		spec.Restore = policy.RestoreRequest{Path: refusedPath, Token: "refused", Time: e.srv.Clock().Now()}
	case AttackFailoverAtCancel, AttackPolicyChange:
		spec.Update = updatePolicy(policy.UpgradeLastState)
	case AttackTooFewSlots:
		spec.Job.Parallelism = tooManySlots
	}
}

// attackBefore makes the attacks due before call n.
func (e *cenv) attackBefore(ctx context.Context, n int, st lifecycle.JobStatus) {
	a := &e.atk
	if a.fired || n < 2 {
		return
	}
	switch e.s.Attack {
	case AttackExternalStop:
		job := e.runningJob(st.JobID)
		if job == "" {
			return
		}
		if _, err := e.c.StopWithSavepoint(ctx, job, flinkapi.StopRequest{TriggerID: externalTrigger}); err == nil {
			a.fired, a.stopJob = true, job
		}
	case AttackSameJarPath:
		a.oldJars = map[flinkapi.JarID]bool{}
		for _, id := range e.srv.JarIDs() {
			a.oldJars[id] = true
		}
		jar := filepath.Join(e.dir, "job.jar")
		if err := os.WriteFile(jar, append(flinktest.MinimalJar(flinktest.CounterJobClass), []byte("rebuilt")...), 0o600); err != nil {
			e.v.add("attack: rewriting the jar: %v", err)
			return
		}
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(jar, later, later); err != nil {
			e.v.add("attack: touching the jar: %v", err)
		}
		a.fired = true
	}
}

// runningJob is a RUNNING job of the deployment, want if it runs.
func (e *cenv) runningJob(want flinkapi.JobID) flinkapi.JobID {
	var other flinkapi.JobID
	for _, j := range e.srv.Jobs() {
		if j.State != flinkapi.JobRunning {
			continue
		}
		if j.ID == want {
			return j.ID
		}
		other = j.ID
	}
	return other
}

// jobDown reports whether the fake knows job as ended, or not at all.
func (e *cenv) jobDown(job flinkapi.JobID) bool {
	if job == "" {
		return true
	}
	j, ok := e.srv.Job(job)
	down := !ok || j.State.IsGloballyTerminal()
	if _, seen := e.downSince[job]; down && !seen {
		if e.downSince == nil {
			e.downSince = map[flinkapi.JobID]time.Time{}
		}
		e.downSince[job] = e.srv.Clock().Now()
	}
	return down
}

// refreshInterval is the fake's web.refresh-interval (its default):
// Flink's REST caches show a job's details up to that old.
const refreshInterval = 3 * time.Second

// endedLongAgo reports whether job was seen ended more than Flink's REST
// cache may hide it: a call within that time may read it running.
func (e *cenv) endedLongAgo(job flinkapi.JobID) bool {
	t, ok := e.downSince[job]
	return ok && e.srv.Clock().Now().Sub(t) > refreshInterval
}

// attackAfter checks call n of the attack's run and makes the attacks
// due after it: before is the status stored before it, wasDown whether
// the status's job had ended before it.
func (e *cenv) attackAfter(n int, spec *lifecycle.JobSpec, before, st lifecycle.JobStatus, sent []flinktest.Request, wasDown bool, del bool) {
	a := &e.atk
	// Every row: a spec that asks for the job running never reports
	// Converged while its job has ended (before and after the call).
	// (Within Flink's REST cache's refresh interval of the end, a read
	// of the job may still show it running.)
	if !del && spec.State != lifecycle.DesiredSuspended && st.Converged(*spec) && st.JobID == before.JobID && wasDown && e.jobDown(st.JobID) &&
		e.endedLongAgo(st.JobID) {
		e.v.add("converged: call %d reports the spec converged while its job %s has ended (%s: %s)", n, st.JobID, st.Reason, st.Message)
	}
	switch e.s.Attack {
	case AttackRefusedPath:
		if st.Latest.Location == refusedPath {
			e.v.add("refused path: after call %d the refused restore path %s is the status's latest state", n, refusedPath)
		}
		if rec, ok, _ := e.store.Get(context.Background(), storeName); ok && rec.Location == refusedPath {
			e.v.add("refused path: after call %d the store records the refused restore path", n)
		}
	case AttackPolicyChange:
		if !a.fired && (before.InFlight() || st.InFlight()) && mutates(sent) {
			spec.Update.Mode = policy.UpgradeSavepoint
			a.fired = true
		}
	case AttackTooFewSlots:
		pf := st.Progress.Replace.Preflight
		if st.Reason == lifecycle.ReasonNotEnoughSlots || st.Progress.Replace.Decision == policy.ReasonPreflightRefused && pf != nil && pf.Verdict != nil &&
			pf.Verdict.Has(policy.PreflightNotEnoughSlots) {
			a.slots = true
		}
	case AttackFailoverAtCancel:
		for _, q := range reqlog.WithoutReplays(sent) {
			switch q.Route {
			case routeCancel:
				if t := e.snapshotTime(before.Progress.Replace.RestoreFrom); t.After(a.cancelFrom) {
					a.cancelFrom = t
				}
			case routeRun:
				if t := e.snapshotTime(reqlog.BodyOf(q).SavepointPath); !a.cancelFrom.IsZero() && t.Before(a.cancelFrom) {
					e.v.add("failover: call %d started a job from %s (of %v), older than the restore point recorded at the cancel (of %v)", n,
						reqlog.BodyOf(q).SavepointPath, t, a.cancelFrom)
				}
			}
		}
	}
}

// snapshotTime is when the state of the snapshot at loc was taken; zero
// if the fake has none there.
func (e *cenv) snapshotTime(loc string) time.Time {
	if loc == "" {
		return time.Time{}
	}
	for _, s := range e.srv.Snapshots() {
		if s.Location == loc {
			return s.Taken
		}
	}
	return time.Time{}
}

// attackPending reports whether the run goes on after the change
// converged: the attack is still to come.
func (e *cenv) attackPending(spec lifecycle.JobSpec) bool {
	if e.atk.fired || spec.State == lifecycle.DesiredSuspended {
		return false
	}
	switch e.s.Attack {
	case AttackExternalStop:
		return e.runningJob("") != ""
	case AttackSameJarPath:
		return true
	}
	return false
}

// attackDeleted is called when a Delete is done: with
// AttackReuseAfterDelete it checks the delete, records what the store
// kept, and reports that the run goes on with Reconcile.
func (e *cenv) attackDeleted(ctx context.Context, spec lifecycle.JobSpec, st lifecycle.JobStatus, outcome string) bool {
	a := &e.atk
	if e.s.Attack != AttackReuseAfterDelete || a.fired {
		return false
	}
	e.final(ctx, spec, st, outcome)
	a.fired, a.deleted = true, st.JobID
	if rec, ok, _ := e.store.Get(ctx, storeName); ok {
		a.kept = rec
	}
	if st.Converged(spec) {
		e.v.add("reuse: the status of the deleted job reports the spec converged")
	}
	return true
}

// attackFinal checks the end of the attack's run.
func (e *cenv) attackFinal(ctx context.Context, spec lifecycle.JobSpec, st lifecycle.JobStatus, outcome string) {
	a := &e.atk
	running := spec.State != lifecycle.DesiredSuspended && (e.s.Change != ChangeDelete || e.s.Attack == AttackReuseAfterDelete)
	// A caller away past a blue/green window (a crash point "away")
	// ends the upgrade BlueGreenAborted by design: the old job runs on,
	// untouched, and the spec is tried again once it changes.
	awayAborted := strings.HasPrefix(e.s.Crash, string(CrashAway)) && outcome == string(lifecycle.OutcomeBlueGreenAborted)
	want := func(why string) {
		switch {
		case awayAborted:
		case running && outcome != OutcomeConverged:
			e.v.add("%s: the change ended %s (%s), want Converged", why, outcome, st.Message)
		case !running && outcome != OutcomeConverged && outcome != OutcomeDeleted:
			e.v.add("%s: the change ended %s (%s), want it carried out", why, outcome, st.Message)
		}
	}
	switch e.s.Attack {
	case AttackExternalStop:
		e.externalStopFinal(ctx, spec, outcome)
		if a.fired {
			want("external stop")
		}
	case AttackRefusedPath:
		runs := 0
		for _, q := range reqlog.WithoutReplays(e.srv.Requests()) {
			if q.Route == routeRun && reqlog.BodyOf(q).SavepointPath == refusedPath {
				runs++
			}
		}
		if runs > 2 {
			e.v.add("refused path: %d jar runs from the refused path %s", runs, refusedPath)
		}
	case AttackFailoverAtCancel:
		want("failover at the cancel")
	case AttackPolicyChange:
		want("policy change")
	case AttackNoCheckpointing:
		want("no checkpointing")
	case AttackTooFewSlots:
		if !a.slots {
			e.v.add("slots: neither did the preflight refuse the change for its slots nor did the status say %s (ended %s: %s)",
				lifecycle.ReasonNotEnoughSlots, outcome, st.Message)
		}
	case AttackSameJarPath:
		want("same-path jar")
		if j, ok := e.srv.Job(st.JobID); a.fired && outcome == OutcomeConverged && (!ok || a.oldJars[j.JarID]) {
			e.v.add("same-path jar: the job %s runs the jar %s, uploaded before the jar was rebuilt", st.JobID, j.JarID)
		}
	case AttackReuseAfterDelete:
		want("reuse after delete")
		if !a.fired {
			e.v.add("reuse: the Delete never ended")
			return
		}
		j, ok := e.srv.Job(st.JobID)
		switch {
		case !ok || st.JobID == a.deleted:
			e.v.add("reuse: no new job runs after the status of the deleted job %s was reconciled (job %s)", a.deleted, st.JobID)
		case a.kept.Location != "" && j.RestoredFrom != a.kept.Location && e.snapshotTime(j.RestoredFrom).Before(a.kept.Time):
			e.v.add("reuse: the new job %s started from %q, older than the state the Delete kept (%s)", j.ID, j.RestoredFrom, a.kept.Location)
		}
	}
}

// externalStopFinal checks that no job started after the external stop
// completed starts from state older than its savepoint, and that a
// delete kept that state or newer.
func (e *cenv) externalStopFinal(ctx context.Context, spec lifecycle.JobSpec, outcome string) {
	var ext flinktest.Snapshot
	for _, s := range e.srv.Snapshots() {
		if s.Savepoint && s.TriggerID == externalTrigger {
			ext = s
		}
	}
	if ext.Location == "" {
		return // the stop did not complete: the job ran on, or the controller's own stop won
	}
	for _, q := range reqlog.WithoutReplays(e.srv.Requests()) {
		if q.Route != routeRun || q.Time.Before(ext.Completed) {
			continue
		}
		// (A restore request names the state the user chose, older or not.)
		if p := reqlog.BodyOf(q).SavepointPath; p != ext.Location && p != spec.Restore.Path && e.snapshotTime(p).Before(ext.Taken) {
			e.v.add("external stop: a job started at %v from %q, older than the external stop's savepoint %s", q.Time, p, ext.Location)
		}
	}
	if outcome == OutcomeDeleted {
		if rec, ok, _ := e.store.Get(ctx, storeName); !ok || rec.Location != ext.Location && e.snapshotTime(rec.Location).Before(ext.Taken) {
			e.v.add("external stop: deleted keeping %q, older than the external stop's savepoint %s", rec.Location, ext.Location)
		}
	}
}
