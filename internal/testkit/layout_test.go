package testkit

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the root module's path; testkitPath the import path of this
// folder, under which every package is test harness.
const (
	module      = "github.com/flinkkit/flinkkit"
	testkitPath = module + "/internal/testkit"
)

// repoRoot is the repository's root, seen from this package's folder.
var repoRoot = filepath.Join("..", "..")

// TestLibraryNeverImportsTestkit fails if a non-test Go file outside
// internal/testkit, in the root module, in the examples' modules
// (examples/operator, examples/flinkctl) or in s3storage's, imports a package of
// internal/testkit: the library and the examples' programs never depend on
// the test harness. Build-tagged files count too: the parser reads every
// file whatever its build constraints.
func TestLibraryNeverImportsTestkit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module "+module+"\n") {
		t.Fatalf("%s is not the root of module %s", repoRoot, module)
	}
	files, err := productionFiles(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must reach the library and the nested modules, or the
	// check below passes for want of files.
	for _, want := range []string{"lifecycle/controller.go", "examples/operator/cmd/operator/main.go", "examples/flinkctl/main.go", "s3storage/storage.go", "internal/wait/wait.go"} {
		if !contains(files, want) {
			t.Errorf("%s was not scanned (%d files scanned)", want, len(files))
		}
	}
	for _, name := range files {
		src, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		paths, err := harnessImports(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			t.Errorf("%s imports %s: only tests may import the test harness", name, p)
		}
	}
}

// productionFiles lists the non-test Go files under root (slash-separated,
// relative to root) outside internal/testkit, skipping the folders the go
// command skips (testdata, and names starting with . or _) and Maven's
// target folders.
func productionFiles(root string) ([]string, error) {
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
			name := d.Name()
			if rel != "." && (name == "testdata" || name == "target" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel == "internal/testkit" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// harnessImports returns the import paths of the Go source src (file name
// for the errors) that name internal/testkit or a package under it.
func harnessImports(name string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if p == testkitPath || strings.HasPrefix(p, testkitPath+"/") {
			found = append(found, p)
		}
	}
	return found, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The check itself: what it must catch and what it must let through.
func TestHarnessImports(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{`package a; import "` + testkitPath + `/flinkfixture"`, []string{testkitPath + "/flinkfixture"}},
		{`package a; import ff "` + testkitPath + `/flinkfixture/cmd/sharedflink"`, []string{testkitPath + "/flinkfixture/cmd/sharedflink"}},
		{`package a; import _ "` + testkitPath + `"`, []string{testkitPath}},
		{"//go:build integration\n\npackage a\n\nimport (\n\t\"fmt\"\n\t\"" + testkitPath + "/reqlog\"\n)", []string{testkitPath + "/reqlog"}},
		{`package a; import "` + module + `/internal/wait"`, nil},
		{`package a; import "` + module + `/internal/testkitx"`, nil},
		{`package a; import "` + module + `/flinkapi/flinktest"`, nil},
	}
	for _, tt := range tests {
		got, err := harnessImports("a.go", []byte(tt.src))
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%q: harness imports %q, want %q", tt.src, got, tt.want)
		}
	}
}

// TestHarnessPackagesSayWhatTheyAre fails if a Go package under
// internal/testkit has no package comment naming it test harness.
func TestHarnessPackagesSayWhatTheyAre(t *testing.T) {
	docs := map[string]string{} // folder -> package comments of its non-test files
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "testdata" || d.Name() == "target" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		docs[dir] += ""
		if f.Doc != nil {
			docs[dir] += f.Doc.Text()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 9 {
		t.Fatalf("only %d packages found under internal/testkit: %v", len(docs), docs)
	}
	for dir, doc := range docs {
		if !strings.Contains(doc, "test harness") {
			t.Errorf("internal/testkit/%s: the package comment does not say it is test harness", dir)
		}
	}
}
