package flinkapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// addRealSeeds adds every recorded answer of a real cluster to the corpus.
func addRealSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "real", "*", "*"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
}

func FuzzParseErrorBody(f *testing.F) {
	addRealSeeds(f)
	f.Add([]byte(flinkError("Internal server error.", "<Exception on server side:\njava.lang.X: y\n\tat a.B.c(B.java:1)\nEnd of exception on server side>")))
	f.Add([]byte(`{"errors":[]}`))
	f.Add([]byte(`{"errors":[""]}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, trace := parseErrorBody(body)
		for _, m := range msgs {
			if strings.Contains(m, "\n") {
				t.Fatalf("message %q spans lines", m)
			}
			if m == "" {
				t.Fatal("empty message kept")
			}
		}
		e := newAPIError("GET", "/jobs", 404, body)
		if e.Error() == "" || e.StatusCode != 404 {
			t.Fatal("bad APIError")
		}
		_ = trace
		_ = IsJobNotFound(e) || IsTriggerNotFound(e) || IsTerminal(e) || IsUnknownRoute(e)
	})
}

func FuzzSplitJavaError(f *testing.F) {
	f.Add("org.apache.flink.runtime.rest.NotFoundException: Job x not found\n\tat a.B.c(B.java:1)")
	f.Add("java.util.concurrent.CompletionException: a.B: c\nCaused by: java.io.IOException: disk full\n\t... 3 more")
	f.Add("<Exception on server side:\njava.lang.X: y\nEnd of exception on server side>")
	f.Add("Caused by: ")
	f.Add(": : :")
	f.Fuzz(func(t *testing.T, s string) {
		msg, _ := splitJavaError(s)
		if strings.Contains(msg, "\n") {
			t.Fatalf("message %q spans lines", msg)
		}
		root := RootCause(s)
		if strings.Contains(root, "\n") {
			t.Fatalf("root cause %q spans lines", root)
		}
		if utf8.ValidString(s) && !utf8.ValidString(root) {
			t.Fatalf("root cause of valid UTF-8 is invalid: %q", root)
		}
		_ = IsJavaClassName(s)
	})
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.20.5", "2.3.0", "2.1-SNAPSHOT", "1.15", "v1.9.0", "1.2.3.4", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.Major < 1 {
			t.Fatalf("ParseVersion(%q) = %v", s, v)
		}
		// What it formats parses back to the same version.
		w, err := ParseVersion(v.String())
		if err != nil || w != v {
			t.Fatalf("round trip of %q: %v -> %v, %v", s, v, w, err)
		}
	})
}

// FuzzDecoders feeds arbitrary bytes to every response decoder of the
// client: none may panic, and what decodes converts without panicking.
func FuzzDecoders(f *testing.F) {
	addRealSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg DashboardConfig
		_ = json.Unmarshal(b, &cfg)
		var ov ClusterOverview
		_ = json.Unmarshal(b, &ov)
		var tms taskManagersWire
		_ = json.Unmarshal(b, &tms)
		var jl jobsListWire
		_ = json.Unmarshal(b, &jl)
		var jo jobsOverviewWire
		if json.Unmarshal(b, &jo) == nil {
			for i := range jo.Jobs {
				_ = jo.Jobs[i].convert()
			}
		}
		var jd jobDetailsWire
		if json.Unmarshal(b, &jd) == nil {
			_ = jd.convert()
		}
		var js jobStatusWire
		_ = json.Unmarshal(b, &js)
		var je jobExceptionsWire
		if json.Unmarshal(b, &je) == nil {
			_ = je.convert()
		}
		var rr map[string]vertexRequirementsWire
		_ = json.Unmarshal(b, &rr)
		var cs checkpointStatisticsWire
		if json.Unmarshal(b, &cs) == nil {
			_ = cs.Latest.Completed.convert()
			for i := range cs.History {
				_ = cs.History[i].convert()
			}
		}
		var cc checkpointConfigWire
		_ = json.Unmarshal(b, &cc)
		var ar asyncResultWire
		if json.Unmarshal(b, &ar) == nil {
			r := ar.convert()
			_ = r.Failure.Message()
		}
		var tr triggerResponseWire
		_ = json.Unmarshal(b, &tr)
		var ju jarUploadWire
		_ = json.Unmarshal(b, &ju)
		var jw jarsWire
		_ = json.Unmarshal(b, &jw)
		var rj runJarResponseWire
		_ = json.Unmarshal(b, &rj)
		var er executionResultWire
		if json.Unmarshal(b, &er) == nil {
			if r, err := er.convert(); err == nil {
				_ = r.Succeeded()
				_ = r.Failure.Message()
			} else if err.Error() == "" {
				t.Fatal("empty decode error")
			}
		}
		var aw accumulatorsWire
		if json.Unmarshal(b, &aw) == nil {
			for _, a := range aw.User {
				if n, ok := a.Int64(); !ok && n != 0 {
					t.Fatalf("%+v: %d without a value", a, n)
				}
			}
		}
	})
}

// FuzzCredentialsNeverInErrors builds base URLs with a secret in their user
// info and random other parts, and clients that send the secret as a basic
// auth password or a bearer token to a transport that echoes it in errors,
// error bodies and redirects. No error or log line may contain the secret.
// Nothing goes to the network.
func FuzzCredentialsNeverInErrors(f *testing.F) {
	f.Add("http", "admin", "S3CRET", "host:bad", "/", uint8(0)) // issue 16: the password was printed twice
	f.Add("http", "admin", "S3CRET", "host:8081", "", uint8(1))
	f.Add("https", "ops", "pa/ss", "jm:8081", "/x", uint8(2))
	f.Add("http", "", "p@ss#w?rd", "[::1", "", uint8(3))
	f.Add("http", "u", "%zz", "host", "/a b", uint8(4))
	f.Add("", "admin", "x y", "host", "?q=1", uint8(5))
	f.Add("ftp", "a:b", "tok", "h", "", uint8(6))
	f.Add("http", "ops", "tok123", "127.0.0.1:1", "/prefix", uint8(7))
	f.Add("http", "ops", "s3cret", "jm.test", "", uint8(9))
	f.Add("https", "ops", "s3cret", "jm.test", "/", uint8(11))
	f.Fuzz(func(t *testing.T, scheme, user, pw, host, rest string, mode uint8) {
		// The markers make the secret recognisable in any message; the other
		// parts never hold '§', so a marker in a message came from the secret.
		strip := func(s string) string { return strings.ReplaceAll(s, "§", "") }
		scheme, user, host, rest = strip(scheme), strip(user), strip(host), strip(rest)
		secret := "§S3CR3T§" + pw + "§T41L§"
		others := scheme + "\n" + user + "\n" + host + rest
		leaks := []string{secret, "§S3CR3T", "T41L§",
			url.PathEscape("§S3CR3T"), url.QueryEscape("§S3CR3T"), url.PathEscape("T41L§"),
			base64.StdEncoding.EncodeToString([]byte(user + ":" + secret)),
			base64.StdEncoding.EncodeToString([]byte("u:" + secret))}
		check := func(what, msg string) {
			t.Helper()
			for _, l := range leaks {
				if strings.Contains(msg, l) && !strings.Contains(others, l) {
					t.Fatalf("%s leaks the secret (%q): %s", what, l, msg)
				}
			}
		}

		// The secret in the base URL's user info: always refused, never repeated.
		raws := []string{
			scheme + "://" + user + ":" + secret + "@" + host + rest,
			scheme + "://" + secret + "@" + host + rest,
			user + ":" + secret + "@" + host + rest,
			scheme + ":" + secret + "@" + host + rest,
		}
		raw := raws[int(mode)%len(raws)]
		if c, err := NewClient(raw); err == nil {
			t.Fatalf("NewClient(%q) accepted credentials: %s", raw, c.BaseURL())
		} else {
			check("NewClient's error", err.Error())
		}

		// The secret in an option, the base URL without user info.
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		auth := WithBearerToken(secret)
		if mode&1 != 0 {
			u := user
			if u == "" {
				u = "u"
			}
			auth = WithBasicAuth(u, secret)
		}
		echo := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			ah := req.Header.Get("Authorization")
			withUser := *req.URL
			withUser.User = url.UserPassword(user, secret)
			answer := func(code int, body string, h http.Header) *http.Response {
				if h == nil {
					h = http.Header{}
				}
				return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
			}
			switch (mode >> 1) % 6 {
			case 0:
				return nil, fmt.Errorf("dial %s failed (Authorization: %s)", withUser.String(), ah)
			case 1:
				return answer(401, flinkError("bad credentials: "+ah, "user "+withUser.String()), nil), nil
			case 2:
				return answer(302, "", http.Header{"Location": {"https://" + url.UserPassword(user, secret).String() + "@login.example.com/start?token=" + url.QueryEscape(secret) + "#" + secret}}), nil
			case 3:
				return answer(200, "<html>"+secret+ah+"</html>", nil), nil
			case 4:
				return answer(503, "upstream "+withUser.String()+" says "+ah, nil), nil
			}
			return answer(200, `{"taskmanagers":1}`, nil), nil
		})
		c, err := NewClient(scheme+"://"+host+rest, auth, WithHTTPClient(&http.Client{Transport: echo}),
			WithRetryPolicy(NoRetry), WithFlinkVersion("1.20"), WithLogger(logger))
		if err != nil {
			check("NewClient's error", err.Error())
			return
		}
		ctx := context.Background()
		_, err = c.Overview(ctx)
		if err != nil {
			check("Overview's error", err.Error())
			check("Overview's error with %+v", fmt.Sprintf("%+v", err))
		}
		_, err = c.TriggerSavepoint(ctx, testJob, SavepointRequest{})
		if err != nil {
			check("TriggerSavepoint's error", err.Error())
		}
		check("the log", logs.String())
	})
}
