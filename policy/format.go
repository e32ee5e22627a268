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

// UnmarshalJSON decodes h. A HealthHistory of a FormatVersion newer
// than this release reads decodes to one that holds that version alone,
// its samples unread: a struct that embeds it (a Kubernetes status)
// still decodes, and CheckFormat (and EvaluateHealth) refuses it where it
// is used.
func (h *HealthHistory) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	var v struct {
		FormatVersion int `json:"formatVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if checkFormat("HealthHistory", v.FormatVersion) != nil {
		*h = HealthHistory{FormatVersion: v.FormatVersion}
		return nil
	}
	type plain HealthHistory // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*h = HealthHistory(p)
	return nil
}

// CheckFormat returns an error matching ErrUnknownFormat, naming the type
// and the version, for a HealthHistory of a format version this release
// does not read (decoded from what a later flinkkit wrote: it holds no
// samples); nil otherwise. Check it before h is used or written back.
func (h HealthHistory) CheckFormat() error {
	return checkFormat("HealthHistory", h.FormatVersion)
}
