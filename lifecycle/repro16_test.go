package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
	"github.com/flinkkit/flinkkit/policy"
)

func TestRepro1(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mk := func() *Teardown {
		return &Teardown{Client: e.c, Job: e.job, Clock: e.srv.Clock(), Store: &MemoryStore{}, Name: "a/b"}
	}
	var p Progress
	if _, err := mk().Step(ctx, &p); err != nil {
		t.Fatal(err)
	}
	stored := p
	if _, err := mk().Step(ctx, &p); err != nil { // sends the stop; the answer is lost
		t.Fatal(err)
	}
	e.srv.Clock().Advance(6 * time.Minute)
	p = stored
	for i := 0; i < 100 && !p.Done(); i++ {
		res, err := mk().Step(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		e.srv.Clock().Advance(res.RequeueAfter)
	}
	t.Logf("%s: %s loc=%q recorded=%v", p.Outcome, p.Reason, p.Location, p.Recorded)
	for _, r := range e.srv.Requests() {
		t.Logf("%s %d", r.Route, r.Status)
	}
}

func TestRepro2(t *testing.T) {
	for _, f := range []flinktest.Fault{{Kind: flinktest.FaultStatus, Status: 404, Times: 1, Route: "PATCH /jobs/:jobid"}, {Kind: flinktest.FaultLatency, Delay: 1500 * time.Millisecond, Times: 1, Route: "PATCH /jobs/:jobid"}} {
		e := newEnv(t)
		ctx := context.Background()
		old := flinkapi.JobID("00000000000000000000000000000abc")
		if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
			FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
			t.Fatal(err)
		}
		e.srv.Clock().Advance(5 * time.Second)
		e.inject(t, f)
		mk := func() Stepper {
			return &Upgrade{Client: e.c, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Clock: e.srv.Clock(),
				Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
		}
		p, res := drive(t, e, mk, false)
		t.Logf("%s: %s restore=%q", res.Outcome, p.Reason, p.RestoreFrom)
	}
}

func TestRepro5(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	old := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	if err := e.srv.FailJob(old, "java.lang.RuntimeException: boom"); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(time.Minute)
	p, res := drive(t, e, func() Stepper { return &Teardown{Client: e.c, Job: old, Clock: e.srv.Clock()} }, false)
	t.Logf("%s: %s loc=%q", res.Outcome, p.Reason, p.Location)
}

func TestRepro2Trace(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	old := flinkapi.JobID("00000000000000000000000000000abc")
	if _, err := e.c.RunJar(ctx, e.jar, flinkapi.RunJarRequest{JobID: old, ProgramArgs: newArgs(),
		FlinkConfiguration: map[string]string{"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}}); err != nil {
		t.Fatal(err)
	}
	e.srv.Clock().Advance(5 * time.Second)
	e.srv.ClearRequests()
	e.inject(t, flinktest.Fault{Kind: flinktest.FaultStatus, Status: 404, Times: 1, Route: "PATCH /jobs/:jobid"})
	mk := func() Stepper {
		return &Upgrade{Client: e.c, Job: old, Policy: policy.UpdatePolicy{Mode: policy.UpgradeLastState}, JarID: e.jar, Clock: e.srv.Clock(),
			Run: flinkapi.RunJarRequest{ProgramArgs: newArgs()}}
	}
	p, res := driveChecking(t, e, mk, false, func(p Progress) {
		t.Logf("%v phase=%s restore=%q obs=%q dec=%s err=%s", e.srv.Clock().Now().Format("05.000"), p.Phase, p.RestoreFrom, p.Observed.Checkpoint, p.Decision, p.LastError)
	})
	t.Logf("%s: %s restore=%q", res.Outcome, p.Reason, p.RestoreFrom)
	for _, r := range e.srv.Requests() {
		t.Logf("%s %s %d", r.Time.Format("05.000"), r.Route, r.Status)
	}
	for _, s := range e.srv.Snapshots() {
		t.Logf("%+v", s)
	}
}
