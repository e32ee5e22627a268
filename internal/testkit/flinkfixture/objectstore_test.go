package flinkfixture

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestSplitS3(t *testing.T) {
	for in, want := range map[string][3]string{
		"s3://b/k/x":   {"b", "k/x", "true"},
		"s3a://b/k/x/": {"b", "k/x", "true"},
		"s3://b":       {"b", "", "true"},
		"s3://":        {"", "", "false"},
		"file:/b/k":    {"", "", "false"},
		"/b/k":         {"", "", "false"},
	} {
		b, k, ok := splitS3(in)
		if got := [3]string{b, k, fmt.Sprint(ok)}; got != want {
			t.Errorf("splitS3(%q) = %q, want %q", in, got, want)
		}
	}
	s := &ObjectStore{Bucket: "b"}
	if k, ok := s.Key("s3://b/x/y/"); !ok || k != "x/y" || s.URI("/x/y") != "s3://b/x/y" {
		t.Errorf("Key = %q %v, URI = %q", k, ok, s.URI("/x/y"))
	}
	if _, ok := s.Key("s3://other/x"); ok {
		t.Error("a key of another bucket")
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"file:/w/sp":           "/w/sp",
		"file:///w/sp/":        "/w/sp",
		"file://localhost/w/s": "/w/s",
		"/w/sp":                "/w/sp",
		"relative/sp":          "",
		"file:relative":        "",
		"file://host/w":        "",
		"hdfs://nn/w":          "",
	} {
		got, err := localPath(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("localPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// The location helpers on local disk: a savepoint folder and a job's
// checkpoint folder, in each of the forms Flink and the tests name them.
func TestLocalLocations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, f := range []string{"savepoints/savepoint-abc123-1/_metadata", "savepoints/savepoint-abc123-1/op1",
		"checkpoints/job/chk-3/_metadata", "checkpoints/job/shared/x"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "checkpoints/job/taskowned"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(dir, "savepoints", "savepoint-abc123-1")
	for _, loc := range []string{sp, "file:" + sp, "file://" + sp} {
		if !LocationExists(loc) {
			t.Errorf("LocationExists(%s) = false", loc)
		}
		if names, err := ListLocation(ctx, loc); err != nil || !slices.Equal(names, []string{"_metadata", "op1"}) {
			t.Errorf("ListLocation(%s) = %q, %v", loc, names, err)
		}
	}
	if LocationExists(sp+"-no") || LocationExists("relative/path") || LocationExists("") {
		t.Error("LocationExists of a missing or relative location")
	}
	if names, err := ListChildren(ctx, "file://"+filepath.Join(dir, "checkpoints", "job")); err != nil ||
		!slices.Equal(names, []string{"chk-3", "shared", "taskowned"}) {
		t.Errorf("ListChildren = %q, %v", names, err)
	}
	if names, err := ListChildren(ctx, filepath.Join(dir, "none")); err != nil || len(names) != 0 {
		t.Errorf("ListChildren of a missing folder = %q, %v", names, err)
	}
	if _, err := ListLocation(ctx, "relative"); err == nil {
		t.Error("ListLocation of a relative path")
	}
	var st StateStorage
	entries, err := st.List(ctx, "file:"+filepath.Join(dir, "checkpoints", "job")+"/")
	if want := "file:" + filepath.Join(dir, "checkpoints", "job", "chk-3"); err != nil || len(entries) != 3 || entries[0] != want {
		t.Errorf("StateStorage.List = %q, %v; want %s first", entries, err, want)
	}
	if err := st.Delete(ctx, "file:"+sp); err != nil || LocationExists(sp) {
		t.Errorf("StateStorage.Delete: %v, exists %v", err, LocationExists(sp))
	}
	if err := DeleteLocation(ctx, sp); err != nil {
		t.Errorf("DeleteLocation of a missing folder: %v", err)
	}
	if err := DeleteLocation(ctx, "file:///"); err == nil {
		t.Error("DeleteLocation of the root folder")
	}
}

// memoryS3 is an S3 endpoint of one bucket in memory, without
// signatures: ListObjectsV2 (one page), HEAD, GET, PUT and DELETE.
type memoryS3 struct {
	mu      sync.Mutex
	bucket  string
	objects map[string][]byte
}

func (m *memoryS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != m.bucket {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	switch {
	case r.Method == http.MethodGet && key == "":
		type content struct{ Key string }
		var res struct {
			XMLName  xml.Name  `xml:"ListBucketResult"`
			Contents []content `xml:"Contents"`
		}
		for k := range m.objects {
			if strings.HasPrefix(k, r.URL.Query().Get("prefix")) {
				res.Contents = append(res.Contents, content{k})
			}
		}
		_ = xml.NewEncoder(w).Encode(res)
	case r.Method == http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		m.objects[key] = b
	case r.Method == http.MethodDelete:
		delete(m.objects, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		b, ok := m.objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	}
}

// The location helpers in an object store: S3 has no folders, so a
// savepoint exists when its _metadata object does, a folder's entries are
// the first parts of the keys under it (an empty "folder/" object, as
// Hadoop's S3A writes for an empty folder, counts too), and deleting a
// location deletes every object under it.
func TestObjectStoreLocations(t *testing.T) {
	ctx := context.Background()
	m := &memoryS3{bucket: "locations-test", objects: map[string][]byte{}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	s := &ObjectStore{Endpoint: srv.URL, Region: "us-east-1", AccessKey: "ak", SecretKey: "sk", Bucket: m.bucket}
	registerStore(s)
	defer unregisterStore(s)
	for _, k := range []string{"c/savepoints/savepoint-abc123-1/_metadata", "c/savepoints/savepoint-abc123-1/op1",
		"c/savepoints/savepoint-abc123-2/op1", "c/checkpoints/job/chk-3/_metadata", "c/checkpoints/job/taskowned/"} {
		if err := s.Client().Put(ctx, s.Bucket, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	sp := s.URI("c/savepoints/savepoint-abc123-1")
	if !LocationExists(sp) || !LocationExists(sp+"/") || !LocationExists(sp+"/op1") {
		t.Errorf("LocationExists(%s) = false", sp)
	}
	if LocationExists(s.URI("c/savepoints/savepoint-abc123-2")) || LocationExists(s.URI("c/savepoints")) || LocationExists("s3://unknown-bucket/c") {
		t.Error("LocationExists without a _metadata object, or in a bucket no store has")
	}
	if names, err := ListLocation(ctx, sp); err != nil || !slices.Equal(names, []string{"_metadata", "op1"}) {
		t.Errorf("ListLocation(%s) = %q, %v", sp, names, err)
	}
	if names, err := ListLocation(ctx, s.URI("c/checkpoints/job")); err != nil || !slices.Equal(names, []string{"chk-3/_metadata"}) {
		t.Errorf("ListLocation of the job's checkpoints = %q, %v (no folder objects)", names, err)
	}
	if names, err := ListChildren(ctx, s.URI("c/checkpoints/job")); err != nil || !slices.Equal(names, []string{"chk-3", "taskowned"}) {
		t.Errorf("ListChildren = %q, %v", names, err)
	}
	if names, err := ListChildren(ctx, s.URI("c/savepoints")); err != nil || !slices.Equal(names, []string{"savepoint-abc123-1", "savepoint-abc123-2"}) {
		t.Errorf("ListChildren of the savepoints = %q, %v", names, err)
	}
	if _, err := ListChildren(ctx, "s3://unknown-bucket/c"); err == nil {
		t.Error("ListChildren in a bucket no store has")
	}
	var st StateStorage
	if entries, err := st.List(ctx, s.URI("c/checkpoints/job")); err != nil || !slices.Equal(entries, []string{s.URI("c/checkpoints/job/chk-3"), s.URI("c/checkpoints/job/taskowned")}) {
		t.Errorf("StateStorage.List = %q, %v", entries, err)
	}
	if err := st.Delete(ctx, s.URI("c/checkpoints/job")); err != nil {
		t.Fatal(err)
	}
	if err := DeleteLocation(ctx, sp); err != nil {
		t.Fatal(err)
	}
	left := []string{}
	for k := range m.objects {
		left = append(left, k)
	}
	if !slices.Equal(left, []string{"c/savepoints/savepoint-abc123-2/op1"}) || LocationExists(sp) {
		t.Errorf("after the deletes: %q left", left)
	}
	if err := DeleteLocation(ctx, "s3://"+s.Bucket); err == nil {
		t.Error("DeleteLocation of a whole bucket")
	}
}

// A cluster's Flink configuration for an object store: path-style
// requests to the plain-HTTP endpoint with the store's identity.
func TestObjectStoreFlinkConfig(t *testing.T) {
	s := &ObjectStore{Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", AccessKey: "ak", SecretKey: "sk", Bucket: "b"}
	c := s.flinkConfig("/w/tmp")
	for k, want := range map[string]string{
		"s3.endpoint": "http://127.0.0.1:9000", "s3.path.style.access": "true", "s3.access-key": "ak", "s3.secret-key": "sk",
		"s3.connection.ssl.enabled": "false", "s3.buffer.dir": "/w/tmp/s3a",
	} {
		if c[k] != want {
			t.Errorf("%s = %q, want %q", k, c[k], want)
		}
	}
}
