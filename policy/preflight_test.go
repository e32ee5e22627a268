package policy

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/google/go-cmp/cmp"
)

const goldenPreflight = "testdata/preflight_verdicts.golden"

// Vertex ids of the test job (internal/testkit/testjob): Flink's ids for the uids
// flinkkit-key-source and flinkkit-counter.
const (
	pfSource  = "b93d204074064b03a853367828fb3dfe"
	pfCounter = "0e3160945c69999b81da5f032a648b30"
	pfRenamed = "4f1a3c1de2d4c6b0a9e1c1f0e7c2b5a8"
	pfExtra   = "9c2e1b1f0d3e4a5b6c7d8e9fa0b1c2d3"
)

func vtx(id, name string, p, maxP int) PlanVertex {
	return PlanVertex{ID: id, Name: name, Parallelism: p, MaxParallelism: maxP}
}

// pfOld is the running test job: parallelism 2, Flink's default maximum
// parallelism 128, as its details show it.
var pfOld = JobPlan{Vertices: []PlanVertex{
	vtx(pfSource, "Source: key-source", 2, 128),
	vtx(pfCounter, "counter -> discard: Writer", 2, 128),
}}

// pfNew returns a jar plan of the test job: no maximum parallelism shown.
func pfNew(p int, vs ...PlanVertex) JobPlan {
	if vs == nil {
		vs = []PlanVertex{vtx(pfSource, "Source: key-source", p, 0), vtx(pfCounter, "counter -> discard: Writer", p, 0)}
	}
	return JobPlan{Vertices: vs}
}

type preflightCase struct {
	name     string
	old, new JobPlan
	opts     PreflightOptions
}

func preflightCases() []preflightCase {
	slots := func(n int) PreflightOptions { return PreflightOptions{CheckSlots: true, AvailableSlots: n} }
	renamed := pfNew(2, vtx(pfSource, "Source: key-source", 2, 0), vtx(pfRenamed, "counter -> discard: Writer", 2, 0))
	grouped := pfNew(0, PlanVertex{ID: pfSource, Name: "Source: key-source", Parallelism: 4},
		PlanVertex{ID: pfCounter, Name: "counter -> discard: Writer", Parallelism: 3, SlotSharingGroup: "counting"})
	return []preflightCase{
		{"same plan", pfOld, pfNew(2), slots(4)},
		{"same plan, max parallelism known on both sides", pfOld, pfNew(2, vtx(pfSource, "Source: key-source", 2, 128), vtx(pfCounter, "counter -> discard: Writer", 2, 128)), slots(4)},
		{"vertex added", pfOld, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0), vtx(pfCounter, "counter -> discard: Writer", 2, 0), vtx(pfExtra, "audit", 2, 0)), PreflightOptions{}},
		{"vertex removed", pfOld, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0)), PreflightOptions{}},
		{"vertex removed, allowNonRestoredState", pfOld, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0)), PreflightOptions{AllowNonRestoredState: true}},
		{"uid changed (renamed vertex)", pfOld, renamed, PreflightOptions{}},
		{"uid changed, allowNonRestoredState", pfOld, renamed, PreflightOptions{AllowNonRestoredState: true}},
		{"max parallelism changed", pfOld, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0), vtx(pfCounter, "counter -> discard: Writer", 2, 64)), PreflightOptions{}},
		{"max parallelism unknown in the old plan", pfNew(2), pfNew(2, vtx(pfSource, "Source: key-source", 2, 128), vtx(pfCounter, "counter -> discard: Writer", 2, 128)), PreflightOptions{}},
		{"parallelism above the explicit max", pfOld, pfNew(0, vtx(pfSource, "Source: key-source", 2, 0), vtx(pfCounter, "counter -> discard: Writer", 200, 128)), PreflightOptions{}},
		{"parallelism above the max of the state", pfOld, pfNew(200), PreflightOptions{}},
		{"rescale to 8, 8 slots", pfOld, pfNew(8), slots(8)},
		{"rescale to 8, 6 slots", pfOld, pfNew(8), slots(6)},
		{"first deploy, no slots free", JobPlan{}, pfNew(2), slots(0)},
		{"slot sharing groups", pfOld, grouped, slots(6)},
		{"parallelism unknown", pfOld, pfNew(0), slots(1)},
		{"empty new plan", pfOld, JobPlan{}, PreflightOptions{}},
		{"duplicate vertex ids", pfOld, pfNew(2, vtx(pfSource, "a", 2, 0), vtx(pfSource, "b", 2, 0)), PreflightOptions{AllowNonRestoredState: true}},
		{"stateless vertex removed", pfThree, pfNew(2), PreflightOptions{OldState: pfSizes(0)}},
		{"stateful vertex removed", pfThree, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0), vtx(pfExtra, "audit", 2, 0)), PreflightOptions{OldState: pfSizes(0)}},
		{"stateful vertex removed, allowNonRestoredState", pfThree, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0)),
			PreflightOptions{OldState: pfSizes(0), AllowNonRestoredState: true}},
		{"stateless vertex removed, no snapshot", pfThree, pfNew(2), PreflightOptions{OldState: StateSizes{Unknown: StateNoSnapshot}}},
		{"stateless vertex removed, not in the snapshot", pfThree, pfNew(2), PreflightOptions{OldState: StateSizes{Known: true, CheckpointID: 9, Bytes: map[string]int64{pfSource: 265}}}},
		{"stateless vertex removed, sizes unknown, allowNonRestoredState", pfThree, pfNew(2), PreflightOptions{AllowNonRestoredState: true}},
	}
}

// pfThree is pfOld with a third, stateless vertex (an audit sink, not
// chained).
var pfThree = JobPlan{Vertices: append(slices.Clone(pfOld.Vertices), vtx(pfExtra, "audit", 2, 128))}

// pfSizes are the state sizes of pfThree's vertices in checkpoint 7: the
// audit vertex holds extra bytes.
func pfSizes(extra int64) StateSizes {
	return StateSizes{Known: true, CheckpointID: 7, Bytes: map[string]int64{pfSource: 265, pfCounter: 3898, pfExtra: extra}}
}

// preflightTable formats the verdict of every case: whether it is allowed,
// the slots needed, and each finding with its reason, vertices and message.
func preflightTable() []byte {
	var buf bytes.Buffer
	buf.WriteString(`# ComparePlans verdicts: old plan (running job) x new plan (jar plan) x options.
# Generated by TestGoldenPreflight; regenerate with: go test ./policy -run GoldenPreflight -update
# The old plan is the test job at parallelism 2 with max parallelism 128 (from its details); a
# new plan shows no max parallelism unless the case says so. "!" marks a finding that refuses.

`)
	for _, tc := range preflightCases() {
		v := ComparePlans(tc.old, tc.new, tc.opts)
		fmt.Fprintf(&buf, "## %s\nallowed=%v slots=%d", tc.name, v.Allowed(), v.SlotsNeeded)
		if tc.opts.AllowNonRestoredState {
			buf.WriteString(" allowNonRestoredState")
		}
		if tc.opts.CheckSlots {
			fmt.Fprintf(&buf, " availableSlots=%d", tc.opts.AvailableSlots)
		}
		if st := tc.opts.OldState; st.Known || st.Unknown != "" {
			fmt.Fprintf(&buf, " oldState=%v/%s/%d", st.Known, st.Unknown, st.CheckpointID)
		}
		for _, d := range v.Dropped {
			fmt.Fprintf(&buf, " dropped=%s:%d:%v", d.ID, d.Bytes, d.SizeKnown)
		}
		buf.WriteString("\n")
		for _, f := range v.Findings {
			mark := " "
			if f.Refuses {
				mark = "!"
			}
			fmt.Fprintf(&buf, "%s %s [%s] %s\n", mark, f.Reason, strings.Join(f.Vertices, " "), f.Message)
		}
		buf.WriteString("\n")
	}
	return buf.Bytes()
}

// TestGoldenPreflight compares the verdicts with
// testdata/preflight_verdicts.golden; -update rewrites the file.
func TestGoldenPreflight(t *testing.T) {
	got := preflightTable()
	if *update {
		if err := os.WriteFile(goldenPreflight, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", goldenPreflight)
		return
	}
	want, err := os.ReadFile(goldenPreflight)
	if err != nil {
		t.Fatalf("%v (run: go test ./policy -run GoldenPreflight -update)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("verdicts differ from %s (-want +got); if the change is intended, run go test ./policy -run GoldenPreflight -update:\n%s", goldenPreflight, diff)
	}
}

// TestPreflightInvariants: a verdict refuses exactly when a finding
// refuses, each reason appears once, every reason is one of the closed
// set, findings that refuse come first, and allowNonRestoredState never
// turns an allowed verdict into a refusal.
func TestPreflightInvariants(t *testing.T) {
	for _, tc := range preflightCases() {
		v := ComparePlans(tc.old, tc.new, tc.opts)
		seen := map[PreflightReason]bool{}
		refusing := true
		for _, f := range v.Findings {
			if seen[f.Reason] {
				t.Errorf("%s: reason %s twice", tc.name, f.Reason)
			}
			seen[f.Reason] = true
			if !slices.Contains(preflightOrder, f.Reason) {
				t.Errorf("%s: reason %q is not in the closed set", tc.name, f.Reason)
			}
			if f.Refuses && !refusing {
				t.Errorf("%s: a refusing finding after one that does not refuse", tc.name)
			}
			refusing = f.Refuses
			if f.Message == "" {
				t.Errorf("%s: %s without a message", tc.name, f.Reason)
			}
		}
		if v.Allowed() && v.Message() == "" && len(v.Findings) > 0 {
			t.Errorf("%s: findings but no message", tc.name)
		}
		opts := tc.opts
		opts.AllowNonRestoredState = true
		if v.Allowed() && !ComparePlans(tc.old, tc.new, opts).Allowed() {
			t.Errorf("%s: allowNonRestoredState refuses what was allowed", tc.name)
		}
	}
}

// TestNewJobPlan: the plan's vertices with the details' maximum
// parallelism, and names from the plan's descriptions.
func TestNewJobPlan(t *testing.T) {
	p := &flinkapi.Plan{Nodes: []flinkapi.PlanNode{
		{ID: pfCounter, Parallelism: 2, Description: "counter<br/>+- discard: Writer<br/>", Inputs: []string{pfSource}},
		{ID: pfSource, Parallelism: 2, Description: "Source: key-source<br/>"},
	}}
	d := &flinkapi.JobDetails{Vertices: []flinkapi.JobVertex{{ID: pfSource, MaxParallelism: 128}, {ID: pfCounter, MaxParallelism: 64}}}
	want := JobPlan{Vertices: []PlanVertex{vtx(pfCounter, "counter -> discard: Writer", 2, 64), vtx(pfSource, "Source: key-source", 2, 128)}}
	if diff := cmp.Diff(want, NewJobPlan(p, d)); diff != "" {
		t.Errorf("NewJobPlan (-want +got):\n%s", diff)
	}
	want.Vertices[0].MaxParallelism, want.Vertices[1].MaxParallelism = 0, 0
	if diff := cmp.Diff(want, NewJobPlan(p, nil)); diff != "" {
		t.Errorf("NewJobPlan without details (-want +got):\n%s", diff)
	}
	if got := NewJobPlan(nil, d); len(got.Vertices) != 0 {
		t.Errorf("NewJobPlan(nil) = %+v", got)
	}
}

// TestPreflightDeepCopy: a copied verdict shares no slice with the
// original.
func TestPreflightDeepCopy(t *testing.T) {
	v := ComparePlans(pfOld, pfNew(2, vtx(pfSource, "Source: key-source", 2, 0)), PreflightOptions{})
	c := v.DeepCopy()
	c.Findings[0].Vertices[0] = "changed"
	if v.Findings[0].Vertices[0] == "changed" {
		t.Error("DeepCopy shares the vertices of a finding")
	}
	p := pfOld.DeepCopy()
	p.Vertices[0].ID = "changed"
	if pfOld.Vertices[0].ID == "changed" {
		t.Error("DeepCopy shares the vertices of a plan")
	}
}

// TestPreflightStateOfRemovedVertices: a removed vertex without state
// may go, one with state is refused, or allowed with
// AllowNonRestoredState and listed with its size; one whose size is not
// known is refused as one with state.
func TestPreflightStateOfRemovedVertices(t *testing.T) {
	noAudit := pfNew(2)
	noCounter := pfNew(2, vtx(pfSource, "Source: key-source", 2, 0), vtx(pfExtra, "audit", 2, 0))
	for _, tc := range []struct {
		name     string
		new      JobPlan
		opts     PreflightOptions
		allowed  bool
		has      PreflightReason
		dropped  []DroppedVertex
		contains string
	}{
		{"stateless removed", noAudit, PreflightOptions{OldState: pfSizes(0)}, true, PreflightStatelessVertexRemoved,
			[]DroppedVertex{{ID: pfExtra, Name: "audit", SizeKnown: true}}, "no state in checkpoint 7"},
		{"stateful removed", noAudit, PreflightOptions{OldState: pfSizes(2048)}, false, PreflightStateNotRestored,
			[]DroppedVertex{{ID: pfExtra, Name: "audit", Bytes: 2048, SizeKnown: true}}, "2.0 KiB in checkpoint 7"},
		{"stateful removed, allowNonRestoredState", noCounter, PreflightOptions{OldState: pfSizes(0), AllowNonRestoredState: true}, true, PreflightStateNotRestored,
			[]DroppedVertex{{ID: pfCounter, Name: "counter -> discard: Writer", Bytes: 3898, SizeKnown: true}}, "3.8 KiB in checkpoint 7, is dropped"},
		{"sizes not read", noAudit, PreflightOptions{}, false, PreflightStateUnknown,
			[]DroppedVertex{{ID: pfExtra, Name: "audit"}}, "the state sizes were not read"},
		{"no snapshot", noAudit, PreflightOptions{OldState: StateSizes{Unknown: StateNoSnapshot}}, false, PreflightStateUnknown,
			[]DroppedVertex{{ID: pfExtra, Name: "audit"}}, "no completed checkpoint or savepoint"},
		{"details unavailable", noAudit, PreflightOptions{OldState: StateSizes{Unknown: StateDetailsUnavailable, CheckpointID: 7}}, false, PreflightStateUnknown,
			[]DroppedVertex{{ID: pfExtra, Name: "audit"}}, "snapshot 7 could not be read"},
		{"restore not in history, allowNonRestoredState", noAudit, PreflightOptions{OldState: StateSizes{Unknown: StateRestoreNotInHistory}, AllowNonRestoredState: true},
			true, PreflightStateUnknown, []DroppedVertex{{ID: pfExtra, Name: "audit"}}, "not in the old job's checkpoint history"},
		{"vertex not in the snapshot", noAudit, PreflightOptions{OldState: StateSizes{Known: true, CheckpointID: 7, Bytes: map[string]int64{pfSource: 1}}}, false,
			PreflightStateUnknown, []DroppedVertex{{ID: pfExtra, Name: "audit"}}, "snapshot 7 does not show the vertex"},
	} {
		v := ComparePlans(pfThree, tc.new, tc.opts)
		if v.Allowed() != tc.allowed || !v.Has(tc.has) {
			t.Errorf("%s: allowed %v, want %v, with %s: %+v", tc.name, v.Allowed(), tc.allowed, tc.has, v.Findings)
		}
		if diff := cmp.Diff(tc.dropped, v.Dropped); diff != "" {
			t.Errorf("%s: dropped (-want +got):\n%s", tc.name, diff)
		}
		var msg string
		for _, f := range v.Findings {
			if f.Reason == tc.has {
				msg = f.Message
			}
		}
		if !strings.Contains(msg, tc.contains) {
			t.Errorf("%s: %s message %q does not say %q", tc.name, tc.has, msg, tc.contains)
		}
	}
	// The chained counter, in both plans, is named in the note on what
	// REST cannot show.
	v := ComparePlans(pfThree, noAudit, PreflightOptions{OldState: pfSizes(0)})
	if !v.Has(PreflightOperatorsUnchecked) || !strings.Contains(v.Message(), "restore canary") {
		t.Errorf("no note on the chained operators: %s", v.Message())
	}
	if got := v.DroppedBytes(); got != 0 {
		t.Errorf("DroppedBytes = %d", got)
	}
	if got := ComparePlans(pfThree, noCounter, PreflightOptions{OldState: pfSizes(0), AllowNonRestoredState: true}).DroppedBytes(); got != 3898 {
		t.Errorf("DroppedBytes = %d, want 3898", got)
	}
}
