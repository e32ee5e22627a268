package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/internal/testkit/plaincheck"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestDeepCopy checks that Progress holds only values, strings and
// time.Time but for its Preflight, which DeepCopyInto copies, so that its
// copy is deep.
func TestDeepCopy(t *testing.T) {
	for _, p := range plaincheck.Problems("Progress", reflect.TypeFor[Progress](), "Progress.Replace.Preflight", "Progress.Replace.Observed.Latest.RecordExtra") {
		t.Error(p)
	}
	pf := &Progress{Replace: ReplaceProgress{Preflight: &Preflight{New: []policy.PlanVertex{{ID: "a", Parallelism: 2}}, Old: []policy.PlanVertex{{ID: "a"}},
		Verdict: &policy.PreflightVerdict{Findings: []policy.PreflightFinding{{Reason: policy.PreflightStateNotRestored, Vertices: []string{"a"}}}}}}}
	cp := pf.DeepCopy()
	cp.Replace.Preflight.New[0].Parallelism, cp.Replace.Preflight.Old[0].ID = 3, "b"
	cp.Replace.Preflight.Verdict.Findings[0].Vertices[0] = "c"
	if pf.Replace.Preflight.New[0].Parallelism != 2 || pf.Replace.Preflight.Old[0].ID != "a" || pf.Replace.Preflight.Verdict.Findings[0].Vertices[0] != "a" {
		t.Errorf("DeepCopy shares the preflight: %+v", pf.Replace.Preflight)
	}

	p := &Progress{Phase: PhaseSavepoint, JobID: "j", Savepoint: SavepointProgress{Status: savepoint.Status{State: savepoint.InFlight}}, Started: time.Unix(1, 0)}
	c := p.DeepCopy()
	if !reflect.DeepEqual(p, c) || c == p {
		t.Errorf("DeepCopy = %+v", c)
	}
	c.Savepoint.Status.State = savepoint.Failed
	if p.Savepoint.Status.State != savepoint.InFlight {
		t.Error("DeepCopy shares the savepoint status")
	}
	if (*Progress)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}

// TestProgressJSON checks the stable JSON names and that zero fields are
// left out.
func TestProgressJSON(t *testing.T) {
	b, err := json.Marshal(Progress{})
	if err != nil || string(b) != "{}" {
		t.Errorf("zero Progress = %s, %v", b, err)
	}
	p := Progress{
		Phase: PhaseDone, JobID: "0123456789abcdef0123456789abcdef", Stop: StopProgress{Strategy: StopWithSavepoint},
		Savepoint: SavepointProgress{Status: savepoint.Status{State: savepoint.Succeeded, Location: "file:/sp"}, Location: "file:/sp"},
		Submit:    SubmitProgress{JarID: "x.jar"}, Requests: 1, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Deadline: time.Date(2026, 1, 2, 3, 14, 5, 0, time.UTC), Outcome: OutcomeSucceeded, Reason: "r", LastError: "e", Steps: 4,
	}
	b, err = json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"phase"`, `"jobID"`, `"strategy"`, `"savepoint"`, `"location"`, `"jarID"`, `"requests"`,
		`"started":"2026-01-02T03:04:05Z"`, `"deadline"`, `"outcome"`, `"reason"`, `"lastError"`, `"steps"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("JSON %s lacks %s", b, name)
		}
	}
	var back Progress
	if err := json.Unmarshal(b, &back); err != nil || back != p {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// TestRun checks that Run waits on the operation's clock, reports every
// step, and ends.
func TestRun(t *testing.T) {
	e := newEnv(t)
	start := e.srv.Clock().Now()
	var phases []Phase
	var p Progress
	op := &Stop{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}
	var last time.Duration
	res, err := Run(context.Background(), op, &p, func(r Report) {
		phases = append(phases, r.Progress.Phase)
		if r.Elapsed < last {
			t.Errorf("elapsed went back from %v to %v", last, r.Elapsed)
		}
		last = r.Elapsed
	})
	if err != nil || res.Outcome != OutcomeSucceeded || p.Savepoint.Location == "" {
		t.Fatalf("Run = %+v, %v; progress %+v", res, err, p)
	}
	if len(phases) != p.Steps || phases[len(phases)-1] != PhaseDone {
		t.Errorf("phases %v, %d steps", phases, p.Steps)
	}
	want := []Phase{PhaseSavepoint, PhaseWaitStopped, PhaseDone}
	if got := slices.Compact(slices.Clone(phases)); !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if waited := e.srv.Clock().Now().Sub(start); waited <= 0 || waited > time.Minute {
		t.Errorf("the clock moved %v", waited)
	}
	// Run on an ended operation returns at once.
	if res, err := Run(context.Background(), op, &p, nil); err != nil || !res.Done {
		t.Errorf("second Run = %+v, %v", res, err)
	}
}

// TestRunReportAddsNoRequests checks that Run's callback, called after
// every step, adds no request to the operation's: an operation run with
// one sends the same requests as without.
func TestRunReportAddsNoRequests(t *testing.T) {
	sent := func(report bool) []string {
		e := newEnv(t, flinktest.WithSavepointDuration(20*time.Second))
		var p Progress
		op := &TakeSavepoint{Env: Env{Client: e.c, Timing: Timing{Poll: time.Second}, Clock: e.srv.Clock()}, Job: e.job}
		var onReport func(Report)
		reports := 0
		if report {
			onReport = func(r Report) {
				reports++
				if r.HasSavepoint {
					t.Errorf("Run reported a savepoint's acknowledgement: %+v", r.Savepoint)
				}
			}
		}
		res, err := Run(context.Background(), op, &p, onReport)
		if err != nil || res.Outcome != OutcomeSucceeded {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if report && reports != p.Steps {
			t.Errorf("%d reports for %d steps", reports, p.Steps)
		}
		return routes(e.srv)
	}
	without, with := sent(false), sent(true)
	if !slices.Equal(without, with) {
		t.Errorf("with a callback Run sent %d requests, %d without:\n%v\n%v", len(with), len(without), with, without)
	}
}

func TestRunContextCanceled(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var p Progress
	_, err := Run(ctx, &TakeSavepoint{Env: Env{Client: e.c, Clock: e.srv.Clock()}, Job: e.job}, &p, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if len(e.srv.Requests()) != 0 {
		t.Errorf("requests sent: %v", routes(e.srv))
	}
}
