package lifecycle

import (
	"testing"
	"time"
)

// TestTimingWithDefaults: WithDefaults fills in exactly the unset fields,
// with the values Timing's comments state, and leaves set ones alone.
func TestTimingWithDefaults(t *testing.T) {
	got := Timing{}.WithDefaults()
	want := Timing{Savepoint: 10 * time.Minute, Stop: 5 * time.Minute, Submit: 5 * time.Minute,
		Poll: time.Second, Lag: 1.0 / 3, Cache: 3 * time.Second}
	if got != want {
		t.Errorf("Timing{}.WithDefaults() = %+v, want %+v", got, want)
	}
	set := Timing{Savepoint: time.Minute, Stop: 2 * time.Minute, Submit: 3 * time.Minute,
		Poll: 4 * time.Second, Lag: 0.5, Cache: 6 * time.Second}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults changed set fields: %+v, want %+v", got, set)
	}
	// A negative Lag takes the default, as the field says; so do
	// negative durations, as orDefault treats them.
	if got := (Timing{Lag: -1, Poll: -time.Second}).WithDefaults(); got.Lag != 1.0/3 || got.Poll != time.Second {
		t.Errorf("negative fields = Lag %v Poll %v, want the defaults", got.Lag, got.Poll)
	}
	// The timings the operations apply are the ones WithDefaults reports.
	d := Timing{}.WithDefaults()
	if (Timing{}).poll() != d.Poll || (Timing{}).cache() != d.Cache || (Timing{}).lag() != d.Lag {
		t.Errorf("poll/cache/lag disagree with WithDefaults")
	}
}
