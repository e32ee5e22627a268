package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/bytesize"
)

// PlanVertex is one vertex (operator chain) of a job's plan, as
// ComparePlans compares it.
type PlanVertex struct {
	// ID is the job vertex id: the operator id of the chain's first
	// operator, which Flink derives from that operator's uid (or, without
	// one, from a hash of the graph). Flink maps a snapshot's state to the
	// new job by operator id, operator by operator; REST shows the
	// vertices only, so the ids of the operators chained behind the first
	// are not seen here. A vertex whose id changed starts without the
	// state of its first operator; a chained operator whose uid changed
	// loses its state although the vertex id stays.
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
	// OldState is the state each vertex of the old job holds in its
	// snapshot: a vertex the new plan lacks may go when it holds none,
	// as Flink skips a snapshot's operator without state. The zero value
	// is not known, and every such vertex counts as one with state.
	OldState StateSizes `json:"oldState,omitzero"`
}

// StateSizes is the size of the state of each vertex of the old job in
// one of its snapshots (the newest completed checkpoint or savepoint, or
// the one the new job restores), as the snapshot's details show it
// (flinkapi.CheckpointStats.Vertices): the state of all the operators of
// the vertex's chain, all subtasks together.
type StateSizes struct {
	// Known reports that Bytes were read from the snapshot CheckpointID;
	// when not, Unknown says why.
	Known   bool         `json:"known,omitempty"`
	Unknown StateUnknown `json:"unknown,omitempty"`
	// CheckpointID is the snapshot read, and Savepoint whether it is a
	// savepoint; zero when none was read.
	CheckpointID int64 `json:"checkpointId,omitempty"`
	Savepoint    bool  `json:"savepoint,omitempty"`
	// Bytes is each vertex's state size, by vertex id; a vertex it does
	// not name is of unknown size.
	Bytes map[string]int64 `json:"bytes,omitempty"`
}

// size returns the state size of vertex id and whether it is known.
func (s StateSizes) size(id string) (int64, bool) {
	if !s.Known {
		return 0, false
	}
	n, ok := s.Bytes[id]
	return n, ok && n >= 0
}

// StateUnknown says why the state sizes of the old job's vertices are
// not known. The set is closed: the constants below are all there are.
type StateUnknown string

// Why the state sizes are not known.
const (
	// StateNotRead: nobody read them (the zero value means the same).
	StateNotRead StateUnknown = "NotRead"
	// StateNoSnapshot: the old job has no completed checkpoint or
	// savepoint in its statistics (or does not checkpoint).
	StateNoSnapshot StateUnknown = "NoSnapshot"
	// StateRestoreNotInHistory: the new job restores a snapshot that is
	// not in the old job's checkpoint history, whose details alone show
	// the sizes.
	StateRestoreNotInHistory StateUnknown = "RestoreNotInHistory"
	// StateDetailsUnavailable: Flink did not answer the snapshot's
	// details (it left the history, or the request failed), or the
	// checkpoint statistics that name the snapshot (CheckpointID 0).
	StateDetailsUnavailable StateUnknown = "DetailsUnavailable"
)

// why says in a message why the sizes are not known.
func (s StateSizes) why() string {
	switch s.Unknown {
	case StateNoSnapshot:
		return "the old job has no completed checkpoint or savepoint to read them from"
	case StateRestoreNotInHistory:
		return "the snapshot the new job restores is not in the old job's checkpoint history"
	case StateDetailsUnavailable:
		if s.CheckpointID == 0 {
			return "the old job's checkpoint statistics could not be read"
		}
		return fmt.Sprintf("the details of snapshot %d could not be read", s.CheckpointID)
	}
	if s.Known {
		return fmt.Sprintf("snapshot %d does not show the vertex", s.CheckpointID)
	}
	return "the state sizes were not read"
}

// snapshot names the snapshot the sizes were read from.
func (s StateSizes) snapshot() string {
	if s.Savepoint {
		return fmt.Sprintf("savepoint %d", s.CheckpointID)
	}
	return fmt.Sprintf("checkpoint %d", s.CheckpointID)
}

// DroppedVertex is a vertex of the old job that the new plan lacks, and
// the state it holds in the snapshot read (PreflightOptions.OldState).
type DroppedVertex struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Bytes is its state size, once SizeKnown; 0: it holds no state, and
	// Flink starts the new job without it.
	Bytes     int64 `json:"bytes,omitempty"`
	SizeKnown bool  `json:"sizeKnown,omitempty"`
}

// PreflightReason says why ComparePlans reported a finding. The set is
// closed: the constants below are all there are.
type PreflightReason string

// Reasons of preflight findings, in the order ComparePlans reports them.
const (
	// PreflightInvalidPlan (refuses): the new plan has no vertices, or a
	// plan names a vertex id twice.
	PreflightInvalidPlan PreflightReason = "InvalidPlan"
	// PreflightStateNotRestored: vertices of the old job that hold state
	// (PreflightOptions.OldState) are not in the new plan, so their state
	// would not be restored; refuses unless AllowNonRestoredState, and
	// then says which state is dropped and how large it is. A vertex
	// whose uid changed shows this way (its id changed); the message says
	// when a new vertex has its name.
	PreflightStateNotRestored PreflightReason = "StateNotRestored"
	// PreflightStateUnknown: vertices of the old job are not in the new
	// plan and whether they hold state is not known (StateSizes.Unknown
	// says why); refuses unless AllowNonRestoredState, as a vertex with
	// state would.
	PreflightStateUnknown PreflightReason = "StateUnknown"
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
	// PreflightStatelessVertexRemoved (does not refuse): vertices of the
	// old job are not in the new plan and hold no state in the snapshot
	// read; Flink starts the new job without them.
	PreflightStatelessVertexRemoved PreflightReason = "StatelessVertexRemoved"
	// PreflightVertexAdded (does not refuse): vertices of the new plan
	// are not in the old one and start without state.
	PreflightVertexAdded PreflightReason = "VertexAdded"
	// PreflightOperatorsUnchecked (does not refuse): vertices in both
	// plans are chains of operators. REST shows a vertex by the id of its
	// first operator only: a chained operator whose uid changed, or that
	// the new job lacks, loses its state unseen, and Flink refuses it
	// unless allowNonRestoredState. Neither that nor the maximum
	// parallelism a jar plan does not show can be checked here; a
	// restore canary (a blue/green upgrade with a canary) is the check
	// for them.
	PreflightOperatorsUnchecked PreflightReason = "OperatorsUnchecked"
)

// preflightOrder ranks the reasons for sorting.
var preflightOrder = []PreflightReason{
	PreflightInvalidPlan, PreflightStateNotRestored, PreflightStateUnknown, PreflightMaxParallelismChanged, PreflightParallelismAboveMax,
	PreflightNotEnoughSlots, PreflightMaxParallelismUnknown, PreflightParallelismUnknown, PreflightStatelessVertexRemoved,
	PreflightVertexAdded, PreflightOperatorsUnchecked,
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
	// Dropped are the vertices of the old job that the new plan lacks,
	// in the old plan's order, with the state each holds when known.
	Dropped []DroppedVertex `json:"dropped,omitempty"`
}

// DroppedBytes is the state of the dropped vertices whose size is known,
// in bytes.
func (v PreflightVerdict) DroppedBytes() int64 {
	var n int64
	for _, d := range v.Dropped {
		n += d.Bytes
	}
	return n
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
// of the old job that the new plan lacks (refused, unless
// opts.AllowNonRestoredState, when they hold state in opts.OldState or
// their state is not known; allowed when they hold none, as Flink does),
// changed maximum parallelism, parallelism above the maximum,
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
	// Flink skips a snapshot's operator that the new job lacks when it
	// holds no state, and refuses one with state unless
	// allowNonRestoredState: so does the preflight, vertex by vertex.
	var stateful, unknownState, stateless []PlanVertex
	for _, v := range gone {
		n, known := opts.OldState.size(v.ID)
		verdict.Dropped = append(verdict.Dropped, DroppedVertex{ID: v.ID, Name: v.Name, Bytes: n, SizeKnown: known})
		switch {
		case !known:
			unknownState = append(unknownState, v)
		case n > 0:
			stateful = append(stateful, v)
		default:
			stateless = append(stateless, v)
		}
	}
	desc := func(v PlanVertex) string {
		d := vertexName(v)
		if n, known := opts.OldState.size(v.ID); known && n > 0 {
			d += ", " + bytesize.String(n)
		}
		if i := slices.IndexFunc(added, func(a PlanVertex) bool { return a.Name != "" && a.Name == v.Name }); i >= 0 {
			d += fmt.Sprintf(" (the new plan has %s under the id %s: was the uid of its first operator changed?)", quote(v.Name), added[i].ID)
		}
		return d
	}
	descs := func(vs []PlanVertex) string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = desc(v)
		}
		return strings.Join(out, "; ")
	}
	if len(stateful) > 0 {
		n := len(stateful)
		var bytes int64
		for _, v := range stateful {
			b, _ := opts.OldState.size(v.ID)
			bytes += b
		}
		if opts.AllowNonRestoredState {
			add(PreflightStateNotRestored, false, ids(stateful), "the state of %d %s of the old job, %s in %s, is dropped (allowNonRestoredState): %s",
				n, plural(n, "vertex", "vertices"), bytesize.String(bytes), opts.OldState.snapshot(), descs(stateful))
		} else {
			add(PreflightStateNotRestored, true, ids(stateful), "%d %s of the old job %s not in the new plan and %s state (%s in %s), which would not be restored: %s; "+
				"keep the operators' uids, or allow non-restored state", n, plural(n, "vertex", "vertices"), plural(n, "is", "are"), plural(n, "holds", "hold"),
				bytesize.String(bytes), opts.OldState.snapshot(), descs(stateful))
		}
	}
	if len(unknownState) > 0 {
		n := len(unknownState)
		if opts.AllowNonRestoredState {
			add(PreflightStateUnknown, false, ids(unknownState), "whatever state %d %s of the old job %s is dropped (allowNonRestoredState; its size is not known: %s): %s",
				n, plural(n, "vertex", "vertices"), plural(n, "holds", "hold"), opts.OldState.why(), descs(unknownState))
		} else {
			add(PreflightStateUnknown, true, ids(unknownState), "%d %s of the old job %s not in the new plan, and whether %s state is not known (%s), so it may not be restored: %s; "+
				"keep the operators' uids, or allow non-restored state", n, plural(n, "vertex", "vertices"), plural(n, "is", "are"), plural(n, "it holds", "they hold"),
				opts.OldState.why(), descs(unknownState))
		}
	}
	if len(stateless) > 0 {
		n := len(stateless)
		add(PreflightStatelessVertexRemoved, false, ids(stateless), "%d %s of the old job %s not in the new plan and %s no state in %s, so Flink starts the new job without %s: %s",
			n, plural(n, "vertex", "vertices"), plural(n, "is", "are"), plural(n, "holds", "hold"), opts.OldState.snapshot(), plural(n, "it", "them"), descs(stateless))
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
	if chains := keptChains(old, newByID); len(chains) > 0 {
		var descs []string
		for _, id := range chains {
			descs = append(descs, vertexName(newByID[id]))
		}
		add(PreflightOperatorsUnchecked, false, chains, "REST shows a vertex by the id of its first operator only, so the uids of the operators chained behind it in %s "+
			"are not checked (a chained operator whose uid changed or that was removed loses its state), nor is a maximum parallelism no plan shows; "+
			"a restore canary (a blue/green upgrade with a canary) is the check for those", strings.Join(descs, ", "))
	}
	sortFindings(verdict.Findings)
	return verdict
}

// keptChains returns the ids of the vertices in both plans whose name,
// in either plan, shows a chain of operators ("counter -> discard:
// Writer", as Flink names a chain). It only selects what a note names.
func keptChains(old JobPlan, newByID map[string]PlanVertex) []string {
	var out []string
	for _, ov := range old.Vertices {
		nv, ok := newByID[ov.ID]
		if ok && (strings.Contains(ov.Name, " -> ") || strings.Contains(nv.Name, " -> ")) && !slices.Contains(out, ov.ID) {
			out = append(out, ov.ID)
		}
	}
	return out
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
