package flinkkit_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A fresh clone on a fresh machine passes its own tests: no test, script,
// Makefile or build file may read anything outside the repository. This
// test scans the repository's files for paths that leave it.
//
// The strings it looks for are built at run time, so that this file, which
// it scans too, does not name them.

// dotdot is the parent-folder path segment.
var dotdot = strings.Repeat(".", 2)

// notAPath marks a line whose climbing path is not a file path (a REST id
// in a traversal test, say); the climb check skips such lines.
var notAPath = "not a " + "file path"

// TestNothingOutsideRepository fails if a file of the repository (outside
// testdata) refers to a folder beside the repository, climbs above the
// repository root with a relative path, or names an absolute path in a home
// folder, in the checkout or beside it.
func TestNothingOutsideRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := repoFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files found under %s: %v", len(files), root, files)
	}
	abs := absoluteNeedles(root)
	scanned := 0
	for _, name := range files {
		if skipFile(name) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary
		}
		scanned++
		for _, p := range outsidePaths(name, string(b), abs) {
			t.Error(p)
		}
	}
	if scanned == 0 {
		t.Fatal("no file scanned")
	}
}

// repoFiles lists the repository's files, tracked or new but not ignored
// (slash-separated, relative to root), or, without git (a module's copy in
// the module cache), every file under root but .git, .cache and target.
func repoFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", "target":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == ".git" {
			return nil // a worktree's pointer to its repository
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// skipFile reports whether name is data rather than code, scripts or build
// files: recorded answers, Flink's OpenAPI files, fuzz corpora and goldens
// under testdata, and the licence texts.
func skipFile(name string) bool {
	if strings.HasPrefix(name, "testdata/") || strings.Contains(name, "/testdata/") {
		return true
	}
	return path.Base(name) == "LICENSE"
}

// absoluteNeedles are absolute path prefixes that no file should name: home
// folders, the checkout itself, and the folder the checkout sits in (unless
// that is the file system root or the temporary folder).
func absoluteNeedles(root string) []string {
	needles := []string{"/" + "home/", "/" + "Users/", "/" + "root/"}
	root = filepath.ToSlash(root)
	needles = append(needles, root+"/")
	parent := path.Dir(root)
	tmp := filepath.ToSlash(filepath.Clean(os.TempDir()))
	if parent != "/" && parent != tmp && parent != "." {
		needles = append(needles, parent+"/")
	}
	return needles
}

// homeCaches are the folders under a home folder a build may use: the Go
// and Maven caches.
var homeCaches = []string{"go/pkg/mod", "go/bin", ".m2", ".cache/go-build"}

// outsidePaths returns a message for each reference in the file name
// (slash-separated, relative to the repository root) with the given
// content to a place outside the repository.
func outsidePaths(name, content string, absolute []string) []string {
	var problems []string
	report := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	dir := path.Dir(name)
	depth := 0
	if dir != "." {
		depth = strings.Count(dir, "/") + 1
	}
	beside := []string{dotdot + "/shared", "shared/" + "flink-rest-api"}
	tilde := "~" + "/"
	home := []string{"$" + "HOME", "${" + "HOME}", tilde, "os." + "UserHomeDir", "UserCacheDir" + "()"}
	for i, text := range strings.Split(content, "\n") {
		n := i + 1
		line := withJoinedPaths(text)
		for _, b := range beside {
			if strings.Contains(line, b) {
				report(n, "refers to %q, a folder beside the repository", b)
			}
		}
		for _, a := range absolute {
			if strings.Contains(line, a) {
				report(n, "names the absolute path %q", a)
			}
		}
		for _, h := range home {
			if at := strings.Index(line, h); at >= 0 && !homeCache(line[at+len(h):]) {
				if h == tilde && at > 0 && isPathChar(line[at-1]) {
					continue // a ~ inside a word, not a home folder
				}
				report(n, "refers to a home folder (%q) other than the Go or Maven cache", h)
			}
		}
		if strings.Contains(line, notAPath) {
			continue
		}
		for _, up := range climbs(line) {
			if up > depth {
				report(n, "a relative path climbs %d folders from %s, above the repository root", up, dir)
			}
		}
	}
	return problems
}

// joinCall matches the arguments of a filepath.Join or path.Join call.
var joinCall = regexp.MustCompile(`\b(?:file)?path\.Join\(([^()]*)\)`)

// joinArgSep separates two string literals among the arguments of a call.
var joinArgSep = regexp.MustCompile(`"\s*,\s*"`)

// withJoinedPaths appends to line the arguments of each filepath.Join call
// in it written as one path (filepath.Join(dir, "a", "b") adds
// `dir, "a/b"`), so that a path built by Join is checked like a written one.
func withJoinedPaths(line string) string {
	for _, m := range joinCall.FindAllStringSubmatch(line, -1) {
		line += " " + joinArgSep.ReplaceAllString(m[1], "/")
	}
	return line
}

// homeCache reports whether rest, the text after a home folder reference,
// names one of the Go or Maven caches.
func homeCache(rest string) bool {
	rest = strings.TrimLeft(rest, "/\"'")
	rest = strings.TrimPrefix(rest, "()")
	for _, c := range homeCaches {
		if strings.HasPrefix(rest, c) {
			return true
		}
	}
	return false
}

func isPathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.-~", c) >= 0
}

// climbs returns, for each relative path in line with parent segments, how
// many folders it climbs above the folder it starts in. Literal segments
// before the parent segments count as folders the path first went down into
// ("a/b/" then three parent segments climb one); a variable before them
// ("$(dirname "$0")/", "${project.basedir}/", "$(CURDIR)/") stands for the
// file's own folder. Absolute paths and URLs are not relative and are left
// out.
func climbs(line string) []int {
	var ups []int
	for i := 0; i+len(dotdot) <= len(line); i++ {
		if !strings.HasPrefix(line[i:], dotdot) {
			continue
		}
		if i > 0 && line[i-1] != '/' && isPathChar(line[i-1]) {
			continue // "x..", "...": not a parent segment
		}
		// Count the run of parent segments starting at i.
		j, k := i, 0
		for strings.HasPrefix(line[j:], dotdot) && (j+len(dotdot) == len(line) || !isPathChar(line[j+len(dotdot)])) {
			k++
			j += len(dotdot)
			if j < len(line) && line[j] == '/' {
				j++
				continue
			}
			break
		}
		if k == 0 {
			continue
		}
		down, relative := segmentsBefore(line[:i])
		if relative && k > down {
			ups = append(ups, k-down)
		}
		i = j - 1
	}
	return ups
}

// segmentsBefore looks at the path text just before a run of parent
// segments (before ends where the run starts) and returns how many literal
// folders it goes down into, and whether the path is relative at all.
func segmentsBefore(before string) (down int, relative bool) {
	if !strings.HasSuffix(before, "/") {
		return 0, true // the run starts the path
	}
	start := len(before)
	for start > 0 && (isPathChar(before[start-1]) || before[start-1] == '/') {
		start--
	}
	token := before[start:]
	if start > 0 {
		switch before[start-1] {
		case ')', '}':
			// $(dir)/... or ${dir}/...: the variable is the file's folder.
			return segmentsDown(token), true
		case ':':
			return 0, false // a URL or file: URI
		}
	}
	if strings.HasPrefix(token, "/") {
		return 0, false // absolute
	}
	return segmentsDown(token), true
}

// segmentsDown is how many folders the path token goes down into.
func segmentsDown(token string) int {
	down := 0
	for _, seg := range strings.Split(token, "/") {
		switch seg {
		case "", ".":
		case dotdot:
			down--
		default:
			down++
		}
	}
	return down
}

// The check itself: what it must catch and what it must let through.
func TestOutsidePathsCheck(t *testing.T) {
	up := dotdot + "/"
	abs := []string{"/srv/checkouts/", "/srv/checkouts/flinkkit/"}
	tests := []struct {
		name, content string
		bad           bool
	}{
		{"flinkapi/schema_test.go", `cand := filepath.Join(dir, "` + dotdot + `", "shared", "flink-` + `rest-api")`, true},
		{"flinkapi/schema_test.go", `p := "` + up + `shared/x.yml"`, true},
		{"flinkapi/schema_test.go", `t.Fatal("shared/` + `flink-rest-api not found")`, true},
		{"flinkapi/a_test.go", `os.ReadFile(filepath.Join("` + dotdot + `", "` + dotdot + `", "x"))`, true},
		{"flinkapi/a_test.go", `os.ReadFile(filepath.Join("` + dotdot + `", "testdata", "x"))`, false},
		{"Makefile", "\tcat " + up + "shared/x.yml", true},
		{"Makefile", "\tcat " + up + "other/x.yml", true},
		{"Makefile", "\tcd " + dotdot + " && make", true},
		{"flinkapi/a_test.go", `os.ReadFile("` + up + up + `README.md")`, true},
		{"flinkapi/a_test.go", `os.ReadFile("` + up + `README.md")`, false},
		{"examples/operator/Makefile", "\t" + up + up + "scripts/flink.sh $$v", false},
		{"examples/operator/Makefile", "\t" + up + up + up + "scripts/flink.sh $$v", true},
		{"examples/operator/go.mod", "replace github.com/flinkkit/flinkkit => " + up + dotdot, false},
		{".ci/run", `cd "$(dirname "$0")/` + dotdot + `"`, false},
		{".ci/run", `cd "$(dirname "$0")/` + up + dotdot + `"`, true},
		{"internal/testkit/flinkjars/pom.xml", "<d>${project.basedir}/" + up + up + up + ".cache/flink</d>", false},
		{"internal/testkit/flinkjars/pom.xml", "<d>${project.basedir}/" + up + up + up + up + "x</d>", true},
		{"lifecycle/store_test.go", `bad := []string{"` + dotdot + `", "a/` + up + up + `etc"}`, false},
		{"flinkapi/client_test.go", `JarID("` + up + up + `cluster.jar") // REST id, ` + notAPath, false},
		{"flinkapi/client_test.go", `JarID("` + up + up + `cluster.jar")`, true},
		{"internal/testkit/contract/target_test.go", `{"file:/tmp/w/savepoints/` + up + `x", "/tmp/w/savepoints", false}`, false},
		{"doc.go", "// http://example.com/a/" + up + up + "b", false},
		{"scripts/x.sh", `cat "$` + `HOME/notes.txt"`, true},
		{"scripts/x.sh", `ls "$` + `HOME/.m2/repository"`, false},
		{"scripts/x.sh", `ls ~` + `/go/pkg/mod`, false},
		{"scripts/x.sh", `cat ~` + `/notes.txt`, true},
		{"x_test.go", `h, _ := os.` + `UserHomeDir()`, true},
		{"x_test.go", `os.ReadFile("/srv/checkouts/shared/x")`, true},
		{"x_test.go", `os.ReadFile("/srv/checkouts/flinkkit/x")`, true},
		{"x_test.go", `strings.ReplaceAll(name, "/", "~")`, false},
		{"x_test.go", `s := "a...b"`, false},
	}
	for _, tt := range tests {
		got := outsidePaths(tt.name, tt.content, abs)
		if bad := len(got) > 0; bad != tt.bad {
			t.Errorf("%s %q: problems %q, want bad=%v", tt.name, tt.content, got, tt.bad)
		}
	}
}
