package savepoint

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/internal/testkit/formattest"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "write the missing stored-format fixture of the newest version into testdata/golden")

// goldenRecords are the records of the History fixtures: every field set.
func goldenRecords() []Record {
	return []Record{
		{Location: "s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab", Time: time.Date(2026, 3, 1, 12, 0, 0, 500_000_000, time.UTC),
			Reason: ReasonScheduled, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
		{Location: "s3://bucket/savepoints/savepoint-a1b2c3-fedcba987654", Time: time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC),
			Reason: ReasonUpdate, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"},
	}
}

// goldenRecordsV2 are the records of the format 2 fixture: every field
// set, the delete choice and the failed disposals too.
func goldenRecordsV2() []Record {
	r := goldenRecords()
	r = append(r, Record{Location: "s3://bucket/savepoints/savepoint-elsewhere-42", Time: time.Date(2026, 2, 27, 8, 30, 0, 0, time.UTC),
		Reason: ReasonImported, JobID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", RecordExtra: &RecordExtra{OnDelete: OnDeleteKeep,
			Disposal: Disposal{Attempts: 2, Error: DisposalRefused, Message: "java.io.IOException: Permission denied",
				RetryAt: time.Date(2026, 3, 1, 13, 5, 0, 0, time.UTC), GaveUp: true}}})
	r[0].SetOnDelete(OnDeleteDispose)
	r[0].SetDisposal(Disposal{Attempts: 1, Error: DisposalUnreachable, Message: "503 Service Unavailable",
		RetryAt: time.Date(2026, 3, 1, 13, 1, 0, 0, time.UTC), GaveUp: true})
	r[1].SetOnDelete(OnDeleteKeep)
	r[1].SetDisposal(Disposal{Attempts: 3, Error: DisposalFailed, Message: "the disposal failed", RetryAt: time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC), GaveUp: true})
	return []Record{r[2], r[0], r[1]}
}

// goldenRecordsV3 are the records of the format 3 fixture, the compact
// form: those of format 2 and another periodic one, so that most share
// the job and the reason, and one of them differs in each.
func goldenRecordsV3() []Record {
	r := goldenRecordsV2()
	n := Record{Location: "s3://bucket/savepoints/savepoint-a1b2c3-77aa88bb99cc", Time: time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC),
		Reason: ReasonScheduled, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	n.SetOnDelete(OnDeleteKeep)
	n.SetDisposal(Disposal{Attempts: 1, Error: DisposalFailed, Message: "java.io.IOException: No space left on device",
		RetryAt: time.Date(2026, 3, 1, 12, 45, 0, 0, time.UTC), GaveUp: true})
	return []Record{r[0], r[1], n, r[2]}
}

// TestHistoryFormats decodes every stored form of a History that a release
// wrote (testdata/golden; its README.md says what each file is and why
// none is ever edited), checks that this release writes the newest one
// byte for byte, and that a History of a newer format is refused where
// it is used (CheckFormat).
func TestHistoryFormats(t *testing.T) {
	if ErrUnknownFormat != format.ErrUnknown {
		t.Fatal("savepoint.ErrUnknownFormat is not the shared format.ErrUnknown")
	}
	formattest.Check(t, formattest.Type[History]{
		Name: "savepoint.History", Dir: "testdata/golden", Newest: FormatVersion, ErrUnknown: ErrUnknownFormat, Update: *update,
		Decode: func(b []byte) (History, error) {
			var h History
			if err := json.Unmarshal(b, &h); err != nil {
				return h, err
			}
			return h, h.CheckFormat()
		},
		Fixtures: []formattest.Fixture[History]{
			// The bare array written while History was []Record.
			{File: "history-legacy.json", Version: 0, Want: History{Records: goldenRecords()}},
			{File: "history-v1.json", Version: 1, Want: History{FormatVersion: 1, Records: goldenRecords()}},
			{File: "history-v2.json", Version: 2, Want: History{FormatVersion: 2, Records: goldenRecordsV2()}},
			{File: "history-v3.json", Version: 3, Want: History{FormatVersion: 3, Records: goldenRecordsV3()}},
		},
	})
}

// TestHistoryDecode covers the forms around the fixtures: null, empty,
// whitespace before a legacy array, and versions this release does not
// read, which decode to the version alone (also inside a struct, whatever
// their records hold) and which CheckFormat refuses.
func TestHistoryDecode(t *testing.T) {
	r := goldenRecords()[0]
	tests := []struct {
		in   string
		want History
	}{
		{`null`, History{FormatVersion: 1, Records: []Record{r}}}, // no-op, like json.Unmarshal's
		{`[]`, History{Records: []Record{}}},
		{" \n[]", History{Records: []Record{}}},
		{`{}`, History{}},
		{`{"formatVersion":0,"records":[]}`, History{Records: []Record{}}},
		{`{"formatVersion":1}`, History{FormatVersion: 1}},
	}
	for _, tt := range tests {
		h := History{FormatVersion: 1, Records: []Record{r}}
		if err := json.Unmarshal([]byte(tt.in), &h); err != nil {
			t.Errorf("Unmarshal(%s): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, h); diff != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
	for in, v := range map[string]int{`{"formatVersion":4,"records":[]}`: 4, `{"formatVersion":-1}`: -1,
		`{"formatVersion":4,"records":{"a":{"where":["x"]}},"more":1}`: 4} {
		h := History{FormatVersion: 1, Records: []Record{r}}
		if err := json.Unmarshal([]byte(in), &h); err != nil {
			t.Errorf("Unmarshal(%s) = %v; a newer History decodes, and is refused where it is used", in, err)
		}
		if len(h.Records) != 0 || h.FormatVersion != v {
			t.Errorf("Unmarshal(%s) = %+v, want the version %d alone", in, h, v)
		}
		err := h.CheckFormat()
		if !errors.Is(err, ErrUnknownFormat) || !strings.HasPrefix(err.Error(), "savepoint.History: format version ") {
			t.Errorf("CheckFormat of %s = %v, want a format error", in, err)
		}
		var st struct {
			Savepoints History `json:"savepoints"`
			Name       string  `json:"name"`
		}
		if err := json.Unmarshal([]byte(`{"savepoints":`+in+`,"name":"n"}`), &st); err != nil || st.Name != "n" || st.Savepoints.FormatVersion != v {
			t.Errorf("a newer History in a struct: %+v, %v", st, err)
		}
	}
	if err := (History{FormatVersion: FormatVersion}).CheckFormat(); err != nil {
		t.Errorf("CheckFormat of the newest format: %v", err)
	}
	for _, in := range []string{`[1]`, `{"records":{}}`, `"x"`, `{"formatVersion":"1"}`, `{"formatVersion":3,"records":{}}`,
		`{"formatVersion":3,"prefix":1}`, `{"formatVersion":3,"records":[{"jobID":1}]}`} {
		var h History
		if err := json.Unmarshal([]byte(in), &h); err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %+v", in, h)
		}
	}
	// A History inside a struct, the way a Kubernetes status holds it.
	var st struct {
		Savepoints History `json:"savepoints"`
	}
	if err := json.Unmarshal([]byte(`{"savepoints":[{"location":"a","time":"2026-03-01T12:00:00Z"}]}`), &st); err != nil || len(st.Savepoints.Records) != 1 {
		t.Errorf("legacy History in a struct: %+v, %v", st, err)
	}
}

// FuzzHistoryJSON: whatever decodes re-encodes to JSON that decodes to the
// same History, and nothing of a History newer than FormatVersion is read.
func FuzzHistoryJSON(f *testing.F) {
	f.Add(`[{"location":"a","time":"2026-03-01T12:00:00Z","reason":"Update","jobID":"x"}]`)
	f.Add(`{"formatVersion":1,"records":[{"location":"a","time":"2026-03-01T12:00:00.5Z"}]}`)
	f.Add(`{"formatVersion":2}`)
	f.Add(`{"formatVersion":3,"jobID":"j","reason":"Scheduled","prefix":"s3://b/sp-","records":[{"location":"1","time":"2026-03-01T12:00:00Z"},{"location":"2","time":"2026-03-01T12:10:00Z","jobID":"","reason":"Update","onDelete":"Keep"}]}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, in string) {
		var h History
		if err := json.Unmarshal([]byte(in), &h); err != nil {
			return
		}
		if h.CheckFormat() != nil {
			// A version this release does not read: nothing of it is read.
			if len(h.Records) != 0 {
				t.Fatalf("%q of format version %d decoded records: %+v", in, h.FormatVersion, h.Records)
			}
			return
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back History
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s does not decode again: %v", b, err)
		}
		if len(back.Records) != len(h.Records) || back.FormatVersion != h.FormatVersion {
			t.Fatalf("round trip of %q: %+v, then %+v", in, h, back)
		}
		for i := range h.Records {
			if a, b := h.Records[i], back.Records[i]; a.Location != b.Location || !a.Time.Equal(b.Time) || a.Reason != b.Reason || a.JobID != b.JobID ||
				a.OnDelete() != b.OnDelete() || a.Disposal().Attempts != b.Disposal().Attempts || a.Disposal().Message != b.Disposal().Message {
				t.Fatalf("round trip of %q: record %d %+v, then %+v", in, i, a, b)
			}
		}
	})
}

// TestHistoryCompact: the compact form writes what most records share
// once and each record where it differs, and decodes to the History it
// was written from, whatever its records hold: records without a job or
// a reason among ones with, locations that are the start of another,
// that share no start, that share a start ending inside a UTF-8
// sequence, a single record, and random histories.
func TestHistoryCompact(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := func(loc string, min int, reason Reason, job string) Record {
		return Record{Location: loc, Time: t0.Add(time.Duration(min) * time.Minute), Reason: reason, JobID: flinkapi.JobID(job)}
	}
	tests := []struct {
		name string
		recs []Record
		want string
	}{
		{"empty", nil, `{"formatVersion":3}`},
		{"one record", []Record{rec("s3://b/sp-1", 0, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","records":[{"location":"s3://b/sp-1","time":"2026-03-01T12:00:00Z"}]}`},
		{"shared", []Record{rec("s3://b/sp-1", 0, ReasonScheduled, "j"), rec("s3://b/sp-2", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","prefix":"s3://b/sp-","records":[{"location":"1","time":"2026-03-01T12:00:00Z"},{"location":"2","time":"2026-03-01T12:10:00Z"}]}`},
		{"without job and reason among ones with", []Record{rec("s3://b/sp-1", 0, "", ""), rec("s3://b/sp-2", 10, ReasonScheduled, "j"), rec("s3://b/sp-3", 20, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","prefix":"s3://b/sp-","records":[{"location":"1","time":"2026-03-01T12:00:00Z","reason":"","jobID":""},{"location":"2","time":"2026-03-01T12:10:00Z"},{"location":"3","time":"2026-03-01T12:20:00Z"}]}`},
		{"most without", []Record{rec("s3://b/sp-1", 0, "", ""), rec("s3://b/sp-2", 10, "", ""), rec("s3://b/sp-3", 20, ReasonUser, "j")},
			`{"formatVersion":3,"prefix":"s3://b/sp-","records":[{"location":"1","time":"2026-03-01T12:00:00Z"},{"location":"2","time":"2026-03-01T12:10:00Z"},{"location":"3","time":"2026-03-01T12:20:00Z","reason":"User","jobID":"j"}]}`},
		{"equally common: the least", []Record{rec("s3://b/x", 0, ReasonUser, "k"), rec("s3://b/y", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","prefix":"s3://b/","records":[{"location":"x","time":"2026-03-01T12:00:00Z","reason":"User","jobID":"k"},{"location":"y","time":"2026-03-01T12:10:00Z"}]}`},
		{"a location starts another", []Record{rec("s3://b/sp", 0, ReasonScheduled, "j"), rec("s3://b/sp-2", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","prefix":"s3://b/s","records":[{"location":"p","time":"2026-03-01T12:00:00Z"},{"location":"p-2","time":"2026-03-01T12:10:00Z"}]}`},
		{"nothing shared", []Record{rec("file:/sp/1", 0, ReasonScheduled, "j"), rec("s3://b/sp-2", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","records":[{"location":"file:/sp/1","time":"2026-03-01T12:00:00Z"},{"location":"s3://b/sp-2","time":"2026-03-01T12:10:00Z"}]}`},
		{"inside a UTF-8 sequence", []Record{rec("s3://b/é", 0, ReasonScheduled, "j"), rec("s3://b/è", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","prefix":"s3://b/","records":[{"location":"é","time":"2026-03-01T12:00:00Z"},{"location":"è","time":"2026-03-01T12:10:00Z"}]}`},
		{"same location twice (by hand)", []Record{rec("a", 0, ReasonScheduled, "j"), rec("a", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","records":[{"location":"a","time":"2026-03-01T12:00:00Z"},{"location":"a","time":"2026-03-01T12:10:00Z"}]}`},
		{"without a location (by hand)", []Record{rec("", 0, ReasonScheduled, "j"), rec("a", 10, ReasonScheduled, "j")},
			`{"formatVersion":3,"jobID":"j","reason":"Scheduled","records":[{"location":"","time":"2026-03-01T12:00:00Z"},{"location":"a","time":"2026-03-01T12:10:00Z"}]}`},
	}
	for _, tt := range tests {
		h := History{FormatVersion: FormatVersion, Records: tt.recs}
		b, err := json.Marshal(h)
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: json.Marshal = %s, %v\nwant %s", tt.name, b, err, tt.want)
		}
		var back History
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: %s does not decode: %v", tt.name, b, err)
		}
		if diff := cmp.Diff(h, back); diff != "" {
			t.Errorf("%s: round trip (-want +got):\n%s", tt.name, diff)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	locs := []string{"s3://b/sp/savepoint-a1b2c3-", "s3://b/sp/savepoint-ffee00-", "file:/other/", "s3://b/sp/", "s3://b/spé/", ""}
	reasons := []Reason{ReasonScheduled, ReasonScheduled, ReasonUpdate, ReasonFound, ""}
	jobs := []flinkapi.JobID{"a1b2c3", "a1b2c3", "ffee00", ""}
	for c := range 2000 {
		h := History{FormatVersion: FormatVersion}
		for i := range rng.IntN(8) {
			r := Record{Location: locs[rng.IntN(len(locs))] + fmt.Sprint(rng.IntN(30)), Time: t0.Add(time.Duration(i) * time.Minute),
				Reason: reasons[rng.IntN(len(reasons))], JobID: jobs[rng.IntN(len(jobs))]}
			if cut := rng.IntN(len(r.Location) + 1); rng.IntN(5) == 0 && utf8.ValidString(r.Location[:cut]) {
				r.Location = r.Location[:cut] // JSON holds valid UTF-8 alone, in either form
			}
			if rng.IntN(4) == 0 {
				r.SetOnDelete(OnDeleteKeep)
			}
			if rng.IntN(4) == 0 {
				r.SetDisposal(Disposal{Attempts: 1, Error: DisposalRefused})
			}
			h.Records = append(h.Records, r)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back History
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("case %d: %s does not decode: %v", c, b, err)
		}
		if diff := cmp.Diff(h, back, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("case %d: round trip of %s (-want +got):\n%s", c, b, diff)
		}
	}
}

// TestHistoryOlderFormatsWritten: a History of format 2 or older (one
// decoded and not changed since) is written as that format wrote it,
// every record whole; Add makes it one of the compact format.
func TestHistoryOlderFormatsWritten(t *testing.T) {
	recs := goldenRecords()
	for v, want := range map[int]string{
		0: `{"records":[{"location":"s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab","time":"2026-03-01T12:00:00.5Z","reason":"Scheduled","jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90"}]}`,
		2: `{"formatVersion":2,"records":[{"location":"s3://bucket/savepoints/savepoint-a1b2c3-0123456789ab","time":"2026-03-01T12:00:00.5Z","reason":"Scheduled","jobID":"a1b2c3d4e5f60718293a4b5c6d7e8f90"}]}`,
	} {
		h := History{FormatVersion: v, Records: recs[:1]}
		if b, err := json.Marshal(h); err != nil || string(b) != want {
			t.Errorf("format %d: %s, %v; want %s", v, b, err, want)
		}
		if b, _ := json.Marshal(h.Add(recs[1])); !strings.HasPrefix(string(b), `{"formatVersion":3,"jobID":`) {
			t.Errorf("format %d after Add: %s, want the compact form", v, b)
		}
	}
}
