package policy

import (
	"bytes"
	"encoding/json"

	"github.com/flinkkit/flinkkit/internal/format"
)

// FormatVersion is the newest format of the stored types of this package
// (UpdatePolicy, RestartPolicy, HealthPolicy, RescalePolicy,
// RestoreRequest, HealthHistory) that this release writes and reads. It is
// bumped whenever a stored type's JSON changes meaning; every older
// version stays readable.
const FormatVersion = 1

// ErrUnknownFormat is matched by errors.Is for a stored value of a format
// version newer than FormatVersion: written for a later flinkkit, it is
// refused rather than acted on half understood. It is the same value as
// lifecycle's and savepoint's ErrUnknownFormat.
var ErrUnknownFormat = format.ErrUnknown

// checkFormat returns the error for a policy of a format version this
// release cannot read, or nil. The type's name is built only for the
// error: a version this release reads costs no allocation.
func checkFormat(typ string, version int) error {
	if version >= 0 && version <= FormatVersion {
		return nil
	}
	return format.Check("policy."+typ, version, FormatVersion)
}

// UnmarshalJSON decodes h, and refuses a FormatVersion newer than this
// release reads with an error matching ErrUnknownFormat; h is then left
// as it was.
func (h *HealthHistory) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	type plain HealthHistory // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if err := checkFormat("HealthHistory", p.FormatVersion); err != nil {
		return err
	}
	*h = HealthHistory(p)
	return nil
}
