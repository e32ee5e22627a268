// Package format holds what flinkkit's stored types share about their
// format versions: the error for a version this release cannot read, and
// the check every decoder and every operation runs before it trusts what
// a caller stored.
//
// A stored type (lifecycle.Progress, savepoint.History, policy's
// histories and policies) carries a FormatVersion field. Zero means the
// field was not written (a value built in code, or JSON written before the
// field existed) and reads as version 1; a version above the newest this
// release knows is refused with an *Error, which matches ErrUnknown, so a
// caller never acts on, or writes back, data it only half understood.
//
//	if err := format.Check("lifecycle.Progress", p.FormatVersion, 1); err != nil {
//		return err // lifecycle.Progress: format version 7 is newer than this flinkkit reads (1); ...
//	}
package format
