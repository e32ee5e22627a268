package savepoint

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rec returns a record h hours after t0 at location "sp-<name>".
func rec(name string, h int, reason Reason) Record {
	return Record{Location: "sp-" + name, Time: at(time.Duration(h) * time.Hour), Reason: reason, JobID: job}
}

func TestHistory(t *testing.T) {
	var h History
	h = h.Add(rec("b", 2, ReasonScheduled))
	h = h.Add(rec("a", 1, ReasonScheduled))
	h = h.Add(rec("d", 4, ReasonUpdate))
	h = h.Add(rec("c", 2, ReasonScheduled))
	h = h.Add(Record{Time: t0}) // no location: not added
	want := History{FormatVersion, []Record{rec("a", 1, ReasonScheduled), rec("b", 2, ReasonScheduled), rec("c", 2, ReasonScheduled), rec("d", 4, ReasonUpdate)}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}

	again := h.Add(rec("a", 5, ReasonUser)) // same location: replaced, moved
	want2 := History{FormatVersion, []Record{rec("b", 2, ReasonScheduled), rec("c", 2, ReasonScheduled), rec("d", 4, ReasonUpdate), rec("a", 5, ReasonUser)}}
	if diff := cmp.Diff(want2, again); diff != "" {
		t.Errorf("Add of a known location (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("Add modified its receiver (-want +got):\n%s", diff)
	}

	if latest, ok := h.Latest(); !ok || latest != rec("d", 4, ReasonUpdate) {
		t.Errorf("Latest = %v, %v", latest, ok)
	}
	if _, ok := (History{}).Latest(); ok {
		t.Error("Latest of an empty History is ok")
	}

	removed := h.Remove("sp-b", "sp-d", "sp-unknown")
	if diff := cmp.Diff(History{FormatVersion, []Record{rec("a", 1, ReasonScheduled), rec("c", 2, ReasonScheduled)}}, removed); diff != "" {
		t.Errorf("Remove (-want +got):\n%s", diff)
	}
	if len(h.Records) != 4 {
		t.Error("Remove modified its receiver")
	}
	if got := (History{Records: []Record{rec("a", 1, ReasonScheduled)}}).Remove(); got.FormatVersion != FormatVersion {
		t.Errorf("Remove of a History read from the legacy form: FormatVersion %d, want %d", got.FormatVersion, FormatVersion)
	}
}

func TestChooseDisposals(t *testing.T) {
	now := at(100 * time.Hour)
	s := ReasonScheduled
	h := []Record{
		rec("1", 1, s), rec("2", 2, ReasonUpdate), rec("3", 3, ReasonUser), rec("4", 4, s),
		rec("5", 5, ReasonStop), rec("6", 6, s), rec("7", 7, s),
	}
	tests := []struct {
		name string
		h    []Record
		opts RetentionOptions
		want []Record
	}{
		{"no limits: nothing", h, RetentionOptions{}, nil},
		{"max count: the oldest that may go", h, RetentionOptions{MaxCount: 4},
			[]Record{rec("1", 1, s), rec("4", 4, s), rec("5", 5, ReasonStop)}},
		{"max count 1: everything but the newest and protected", h, RetentionOptions{MaxCount: 1},
			[]Record{rec("1", 1, s), rec("4", 4, s), rec("5", 5, ReasonStop), rec("6", 6, s)}},
		{"max count with updates and user savepoints allowed", h, RetentionOptions{MaxCount: 4, DisposeUpdate: true, DisposeUser: true},
			[]Record{rec("1", 1, s), rec("2", 2, ReasonUpdate), rec("3", 3, ReasonUser)}},
		{"max count above the size: nothing", h, RetentionOptions{MaxCount: 7}, nil},
		{"max age", h, RetentionOptions{MaxAge: 95*time.Hour + time.Minute},
			[]Record{rec("1", 1, s), rec("4", 4, s)}},
		{"max age exactly: kept", h, RetentionOptions{MaxAge: 96 * time.Hour},
			[]Record{rec("1", 1, s)}},
		{"max age: never the newest", h, RetentionOptions{MaxAge: time.Minute},
			[]Record{rec("1", 1, s), rec("4", 4, s), rec("5", 5, ReasonStop), rec("6", 6, s)}},
		{"in use: kept", h, RetentionOptions{MaxAge: time.Minute, InUse: []string{"sp-4", "sp-unknown"}},
			[]Record{rec("1", 1, s), rec("5", 5, ReasonStop), rec("6", 6, s)}},
		{"age and count together", h, RetentionOptions{MaxAge: 95*time.Hour + time.Minute, MaxCount: 4},
			[]Record{rec("1", 1, s), rec("4", 4, s), rec("5", 5, ReasonStop)}},
		{"unsorted input: same choice, oldest first",
			[]Record{rec("7", 7, s), rec("4", 4, s), rec("1", 1, s), rec("6", 6, s)}, RetentionOptions{MaxCount: 2},
			[]Record{rec("1", 1, s), rec("4", 4, s)}},
		{"several newest: all kept",
			[]Record{rec("a", 1, s), rec("c", 7, s), rec("b", 7, s)}, RetentionOptions{MaxCount: 1},
			[]Record{rec("a", 1, s)}},
		{"equal times: ordered by location",
			[]Record{rec("b", 1, s), rec("a", 1, s), rec("z", 9, s)}, RetentionOptions{MaxCount: 1},
			[]Record{rec("a", 1, s), rec("b", 1, s)}},
		{"a location listed twice counts once, by its newest entry",
			[]Record{rec("a", 1, s), rec("x", 2, s), rec("a", 3, s), rec("z", 9, s)}, RetentionOptions{MaxCount: 2},
			[]Record{rec("x", 2, s)}},
		{"a duplicate of the newest is never chosen",
			[]Record{rec("a", 1, s), {Location: "sp-z", Time: at(time.Hour), Reason: s}, rec("z", 9, s)}, RetentionOptions{MaxCount: 1},
			[]Record{rec("a", 1, s)}},
		{"a duplicate of a protected one is kept",
			[]Record{rec("u", 1, s), rec("u", 2, ReasonUpdate), rec("x", 3, s), rec("z", 9, s)}, RetentionOptions{MaxCount: 1},
			[]Record{rec("x", 3, s)}},
		{"entries without location or time are ignored",
			[]Record{{Time: at(time.Hour)}, {Location: "sp-notime"}, rec("a", 1, s), rec("z", 9, s)}, RetentionOptions{MaxCount: 1},
			[]Record{rec("a", 1, s)}},
		{"empty", nil, RetentionOptions{MaxCount: 1}, nil},
		{"one", []Record{rec("a", 1, s)}, RetentionOptions{MaxCount: 1, MaxAge: time.Nanosecond}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.h)
			got := ChooseDisposals(tt.h, tt.opts, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ChooseDisposals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.h); diff != "" {
				t.Errorf("ChooseDisposals modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

// TestChooseDisposalsProperties checks the rules on random histories.
func TestChooseDisposalsProperties(t *testing.T) {
	reasons := []Reason{ReasonUser, ReasonScheduled, ReasonUpdate, ReasonStop, ReasonDelete, ReasonRestart}
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 42))
		n := rng.IntN(40)
		h := make([]Record, n)
		for i := range h {
			h[i] = Record{
				Location: fmt.Sprintf("sp-%d", rng.IntN(50)),
				Time:     at(time.Duration(rng.IntN(200)) * time.Hour),
				Reason:   reasons[rng.IntN(len(reasons))],
			}
		}
		opts := RetentionOptions{
			MaxCount:      rng.IntN(10) - 1,
			MaxAge:        time.Duration(rng.IntN(200)-10) * time.Hour,
			DisposeUpdate: rng.IntN(2) == 0,
			DisposeUser:   rng.IntN(2) == 0,
		}
		for range rng.IntN(3) {
			opts.InUse = append(opts.InUse, fmt.Sprintf("sp-%d", rng.IntN(50)))
		}
		now := at(200 * time.Hour)
		got := ChooseDisposals(h, opts, now)
		if diff := cmp.Diff(got, ChooseDisposals(h, opts, now)); diff != "" {
			t.Fatalf("seed %d: not deterministic:\n%s", seed, diff)
		}
		if shuffled := shuffle(rng, h); !cmp.Equal(got, ChooseDisposals(shuffled, opts, now)) {
			t.Fatalf("seed %d: the order of the history changed the choice", seed)
		}
		var newest time.Time
		for _, r := range h {
			if r.Time.After(newest) {
				newest = r.Time
			}
		}
		seen := map[string]bool{}
		for i, d := range got {
			if seen[d.Location] {
				t.Fatalf("seed %d: %s chosen twice", seed, d.Location)
			}
			seen[d.Location] = true
			if i > 0 && compareRecords(got[i-1], d) > 0 {
				t.Fatalf("seed %d: not oldest first: %v", seed, got)
			}
			if slices.Contains(opts.InUse, d.Location) {
				t.Fatalf("seed %d: %s is in use", seed, d.Location)
			}
			for _, r := range h {
				if r.Location != d.Location {
					continue
				}
				if r.Time.Equal(newest) {
					t.Fatalf("seed %d: %s is (a copy of) the newest", seed, d.Location)
				}
				if r.Reason == ReasonUpdate && !opts.DisposeUpdate || r.Reason == ReasonUser && !opts.DisposeUser {
					t.Fatalf("seed %d: %s has a protected reason %s", seed, d.Location, r.Reason)
				}
			}
		}
	}
}

func shuffle(rng *rand.Rand, h []Record) []Record {
	s := slices.Clone(h)
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// TestChooseDisposalsFailedDisposals: a savepoint whose disposal failed is
// chosen again only once it may be retried and was not given up, and
// meanwhile no other savepoint is disposed of in its place.
func TestChooseDisposalsFailedDisposals(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	h := []Record{rec("a", 1, ReasonScheduled), rec("b", 2, ReasonScheduled), rec("c", 3, ReasonScheduled), rec("d", 4, ReasonScheduled)}
	opts := RetentionOptions{MaxCount: 2}
	if got := names(ChooseDisposals(h, opts, now)); got != "a b" {
		t.Fatalf("no failure: chose %q, want a b", got)
	}
	h[0].SetDisposal(Disposal{Attempts: 1, Error: DisposalUnreachable, RetryAt: now.Add(time.Minute)})
	if got := names(ChooseDisposals(h, opts, now)); got != "b" {
		t.Errorf("a waits for its retry: chose %q, want b alone (c is not disposed of in a's place)", got)
	}
	if got := names(ChooseDisposals(h, opts, now.Add(time.Minute))); got != "a b" {
		t.Errorf("a's retry time came: chose %q, want a b", got)
	}
	h[0].SetDisposal(Disposal{Attempts: 1, Error: DisposalUnreachable, RetryAt: now.Add(time.Minute), GaveUp: true})
	if got := names(ChooseDisposals(h, opts, now.Add(time.Hour))); got != "b" {
		t.Errorf("a was given up: chose %q, want b", got)
	}
	// A policy that keeps a now keeps it, failed or not, and counts it.
	if got := names(ChooseDisposals(h, RetentionOptions{MaxCount: 4}, now.Add(time.Hour))); got != "" {
		t.Errorf("MaxCount 4 of 4: chose %q, want none", got)
	}
	h[3].Reason = ReasonImported
	h[0].SetDisposal(Disposal{})
	if got := names(ChooseDisposals(h, RetentionOptions{MaxCount: 1}, now)); got != "a b c" {
		t.Errorf("imported newest: chose %q, want a b c (the newest is kept anyway)", got)
	}
	h[0].Reason = ReasonImported
	if got := names(ChooseDisposals(h, RetentionOptions{MaxCount: 1}, now)); got != "b c" {
		t.Errorf("imported oldest: chose %q, want b c (imported kept unless DisposeUser)", got)
	}
	if got := names(ChooseDisposals(h, RetentionOptions{MaxCount: 1, DisposeUser: true}, now)); got != "a b c" {
		t.Errorf("imported oldest with DisposeUser: chose %q, want a b c", got)
	}
}

func names(rs []Record) string {
	var out []string
	for _, r := range rs {
		out = append(out, strings.TrimPrefix(r.Location, "sp-"))
	}
	return strings.Join(out, " ")
}
