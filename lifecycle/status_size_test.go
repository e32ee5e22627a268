package lifecycle

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/policy"
	"github.com/flinkkit/flinkkit/savepoint"
	"github.com/google/go-cmp/cmp"
)

// TestStoredStatusSize: the stored status of a job with a savepoint
// every 10 minutes and a retention of maxAge 24h takes less than 16 KB
// after two days (the savepoint history in its compact form), and decodes
// to a status whose history holds the same records.
func TestStoredStatusSize(t *testing.T) {
	b := storedStatus(t, SavepointPolicy{MaxAge: policy.Duration(24 * time.Hour)})
	if len(b) >= 16<<10 {
		t.Errorf("the stored status takes %d bytes, want less than 16 KB", len(b))
	}
	var st JobStatus
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	h := st.Savepoints
	if h.FormatVersion != savepoint.FormatVersion || len(h.Records) < 24*6 {
		t.Fatalf("history of format %d with %d records, want format %d and a day of savepoints", h.FormatVersion, len(h.Records), savepoint.FormatVersion)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	var plain struct {
		Records []savepoint.Record `json:"records"`
	}
	if err := json.Unmarshal(fields["savepoints"], &plain); err != nil {
		t.Fatal(err)
	}
	for i, r := range h.Records {
		if r.Location == plain.Records[i].Location || r.JobID == "" || r.Reason != savepoint.ReasonScheduled {
			t.Fatalf("record %d: %+v, stored as %+v: want the location after the shared prefix, the shared job and reason", i, r, plain.Records[i])
		}
	}
	again, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	var back JobStatus
	if err := json.Unmarshal(again, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st.Savepoints, back.Savepoints); diff != "" {
		t.Errorf("the history written again (-first +again):\n%s", diff)
	}
	t.Logf("stored status: %d bytes, its savepoint history %d bytes for %d records", len(b), len(fields["savepoints"]), len(h.Records))
}
