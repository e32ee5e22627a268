package savepoint

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Add of several records gives what successive Adds of one give, for
// histories in time order and out of it, with repeated locations and
// records without one.
func TestAddManyIsSuccessiveAdds(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	rec := func() Record {
		loc := ""
		if rng.Intn(8) > 0 {
			loc = fmt.Sprintf("file:/sp/%d", rng.Intn(20))
		}
		return Record{Location: loc, Time: at(time.Duration(rng.Intn(10)) * time.Minute), Reason: ReasonScheduled}
	}
	for i := range 2000 {
		var h History
		for range rng.Intn(12) {
			h.Records = append(h.Records, rec())
		}
		if i%2 == 0 {
			h = History{}.Add(h.Records...)
		}
		rs := make([]Record, rng.Intn(12))
		for k := range rs {
			rs[k] = rec()
		}
		want := h
		for _, r := range rs {
			want = want.Add(r)
		}
		if len(rs) == 0 {
			want = History{FormatVersion: FormatVersion, Records: slices.Clone(h.Records)}
		}
		before := slices.Clone(h.Records)
		got := h.Add(rs...)
		if diff := cmp.Diff(want.Records, got.Records, cmp.Comparer(func(a, b []Record) bool { return slices.Equal(a, b) || len(a) == 0 && len(b) == 0 })); diff != "" {
			t.Fatalf("case %d: Add(%v) on %v: (-successive +many)\n%s", i, rs, h.Records, diff)
		}
		if !slices.Equal(before, h.Records) {
			t.Fatalf("case %d: h was modified", i)
		}
	}
}

func scaleRecords(n int) []Record {
	reasons := []Reason{ReasonScheduled, ReasonScheduled, ReasonScheduled, ReasonUpdate, ReasonUser, ReasonStop}
	h := make([]Record, n)
	for i := range h {
		h[i] = Record{Location: fmt.Sprintf("s3://bucket/savepoints/savepoint-%06d", i), Time: at(time.Duration(i) * time.Minute), Reason: reasons[i%len(reasons)], JobID: job}
	}
	return h
}

var sinkHistory History

// BenchmarkHistoryScale measures History and retention at 10, 1,000 and
// 10,000 records, each against the simplest hand-written way
// (impl=hand): append and sort.Slice, a filter through a map, sort by
// time and keep the newest MaxCount.
//
//	go test -run '^$' -bench HistoryScale -benchmem -count 8 ./savepoint | benchstat -col /impl -
func BenchmarkHistoryScale(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		recs := scaleRecords(n)
		full := History{}.Add(recs...)
		locs := make([]string, 0, n/2)
		for i := 0; i < n; i += 2 {
			locs = append(locs, recs[i].Location)
		}
		next := Record{Location: "s3://bucket/savepoints/new", Time: at(time.Duration(n) * time.Minute), Reason: ReasonScheduled, JobID: job}
		b.Run(fmt.Sprintf("op=build/n=%d/impl=hand", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out []Record
				out = append(out, recs...)
				slices.SortFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
				sinkRecords = out
			}
		})
		b.Run(fmt.Sprintf("op=build/n=%d/impl=savepoint", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkHistory = History{}.Add(recs...)
			}
		})
		b.Run(fmt.Sprintf("op=addone/n=%d/impl=hand", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := make([]Record, 0, n+1)
				for _, e := range full.Records {
					if e.Location != next.Location {
						out = append(out, e)
					}
				}
				sinkRecords = append(out, next)
			}
		})
		b.Run(fmt.Sprintf("op=addone/n=%d/impl=savepoint", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkHistory = full.Add(next)
			}
		})
		b.Run(fmt.Sprintf("op=remove/n=%d/impl=hand", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				drop := make(map[string]bool, len(locs))
				for _, l := range locs {
					drop[l] = true
				}
				var out []Record
				for _, e := range full.Records {
					if !drop[e.Location] {
						out = append(out, e)
					}
				}
				sinkRecords = out
			}
		})
		b.Run(fmt.Sprintf("op=remove/n=%d/impl=savepoint", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkHistory = full.Remove(locs...)
			}
		})
		opts := RetentionOptions{MaxCount: n / 10, MaxAge: time.Duration(n/2) * time.Minute, InUse: locs[:len(locs)/10], DisposeUpdate: true, DisposeUser: true}
		now := at(time.Duration(n) * time.Minute)
		b.Run(fmt.Sprintf("op=choose/n=%d/impl=hand", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				inUse := make(map[string]bool, len(opts.InUse))
				for _, l := range opts.InUse {
					inUse[l] = true
				}
				sorted := slices.Clone(full.Records)
				slices.SortFunc(sorted, func(a, b Record) int { return b.Time.Compare(a.Time) })
				var out []Record
				for i, r := range sorted {
					if i > 0 && !inUse[r.Location] && (i >= opts.MaxCount || now.Sub(r.Time) > opts.MaxAge) {
						out = append(out, r)
					}
				}
				sinkRecords = out
			}
		})
		b.Run(fmt.Sprintf("op=choose/n=%d/impl=savepoint", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkRecords = ChooseDisposals(full.Records, opts, now)
			}
		})
	}
}
