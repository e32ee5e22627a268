package flinkapi

import "time"

// Flink reports instants as epoch milliseconds and durations as
// milliseconds, with -1 (sometimes 0) for "none". These two functions are the
// only place where such numbers become time.Time and time.Duration.

// FromMillis converts Flink's epoch milliseconds to a time.Time in UTC.
// Zero or negative values (Flink's "not set") give the zero time.Time.
func FromMillis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// DurationFromMillis converts Flink's millisecond durations. Negative values
// (Flink's "unknown") give 0.
func DurationFromMillis(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	const maxMs = int64(1<<63-1) / int64(time.Millisecond)
	if ms > maxMs {
		ms = maxMs
	}
	return time.Duration(ms) * time.Millisecond
}
