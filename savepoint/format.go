package savepoint

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
)

// FormatVersion is the newest format of the stored types of this package
// (History) that this release writes and reads. It is bumped whenever a
// stored type's JSON changes meaning; every older version stays readable.
// Format 2 added the records' onDelete and disposal; format 3 is the
// compact form of a History (see History.MarshalJSON).
const FormatVersion = 3

// formatCompact is the first format of the compact form of a History.
const formatCompact = 3

// compactHistory is the JSON of a History of format 3 or later: what
// most records share written once, each record writing only where it
// differs (see History.MarshalJSON).
type compactHistory struct {
	FormatVersion int            `json:"formatVersion"`
	JobID         flinkapi.JobID `json:"jobID,omitempty"`
	Reason        Reason         `json:"reason,omitempty"`
	Prefix        string         `json:"prefix,omitempty"`
	Records       []compactEntry `json:"records,omitempty"`
}

// compactEntry is one record of a compactHistory: Location follows the
// history's Prefix, and a nil Reason or JobID is the history's.
type compactEntry struct {
	Location     string          `json:"location"`
	Time         time.Time       `json:"time"`
	Reason       *Reason         `json:"reason,omitempty"`
	JobID        *flinkapi.JobID `json:"jobID,omitempty"`
	*RecordExtra `json:",inline"`
}

// MarshalJSON writes h in the form of its FormatVersion. A History of
// format 3 or later (what Add and Remove return) is written compact:
//
//	{"formatVersion":3,"jobID":"…","reason":"Scheduled","prefix":"s3://bucket/sp/savepoint-a1b2c3-",
//	 "records":[{"location":"0123456789ab","time":"…"},
//	            {"location":"fedcba987654","time":"…","reason":"Update"}]}
//
// "jobID" and "reason" are those most records have (of equally common
// ones, the least string), written once: a record writes its own only
// where it differs ("jobID":"" for a record without one in a History
// whose "jobID" is set). "prefix", for two records or more, is the
// longest start that every location shares, each keeping one byte at
// least (and cut between whole UTF-8 sequences): a record's "location"
// is what follows it. A location elsewhere (an imported savepoint's)
// shortens it for all. Each is left out when empty. Older formats are
// written as they were: {"formatVersion":2,"records":[...]} with every
// record whole.
func (h History) MarshalJSON() ([]byte, error) {
	if h.FormatVersion < formatCompact || h.FormatVersion > FormatVersion {
		type plain History // without this method
		return json.Marshal(plain(h))
	}
	c := compactHistory{FormatVersion: h.FormatVersion}
	if len(h.Records) == 0 {
		return json.Marshal(c)
	}
	c.JobID = mostCommon(h.Records, func(r *Record) flinkapi.JobID { return r.JobID })
	c.Reason = mostCommon(h.Records, func(r *Record) Reason { return r.Reason })
	c.Prefix = sharedPrefix(h.Records)
	c.Records = make([]compactEntry, len(h.Records))
	for i := range h.Records {
		r := &h.Records[i]
		e := compactEntry{Location: r.Location[len(c.Prefix):], Time: r.Time, RecordExtra: r.RecordExtra}
		if r.Reason != c.Reason {
			e.Reason = &r.Reason
		}
		if r.JobID != c.JobID {
			e.JobID = &r.JobID
		}
		c.Records[i] = e
	}
	return json.Marshal(c)
}

// mostCommon returns the value of key that most of rs have; of equally
// common ones, the least.
func mostCommon[K ~string](rs []Record, key func(*Record) K) K {
	// Runs of one value are common (a job's records, periodic ones):
	// counted a run at a time.
	counts := make(map[K]int, 4)
	for i := 0; i < len(rs); {
		k, j := key(&rs[i]), i+1
		for j < len(rs) && key(&rs[j]) == k {
			j++
		}
		counts[k] += j - i
		i = j
	}
	var best K
	n := -1
	for k, c := range counts {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}

// sharedPrefix returns the longest start of every location of rs that
// leaves at least one byte of each, cut before a UTF-8 sequence starts;
// empty for fewer than two records.
func sharedPrefix(rs []Record) string {
	if len(rs) < 2 {
		return ""
	}
	p := rs[0].Location
	for i := 1; i < len(rs) && p != ""; i++ {
		l := rs[i].Location
		n := min(len(p), len(l))
		k := 0
		for k < n && p[k] == l[k] {
			k++
		}
		p = p[:k]
		if len(p) == len(l) && p != "" {
			p = p[:len(p)-1]
		}
	}
	if len(p) == len(rs[0].Location) && p != "" {
		p = p[:len(p)-1]
	}
	for p != "" && !utf8.RuneStart(rs[0].Location[len(p)]) {
		p = p[:len(p)-1]
	}
	return p
}

// ErrUnknownFormat is matched by errors.Is for a stored value of a format
// version newer than FormatVersion: it was written by a later flinkkit,
// and this one refuses it rather than act on it or write it back half
// understood. It is the same value as lifecycle's and policy's
// ErrUnknownFormat.
var ErrUnknownFormat = format.ErrUnknown

// UnmarshalJSON decodes h from the object History marshals to, in any
// format (the compact one of format 3 and the one of formats 1 and 2,
// every record whole), and from the bare array of records written before
// format versions existed (read as version 1). A History of a
// FormatVersion newer than this release reads decodes to one that holds
// that version alone, its records unread: a struct that embeds it (a
// Kubernetes status) still decodes, and CheckFormat refuses it where it
// is used.
func (h *History) UnmarshalJSON(b []byte) error {
	t := bytes.TrimLeft(b, " \t\r\n")
	switch {
	case bytes.HasPrefix(t, []byte("null")):
		return nil
	case bytes.HasPrefix(t, []byte("[")):
		var recs []Record
		if err := json.Unmarshal(b, &recs); err != nil {
			return err
		}
		*h = History{Records: recs}
		return nil
	}
	var v struct {
		FormatVersion int `json:"formatVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if format.Check("savepoint.History", v.FormatVersion, FormatVersion) != nil {
		*h = History{FormatVersion: v.FormatVersion}
		return nil
	}
	if v.FormatVersion >= formatCompact {
		return h.unmarshalCompact(b)
	}
	type plain History // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*h = History(p)
	return nil
}

// unmarshalCompact decodes h from its compact form (MarshalJSON).
func (h *History) unmarshalCompact(b []byte) error {
	var c compactHistory
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	out := History{FormatVersion: c.FormatVersion}
	if c.Records != nil {
		out.Records = make([]Record, len(c.Records))
	}
	for i, e := range c.Records {
		r := Record{Location: c.Prefix + e.Location, Time: e.Time, Reason: c.Reason, JobID: c.JobID, RecordExtra: e.RecordExtra}
		if e.Reason != nil {
			r.Reason = *e.Reason
		}
		if e.JobID != nil {
			r.JobID = *e.JobID
		}
		out.Records[i] = r
	}
	*h = out
	return nil
}

// CheckFormat returns an error matching ErrUnknownFormat, naming the type
// and the version, for a History of a format version this release does
// not read (decoded from what a later flinkkit wrote: it holds no
// records); nil otherwise. Check it before h is used or written back.
func (h History) CheckFormat() error {
	return format.Check("savepoint.History", h.FormatVersion, FormatVersion)
}
