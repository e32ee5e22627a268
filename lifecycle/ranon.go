package lifecycle

import "github.com/flinkkit/flinkkit/savepoint"

// latestRanOn reports that st.Latest is a checkpoint of the deployment's
// job recorded while the job ran on: one an adoption took from a running
// job that retains its checkpoints. A checkpoint recorded when its job
// ended (a suspend or teardown that found it ended) is in the savepoint
// history as well; one a job was started from is another job's. Flink
// discards such a checkpoint once the job's next one completes: it is a
// restore point only as far as a reading or the storage shows it
// retained (replacer.unreadCheckpoint).
func latestRanOn(st *JobStatus) bool {
	l := st.Latest
	if l.Location == "" || l.JobID == "" || l.JobID != st.JobID || hasLocation(st.Savepoints.Records, l.Location) {
		return false
	}
	_, _, ok := checkpointOf(l.Location)
	return ok
}

// newestRecord is the record of rs with the latest time (the zero
// Record for none).
func newestRecord(rs []savepoint.Record) savepoint.Record {
	var out savepoint.Record
	for _, r := range rs {
		if out.Location == "" || r.Time.After(out.Time) {
			out = r
		}
	}
	return out
}
