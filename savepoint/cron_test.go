package savepoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tests, whatever the machine has
)

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseCronErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":                     "0 fields",
		"* * * *":              "4 fields",
		"* * * * * *":          "6 fields",
		"@every 1h":            "unknown shorthand",
		"60 * * * *":           "minute field \"60\": 60 is out of range 0-59",
		"* 24 * * *":           "hour field",
		"* * 0 * *":            "day of month field",
		"* * * 13 *":           "month field",
		"* * * * 8":            "day of week field",
		"* * * FOO *":          "neither a number from 1 to 12 nor a name (JAN-DEC)",
		"5-1 * * * *":          "runs backwards",
		"*/0 * * * *":          "step \"0\"",
		"*/x * * * *":          "step \"x\"",
		"1,,2 * * * *":         "empty list element",
		"? * * * *":            "? stands only in the day fields",
		"0 0 30 2 *":           "never occurs in month",
		"0 0 31 APR,JUN,SEP *": "never occurs in month",
		"-1 * * * *":           "minute field",
		"+1 * * * *":           "minute field",
	} {
		_, err := ParseCron(expr, nil)
		if err == nil || !errors.Is(err, ErrInvalidCron) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCron(%q) = %v, want an ErrInvalidCron naming %q", expr, err, want)
		}
	}
	if _, err := ParseCron(strings.Repeat("1,", 200)+"1 * * * *", nil); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a long expression: %v", err)
	}
}

// TestCronNext is a table of schedules and the times they run next.
func TestCronNext(t *testing.T) {
	berlin, ny := mustLoad(t, "Europe/Berlin"), mustLoad(t, "America/New_York")
	at := func(loc *time.Location, s string) time.Time {
		t.Helper()
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		expr     string
		loc      *time.Location
		from     string
		want     []string // the next runs, in order, as wall times with their zone offset
		wantZone []int    // offsets in hours, when they matter
	}{
		{expr: "@hourly", loc: time.UTC, from: "2026-01-01 10:05:00", want: []string{"2026-01-01 11:00:00", "2026-01-01 12:00:00"}},
		{expr: "@daily", loc: time.UTC, from: "2026-01-01 00:00:00", want: []string{"2026-01-02 00:00:00", "2026-01-03 00:00:00"}},
		{expr: "@midnight", loc: time.UTC, from: "2026-01-01 23:59:59", want: []string{"2026-01-02 00:00:00"}},
		{expr: "@weekly", loc: time.UTC, from: "2026-01-01 00:00:00", want: []string{"2026-01-04 00:00:00", "2026-01-11 00:00:00"}}, // Sundays
		{expr: "@monthly", loc: time.UTC, from: "2026-01-31 12:00:00", want: []string{"2026-02-01 00:00:00", "2026-03-01 00:00:00"}},
		{expr: "@yearly", loc: time.UTC, from: "2026-06-01 00:00:00", want: []string{"2027-01-01 00:00:00"}},
		{expr: "@ANNUALLY", loc: time.UTC, from: "2026-06-01 00:00:00", want: []string{"2027-01-01 00:00:00"}},
		{expr: "*/15 * * * *", loc: time.UTC, from: "2026-01-01 10:07:30", want: []string{"2026-01-01 10:15:00", "2026-01-01 10:30:00", "2026-01-01 10:45:00", "2026-01-01 11:00:00"}},
		{expr: "5/20 * * * *", loc: time.UTC, from: "2026-01-01 10:00:00", want: []string{"2026-01-01 10:05:00", "2026-01-01 10:25:00", "2026-01-01 10:45:00", "2026-01-01 11:05:00"}},
		{expr: "0 9-17/4 * * MON-FRI", loc: time.UTC, from: "2026-01-02 14:00:00", want: []string{"2026-01-02 17:00:00", "2026-01-05 09:00:00"}}, // Friday, then Monday
		{expr: "30 2 * * 7", loc: time.UTC, from: "2026-01-01 00:00:00", want: []string{"2026-01-04 02:30:00"}},                                  // 7 is Sunday
		{expr: "0 0 29 2 *", loc: time.UTC, from: "2026-01-01 00:00:00", want: []string{"2028-02-29 00:00:00", "2032-02-29 00:00:00"}},
		{expr: "0 0 29 2 *", loc: time.UTC, from: "2096-03-01 00:00:00", want: []string{"2104-02-29 00:00:00"}}, // 2100 is no leap year
		// Both day fields restricted: either matches (the 13th, or a Friday).
		{expr: "0 0 13 * FRI", loc: time.UTC, from: "2026-02-01 00:00:00", want: []string{"2026-02-06 00:00:00", "2026-02-13 00:00:00", "2026-02-20 00:00:00"}},
		// One of them *: both must match (every day of the 13th-15th that is a Friday... * makes dow decide with dom).
		{expr: "0 0 * * FRI", loc: time.UTC, from: "2026-02-01 00:00:00", want: []string{"2026-02-06 00:00:00", "2026-02-13 00:00:00"}},
		{expr: "0 12 1 jan,jul *", loc: time.UTC, from: "2026-03-01 00:00:00", want: []string{"2026-07-01 12:00:00", "2027-01-01 12:00:00"}},
		// Zones: the wall clock of the zone.
		{expr: "0 3 * * *", loc: berlin, from: "2026-01-01 04:00:00", want: []string{"2026-01-02 03:00:00"}, wantZone: []int{1}},
		// Spring forward (Berlin, 29 March 2026, 02:00 -> 03:00): 02:30 runs at 03:00, once.
		{expr: "30 2 * * *", loc: berlin, from: "2026-03-28 12:00:00", want: []string{"2026-03-29 03:00:00", "2026-03-30 02:30:00"}, wantZone: []int{2, 2}},
		{expr: "*/20 * * * *", loc: berlin, from: "2026-03-29 01:30:00", want: []string{"2026-03-29 01:40:00", "2026-03-29 03:00:00", "2026-03-29 03:20:00"}, wantZone: []int{1, 2, 2}},
		// Fall back (Berlin, 25 October 2026, 03:00 -> 02:00): 02:30 runs at its first occurrence only.
		{expr: "30 2 * * *", loc: berlin, from: "2026-10-24 12:00:00", want: []string{"2026-10-25 02:30:00", "2026-10-26 02:30:00"}, wantZone: []int{2, 1}},
		{expr: "0 * * * *", loc: berlin, from: "2026-10-25 01:30:00", want: []string{"2026-10-25 02:00:00", "2026-10-25 03:00:00"}, wantZone: []int{2, 1}},
		// New York, spring forward at 02:00 on 8 March 2026.
		{expr: "0 2 * * *", loc: ny, from: "2026-03-07 12:00:00", want: []string{"2026-03-08 03:00:00", "2026-03-09 02:00:00"}, wantZone: []int{-4, -4}},
	} {
		c, err := ParseCron(tc.expr, tc.loc)
		if err != nil {
			t.Errorf("ParseCron(%q): %v", tc.expr, err)
			continue
		}
		if c.String() != tc.expr || c.location() != tc.loc || c.IsZero() {
			t.Errorf("%q: String %q, Location %v", tc.expr, c.String(), c.location())
		}
		from := at(tc.loc, tc.from)
		for i, w := range tc.want {
			got := c.Next(from)
			if got.Format("2006-01-02 15:04:05") != w || got.Location() != tc.loc {
				t.Errorf("%q in %v: run %d after %v = %v, want %s", tc.expr, tc.loc, i+1, from, got, w)
				break
			}
			if i < len(tc.wantZone) {
				if _, off := got.Zone(); off != tc.wantZone[i]*3600 {
					t.Errorf("%q: run %d %v has offset %ds, want %dh", tc.expr, i+1, got, off, tc.wantZone[i])
				}
			}
			from = got
		}
	}
	if !(Cron{}).Next(time.Now()).IsZero() || !(Cron{}).IsZero() {
		t.Error("the zero Cron runs")
	}
}

// oracleNext finds the next run after t by walking the instants minute by
// minute, within horizon: an instant runs if its wall clock matches and
// the same wall clock did not occur earlier (clocks set back), or if the
// clocks jumped forward over a matching wall time just before it.
func oracleNext(c Cron, t time.Time, horizon time.Duration) (time.Time, bool) {
	u := t.Truncate(time.Minute).Add(time.Minute)
	matches := func(w time.Time) bool {
		return c.minute&(1<<uint(w.Minute())) != 0 && c.hour&(1<<uint(w.Hour())) != 0 &&
			c.month&(1<<uint(w.Month())) != 0 && c.dayMatches(w.Day(), int(w.Weekday()))
	}
	wallOf := func(x time.Time) time.Time {
		l := x.In(c.loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
	}
	for ; !u.After(t.Add(horizon)); u = u.Add(time.Minute) {
		w := wallOf(u)
		if matches(w) {
			repeated := false
			for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
				if wallOf(u.Add(-d)).Equal(w) {
					repeated = true
				}
			}
			if !repeated {
				return u.In(c.loc), true
			}
		}
		// A jump forward just before u: the wall times skipped run at u.
		prev := wallOf(u.Add(-time.Minute))
		for g := prev.Add(time.Minute); g.Before(w); g = g.Add(time.Minute) {
			if matches(g) {
				return u.In(c.loc), true
			}
		}
	}
	return time.Time{}, false
}

// randomCron builds a random expression whose runs are frequent enough for
// the oracle's horizon.
func randomCron(r *rand.Rand) string {
	field := func(min, max int, names []string) string {
		switch r.IntN(6) {
		case 0:
			return "*"
		case 1:
			return fmt.Sprintf("*/%d", 1+r.IntN(max-min))
		case 2:
			a := min + r.IntN(max-min+1)
			return fmt.Sprintf("%d-%d", a, a+r.IntN(max-a+1))
		case 3:
			var parts []string
			for range 1 + r.IntN(3) {
				parts = append(parts, fmt.Sprint(min+r.IntN(max-min+1)))
			}
			return strings.Join(parts, ",")
		case 4:
			if names != nil {
				return names[r.IntN(len(names))]
			}
			return fmt.Sprintf("%d/%d", min+r.IntN(max-min+1), 1+r.IntN(max-min))
		}
		return fmt.Sprint(min + r.IntN(max-min+1))
	}
	days := []string{"MON", "tue", "Wed", "THU", "fri", "SAT", "sun"}
	dom, month := "*", "*"
	if r.IntN(4) == 0 {
		dom = field(1, 28, nil)
	}
	return strings.Join([]string{field(0, 59, nil), field(0, 23, nil), dom, month, field(0, 7, days)}, " ")
}

// TestCronProperties checks Next against the minute-by-minute oracle and
// its own properties (after t, no run skipped, monotone) for random
// schedules, times and zones with and without daylight saving time,
// around their transitions.
func TestCronProperties(t *testing.T) {
	zones := []*time.Location{time.UTC, mustLoad(t, "Europe/Berlin"), mustLoad(t, "America/New_York"),
		mustLoad(t, "Australia/Lord_Howe"), mustLoad(t, "Asia/Kolkata"), mustLoad(t, "Pacific/Chatham")}
	// Transitions of 2026 and 2027 in those zones, so that half the cases
	// start within a day of one.
	near := map[*time.Location][]time.Time{}
	for _, loc := range zones {
		for x := time.Date(2026, 1, 1, 0, 0, 0, 0, loc); x.Year() < 2028; {
			_, end := x.ZoneBounds()
			if end.IsZero() {
				break
			}
			near[loc] = append(near[loc], end)
			x = end
		}
	}
	r := rand.New(rand.NewPCG(22, 3))
	n := 200
	if testing.Short() {
		n = 50
	}
	const horizon = 4 * 24 * time.Hour
	for i := range n {
		expr := randomCron(r)
		loc := zones[r.IntN(len(zones))]
		c, err := ParseCron(expr, loc)
		if err != nil {
			t.Fatalf("ParseCron(%q): %v", expr, err)
		}
		var from time.Time
		if ts := near[loc]; i%2 == 0 && len(ts) > 0 {
			from = ts[r.IntN(len(ts))].Add(time.Duration(r.Int64N(int64(48*time.Hour))) - 24*time.Hour)
		} else {
			from = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(2 * 365 * 24 * time.Hour))))
		}
		from = from.Add(time.Duration(r.IntN(60)) * time.Second)
		got := c.Next(from)
		want, ok := oracleNext(c, from, horizon)
		switch {
		case ok && !got.Equal(want):
			t.Fatalf("%q in %v after %v: Next = %v, oracle %v", expr, loc, from, got, want)
		case !ok && !got.After(from.Add(horizon)):
			t.Fatalf("%q in %v after %v: Next = %v, the oracle found none within %v", expr, loc, from, got, horizon)
		case !got.After(from):
			t.Fatalf("%q: Next(%v) = %v, not after it", expr, from, got)
		}
		// No run between from and got; monotone.
		if again := c.Next(got.Add(-time.Second)); !again.Equal(got) && got.Sub(from) > time.Second {
			t.Fatalf("%q: Next(%v) = %v but Next(%v - 1s) = %v", expr, from, got, got, again)
		}
		later := from.Add(time.Duration(r.Int64N(int64(time.Hour))))
		if l := c.Next(later); l.Before(got) {
			t.Fatalf("%q: Next(%v) = %v is before Next(%v) = %v", expr, later, l, from, got)
		}
	}
}

func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"@hourly", "*/15 * * * *", "0 9-17/4 * * MON-FRI", "5/20 1,2 ? JAN-jun 7", "0 0 30 2 *", "* * * * * *", "1-", "-", "*/", ",", "@"} {
		f.Add(s, int64(1_780_000_000), uint8(0))
	}
	zones := []*time.Location{time.UTC, mustLoad(f, "Europe/Berlin"), mustLoad(f, "Australia/Lord_Howe")}
	f.Fuzz(func(t *testing.T, expr string, unix int64, zone uint8) {
		loc := zones[int(zone)%len(zones)]
		c, err := ParseCron(expr, loc)
		if err != nil {
			if !errors.Is(err, ErrInvalidCron) || err.Error() == "" {
				t.Fatalf("ParseCron(%q): %v", expr, err)
			}
			return
		}
		from := time.Unix(unix%(4_000_000_000), 0)
		next := c.Next(from)
		if next.IsZero() || !next.After(from) {
			t.Fatalf("%q: Next(%v) = %v", expr, from, next)
		}
		if again, err := ParseCron(c.String(), loc); err != nil || again.Next(from) != next {
			t.Fatalf("%q does not parse back the same: %v", c.String(), err)
		}
	})
}

// TestDueCron: with a cron schedule, a savepoint is due at its first time
// after the latest savepoint or attempt, and a caller that missed several
// times takes one savepoint, not one per missed time.
func TestDueCron(t *testing.T) {
	hourly := MustParseCron("@hourly", time.UTC)
	start := time.Date(2026, 5, 1, 10, 5, 0, 0, time.UTC)
	in := ScheduleInput{Cron: hourly, JobState: "RUNNING", JobStart: start}
	if due, _, next := Due(in, start.Add(50*time.Minute)); due || !next.Equal(time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("before 11:00: due %v, next %v", due, next)
	}
	// The caller was down from 10:55 to 14:20: three times missed.
	now := time.Date(2026, 5, 1, 14, 20, 0, 0, time.UTC)
	due, reason, _ := Due(in, now)
	if !due || reason != ReasonScheduled {
		t.Fatalf("after the missed times: due %v %q", due, reason)
	}
	in.Last = Record{Location: "file:/sp/1", Time: now}
	if due, _, next := Due(in, now.Add(time.Second)); due || !next.Equal(time.Date(2026, 5, 1, 15, 0, 0, 0, time.UTC)) {
		t.Errorf("after the one savepoint: due %v, next %v; want the next time, 15:00", due, next)
	}
	// Interval and cron together: the earlier counts.
	in.Interval = 20 * time.Minute
	if _, _, next := Due(in, now.Add(time.Second)); !next.Equal(now.Add(20 * time.Minute)) {
		t.Errorf("with a 20m interval: next %v", next)
	}
	in.Interval = 3 * time.Hour
	if _, _, next := Due(in, now.Add(time.Second)); !next.Equal(time.Date(2026, 5, 1, 15, 0, 0, 0, time.UTC)) {
		t.Errorf("with a 3h interval: next %v", next)
	}
	// Not while the job does not run.
	in.JobState = "FINISHED"
	if due, _, _ := Due(in, now.Add(5*time.Hour)); due {
		t.Error("due for a FINISHED job")
	}
}

func TestMustParseCronPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for an invalid expression")
		}
	}()
	MustParseCron("nope", nil)
}

// TestCronAroundTransitions compares Next with the oracle from every 59th
// minute of the two days around each daylight saving transition of 2026,
// for schedules that run within those hours.
func TestCronAroundTransitions(t *testing.T) {
	exprs := []string{"*/7 * * * *", "30 2 * * *", "15 1 * * *", "45 0,2 * * *"}
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham"} {
		loc := mustLoad(t, name)
		for x := time.Date(2026, 1, 1, 0, 0, 0, 0, loc); x.Year() < 2027; {
			_, tr := x.ZoneBounds()
			if tr.IsZero() {
				break
			}
			x = tr
			for _, expr := range exprs {
				c := MustParseCron(expr, loc)
				for from := tr.Add(-26 * time.Hour); from.Before(tr.Add(26 * time.Hour)); from = from.Add(59 * time.Minute) {
					want, ok := oracleNext(c, from, 3*24*time.Hour)
					if got := c.Next(from); !ok || !got.Equal(want) {
						t.Fatalf("%q in %s after %v: Next = %v, oracle %v (%v)", expr, name, from, got, want, ok)
					}
				}
			}
		}
	}
}

var sinkTime time.Time

// BenchmarkCronNext measures n successive runs of two schedules in a zone
// with daylight saving time, at 10, 1,000 and 10,000 runs, against the
// simplest hand-written way (impl=hand): walk the instants minute by
// minute until one's wall clock matches the fields.
//
//	go test -run '^$' -bench CronNext -benchmem -count 8 ./savepoint | benchstat -col /impl -
func BenchmarkCronNext(b *testing.B) {
	loc := mustLoad(b, "Europe/Berlin")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
	hand := func(c Cron, t time.Time) time.Time {
		for u := t.Truncate(time.Minute).Add(time.Minute); ; u = u.Add(time.Minute) {
			w := u.In(c.loc)
			if c.minute&(1<<uint(w.Minute())) != 0 && c.hour&(1<<uint(w.Hour())) != 0 && c.month&(1<<uint(w.Month())) != 0 &&
				c.dayMatches(w.Day(), int(w.Weekday())) {
				return u
			}
		}
	}
	for _, expr := range []string{"*/15 * * * *", "30 2 * * *"} {
		c := MustParseCron(expr, loc)
		for _, n := range []int{10, 1000, 10000} {
			name := strings.ReplaceAll(strings.ReplaceAll(expr, " ", "_"), "*", "x")
			b.Run(fmt.Sprintf("expr=%s/n=%d/impl=hand", name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					t := start
					for range n {
						t = hand(c, t)
					}
					sinkTime = t
				}
			})
			b.Run(fmt.Sprintf("expr=%s/n=%d/impl=savepoint", name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					t := start
					for range n {
						t = c.Next(t)
					}
					sinkTime = t
				}
			})
		}
	}
}
