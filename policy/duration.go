package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Duration is a time.Duration that is written to and read from JSON as a
// string in the notation of time.ParseDuration ("90s", "1h30m"), as
// Kubernetes resources write durations. The zero Duration means "unset" in
// the policy types; their WithDefaults methods fill it in.
//
// Unmarshalling accepts only strings (and null, which leaves the value
// unchanged). A JSON number is rejected with an error that says to write a
// string, because a bare number has no unit and readers disagree on whether
// it counts seconds, milliseconds or nanoseconds.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=duration
// +kubebuilder:validation:Pattern=`^(0|\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.String ("1m30s"), which UnmarshalJSON
// reads back.
func (d Duration) String() string { return time.Duration(d).String() }

// parseDuration reads a duration written as time.ParseDuration accepts it
// ("90s", "1h30m", "250ms"). The error names the text that was not
// understood.
func parseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("policy: duration %q: want a number with a unit, such as \"90s\" or \"1h30m\"", clip(s, 64))
	}
	return Duration(d), nil
}

// MarshalJSON writes d as a JSON string, such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// errDurationNotString is returned for JSON numbers, objects, arrays and
// booleans.
var errDurationNotString = errors.New("policy: a duration must be a JSON string with a unit, such as \"90s\" or \"1h30m\"")

// UnmarshalJSON reads a JSON string such as "90s". null leaves d unchanged;
// anything else, numbers included, is an error.
func (d *Duration) UnmarshalJSON(data []byte) error {
	data = bytes.Trim(data, " \t\r\n") // JSON's whitespace, no other
	if string(data) == "null" {
		return nil
	}
	if len(data) == 0 || data[0] != '"' {
		return fmt.Errorf("%w; got %s", errDurationNotString, clip(string(data), 32))
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("policy: duration: %w", err)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// clip shortens s to at most n bytes for error messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
