package s3client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The example of a signed GET Object request in Amazon S3's Signature
// Version 4 documentation ("Example: GET Object"): its canonical
// request, string to sign and signature are published with it.
func TestSignatureOfDocumentedExample(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "https://examplebucket.s3.amazonaws.com/test.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=0-9")
	empty := sha256Hex(nil)
	req.Header.Set("X-Amz-Content-Sha256", empty)
	req.Header.Set("X-Amz-Date", "20130524T000000Z")
	at := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	got := authorization(req, empty, at, "us-east-1", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	want := "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	if got != want {
		t.Errorf("Authorization:\n got %s\nwant %s", got, want)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"a/b c+d~e_f.g-h": "a/b%20c%2Bd~e_f.g-h",
		"ä=&?":            "%C3%A4%3D%26%3F",
	} {
		if got := escapePath(in); got != want {
			t.Errorf("escapePath(%q) = %q, want %q", in, got, want)
		}
	}
	q := url.Values{"prefix": {"a b/"}, "list-type": {"2"}, "continuation-token": {"x=y"}}
	if got, want := canonicalQuery(q), "continuation-token=x%3Dy&list-type=2&prefix=a%20b%2F"; got != want {
		t.Errorf("canonicalQuery = %q, want %q", got, want)
	}
}

// fakeStore is an S3 endpoint of one bucket that checks each request's
// signature with the same secret and answers ListObjectsV2 a page of two
// keys at a time.
type fakeStore struct {
	secret  string
	mu      sync.Mutex
	objects map[string]string
	pages   int
}

func (f *fakeStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	date, err := time.Parse(amzDateFormat, r.Header.Get("X-Amz-Date"))
	payload := r.Header.Get("X-Amz-Content-Sha256")
	body, _ := io.ReadAll(r.Body)
	if err != nil || payload != sha256Hex(body) || auth != authorization(r, payload, date, "us-east-1", "ak", f.secret) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>`)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != "b" {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `<Error><Code>NoSuchBucket</Code></Error>`)
		return
	}
	switch {
	case r.Method == http.MethodGet && key == "":
		f.pages++
		prefix, after := r.URL.Query().Get("prefix"), r.URL.Query().Get("continuation-token")
		var keys []string
		for k := range f.objects {
			if strings.HasPrefix(k, prefix) && k > after {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		truncated := len(keys) > 2
		if truncated {
			keys = keys[:2]
		}
		fmt.Fprint(w, `<ListBucketResult>`)
		for _, k := range keys {
			fmt.Fprintf(w, `<Contents><Key>%s</Key><Size>%d</Size><LastModified>2026-01-02T03:04:05.000Z</LastModified></Contents>`, k, len(f.objects[k]))
		}
		if truncated {
			fmt.Fprintf(w, `<IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken>`, keys[1])
		}
		fmt.Fprint(w, `</ListBucketResult>`)
	case r.Method == http.MethodPut:
		f.objects[key] = string(body)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		v, ok := f.objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.Method == http.MethodGet {
			fmt.Fprint(w, v)
		}
	case r.Method == http.MethodDelete:
		delete(f.objects, key)
		w.WriteHeader(http.StatusNoContent)
	}
}

func TestClientAgainstSigningStore(t *testing.T) {
	f := &fakeStore{secret: "sk", objects: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := &Client{Endpoint: srv.URL, AccessKey: "ak", SecretKey: "sk"}
	ctx := context.Background()
	for _, k := range []string{"sp/a/_metadata", "sp/a/x y", "sp/b/_metadata", "sp/c/_metadata", "other"} {
		if err := c.Put(ctx, "b", k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := c.List(ctx, "b", "sp/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
		if o.Size != int64(len("v-"+o.Key)) || o.LastModified.IsZero() {
			t.Errorf("object %+v", o)
		}
	}
	if got, want := strings.Join(keys, ","), "sp/a/_metadata,sp/a/x y,sp/b/_metadata,sp/c/_metadata"; got != want || f.pages != 2 {
		t.Errorf("List = %s in %d pages, want %s in 2", got, f.pages, want)
	}
	if ok, err := c.Exists(ctx, "b", "sp/a/x y"); !ok || err != nil {
		t.Errorf("Exists of a key = %v, %v", ok, err)
	}
	if ok, err := c.Exists(ctx, "b", "sp/none"); ok || err != nil {
		t.Errorf("Exists of a missing key = %v, %v", ok, err)
	}
	if b, err := c.Get(ctx, "b", "sp/a/x y"); string(b) != "v-sp/a/x y" || err != nil {
		t.Errorf("Get = %q, %v", b, err)
	}
	if err := c.Delete(ctx, "b", "sp/a/x y"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Exists(ctx, "b", "sp/a/x y"); ok {
		t.Error("the key exists after Delete")
	}
	if _, err := c.List(ctx, "nobucket", ""); !IsNotFound(err) || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("List of a missing bucket: %v", err)
	}
	bad := *c
	bad.SecretKey = "wrong"
	_, err = bad.List(ctx, "b", "")
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != "SignatureDoesNotMatch" {
		t.Errorf("a wrong secret: %v", err)
	}
}
