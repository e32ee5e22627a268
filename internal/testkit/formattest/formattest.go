package formattest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Fixture is one file of a type's fixtures and the value it holds.
type Fixture[T any] struct {
	// File is the file's name in Type.Dir, such as "history-v1.json".
	File string
	// Version is the format version the file is written in; 0 for the
	// form written before format versions existed (read as version 1).
	Version int
	// Want is the value the file holds. It is as fixed as the file: never
	// change it.
	Want T
}

// Type is a stored type and its fixtures.
type Type[T any] struct {
	// Name is the type as the format error names it: "savepoint.History".
	Name string
	// Dir is the folder of the fixtures, such as "testdata/golden".
	Dir string
	// Newest is the newest format version this release writes and reads
	// (the package's FormatVersion). A fixture of that version must exist.
	Newest int
	// ErrUnknown is the package's ErrUnknownFormat, which the error for a
	// newer version must match.
	ErrUnknown error
	// Fixtures are every fixture of the type, of every release.
	Fixtures []Fixture[T]
	// Encode writes v as this release stores it; nil: json.MarshalIndent
	// with two spaces and a final newline.
	Encode func(v T) ([]byte, error)
	// Decode reads b as this release reads what is stored (for a policy:
	// json.Unmarshal, then Validate); nil: json.Unmarshal.
	Decode func(b []byte) (T, error)
	// Update writes the fixture of version Newest when it is missing (the
	// test's -update flag). It never rewrites a fixture.
	Update bool
	// Retired are the fields, named as the check of unset fields names
	// them ("JobStatus.Checkpoint.Sent"), that older formats wrote and
	// the newest writes no more: the newest fixture may leave them unset.
	Retired []string
}

// Check runs the checks of the package documentation, one subtest per
// fixture.
func Check[T any](t *testing.T, typ Type[T]) {
	t.Helper()
	encode, decode := typ.Encode, typ.Decode
	if encode == nil {
		encode = indent[T]
	}
	if decode == nil {
		decode = unmarshal[T]
	}
	newest := false
	for _, f := range typ.Fixtures {
		newest = newest || f.Version == typ.Newest
	}
	if !newest {
		t.Errorf("%s: no fixture of format version %d, the newest this release writes: add one to the test and run it with -update",
			typ.Name, typ.Newest)
	}
	for _, f := range typ.Fixtures {
		t.Run(f.File, func(t *testing.T) {
			path := filepath.Join(typ.Dir, f.File)
			if f.Version == typ.Newest {
				for _, u := range Unset(f.Want) {
					if slices.Contains(typ.Retired, u) {
						continue
					}
					t.Errorf("%s: the value of the newest fixture leaves %s unset: set every field, so that a field renamed later breaks this test", path, u)
				}
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) && typ.Update && f.Version == typ.Newest {
				if b, err = encode(f.Want); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", path)
			} else if err != nil {
				t.Fatalf("%v: a fixture is never deleted (see %s/README.md); a missing one of the newest version is written by -update", err, typ.Dir)
			}
			got, err := decode(b)
			if err != nil {
				t.Fatalf("%s does not decode: %v", path, err)
			}
			if diff := cmp.Diff(f.Want, got); diff != "" {
				t.Errorf("%s decodes to another value (-want +got):\n%s", path, diff)
			}
			if f.Version != typ.Newest {
				return
			}
			again, err := encode(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, b) {
				t.Errorf("this release writes %s differently; a fixture is never edited: bump FormatVersion, keep reading this one and add a new one\nfixture: %s\nwritten: %s", path, b, again)
			}
			newer, err := withVersion(b, typ.Newest+1)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			_, err = decode(newer)
			want := fmt.Sprintf("format version %d", typ.Newest+1)
			switch {
			case err == nil:
				t.Errorf("%s of format version %d decodes without error: %s", typ.Name, typ.Newest+1, newer)
			case !errors.Is(err, typ.ErrUnknown):
				t.Errorf("%s of format version %d: error %q does not match ErrUnknownFormat", typ.Name, typ.Newest+1, err)
			case !strings.Contains(err.Error(), typ.Name) || !strings.Contains(err.Error(), want):
				t.Errorf("%s of format version %d: error %q does not name the type and the version", typ.Name, typ.Newest+1, err)
			}
		})
	}
}

func indent[T any](v T) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func unmarshal[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// withVersion returns the JSON object b with its top-level formatVersion
// set to v.
func withVersion(b []byte, v int) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := m["formatVersion"]; !ok {
		return nil, errors.New(`no top-level "formatVersion"`)
	}
	m["formatVersion"] = json.RawMessage(fmt.Sprint(v))
	return json.Marshal(m)
}

var timeType = reflect.TypeFor[time.Time]()

// Unset returns the path of every field of v that holds its zero value,
// at any depth: an empty string, a zero number, false, a zero time.Time,
// a nil pointer, an empty slice or map. Elements of slices and maps are
// checked too; unexported fields are not.
func Unset(v any) []string {
	var out []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.IsZero() {
			out = append(out, path)
			return
		}
		if v.Type() == timeType {
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			walk(path, v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					walk(path+"."+f.Name, v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Len() == 0 {
				out = append(out, path)
			}
			for i := range v.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
			}
		case reflect.Map:
			if v.Len() == 0 {
				out = append(out, path)
			}
			for _, k := range v.MapKeys() {
				walk(fmt.Sprintf("%s[%v]", path, k), v.MapIndex(k))
			}
		}
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return []string{"value"}
	}
	walk(rv.Type().Name(), rv)
	return out
}
