package redact

import (
	"net/url"
	"strconv"
	"testing"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		text    string
		secrets []string
		want    string
	}{
		{"no secret here", []string{"pw"}, "no secret here"},
		{"user=alice pw=hunter2 again hunter2", []string{"hunter2"}, "user=alice pw=xx again xx"},
		{"token abc-long and abc", []string{"abc", "abc-long"}, "token xx and xx"},
		{"in a URL: ?p=" + url.QueryEscape("a b&c"), []string{"a b&c"}, "in a URL: ?p=xx"},
		{"quoted: " + strconv.Quote("tab\there"), []string{"tab\there"}, `quoted: "xx"`},
		{"kept", []string{""}, "kept"},
		{"", []string{"x"}, ""},
	} {
		s := New(tc.secrets...)
		if got := s.Clean(tc.text, "xx"); got != tc.want {
			t.Errorf("Clean(%q) with %q = %q, want %q", tc.text, tc.secrets, got, tc.want)
		}
		if s.Shows(s.Clean(tc.text, "xx")) {
			t.Errorf("Clean(%q) with %q still shows a secret", tc.text, tc.secrets)
		}
	}
	base := New("one")
	both := base.With("two")
	if !both.Shows("a two") || base.Shows("a two") || !both.Shows("one") {
		t.Error("With changed its receiver or lost a secret")
	}
	var none *Set
	if !none.Empty() || none.Shows("x") || none.Clean("x", "y") != "x" || !New("").Empty() {
		t.Error("a nil or empty set is not empty")
	}
}
