package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// TestDecodeSpecRestartDefault: a spec without restart.mode is read to
// restart from the newest state; "mode: Never" is kept.
func TestDecodeSpecRestartDefault(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want policy.RestartMode
	}{
		{"job: {jarFile: /j.jar}\n", policy.RestartFromLatestState},
		{"job: {jarFile: /j.jar}\nrestart: {maxRestarts: 5}\n", policy.RestartFromLatestState},
		{"job: {jarFile: /j.jar}\nrestart: {mode: Never}\n", policy.RestartNever},
	} {
		spec, err := DecodeSpec("a.yaml", []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if spec.Restart.Mode != tc.want {
			t.Errorf("%q: restart mode %q, want %q", tc.in, spec.Restart.Mode, tc.want)
		}
	}
}

// TestRunnerRestartsByDefault: on the fake, the job of a decoded spec
// that is cancelled from outside the runner (as from the Flink UI) is
// started again by the Runner from its newest state; one whose spec says
// "restart: {mode: Never}" stays cancelled.
func TestRunnerRestartsByDefault(t *testing.T) {
	f := newFakeFleet(t, "main")
	ctx := context.Background()
	var desired []Deployment
	for _, tc := range []struct{ name, restart string }{{"auto", ""}, {"never", "restart: {mode: Never}\n"}} {
		spec, err := DecodeSpec(tc.name+".yaml", fmt.Appendf(nil, "job:\n  jarID: %s\n  args: [--out, /out/%s]\n  flinkConfiguration:\n    execution.checkpointing.interval: 10s\n    execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION\n%s",
			f.jars["main"], tc.name, tc.restart))
		if err != nil {
			t.Fatal(err)
		}
		desired = append(desired, Deployment{Name: tc.name, Cluster: "main", Spec: spec})
	}
	r := f.runner()
	if _, err := r.Sync(ctx, desired); err != nil {
		t.Fatal(err)
	}
	f.drive(r, "both running", 200, func(res []Result) bool { return allDone(res) && len(res) == 2 })
	f.clock.Advance(time.Minute) // checkpoints to restart from
	f.drive(r, "a pass", 5, func([]Result) bool { return true })
	first := map[string]flinkapi.JobID{}
	ui, err := flinkapi.NewClient(f.servers["main"].URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"auto", "never"} {
		rec, _, err := f.store.Load(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		first[name] = rec.Status.JobID
		if err := ui.CancelJob(ctx, rec.Status.JobID); err != nil {
			t.Fatal(err)
		}
	}
	f.drive(r, "auto restarted", 200, func([]Result) bool {
		rec, _, _ := f.store.Load(ctx, "auto")
		return rec.Status.JobID != first["auto"] && rec.Status.Verdict == lifecycle.VerdictDone
	})
	auto, _, _ := f.store.Load(ctx, "auto")
	if auto.Status.Restarts == 0 || auto.Status.Action != lifecycle.ActionRestart || auto.Status.Progress.Replace.RestoreFrom == "" {
		t.Errorf("auto: restarts %d, last action %s from %q; want a restart from its newest state", auto.Status.Restarts, auto.Status.Action, auto.Status.Progress.Replace.RestoreFrom)
	}
	never, _, _ := f.store.Load(ctx, "never")
	if never.Status.JobID != first["never"] || never.Status.Restarts != 0 || never.Status.Situation != lifecycle.SituationCancelled {
		t.Errorf("never: job %s (was %s), restarts %d, situation %s; want it left cancelled", never.Status.JobID, first["never"], never.Status.Restarts, never.Status.Situation)
	}
}

// TestDirStoreSegmentedNames: a name of segments (app/streamlet) is kept
// in a file whose name has '~' for '/', and listed under its name.
func TestDirStoreSegmentedNames(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Save(ctx, record("sensors/ingest", 1)); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(s.dir, "sensors~ingest.json"))
	if len(m) != 1 {
		t.Errorf("no file sensors~ingest.json in %s", s.dir)
	}
	recs, err := s.List(ctx)
	if err != nil || len(recs) != 1 || recs[0].Name != "sensors/ingest" {
		t.Fatalf("List: %v %v; want sensors/ingest", recs, err)
	}
	if _, ok, err := s.Load(ctx, "sensors/ingest"); !ok || err != nil {
		t.Errorf("Load: %v %v", ok, err)
	}
	if err := s.Delete(ctx, "sensors/ingest"); err != nil {
		t.Fatal(err)
	}
	if recs, _ := s.List(ctx); len(recs) != 0 {
		t.Errorf("List after Delete: %v", recs)
	}
}
