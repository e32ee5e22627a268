package s3storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/flinkkit/flinkkit/lifecycle"
)

func TestMain(m *testing.M) {
	// The SDK reads no configuration of the machine's: no shared files,
	// no instance metadata.
	dir, err := os.MkdirTemp("", "s3storage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		os.Setenv(k, v)
	}
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	stopRealStore()
	os.RemoveAll(dir)
	os.Exit(code)
}

// countingTransport counts the HTTP requests (every attempt) it sends,
// and keeps the URL path of the last.
type countingTransport struct {
	n    atomic.Int64
	last atomic.Value // string
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.last.Store(r.URL.Path)
	return c.next.RoundTrip(r)
}

// fastRetries keeps the SDK's standard retryer (3 attempts, throttling
// and 5xx retried) with short backoffs.
func fastRetries(o *s3.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 5 * time.Millisecond })
}

// fakeStorage is a Storage of f's server with static credentials,
// path-style, its requests counted by the transport it returns.
func fakeStorage(t *testing.T, srvURL string, buckets ...string) (*Storage, *countingTransport) {
	t.Helper()
	ct := &countingTransport{next: http.DefaultTransport}
	s, err := New(context.Background(), Options{Endpoint: srvURL, PathStyle: true, AccessKey: "AKIDTEST", SecretKey: "secret",
		Buckets: buckets, HTTPClient: &http.Client{Transport: ct}, ClientOptions: []func(*s3.Options){fastRetries}})
	if err != nil {
		t.Fatal(err)
	}
	return s, ct
}

func TestRefusedPaths(t *testing.T) {
	_, srv := newFakeS3(t)
	s, ct := fakeStorage(t, srv.URL, "ckpt-bucket", "other")
	ctx := context.Background()
	tests := []struct{ path, says string }{
		{"", "not an s3://"},
		{"/ckpt/job/chk-1", "not an s3://"},
		{"file:/ckpt/job", "not an s3://"},
		{"gs://ckpt-bucket/job", "not an s3://"},
		{"hdfs://namenode/ckpt", "not an s3://"},
		{"s3:/ckpt-bucket/job", "not an s3://"},
		{"s3://", "names no bucket"},
		{"s3:///job/chk-1", "names no bucket"},
		{"s3://ckpt-bucket", "root of bucket"},
		{"s3://ckpt-bucket/", "root of bucket"},
		{"s3a://ckpt-bucket//", "root of bucket"},
		{"s3://ckpt-bucket/job/../other", `contains ".."`},
		{"s3://ckpt-bucket/..", `contains ".."`},
		{"s3://ckpt-bucket/job/./chk-1", `contains "."`},
		{"s3://ckpt-bucket/job//chk-1", "empty path element"},
		{"s3://third/job/chk-1", `bucket "third" is not one of`},
		{"s3://user@ckpt-bucket/job", "has the character '@'"},
		{"s3://ckpt-bucket:9000/job", "has the character ':'"},
	}
	for _, tt := range tests {
		for name, call := range map[string]func() error{
			"List":    func() error { _, err := s.List(ctx, tt.path); return err },
			"Entries": func() error { _, err := s.Entries(ctx, tt.path); return err },
			"Delete":  func() error { return s.Delete(ctx, tt.path) },
		} {
			err := call()
			if !errors.Is(err, lifecycle.ErrStoragePath) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s(%q) = %v, want ErrStoragePath saying %q", name, tt.path, err, tt.says)
			}
		}
	}
	if n := ct.n.Load(); n != 0 {
		t.Errorf("refused paths sent %d requests, want none", n)
	}
}

func TestListPagesAndForms(t *testing.T) {
	f, srv := newFakeS3(t)
	s, ct := fakeStorage(t, srv.URL)
	ctx := context.Background()
	when := time.Date(2026, 4, 1, 8, 30, 0, 0, time.UTC)
	var want []string
	for i := range 1500 {
		f.put(fmt.Sprintf("ckpt/job/f-%04d", i), int64(i), when)
		want = append(want, fmt.Sprintf("f-%04d", i))
	}
	for i := range 700 {
		f.put(fmt.Sprintf("ckpt/job/d-%04d/a", i), 1, when)
		f.put(fmt.Sprintf("ckpt/job/d-%04d/b/c", i), 1, when)
		want = append(want, fmt.Sprintf("d-%04d", i))
	}
	f.put("ckpt/job/", 0, when)            // a directory marker: no entry
	f.put("ckpt/job-2/x", 1, when)         // a sibling: not listed
	f.put("ckpt/jobless", 1, when)         // shares the prefix "ckpt/job" without "/": not listed
	f.put("ckpt/job/both", 3, when)        // a name that is an object...
	f.put("ckpt/job/both/inside", 1, when) // ... and a prefix: once in List
	want = append(want, "both")
	slices.Sort(want)

	for _, dir := range []string{"s3://ckpt-bucket/ckpt/job", "s3a://ckpt-bucket/ckpt/job/", "s3p://ckpt-bucket/ckpt/job"} {
		f.resetCounts()
		ct.n.Store(0)
		got, err := s.List(ctx, dir)
		if err != nil {
			t.Fatalf("List(%q): %v", dir, err)
		}
		base := strings.TrimSuffix(dir, "/") + "/"
		wantPaths := make([]string, len(want))
		for i, w := range want {
			wantPaths[i] = base + w
		}
		if !slices.Equal(got, wantPaths) {
			t.Errorf("List(%q): %d entries, want %d; first %q", dir, len(got), len(wantPaths), got[:min(3, len(got))])
		}
		// 1,500 objects + 700 prefixes + both (twice) = 2,202 entries: 3 pages.
		if n := f.count("list"); n != 3 || ct.n.Load() != 3 {
			t.Errorf("List(%q) took %d listings (%d requests), want 3", dir, n, ct.n.Load())
		}
	}
	f.pageSize = 7 // a store with small pages: the same answer
	got, err := s.List(ctx, "s3://ckpt-bucket/ckpt/job")
	if err != nil || len(got) != len(want) {
		t.Errorf("List with 7-entry pages: %d entries, %v; want %d", len(got), err, len(want))
	}
}

func TestEntries(t *testing.T) {
	f, srv := newFakeS3(t)
	s, _ := fakeStorage(t, srv.URL)
	when := time.Date(2026, 4, 1, 8, 30, 0, 123e6, time.UTC)
	f.put("ckpt/job/chk-3/_metadata", 4096, when)
	f.put("ckpt/job/chk-3/", 0, when)
	f.put("ckpt/job/chk-3/state-1", 1<<20, when.Add(time.Second))
	f.put("ckpt/job/chk-3/shared/x", 5, when)
	got, err := s.Entries(context.Background(), "s3://ckpt-bucket/ckpt/job/chk-3")
	if err != nil {
		t.Fatal(err)
	}
	want := []lifecycle.StorageEntry{
		{Path: "s3://ckpt-bucket/ckpt/job/chk-3/_metadata", Size: 4096, Modified: when},
		{Path: "s3://ckpt-bucket/ckpt/job/chk-3/shared", Dir: true},
		{Path: "s3://ckpt-bucket/ckpt/job/chk-3/state-1", Size: 1 << 20, Modified: when.Add(time.Second)},
	}
	if len(got) != len(want) {
		t.Fatalf("Entries = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Dir != want[i].Dir || got[i].Size != want[i].Size || !got[i].Modified.Equal(want[i].Modified) {
			t.Errorf("Entries[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestDeleteBatchesAndKeepsSiblings(t *testing.T) {
	f, srv := newFakeS3(t)
	s, ct := fakeStorage(t, srv.URL)
	now := time.Now()
	for i := range 2300 {
		f.put(fmt.Sprintf("ckpt/job/chk-%d/state-%d", i%40, i), 1, now)
	}
	f.put("ckpt/job", 0, now)     // the object path itself
	f.put("ckpt/job/", 0, now)    // its directory marker
	f.put("ckpt/job-2/x", 1, now) // siblings sharing the prefix without "/"
	f.put("ckpt/jobless", 1, now)
	f.put("ckpt/other/job/x", 1, now)
	if err := s.Delete(context.Background(), "s3://ckpt-bucket/ckpt/job/"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.keys(), []string{"ckpt/job-2/x", "ckpt/jobless", "ckpt/other/job/x"}; !slices.Equal(got, want) {
		t.Errorf("left after Delete: %q, want %q", got, want)
	}
	// 2,301 objects under the prefix: 3 listings; 2,300 objects, 41
	// folders (ckpt/job/ and chk-0/ to chk-39/) and the path: 3 deletions.
	if l, d := f.count("list"), f.count("delete"); l != 3 || d != 3 || ct.n.Load() != 6 {
		t.Errorf("Delete took %d listings and %d deletions (%d requests), want 3 and 3", l, d, ct.n.Load())
	}
	// The last batch ends with the folders, deepest first, then the path.
	last := f.lastBatch
	if len(last) < 42 || last[len(last)-1] != "ckpt/job" || last[len(last)-2] != "ckpt/job/" ||
		last[len(last)-42] != "ckpt/job/chk-0/" || last[len(last)-3] != "ckpt/job/chk-9/" {
		t.Errorf("last DeleteObjects batch ends with %q, want chk-0/ ... chk-9/, ckpt/job/, ckpt/job", last[max(0, len(last)-43):])
	}
	if f.largestBatch != 1000 {
		t.Errorf("largest DeleteObjects batch %d keys, want 1000", f.largestBatch)
	}
}

func TestMissingIsEmpty(t *testing.T) {
	f, srv := newFakeS3(t)
	s, _ := fakeStorage(t, srv.URL)
	ctx := context.Background()
	f.put("ckpt/job/chk-1/_metadata", 1, time.Now())
	got, err := s.List(ctx, "s3://ckpt-bucket/ckpt/nothing-here")
	if err != nil || len(got) != 0 {
		t.Errorf("List of a missing dir = %q, %v; want nothing, no error", got, err)
	}
	if err := s.Delete(ctx, "s3://ckpt-bucket/ckpt/nothing-here"); err != nil {
		t.Errorf("Delete of a missing path: %v", err)
	}
	if err := s.Delete(ctx, "s3://no-such-bucket/ckpt/job"); err != nil {
		t.Errorf("Delete in a missing bucket: %v, want no error (nothing to delete)", err)
	}
	_, err = s.List(ctx, "s3://no-such-bucket/ckpt/job")
	if err == nil || errors.Is(err, lifecycle.ErrStoragePath) || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("List in a missing bucket = %v, want an error naming NoSuchBucket (not ErrStoragePath)", err)
	}
	if got := f.keys(); len(got) != 1 {
		t.Errorf("objects after the deletions of missing paths: %q", got)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("denied", func(t *testing.T) {
		f, srv := newFakeS3(t)
		s, ct := fakeStorage(t, srv.URL)
		f.fail = func(string, int) (int, string) { return http.StatusForbidden, "AccessDenied" }
		_, err := s.List(ctx, "s3://ckpt-bucket/ckpt/job")
		if err == nil || errors.Is(err, lifecycle.ErrStoragePath) || !strings.Contains(err.Error(), "AccessDenied") ||
			!strings.Contains(err.Error(), "s3://ckpt-bucket/ckpt/job") {
			t.Errorf("List, access denied = %v, want an error naming the path and AccessDenied", err)
		}
		if err := s.Delete(ctx, "s3://ckpt-bucket/ckpt/job"); err == nil || errors.Is(err, lifecycle.ErrStoragePath) {
			t.Errorf("Delete, access denied = %v, want an error, not ErrStoragePath", err)
		}
		if n := ct.n.Load(); n != 2 {
			t.Errorf("%d requests, want 2: a refusal is not retried", n)
		}
	})
	t.Run("throttled then served", func(t *testing.T) {
		f, srv := newFakeS3(t)
		s, ct := fakeStorage(t, srv.URL)
		f.put("ckpt/job/a", 1, time.Now())
		f.fail = func(op string, n int) (int, string) {
			if n <= 2 {
				return http.StatusServiceUnavailable, "SlowDown"
			}
			return 0, ""
		}
		if err := s.Delete(ctx, "s3://ckpt-bucket/ckpt/job"); err != nil {
			t.Fatalf("Delete with two throttled answers per call: %v", err)
		}
		if len(f.keys()) != 0 {
			t.Errorf("left: %q", f.keys())
		}
		if n := ct.n.Load(); n != 6 {
			t.Errorf("%d requests, want 6: listing and deletion in 3 attempts each", n)
		}
	})
	t.Run("throttled throughout", func(t *testing.T) {
		f, srv := newFakeS3(t)
		s, _ := fakeStorage(t, srv.URL)
		f.fail = func(string, int) (int, string) { return http.StatusServiceUnavailable, "SlowDown" }
		_, err := s.List(ctx, "s3://ckpt-bucket/ckpt/job")
		if err == nil || !strings.Contains(err.Error(), "SlowDown") {
			t.Errorf("List always throttled = %v, want the SlowDown error", err)
		}
	})
	t.Run("some keys not deleted", func(t *testing.T) {
		f, srv := newFakeS3(t)
		s, _ := fakeStorage(t, srv.URL)
		for i := range 5 {
			f.put(fmt.Sprintf("ckpt/job/k%d", i), 1, time.Now())
		}
		f.failKeys = map[string]bool{"ckpt/job/k3": true}
		err := s.Delete(ctx, "s3://ckpt-bucket/ckpt/job")
		if err == nil || errors.Is(err, lifecycle.ErrStoragePath) || !strings.Contains(err.Error(), `"ckpt/job/k3"`) ||
			!strings.Contains(err.Error(), "1 of 7 keys") {
			t.Errorf("Delete with a key refused = %v, want an error naming ckpt/job/k3", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		_, srv := newFakeS3(t)
		s, ct := fakeStorage(t, srv.URL)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.List(cctx, "s3://ckpt-bucket/ckpt/job"); !errors.Is(err, context.Canceled) {
			t.Errorf("List, cancelled = %v", err)
		}
		if err := s.Delete(cctx, "s3://ckpt-bucket/ckpt/job"); !errors.Is(err, context.Canceled) {
			t.Errorf("Delete, cancelled = %v", err)
		}
		if ct.n.Load() != 0 {
			t.Errorf("%d requests after cancellation", ct.n.Load())
		}
	})
}

// TestRequestCounts: the requests that listing and deleting a folder of
// n objects take: ceil(n/1000) listings, and for Delete as many listings
// and ceil((n+2)/1000) deletions (the objects, the folder's key and the
// path).
func TestRequestCounts(t *testing.T) {
	f, srv := newFakeS3(t)
	s, ct := fakeStorage(t, srv.URL)
	ctx := context.Background()
	for _, n := range []int{10, 1000, 10000} {
		now := time.Now()
		for i := range n {
			f.put(fmt.Sprintf("ckpt/n%d/f-%05d", n, i), 1, now)
		}
		dir := fmt.Sprintf("s3://ckpt-bucket/ckpt/n%d", n)
		ct.n.Store(0)
		got, err := s.List(ctx, dir)
		if err != nil || len(got) != n {
			t.Fatalf("List(%q): %d entries, %v", dir, len(got), err)
		}
		listReqs := ct.n.Load()
		ct.n.Store(0)
		f.resetCounts()
		if err := s.Delete(ctx, dir); err != nil {
			t.Fatal(err)
		}
		delReqs, deletions := ct.n.Load(), f.count("delete")
		wantList, wantDel := int64((n+999)/1000), (n+2+999)/1000
		t.Logf("%5d objects: List %d requests; Delete %d requests (%d listings, %d DeleteObjects)",
			n, listReqs, delReqs, f.count("list"), deletions)
		if listReqs != wantList || deletions != wantDel || delReqs != wantList+int64(wantDel) {
			t.Errorf("%d objects: List %d requests, Delete %d (%d deletions); want %d, %d (%d)",
				n, listReqs, delReqs, deletions, wantList, wantList+int64(wantDel), wantDel)
		}
	}
}
