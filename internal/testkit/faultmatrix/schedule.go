package faultmatrix

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// Op is a lifecycle operation the suite drives.
type Op string

// The operations, in the order of the table's columns.
const (
	OpTakeSavepoint       Op = "savepoint"
	OpStop                Op = "stop"
	OpCancelWithSavepoint Op = "cancel-with-savepoint"
	OpSavepointThenCancel Op = "savepoint-then-cancel"
	OpCancelStateless     Op = "cancel-stateless"
	OpUpgrade             Op = "upgrade"
	OpUpgradeLastState    Op = "upgrade-last-state"
	OpRestart             Op = "restart"
	OpSubmit              Op = "submit"
	OpTeardown            Op = "teardown"
	OpRedeploy            Op = "redeploy"
	OpDispose             Op = "dispose"
	OpBlueGreen           Op = "blue-green"
)

// Ops lists every operation, in the order of the table's columns.
var Ops = []Op{
	OpTakeSavepoint, OpStop, OpCancelWithSavepoint, OpSavepointThenCancel, OpCancelStateless,
	OpUpgrade, OpUpgradeLastState, OpRestart, OpSubmit, OpTeardown, OpRedeploy, OpDispose, OpBlueGreen,
}

// Versions are the Flink versions the fake plays in the schedules; the
// deterministic matrix uses the first.
var Versions = []string{"1.20.5", "1.18.1", "2.3.0"}

// Routes that change the cluster or that an operation polls, by operation.
const (
	routeSavepoint       = "POST /jobs/:jobid/savepoints"
	routeSavepointStatus = "GET /jobs/:jobid/savepoints/:triggerid"
	routeStop            = "POST /jobs/:jobid/stop"
	routeCancel          = "PATCH /jobs/:jobid"
	routeRun             = "POST /jars/:jarid/run"
	routeUpload          = "POST /jars/upload"
	routeJob             = "GET /jobs/:jobid"
	routeStatus          = "GET /jobs/:jobid/status"
	routeCheckpoints     = "GET /jobs/:jobid/checkpoints"
	routeCheckpointCfg   = "GET /jobs/:jobid/checkpoints/config"
	routeDispose         = "POST /savepoint-disposal"
	routeDisposeStatus   = "GET /savepoint-disposal/:triggerid"
)

// mutations are the routes by which op changes the cluster; polls the
// routes it reads while it waits.
func (op Op) mutations() []string {
	switch op {
	case OpTakeSavepoint, OpCancelWithSavepoint:
		return []string{routeSavepoint}
	case OpStop, OpTeardown:
		return []string{routeStop}
	case OpSavepointThenCancel:
		return []string{routeSavepoint, routeCancel}
	case OpCancelStateless:
		return []string{routeCancel}
	case OpUpgrade, OpRedeploy:
		return []string{routeStop, routeRun}
	case OpUpgradeLastState:
		return []string{routeCancel, routeRun}
	case OpRestart:
		return []string{routeRun}
	case OpSubmit:
		return []string{routeUpload, routeRun}
	case OpDispose:
		return []string{routeDispose}
	case OpBlueGreen:
		return []string{routeSavepoint, routeRun, routeCancel}
	}
	return nil
}

func (op Op) polls() []string {
	switch op {
	case OpTakeSavepoint, OpStop, OpCancelWithSavepoint, OpSavepointThenCancel, OpTeardown:
		return []string{routeSavepointStatus, routeStatus}
	case OpCancelStateless:
		return []string{routeStatus}
	case OpUpgrade, OpRedeploy:
		return []string{routeJob, routeSavepointStatus, routeStatus}
	case OpUpgradeLastState, OpRestart:
		return []string{routeJob, routeCheckpoints, routeCheckpointCfg, routeStatus}
	case OpSubmit:
		return []string{routeStatus, routeJob}
	case OpDispose:
		return []string{routeDisposeStatus}
	case OpBlueGreen:
		return []string{routeJob, routeSavepointStatus, routeCheckpoints, routeStatus}
	}
	return nil
}

// Event is one fault of a schedule: a fault injected into the fake
// JobManager before the step numbered Step (counted over the whole run,
// from 0), or a JobManager restart or job failure done then.
type Event struct {
	Step int
	// Fault, if set, is injected (its Job is left empty: any job).
	Fault *flinktest.Fault
	// Restart, if set, restarts the JobManager; with LoseJobs every job
	// it knows is lost even with Restart.HA.
	Restart  *flinktest.RestartOptions
	LoseJobs bool
	// FailJob fails the operation's job (or, for a submission, the new
	// job) if its tasks run.
	FailJob bool
	// LoseAnswer: the first step from Step on that sends a request which
	// changes the cluster (a trigger, a stop, a cancel, a jar upload or
	// run, a disposal) loses its answer with the caller, who resumes
	// from the Progress stored before that step, Away later.
	LoseAnswer bool
	// Crash: the caller crashes after the step numbered Step (its
	// Progress stored, or with LoseAnswer lost) and comes back Away
	// later with a new operation.
	Crash bool
	Away  time.Duration
	// Foreign: before the operation starts, it is handed stored
	// statuses that are not its own (of another job, of another
	// operation, of an unknown phase, outcome or format); each must be
	// refused with an error and nothing sent. The run ends there, with
	// the outcome "Refused".
	Foreign bool
}

// String describes the event compactly.
func (e Event) String() string {
	var b strings.Builder
	if e.Step > 0 {
		fmt.Fprintf(&b, "@%d ", e.Step)
	}
	switch {
	case e.Fault != nil:
		f := e.Fault
		b.WriteString(f.Kind.String())
		switch f.Kind {
		case flinktest.FaultStatus:
			fmt.Fprintf(&b, " %d", f.Status)
		case flinktest.FaultLatency:
			fmt.Fprintf(&b, " %v", f.Delay)
		case flinktest.FaultRestart:
			b.WriteString(restartString(f.Restart, false))
		}
		if f.After {
			b.WriteString(" after")
		}
		if f.Route != "" {
			fmt.Fprintf(&b, " on %q", f.Route)
		}
		if f.Times > 0 {
			fmt.Fprintf(&b, " x%d", f.Times)
		}
		if f.Probability > 0 {
			fmt.Fprintf(&b, " p=%.2f", f.Probability)
		}
	case e.Restart != nil:
		b.WriteString("jobmanager-restart" + restartString(*e.Restart, e.LoseJobs))
	case e.FailJob:
		b.WriteString("fail-job")
	case e.Crash && e.LoseAnswer:
		fmt.Fprintf(&b, "crash losing the answer, away %v", e.Away)
	case e.Crash:
		fmt.Fprintf(&b, "crash, away %v", e.Away)
	case e.LoseAnswer:
		fmt.Fprintf(&b, "answer lost, away %v", e.Away)
	case e.Foreign:
		b.WriteString("foreign progress")
	}
	return b.String()
}

func restartString(o flinktest.RestartOptions, lose bool) string {
	s := " no-ha"
	if o.HA {
		s = " ha"
	}
	if lose || len(o.Lose) > 0 {
		s += " losing-jobs"
	}
	if o.Downtime > 0 {
		s += fmt.Sprintf(" down %v", o.Downtime)
	}
	return s
}

// Schedule is one run of the suite: an operation, the Flink version the
// fake plays, and the faults.
type Schedule struct {
	// Seed seeds the fake JobManager (its ids and which faults with a
	// probability hit); for a generated schedule it is also the seed the
	// schedule was drawn from.
	Seed    int64
	Op      Op
	Version string
	// RestartAttempts is the --restart-attempts of the operation's job.
	RestartAttempts int
	// StoreDuration is the fake's rest.async.store-duration; 0: Flink's
	// default (5 minutes).
	StoreDuration time.Duration
	Events        []Event
	// Class names the fault class of a matrix cell; empty for generated
	// schedules.
	Class string
}

// String describes the schedule on one line.
func (s Schedule) String() string {
	ev := make([]string, len(s.Events))
	for i, e := range s.Events {
		ev[i] = e.String()
	}
	name := s.Class
	if name == "" {
		name = fmt.Sprintf("seed %d", s.Seed)
	}
	store := ""
	if s.StoreDuration > 0 {
		store = fmt.Sprintf(", store duration %v", s.StoreDuration)
	}
	return fmt.Sprintf("%s: %s on Flink %s (restart-attempts %d%s) [%s]", name, s.Op, s.Version, s.RestartAttempts, store, strings.Join(ev, "; "))
}

// Generate draws a random schedule from seed: an operation, a version and
// one to four faults at random routes, steps and times. The same seed
// always gives the same schedule.
func Generate(seed int64) Schedule {
	r := rand.New(rand.NewPCG(uint64(seed), 0x666d6174726978)) // "fmatrix"
	op := Ops[r.IntN(len(Ops))]
	s := Schedule{Seed: seed, Op: op, Version: Versions[r.IntN(len(Versions))], RestartAttempts: []int{0, 0, 2}[r.IntN(3)]}
	s.Events = drawFaults(r, op)
	return s
}

// drawFaults draws one to four faults at random routes of op (its
// mutations and polls, or any), steps and times: the faults of a
// generated schedule, also of the controller's (GenerateController).
func drawFaults(r *rand.Rand, op Op) []Event {
	var events []Event
	routes := append(append([]string{""}, op.mutations()...), op.polls()...)
	n := 1 + r.IntN(4)
	for range n {
		e := Event{}
		switch k := r.IntN(10); {
		case k < 6:
			f := &flinktest.Fault{Route: routes[r.IntN(len(routes))], Times: 1 + r.IntN(3)}
			switch r.IntN(4) {
			case 0, 1:
				f.Kind, f.Status = flinktest.FaultStatus, []int{404, 409, 500, 503, 503}[r.IntN(5)]
				f.After = r.IntN(3) == 0
				if f.Status == 409 {
					// Flink answers 409 only to a cancel of a job that
					// already ended otherwise.
					f.Route = routeCancel
				}
			case 2:
				f.Kind, f.After = flinktest.FaultReset, r.IntN(2) == 0
			case 3:
				f.Kind, f.Delay = flinktest.FaultLatency, time.Duration(1+r.IntN(60))*time.Second
			}
			if r.IntN(4) == 0 {
				// A share of the matching requests, possibly without end.
				f.Probability = float64(1+r.IntN(5)) / 10
				f.Times = []int{0, 3, 6}[r.IntN(3)]
			}
			e.Fault = f
		case k < 8:
			f := &flinktest.Fault{Times: 1 + r.IntN(2), Cause: "java.lang.IllegalStateException: injected by schedule"}
			f.Kind = []flinktest.FaultKind{flinktest.FaultSavepointFails, flinktest.FaultJobFailsDuringSavepoint, flinktest.FaultJobFailsWhileStopping}[r.IntN(3)]
			e.Fault = f
		case k < 9:
			e.Step = 1 + r.IntN(25)
			e.Restart = &flinktest.RestartOptions{HA: r.IntN(3) > 0, Downtime: time.Duration(r.IntN(4)) * time.Second}
			e.LoseJobs = e.Restart.HA && r.IntN(4) == 0
		default:
			e.Step = 1 + r.IntN(20)
			e.FailJob = true
		}
		events = append(events, e)
	}
	return events
}

// Class is a fault class of the deterministic matrix.
type Class struct {
	Name string
	// Events builds the faults for an operation.
	Events func(op Op) []Event
	// Attack, in a row of the controller matrix, is the attack of
	// ordinary use the row makes (ControllerScenario.Attack).
	Attack Attack
	// Changes, if set, are the spec changes the row applies to in the
	// controller matrix (Applies); nil: every one.
	Changes []Change
}

func faultOn(routes []string, f flinktest.Fault) []Event {
	var out []Event
	for _, r := range routes {
		g := f
		g.Route = r
		out = append(out, Event{Fault: &g})
	}
	return out
}

func every(f flinktest.Fault) func(Op) []Event {
	return func(Op) []Event { return []Event{{Fault: &f}} }
}

// Classes are the rows of the matrix: every fault class of issue 6.
var Classes = []Class{
	{Name: "none", Events: func(Op) []Event { return nil }},
	{Name: "404 x2", Events: every(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Times: 2})},
	{Name: "409 on cancel, after it took effect", Events: func(Op) []Event {
		return faultOn([]string{routeCancel}, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 409, After: true, Times: 1})
	}},
	{Name: "500 x2", Events: every(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 500, Times: 2})},
	{Name: "500 after the change", Events: func(op Op) []Event {
		return faultOn(op.mutations(), flinktest.Fault{Kind: flinktest.FaultStatus, Status: 500, After: true, Times: 1})
	}},
	{Name: "503 leader election x4", Events: every(flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 4})},
	{Name: "503 on polls, always", Events: func(op Op) []Event {
		return faultOn(op.polls()[:1], flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503})
	}},
	{Name: "reset x2", Events: every(flinktest.Fault{Kind: flinktest.FaultReset, Times: 2})},
	{Name: "reset after the change", Events: func(op Op) []Event {
		return faultOn(op.mutations(), flinktest.Fault{Kind: flinktest.FaultReset, After: true, Times: 1})
	}},
	{Name: "latency 20s x6", Events: every(flinktest.Fault{Kind: flinktest.FaultLatency, Delay: 20 * time.Second, Times: 6})},
	{Name: "JobManager restart, HA", Events: func(op Op) []Event {
		return faultOn(op.polls()[:1], flinktest.Fault{Kind: flinktest.FaultRestart, Times: 1, Restart: flinktest.RestartOptions{HA: true, Downtime: 2 * time.Second}})
	}},
	{Name: "JobManager restart, no HA", Events: func(op Op) []Event {
		return faultOn(op.polls()[:1], flinktest.Fault{Kind: flinktest.FaultRestart, Times: 1, Restart: flinktest.RestartOptions{Downtime: 2 * time.Second}})
	}},
	{Name: "JobManager restart, job lost", Events: func(op Op) []Event {
		return []Event{{Step: 3, Restart: &flinktest.RestartOptions{HA: true, Downtime: time.Second}, LoseJobs: true}}
	}},
	{Name: "savepoint fails once", Events: every(flinktest.Fault{Kind: flinktest.FaultSavepointFails, Times: 1,
		Cause: "org.apache.flink.runtime.checkpoint.CheckpointException: Task local checkpoint failure."})},
	{Name: "savepoint always fails", Events: every(flinktest.Fault{Kind: flinktest.FaultSavepointFails})},
	{Name: "job fails during savepoint", Events: every(flinktest.Fault{Kind: flinktest.FaultJobFailsDuringSavepoint, Times: 1,
		Cause: "java.lang.RuntimeException: injected"})},
	{Name: "job fails while stopping", Events: every(flinktest.Fault{Kind: flinktest.FaultJobFailsWhileStopping, Times: 1,
		Cause: "java.lang.RuntimeException: injected"})},
	{Name: "job fails at step 3", Events: func(Op) []Event { return []Event{{Step: 3, FailJob: true}} }},
	{Name: ClassAnswerLost, Events: func(Op) []Event { return []Event{{Step: 1, LoseAnswer: true, Away: 30 * time.Second}} }},
	{Name: "one transient answer to the cancel", Events: func(op Op) []Event {
		return append(faultOn([]string{routeCancel}, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Times: 1}),
			faultOn([]string{routeCancel}, flinktest.Fault{Kind: flinktest.FaultLatency, Delay: 1500 * time.Millisecond, Times: 1})...)
	}},
	{Name: "foreign or unknown stored status", Events: func(Op) []Event { return []Event{{Foreign: true}} }},
}

// ClassAnswerLost is the matrix row whose caller loses the answer to its
// first change of the cluster and comes back after the fake's
// asynchronous result store (MatrixStoreDuration there) forgot the
// trigger id, within the operations' deadlines.
const ClassAnswerLost = "answer lost, caller away past the async store duration"

// MatrixStoreDuration is the fake's rest.async.store-duration in the row
// ClassAnswerLost: shorter than Flink's 5 minutes, so that the caller's
// absence of 30 s outlasts it within the deadlines of the operations.
const MatrixStoreDuration = 20 * time.Second

// MatrixSchedule is the schedule of one cell of the matrix.
func MatrixSchedule(c Class, op Op) Schedule {
	s := Schedule{Seed: 1, Op: op, Version: Versions[0], Events: c.Events(op), Class: c.Name}
	if c.Name == ClassAnswerLost {
		s.StoreDuration = MatrixStoreDuration
	}
	return s
}

// Crashes reports whether the schedule crashes its caller.
func (s Schedule) Crashes() bool {
	for _, e := range s.Events {
		if e.Crash {
			return true
		}
	}
	return false
}

// CrashOps are the operations of the crash-and-absence schedules.
var CrashOps = []Op{OpUpgrade, OpUpgradeLastState, OpRestart, OpTeardown, OpBlueGreen}

// GenerateCrashes draws a crash-and-absence schedule from seed: one of
// CrashOps, a version, and one to three crashes of the caller after
// random steps, each losing the answer of the step or not, each followed
// by an absence of up to 10 minutes on the fake's clock (past Flink's
// store duration of 5 minutes, and past the operations' deadlines, about
// half the time).
func GenerateCrashes(seed int64) Schedule {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6372617368)) // "crash"
	s := Schedule{Seed: seed, Op: CrashOps[r.IntN(len(CrashOps))], Version: Versions[r.IntN(len(Versions))],
		RestartAttempts: []int{0, 0, 2}[r.IntN(3)]}
	step := 0
	for range 1 + r.IntN(3) {
		step += 1 + r.IntN(8)
		s.Events = append(s.Events, Event{Step: step, Crash: true, LoseAnswer: r.IntN(2) == 0,
			Away: time.Duration(r.IntN(601)) * time.Second})
	}
	return s
}
