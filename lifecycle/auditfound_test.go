package lifecycle

import (
	"testing"
	"time"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/savepoint"
)

// TestAuditFoundOlderThanOwnSavepoint: the status records its own
// savepoint at the time its trigger was recorded, which was sent, and
// completed, later; a savepoint taken from outside meanwhile completed
// before it. The audit finds that one on storage with a later time than
// the record's: it enters the history, and the restore point stays the
// status's own savepoint, which storage shows completed after it.
func TestAuditFoundOlderThanOwnSavepoint(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	job := flinkapi.JobID("6762356c1669990f89575b2f0eedf8ab")
	own := savepoint.Record{Location: "file:/sp/savepoint-676235-000000000001", Time: t0, JobID: job, Reason: savepoint.ReasonStop}
	var st JobStatus
	st.JobID, st.Latest = job, own
	st.Savepoints = st.Savepoints.Add(own)
	a := StorageAudit{Entries: []AuditEntry{
		{Path: "/sp/savepoint-676235-000000000001", Kind: AuditRestorePoint, JobID: job, Modified: t0.Add(15 * time.Second)},
		{Path: "/sp/savepoint-676235-000000000002", Kind: AuditUnrecorded, JobID: job, Modified: t0.Add(time.Second)},
	}}
	var do AuditApplied
	(&Controller{}).recordFound(&st, &a, &do, t0.Add(time.Minute))
	if st.Latest.Location != own.Location || do.RestorePoint != "" || len(do.Recorded) != 1 {
		t.Errorf("latest %q, restore point moved to %q, recorded %v: the found savepoint completed before the status's own", st.Latest.Location, do.RestorePoint, do.Recorded)
	}
}
