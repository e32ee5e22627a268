package savepoint

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// plainOf is h with its records in a backing array of their own, which
// no index knows: Add, Remove, Latest, Lookup and ChooseDisposals take
// their general paths on it.
func plainOf(h History) History {
	return History{FormatVersion: h.FormatVersion, Records: slices.Clone(h.Records)}
}

// TestIndexedHistoryAsPlain runs random operations on histories long
// enough to be indexed, each on a random earlier value (so that values
// share backing arrays), and checks that every result equals the one of
// the general paths, and that no value returned earlier changed.
func TestIndexedHistoryAsPlain(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		type version struct {
			h    History
			want []Record // h's records when returned
		}
		var vs []version
		var h History
		next := 0
		newRecord := func(t time.Time) Record {
			next++
			return Record{Location: fmt.Sprintf("s3://b/sp-%05d", next), Time: t, Reason: ReasonScheduled}
		}
		for i := range 150 {
			h = h.Add(newRecord(at(time.Duration(i) * time.Minute)))
		}
		vs = append(vs, version{h, slices.Clone(h.Records)})
		for step := range 400 {
			from := vs[len(vs)-1]
			if rng.IntN(4) == 0 {
				from = vs[rng.IntN(len(vs))] // an earlier value
			}
			h := from.h
			var got, want History
			op := rng.IntN(10)
			switch {
			case op < 4: // the newest savepoint
				last := at(0)
				if n := len(h.Records); n > 0 {
					last = h.Records[n-1].Time
				}
				r := newRecord(last.Add(time.Duration(rng.IntN(3)) * time.Minute))
				got, want = h.Add(r), plainOf(h).Add(r)
			case op < 5 && len(h.Records) > 0: // an entry again, changed
				r := h.Records[rng.IntN(len(h.Records))]
				d := r.Disposal()
				d.Attempts++
				r.SetDisposal(d)
				if rng.IntN(2) == 0 {
					r.Time = r.Time.Add(time.Hour)
				}
				got, want = h.Add(r), plainOf(h).Add(r)
			case op < 6: // a location removed before, again
				r := Record{Location: fmt.Sprintf("s3://b/sp-%05d", 1+rng.IntN(next)), Time: at(time.Duration(step) * time.Hour)}
				got, want = h.Add(r), plainOf(h).Add(r)
			case op < 8: // the oldest, as retention removes them
				var locs []string
				for _, r := range h.Records[:min(len(h.Records), rng.IntN(4))] {
					locs = append(locs, r.Location)
				}
				if rng.IntN(3) == 0 {
					locs = append(locs, "s3://b/none")
				}
				got, want = h.Remove(locs...), plainOf(h).Remove(locs...)
			case op < 9 && len(h.Records) > 0: // any
				locs := []string{h.Records[rng.IntN(len(h.Records))].Location}
				got, want = h.Remove(locs...), plainOf(h).Remove(locs...)
			default:
				got, want = h.Add(Record{Time: at(time.Hour)}), plainOf(h).Add(Record{Time: at(time.Hour)})
			}
			if !slices.Equal(want.Records, got.Records) {
				diff := cmp.Diff(want.Records, got.Records)
				t.Fatalf("seed %d step %d op %d (-want +got):\n%s", seed, step, op, diff)
			}
			if got.FormatVersion != want.FormatVersion {
				t.Fatalf("seed %d step %d: format %d, want %d", seed, step, got.FormatVersion, want.FormatVersion)
			}
			gl, gok := got.Latest()
			wl, wok := want.Latest()
			if gok != wok || gl != wl {
				t.Fatalf("seed %d step %d: Latest %v %v, want %v %v", seed, step, gl, gok, wl, wok)
			}
			for _, r := range append(slices.Clone(want.Records[:min(3, len(want.Records))]), Record{Location: "s3://b/none"}) {
				gr, gok := got.Lookup(r.Location)
				wr, wok := want.Lookup(r.Location)
				if gok != wok || gr != wr {
					t.Fatalf("seed %d step %d: Lookup(%s) %v %v, want %v %v", seed, step, r.Location, gr, gok, wr, wok)
				}
			}
			now := at(time.Duration(rng.IntN(200)) * time.Minute)
			opts := RetentionOptions{MaxCount: rng.IntN(120), MaxAge: time.Duration(rng.IntN(100)) * time.Minute}
			if len(want.Records) > 0 {
				opts.InUse = []string{want.Records[rng.IntN(len(want.Records))].Location}
			}
			if w, g := ChooseDisposals(want.Records, opts, now), ChooseDisposals(got.Records, opts, now); !slices.Equal(w, g) {
				diff := cmp.Diff(w, g)
				t.Fatalf("seed %d step %d: ChooseDisposals (-want +got):\n%s", seed, step, diff)
			}
			vs = append(vs, version{got, slices.Clone(got.Records)})
		}
		for i, v := range vs {
			if !slices.Equal(v.want, v.h.Records) {
				diff := cmp.Diff(v.want, v.h.Records)
				t.Fatalf("seed %d: value %d changed after it was returned (-then +now):\n%s", seed, i, diff)
			}
		}
	}
}

// TestIndexedHistoryAppendsInPlace checks that adding the newest
// savepoint to a long History is amortized O(1): it allocates only when
// the backing array grows.
func TestIndexedHistoryAppendsInPlace(t *testing.T) {
	var h History
	for i := range 1000 {
		h = h.Add(Record{Location: fmt.Sprintf("s3://b/sp-%05d", i), Time: at(time.Duration(i) * time.Minute)})
	}
	locs := make([]string, 200)
	for j := range locs {
		locs[j] = fmt.Sprintf("s3://b/next-%03d", j)
	}
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		h = h.Add(Record{Location: locs[i], Time: at(time.Duration(1000+i) * time.Minute)})
		h = h.Remove(h.Records[0].Location)
		i++
	})
	// The backing array grows (a new one, indexed) now and then.
	if allocs > 0.2 {
		t.Errorf("Add and Remove of the oldest: %v allocations per savepoint, want nearly none", allocs)
	}
	if got, ok := h.Latest(); !ok || got.Location != locs[i-1] || len(h.Records) != 1000 {
		t.Errorf("Latest = %v %v of %d", got, ok, len(h.Records))
	}
}

// TestChooseInOrderAsSorting checks that ChooseDisposals of a history in
// time order, each location once (read in one pass), chooses what the
// general path, which sorts, chooses; and that of one out of order, or
// with a location twice, too.
func TestChooseInOrderAsSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	reasons := []Reason{ReasonScheduled, ReasonScheduled, ReasonUpdate, ReasonUser, ReasonImported, ReasonStop}
	for c := range 3000 {
		n := rng.IntN(300)
		h := make([]Record, 0, n)
		var ti time.Time
		for i := range n {
			if rng.IntN(3) > 0 {
				ti = at(time.Duration(i) * time.Minute)
			}
			r := Record{Location: fmt.Sprintf("s3://b/sp-%04d", i), Time: ti, Reason: reasons[rng.IntN(len(reasons))]}
			if rng.IntN(10) == 0 {
				r.SetDisposal(Disposal{Attempts: 1, RetryAt: at(time.Duration(rng.IntN(n+1)) * time.Minute), GaveUp: rng.IntN(4) == 0})
			}
			h = append(h, r)
		}
		switch rng.IntN(8) {
		case 0:
			if n > 1 {
				h[rng.IntN(n)].Location = h[rng.IntN(n)].Location // a location twice
			}
		case 1:
			rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		case 2:
			if n > 0 {
				h[rng.IntN(n)].Location = ""
			}
		}
		opts := RetentionOptions{MaxCount: rng.IntN(n + 2), MaxAge: time.Duration(rng.IntN(n+2)) * time.Minute,
			DisposeUpdate: rng.IntN(2) == 0, DisposeUser: rng.IntN(2) == 0}
		if n > 0 && rng.IntN(2) == 0 {
			opts.InUse = []string{h[rng.IntN(n)].Location}
		}
		now := at(time.Duration(rng.IntN(2*n+1)) * time.Minute)
		want := chooseSorting(h, opts, newLocationSet(opts.InUse), now)
		if got := ChooseDisposals(h, opts, now); !slices.Equal(want, got) {
			t.Fatalf("case %d: (-sorting +got):\n%s", c, cmp.Diff(want, got))
		}
	}
}

// TestRecordSize keeps a Record, which every History operation copies,
// from growing: 80 bytes on 64-bit platforms (Location 16, Time 24,
// Reason 16, JobID 16, the pointer to its RecordExtra 8), where the
// delete choice and the failed disposals that few records have took 88
// more in the Record itself.
func TestRecordSize(t *testing.T) {
	if s := unsafe.Sizeof(Record{}); s > 80 {
		t.Errorf("a Record takes %d bytes, want at most 80", s)
	}
}

// TestIndexedHistoryConcurrentAdds adds to one long History from several
// goroutines at once (a History is a value: reading it concurrently is
// safe): each gets h with its own record, and h stays as it was.
func TestIndexedHistoryConcurrentAdds(t *testing.T) {
	var h History
	for i := range 100 {
		h = h.Add(Record{Location: fmt.Sprintf("s3://b/sp-%05d", i), Time: at(time.Duration(i) * time.Minute)})
	}
	before := slices.Clone(h.Records)
	got := make([]History, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			got[g] = h.Add(Record{Location: fmt.Sprintf("s3://b/g-%d", g), Time: at(200 * time.Minute)})
		})
	}
	wg.Wait()
	for g, hg := range got {
		if n := len(hg.Records); n != 101 || hg.Records[n-1].Location != fmt.Sprintf("s3://b/g-%d", g) || !slices.Equal(hg.Records[:100], before) {
			t.Errorf("goroutine %d: %d records, newest %v", g, n, hg.Records[n-1])
		}
	}
	if !slices.Equal(h.Records, before) {
		t.Error("h changed")
	}
}
