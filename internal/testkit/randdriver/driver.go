package randdriver

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// Limits of the checks, on the fake's clock.
const (
	// StuckAfter is how long nothing may run (blue/green with a change
	// pending), a checkpoint-less job may run unconverged, or an
	// undeployable job may go unreported.
	StuckAfter = 10 * time.Minute
	// ActionWithin bounds one action in flight, and a Delete.
	ActionWithin = 45 * time.Minute
	// DeleteWithin bounds the Delete of a job that cannot run.
	DeleteWithin = 5 * time.Minute
	// MaxRequeue is the longest RequeueAfter a forged status may get.
	MaxRequeue = 24 * time.Hour
)

// The controller's intervals in the runs, and the longest wait between
// calls the driver honours.
const (
	pollInterval  = 10 * time.Second
	retryInterval = 20 * time.Second
	maxWait       = 30 * time.Second
	// lateDeadline is the savepoint deadline of the runs whose
	// savepoints take longer.
	lateDeadline = 30 * time.Second
	storeName    = "apps/counter"
	farFuture    = 1000 * time.Hour // MaxStateAge of the policies: age never excludes state
)

// Versions are the Flink versions the fake plays in the runs.
var Versions = []string{"1.20.5", "1.18.1", "2.3.0"}

// Result is one run of the driver.
type Result struct {
	Seed int64
	// Events is the length of the schedule, Calls the calls of Reconcile
	// and Delete it made (the probes of forged statuses included).
	Events, Calls int
	// Violations lists, per class, what broke, one line each.
	Violations map[Class][]string
	// Trace is the run, one line per event and call.
	Trace []string
	// Seen counts what the run exercised, by name (Coverage lists the
	// names): the situations a class of zero violations was tested in.
	Seen map[string]int
}

// Coverage names the situations Result.Seen counts.
var Coverage = []string{
	"jobs started", "restore requests carried out", "jobs started after a restore", "restore paths refused", "user stops",
	"actions started", "blue/green actions", "mode changes mid-action", "deletes done", "statuses reused after delete",
	"jar rebuilds", "parallelism above the slots", "calls on a job without checkpointing", "JobManager restarts",
	"one-shot requests", "savepoints imported", "adoptions asked", "adoptions of jobs with retained checkpoints", "jobs adopted",
	"jobs detached", "disposals sent", "disposal faults", "rollbacks after a rebuild", "failed jobs a restart is due for",
	"failures naming a secret", "secrets unreadable", "triggered checkpoints", "late savepoints recorded",
}

// Count is the number of violations of class c.
func (r *Result) Count(c Class) int { return len(r.Violations[c]) }

// Run draws a schedule from seed and carries it out against a new fake
// JobManager, checking the invariants after every call. The same seed
// gives the same schedule and the same counts. The error reports a
// failure to set the run up, not a broken invariant.
func Run(ctx context.Context, seed int64) (*Result, error) {
	d, err := newDriver(seed)
	if err != nil {
		return nil, err
	}
	defer d.close()
	if d.r.IntN(8) == 0 {
		d.adoptUserJob(ctx) // the deployment starts by adopting a job a user started
	}
	n := 50 + d.r.IntN(151)
	d.res.Events = n
	for i := 0; i < n; i++ {
		d.event(ctx, i)
	}
	d.settle(ctx)
	d.probeForged(ctx)
	return d.res, nil
}

// driver is one run: the fake, the caller's stored status and spec, and
// what the checks remember.
type driver struct {
	r       *rand.Rand
	res     *Result
	srv     *flinktest.Server
	ctrlC   *flinkapi.Client // the controller's
	user    *flinkapi.Client // the user's, acting on Flink directly
	store   *lifecycle.MemoryStore
	dir     string
	jarPath string
	slots   int
	// calm runs change, break and disturb calm times less often (0:
	// not calm), so that slow conditions (a job that never converges, a
	// deployment that stays down) show.
	calm int
	t0   time.Time // the fake clock at the start

	// storage is the controllers' Storage: the fake's disk, with the
	// store's faults of the run.
	storage *store

	spec   lifecycle.JobSpec
	stored []byte // the status as the caller stored it (JSON)
	// loseNext drops the status of the next call: a crash before the
	// store, or a write refused with a conflict.
	loseNext string
	// deleting: the caller calls Delete; deleted: Delete said Done.
	deleting, deleted bool
	deleteSince       time.Time
	reused            bool
	reusedAt          time.Time
	runSinceReuse     bool
	version           int // of the job's --name

	// The action in flight, as the stored statuses show it.
	act actionTrack

	reqSeen      int                 // requests of the log already looked at
	ctrlReqs     []flinktest.Request // the controller's requests
	userTriggers map[string]bool     // trigger ids of the user's stops
	userStopped  map[flinkapi.JobID]bool
	// refused is every restore path Flink refused (the ground truth);
	// refusedKnown those the controller was told of in a call whose
	// status was stored since the status was last replaced by a fresh
	// one, each with the token of the restore request the run carried
	// out ("" for none); refusedNow those of the call in progress.
	refused        map[string]bool
	refusedKnown   map[string]string
	refusedNow     map[string]string
	jarUploaded    map[flinkapi.JarID]time.Time
	rebuiltAt      time.Time
	rebuiltVersion int       // the job's --name version the rebuilt jar came with
	baseline       time.Time // the last deliberate restore (request, rollback, stateless start)
	baselinePath   string
	overSince      time.Time // since when the spec's parallelism exceeds the slots
	lastRunning    time.Time // when a job of the deployment last ran
	runningSince   map[flinkapi.JobID]time.Time
	seenRunning    map[flinkapi.JobID]time.Time // when a check last saw each job RUNNING
	specSince      time.Time                    // when the spec last changed
	fault404At     time.Time                    // when a 404 on a checkpoint route was last injected
	twoLive        bool
	// away is the caller's absences so far; holds when each condition
	// of the stuck checks began to hold, and the absences then.
	away  time.Duration
	holds map[string]held
	// reported is the keys of violations reported once.
	reported map[string]bool

	// fileBuild is the build of the jar at jarPath now; buildOfName the
	// build the jar at jarPath held when the spec's --name took each
	// value, jarBuild the build each uploaded jar holds.
	fileBuild   int
	buildOfName map[string]int
	jarBuild    map[flinkapi.JarID]int
	// ctrlTriggers are the trigger ids of the controller's savepoints and
	// stops; ledgerSince is when the caller last dropped the status (a
	// fresh one): savepoints completed before are no longer its ledger's.
	ctrlTriggers map[string]bool
	ledgerSince  time.Time
	// foreign are the jobs that live beside the deployment without being
	// its own: started by a user through the REST API (to be adopted, or
	// not), or left running by a Delete under DeleteDetach (detached).
	foreign  map[flinkapi.JobID]string
	detached map[flinkapi.JobID]bool
	// detachedRun is when each detached job was submitted by a jar run
	// (submitted): a later jar run under its id (once the detached job
	// ended, or a JobManager without high availability forgot it) started
	// another job; a JobManager failover that recovers it does not.
	detachedRun map[flinkapi.JobID]time.Time
	// submitted is when each job id was last submitted (by a jar run):
	// a JobManager failover recovers a job under its id, a run under an
	// id used before starts another job.
	submitted map[flinkapi.JobID]time.Time
	// tasksSeen is when a check last saw each job's tasks all running;
	// refusedJobs the jobs Flink failed at once for a restore path that
	// named no snapshot.
	tasksSeen   map[flinkapi.JobID]time.Time
	refusedJobs map[flinkapi.JobID]bool
	jmRestarts  []time.Time // when the JobManager restarted

	// secret is the value of the secret the spec's job names, if it names
	// one ("" otherwise), secrets what the Controller reads it from, and
	// secretGone since when it is unreadable (zero: it is readable).
	secret     string
	secrets    lifecycle.SecretMap
	secretGone time.Time
}

// held is when a condition began to hold.
type held struct {
	at   time.Time
	away time.Duration
}

// holding records whether cond holds now and returns for how long it
// has held without a break, less the caller's absences meanwhile: the
// time the controller had to act on it.
func (d *driver) holding(key string, cond bool) time.Duration {
	if !cond {
		delete(d.holds, key)
		return 0
	}
	h, ok := d.holds[key]
	if !ok {
		h = held{at: d.now(), away: d.away}
		d.holds[key] = h
	}
	return d.now().Sub(h.at) - (d.away - h.away)
}

// actionTrack follows one action from its start.
type actionTrack struct {
	key           string
	start         time.Time
	startReq      int // index into ctrlReqs
	mode          policy.UpgradeMode
	policyChanged bool
	stops         []flinkapi.JobID // the jobs it cancelled or stopped
	// cancels are those of stops it cancelled; a job it only stopped with
	// a savepoint and that ended CANCELED was cancelled by someone else.
	cancels map[flinkapi.JobID]bool
	stopped bool // one of them ended
}

func newDriver(seed int64) (*driver, error) {
	r := rand.New(rand.NewPCG(uint64(seed), 0x72616e64)) // "rand"
	slots := 2 + 2*r.IntN(2)
	opts := []flinktest.Option{flinktest.WithVersion(Versions[r.IntN(len(Versions))]), flinktest.WithSeed(seed), flinktest.WithSlots(slots)}
	// Slow savepoints in some runs, drawn from a source of their own so
	// that the other draws of a seed stay what they were: savepoints
	// that outlive the update policy's deadline (lateDeadline), which the
	// controller looks up after it (lifecycle.LateSavepoint).
	late := rand.New(rand.NewPCG(uint64(seed), 0x6c617465)) // "late"
	var slowSavepoints time.Duration
	if late.IntN(5) == 0 {
		slowSavepoints = lateDeadline + time.Duration(5+late.IntN(60))*time.Second
		// A stop's savepoint takes the usual time: a stop that outlives
		// its deadline is another matter than a savepoint beside the job.
		opts = append(opts, flinktest.WithSavepointDuration(slowSavepoints), flinktest.WithStopDuration(300*time.Millisecond))
	}
	srv := flinktest.NewServer(opts...)
	d := &driver{r: r, srv: srv, slots: slots, store: &lifecycle.MemoryStore{}, storage: newStore(srv, seed), res: &Result{Seed: seed, Violations: map[Class][]string{}, Seen: map[string]int{}},
		userTriggers: map[string]bool{}, userStopped: map[flinkapi.JobID]bool{}, refused: map[string]bool{}, refusedKnown: map[string]string{}, refusedNow: map[string]string{}, jarUploaded: map[flinkapi.JarID]time.Time{},
		runningSince: map[flinkapi.JobID]time.Time{}, seenRunning: map[flinkapi.JobID]time.Time{}, holds: map[string]held{}, reported: map[string]bool{},
		buildOfName: map[string]int{"v0": 0}, jarBuild: map[flinkapi.JarID]int{}, ctrlTriggers: map[string]bool{}, foreign: map[flinkapi.JobID]string{},
		detached: map[flinkapi.JobID]bool{}, detachedRun: map[flinkapi.JobID]time.Time{}, submitted: map[flinkapi.JobID]time.Time{}, tasksSeen: map[flinkapi.JobID]time.Time{}, refusedJobs: map[flinkapi.JobID]bool{}}
	var err error
	if d.ctrlC, err = flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry)); err != nil {
		d.close()
		return nil, err
	}
	if d.user, err = flinkapi.NewClient(srv.URL, flinkapi.WithRetryPolicy(flinkapi.NoRetry)); err != nil {
		d.close()
		return nil, err
	}
	if d.dir, err = os.MkdirTemp("", "randdriver-"); err != nil {
		d.close()
		return nil, err
	}
	d.jarPath = filepath.Join(d.dir, "job.jar")
	if err := os.WriteFile(d.jarPath, jarBytes(0), 0o600); err != nil {
		d.close()
		return nil, err
	}
	d.t0 = srv.Clock().Now()
	d.ledgerSince = d.t0
	switch r.IntN(12) {
	case 0, 1, 2:
		d.calm = 4
	case 3, 4:
		d.calm = 20
	}
	d.spec = d.initialSpec()
	if slowSavepoints > 0 {
		d.spec.Update.SavepointDeadline = policy.Duration(lateDeadline)
	}
	d.storage.trace = d.tracef
	d.stored, _ = json.Marshal(lifecycle.JobStatus{})
	d.specSince = srv.Clock().Now()
	d.tracef("setup: Flink slots %d, calm %d, savepoints take %v, store faults %d%%; spec %s", slots, d.calm, slowSavepoints, d.storage.faulty, specLine(d.spec))
	return d, nil
}

func (d *driver) close() {
	if d.srv != nil {
		d.srv.Close()
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

// jarBytes is the counter job's jar of build n: the same entry class,
// other bytes for every n.
func jarBytes(n int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("META-INF/MANIFEST.MF")
	fmt.Fprintf(w, "Manifest-Version: 1.0\r\nCreated-By: randdriver\r\nMain-Class: %s\r\n\r\n", flinktest.CounterJobClass)
	w, _ = zw.Create("build.txt")
	fmt.Fprintf(w, "build %d\n", n)
	_ = zw.Close()
	return buf.Bytes()
}

var modes = []policy.UpgradeMode{policy.UpgradeSavepoint, policy.UpgradeLastState, policy.UpgradeStateless}

// initialSpec draws the first spec of a run.
func (d *driver) initialSpec() lifecycle.JobSpec {
	r := d.r
	interval := []string{"0", "5000", "10000", "30000"}[r.IntN(4)]
	if r.IntN(6) != 0 && interval == "0" {
		interval = "10000" // checkpointing off in about one run of 24
	}
	args := []string{"--out", "/out", "--keys", "2", "--rate", "10", "--checkpoint-interval", interval,
		"--restart-attempts", strconv.Itoa(r.IntN(2)), "--name", "v0"}
	spec := lifecycle.JobSpec{
		Job: lifecycle.JobTemplate{JarFile: d.jarPath, Args: args},
		Update: policy.UpdatePolicy{Mode: modes[r.IntN(len(modes))], MaxStateAge: policy.Duration(farFuture),
			FallbackToLastState: r.IntN(2) == 0},
		Restart: policy.RestartPolicy{Mode: policy.RestartFromLatestState, MaxRestarts: 2 + r.IntN(4),
			Backoff: policy.Duration(10 * time.Second), MaxStateAge: policy.Duration(farFuture)},
	}
	if r.IntN(5) == 0 {
		spec.Restart.Mode = policy.RestartNever
	}
	if r.IntN(3) != 0 {
		spec.Job.FlinkConfiguration = map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
	}
	if r.IntN(3) == 0 {
		spec.Savepoints.Interval = policy.Duration(time.Duration(2+r.IntN(9)) * time.Minute)
	}
	if r.IntN(4) == 0 {
		// Triggered checkpoints, an action beside the job like periodic
		// savepoints: mostly more often than the job's own (5 to 30 s),
		// so that they are triggered.
		spec.Checkpoints.Interval = policy.Duration(time.Duration(3+r.IntN(40)) * time.Second)
	}
	if r.IntN(4) == 0 {
		spec.BlueGreen = lifecycle.BlueGreenPolicy{Enabled: true, Window: policy.Duration(2 * time.Minute), KeepSavepoint: r.IntN(2) == 0}
	}
	if r.IntN(4) == 0 {
		spec.Rollback = lifecycle.RollbackPolicy{Enabled: true, ReadinessTimeout: policy.Duration(3 * time.Minute)}
	}
	if r.IntN(2) == 0 {
		d.retention(&spec)
	}
	if r.IntN(3) == 0 {
		d.useSecret(&spec)
	}
	return spec
}

func specLine(s lifecycle.JobSpec) string {
	return fmt.Sprintf("state %s mode %s fallback %v restart %s/%d args %v par %d sp %v cp %v keep %d/%v bg %v rb %v restore %q@%s retain %v adopt %q",
		s.State, s.Update.Mode, s.Update.FallbackToLastState, s.Restart.Mode, s.Restart.MaxRestarts, s.Job.Args, s.Job.Parallelism,
		s.Savepoints.Interval.Std(), s.Checkpoints.Interval.Std(), s.Savepoints.MaxCount, s.Savepoints.MaxAge.Std(), s.BlueGreen.Enabled, s.Rollback.Enabled, s.Restore.Path, s.Restore.Token,
		s.Job.FlinkConfiguration != nil, s.Adopt)
}

func (d *driver) now() time.Time { return d.srv.Clock().Now() }

func (d *driver) tracef(format string, args ...any) {
	d.res.Trace = append(d.res.Trace, fmt.Sprintf("%8.1fs ", d.elapsed().Seconds())+fmt.Sprintf(format, args...))
}

func (d *driver) elapsed() time.Duration { return d.now().Sub(d.t0) }

// violate records a violation of class c.
func (d *driver) violate(c Class, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.res.Violations[c] = append(d.res.Violations[c], msg)
	d.tracef("VIOLATION %s: %s", c, msg)
}

// event draws and carries out event i of the schedule.
func (d *driver) event(ctx context.Context, i int) {
	w := d.r.IntN(100)
	if d.calm > 0 && w >= 55 && w < 93 && d.r.IntN(d.calm) != 0 {
		w = 0 // a calm run: most disturbances are calls instead
	}
	switch {
	case w < 55:
		d.call(ctx)
	case w < 58:
		d.loseNext = "crash"
		d.tracef("event: the caller crashes during the next call (its status is not stored)")
	case w < 60:
		d.loseNext = "409"
		d.tracef("event: the next status write fails with a conflict (409)")
	case w < 64:
		away := time.Duration(d.r.IntN(601)) * time.Second
		d.tracef("event: the caller is away %v", away)
		d.srv.Clock().Advance(away)
		d.away += away
	case w < 72 && d.secret != "" && d.r.IntN(3) == 0:
		d.secretEvent()
	case w < 72:
		d.fault()
	case w < 85:
		d.specChange()
	case w < 93:
		d.userAct(ctx)
	default:
		d.srv.Clock().Advance(time.Duration(1+d.r.IntN(30)) * time.Second)
	}
}

// status reads the stored status back.
func (d *driver) status() lifecycle.JobStatus {
	var st lifecycle.JobStatus
	if err := json.Unmarshal(d.stored, &st); err != nil {
		panic(fmt.Sprintf("randdriver: the stored status does not unmarshal: %v", err))
	}
	return st
}

// newRequests returns the requests the fake received since the last
// look.
func (d *driver) newRequests() []flinktest.Request {
	out := d.srv.RequestsSince(d.reqSeen)
	d.reqSeen += len(out)
	for _, q := range out {
		if strings.HasPrefix(q.Fault, "restart") {
			d.jmRestarts = append(d.jmRestarts, q.Time)
		}
	}
	return out
}

// call makes one call of Reconcile (or Delete), stores its status unless
// the call is lost, and checks the invariants.
func (d *driver) call(ctx context.Context) {
	if d.deleted {
		d.srv.Clock().Advance(maxWait)
		return // the resource is gone: nobody calls
	}
	d.newRequests() // the user's requests since the last call
	before := d.status()
	st := before
	jars, _ := lifecycle.JarDir(d.dir) // the directory of the jar; an error shows as the spec's
	d.secretTick()
	gone := !d.secretGone.IsZero()
	ctrl := &lifecycle.Controller{Env: lifecycle.Env{Client: d.ctrlC, Clock: d.srv.Clock(), Jars: jars, Secrets: d.secrets,
		TargetDirectory: d.srv.SavepointDir()}, Store: d.store, Name: storeName,
		PollInterval: pollInterval, RetryInterval: retryInterval, Storage: d.storage}
	live := liveJobs(d.srv)
	now := d.now()
	var res lifecycle.Result
	var err error
	if d.deleting {
		if d.deleteSince.IsZero() {
			d.deleteSince = now
		}
		res, err = ctrl.Delete(ctx, d.spec, &st)
	} else {
		res, err = ctrl.Reconcile(ctx, d.spec, &st)
	}
	d.res.Calls++
	if l := before.LateSavepoint; l.Pending() && !st.LateSavepoint.Pending() && slices.ContainsFunc(st.Savepoints.Records,
		func(r savepoint.Record) bool { return r.JobID == l.JobID && r.Time.Equal(l.TriggerTime) }) {
		d.res.Seen["late savepoints recorded"]++
	}
	sent := reqlog.WithoutReplays(d.newRequests())
	first := len(d.ctrlReqs)
	d.ctrlReqs = append(d.ctrlReqs, sent...)
	name := "Reconcile"
	if d.deleting {
		name = "Delete"
	}
	errText := ""
	if err != nil {
		errText = " err=" + err.Error()
	}
	d.tracef("call %s: action %s phase %s outcome %s from %q; %s/%s (%.80s); job %s %s; latest %s; done %v requeue %v%s; sent %v",
		name, st.Action, st.Progress.Phase, st.Progress.Outcome, st.Progress.Replace.RestoreFrom, st.State, st.Reason, st.Message, st.JobID, st.JobState,
		st.Latest.Location, res.Done, res.RequeueAfter, errText, routesOf(sent))
	if a := st.Audit; a != nil && !a.Time.IsZero() && (before.Audit == nil || !a.Time.Equal(before.Audit.Time)) {
		d.tracef("audit: %d storage requests (truncated %v, %d failed), %v; recorded %d, restore point %q, replaced %v",
			a.Requests, a.Truncated, a.ListFailures, a.Counts, a.Recorded, a.RestorePoint, a.Replaced)
	}
	lost := d.loseNext
	d.loseNext = ""
	d.track(before, st, now, first)
	d.checkCall(ctx, before, st, res, now, sent, live)
	d.checkSecrets(before, st, err, sent, gone)
	refusedNow := d.refusedNow
	d.refusedNow = map[string]string{}
	if lost != "" {
		d.tracef("the status of the call is lost (%s); the caller goes on from the one stored before", lost)
		return
	}
	b, merr := json.Marshal(st)
	if merr != nil {
		panic(fmt.Sprintf("randdriver: the status does not marshal: %v", merr))
	}
	d.stored = b
	maps.Copy(d.refusedKnown, refusedNow)
	d.afterCall(st, res)
	if argValue(d.spec.Job.Args, "--checkpoint-interval") == "0" && st.JobID != "" {
		d.res.Seen["calls on a job without checkpointing"]++
	}
	if d.deleting && res.Done {
		d.deleted = true
		d.res.Seen["deletes done"]++
		d.checkDeleted(ctx, st, res)
		return
	}
	wait := res.RequeueAfter
	if wait <= 0 || wait > maxWait {
		wait = maxWait
	}
	d.srv.Clock().Advance(wait)
}

// track follows the action of the stored statuses: a new one starts
// when the status before the call had none in flight and the call
// changed the action's progress.
func (d *driver) track(before, st lifecycle.JobStatus, now time.Time, first int) {
	key := actionKey(st)
	if st.Action == "" || key == actionKey(before) && before.InFlight() {
		return
	}
	if !before.InFlight() && key != actionKey(before) {
		mode := d.spec.Update.Mode
		if st.ActionSpec != nil {
			// The action runs with the spec it started with: a retry
			// of a change whose job was stopped keeps that change's
			// update policy (JobStatus.ActionSpec), whatever the spec
			// says when the retry starts.
			mode = st.ActionSpec.Update.Mode
		}
		if mode == "" {
			mode = policy.UpgradeSavepoint
		}
		d.act = actionTrack{key: key, start: now, startReq: first, mode: mode}
		d.res.Seen["actions started"]++
		switch st.Action {
		case lifecycle.ActionBlueGreen:
			d.res.Seen["blue/green actions"]++
		case lifecycle.ActionCheckpoint:
			d.res.Seen["triggered checkpoints"]++
		}
	}
	d.act.key = key
}

// actionKey identifies an action's progress: a new action starts with a
// new Started time or a new operation.
func actionKey(st lifecycle.JobStatus) string {
	p := st.Progress
	return fmt.Sprint(st.Action, "|", p.Operation, "|", p.Started.UnixNano(), "|", p.Phase, "|", p.Outcome)
}

// liveJobs are the jobs of the fake that have not ended.
func liveJobs(srv *flinktest.Server) map[flinkapi.JobID]flinkapi.JobState {
	out := map[flinkapi.JobID]flinkapi.JobState{}
	for _, j := range srv.Jobs() {
		if !j.State.IsGloballyTerminal() {
			out[j.ID] = j.State
		}
	}
	return out
}

// fault injects a fault that hits the next one to three matching
// requests or savepoints.
func (d *driver) fault() {
	r := d.r
	times := 1 + r.IntN(3)
	var f flinktest.Fault
	switch r.IntN(11) {
	case 0, 1:
		routes := []string{"GET /jobs/:jobid", "POST /jobs/:jobid/savepoints", "GET /jobs/:jobid/savepoints/:triggerid", "POST /jobs/:jobid/stop",
			"POST /jars/:jarid/run", "PATCH /jobs/:jobid", "GET /jobs/:jobid/checkpoints", "GET /jobs", "POST /jars/upload"}
		f = flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: routes[r.IntN(len(routes))], Times: times}
	case 2:
		routes := []string{"POST /jobs/:jobid/savepoints", "POST /jobs/:jobid/stop", "POST /jars/:jarid/run", "PATCH /jobs/:jobid"}
		f = flinktest.Fault{Kind: flinktest.FaultReset, After: true, Route: routes[r.IntN(len(routes))], Times: 1}
	case 3:
		routes := []string{"GET /jobs/:jobid/checkpoints", "GET /jobs/:jobid/checkpoints/config"}
		f = flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Route: routes[r.IntN(len(routes))], Times: times}
		d.fault404At = d.now()
	case 4:
		d.res.Seen["JobManager restarts"]++
		f = flinktest.Fault{Kind: flinktest.FaultRestart, Times: 1, Restart: flinktest.RestartOptions{HA: r.IntN(2) == 0,
			Downtime: time.Duration(r.IntN(20)) * time.Second}}
	case 5:
		f = flinktest.Fault{Kind: flinktest.FaultSavepointFails, Times: times}
	case 6:
		f = flinktest.Fault{Kind: flinktest.FaultJobFailsDuringSavepoint, Times: 1}
	case 7:
		f = flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping, Times: 1}
	case 8:
		f = flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /jobs/:jobid/savepoints/:triggerid", Times: times}
	case 9:
		f = flinktest.Fault{Kind: flinktest.FaultDisposalFails, Times: times}
		d.res.Seen["disposal faults"]++
	default:
		switch r.IntN(3) {
		case 0:
			f = flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "POST /savepoint-disposal", Times: times}
		case 1:
			f = flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Route: "GET /savepoint-disposal/:triggerid", Times: times}
		default:
			f = flinktest.Fault{Kind: flinktest.FaultReset, After: true, Route: "POST /savepoint-disposal", Times: 1}
		}
		d.res.Seen["disposal faults"]++
	}
	if err := d.srv.Inject(f); err != nil {
		panic(fmt.Sprintf("randdriver: %v", err))
	}
	d.tracef("event: fault %v %d %s after=%v times %d restart %+v", f.Kind, f.Status, f.Route, f.After, f.Times, f.Restart)
}

// markPolicyChange notes a change of the spec's update mode while an
// action is in flight.
func (d *driver) markPolicyChange() {
	if st := d.status(); st.InFlight() {
		d.act.policyChanged = true
	}
}

// specChange draws a change of the spec (or of the caller's view of the
// deployment: delete, re-create).
func (d *driver) specChange() {
	r := d.r
	if d.deleted {
		d.recreate()
		return
	}
	if d.deleting {
		return // the resource is being deleted: its spec stays
	}
	d.specSince = d.now()
	switch r.IntN(19) {
	case 0, 1:
		d.version++
		d.setName(d.version)
		d.tracef("event: spec: new args (upgrade) %v", d.spec.Job.Args)
	case 2:
		d.spec.Job.Parallelism = 1 + r.IntN(2)
		d.tracef("event: spec: parallelism %d", d.spec.Job.Parallelism)
	case 3:
		old := d.spec.Update.Mode
		d.spec.Update.Mode = modes[r.IntN(len(modes))]
		if d.spec.Update.Mode != old {
			d.markPolicyChange()
			if d.act.policyChanged {
				d.res.Seen["mode changes mid-action"]++
			}
		}
		d.tracef("event: spec: update mode %s -> %s (policy changed mid-action: %v)", old, d.spec.Update.Mode, d.act.policyChanged)
	case 4, 5:
		if d.spec.State == lifecycle.DesiredSuspended {
			d.spec.State = lifecycle.DesiredRunning
		} else {
			d.spec.State = lifecycle.DesiredSuspended
		}
		d.tracef("event: spec: state %s", d.spec.State)
	case 6:
		d.restoreRequest()
	case 7:
		d.deleting = true
		d.spec.OnDelete = ""
		d.tracef("event: delete: the caller calls Delete from now on")
	case 8:
		d.spec.BlueGreen.Enabled = !d.spec.BlueGreen.Enabled
		d.spec.BlueGreen.Window = policy.Duration(2 * time.Minute)
		d.tracef("event: spec: blue/green %v", d.spec.BlueGreen.Enabled)
	case 9:
		if d.spec.Job.Parallelism > d.slots {
			d.spec.Job.Parallelism = 1
			d.overSince = time.Time{}
			d.tracef("event: spec: parallelism back to 1")
		} else {
			d.spec.Job.Parallelism = d.slots + 1
			d.overSince = d.now()
			d.res.Seen["parallelism above the slots"]++
			d.tracef("event: spec: parallelism %d, above the %d slots", d.spec.Job.Parallelism, d.slots)
		}
	case 10:
		// The jar is rebuilt at the same path, with a new version.
		d.version++
		if err := os.WriteFile(d.jarPath, jarBytes(d.version), 0o600); err != nil {
			panic(err)
		}
		d.fileBuild = d.version
		d.rebuiltAt, d.rebuiltVersion = d.now(), d.version
		d.res.Seen["jar rebuilds"]++
		d.setName(d.version)
		d.tracef("event: jar rebuilt at the same path (build %d), spec args %v", d.version, d.spec.Job.Args)
		if r.IntN(2) == 0 {
			// A rollback once the rebuilt job runs: back to the build
			// before (the request waits for the upgrade).
			d.spec.Requests.Rollback = d.token("b")
			d.tracef("event: spec: rollback request %q", d.spec.Requests.Rollback)
		}
	case 11:
		d.spec.Restart.MaxRestarts = 1 + r.IntN(5)
		d.tracef("event: spec: restart max %d", d.spec.Restart.MaxRestarts)
	case 12, 13, 14:
		d.request()
	case 15:
		d.importSavepoint()
	case 16:
		d.changeRetention()
	case 17:
		d.detachDelete()
	default:
		d.spec.Rollback = lifecycle.RollbackPolicy{Enabled: !d.spec.Rollback.Enabled, ReadinessTimeout: policy.Duration(3 * time.Minute)}
		d.tracef("event: spec: rollback %v", d.spec.Rollback.Enabled)
	}
	if d.spec.Job.Parallelism <= d.slots {
		d.overSince = time.Time{}
	}
}

// withName sets the job's --name to v<n>.
func withName(args []string, n int) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--name" {
			out[i+1] = "v" + strconv.Itoa(n)
		}
	}
	return out
}

// restoreRequest asks for a restore from an older savepoint of the
// deployment (one that may be disposed of), or from a path that names
// none.
func (d *driver) restoreRequest() {
	var sps []flinktest.Snapshot
	for _, s := range d.srv.Snapshots() {
		if s.Savepoint {
			sps = append(sps, s)
		}
	}
	tok := fmt.Sprintf("r%d", len(d.res.Trace))
	if len(sps) == 0 || d.r.IntN(8) == 0 {
		d.spec.Restore = policy.RestoreRequest{Path: d.srv.SavepointDir() + "/savepoint-000000-missing" + tok, Token: tok, Time: d.now().Add(-time.Minute)}
	} else {
		s := sps[d.r.IntN(len(sps))]
		d.spec.Restore = policy.RestoreRequest{Path: s.Location, Token: tok, Time: s.Taken}
	}
	d.tracef("event: spec: restore request %s from %s", tok, d.spec.Restore.Path)
}

// recreate re-creates the deleted resource under the same name, with
// the status stored before or a fresh one.
func (d *driver) recreate() {
	d.deleted, d.deleting, d.deleteSince = false, false, time.Time{}
	d.spec.State = lifecycle.DesiredRunning
	d.spec.OnDelete, d.spec.Adopt = "", ""
	d.specSince = d.now()
	var detached flinkapi.JobID
	for id := range d.detached {
		if d.foreign[id] != "" && (detached == "" || id < detached) {
			detached = id
		}
	}
	reuse, adopt := d.r.IntN(2) == 0, d.r.IntN(3) == 0
	if reuse {
		if adopt && detached != "" {
			d.spec.Adopt = detached
			d.tracef("event: spec: adopt the detached job %s", detached)
		}
		d.reused, d.reusedAt, d.runSinceReuse = true, d.now(), false
		d.res.Seen["statuses reused after delete"]++
		d.tracef("event: re-created under the same name, reusing the status stored before the delete")
		return
	}
	d.reused = false
	d.stored, _ = json.Marshal(lifecycle.JobStatus{})
	d.ledgerSince = d.now()
	if adopt {
		if detached != "" && d.r.IntN(2) == 0 {
			d.spec.Adopt = detached
			d.tracef("event: spec: adopt the detached job %s", detached)
		} else {
			d.adoptUserJob(context.Background())
		}
	}
	// The refusals the controller was told of were in the statuses
	// dropped here: a restore request of the spec is new to it.
	d.refusedKnown = map[string]string{}
	d.tracef("event: re-created under the same name with a fresh status")
}

// userAct is something a user does on Flink directly.
func (d *driver) userAct(ctx context.Context) {
	st := d.status()
	id := st.JobID
	if d.r.IntN(6) == 0 && d.cancelForeign(ctx) {
		return
	}
	if id == "" {
		return
	}
	d.newRequests()
	switch d.r.IntN(5) {
	case 0, 1:
		trig := flinkapi.NewTriggerID()
		d.userTriggers[string(trig)] = true
		_, err := d.user.StopWithSavepoint(ctx, id, flinkapi.StopRequest{TriggerID: trig})
		if err == nil {
			d.userStopped[id] = true
			d.res.Seen["user stops"]++
		}
		d.tracef("event: user: stop with savepoint of %s from the Flink UI (trigger %s): %v", id, trig, err)
	case 2:
		err := d.user.CancelJob(ctx, id)
		d.tracef("event: user: cancel %s: %v", id, err)
	case 3:
		err := d.srv.FailJob(id, "java.lang.RuntimeException: boom")
		d.tracef("event: job %s fails: %v", id, err)
		if err == nil && !d.deleting && d.r.IntN(3) == 0 {
			// A spec change reaches the controller with the job down.
			d.version++
			d.setName(d.version)
			d.specSince = d.now()
			d.tracef("event: spec: new args (upgrade) %v, the job failed", d.spec.Job.Args)
		}
	default:
		o := flinktest.RestartOptions{HA: d.r.IntN(2) == 0}
		d.srv.RestartJobManager(o)
		d.jmRestarts = append(d.jmRestarts, d.now())
		d.res.Seen["JobManager restarts"]++
		d.tracef("event: the JobManager restarts (HA %v)", o.HA)
	}
	d.newRequests()
}

func routesOf(reqs []flinktest.Request) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		name := strings.TrimPrefix(r.Route, "") + " " + strconv.Itoa(r.Status)
		if r.Fault != "" {
			name += " [" + r.Fault + "]"
		}
		out = append(out, name)
	}
	return out
}
