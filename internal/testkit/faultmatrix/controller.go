package faultmatrix

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// Change is a change of the job spec that lifecycle.Controller carries
// out: a column of the controller matrix.
type Change string

// The spec changes, in the order of the controller table's columns.
const (
	ChangeCreate  Change = "create"          // a first spec: Deploy
	ChangeUpdate  Change = "update"          // a new Job: Upgrade with a savepoint
	ChangeSuspend Change = "suspend"         // State Suspended: Suspend (stop with a savepoint)
	ChangeResume  Change = "resume"          // State Running again: Deploy from the suspend's savepoint
	ChangeDelete  Change = "delete"          // Controller.Delete: Teardown with a final savepoint
	ChangeRescale Change = "rescale"         // a new parallelism alone: Rescale (through an upgrade on the default scheduler)
	ChangeRestore Change = "restore request" // a new Restore token: Upgrade from the requested savepoint
	// ChangeBlueGreen is a new Job with BlueGreen enabled: the new job
	// runs beside the old one until it is healthy.
	ChangeBlueGreen Change = "blue/green update"
	// ChangeRetention is a retention of one savepoint (MaxCount 1) for a
	// history of several: the savepoint ledger disposes of the others.
	ChangeRetention Change = "retention"
)

// Changes lists every spec change, in the order of the table's columns.
var Changes = []Change{ChangeCreate, ChangeUpdate, ChangeSuspend, ChangeResume, ChangeDelete, ChangeRescale, ChangeRestore, ChangeBlueGreen, ChangeRetention}

// op is the operation whose routes a fault class aims at for the change
// (Class.Events takes an Op): the operation the controller's action is
// built from.
func (c Change) op() Op {
	switch c {
	case ChangeCreate:
		return OpSubmit
	case ChangeSuspend:
		return OpStop
	case ChangeResume:
		return OpRestart // a jar run from the stored savepoint, after observing
	case ChangeDelete:
		return OpTeardown
	case ChangeBlueGreen:
		return OpBlueGreen
	case ChangeRetention:
		return OpDispose
	}
	return OpUpgrade // update, rescale, restore request
}

// ControllerScenario is one run of the controller suite: a spec change
// carried out by lifecycle.Controller from a converged status, on the
// Flink version the fake plays, under the faults of Events. An Event's
// Step counts the controller's calls (Reconcile, or Delete) from the
// change on, from 0; Crash and LoseAnswer act after a call as they act
// after a Step in Execute.
type ControllerScenario struct {
	Seed          int64
	Change        Change
	Version       string
	StoreDuration time.Duration
	Events        []Event
	// Class names the fault class of a matrix cell; empty for generated
	// scenarios.
	Class string
	// App runs the jobs in application clusters (package appfake): the
	// Controller is given the fake Deployer and no Env.Client.
	App bool
	// Crash describes the crash point added to a cell's scenario by the
	// exhaustive runs ("lost@4"); empty for none.
	Crash string
	// Attack is the attack of ordinary use the scenario makes besides its
	// Events (a row of attackClasses); empty for none.
	Attack Attack
}

// String describes the scenario on one line.
func (s ControllerScenario) String() string {
	ev := make([]string, len(s.Events))
	for i, e := range s.Events {
		ev[i] = e.String()
	}
	name := s.Class
	if name == "" {
		name = fmt.Sprintf("seed %d", s.Seed)
	}
	extra := ""
	if s.StoreDuration > 0 {
		extra = fmt.Sprintf(", store duration %v", s.StoreDuration)
	}
	if s.Crash != "" {
		extra += ", crash " + s.Crash
	}
	mode := ""
	if s.App {
		mode = " in application clusters"
	}
	return fmt.Sprintf("%s: controller %s%s on Flink %s%s [%s]", name, s.Change, mode, s.Version, extra, strings.Join(ev, "; "))
}

// AwayLong is the absence of the controller's caller in the long-absence
// scenarios: past Flink's rest.async.store-duration (5 minutes), past the
// deadlines of the phases in flight (savepoint 2 minutes, stop and
// submission 1).
const AwayLong = 6 * time.Minute

// The controller's own fault classes, rows after Classes.
const (
	// ClassAwayAnswerLost: the caller loses the answer to the first call
	// that changes the cluster and comes back AwayLong later.
	ClassAwayAnswerLost = "answer lost, caller away 6m (past the store duration)"
	// ClassAwayMidAction: the caller crashes after the third call (its
	// status stored), stays away AwayLong, and the first request after
	// its return fails once (503).
	ClassAwayMidAction = "crash mid-action, away 6m, one failed read after"
)

// ControllerClasses are the rows of the controller matrix: every fault
// class of Classes, aimed at the routes of the operation the change's
// action is built from, the long absences of the controller's caller,
// and the attacks of ordinary use (attackClasses), each on the spec
// changes it applies to (Class.Applies). The attacks' rows run on the
// session cluster only.
var ControllerClasses = append(append(append([]Class(nil), Classes...),
	Class{Name: ClassAwayAnswerLost, Events: func(Op) []Event { return []Event{{Step: 1, LoseAnswer: true, Away: AwayLong}} }},
	Class{Name: ClassAwayMidAction, Events: func(Op) []Event { return awayThenFailedRead(2, AwayLong) }},
), attackClasses...)

// awayThenFailedRead is a crash after call n with the status stored, an
// absence of away, and one 503 answer to the first request after the
// return.
func awayThenFailedRead(n int, away time.Duration) []Event {
	return []Event{{Step: n, Crash: true, Away: away},
		{Step: n + 1, Fault: &flinktest.Fault{Kind: flinktest.FaultStatus, Status: 503, Times: 1}}}
}

// ControllerMatrixScenario is the scenario of one cell of the controller
// matrix.
func ControllerMatrixScenario(c Class, ch Change) ControllerScenario {
	s := ControllerScenario{Seed: 1, Change: ch, Version: Versions[0], Events: c.Events(ch.op()), Class: c.Name, Attack: c.Attack}
	if c.Name == ClassAnswerLost {
		s.StoreDuration = MatrixStoreDuration
	}
	return s
}

// CrashPoint is one way the exhaustive runs interrupt the caller after a
// call.
type CrashPoint string

// The crash points of the exhaustive runs.
const (
	// CrashLost: the caller crashes after the call and loses its answer:
	// it comes back at once with the status stored before the call.
	CrashLost CrashPoint = "lost"
	// CrashAway: the caller crashes after the call with the status
	// stored, comes back AwayLong later, and the first request after
	// its return fails once (503).
	CrashAway CrashPoint = "away"
)

// CrashPoints lists the crash points of the exhaustive runs.
var CrashPoints = []CrashPoint{CrashLost, CrashAway}

// WithCrash returns s with the crash point p after call n added.
func (s ControllerScenario) WithCrash(p CrashPoint, n int) ControllerScenario {
	s.Events = append([]Event(nil), s.Events...)
	switch p {
	case CrashLost:
		s.Events = append(s.Events, Event{Step: n, Crash: true, LoseAnswer: true})
	case CrashAway:
		s.Events = append(s.Events, awayThenFailedRead(n, AwayLong)...)
	}
	s.Crash = fmt.Sprintf("%s@%d", p, n)
	return s
}

// GenerateController draws a random controller scenario from seed: a
// spec change, a version, one to four faults as Generate draws them for
// the operation the change's action is built from, and in half of them a
// crash of the caller after a random call, losing its answer or not,
// followed by an absence of up to 10 minutes. The same seed always gives
// the same scenario.
func GenerateController(seed int64) ControllerScenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6374726c)) // "ctrl"
	ch := Changes[r.IntN(len(Changes))]
	s := ControllerScenario{Seed: seed, Change: ch, Version: Versions[r.IntN(len(Versions))]}
	s.Events = drawFaults(r, ch.op())
	if r.IntN(2) == 0 {
		s.Events = append(s.Events, Event{Step: 1 + r.IntN(12), Crash: true, LoseAnswer: r.IntN(2) == 0,
			Away: time.Duration(r.IntN(601)) * time.Second})
	}
	return s
}
