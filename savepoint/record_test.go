package savepoint

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/testkit/plaincheck"
	"github.com/google/go-cmp/cmp"
)

func TestRecordOf(t *testing.T) {
	succeeded := with(inFlight(), func(s *Status) { s.State, s.Location, s.LastUpdate = Succeeded, loc, at(time.Minute) })
	tests := []struct {
		name   string
		s      Status
		want   Record
		wantOK bool
	}{
		{"Succeeded", succeeded, Record{Location: loc, Time: t0, Reason: ReasonUpdate, JobID: job}, true},
		{"Failed stop with a location", with(succeeded, func(s *Status) { s.State = Failed }), Record{Location: loc, Time: t0, Reason: ReasonUpdate, JobID: job}, true},
		{"no trigger time: the last update", with(succeeded, func(s *Status) { s.TriggerTime = time.Time{} }),
			Record{Location: loc, Time: at(time.Minute), Reason: ReasonUpdate, JobID: job}, true},
		{"no location", inFlight(), Record{}, false},
		{"Failed", with(inFlight(), func(s *Status) { s.State = Failed }), Record{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RecordOf(tt.s)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RecordOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAge(t *testing.T) {
	r := Record{Location: loc, Time: t0}
	tests := []struct {
		name      string
		r         Record
		maxAge    time.Duration
		now       time.Time
		wantAge   time.Duration
		wantYoung bool
	}{
		{"younger", r, time.Hour, at(59 * time.Minute), 59 * time.Minute, true},
		{"exactly the maximum is not younger", r, time.Hour, at(time.Hour), time.Hour, false},
		{"older", r, time.Hour, at(2 * time.Hour), 2 * time.Hour, false},
		{"from the future (skewed clock)", r, time.Hour, at(-time.Minute), -time.Minute, true},
		{"no maximum age is never satisfied", r, 0, t0, 0, false},
		{"negative maximum age", r, -time.Hour, t0, 0, false},
		{"no time: as old as it gets", Record{Location: loc}, time.Hour, t0, maxDuration, false},
		{"no location", Record{Time: t0}, time.Hour, t0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Age(tt.r, tt.now); got != tt.wantAge {
				t.Errorf("Age = %v, want %v", got, tt.wantAge)
			}
			if got := YoungerThan(tt.r, tt.maxAge, tt.now); got != tt.wantYoung {
				t.Errorf("YoungerThan = %v, want %v", got, tt.wantYoung)
			}
		})
	}
}

// TestAgeFromFlinkMillis follows a savepoint's trigger time from Flink's
// epoch milliseconds, converted by flinkapi, to its age.
func TestAgeFromFlinkMillis(t *testing.T) {
	const triggerMillis = 1772366400123 // 2026-03-01T12:00:00.123Z
	r := Record{Location: loc, Time: flinkapi.FromMillis(triggerMillis)}
	if got, want := Age(r, at(time.Minute)), time.Minute-123*time.Millisecond; got != want {
		t.Errorf("Age = %v, want %v", got, want)
	}
}

// TestNoMillisecondMath keeps Flink's millisecond timestamps out of this
// package: flinkapi.FromMillis converts them, once.
func TestNoMillisecondMath(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{"UnixMilli", "time.Millisecond", "1e6", "1000000"} {
			if strings.Contains(string(b), banned) {
				t.Errorf("%s uses %s: convert Flink's milliseconds with flinkapi.FromMillis", f, banned)
			}
		}
	}
}

func TestReasons(t *testing.T) {
	got := []Reason{ReasonUser, ReasonScheduled, ReasonUpdate, ReasonStop, ReasonDelete, ReasonRestart, ReasonImported, ReasonFound}
	want := []Reason{"User", "Scheduled", "Update", "Stop", "Delete", "Restart", "Imported", "Found"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reason strings changed (-want +got):\n%s", diff)
	}
	for _, r := range got {
		if !r.Valid() {
			t.Errorf("%q.Valid() = false", r)
		}
	}
	if Reason("Manual").Valid() || Reason("").Valid() {
		t.Error("unknown reasons are valid")
	}
}

// TestJSON pins the JSON names of the stored types and checks that values
// survive a round trip.
func TestJSON(t *testing.T) {
	s := with(inFlight(), func(s *Status) {
		s.State, s.Location, s.Recovered, s.Failure = Succeeded, loc, true, "f"
		s.Attempts, s.LastError, s.LastErrorCode, s.LastUpdate = 2, "e", 503, at(time.Second)
	})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"kind":"savepoint","jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90","triggerID":"0123456789abcdef0123456789abcdef",` +
		`"triggerTime":"2026-03-01T12:00:00Z","deadline":"2026-03-01T12:10:00Z","reason":"Update","state":"Succeeded",` +
		`"location":"s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab","recovered":true,"failure":"f","attempts":2,` +
		`"lastError":"e","lastErrorCode":503,"lastUpdate":"2026-03-01T12:00:01Z"}`
	if string(b) != want {
		t.Errorf("json.Marshal(Status) =\n%s\nwant\n%s", b, want)
	}
	var back Status
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	if b, _ := json.Marshal(Status{}); string(b) != "{}" {
		t.Errorf("json.Marshal(Status{}) = %s, want {}", b)
	}
	h := History{}.Add(Record{Location: loc, Time: t0, Reason: ReasonScheduled, JobID: job})
	b, _ = json.Marshal(h)
	if want := `{"formatVersion":3,"jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90","reason":"Scheduled","records":[{"location":"s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab","time":"2026-03-01T12:00:00Z"}]}`; string(b) != want {
		t.Errorf("json.Marshal(History) = %s, want %s", b, want)
	}
	if b, _ := json.Marshal(History{}); string(b) != "{}" {
		t.Errorf("json.Marshal(History{}) = %s, want {}", b)
	}
	b, _ = json.Marshal(Progress{3, 4, 0.75, 10})
	if want := `{"acknowledged":3,"total":4,"fraction":0.75,"bytes":10}`; string(b) != want {
		t.Errorf("json.Marshal(Progress) = %s, want %s", b, want)
	}
}

func TestDeepCopy(t *testing.T) {
	s := with(inFlight(), func(s *Status) { s.Location = loc })
	if c := s.DeepCopy(); !reflect.DeepEqual(*c, s) || c == &s {
		t.Errorf("Status.DeepCopy = %+v", c)
	}
	r := Record{Location: loc, Time: t0}
	if c := r.DeepCopy(); *c != r {
		t.Errorf("Record.DeepCopy = %+v", c)
	}
	p := Progress{1, 2, 0.5, 3}
	if c := p.DeepCopy(); *c != p {
		t.Errorf("Progress.DeepCopy = %+v", c)
	}
	h := History{FormatVersion: 1, Records: []Record{r, {Location: "b", Time: t0}}}
	c := h.DeepCopy()
	if !reflect.DeepEqual(*c, h) {
		t.Errorf("History.DeepCopy = %+v", c)
	}
	c.Records[0].Location = "changed"
	if h.Records[0].Location != loc {
		t.Error("History.DeepCopy shares its backing array")
	}
	if c := (&History{}).DeepCopy(); c.Records != nil {
		t.Errorf("DeepCopy of an empty History = %+v", c)
	}
	// The RecordExtra of a record is copied, not shared.
	x := Record{Location: loc, Time: t0, RecordExtra: &RecordExtra{OnDelete: OnDeleteKeep, Disposal: Disposal{Attempts: 1}}}
	if c := x.DeepCopy(); !reflect.DeepEqual(*c, x) || c.RecordExtra == x.RecordExtra {
		t.Errorf("Record.DeepCopy = %+v, shares its RecordExtra: %t", c, c.RecordExtra == x.RecordExtra)
	}
	hx := History{Records: []Record{r, x}}
	if c := hx.DeepCopy(); !reflect.DeepEqual(*c, hx) || c.Records[1].RecordExtra == x.RecordExtra || c.Records[0].RecordExtra != nil {
		t.Errorf("History.DeepCopy = %+v", c)
	}
	if (*Status)(nil).DeepCopy() != nil || (*Record)(nil).DeepCopy() != nil || (*Progress)(nil).DeepCopy() != nil || (*History)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}

// TestRecordExtra: the delete choice and the failed disposals read as
// zero on a record without a RecordExtra, the setters give the record a
// RecordExtra of its own (a copy keeps its own) and drop it once both
// are zero, and the JSON is flat.
func TestRecordExtra(t *testing.T) {
	var r Record
	if r.OnDelete() != OnDeletePolicy || r.Disposal() != (Disposal{}) || r.RecordExtra != nil {
		t.Fatalf("zero Record: %q, %+v", r.OnDelete(), r.Disposal())
	}
	r.SetOnDelete(OnDeleteKeep)
	c := r
	c.SetDisposal(Disposal{Attempts: 2, Error: DisposalFailed})
	if r.OnDelete() != OnDeleteKeep || r.Disposal().Failed() {
		t.Errorf("setting the copy's disposal changed r: %q, %+v", r.OnDelete(), r.Disposal())
	}
	if c.OnDelete() != OnDeleteKeep || c.Disposal().Attempts != 2 || c.RecordExtra == r.RecordExtra {
		t.Errorf("copy: %q, %+v", c.OnDelete(), c.Disposal())
	}
	b, err := json.Marshal(c)
	if want := `{"location":"","time":"0001-01-01T00:00:00Z","onDelete":"Keep","disposal":{"attempts":2,"error":"Failed"}}`; err != nil || string(b) != want {
		t.Errorf("json.Marshal = %s, %v; want %s", b, err, want)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("json.Unmarshal(%s) = %+v, %v", b, back, err)
	}
	c.SetOnDelete(OnDeletePolicy)
	c.SetDisposal(Disposal{})
	if c.RecordExtra != nil {
		t.Errorf("both zero: RecordExtra %+v, want none", c.RecordExtra)
	}
	if b, _ := json.Marshal(c); string(b) != `{"location":"","time":"0001-01-01T00:00:00Z"}` {
		t.Errorf("json.Marshal without a RecordExtra = %s", b)
	}
}

// TestDeepCopyFieldsArePlain keeps the hand-written deep copies right: the
// stored types may hold only values, strings and time.Time, which copying
// the struct copies deeply. A field with a pointer, slice, map, interface,
// func or channel needs DeepCopyInto to copy it: History.Records and
// Record.RecordExtra are the only such fields, and the DeepCopyInto of
// History and of Record copy them (the elements of Records are Records,
// checked here too, and a RecordExtra holds only values).
func TestDeepCopyFieldsArePlain(t *testing.T) {
	for name, typ := range map[string]reflect.Type{
		"Status": reflect.TypeFor[Status](), "Record": reflect.TypeFor[Record](),
		"Progress": reflect.TypeFor[Progress](), "History": reflect.TypeFor[History](),
		"History.Records[i]": reflect.TypeFor[History]().Field(1).Type.Elem(), "RecordExtra": reflect.TypeFor[RecordExtra](),
	} {
		for _, p := range plaincheck.Problems(name, typ, "History.Records", "Record.RecordExtra", "History.Records[i].RecordExtra") {
			t.Error(p)
		}
	}
}
