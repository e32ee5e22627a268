package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// PlanVertex is one vertex (operator chain) of a job's plan, as
// ComparePlans compares it.
type PlanVertex struct {
	// ID is the job vertex id. Flink derives it from the uid (or the
	// generated hash) of the chain's first operator, and maps a snapshot's
	// state to the operators of a new job by these ids: a vertex whose id
	// changed starts without its state.
	ID string `json:"id"`
	// Name names the vertex in messages ("counter -> discard: Writer").
	Name string `json:"name,omitempty"`
	// Parallelism is the vertex's parallelism; 0 (or less) when not known.
	Parallelism int `json:"parallelism"`
	// MaxParallelism is the vertex's maximum parallelism, the number of
	// key groups of its keyed state; 0 when not known. No Flink plan
	// shows it: for a running job it is in the job's details
	// (flinkapi.JobVertex.MaxParallelism); for a new job, set it only
	// where the job sets it explicitly, since a vertex without one takes
	// the maximum parallelism of the state it restores.
	MaxParallelism int `json:"maxParallelism,omitempty"`
	// SlotSharingGroup is the vertex's slot sharing group; empty for the
	// default group, which a plan of Flink shows for every vertex.
	SlotSharingGroup string `json:"slotSharingGroup,omitempty"`
}

// JobPlan is a job's plan as ComparePlans compares it: the plan of the
// running job (old) or the plan the new jar gives (new).
type JobPlan struct {
	Vertices []PlanVertex `json:"vertices"`
}

// NewJobPlan builds a JobPlan from a plan of Flink and, for a running
// job, its details (nil for a jar plan), which give each vertex's maximum
// parallelism. The plan's parallelism wins over the details'.
func NewJobPlan(p *flinkapi.Plan, details *flinkapi.JobDetails) JobPlan {
	var out JobPlan
	if p == nil {
		return out
	}
	for _, n := range p.Nodes {
		v := PlanVertex{ID: n.ID, Name: n.Name(), Parallelism: n.Parallelism}
		if details != nil {
			for _, jv := range details.Vertices {
				if jv.ID == n.ID {
					v.MaxParallelism = max(jv.MaxParallelism, 0)
					if v.Name == "" {
						v.Name = jv.Name
					}
				}
			}
		}
		out.Vertices = append(out.Vertices, v)
	}
	return out
}

// SlotsNeeded returns the task slots the job needs under Flink's default
// scheduler: per slot sharing group the largest parallelism of its
// vertices, summed over the groups (with the default group only, the
// largest parallelism of any vertex). A vertex of unknown parallelism
// counts as 1.
func SlotsNeeded(p JobPlan) int {
	groups := map[string]int{}
	for _, v := range p.Vertices {
		groups[v.SlotSharingGroup] = max(groups[v.SlotSharingGroup], v.Parallelism, 1)
	}
	n := 0
	for _, g := range groups {
		n += g
	}
	return n
}

// PreflightOptions are what ComparePlans needs beyond the two plans.
type PreflightOptions struct {
	// AllowNonRestoredState lets the new job start although vertices of
	// the old one, and so their state, are not in it (the jar run's
	// allowNonRestoredState).
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`
	// CheckSlots compares SlotsNeeded of the new plan with
	// AvailableSlots; on an application cluster, which starts its own
	// TaskManagers for the job, leave it off.
	CheckSlots bool `json:"checkSlots,omitempty"`
	// AvailableSlots are the slots the new job can have when it starts:
	// the session cluster's free slots (/overview slots-available), plus
	// SlotsNeeded of the old plan when the old job stops first (an
	// upgrade in place), without them when both run side by side
	// (blue/green).
	AvailableSlots int `json:"availableSlots,omitempty"`
}

// PreflightReason says why ComparePlans reported a finding. The set is
// closed: the constants below are all there are.
type PreflightReason string

// Reasons of preflight findings, in the order ComparePlans reports them.
const (
	// PreflightInvalidPlan (refuses): the new plan has no vertices, or a
	// plan names a vertex id twice.
	PreflightInvalidPlan PreflightReason = "InvalidPlan"
	// PreflightStateNotRestored: vertices of the old job are not in the
	// new plan, so their state would not be restored; refuses unless
	// AllowNonRestoredState. A vertex whose uid changed shows this way
	// (its id changed); the message says when a new vertex has its name.
	PreflightStateNotRestored PreflightReason = "StateNotRestored"
	// PreflightMaxParallelismChanged (refuses): a vertex in both plans
	// has another maximum parallelism in the new one; its keyed state
	// cannot be restored.
	PreflightMaxParallelismChanged PreflightReason = "MaxParallelismChanged"
	// PreflightParallelismAboveMax (refuses): a vertex of the new plan
	// has a parallelism above its maximum parallelism (its own, else the
	// old vertex's, which it takes over with the state).
	PreflightParallelismAboveMax PreflightReason = "ParallelismAboveMax"
	// PreflightNotEnoughSlots (refuses): the new job needs more slots than
	// AvailableSlots.
	PreflightNotEnoughSlots PreflightReason = "NotEnoughSlots"
	// PreflightMaxParallelismUnknown (does not refuse): a plan does not
	// show the maximum parallelism of vertices in both plans, so a change
	// of it cannot be checked for them.
	PreflightMaxParallelismUnknown PreflightReason = "MaxParallelismUnknown"
	// PreflightParallelismUnknown (does not refuse): vertices of the new
	// plan have no parallelism, so neither their maximum nor the slots
	// can be checked exactly.
	PreflightParallelismUnknown PreflightReason = "ParallelismUnknown"
	// PreflightVertexAdded (does not refuse): vertices of the new plan
	// are not in the old one and start without state.
	PreflightVertexAdded PreflightReason = "VertexAdded"
)

// preflightOrder ranks the reasons for sorting.
var preflightOrder = []PreflightReason{
	PreflightInvalidPlan, PreflightStateNotRestored, PreflightMaxParallelismChanged, PreflightParallelismAboveMax,
	PreflightNotEnoughSlots, PreflightMaxParallelismUnknown, PreflightParallelismUnknown, PreflightVertexAdded,
}

// PreflightFinding is one thing ComparePlans found.
type PreflightFinding struct {
	Reason PreflightReason `json:"reason"`
	// Refuses reports whether the finding stops the change.
	Refuses bool `json:"refuses"`
	// Vertices are the ids of the vertices it is about, if any.
	Vertices []string `json:"vertices,omitempty"`
	// Message says what was found, naming the vertices and the numbers.
	Message string `json:"message"`
}

// PreflightVerdict is the result of ComparePlans.
type PreflightVerdict struct {
	// Findings, those that refuse first, each reason once.
	Findings []PreflightFinding `json:"findings,omitempty"`
	// SlotsNeeded is SlotsNeeded of the new plan.
	SlotsNeeded int `json:"slotsNeeded"`
}

// Allowed reports whether no finding refuses the change.
func (v PreflightVerdict) Allowed() bool {
	for _, f := range v.Findings {
		if f.Refuses {
			return false
		}
	}
	return true
}

// Has reports whether a finding has the reason.
func (v PreflightVerdict) Has(r PreflightReason) bool {
	return slices.ContainsFunc(v.Findings, func(f PreflightFinding) bool { return f.Reason == r })
}

// Message joins the messages of the findings that refuse, or of all
// findings when none refuses, with "; ".
func (v PreflightVerdict) Message() string {
	var parts []string
	allowed := v.Allowed()
	for _, f := range v.Findings {
		if f.Refuses || allowed {
			parts = append(parts, f.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// ComparePlans checks, before the old job stops, whether the job of the
// new plan can start from the old job's state and be scheduled: vertices
// of the old job that the new plan lacks (their state would not be
// restored), changed maximum parallelism, parallelism above the maximum,
// and, with opts.CheckSlots, the slots the new job needs. It is pure; the
// plans come from flinkapi.Client.JobPlanDetails and Job (old) and
// JarPlan (new), see NewJobPlan.
func ComparePlans(old, new JobPlan, opts PreflightOptions) PreflightVerdict {
	verdict := PreflightVerdict{SlotsNeeded: SlotsNeeded(new)}
	add := func(r PreflightReason, refuses bool, ids []string, format string, args ...any) {
		verdict.Findings = append(verdict.Findings, PreflightFinding{Reason: r, Refuses: refuses, Vertices: ids, Message: fmt.Sprintf(format, args...)})
	}

	if dup := duplicateIDs(old); len(dup) > 0 {
		add(PreflightInvalidPlan, true, dup, "the old plan names vertex %s more than once", strings.Join(dup, ", "))
	}
	if dup := duplicateIDs(new); len(dup) > 0 {
		add(PreflightInvalidPlan, true, dup, "the new plan names vertex %s more than once", strings.Join(dup, ", "))
	}
	if len(new.Vertices) == 0 {
		add(PreflightInvalidPlan, true, nil, "the new plan has no vertices")
		sortFindings(verdict.Findings)
		return verdict
	}
	newByID := byID(new)
	oldByID := byID(old)

	// State of the old job's vertices that the new plan lacks.
	var gone []PlanVertex
	for _, v := range old.Vertices {
		if _, ok := newByID[v.ID]; !ok {
			gone = append(gone, v)
		}
	}
	var added []PlanVertex
	for _, v := range new.Vertices {
		if _, ok := oldByID[v.ID]; !ok {
			added = append(added, v)
		}
	}
	if len(gone) > 0 {
		var descs []string
		for _, v := range gone {
			d := vertexName(v)
			if i := slices.IndexFunc(added, func(a PlanVertex) bool { return a.Name != "" && a.Name == v.Name }); i >= 0 {
				d += fmt.Sprintf(" (the new plan has %s under the id %s: was the uid of its first operator changed?)", quote(v.Name), added[i].ID)
			}
			descs = append(descs, d)
		}
		what := "vertex"
		if len(gone) > 1 {
			what = "vertices"
		}
		if opts.AllowNonRestoredState {
			add(PreflightStateNotRestored, false, ids(gone), "the state of %d %s of the old job is dropped (allowNonRestoredState): %s",
				len(gone), what, strings.Join(descs, ", "))
		} else {
			add(PreflightStateNotRestored, true, ids(gone), "%d %s of the old job %s not in the new plan, so %s state would not be restored: %s; "+
				"keep the operators' uids, or allow non-restored state", len(gone), what, plural(len(gone), "is", "are"), plural(len(gone), "its", "their"), strings.Join(descs, ", "))
		}
	}

	// Maximum parallelism of the vertices in both plans.
	var changed, unknown, above, noParallelism []string
	var changedDescs, aboveDescs []string
	seen := map[string]bool{}
	for _, nv := range new.Vertices {
		if seen[nv.ID] {
			continue
		}
		seen[nv.ID] = true
		if nv.Parallelism < 1 {
			noParallelism = append(noParallelism, nv.ID)
		}
		ov, inOld := oldByID[nv.ID]
		limit, from := nv.MaxParallelism, "its maximum parallelism"
		if inOld {
			switch {
			case ov.MaxParallelism > 0 && nv.MaxParallelism > 0 && ov.MaxParallelism != nv.MaxParallelism:
				changed = append(changed, nv.ID)
				changedDescs = append(changedDescs, fmt.Sprintf("%s from %d to %d", vertexName(nv), ov.MaxParallelism, nv.MaxParallelism))
			case ov.MaxParallelism <= 0 || nv.MaxParallelism <= 0:
				unknown = append(unknown, nv.ID)
			}
			if limit <= 0 && ov.MaxParallelism > 0 {
				limit, from = ov.MaxParallelism, "the maximum parallelism of its state"
			}
		}
		if limit > 0 && nv.Parallelism > limit {
			above = append(above, nv.ID)
			aboveDescs = append(aboveDescs, fmt.Sprintf("%s has parallelism %d, above %s, %d", vertexName(nv), nv.Parallelism, from, limit))
		}
	}
	if len(changed) > 0 {
		add(PreflightMaxParallelismChanged, true, changed, "the maximum parallelism changed for %s: Flink restores no state into a vertex whose maximum parallelism is set and differs from the state's",
			strings.Join(changedDescs, ", "))
	}
	if len(above) > 0 {
		add(PreflightParallelismAboveMax, true, above, "%s", strings.Join(aboveDescs, "; "))
	}
	if opts.CheckSlots && verdict.SlotsNeeded > opts.AvailableSlots {
		add(PreflightNotEnoughSlots, true, nil, "the new job needs %d task slots (%s) and %d are available",
			verdict.SlotsNeeded, slotsDetail(new), max(opts.AvailableSlots, 0))
	}
	if len(unknown) > 0 {
		var descs []string
		for _, id := range unknown {
			descs = append(descs, vertexName(newByID[id]))
		}
		add(PreflightMaxParallelismUnknown, false, unknown, "whether the maximum parallelism changed cannot be checked for %s: %s",
			strings.Join(descs, ", "), unknownMaxSide(old, new, unknown))
	}
	if len(noParallelism) > 0 {
		add(PreflightParallelismUnknown, false, noParallelism, "the new plan shows no parallelism for %d %s (%s); each is counted as 1 slot and not checked against its maximum",
			len(noParallelism), plural(len(noParallelism), "vertex", "vertices"), strings.Join(noParallelism, ", "))
	}
	if len(added) > 0 {
		var descs []string
		for _, v := range added {
			descs = append(descs, vertexName(v))
		}
		add(PreflightVertexAdded, false, ids(added), "%d %s of the new plan %s not in the old job and start%s without state: %s",
			len(added), plural(len(added), "vertex", "vertices"), plural(len(added), "is", "are"), plural(len(added), "s", ""), strings.Join(descs, ", "))
	}
	sortFindings(verdict.Findings)
	return verdict
}

// unknownMaxSide says which plan lacks the maximum parallelism of the
// vertices.
func unknownMaxSide(old, new JobPlan, unknown []string) string {
	oldByID, newByID := byID(old), byID(new)
	var oldMissing, newMissing bool
	for _, id := range unknown {
		oldMissing = oldMissing || oldByID[id].MaxParallelism <= 0
		newMissing = newMissing || newByID[id].MaxParallelism <= 0
	}
	switch {
	case oldMissing && newMissing:
		return "neither plan shows it"
	case oldMissing:
		return "the old plan does not show it"
	}
	return "the new plan does not show it (a jar plan never does); a vertex without an explicit maximum parallelism takes that of its state"
}

func slotsDetail(p JobPlan) string {
	groups := map[string]int{}
	for _, v := range p.Vertices {
		groups[v.SlotSharingGroup] = max(groups[v.SlotSharingGroup], v.Parallelism, 1)
	}
	if len(groups) == 1 {
		for _, n := range groups {
			return fmt.Sprintf("its largest parallelism, %d", n)
		}
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.Sort(names)
	var parts []string
	for _, g := range names {
		name := g
		if name == "" {
			name = "default"
		}
		parts = append(parts, fmt.Sprintf("%s %d", quote(name), groups[g]))
	}
	return "per slot sharing group: " + strings.Join(parts, ", ")
}

func sortFindings(fs []PreflightFinding) {
	slices.SortStableFunc(fs, func(a, b PreflightFinding) int {
		if a.Refuses != b.Refuses {
			if a.Refuses {
				return -1
			}
			return 1
		}
		return cmp.Compare(slices.Index(preflightOrder, a.Reason), slices.Index(preflightOrder, b.Reason))
	})
}

func byID(p JobPlan) map[string]PlanVertex {
	m := make(map[string]PlanVertex, len(p.Vertices))
	for _, v := range p.Vertices {
		m[v.ID] = v
	}
	return m
}

func duplicateIDs(p JobPlan) []string {
	seen := map[string]int{}
	var dup []string
	for _, v := range p.Vertices {
		seen[v.ID]++
		if seen[v.ID] == 2 {
			dup = append(dup, v.ID)
		}
	}
	return dup
}

func ids(vs []PlanVertex) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

// vertexName names a vertex in a message: its name and id, or its id.
func vertexName(v PlanVertex) string {
	if v.Name == "" {
		return v.ID
	}
	return quote(v.Name) + " (" + v.ID + ")"
}

func quote(s string) string { return "\"" + s + "\"" }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
