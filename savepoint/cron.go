package savepoint

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed cron schedule: the standard five fields (minute, hour,
// day of month, month, day of week) or one of the shorthands @yearly
// (@annually), @monthly, @weekly, @daily (@midnight) and @hourly, in a
// time zone. The zero Cron is no schedule. Build it with ParseCron.
//
// Fields take numbers, names (JAN-DEC, SUN-SAT, either case), ranges
// (1-5), steps (*/15, 0-30/10, 5/20 meaning 5-59/20), and lists of these
// (1,15,30). Day of week 7 is Sunday like 0. As in Vixie and ISC cron, when
// both day fields are restricted (neither starts with *), a day matches
// either of them; otherwise it must match both.
//
// Times are wall-clock times in the zone, and daylight saving time is
// handled as ISC cron handles it: a time skipped when the clocks go
// forward runs at the first instant after the gap (once, however many
// slots fell into the gap), and a time repeated when they go back runs
// at its first occurrence only.
//
// The parser is flinkkit's own rather than github.com/robfig/cron/v3: the
// root module depends on nothing beyond resty and backoff, robfig/cron
// v3.0.1 skips runs that fall into a spring-forward gap (the behaviour
// robfig/cron pull request 541 proposes to change), and its extras
// (seconds, @every) overlap SavepointPolicy's interval. A schedule that
// can never run (0 0 30 2 *) is refused when parsed, so Next always finds
// a time.
type Cron struct {
	expr   string
	loc    *time.Location
	minute uint64 // bit i: minute i
	hour   uint64
	dom    uint64 // bits 1-31
	month  uint64 // bits 1-12
	dow    uint64 // bits 0-6, Sunday 0
	// domAny and dowAny: the field started with * (or ?), which makes
	// the other day field decide alone.
	domAny, dowAny bool
}

// ErrInvalidCron is matched by the errors of ParseCron.
var ErrInvalidCron = errors.New("savepoint: invalid cron schedule")

var cronShorthands = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is value min+i
}

var cronFields = [5]cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day of week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// maxCronLength bounds the expressions ParseCron reads.
const maxCronLength = 256

// ParseCron parses a cron expression in the time zone loc (nil: UTC). The
// error matches ErrInvalidCron and names the field at fault.
func ParseCron(expr string, loc *time.Location) (Cron, error) {
	if loc == nil {
		loc = time.UTC
	}
	fail := func(format string, args ...any) (Cron, error) {
		return Cron{}, fmt.Errorf("%w %q: %s", ErrInvalidCron, truncateExpr(expr), fmt.Sprintf(format, args...))
	}
	if len(expr) > maxCronLength {
		return fail("longer than %d bytes", maxCronLength)
	}
	spec := strings.TrimSpace(expr)
	if strings.HasPrefix(spec, "@") {
		full, ok := cronShorthands[strings.ToLower(spec)]
		if !ok {
			return fail("unknown shorthand; want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly")
		}
		spec = full
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return fail("%d fields; want 5 (minute hour day-of-month month day-of-week) or a shorthand such as @daily", len(fields))
	}
	c := Cron{expr: strings.TrimSpace(expr), loc: loc}
	sets := [5]*uint64{&c.minute, &c.hour, &c.dom, &c.month, &c.dow}
	for i, f := range fields {
		set, err := cronFields[i].parse(f)
		if err != nil {
			return fail("%s field %q: %v", cronFields[i].name, truncateExpr(f), err)
		}
		*sets[i] = set
	}
	if c.dow&(1<<7) != 0 {
		c.dow = c.dow&^(1<<7) | 1 // 7 is Sunday
	}
	c.domAny = fields[2][0] == '*' || fields[2][0] == '?'
	c.dowAny = fields[4][0] == '*' || fields[4][0] == '?'
	if c.dowAny && !c.domAny && !c.someMonthHasDay() {
		return fail("day of month %q never occurs in month %q", fields[2], fields[3])
	}
	return c, nil
}

// MustParseCron is ParseCron for expressions known to be valid; it panics
// on an error.
func MustParseCron(expr string, loc *time.Location) Cron {
	c, err := ParseCron(expr, loc)
	if err != nil {
		panic(err)
	}
	return c
}

func truncateExpr(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// parse reads one field into a bit set.
func (f cronField) parse(s string) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			return 0, errors.New("empty list element")
		}
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max {
				return 0, fmt.Errorf("step %q: want a number from 1 to %d", stepText, f.max)
			}
			step = n
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "?" && f.min == 0 && f.max != 7:
			return 0, errors.New("? stands only in the day fields")
		case rng == "*" || rng == "?":
			if f.max == 7 {
				hi = 6 // * of day of week: Sunday once
			}
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(a); err != nil {
				return 0, err
			}
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			v, err := f.value(rng)
			if err != nil {
				return 0, err
			}
			lo, hi = v, v
			if hasStep {
				hi = f.max // 5/20: from 5 to the end, every 20
				if f.max == 7 {
					hi = 6 // day of week: to Saturday
				}
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, nil
}

// value reads one number or name of the field.
func (f cronField) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") {
		if len(f.names) > 0 {
			return 0, fmt.Errorf("%q is neither a number from %d to %d nor a name (%s-%s)", s, f.min, f.max, f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, f.min, f.max)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, f.min, f.max)
	}
	return v, nil
}

// daysIn is the most days each month can have.
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// someMonthHasDay reports whether a day of month of c occurs in a month
// of c.
func (c Cron) someMonthHasDay() bool {
	for m := 1; m <= 12; m++ {
		if c.month&(1<<uint(m)) != 0 && c.dom&(1<<uint(daysIn[m]+1)-1) != 0 {
			return true
		}
	}
	return false
}

// IsZero reports whether c is no schedule.
func (c Cron) IsZero() bool { return c.loc == nil }

// String returns the expression c was parsed from.
func (c Cron) String() string { return c.expr }

// location returns the time zone of c.
func (c Cron) location() *time.Location { return c.loc }

// dayMatches reports whether the day d of month m, a weekday wd, is one of
// c's days.
func (c Cron) dayMatches(d, wd int) bool {
	dom, dow := c.dom&(1<<uint(d)) != 0, c.dow&(1<<uint(wd)) != 0
	if c.domAny || c.dowAny {
		return dom && dow
	}
	return dom || dow
}

// cronHorizon bounds the search of Next: every valid schedule runs at
// least once in 8 years (29 February may be 8 years apart).
const cronHorizon = 9 * 366

// Next returns the first time of the schedule strictly after t, in c's
// zone; zero for the zero Cron. It is a pure function of c and t.
func (c Cron) Next(t time.Time) time.Time {
	if c.IsZero() {
		return time.Time{}
	}
	t = t.In(c.loc)
	// Walk the wall-clock minutes from t's, in order: their instants never
	// decrease, so the first one after t is the answer.
	y, mo, d := t.Date()
	startH, startM := t.Hour(), t.Minute()
	day := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC) // the wall date, as UTC
	for i := 0; i < cronHorizon; i, day = i+1, day.AddDate(0, 0, 1) {
		if c.month&(1<<uint(day.Month())) == 0 || !c.dayMatches(day.Day(), int(day.Weekday())) {
			continue
		}
		for hours := c.hour; hours != 0; hours &= hours - 1 {
			h := bits.TrailingZeros64(hours)
			if i == 0 && h < startH {
				continue
			}
			for mins := c.minute; mins != 0; mins &= mins - 1 {
				m := bits.TrailingZeros64(mins)
				if i == 0 && h == startH && m < startM {
					continue
				}
				if at := resolveWall(day.Add(time.Duration(h)*time.Hour+time.Duration(m)*time.Minute), c.loc); at.After(t) {
					return at
				}
			}
		}
	}
	return time.Time{}
}

// resolveWall returns the instant the wall-clock time wall (given as UTC)
// stands for in loc: its first occurrence when the clocks went back, the
// end of the gap when they went forward over it.
func resolveWall(wall time.Time, loc *time.Location) time.Time {
	w := wall.Unix()
	// Most times lie a day or more from any transition: one reading.
	_, off := time.Unix(w, 0).In(loc).Zone()
	at := time.Unix(w-int64(off), 0).In(loc)
	start, end := at.ZoneBounds()
	if _, o := at.Zone(); o == off && (start.IsZero() || at.Sub(start) >= 48*time.Hour) && (end.IsZero() || end.Sub(at) >= 48*time.Hour) {
		return at
	}
	var best int64
	found := false
	for _, probe := range [...]int64{w - 86400, w, w + 86400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		u := w - int64(off)
		if _, o := time.Unix(u, 0).In(loc).Zone(); o == off && (!found || u < best) {
			best, found = u, true
		}
	}
	if found {
		return time.Unix(best, 0).In(loc)
	}
	// In a gap: read with the offset before it, the wall time lies past
	// the transition, which is where the gap ends.
	_, before := time.Unix(w-86400, 0).In(loc).Zone()
	gapEnd, _ := time.Unix(w-int64(before), 0).In(loc).ZoneBounds()
	return gapEnd
}
