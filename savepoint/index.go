package savepoint

import (
	"runtime"
	"sync"
	"weak"
)

// The records of a long History live in a backing array that Add grows
// as append does, with room at its end; an index kept beside the array
// (not in History, whose value and JSON stay plain data) lets Add append
// a savepoint newer than every other one into that room and find a
// location without reading every record:
//
//   - The index knows the array's records from base to top (counted back
//     from the array's end, since Remove drops the oldest records by
//     slicing them off the front): in time order (ties by location),
//     each location once. Nothing writes a record of that range again.
//     It is built when the array is used again after the Add that made
//     it (a History decoded or deep-copied at every use, as a stored
//     status is, never builds one).
//   - A History whose Records end at top owns the room after it: Add
//     writes the record into the first free slot and moves top on. Any
//     other History sharing the array (an older value, which ends
//     before top) copies, as Add always did, so that no value a caller
//     holds ever changes.
//
// The index goes when the array does (a cleanup of the array).

// indexFrom is the length from which Add keeps an index: a shorter
// history is copied and scanned faster than an index is built.
const indexFrom = 64

// recordIndex is the index of one backing array (see above), built at
// the first use of the array after the one that made it. Distances are
// counted from the array's end: the record at i of a slice s of the
// array is at distance cap(s)-i.
type recordIndex struct {
	mu   sync.Mutex
	free int            // distance of the end of the records written: the room left
	base int            // distance of the first record indexed, once at is built
	at   map[string]int // distance of each location's record; nil: not built yet
	bad  bool           // the records are out of order or hold a location twice: no index
}

// indexes holds the index of each backing array that has one, by the
// address of its last slot.
var indexes sync.Map // weak.Pointer[Record] → *recordIndex

// arrayKey is the key of the backing array of rs in indexes; ok is false
// for an array without slots.
func arrayKey(rs []Record) (k weak.Pointer[Record], ok bool) {
	c := cap(rs)
	if c == 0 {
		return k, false
	}
	return weak.Make(&rs[:c][c-1]), true
}

// indexOf returns the index of rs's backing array when it knows every
// record of rs, with its lock held; nil otherwise.
func indexOf(rs []Record) *recordIndex {
	if len(rs) < indexFrom {
		return nil
	}
	k, _ := arrayKey(rs)
	v, ok := indexes.Load(k)
	if !ok {
		return nil
	}
	x := v.(*recordIndex)
	x.mu.Lock()
	if !x.bad && cap(rs)-len(rs) >= x.free && x.at == nil {
		x.build(rs[:cap(rs)-x.free])
	}
	if x.bad || cap(rs) > x.base || cap(rs)-len(rs) < x.free {
		x.mu.Unlock()
		return nil
	}
	return x
}

// build indexes the records rs, which end where the records written to
// x's array do; it marks x bad if they are out of order, hold a location
// twice or one without a location. x's lock is held.
func (x *recordIndex) build(rs []Record) {
	c := cap(rs)
	x.at, x.base = make(map[string]int, c), c
	for i, r := range rs {
		if _, dup := x.at[r.Location]; dup || r.Location == "" || i > 0 && compareRecords(rs[i-1], r) >= 0 {
			x.at, x.bad = nil, true
			return
		}
		x.at[r.Location] = c - i
	}
}

// position returns where loc is in rs, a slice of x's array; ok is
// false when rs does not hold it. x's lock is held.
func (x *recordIndex) position(rs []Record, loc string) (i int, ok bool) {
	d, ok := x.at[loc]
	if !ok {
		return 0, false
	}
	i = cap(rs) - d
	return i, i >= 0 && i < len(rs)
}

// appendNewest returns rs with r appended in the room of x's array, and
// ok, when rs owns that room, r is newer than every record and its
// location was never in the array. x's lock is held.
func (x *recordIndex) appendNewest(rs []Record, r Record) ([]Record, bool) {
	n := len(rs)
	if cap(rs)-n != x.free || x.free == 0 || n > 0 && compareRecords(rs[n-1], r) >= 0 {
		return nil, false
	}
	if _, seen := x.at[r.Location]; seen {
		return nil, false
	}
	rs = rs[:n+1]
	rs[n] = r
	x.at[r.Location] = cap(rs) - n
	x.free--
	return rs, true
}

// withIndex registers rs, a new backing array no other value holds, for
// an index (built at its next use) when it is long enough; it returns
// rs.
func withIndex(rs []Record) []Record {
	if len(rs) < indexFrom {
		return rs
	}
	c := cap(rs)
	k, _ := arrayKey(rs)
	indexes.Store(k, &recordIndex{free: c - len(rs)})
	runtime.AddCleanup(&rs[:c][c-1], func(k weak.Pointer[Record]) { indexes.Delete(k) }, k)
	return rs
}

// grown returns a new backing array for n records with room for a
// quarter more, as append grows a long slice, so that appending to a long
// History costs O(1) amortized.
func grown(n int) []Record {
	if n+1 < indexFrom {
		return make([]Record, 0, n+1)
	}
	return make([]Record, 0, n+1+(n+1)/4)
}
