// Package redact removes secret values from text that is about to be
// reported: errors, log lines, a job's status.
package redact

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mark is what stands in place of a secret value.
const Mark = "xxxxx"

// Set is a set of secret values, in every form an echo of them takes: as
// they are, escaped in a URL (query and path), coerced to UTF-8 by a JSON
// encoder, and quoted by Go's %q or Java's string escapes. The zero Set and
// a nil *Set hold none.
type Set struct {
	forms []string // longest first, so that a secret that holds another is not left half shown
}

// New returns the set of the given secrets; empty ones are ignored.
func New(secrets ...string) *Set {
	return (*Set)(nil).With(secrets...)
}

// With returns a set holding s's secrets and more; s is unchanged.
func (s *Set) With(more ...string) *Set {
	out := &Set{}
	if s != nil {
		out.forms = slices.Clone(s.forms)
	}
	for _, sec := range more {
		if sec == "" {
			continue
		}
		q := strconv.Quote(sec)
		out.forms = append(out.forms, sec, url.QueryEscape(sec), url.PathEscape(sec), jsonUTF8(sec), q[1:len(q)-1])
	}
	slices.SortFunc(out.forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	out.forms = slices.Compact(out.forms)
	return out
}

// Empty reports whether s holds no secret.
func (s *Set) Empty() bool { return s == nil || len(s.forms) == 0 }

// Clean returns text with every form of every secret replaced by mark.
func (s *Set) Clean(text, mark string) string {
	if s == nil || text == "" {
		return text
	}
	for _, f := range s.forms {
		if strings.Contains(text, f) {
			text = strings.ReplaceAll(text, f, mark)
		}
	}
	return text
}

// Shows reports whether text holds any form of any secret.
func (s *Set) Shows(text string) bool {
	if s == nil {
		return false
	}
	for _, f := range s.forms {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// jsonUTF8 replaces each byte of s that is not UTF-8 with U+FFFD, as
// encoding/json does.
func jsonUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
