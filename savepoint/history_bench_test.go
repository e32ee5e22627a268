package savepoint

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// benchRecords are n periodic savepoints, 10 minutes apart, oldest first.
func benchRecords(n int) []Record {
	rs := make([]Record, n)
	for i := range rs {
		rs[i] = Record{Location: fmt.Sprintf("s3://bucket/savepoints/savepoint-a1b2c3-%012d", i),
			Time: at(time.Duration(i) * 10 * time.Minute), Reason: ReasonScheduled, JobID: job}
	}
	return rs
}

// handWritten is the baseline of BenchmarkHistory: what a user keeping
// the savepoints of a job would write by hand, a slice they own and
// change in place, scanned for a location and sorted when a savepoint
// arrives out of order.
type handWritten []Record

func (h handWritten) add(r Record) handWritten {
	if i := slices.IndexFunc(h, func(e Record) bool { return e.Location == r.Location }); i >= 0 {
		h[i] = r
	} else {
		h = append(h, r)
	}
	if n := len(h); n > 1 && compareRecords(h[n-2], h[n-1]) > 0 {
		slices.SortFunc(h, compareRecords)
	}
	return h
}

// choose is the hand-written retention: the oldest beyond maxCount and
// those older than maxAge, never the newest nor one of the reasons kept.
func (h handWritten) choose(maxCount int, maxAge time.Duration, now time.Time) []Record {
	var out []Record
	kept := len(h)
	for i, r := range h[:max(len(h)-1, 0)] {
		if r.Reason == ReasonUpdate || r.Reason == ReasonUser || r.Reason == ReasonImported {
			continue
		}
		if maxCount > 0 && kept > maxCount || maxAge > 0 && now.Sub(r.Time) > maxAge {
			out = append(out, h[i])
			kept--
		}
	}
	return out
}

var (
	sinkHand   handWritten
	sinkRecord Record
)

// BenchmarkHistory measures what a controller does with a job's History,
// at n records, against the hand-written baseline (impl=slice):
//
//   - op=build: n savepoints added one per call, each followed by
//     Latest (ns/op is for all n).
//   - op=savepoint: one periodic savepoint at steady state: Add the
//     newest, choose the disposals (MaxCount n), Remove the one chosen,
//     Latest.
//   - op=poll: the retention check of a poll that finds nothing to
//     dispose of (ChooseDisposals); impl=decoded is a History as decoded
//     from a stored status (or deep-copied), which Add did not return.
func BenchmarkHistory(b *testing.B) {
	for _, op := range []string{"build", "savepoint", "poll"} {
		for _, n := range []int{10, 1000, 10000} {
			for _, impl := range []string{"history", "decoded", "slice"} {
				if impl == "decoded" && op != "poll" {
					continue
				}
				b.Run(fmt.Sprintf("op=%s/n=%d/impl=%s", op, n, impl), func(b *testing.B) {
					benchHistory(b, op, n, impl)
				})
			}
		}
	}
}

func benchHistory(b *testing.B, op string, n int, impl string) {
	rs := benchRecords(2 * n)
	switch op {
	case "build":
		b.ReportAllocs()
		for b.Loop() {
			if impl == "slice" {
				var h handWritten
				for _, r := range rs[:n] {
					h = h.add(r)
					sinkRecord = h[len(h)-1]
				}
				sinkHand = h
				continue
			}
			var h History
			for _, r := range rs[:n] {
				h = h.Add(r)
				sinkRecord, _ = h.Latest()
			}
			sinkHistory = h
		}
	case "savepoint":
		opts := RetentionOptions{MaxCount: n}
		var h History
		for _, r := range rs[:n] {
			h = h.Add(r)
		}
		hand := handWritten(slices.Clone(rs[:n]))
		next := n
		b.ReportAllocs()
		for b.Loop() {
			// The next savepoint, 10 minutes after the newest.
			r := rs[next%len(rs)]
			r.Time = at(time.Duration(next) * 10 * time.Minute)
			next++
			if impl == "slice" {
				hand = hand.add(r)
				if chosen := hand.choose(n, 0, r.Time); len(chosen) > 0 {
					hand = hand[len(chosen):] // the oldest
				}
				sinkRecord = hand[len(hand)-1]
				continue
			}
			h = h.Add(r)
			if chosen := ChooseDisposals(h.Records, opts, r.Time); len(chosen) > 0 {
				locs := make([]string, len(chosen))
				for i, c := range chosen {
					locs[i] = c.Location
				}
				h = h.Remove(locs...)
			}
			sinkRecord, _ = h.Latest()
		}
		if impl != "slice" && len(h.Records) != n {
			b.Fatalf("%d records, want %d", len(h.Records), n)
		}
	case "poll":
		opts := RetentionOptions{MaxCount: n, MaxAge: 30 * 24 * time.Hour * time.Duration(max(1, n/1000))}
		now := rs[n-1].Time.Add(time.Minute)
		var h History
		for _, r := range rs[:n] {
			h = h.Add(r)
		}
		if impl == "decoded" {
			h = *h.DeepCopy()
		}
		hand := handWritten(slices.Clone(rs[:n]))
		b.ReportAllocs()
		for b.Loop() {
			if impl == "slice" {
				sinkRecords = hand.choose(n, opts.MaxAge, now)
			} else {
				sinkRecords = ChooseDisposals(h.Records, opts, now)
			}
			if len(sinkRecords) != 0 {
				b.Fatalf("%d chosen, want none", len(sinkRecords))
			}
		}
	}
}

var sinkJSON []byte

// BenchmarkHistoryJSON measures writing and reading a History of n
// periodic savepoints of one job as a stored status holds it (op=encode,
// op=decode), and reports the bytes written (B/history).
func BenchmarkHistoryJSON(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		h := History{}.Add(benchRecords(n)...)
		data, err := json.Marshal(h)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("op=encode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkJSON, _ = json.Marshal(h)
			}
			b.ReportMetric(float64(len(data)), "B/history")
		})
		b.Run(fmt.Sprintf("op=decode/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var back History
				if err := json.Unmarshal(data, &back); err != nil || len(back.Records) != n {
					b.Fatalf("%d records, %v", len(back.Records), err)
				}
				sinkHistory = back
			}
		})
	}
}
