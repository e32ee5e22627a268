package flinkapi

import (
	"encoding/json"
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
		msg, _ := SplitJavaError(s)
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
	})
}
