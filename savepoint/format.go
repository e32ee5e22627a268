package savepoint

import (
	"bytes"
	"encoding/json"

	"github.com/flinkkit/flinkkit/internal/format"
)

// FormatVersion is the newest format of the stored types of this package
// (History) that this release writes and reads. It is bumped whenever a
// stored type's JSON changes meaning; every older version stays readable.
const FormatVersion = 2

// ErrUnknownFormat is matched by errors.Is for a stored value of a format
// version newer than FormatVersion: it was written by a later flinkkit,
// and this one refuses it rather than act on it or write it back half
// understood. It is the same value as lifecycle's and policy's
// ErrUnknownFormat.
var ErrUnknownFormat = format.ErrUnknown

// UnmarshalJSON decodes h from the object History marshals to, and from
// the bare array of records written before format versions existed (read
// as version 1). A History of a FormatVersion newer than this release
// reads decodes to one that holds that version alone, its records
// unread: a struct that embeds it (a Kubernetes status) still decodes,
// and CheckFormat refuses it where it is used.
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
	type plain History // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*h = History(p)
	return nil
}

// CheckFormat returns an error matching ErrUnknownFormat, naming the type
// and the version, for a History of a format version this release does
// not read (decoded from what a later flinkkit wrote: it holds no
// records); nil otherwise. Check it before h is used or written back.
func (h History) CheckFormat() error {
	return format.Check("savepoint.History", h.FormatVersion, FormatVersion)
}
