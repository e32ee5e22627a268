package flinkapi

import (
	"encoding/base64"
	"net/url"
	"strings"

	"github.com/flinkkit/flinkkit/internal/redact"
)

// redactedText stands in for credentials in every message of the package.
const redactedText = redact.Mark

// redactor removes the client's own credentials, and the user info of any
// URL, from text that the client turns into a message: server answers,
// transport errors, Location headers. It is held by pointer, so that
// printing a Client with %+v shows an address, not the secrets.
type redactor struct {
	secrets *redact.Set
}

func newRedactor(s settings) *redactor {
	var base []string
	if s.basicUser != "" {
		cred := s.basicUser + ":" + s.basicPass
		base = append(base, base64.StdEncoding.EncodeToString([]byte(cred)), base64.RawStdEncoding.EncodeToString([]byte(cred)))
		if s.basicPass != "" {
			base = append(base, s.basicPass)
		}
	}
	if s.bearer != "" {
		base = append(base, s.bearer)
	}
	return &redactor{secrets: redact.New(base...)}
}

// with returns a redactor that removes the values a request marks secret
// too (RunJarRequest.Secrets); r itself when there are none.
func (r *redactor) with(secrets []string) *redactor {
	if len(secrets) == 0 {
		return r
	}
	var base *redact.Set
	if r != nil {
		base = r.secrets
	}
	return &redactor{secrets: base.With(secrets...)}
}

// clean returns s without the client's credentials and without the user
// info of any URL in it.
func (r *redactor) clean(s string) string {
	if r != nil {
		s = r.secrets.Clean(s, redactedText)
	}
	return redactUserinfo(s)
}

// redactUserinfo replaces the user info of every "scheme://user:pw@host" in
// s with xxxxx. A URL ends at white space or a quote; everything from its
// "://" to the last '@' before that end is replaced, which errs on the side
// of hiding too much: a password may itself hold '/', '?' or '#'.
func redactUserinfo(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		start := i + len("://")
		end := start + urlEnd(rest[start:])
		at := strings.LastIndexByte(rest[start:end], '@')
		if at < 0 {
			b.WriteString(rest[:end])
			rest = rest[end:]
			continue
		}
		b.WriteString(rest[:start])
		b.WriteString(redactedText)
		rest = rest[start+at:] // from the '@' on
	}
	b.WriteString(rest)
	return b.String()
}

// urlEnd returns the length of the URL that starts s: up to white space, a
// quote or an angle bracket.
func urlEnd(s string) int {
	if i := strings.IndexAny(s, " \t\r\n\"'`<>"); i >= 0 {
		return i
	}
	return len(s)
}

// redactBaseURL hides everything of a base URL given to NewClient from
// after "://" (or its start) to its last '@': the user info, however
// malformed the URL is.
func redactBaseURL(raw string) string {
	at := strings.LastIndexByte(raw, '@')
	if at < 0 {
		return raw
	}
	start := 0
	if i := strings.Index(raw[:at], "://"); i >= 0 {
		start = i + len("://")
	}
	return raw[:start] + redactedText + raw[at:]
}

// redactLocation formats the target of a redirect without credentials:
// user info, query and fragment (which carry tokens in login flows) are
// replaced with xxxxx.
func redactLocation(u *url.URL) string {
	v := *u
	if v.User != nil {
		v.User = url.User(redactedText)
	}
	if v.RawQuery != "" || v.ForceQuery {
		v.RawQuery, v.ForceQuery = redactedText, false
	}
	hadFragment := v.Fragment != "" || v.RawFragment != ""
	v.Fragment, v.RawFragment = "", ""
	s := v.String()
	if hadFragment {
		s += "#" + redactedText
	}
	return s
}

// redactedError is an error whose message had credentials removed; it
// unwraps to the original, so errors.Is and errors.As still see the cause.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// cleanError returns err, wrapped so that its message carries no
// credentials if it did.
func (r *redactor) cleanError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if c := r.clean(msg); c != msg {
		return &redactedError{msg: c, err: err}
	}
	return err
}
