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
	"github.com/flinkkit/flinkkit/internal/plaincheck"
	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestDeepCopy checks that Progress holds only values, strings and
// time.Time but for its Preflight, which DeepCopyInto copies, so that its
// copy is deep.
func TestDeepCopy(t *testing.T) {
	for _, p := range plaincheck.Problems("Progress", reflect.TypeFor[Progress](), "Progress.Preflight") {
		t.Error(p)
	}
	pf := &Progress{Preflight: &Preflight{New: []policy.PlanVertex{{ID: "a", Parallelism: 2}}, Old: []policy.PlanVertex{{ID: "a"}},
		Verdict: &policy.PreflightVerdict{Findings: []policy.PreflightFinding{{Reason: policy.PreflightStateNotRestored, Vertices: []string{"a"}}}}}}
	cp := pf.DeepCopy()
	cp.Preflight.New[0].Parallelism, cp.Preflight.Old[0].ID = 3, "b"
	cp.Preflight.Verdict.Findings[0].Vertices[0] = "c"
	if pf.Preflight.New[0].Parallelism != 2 || pf.Preflight.Old[0].ID != "a" || pf.Preflight.Verdict.Findings[0].Vertices[0] != "a" {
		t.Errorf("DeepCopy shares the preflight: %+v", pf.Preflight)
	}

	p := &Progress{Phase: PhaseSavepoint, JobID: "j", Savepoint: savepoint.Status{State: savepoint.InFlight}, Started: time.Unix(1, 0)}
	c := p.DeepCopy()
	if !reflect.DeepEqual(p, c) || c == p {
		t.Errorf("DeepCopy = %+v", c)
	}
	c.Savepoint.State = savepoint.Failed
	if p.Savepoint.State != savepoint.InFlight {
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
		Phase: PhaseDone, JobID: "0123456789abcdef0123456789abcdef", Strategy: StopWithSavepoint,
		Savepoint: savepoint.Status{State: savepoint.Succeeded, Location: "file:/sp"}, Location: "file:/sp",
		JarID: "x.jar", Requests: 1, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
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
	if err != nil || res.Outcome != OutcomeSucceeded || p.Location == "" {
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

// TestRunReportsSavepointProgress checks that Run reports the
// acknowledgement of a savepoint in flight from the checkpoint statistics.
func TestRunReportsSavepointProgress(t *testing.T) {
	e := newEnv(t, flinktest.WithSavepointDuration(20*time.Second))
	var p Progress
	var seen []savepoint.Progress
	op := &TakeSavepoint{Env: Env{Client: e.c, Timing: Timing{Poll: time.Second}, Clock: e.srv.Clock()}, Job: e.job}
	res, err := Run(context.Background(), op, &p, func(r Report) {
		if r.HasSavepoint {
			if r.Progress.Phase != PhaseSavepoint {
				t.Errorf("savepoint progress in phase %s", r.Progress.Phase)
			}
			seen = append(seen, r.Savepoint)
		}
	})
	if err != nil || res.Outcome != OutcomeSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(seen) < 2 {
		t.Fatalf("savepoint progress reported %d times: %+v", len(seen), seen)
	}
	for i, sp := range seen {
		if sp.Total == 0 || sp.Acknowledged > sp.Total || i > 0 && sp.Acknowledged < seen[i-1].Acknowledged {
			t.Errorf("progress %d: %+v (all: %+v)", i, sp, seen)
		}
	}
	if last := seen[len(seen)-1]; last.Bytes <= seen[0].Bytes {
		t.Errorf("the acknowledged bytes did not grow: %+v", seen)
	}
	// Without a callback Run reads no statistics.
	e.srv.ClearRequests()
	p = Progress{}
	if _, err := Run(context.Background(), op, &p, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.srv.Requests() {
		if strings.HasSuffix(r.Path, "/checkpoints") {
			t.Errorf("Run without a callback read %s", r.Path)
		}
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
