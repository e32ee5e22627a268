package s3storage

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeS3 is an in-memory S3 API of one bucket, path-style, with the two
// calls Storage makes: ListObjectsV2 (prefix, delimiter, max-keys,
// continuation token) and DeleteObjects. It counts requests by call and
// can fail them.
type fakeS3 struct {
	bucket string

	mu      sync.Mutex
	objects map[string]fakeObject
	// pageSize is the most entries a listing page has (S3's 1,000 when 0).
	pageSize int
	// fail, when set, may answer a request with an error instead: a
	// status and an S3 error code, or 0.
	fail func(op string, n int) (status int, code string)
	// failKeys are keys DeleteObjects reports as not deleted.
	failKeys map[string]bool
	calls    map[string]int
	// largestBatch is the most keys one DeleteObjects request had;
	// lastBatch the keys of the last, in order.
	largestBatch int
	lastBatch    []string
}

type fakeObject struct {
	size     int64
	modified time.Time
}

func newFakeS3(t *testing.T) (*fakeS3, *httptest.Server) {
	t.Helper()
	f := &fakeS3{bucket: "ckpt-bucket", objects: map[string]fakeObject{}, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeS3) put(key string, size int64, modified time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key] = fakeObject{size: size, modified: modified}
}

func (f *fakeS3) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.objects))
	for k := range f.objects {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (f *fakeS3) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeS3) resetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = map[string]int{}
	f.largestBatch = 0
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	bucket, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	op := "other"
	switch {
	case r.Method == http.MethodGet && q.Get("list-type") == "2":
		op = "list"
	case r.Method == http.MethodPost && q.Has("delete"):
		op = "delete"
	}
	f.calls[op]++
	if f.fail != nil {
		if status, code := f.fail(op, f.calls[op]); status != 0 {
			writeError(w, status, code)
			return
		}
	}
	if bucket != f.bucket {
		writeError(w, http.StatusNotFound, "NoSuchBucket")
		return
	}
	switch op {
	case "list":
		f.list(w, q.Get("prefix"), q.Get("delimiter"), q.Get("continuation-token"), q.Get("max-keys"))
	case "delete":
		f.delete(w, r)
	default:
		writeError(w, http.StatusNotImplemented, "NotImplemented")
	}
}

func writeError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>fake %s</Message><RequestId>r1</RequestId></Error>`, code, code)
}

type listResult struct {
	XMLName               xml.Name       `xml:"ListBucketResult"`
	Name                  string         `xml:"Name"`
	Prefix                string         `xml:"Prefix"`
	Delimiter             string         `xml:"Delimiter,omitempty"`
	MaxKeys               int            `xml:"MaxKeys"`
	KeyCount              int            `xml:"KeyCount"`
	IsTruncated           bool           `xml:"IsTruncated"`
	NextContinuationToken string         `xml:"NextContinuationToken,omitempty"`
	Contents              []listObject   `xml:"Contents"`
	CommonPrefixes        []commonPrefix `xml:"CommonPrefixes"`
}

type listObject struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	Size         int64  `xml:"Size"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

// list answers a page: the entries (objects and common prefixes, in key
// order) after the continuation token, which is the last entry of the
// page before.
func (f *fakeS3) list(w http.ResponseWriter, prefix, delim, token, maxKeys string) {
	limit := f.pageSize
	if limit == 0 {
		limit = 1000
	}
	if n, err := strconv.Atoi(maxKeys); err == nil && n < limit {
		limit = n
	}
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	res := listResult{Name: f.bucket, Prefix: prefix, Delimiter: delim, MaxKeys: limit}
	last := ""
	for _, k := range keys {
		entry, isPrefix := k, false
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				entry, isPrefix = k[:len(prefix)+i+len(delim)], true
			}
		}
		if entry <= token || entry == last {
			continue
		}
		if res.KeyCount == limit {
			res.IsTruncated = true
			res.NextContinuationToken = last
			break
		}
		if isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: entry})
		} else {
			o := f.objects[k]
			res.Contents = append(res.Contents, listObject{Key: k, Size: o.size,
				LastModified: o.modified.UTC().Format("2006-01-02T15:04:05.000Z")})
		}
		res.KeyCount++
		last = entry
	}
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(res)
}

type deleteRequest struct {
	Quiet   bool `xml:"Quiet"`
	Objects []struct {
		Key string `xml:"Key"`
	} `xml:"Object"`
}

type deleteResult struct {
	XMLName xml.Name `xml:"DeleteResult"`
	Deleted []struct {
		Key string `xml:"Key"`
	} `xml:"Deleted"`
	Errors []deleteError `xml:"Error"`
}

type deleteError struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func (f *fakeS3) delete(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "IncompleteBody")
		return
	}
	var req deleteRequest
	if err := xml.Unmarshal(body, &req); err != nil || len(req.Objects) == 0 || len(req.Objects) > 1000 {
		writeError(w, http.StatusBadRequest, "MalformedXML")
		return
	}
	f.largestBatch = max(f.largestBatch, len(req.Objects))
	f.lastBatch = f.lastBatch[:0]
	for _, o := range req.Objects {
		f.lastBatch = append(f.lastBatch, o.Key)
	}
	var res deleteResult
	for _, o := range req.Objects {
		if f.failKeys[o.Key] {
			res.Errors = append(res.Errors, deleteError{Key: o.Key, Code: "AccessDenied", Message: "fake refusal"})
			continue
		}
		delete(f.objects, o.Key)
		if !req.Quiet {
			res.Deleted = append(res.Deleted, struct {
				Key string `xml:"Key"`
			}{o.Key})
		}
	}
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(res)
}
