package format

import (
	"errors"
	"fmt"
)

// ErrUnknown is matched by errors.Is for every *Error. The packages with
// stored types export it under their own names (lifecycle, savepoint and
// policy's ErrUnknownFormat): they are the same value.
var ErrUnknown = errors.New("flinkkit: unknown stored format")

// Error reports a stored value whose format version this release cannot
// read.
type Error struct {
	// Type names the stored type, such as "lifecycle.Progress".
	Type string
	// Version is the version found; Newest the newest this release reads.
	Version, Newest int
}

// Error says what was found and what to do.
func (e *Error) Error() string {
	if e.Version < 0 {
		return fmt.Sprintf("%s: format version %d is not a format version (versions start at 1)", e.Type, e.Version)
	}
	return fmt.Sprintf("%s: format version %d is newer than this flinkkit reads (up to %d): it was written by a later flinkkit; "+
		"run that release or a later one, and do not write this value back with this one", e.Type, e.Version, e.Newest)
}

// Is reports whether target is ErrUnknown.
func (e *Error) Is(target error) bool { return target == ErrUnknown }

// Check returns nil if version is 0 (not written: read as version 1) or
// between 1 and newest, and an *Error otherwise.
func Check(typ string, version, newest int) error {
	if version >= 0 && version <= newest {
		return nil
	}
	return &Error{Type: typ, Version: version, Newest: newest}
}
