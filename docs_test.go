package flinkkit_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// oldestFlink is the oldest Flink version flinkkit supports, as
// flinkapi's package documentation names it.
const oldestFlink = "1.15"

// TestDocsNameTheCodesVersions keeps the versions the documentation names
// in step with the code: the Go version go.mod requires, the stored
// format FileStore writes, the Flink versions the real-cluster suites run
// and the oldest Flink version supported.
func TestDocsNameTheCodesVersions(t *testing.T) {
	readme := strings.Join(strings.Fields(read(t, "README.md")), " ")

	goVersion := ""
	for _, line := range strings.Split(read(t, "go.mod"), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	if goVersion == "" {
		t.Fatal("go.mod has no go directive")
	}
	if want := "Go " + goVersion + " or later"; !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q (go.mod: go %s)", want, goVersion)
	}

	store := read(t, "lifecycle/store.go")
	for _, m := range regexp.MustCompile(`"formatVersion":(\d+)`).FindAllStringSubmatch(store, -1) {
		if n, _ := strconv.Atoi(m[1]); n != lifecycle.FormatVersion {
			t.Errorf("lifecycle/store.go documents a file of format %d; FileStore writes format %d", n, lifecycle.FormatVersion)
		}
	}

	makefile := read(t, "Makefile")
	m := regexp.MustCompile(`(?m)^FLINK_VERSIONS \?= (.+)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("Makefile sets no FLINK_VERSIONS")
	}
	for _, v := range strings.Fields(m[1]) {
		minor := v[:strings.LastIndex(v, ".")]
		if !strings.Contains(readme, v) && !strings.Contains(readme, "real "+minor) && !strings.Contains(readme, " "+minor+" ") {
			t.Errorf("README.md does not name Flink %s, which make integration runs", v)
		}
	}

	if !strings.Contains(read(t, "flinkapi/doc.go"), "Flink "+oldestFlink+" to 2.x") {
		t.Errorf("flinkapi/doc.go does not name Flink %s as the oldest version", oldestFlink)
	}
	if !strings.Contains(readme, "Flink "+oldestFlink+" and later") {
		t.Errorf("README.md does not say Flink %s and later", oldestFlink)
	}
	// No text a user reads names an older Flink version as one flinkkit
	// works with: "from 1.9 on", "Flink 1.9+", "before 1.13".
	older := regexp.MustCompile(`(?i)(?:from|since|before|until) (?:Flink )?(1\.\d+)\b|Flink (1\.\d+)\+`)
	for _, f := range userFacing(t) {
		sc := bufio.NewScanner(strings.NewReader(read(t, f)))
		for n := 1; sc.Scan(); n++ {
			for _, m := range older.FindAllStringSubmatch(sc.Text(), -1) {
				v := m[1] + m[2]
				if olderThan(v, oldestFlink) {
					t.Errorf("%s:%d names Flink %s, older than the oldest supported (%s): %s", f, n, v, oldestFlink, strings.TrimSpace(sc.Text()))
				}
			}
		}
	}
}

// userFacing lists the files whose text users read: the README, the
// documents under docs/, and the non-test Go files of the library and
// the examples (godoc and help texts).
func userFacing(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "." || d.Name() == "testdata" || d.Name() == "target") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, "docs/") && strings.HasSuffix(p, ".md")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// olderThan compares two "major.minor" versions.
func olderThan(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	ma, _ := strconv.Atoi(pa[0])
	mb, _ := strconv.Atoi(pb[0])
	if ma != mb {
		return ma < mb
	}
	na, _ := strconv.Atoi(pa[1])
	nb, _ := strconv.Atoi(pb[1])
	return na < nb
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsLinksResolve: every link of the README and of docs/ to a file
// of the repository names one that exists.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files, _ := filepath.Glob("docs/*.md")
	for _, f := range append([]string{"README.md"}, files...) {
		for _, m := range link.FindAllStringSubmatch(read(t, f), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
}
