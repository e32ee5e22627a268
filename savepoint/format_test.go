package savepoint

import (
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

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
		Reason: ReasonImported, JobID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", OnDelete: OnDeleteKeep,
		Disposal: Disposal{Attempts: 2, Error: DisposalRefused, Message: "java.io.IOException: Permission denied",
			RetryAt: time.Date(2026, 3, 1, 13, 5, 0, 0, time.UTC), GaveUp: true}})
	r[0].OnDelete = OnDeleteDispose
	r[0].Disposal = Disposal{Attempts: 1, Error: DisposalUnreachable, Message: "503 Service Unavailable",
		RetryAt: time.Date(2026, 3, 1, 13, 1, 0, 0, time.UTC), GaveUp: true}
	r[1].OnDelete = OnDeleteKeep
	r[1].Disposal = Disposal{Attempts: 3, Error: DisposalFailed, Message: "the disposal failed", RetryAt: time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC), GaveUp: true}
	return []Record{r[2], r[0], r[1]}
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
	for in, v := range map[string]int{`{"formatVersion":3,"records":[]}`: 3, `{"formatVersion":-1}`: -1,
		`{"formatVersion":3,"records":{"a":{"where":["x"]}},"more":1}`: 3} {
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
	for _, in := range []string{`[1]`, `{"records":{}}`, `"x"`, `{"formatVersion":"1"}`} {
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
			if a, b := h.Records[i], back.Records[i]; a.Location != b.Location || !a.Time.Equal(b.Time) || a.Reason != b.Reason || a.JobID != b.JobID {
				t.Fatalf("round trip of %q: record %d %+v, then %+v", in, i, a, b)
			}
		}
	})
}
