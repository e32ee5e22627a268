package savepoint

import (
	"cmp"
	"slices"
	"time"
)

// History is a job's completed savepoints, oldest first, each location at
// most once. It is plain data, safe to store in a Kubernetes status. It
// marshals to {"formatVersion":2,"records":[...]} and decodes from that,
// from format 1 and from the bare array of records written before format
// versions existed.
// The zero History is empty and ready to use.
type History struct {
	// FormatVersion is the format this value was written in; 0 when not
	// set reads as 1. Add and Remove set it to FormatVersion.
	// +kubebuilder:validation:Minimum=0
	FormatVersion int `json:"formatVersion,omitempty"`
	// Records are the savepoints, oldest first (ties by location), each
	// location at most once. Change them through Add and Remove.
	Records []Record `json:"records,omitempty"`
}

// Add returns h with the records rs added in time order (ties by
// location), as successive calls of Add with one record each would. If h
// already holds a record's location, that entry is replaced by the
// record; of several records with one location the last counts. A record
// without a Location is not added. h itself is not modified.
//
// Since h is not modified, each call copies h's records: adding one
// record costs O(n), adding k records in one call O(n + k log k). Build a
// long History in one call rather than with one call per record.
func (h History) Add(rs ...Record) History {
	if len(rs) == 1 {
		return History{FormatVersion: FormatVersion, Records: addOne(h.Records, rs[0])}
	}
	// The last record of each location, in time order.
	add := make([]Record, 0, len(rs))
	seen := make(map[string]int, len(rs))
	for _, r := range rs {
		if r.Location == "" {
			continue
		}
		if i, ok := seen[r.Location]; ok {
			add[i] = r
			continue
		}
		seen[r.Location] = len(add)
		add = append(add, r)
	}
	if !slices.IsSortedFunc(h.Records, compareRecords) {
		// Not in time order (written by hand): one at a time, as Add of
		// one record inserts into it.
		out := append(make([]Record, 0, len(h.Records)+len(add)), h.Records...)
		for _, r := range rs {
			out = addOne(out, r)
		}
		return History{FormatVersion: FormatVersion, Records: out}
	}
	slices.SortStableFunc(add, compareRecords)
	out := make([]Record, 0, len(h.Records)+len(add))
	i := 0
	for _, e := range h.Records {
		if _, replaced := seen[e.Location]; replaced {
			continue
		}
		for i < len(add) && compareRecords(add[i], e) < 0 {
			out = append(out, add[i])
			i++
		}
		out = append(out, e)
	}
	out = append(out, add[i:]...)
	return History{FormatVersion: FormatVersion, Records: out}
}

// addOne returns a copy of records with r inserted in time order, its
// location's entry replaced.
func addOne(records []Record, r Record) []Record {
	out := make([]Record, 0, len(records)+1)
	for _, e := range records {
		if r.Location == "" || e.Location != r.Location {
			out = append(out, e)
		}
	}
	if r.Location != "" {
		i, _ := slices.BinarySearchFunc(out, r, compareRecords)
		out = slices.Insert(out, i, r)
	}
	return out
}

// Remove returns h without the entries at the given locations, for example
// the ones lifecycle disposed of. h itself is not modified. It costs
// O(n + k) for k locations.
func (h History) Remove(locations ...string) History {
	in := newLocationSet(locations)
	out := make([]Record, 0, len(h.Records))
	for _, e := range h.Records {
		if !in.has(e.Location) {
			out = append(out, e)
		}
	}
	return History{FormatVersion: FormatVersion, Records: out}
}

// locationSet answers "is this one of the locations" in O(1): a map for
// many locations, a scan of a few.
type locationSet struct {
	few  []string
	many map[string]struct{}
}

func newLocationSet(locations []string) locationSet {
	if len(locations) <= 8 {
		return locationSet{few: locations}
	}
	m := make(map[string]struct{}, len(locations))
	for _, l := range locations {
		m[l] = struct{}{}
	}
	return locationSet{many: m}
}

func (s locationSet) has(l string) bool {
	if s.many != nil {
		_, ok := s.many[l]
		return ok
	}
	return slices.Contains(s.few, l)
}

// Latest returns the newest entry of h; ok is false when h is empty.
func (h History) Latest() (r Record, ok bool) {
	if len(h.Records) == 0 {
		return Record{}, false
	}
	return slices.MaxFunc(h.Records, compareRecords), true
}

// compareRecords orders records by time, then location.
func compareRecords(a, b Record) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Location, b.Location)
}

// RetentionOptions say which savepoints ChooseDisposals may choose. It is a
// call parameter, not a stored type.
type RetentionOptions struct {
	// MaxCount is how many savepoints to keep; 0 or less: no limit. Kept
	// savepoints that may not be disposed count towards it.
	MaxCount int
	// MaxAge disposes of savepoints older than it; 0 or less: no limit.
	MaxAge time.Duration
	// InUse lists locations that must not be disposed of, such as the one
	// the running job was restored from or a restore in progress.
	InUse []string
	// DisposeUpdate allows disposing of savepoints taken for an update
	// (ReasonUpdate).
	DisposeUpdate bool
	// DisposeUser allows disposing of user-requested savepoints
	// (ReasonUser) and imported ones (ReasonImported).
	DisposeUser bool
}

// ChooseDisposals returns the savepoints of h (a History's Records) to
// dispose of, oldest first (ties by location), each location once.
// lifecycle disposes of them through flinkapi; remove them from the
// History afterwards (History.Remove).
//
// It chooses savepoints older than MaxAge at now, then the oldest of the
// rest while more than MaxCount are kept. It never chooses the newest
// savepoint (all of them, if several share the newest time), a location in
// InUse, nor an Update or User savepoint unless DisposeUpdate or
// DisposeUser allows it. Entries without a Location or a Time are neither
// chosen nor counted. An entry whose disposal failed (Disposal.Failed)
// and that these rules choose again is chosen only once its
// Disposal.RetryAt has come and it was not given up; until then it does
// not count among those kept either (another is not disposed of in its
// place). When a location appears more than once, its newest
// entry counts, and it is kept if any of its entries must be kept.
func ChooseDisposals(h []Record, opts RetentionOptions, now time.Time) []Record {
	type entry struct {
		r    Record
		keep bool // may not be disposed of
	}
	inUse := newLocationSet(opts.InUse)
	es := make([]entry, 0, len(h))
	for _, r := range h {
		if r.Location == "" || r.Time.IsZero() {
			continue
		}
		keep := r.Reason == ReasonUpdate && !opts.DisposeUpdate ||
			(r.Reason == ReasonUser || r.Reason == ReasonImported) && !opts.DisposeUser ||
			inUse.has(r.Location)
		es = append(es, entry{r, keep})
	}
	if len(es) == 0 {
		return nil
	}
	// One entry per location: the newest, kept if any copy is kept.
	slices.SortFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.r.Location, b.r.Location); c != 0 {
			return c
		}
		if c := b.r.Time.Compare(a.r.Time); c != 0 {
			return c
		}
		// Total order, so that the input's order cannot change the result.
		if c := cmp.Compare(a.r.Reason, b.r.Reason); c != 0 {
			return c
		}
		return cmp.Compare(a.r.JobID, b.r.JobID)
	})
	uniq := es[:1]
	for _, e := range es[1:] {
		last := &uniq[len(uniq)-1]
		if e.r.Location == last.r.Location {
			last.keep = last.keep || e.keep
			continue
		}
		uniq = append(uniq, e)
	}
	es = uniq
	slices.SortFunc(es, func(a, b entry) int { return compareRecords(a.r, b.r) })
	newest := es[len(es)-1].r.Time
	for i := len(es) - 1; i >= 0 && es[i].r.Time.Equal(newest); i-- {
		es[i].keep = true
	}

	var out []Record
	kept := len(es)
	for i := range es {
		e := &es[i]
		if e.keep {
			continue
		}
		old := opts.MaxAge > 0 && now.Sub(e.r.Time) > opts.MaxAge
		tooMany := opts.MaxCount > 0 && kept > opts.MaxCount
		if !old && !tooMany {
			continue
		}
		kept--
		if d := e.r.Disposal; !d.Failed() || !d.GaveUp && !now.Before(d.RetryAt) {
			// One whose disposal failed goes once it may be tried again;
			// until then it does not count among those kept either.
			out = append(out, e.r)
		}
	}
	return out
}
