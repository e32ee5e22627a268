package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flinkkit/flinkkit/lifecycle"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadFlinkConfig reads Flink 2's nested config.yaml and the older
// flat flink-conf.yaml into the same flattened entries.
func TestReadFlinkConfig(t *testing.T) {
	want := map[string]string{"s3.endpoint": "http://127.0.0.1:8333", "s3.path.style.access": "true", "s3.access-key": "key",
		"taskmanager.numberOfTaskSlots": "2", "env.java.opts.all": "-Da=1;-Db=2"}
	nested := `s3:
  endpoint: http://127.0.0.1:8333
  path.style.access: true
  access-key: key
taskmanager:
  numberOfTaskSlots: 2
env.java.opts.all: [-Da=1, -Db=2]
`
	flat := `s3.endpoint: http://127.0.0.1:8333
s3.path.style.access: true
s3.access-key: key
taskmanager.numberOfTaskSlots: 2
env.java.opts.all: [-Da=1, -Db=2]
`
	for name, content := range map[string]string{"nested": nested, "flat": flat} {
		got, err := ReadFlinkConfig(writeFile(t, "config.yaml", content))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if _, err := ReadFlinkConfig(writeFile(t, "bad.yaml", "- a list\n- not a mapping\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a list: %v, want an error naming the file", err)
	}
	if _, err := ReadFlinkConfig(filepath.Join(t.TempDir(), "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// TestNew builds the Storage of the flags: none without either, an
// error naming the bad option of the file.
func TestNew(t *testing.T) {
	ctx := context.Background()
	if s, err := New(ctx, "", false); s != nil || err != nil {
		t.Errorf("no flags: %v, %v; want no storage", s, err)
	}
	bad := writeFile(t, "config.yaml", "s3.path.style.access: maybe\ns3.endpoint: http://127.0.0.1:1\n")
	if _, err := New(ctx, bad, false); err == nil || !strings.Contains(err.Error(), "path") || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad path style: %v, want an error naming the option and the file", err)
	}
	good := writeFile(t, "config.yaml", "s3.endpoint: http://127.0.0.1:1\ns3.path.style.access: true\ns3.access-key: k\ns3.secret-key: s\n")
	s, err := New(ctx, good, false)
	if err != nil || s == nil || s.s3 == nil || s.local {
		t.Fatalf("object store only: %+v, %v", s, err)
	}
}

// TestRoute sends each path to the storage of its scheme and refuses the
// others with lifecycle.ErrStoragePath, saying what is read.
func TestRoute(t *testing.T) {
	ctx := context.Background()
	conf := writeFile(t, "config.yaml", "s3.endpoint: http://127.0.0.1:1\ns3.path.style.access: true\ns3.access-key: k\ns3.secret-key: s\n")
	both, err := New(ctx, conf, true)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := New(ctx, "", true)
	objects, _ := New(ctx, conf, false)
	for _, tc := range []struct {
		s      *Storage
		path   string
		object bool // routed to the object store; else local, or refused
		ok     bool
	}{
		{both, "s3://b/savepoints", true, true},
		{both, "S3A://b/x", true, true},
		{both, "s3p://b/x", true, true},
		{both, "file:///flink/savepoints", false, true},
		{both, "/flink/savepoints", false, true},
		{both, "hdfs://nn/flink", false, false},
		{both, "gs://b/x", false, false},
		{local, "s3://b/x", false, false},
		{local, "file:/x", false, true},
		{objects, "file:/x", false, false},
		{objects, "/x", false, false},
	} {
		r, err := tc.s.route(tc.path)
		switch {
		case !tc.ok:
			if !errors.Is(err, lifecycle.ErrStoragePath) {
				t.Errorf("%q: %v, want ErrStoragePath", tc.path, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case tc.object && r != tc.s.s3:
			t.Errorf("%q: routed to %T, want the object store", tc.path, r)
		case !tc.object && r != (lifecycle.LocalStorage{}):
			t.Errorf("%q: routed to %T, want the local file system", tc.path, r)
		}
	}
	_, err = objects.route("/x")
	if err == nil || !strings.Contains(err.Error(), "--storage-local is off") {
		t.Errorf("a local path with the object store only: %v, want the flag named", err)
	}
}

// TestLocal lists, sizes and removes through the local file system.
func TestLocal(t *testing.T) {
	ctx := context.Background()
	s, _ := New(ctx, "", true)
	dir := t.TempDir()
	sp := filepath.Join(dir, "savepoint-abcdef-0123456789ab")
	if err := os.MkdirAll(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sp, "_metadata"), make([]byte, 42), 0o600); err != nil {
		t.Fatal(err)
	}
	names, err := s.List(ctx, "file://"+dir)
	if err != nil || len(names) != 1 || !strings.HasSuffix(names[0], "savepoint-abcdef-0123456789ab") {
		t.Fatalf("List: %v, %v", names, err)
	}
	es, err := s.Entries(ctx, sp)
	if err != nil || len(es) != 1 || es[0].Size != 42 {
		t.Fatalf("Entries: %+v, %v", es, err)
	}
	if err := s.Delete(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Delete: %v", err)
	}
	if _, err := s.List(ctx, "s3://b/x"); !errors.Is(err, lifecycle.ErrStoragePath) {
		t.Errorf("List of an object store path without one: %v", err)
	}
}
