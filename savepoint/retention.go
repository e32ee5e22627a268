package savepoint

import (
	"cmp"
	"hash/maphash"
	"slices"
	"time"
)

// History is a job's completed savepoints, oldest first, each location at
// most once. It is plain data, safe to store in a Kubernetes status. It
// marshals to a compact object,
// {"formatVersion":3,"jobID":…,"reason":…,"prefix":…,"records":[...]}:
// "jobID" and "reason" are those most records share and "prefix" the
// start every location shares, written once, and each record writes its
// "location" after the prefix and its "reason" and "jobID" only where
// they differ from the history's (see MarshalJSON). It decodes from that,
// from formats 1 and 2 ({"formatVersion":2,"records":[...]}, every
// record whole) and from the bare array of records written before format
// versions existed. "jobID", "reason" and "prefix" are not fields of
// History: a Kubernetes schema keeps them as unknown fields
// (x-kubernetes-preserve-unknown-fields).
// The zero History is empty and ready to use.
// +kubebuilder:pruning:PreserveUnknownFields
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
// Adding one record newer than every other, of a location h does not
// hold, to a History of at least 64 records that Add or Remove returned
// costs O(1) amortized: the records are appended, as append does, into
// room at the end of the backing array that the returned History owns
// (no value a caller holds changes: adding to any other History that
// shares the array copies). Other additions cost O(n), k records in one
// call O(n + k log k). Do not append to Records by hand: Add may use the
// room after them.
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

// addOne returns records with r inserted in time order, its location's
// entry replaced: appended in place when records own the room of an
// indexed array (see index.go), a copy otherwise.
func addOne(records []Record, r Record) []Record {
	if r.Location != "" {
		if x := indexOf(records); x != nil {
			out, ok := x.appendNewest(records, r)
			x.mu.Unlock()
			if ok {
				return out
			}
		}
	}
	out := grown(len(records))
	for _, e := range records {
		if r.Location == "" || e.Location != r.Location {
			out = append(out, e)
		}
	}
	if r.Location != "" {
		i, _ := slices.BinarySearchFunc(out, r, compareRecords)
		out = slices.Insert(out, i, r)
	}
	return withIndex(out)
}

// Remove returns h without the entries at the given locations, for example
// the ones lifecycle disposed of. h itself is not modified. It costs
// O(n + k) for k locations, and O(k) when they are the oldest entries of
// a History of at least 64 records that Add or Remove returned (the
// result then shares h's backing array).
func (h History) Remove(locations ...string) History {
	if out, ok := removeOldest(h.Records, locations); ok {
		return History{FormatVersion: FormatVersion, Records: out}
	}
	in := newLocationSet(locations)
	out := make([]Record, 0, len(h.Records))
	for _, e := range h.Records {
		if !in.has(e.Location) {
			out = append(out, e)
		}
	}
	return History{FormatVersion: FormatVersion, Records: out}
}

// removeOldest returns records without their oldest entries, sharing
// the backing array, and ok when records are indexed (see index.go) and
// the locations the records hold are those of their oldest entries.
func removeOldest(records []Record, locations []string) ([]Record, bool) {
	x := indexOf(records)
	if x == nil {
		return nil, false
	}
	defer x.mu.Unlock()
	end := 0 // records[:end] go
	for _, l := range locations {
		i, ok := x.position(records, l)
		if !ok {
			continue
		}
		if i >= len(locations) {
			return nil, false // not among the oldest: a copy without it
		}
		end = max(end, i+1)
	}
	// The records go when each of the oldest end was named.
	in := newLocationSet(locations)
	for _, r := range records[:end] {
		if !in.has(r.Location) {
			return nil, false
		}
	}
	return records[end:], true
}

// Lookup returns the entry of h at location; ok is false when h holds
// none. It costs O(1) for a History of at least 64 records that Add or
// Remove returned, O(n) otherwise.
func (h History) Lookup(location string) (r Record, ok bool) {
	if x := indexOf(h.Records); x != nil {
		i, ok := x.position(h.Records, location)
		x.mu.Unlock()
		if !ok {
			return Record{}, false
		}
		return h.Records[i], true
	}
	for _, r := range h.Records {
		if r.Location == location && location != "" {
			return r, true
		}
	}
	return Record{}, false
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

// Latest returns the newest entry of h; ok is false when h is empty. It
// costs O(1) for a History of at least 64 records that Add or Remove
// returned, O(n) otherwise.
func (h History) Latest() (r Record, ok bool) {
	if len(h.Records) == 0 {
		return Record{}, false
	}
	if x := indexOf(h.Records); x != nil {
		x.mu.Unlock()
		return h.Records[len(h.Records)-1], true // in time order
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
	inUse := newLocationSet(opts.InUse)
	if x := indexOf(h); x != nil {
		x.mu.Unlock()
		return chooseInOrder(h, opts, inUse, now)
	}
	if inOrder(h) {
		return chooseInOrder(h, opts, inUse, now)
	}
	return chooseSorting(h, opts, inUse, now)
}

// chooseSorting is ChooseDisposals of records in any order: sorted by
// location to find each location's newest entry, then by time.
func chooseSorting(h []Record, opts RetentionOptions, inUse locationSet, now time.Time) []Record {
	type entry struct {
		r    Record
		keep bool // may not be disposed of
	}
	es := make([]entry, 0, len(h))
	for _, r := range h {
		if r.Location == "" || r.Time.IsZero() {
			continue
		}
		es = append(es, entry{r, opts.keeps(r, inUse)})
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
		if !e.keep {
			out = opts.choose(out, &e.r, &kept, now)
		}
	}
	return out
}

// keeps reports whether the options keep r whatever its age and the
// count: its reason, or a location in use.
func (opts RetentionOptions) keeps(r Record, inUse locationSet) bool {
	return r.Reason == ReasonUpdate && !opts.DisposeUpdate ||
		(r.Reason == ReasonUser || r.Reason == ReasonImported) && !opts.DisposeUser ||
		inUse.has(r.Location)
}

// choose appends r to out if it is too old or one too many while kept
// are kept, r being the oldest of them that may go, and counts it off
// kept if so.
func (opts RetentionOptions) choose(out []Record, r *Record, kept *int, now time.Time) []Record {
	if !opts.goes(*r, *kept, now) {
		return out
	}
	*kept--
	if d := r.Disposal(); !d.Failed() || !d.GaveUp && !now.Before(d.RetryAt) {
		// One whose disposal failed goes once it may be tried again;
		// until then it does not count among those kept either.
		out = append(out, *r)
	}
	return out
}

// inOrder reports whether h is in time order (ties by location), each
// location once and none empty, as Add keeps a History (also when it
// was stored and decoded since). It reads h once, and allocates nothing
// for up to 256 records: their locations' hashes, sorted, show that no
// two are the same (two the same, or a collision of hashes, and it
// reports false).
func inOrder(h []Record) bool {
	for i := range h {
		if h[i].Location == "" || i > 0 && compareRecords(h[i-1], h[i]) >= 0 {
			return false
		}
	}
	var buf [256]uint64
	hs := buf[:0]
	if len(h) > len(buf) {
		hs = make([]uint64, 0, len(h))
	}
	for i := range h {
		hs = append(hs, maphash.String(locationSeed, h[i].Location))
	}
	slices.Sort(hs)
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			return false
		}
	}
	return true
}

// locationSeed seeds the hashes of inOrder.
var locationSeed = maphash.MakeSeed()

// goes reports whether r, which the options do not keep, goes while
// kept are kept: it is older than MaxAge, or one too many.
func (opts RetentionOptions) goes(r Record, kept int, now time.Time) bool {
	return opts.MaxAge > 0 && now.Sub(r.Time) > opts.MaxAge || opts.MaxCount > 0 && kept > opts.MaxCount
}

// chooseInOrder is ChooseDisposals of records in time order (ties by
// location), each location once and none empty, as an indexed History
// holds them: without sorting, and reading the records only up to the
// first one that may go and does not (every later one is younger, and
// no fewer are kept).
func chooseInOrder(h []Record, opts RetentionOptions, inUse locationSet, now time.Time) []Record {
	// Records without a Time are neither chosen nor counted: they share
	// the zero instant, in one run.
	zero := func(r Record, _ struct{}) int { return r.Time.Compare(time.Time{}) }
	lo, _ := slices.BinarySearchFunc(h, struct{}{}, zero)
	hi := lo
	for hi < len(h) && h[hi].Time.IsZero() {
		hi++
	}
	kept := len(h) - (hi - lo)
	if kept == 0 {
		return nil
	}
	newest := h[len(h)-1].Time
	if newest.IsZero() {
		newest = h[lo-1].Time // the others are older than the zero time
	}
	var out []Record
	for i := range h {
		r := &h[i]
		if r.Time.IsZero() || r.Time.Equal(newest) || opts.keeps(*r, inUse) {
			continue
		}
		if !opts.goes(*r, kept, now) {
			break
		}
		out = opts.choose(out, r, &kept, now)
	}
	return out
}
