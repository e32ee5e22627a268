package contract

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// planIDs returns the source's and the counter's vertex ids of a plan of
// the test job: the node without inputs and the node reading from it.
func planIDs(t *testing.T, what string, p *flinkapi.Plan) (source, counter string) {
	t.Helper()
	if p == nil || len(p.Nodes) != 2 {
		t.Fatalf("%s: %+v; want two nodes", what, p)
	}
	for _, n := range p.Nodes {
		if len(n.Inputs) == 0 {
			source = n.ID
		}
	}
	for _, n := range p.Nodes {
		if n.ID != source {
			counter = n.ID
			if !slices.Equal(n.Inputs, []string{source}) {
				t.Errorf("%s: the counter %s reads from %v, want [%s]", what, n.ID, n.Inputs, source)
			}
		}
	}
	if source == "" || counter == "" {
		t.Fatalf("%s: no source and counter in %+v", what, p.Nodes)
	}
	return source, counter
}

// jobPlanDetails: the main job's plan has its id, name and type, and the
// ids, parallelism and names of the vertices of the job's details; the
// counter reads from the source by key. An unknown job answers 404, for
// which IsJobNotFound is true.
func (s *suite) jobPlanDetails(t *testing.T) {
	s.needMain(t)
	ctx := s.ctx(t)
	p, err := s.c.JobPlanDetails(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	if p.JobID != s.main.id || p.Name != mainSpec.name || p.Type != "STREAMING" {
		t.Errorf("plan of job %s %q %s, want %s %q STREAMING", p.JobID, p.Name, p.Type, s.main.id, mainSpec.name)
	}
	d, err := s.c.Job(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	src, cnt := planIDs(t, "JobPlanDetails", p)
	for _, v := range d.Vertices {
		n, ok := p.Node(v.ID)
		if !ok {
			t.Errorf("vertex %s (%s) of the job's details is not in its plan", v.ID, v.Name)
			continue
		}
		if n.Parallelism != v.Parallelism || n.Name() != v.Name {
			t.Errorf("plan node %s: parallelism %d, name %q; the details say %d, %q", v.ID, n.Parallelism, n.Name(), v.Parallelism, v.Name)
		}
		if v.MaxParallelism != 128 {
			t.Errorf("vertex %s: max parallelism %d, want Flink's default 128 for parallelism 1", v.Name, v.MaxParallelism)
		}
	}
	if n, _ := p.Node(cnt); len(n.InputEdges) != 1 || n.InputEdges[0].ShipStrategy != "HASH" {
		t.Errorf("the counter's inputs %+v, want one by HASH from %s", n.InputEdges, src)
	}

	_, err = s.c.JobPlanDetails(ctx, flinkapi.NewJobID())
	if !flinkapi.IsJobNotFound(err) || !errors.Is(err, flinkapi.ErrNotFound) {
		t.Errorf("JobPlanDetails of an unknown job: %v, want a 404 for which IsJobNotFound is true", err)
	}
}

// jarPlan: the plan of the main job's jar and arguments has the main job's
// vertex ids (they derive from the operators' uids) and parallelism, the
// job id the request gave, and the job's name. --uid-suffix changes the
// counter's vertex id and no other; --max-parallelism changes no id and
// shows nowhere in the plan. Without --parallelism the request's
// parallelism applies.
func (s *suite) jarPlan(t *testing.T) {
	s.needJar(t)
	s.needMain(t)
	ctx := s.ctx(t)
	mainPlan, err := s.c.JobPlanDetails(ctx, s.main.id)
	if err != nil {
		t.Fatal(err)
	}
	mainSrc, mainCnt := planIDs(t, "JobPlanDetails", mainPlan)

	id := flinkapi.NewJobID()
	req := flinkapi.JarPlanRequest{EntryClass: s.tg.EntryClass, ProgramArgs: mainSpec.args(s.tg.OutDir("contract-plan")), JobID: id}
	p, err := s.c.JarPlan(ctx, s.jar, req)
	if err != nil {
		t.Fatal(err)
	}
	if p.JobID != id || p.Name != mainSpec.name || p.Type != "STREAMING" {
		t.Errorf("jar plan of job %s %q %s, want %s %q STREAMING", p.JobID, p.Name, p.Type, id, mainSpec.name)
	}
	src, cnt := planIDs(t, "JarPlan", p)
	if src != mainSrc || cnt != mainCnt {
		t.Errorf("jar plan vertices %s, %s; the running job's %s, %s", src, cnt, mainSrc, mainCnt)
	}
	for _, n := range p.Nodes {
		if n.Parallelism != 1 {
			t.Errorf("jar plan node %s (%s): parallelism %d, want 1 (--parallelism 1)", n.ID, n.Name(), n.Parallelism)
		}
	}
	// The plan is the same for a run request's plan part.
	run := flinkapi.RunJarRequest{EntryClass: s.tg.EntryClass, ProgramArgs: req.ProgramArgs, JobID: id, SavepointPath: "/nowhere", AllowNonRestoredState: true}
	if again, err := s.c.JarPlan(ctx, s.jar, run.PlanRequest()); err != nil || len(again.Nodes) != 2 {
		t.Errorf("JarPlan of RunJarRequest.PlanRequest: %+v, %v", again, err)
	}

	renamed := mainSpec
	renamed.uidSuffix = "-renamed"
	p, err = s.c.JarPlan(ctx, s.jar, flinkapi.JarPlanRequest{ProgramArgs: renamed.args(s.tg.OutDir("contract-plan"))})
	if err != nil {
		t.Fatal(err)
	}
	if src, cnt := planIDs(t, "JarPlan --uid-suffix", p); src != mainSrc || cnt == mainCnt {
		t.Errorf("with --uid-suffix: vertices %s, %s; want the source %s and a counter other than %s", src, cnt, mainSrc, mainCnt)
	}

	capped := mainSpec
	capped.maxParallelism = 64
	p, err = s.c.JarPlan(ctx, s.jar, flinkapi.JarPlanRequest{ProgramArgs: capped.args(s.tg.OutDir("contract-plan"))})
	if err != nil {
		t.Fatal(err)
	}
	if src, cnt := planIDs(t, "JarPlan --max-parallelism", p); src != mainSrc || cnt != mainCnt {
		t.Errorf("with --max-parallelism: vertices %s, %s; want the main job's %s, %s", src, cnt, mainSrc, mainCnt)
	}

	args := []string{"--out", s.tg.OutDir("contract-plan"), "--name", "contract-plan"}
	p, err = s.c.JarPlan(ctx, s.jar, flinkapi.JarPlanRequest{ProgramArgs: args, Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range p.Nodes {
		if n.Parallelism != 3 {
			t.Errorf("jar plan with the request's parallelism 3: node %s (%s) has %d", n.ID, n.Name(), n.Parallelism)
		}
	}
	p, err = s.c.JarPlan(ctx, s.jar, flinkapi.JarPlanRequest{ProgramArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range p.Nodes {
		t.Logf("jar plan without any parallelism: node %s (%s) has parallelism %d", n.ID, n.Name(), n.Parallelism)
	}
}

// jarPlanErrors: the plan of a jar the cluster does not have is an error
// for which IsJarNotFound is true; of a program that throws while it
// builds its job (an unknown argument, a missing --out) one for which
// IsProgramError is true, whose root cause is the program's message.
func (s *suite) jarPlanErrors(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	missing := flinkapi.JarID("00000000-0000-0000-0000-000000000000_missing.jar")
	_, err := s.c.JarPlan(ctx, missing, flinkapi.JarPlanRequest{ProgramArgs: mainSpec.args(s.tg.OutDir("contract-plan"))})
	ae := apiError(t, "JarPlan of a missing jar", err)
	t.Logf("JarPlan of a missing jar: %d %q", ae.StatusCode, ae.Errors)
	if !flinkapi.IsJarNotFound(err) || flinkapi.IsProgramError(err) {
		t.Errorf("JarPlan of a missing jar: IsJarNotFound %v, IsProgramError %v; want true, false: %v",
			flinkapi.IsJarNotFound(err), flinkapi.IsProgramError(err), err)
	}

	for _, tc := range []struct {
		args []string
		root string
	}{
		{append(mainSpec.args(s.tg.OutDir("contract-plan")), "--bogus", "1"), "unknown argument: --bogus"},
		{[]string{"--keys", "2"}, "--out DIR is required"},
	} {
		_, err := s.c.JarPlan(ctx, s.jar, flinkapi.JarPlanRequest{EntryClass: s.tg.EntryClass, ProgramArgs: tc.args})
		ae := apiError(t, "JarPlan of a failing program", err)
		root := flinkapi.RootCause(ae.StackTrace)
		t.Logf("JarPlan %v: %d %q, caused by %q", tc.args, ae.StatusCode, ae.Message(), root)
		if !flinkapi.IsProgramError(err) || flinkapi.IsJarNotFound(err) {
			t.Errorf("JarPlan %v: IsProgramError %v, IsJarNotFound %v; want true, false: %v",
				tc.args, flinkapi.IsProgramError(err), flinkapi.IsJarNotFound(err), err)
		}
		if !strings.Contains(root, tc.root) {
			t.Errorf("JarPlan %v: root cause %q, want it to say %q", tc.args, root, tc.root)
		}
	}
}

// jarPlanOfRunningJob: a job started with --uid-suffix and
// --max-parallelism runs with the vertex ids of its jar plan, and its
// details show the counter's maximum parallelism, which no plan shows.
func (s *suite) jarPlanOfRunningJob(t *testing.T) {
	s.needJar(t)
	ctx := s.ctx(t)
	spec := jobSpec{name: "contract-plan-run", keys: 1, rate: 10, uidSuffix: "-v2", maxParallelism: 64}
	p, err := s.c.JarPlan(ctx, s.jar, flinkapi.JarPlanRequest{EntryClass: s.tg.EntryClass, ProgramArgs: spec.args(s.tg.OutDir("contract-plan"))})
	if err != nil {
		t.Fatal(err)
	}
	src, cnt := planIDs(t, "JarPlan", p)
	j := s.submit(t, t, ctx, s.c, s.jar, spec)
	d := s.waitRunning(t, ctx, s.c, j.id)
	got := map[string]int{}
	for _, v := range d.Vertices {
		got[v.ID] = v.MaxParallelism
	}
	if len(got) != 2 || got[src] != 128 || got[cnt] != 64 {
		t.Errorf("max parallelism by vertex %v, want %s: 128 (the source, Flink's default) and %s: 64 (the counter)", got, src, cnt)
	}
	running, err := s.c.JobPlanDetails(ctx, j.id)
	if err != nil {
		t.Fatal(err)
	}
	if rs, rc := planIDs(t, "JobPlanDetails", running); rs != src || rc != cnt {
		t.Errorf("the running job's vertices %s, %s; its jar plan's %s, %s", rs, rc, src, cnt)
	}
	if err := s.c.CancelJob(ctx, j.id); err != nil {
		t.Errorf("cancel: %v", err)
	}
	s.waitState(t, ctx, s.c, j.id, flinkapi.JobCanceled)
}
