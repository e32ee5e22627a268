package lifecycle

import "github.com/flinkkit/flinkkit/internal/format"

// FormatVersion is the newest format of what this package stores (the
// files of a FileStore) that this release writes and reads. It is bumped
// whenever a stored format changes meaning; every older version stays
// readable.
const FormatVersion = 1

// ErrUnknownFormat is matched by errors.Is for stored data of a format
// version newer than FormatVersion: it was written by a later flinkkit,
// and this one refuses it rather than act on it or write it back half
// understood. It is the same value as savepoint's and policy's
// ErrUnknownFormat.
var ErrUnknownFormat = format.ErrUnknown
