package savepoint

import (
	"strconv"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// Progress is how far an in-progress savepoint has come, for a UI or a
// command line: subtasks that acknowledged it out of all, and the size of the
// state written so far. It is a display value; a Kubernetes CRD that stores
// it needs controller-gen's crd:allowDangerousTypes=true for Fraction.
type Progress struct {
	// Acknowledged is the number of subtasks that acknowledged the savepoint.
	Acknowledged int `json:"acknowledged"`
	// Total is the number of subtasks that must acknowledge it.
	Total int `json:"total"`
	// Fraction is Acknowledged/Total, from 0 to 1; 0 when Total is 0.
	Fraction float64 `json:"fraction"`
	// Bytes is the size of the state acknowledged so far.
	Bytes int64 `json:"bytes"`
}

// NewProgress returns the progress in one checkpoint's statistics. Negative
// counts and sizes (Flink's "unknown") count as 0, and Acknowledged never
// exceeds Total.
func NewProgress(cs flinkapi.CheckpointStats) Progress {
	p := Progress{
		Total:        max(cs.NumSubtasks, 0),
		Acknowledged: max(cs.NumAcknowledgedSubtasks, 0),
		Bytes:        max(cs.StateSize, 0),
	}
	p.Acknowledged = min(p.Acknowledged, p.Total)
	if p.Total > 0 {
		p.Fraction = float64(p.Acknowledged) / float64(p.Total)
	}
	return p
}

// FindProgress returns the progress of the savepoint of s in the job's
// checkpoint statistics: the earliest savepoint IN_PROGRESS in History that
// was triggered at or after s.TriggerTime-ClockSkew. ok is false when there
// is none, or when s has no TriggerTime.
func FindProgress(s Status, stats *flinkapi.CheckpointStatistics) (p Progress, ok bool) {
	if stats == nil || s.TriggerTime.IsZero() {
		return Progress{}, false
	}
	from := s.TriggerTime.Add(-ClockSkew)
	var best *flinkapi.CheckpointStats
	for i := range stats.History {
		cs := &stats.History[i]
		if !cs.IsSavepoint || cs.Status != flinkapi.CheckpointInProgress || cs.TriggerTime.Before(from) {
			continue
		}
		if best == nil || cs.TriggerTime.Before(best.TriggerTime) || cs.TriggerTime.Equal(best.TriggerTime) && cs.ID < best.ID {
			best = cs
		}
	}
	if best == nil {
		return Progress{}, false
	}
	return NewProgress(*best), true
}

// String returns "3/4 subtasks (75%), 1.2 MiB". The percentage is rounded
// down, so 100% means every subtask acknowledged.
func (p Progress) String() string {
	b := make([]byte, 0, 48)
	b = strconv.AppendInt(b, int64(p.Acknowledged), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(p.Total), 10)
	b = append(b, " subtasks ("...)
	pct := 0
	if p.Total > 0 {
		pct = int(int64(min(max(p.Acknowledged, 0), p.Total)) * 100 / int64(p.Total))
	}
	b = strconv.AppendInt(b, int64(pct), 10)
	b = append(b, "%), "...)
	b = appendBytes(b, p.Bytes)
	return string(b)
}

// appendBytes appends n as "512 B", "1.2 MiB", "3.0 GiB" (binary units, one
// decimal).
func appendBytes(b []byte, n int64) []byte {
	if n < 1024 {
		b = strconv.AppendInt(b, n, 10)
		return append(b, " B"...)
	}
	const units = "KMGTPE"
	v := float64(n) / 1024
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v >= 1023.95 && i < len(units)-1 { // would print as "1024.0"
		v /= 1024
		i++
	}
	b = strconv.AppendFloat(b, v, 'f', 1, 64)
	return append(b, ' ', units[i], 'i', 'B')
}
