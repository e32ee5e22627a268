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
// as version 1). A FormatVersion newer than this release reads is refused
// with an error matching ErrUnknownFormat; h is then left as it was.
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
	type plain History // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if err := format.Check("savepoint.History", p.FormatVersion, FormatVersion); err != nil {
		return err
	}
	*h = History(p)
	return nil
}
