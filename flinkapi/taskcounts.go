package flinkapi

import (
	"encoding/json"
	"strings"
)

// taskCountsWire decodes a "tasks" object of GET /jobs/overview (lower-case
// state names and "total") or of a vertex of GET /jobs/:jobid (upper-case
// names). Flink sends about ten such counts per job, so it reads the
// common shape, an object of small integers, in one pass of its own; an
// object of any other shape (escapes in a name, a number that is not a
// small integer, a nested value) is decoded by encoding/json, with its
// answers and errors.
type taskCountsWire TaskCounts

// UnmarshalJSON decodes one tasks object.
func (t *taskCountsWire) UnmarshalJSON(b []byte) error {
	if fastTaskCounts(t, b) {
		return nil
	}
	type plain TaskCounts // no UnmarshalJSON method: encoding/json's own decoding
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = taskCountsWire(p)
	return nil
}

// fastTaskCounts decodes b into t if it is null or an object whose values
// are all integers of at most 18 digits and whose names have no escapes;
// it reports false, with t unchanged, for anything else.
func fastTaskCounts(t *taskCountsWire, b []byte) bool {
	i := skipSpace(b, 0)
	if i+4 <= len(b) && string(b[i:i+4]) == "null" {
		return skipSpace(b, i+4) == len(b)
	}
	if i >= len(b) || b[i] != '{' {
		return false
	}
	var out taskCountsWire
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return false
		}
		*t = out
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		start := i + 1
		i = start
		for i < len(b) && b[i] != '"' {
			if b[i] == '\\' || b[i] < 0x20 {
				return false
			}
			i++
		}
		if i >= len(b) {
			return false
		}
		name := b[start:i]
		i = skipSpace(b, i+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		neg := i < len(b) && b[i] == '-'
		if neg {
			i++
		}
		digits := i
		var n int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			n = n*10 + int64(b[i]-'0')
			i++
		}
		if i == digits || i-digits > 18 || (b[digits] == '0' && i-digits > 1) {
			return false // no number, too long, or a leading zero
		}
		if neg {
			n = -n
		}
		if int64(int(n)) != n {
			return false
		}
		if f := out.field(name); f != nil {
			*f = int(n)
		} else if knownStateName(name) {
			return false // a known name in another case: encoding/json's matching decides
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return false
			}
			*t = out
			return true
		default:
			return false // a fraction, an exponent or a value of another kind
		}
	}
}

// field returns the count of the state Flink names so, in lower case (the
// job overview) or upper case (a vertex), or nil for another name.
// encoding/json would match names in any case; Flink writes only these two.
func (t *taskCountsWire) field(name []byte) *int {
	switch string(name) {
	case "created", "CREATED":
		return &t.Created
	case "scheduled", "SCHEDULED":
		return &t.Scheduled
	case "deploying", "DEPLOYING":
		return &t.Deploying
	case "running", "RUNNING":
		return &t.Running
	case "finished", "FINISHED":
		return &t.Finished
	case "canceling", "CANCELING":
		return &t.Canceling
	case "canceled", "CANCELED":
		return &t.Canceled
	case "failed", "FAILED":
		return &t.Failed
	case "reconciling", "RECONCILING":
		return &t.Reconciling
	case "initializing", "INITIALIZING":
		return &t.Initializing
	case "total", "TOTAL":
		return &t.Total
	}
	return nil
}

// knownStateName reports whether name is a state name of TaskCounts in
// any case.
func knownStateName(name []byte) bool {
	for _, s := range [...]string{"created", "scheduled", "deploying", "running", "finished",
		"canceling", "canceled", "failed", "reconciling", "initializing", "total"} {
		if strings.EqualFold(string(name), s) {
			return true
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
