package s3storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// The real tests run against a SeaweedFS server (weed mini), started once
// for the test binary by the first test that needs it: the weed binary is
// $FLINKKIT_WEED or what scripts/s3-assets.sh builds (make s3-assets).
var (
	realOnce  sync.Once
	realSrv   *flinkfixture.ObjectStoreServer
	realErr   error
	realStart time.Duration
)

// realStore is the started server's store; a server that does not start
// fails the test.
func realStore(t *testing.T) *flinkfixture.ObjectStore {
	t.Helper()
	realOnce.Do(func() {
		start := time.Now()
		realSrv, realErr = flinkfixture.StartObjectStore(context.Background(), "")
		realStart = time.Since(start)
		if realErr == nil {
			t.Logf("object store (weed mini) serving at %s after %v", realSrv.Store.Endpoint, realStart.Round(time.Millisecond))
		}
	})
	if realErr != nil {
		t.Fatalf("the S3-compatible object store did not start (SeaweedFS's weed: $FLINKKIT_WEED, or built by scripts/s3-assets.sh; make s3-assets): %v", realErr)
	}
	return realSrv.Store
}

// stopRealStore stops the real tests' server, if started.
func stopRealStore() {
	if realSrv != nil {
		_ = realSrv.Stop()
	}
}

// realStorage is a Storage of the store, path-style, with the identity
// given (the store's own when secret is empty), its requests counted.
func realStorage(t *testing.T, store *flinkfixture.ObjectStore, accessKey, secret string) (*Storage, *countingTransport) {
	t.Helper()
	if secret == "" {
		accessKey, secret = store.AccessKey, store.SecretKey
	}
	ct := &countingTransport{next: http.DefaultTransport}
	s, err := New(context.Background(), Options{Endpoint: store.Endpoint, Region: store.Region, PathStyle: true,
		AccessKey: accessKey, SecretKey: secret, Buckets: []string{store.Bucket},
		HTTPClient: &http.Client{Transport: ct, Timeout: time.Minute}, ClientOptions: []func(*s3.Options){fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	return s, ct
}

// putAll writes the objects (key: content) into the store, 16 at a time.
func putAll(t *testing.T, store *flinkfixture.ObjectStore, objects map[string]string) {
	t.Helper()
	c := store.Client()
	keys := make(chan string)
	errs := make(chan error, len(objects))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range keys {
				if err := c.Put(context.Background(), store.Bucket, k, []byte(objects[k])); err != nil {
					errs <- fmt.Errorf("put %s: %w", k, err)
				}
			}
		})
	}
	for k := range objects {
		keys <- k
	}
	close(keys)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// keysUnder are the keys of the store under prefix, in order.
func keysUnder(t *testing.T, store *flinkfixture.ObjectStore, prefix string) []string {
	t.Helper()
	objs, err := store.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func TestRealListAndDeleteOverAThousand(t *testing.T) {
	store := realStore(t)
	s, ct := realStorage(t, store, "", "")
	ctx := context.Background()
	objects := map[string]string{
		"many/job/x":    "sibling: a prefix of its own",
		"many/jobs":     "sibling: shares the prefix without /",
		"many/job-2/_m": "sibling",
	}
	var want []string
	for i := range 1100 {
		objects[fmt.Sprintf("many/job/chk/f-%04d", i)] = "f"
		want = append(want, fmt.Sprintf("s3a://%s/many/job/chk/f-%04d", store.Bucket, i))
	}
	for i := range 150 {
		objects[fmt.Sprintf("many/job/chk/d-%03d/_metadata", i)] = "m"
		objects[fmt.Sprintf("many/job/chk/d-%03d/shared/s", i)] = "s"
		want = append(want, fmt.Sprintf("s3a://%s/many/job/chk/d-%03d", store.Bucket, i))
	}
	slices.Sort(want)
	start := time.Now()
	putAll(t, store, objects)
	t.Logf("wrote %d objects in %v", len(objects), time.Since(start).Round(time.Millisecond))

	dir := "s3a://" + store.Bucket + "/many/job/chk"
	start = time.Now()
	got, err := s.List(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("List of 1,250 entries: %d requests, %v", ct.n.Load(), time.Since(start).Round(time.Millisecond))
	if !slices.Equal(got, want) {
		t.Errorf("List(%q): %d entries, want %d", dir, len(got), len(want))
	}
	if n := ct.n.Load(); n != 2 {
		t.Errorf("List of 1,250 entries took %d requests, want 2 pages", n)
	}
	if p, _ := ct.last.Load().(string); !strings.HasPrefix(p, "/"+store.Bucket) {
		t.Errorf("request path %q: not path-style (/%s...)", p, store.Bucket)
	}

	ct.n.Store(0)
	start = time.Now()
	if err := s.Delete(ctx, "s3://"+store.Bucket+"/many/job/chk"); err != nil {
		t.Fatal(err)
	}
	// 1,400 objects: 2 listings; 2 deletions: the objects, 301 folders
	// (chk/, d-NNN/ and d-NNN/shared/) and the path.
	t.Logf("Delete of 1,400 objects: %d requests, %v", ct.n.Load(), time.Since(start).Round(time.Millisecond))
	if n := ct.n.Load(); n != 4 {
		t.Errorf("Delete of 1,400 objects took %d requests, want 4", n)
	}
	if left := keysUnder(t, store, "many/"); !slices.Equal(left, []string{"many/job-2/_m", "many/job/x", "many/jobs"}) {
		t.Errorf("left after Delete: %d keys, first %q; want the 3 siblings", len(left), left[:min(5, len(left))])
	}
	if got, err := s.List(ctx, dir); err != nil || len(got) != 0 {
		t.Errorf("List after Delete: %d entries, %v", len(got), err)
	}
	// No emptied folder is left to list (SeaweedFS keeps folders).
	parent := "s3a://" + store.Bucket + "/many/job"
	if got, err := s.List(ctx, parent); err != nil || !slices.Equal(got, []string{parent + "/x"}) {
		t.Errorf("List(%q) after Delete = %q, %v; want only x", parent, got, err)
	}
	if err := s.Delete(ctx, "s3://"+store.Bucket+"/many"); err != nil {
		t.Fatal(err)
	}
}

func TestRealMissing(t *testing.T) {
	store := realStore(t)
	s, _ := realStorage(t, store, "", "")
	ctx := context.Background()
	got, err := s.List(ctx, "s3://"+store.Bucket+"/missing/job")
	if err != nil || len(got) != 0 {
		t.Errorf("List of a missing dir = %q, %v; want nothing, no error", got, err)
	}
	entries, err := s.Entries(ctx, "s3://"+store.Bucket+"/missing/job")
	if err != nil || len(entries) != 0 {
		t.Errorf("Entries of a missing dir = %+v, %v; want nothing, no error", entries, err)
	}
	if err := s.Delete(ctx, "s3://"+store.Bucket+"/missing/job/chk-1"); err != nil {
		t.Errorf("Delete of a missing path: %v", err)
	}
	any := FromClient(s.client) // no bucket allow-list
	if _, err := any.List(ctx, "s3://no-such-bucket-here/job"); err == nil || errors.Is(err, lifecycle.ErrStoragePath) {
		t.Errorf("List in a missing bucket = %v, want an error, not ErrStoragePath", err)
	}
	if err := any.Delete(ctx, "s3://no-such-bucket-here/job"); err != nil {
		t.Errorf("Delete in a missing bucket: %v", err)
	}
	if _, err := s.List(ctx, "s3://no-such-bucket-here/job"); !errors.Is(err, lifecycle.ErrStoragePath) {
		t.Errorf("List outside Buckets = %v, want ErrStoragePath", err)
	}
}

func TestRealWrongCredentials(t *testing.T) {
	store := realStore(t)
	putAll(t, store, map[string]string{"creds/job/a": "a"})
	ctx := context.Background()
	for name, ids := range map[string][2]string{
		"wrong secret":     {store.AccessKey, store.SecretKey + "x"},
		"unknown identity": {"nobody", "secret"},
	} {
		s, _ := realStorage(t, store, ids[0], ids[1])
		_, err := s.List(ctx, "s3://"+store.Bucket+"/creds/job")
		if err == nil || errors.Is(err, lifecycle.ErrStoragePath) {
			t.Errorf("%s: List = %v, want an error, not ErrStoragePath", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if err := s.Delete(ctx, "s3://"+store.Bucket+"/creds/job"); err == nil || errors.Is(err, lifecycle.ErrStoragePath) {
			t.Errorf("%s: Delete = %v, want an error, not ErrStoragePath", name, err)
		}
	}
	if left := keysUnder(t, store, "creds/"); !slices.Equal(left, []string{"creds/job/a"}) {
		t.Errorf("after the refused deletions: %q", left)
	}
}

func TestRealEntries(t *testing.T) {
	store := realStore(t)
	s, _ := realStorage(t, store, "", "")
	before := time.Now().Add(-2 * time.Second)
	putAll(t, store, map[string]string{
		"entries/job/chk-4/_metadata":   strings.Repeat("m", 123),
		"entries/job/chk-4/state":       strings.Repeat("s", 4567),
		"entries/job/chk-4/shared/blob": "b",
	})
	after := time.Now().Add(2 * time.Second)
	got, err := s.Entries(context.Background(), "s3://"+store.Bucket+"/entries/job/chk-4/")
	if err != nil {
		t.Fatal(err)
	}
	base := "s3://" + store.Bucket + "/entries/job/chk-4/"
	if len(got) != 3 {
		t.Fatalf("Entries = %+v, want _metadata, shared, state", got)
	}
	for i, w := range []struct {
		name string
		dir  bool
		size int64
	}{{"_metadata", false, 123}, {"shared", true, 0}, {"state", false, 4567}} {
		e := got[i]
		if e.Path != base+w.name || e.Dir != w.dir || e.Size != w.size {
			t.Errorf("Entries[%d] = %+v, want %s%s dir=%v size %d", i, e, base, w.name, w.dir, w.size)
		}
		if w.dir && !e.Modified.IsZero() {
			t.Errorf("Entries[%d]: a prefix with a time %v", i, e.Modified)
		}
		if !w.dir && (e.Modified.Before(before) || e.Modified.After(after)) {
			t.Errorf("Entries[%d] modified %v, not between %v and %v", i, e.Modified, before, after)
		}
	}
	if err := s.Delete(context.Background(), "s3://"+store.Bucket+"/entries"); err != nil {
		t.Fatal(err)
	}
}

// TestRealFlinkConfig: a Storage from the configuration Flink's S3 file
// system gets (the keys the real clusters of make integration have, with
// Hadoop's host:port endpoint form) reaches the store.
func TestRealFlinkConfig(t *testing.T) {
	store := realStore(t)
	putAll(t, store, map[string]string{"flinkconf/job/chk-1/_metadata": "m"})
	s, err := NewFromFlinkConfig(context.Background(), map[string]string{
		"s3.endpoint":                 strings.TrimPrefix(store.Endpoint, "http://"),
		"s3.connection.ssl.enabled":   "false",
		"s3.endpoint.region":          store.Region,
		"s3.path.style.access":        "true",
		"s3.access-key":               store.AccessKey,
		"s3.secret-key":               store.SecretKey,
		"s3.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
		"state.checkpoints.dir":       "s3://" + store.Bucket + "/flinkconf",
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.List(context.Background(), "s3p://"+store.Bucket+"/flinkconf/job")
	if want := []string{"s3p://" + store.Bucket + "/flinkconf/job/chk-1"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("List = %q, %v; want %q", got, err, want)
	}
	if err := s.Delete(context.Background(), "s3://"+store.Bucket+"/flinkconf"); err != nil {
		t.Fatal(err)
	}
	if left := keysUnder(t, store, "flinkconf/"); len(left) != 0 {
		t.Errorf("left: %q", left)
	}
}
