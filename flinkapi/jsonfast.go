package flinkapi

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The job overview, job details and checkpoint statistics are the answers
// that grow with a fleet (a job per entry, a vertex, a history entry).
// They are read in one pass by jreader, which knows the shape Flink
// sends; whatever it does not know for sure how encoding/json would
// decode (a key that differs from a field's name only in case, a number
// that is not a small integer, a value of another kind, a key given twice
// for a list, nesting deeper than maxSkipDepth) makes it give up, and
// the whole answer is decoded by encoding/json instead, with its results
// and errors. FuzzJobsOverview, FuzzJobDetails and FuzzCheckpoints check
// that both give the same for any input.

// jreader reads one JSON document. A method that meets what it does not
// handle sets bad and returns a zero value; the caller checks bad once
// at the end.
type jreader struct {
	b   []byte
	i   int
	bad bool
	str strArena
	// scratch holds the text of a string with escapes.
	scratch []byte
}

func (r *jreader) fail() { r.bad = true; r.i = len(r.b) }

func (r *jreader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// done reports whether only white space follows and nothing failed.
func (r *jreader) done() bool {
	r.ws()
	return !r.bad && r.i == len(r.b)
}

// null consumes a null literal, if the next value is one.
func (r *jreader) null() bool {
	r.ws()
	if r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// open consumes c ('{' or '['), or fails.
func (r *jreader) open(c byte) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != c {
		r.fail()
		return false
	}
	r.i++
	return true
}

// next is the loop condition of an object or array opened with open: it
// consumes the ',' before every member but the first (*n counts them)
// and the closing c at the end.
func (r *jreader) next(n *int, c byte) bool {
	r.ws()
	if r.i >= len(r.b) {
		r.fail()
		return false
	}
	if r.b[r.i] == c {
		r.i++
		return false
	}
	if *n > 0 {
		if r.b[r.i] != ',' {
			r.fail()
			return false
		}
		r.i++
	}
	*n++
	return true
}

// key reads a member's name and its ':'. A name with an escape or a
// byte outside ASCII fails: encoding/json may match it to a field.
func (r *jreader) key() []byte {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		r.fail()
		return nil
	}
	start := r.i + 1
	i := start
	for i < len(r.b) && r.b[i] != '"' {
		if c := r.b[i]; c == '\\' || c < 0x20 || c >= 0x80 {
			r.fail()
			return nil
		}
		i++
	}
	if i >= len(r.b) {
		r.fail()
		return nil
	}
	k := r.b[start:i]
	r.i = i + 1
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != ':' {
		r.fail()
		return nil
	}
	r.i++
	return k
}

// other skips the value of a member whose name k is none of known,
// failing if k is one of them in another case (which encoding/json
// would decode into that field).
func (r *jreader) other(k []byte, known string) {
	for known != "" {
		name, rest, _ := strings.Cut(known, " ")
		if asciiEqualFold(k, name) {
			r.fail()
			return
		}
		known = rest
	}
	r.skip(0)
}

// asciiEqualFold reports whether k, all ASCII, is s in any case.
func asciiEqualFold(k []byte, s string) bool {
	if len(k) != len(s) {
		return false
	}
	for i := range k {
		a, b := k[i], s[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// maxSkipDepth bounds the nesting of a skipped value; deeper ones are
// left to encoding/json, which has its own limit.
const maxSkipDepth = 64

// skip passes over one value, checking that it is valid JSON.
func (r *jreader) skip(depth int) {
	r.ws()
	if r.i >= len(r.b) || depth > maxSkipDepth {
		r.fail()
		return
	}
	switch c := r.b[r.i]; {
	case c == '"':
		r.strToken()
	case c == '{':
		r.i++
		for n := 0; r.next(&n, '}'); {
			r.key()
			r.skip(depth + 1)
		}
	case c == '[':
		r.i++
		for n := 0; r.next(&n, ']'); {
			r.skip(depth + 1)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		r.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if r.i+len(lit) <= len(r.b) && string(r.b[r.i:r.i+len(lit)]) == lit {
				r.i += len(lit)
				return
			}
		}
		r.fail()
	}
}

// number passes over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *jreader) number() {
	b, i := r.b, r.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		r.fail()
		return
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			r.fail()
			return
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			r.fail()
			return
		}
	}
	r.i = i
}

// strToken passes over a string and returns its bytes between the quotes
// and whether they hold an escape or a byte outside ASCII.
func (r *jreader) strToken() (raw []byte, special bool) {
	b := r.b
	if r.i >= len(b) || b[r.i] != '"' {
		r.fail()
		return nil, false
	}
	start := r.i + 1
	i := start
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			r.i = i + 1
			return b[start:i], special
		case c < 0x20:
			r.fail()
			return nil, false
		case c >= 0x80:
			special = true
		case c == '\\':
			special = true
			if i+1 >= len(b) {
				r.fail()
				return nil, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(b) {
					r.fail()
					return nil, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						r.fail()
						return nil, false
					}
				}
				i += 5
			default:
				r.fail()
				return nil, false
			}
		}
		i++
	}
	r.fail()
	return nil, false
}

// strInto reads a string into *s; null leaves *s as it is, as it does
// for encoding/json. intern, if not nil, returns a constant for the
// values Flink sends most, without allocating.
func (r *jreader) strInto(s *string, intern func([]byte) string) {
	if r.null() {
		return
	}
	raw, special := r.strToken()
	if r.bad {
		return
	}
	if special {
		if intern == nil || intern(raw) == "" {
			*s = r.str.add(unquote(raw, &r.scratch))
			return
		}
	}
	if intern != nil {
		if v := intern(raw); v != "" || len(raw) == 0 {
			*s = v
			return
		}
	}
	*s = r.str.add(raw)
}

// unquote returns the text of a string token's raw bytes, which strToken
// checked, as encoding/json decodes it: escapes replaced, and U+FFFD for
// every byte of invalid UTF-8 and every surrogate not in a pair. The
// result is in *buf, valid until the next call.
func unquote(raw []byte, buf *[]byte) []byte {
	out := (*buf)[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch e := raw[i+1]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := hex4(raw[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(rr) {
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(raw[i+2:i+6])); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				out = utf8.AppendRune(out, rr)
				continue
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			rr, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, rr) // RuneError for an invalid byte
			i += size
		}
	}
	*buf = out
	return out
}

// hex4 returns the value of four hexadecimal digits, which strToken
// checked.
func hex4(h []byte) rune {
	var v rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		v = v<<4 | rune(c)
	}
	return v
}

// int64Into reads an integer of at most 18 digits into *n; null leaves
// *n as it is. Anything else fails.
func (r *jreader) int64Into(n *int64) {
	if r.null() {
		return
	}
	b, i := r.b, r.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	digits := i
	var v int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	if i == digits || i-digits > 18 || (b[digits] == '0' && i-digits > 1) {
		r.fail()
		return
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		r.fail() // encoding/json refuses a fraction or an exponent for an integer
		return
	}
	if neg {
		v = -v
	}
	r.i = i
	*n = v
}

// intInto is int64Into for an int.
func (r *jreader) intInto(n *int) {
	v := int64(*n)
	r.int64Into(&v)
	if int64(int(v)) != v {
		r.fail()
		return
	}
	*n = int(v)
}

// boolInto reads true or false into *v; null leaves *v as it is.
func (r *jreader) boolInto(v *bool) {
	r.ws()
	switch {
	case r.null():
	case r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "true":
		r.i += 4
		*v = true
	case r.i+5 <= len(r.b) && string(r.b[r.i:r.i+5]) == "false":
		r.i += 5
		*v = false
	default:
		r.fail()
	}
}

// tasksInto reads a tasks object as taskCountsWire.UnmarshalJSON does.
func (r *jreader) tasksInto(t *taskCountsWire) {
	r.ws()
	start := r.i
	r.skip(0)
	if r.bad {
		return
	}
	if err := t.UnmarshalJSON(r.b[start:r.i]); err != nil {
		r.fail()
	}
}

// strArena makes the strings of one answer out of a few blocks rather
// than one allocation each: a block is a strings.Builder, whose bytes
// never change once written, so every string cut from it stays valid.
// A string keeps its whole block (at most arenaBlock bytes) alive. The
// blocks double from firstBlock, so that a small answer takes little.
type strArena struct {
	cur  strings.Builder
	next int // the size of the next block
}

// firstBlock and arenaBlock bound the size of a block; strings longer
// than a quarter of arenaBlock are allocated alone.
const (
	firstBlock = 256
	arenaBlock = 8 << 10
)

func (a *strArena) add(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaBlock/4 {
		return string(b)
	}
	if a.cur.Cap()-a.cur.Len() < len(b) {
		a.next = min(max(2*a.next, firstBlock, len(b)), arenaBlock)
		a.cur = strings.Builder{}
		a.cur.Grow(a.next)
	}
	start := a.cur.Len()
	a.cur.Write(b)
	return a.cur.String()[start:]
}

// internFlinkWord returns the constant for the job and execution states,
// checkpoint statuses and kinds Flink sends, or "".
func internFlinkWord(b []byte) string {
	switch string(b) {
	case "CREATED":
		return "CREATED"
	case "SCHEDULED":
		return "SCHEDULED"
	case "DEPLOYING":
		return "DEPLOYING"
	case "RUNNING":
		return "RUNNING"
	case "FINISHED":
		return "FINISHED"
	case "CANCELING":
		return "CANCELING"
	case "CANCELED":
		return "CANCELED"
	case "FAILED":
		return "FAILED"
	case "RECONCILING":
		return "RECONCILING"
	case "INITIALIZING":
		return "INITIALIZING"
	case "FAILING":
		return "FAILING"
	case "CANCELLING":
		return "CANCELLING"
	case "RESTARTING":
		return "RESTARTING"
	case "SUSPENDED":
		return "SUSPENDED"
	case "IN_PROGRESS":
		return "IN_PROGRESS"
	case "COMPLETED":
		return "COMPLETED"
	case "CHECKPOINT":
		return "CHECKPOINT"
	case "SAVEPOINT":
		return "SAVEPOINT"
	case "SYNC_SAVEPOINT":
		return "SYNC_SAVEPOINT"
	case "UNALIGNED_CHECKPOINT":
		return "UNALIGNED_CHECKPOINT"
	case "CANONICAL":
		return "CANONICAL"
	case "NATIVE":
		return "NATIVE"
	case "STREAMING":
		return "STREAMING"
	case "BATCH":
		return "BATCH"
	case "Default":
		return "Default"
	case "Adaptive":
		return "Adaptive"
	case "AdaptiveBatch":
		return "AdaptiveBatch"
	}
	return ""
}

// overviewJobKeys, detailsKeys, vertexKeys, ... are the names of the fields
// each reader decodes, for jreader.other.
const (
	overviewJobKeys = "jid name state start-time end-time duration last-modification tasks jobType schedulerType"
	detailsKeys     = "jid name state isStoppable job-type start-time end-time duration maxParallelism now timestamps vertices application-id"
	vertexKeys      = "id name parallelism maxParallelism status start-time end-time duration tasks"
	timestampsKeys  = "INITIALIZING CREATED RUNNING FAILING FAILED CANCELLING CANCELED FINISHED RESTARTING SUSPENDED RECONCILING"
	statisticsKeys  = "counts latest history"
	countsKeys      = "restored total in_progress completed failed"
	latestKeys      = "completed savepoint failed restored"
	restoredKeys    = "id restore_timestamp is_savepoint external_path"
	checkpointKeys  = "id status is_savepoint savepointFormat checkpoint_type trigger_timestamp latest_ack_timestamp state_size checkpointed_size end_to_end_duration num_subtasks num_acknowledged_subtasks external_path discarded failure_timestamp failure_message"
)

// readOverview reads GET /jobs/overview straight into JobOverview values;
// it reports false where encoding/json must decode the answer.
func readOverview(b []byte) ([]JobOverview, bool) {
	r := &jreader{b: b}
	var jobs []JobOverview
	if r.null() {
		return nil, r.done()
	}
	sawJobs := false
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		k := r.key()
		if string(k) != "jobs" {
			r.other(k, "jobs")
			continue
		}
		if sawJobs {
			return nil, false // encoding/json decodes a second list into the first
		}
		sawJobs = true
		if r.null() {
			continue
		}
		jobs = make([]JobOverview, 0, countKey(b, `"jid":`))
		r.open('[')
		for m := 0; r.next(&m, ']'); {
			jobs = append(jobs, JobOverview{})
			if !r.null() {
				r.overviewJob(&jobs[len(jobs)-1])
			}
		}
	}
	return jobs, r.done()
}

// countKey counts the occurrences of key in b: the length of a list whose
// entries have it, give or take the key's other uses. It is a capacity
// to start with, so it is bounded by one entry per minEntryBytes of b:
// a body of keys alone allocates no more than a body of real entries.
func countKey(b []byte, key string) int {
	return min(bytes.Count(b, []byte(key)), len(b)/minEntryBytes)
}

// minEntryBytes is less than the JSON of any job of the overview, vertex
// of the job details or checkpoint of the history Flink sends (from about
// 300 bytes up).
const minEntryBytes = 256

func (r *jreader) overviewJob(j *JobOverview) {
	var ms int64
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "jid":
			r.strInto((*string)(&j.ID), nil)
		case "name":
			r.strInto(&j.Name, nil)
		case "state":
			r.strInto((*string)(&j.State), internFlinkWord)
		case "start-time":
			ms = toMillis(j.StartTime)
			r.int64Into(&ms)
			j.StartTime = FromMillis(ms)
		case "end-time":
			ms = toMillis(j.EndTime)
			r.int64Into(&ms)
			j.EndTime = FromMillis(ms)
		case "duration":
			ms = j.Duration.Milliseconds()
			r.int64Into(&ms)
			j.Duration = DurationFromMillis(ms)
		case "last-modification":
			ms = toMillis(j.LastModification)
			r.int64Into(&ms)
			j.LastModification = FromMillis(ms)
		case "tasks":
			t := taskCountsWire(j.Tasks)
			r.tasksInto(&t)
			j.Tasks = TaskCounts(t)
		case "jobType":
			r.strInto(&j.JobType, internFlinkWord)
		case "schedulerType":
			r.strInto(&j.SchedulerType, internFlinkWord)
		default:
			r.other(k, overviewJobKeys)
		}
	}
}

// toMillis is FromMillis's inverse for the times it returns, so that a
// null (which leaves a field as it is) converts back to the same time.
func toMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// readDetails reads GET /jobs/:jobid into w, which must be zero; it
// reports false where encoding/json must decode the answer.
func readDetails(b []byte, w *jobDetailsWire) bool {
	r := &jreader{b: b}
	if r.null() {
		return r.done()
	}
	sawVertices := false
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "jid":
			r.strInto((*string)(&w.ID), nil)
		case "name":
			r.strInto(&w.Name, nil)
		case "state":
			r.strInto((*string)(&w.State), internFlinkWord)
		case "isStoppable":
			r.boolInto(&w.IsStoppable)
		case "job-type":
			r.strInto(&w.JobType, internJobType)
		case "start-time":
			r.int64Into(&w.StartTime)
		case "end-time":
			r.int64Into(&w.EndTime)
		case "duration":
			r.int64Into(&w.Duration)
		case "maxParallelism":
			r.intInto(&w.MaxParallelism)
		case "now":
			r.int64Into(&w.Now)
		case "timestamps":
			r.timestamps(&w.Timestamps)
		case "application-id":
			r.strInto((*string)(&w.ApplicationID), nil)
		case "vertices":
			if sawVertices {
				return false
			}
			sawVertices = true
			if r.null() {
				continue
			}
			w.Vertices = make([]vertexWire, 0, countKey(b, `"status":`))
			r.open('[')
			for m := 0; r.next(&m, ']'); {
				w.Vertices = append(w.Vertices, vertexWire{})
				if !r.null() {
					r.vertex(&w.Vertices[len(w.Vertices)-1])
				}
			}
		default:
			r.other(k, detailsKeys)
		}
	}
	return r.done()
}

func internJobType(b []byte) string {
	switch string(b) {
	case "STREAMING":
		return "STREAMING"
	case "BATCH":
		return "BATCH"
	}
	return ""
}

func (r *jreader) timestamps(t *jobTimestampsWire) {
	if r.null() {
		return
	}
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "INITIALIZING":
			r.int64Into(&t.Initializing)
		case "CREATED":
			r.int64Into(&t.Created)
		case "RUNNING":
			r.int64Into(&t.Running)
		case "FAILING":
			r.int64Into(&t.Failing)
		case "FAILED":
			r.int64Into(&t.Failed)
		case "CANCELLING":
			r.int64Into(&t.Cancelling)
		case "CANCELED":
			r.int64Into(&t.Canceled)
		case "FINISHED":
			r.int64Into(&t.Finished)
		case "RESTARTING":
			r.int64Into(&t.Restarting)
		case "SUSPENDED":
			r.int64Into(&t.Suspended)
		case "RECONCILING":
			r.int64Into(&t.Reconciling)
		default:
			r.other(k, timestampsKeys)
		}
	}
}

func (r *jreader) vertex(v *vertexWire) {
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "id":
			r.strInto(&v.ID, nil)
		case "name":
			r.strInto(&v.Name, nil)
		case "parallelism":
			r.intInto(&v.Parallelism)
		case "maxParallelism":
			r.intInto(&v.MaxParallelism)
		case "status":
			r.strInto(&v.Status, internFlinkWord)
		case "start-time":
			r.int64Into(&v.StartTime)
		case "end-time":
			r.int64Into(&v.EndTime)
		case "duration":
			r.int64Into(&v.Duration)
		case "tasks":
			r.tasksInto(&v.Tasks)
		default:
			r.other(k, vertexKeys)
		}
	}
}

// readCheckpoints reads GET /jobs/:jobid/checkpoints into w, which must be
// zero; it reports false where encoding/json must decode the answer.
func readCheckpoints(b []byte, w *checkpointStatisticsWire) bool {
	r := &jreader{b: b}
	if r.null() {
		return r.done()
	}
	sawHistory := false
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "counts":
			r.counts(&w.Counts)
		case "latest":
			r.latest(w)
		case "history":
			if sawHistory {
				return false
			}
			sawHistory = true
			if r.null() {
				continue
			}
			w.History = make([]checkpointStatsWire, 0, countKey(b, `"trigger_timestamp":`))
			r.open('[')
			for m := 0; r.next(&m, ']'); {
				w.History = append(w.History, checkpointStatsWire{})
				if !r.null() {
					r.checkpoint(&w.History[len(w.History)-1])
				}
			}
		default:
			r.other(k, statisticsKeys)
		}
	}
	return r.done()
}

func (r *jreader) counts(c *CheckpointCounts) {
	if r.null() {
		return
	}
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "restored":
			r.int64Into(&c.Restored)
		case "total":
			r.int64Into(&c.Total)
		case "in_progress":
			r.int64Into(&c.InProgress)
		case "completed":
			r.int64Into(&c.Completed)
		case "failed":
			r.int64Into(&c.Failed)
		default:
			r.other(k, countsKeys)
		}
	}
}

func (r *jreader) latest(w *checkpointStatisticsWire) {
	if r.null() {
		return
	}
	l := &w.Latest
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "completed":
			r.checkpointPtr(&l.Completed)
		case "savepoint":
			r.checkpointPtr(&l.Savepoint)
		case "failed":
			r.checkpointPtr(&l.Failed)
		case "restored":
			if r.null() {
				l.Restored = nil
				continue
			}
			if l.Restored == nil {
				l.Restored = new(restoredWire)
			}
			x := l.Restored
			r.open('{')
			for m := 0; r.next(&m, '}'); {
				switch k := r.key(); string(k) {
				case "id":
					r.int64Into(&x.ID)
				case "restore_timestamp":
					r.int64Into(&x.RestoreTimestamp)
				case "is_savepoint":
					r.boolInto(&x.IsSavepoint)
				case "external_path":
					r.strInto(&x.ExternalPath, nil)
				default:
					r.other(k, restoredKeys)
				}
			}
		default:
			r.other(k, latestKeys)
		}
	}
}

// checkpointPtr reads a checkpoint that may be null, into the one *p
// points to if there is one, as encoding/json does.
func (r *jreader) checkpointPtr(p **checkpointStatsWire) {
	if r.null() {
		*p = nil
		return
	}
	if *p == nil {
		*p = new(checkpointStatsWire)
	}
	r.checkpoint(*p)
}

func (r *jreader) checkpoint(c *checkpointStatsWire) {
	r.open('{')
	for n := 0; r.next(&n, '}'); {
		switch k := r.key(); string(k) {
		case "id":
			r.int64Into(&c.ID)
		case "status":
			r.strInto((*string)(&c.Status), internFlinkWord)
		case "is_savepoint":
			r.boolInto(&c.IsSavepoint)
		case "savepointFormat":
			r.strInto(&c.SavepointFormat, internFlinkWord)
		case "checkpoint_type":
			r.strInto(&c.CheckpointType, internFlinkWord)
		case "trigger_timestamp":
			r.int64Into(&c.TriggerTimestamp)
		case "latest_ack_timestamp":
			r.int64Into(&c.LatestAckTimestamp)
		case "state_size":
			r.int64Into(&c.StateSize)
		case "checkpointed_size":
			r.int64Into(&c.CheckpointedSize)
		case "end_to_end_duration":
			r.int64Into(&c.EndToEndDuration)
		case "num_subtasks":
			r.intInto(&c.NumSubtasks)
		case "num_acknowledged_subtasks":
			r.intInto(&c.NumAcknowledgedSubtasks)
		case "external_path":
			r.strInto(&c.ExternalPath, nil)
		case "discarded":
			r.boolInto(&c.Discarded)
		case "failure_timestamp":
			r.int64Into(&c.FailureTimestamp)
		case "failure_message":
			r.strInto(&c.FailureMessage, nil)
		default:
			r.other(k, checkpointKeys)
		}
	}
}
