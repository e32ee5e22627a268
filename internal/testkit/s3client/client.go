// Package s3client is a small client of S3-compatible object stores for
// the test harness: path-style requests signed with AWS Signature Version
// 4, for the few calls the tests need to look at what Flink wrote (list
// the objects under a prefix, look one up, read, write and delete one,
// create a bucket). It speaks to the object store the real-Flink fixture
// starts on 127.0.0.1 (flinkfixture.Config.ObjectStore).
//
// Package s3client is test harness (internal/testkit): only tests and
// other harness packages import it, never the library or the examples'
// programs.
package s3client

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Client sends signed requests to one S3 endpoint. Its fields are set
// before first use and not changed afterwards; its methods are safe for
// concurrent use.
type Client struct {
	// Endpoint is the store's base URL, e.g. http://127.0.0.1:8333.
	Endpoint string
	// Region is the signing region; default us-east-1.
	Region string
	// AccessKey and SecretKey are the identity's credentials.
	AccessKey, SecretKey string
	// HTTP sends the requests; default a client with a 30-second timeout.
	HTTP *http.Client
	// Now is the signing time; default time.Now.
	Now func() time.Time
}

// Object is one entry of a listing.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// Error is a response of the store other than success: its HTTP status
// and, when the body says so, the S3 error code and message.
type Error struct {
	Method, Path string
	Status       int
	Code         string
	Message      string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("s3client: %s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// IsNotFound reports whether err is a 404 answer of the store (no such
// key or bucket).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// List returns every object of bucket whose key starts with prefix, in
// key order, following the listing's continuation tokens
// (ListObjectsV2).
func (c *Client) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	var out []Object
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		body, err := c.do(ctx, http.MethodGet, bucket, "", q, nil)
		if err != nil {
			return nil, err
		}
		var res struct {
			Contents []struct {
				Key          string `xml:"Key"`
				Size         int64  `xml:"Size"`
				LastModified string `xml:"LastModified"`
			} `xml:"Contents"`
			IsTruncated           bool   `xml:"IsTruncated"`
			NextContinuationToken string `xml:"NextContinuationToken"`
		}
		if err := xml.Unmarshal(body, &res); err != nil {
			return nil, fmt.Errorf("s3client: list %s/%s: %w", bucket, prefix, err)
		}
		for _, o := range res.Contents {
			t, _ := time.Parse(time.RFC3339Nano, o.LastModified)
			out = append(out, Object{Key: o.Key, Size: o.Size, LastModified: t})
		}
		if !res.IsTruncated {
			break
		}
		if res.NextContinuationToken == "" || res.NextContinuationToken == token {
			return nil, fmt.Errorf("s3client: list %s/%s: truncated without a new continuation token", bucket, prefix)
		}
		token = res.NextContinuationToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Exists reports whether the object bucket/key exists (HEAD).
func (c *Client) Exists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := c.do(ctx, http.MethodHead, bucket, key, nil, nil)
	if IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Get returns the content of the object bucket/key.
func (c *Client) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, bucket, key, nil, nil)
}

// Put writes the object bucket/key with content.
func (c *Client) Put(ctx context.Context, bucket, key string, content []byte) error {
	if content == nil {
		content = []byte{}
	}
	_, err := c.do(ctx, http.MethodPut, bucket, key, nil, content)
	return err
}

// Delete removes the object bucket/key; a key that does not exist is no
// error (S3 answers 204 either way).
func (c *Client) Delete(ctx context.Context, bucket, key string) error {
	_, err := c.do(ctx, http.MethodDelete, bucket, key, nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// CreateBucket creates bucket; a bucket that this identity already owns
// is no error.
func (c *Client) CreateBucket(ctx context.Context, bucket string) error {
	_, err := c.do(ctx, http.MethodPut, bucket, "", nil, []byte{})
	var e *Error
	if errors.As(err, &e) && (e.Code == "BucketAlreadyOwnedByYou" || e.Code == "BucketAlreadyExists") {
		return nil
	}
	return err
}

// do sends one signed request and returns the body of a 2xx answer, or an
// *Error.
func (c *Client) do(ctx context.Context, method, bucket, key string, query url.Values, body []byte) ([]byte, error) {
	if bucket == "" {
		return nil, errors.New("s3client: no bucket")
	}
	base, err := url.Parse(strings.TrimRight(c.Endpoint, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("s3client: endpoint %q is not a URL", c.Endpoint)
	}
	path := "/" + bucket
	if key != "" {
		path += "/" + key
	}
	u := *base
	u.Path = base.Path + path
	u.RawPath = escapePath(base.Path) + escapePath(path)
	u.RawQuery = canonicalQuery(query)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = int64(len(body))
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.sign(req, body, now())
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("s3client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("s3client: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Method: method, Path: path, Status: resp.StatusCode}
		var s3err struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		if xml.Unmarshal(data, &s3err) == nil {
			e.Code, e.Message = s3err.Code, s3err.Message
		}
		return nil, e
	}
	return data, nil
}

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Signature Version 4 (AWS4-HMAC-SHA256) of one request: the signed
// headers are host, x-amz-content-sha256, x-amz-date and any other
// x-amz-* and content-type headers the request carries.

const (
	signingAlgorithm = "AWS4-HMAC-SHA256"
	amzDateFormat    = "20060102T150405Z"
)

// sign adds x-amz-date, x-amz-content-sha256 and Authorization to req.
func (c *Client) sign(req *http.Request, body []byte, t time.Time) {
	t = t.UTC()
	payload := sha256Hex(body)
	req.Header.Set("X-Amz-Date", t.Format(amzDateFormat))
	req.Header.Set("X-Amz-Content-Sha256", payload)
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	req.Header.Set("Authorization", authorization(req, payload, t, region, c.AccessKey, c.SecretKey))
}

// authorization is the Authorization header of req, whose headers
// already include x-amz-date and x-amz-content-sha256.
func authorization(req *http.Request, payloadHash string, t time.Time, region, accessKey, secretKey string) string {
	headers, signed := canonicalHeaders(req)
	canonical := strings.Join([]string{
		req.Method,
		req.URL.EscapedPath(),
		canonicalQuery(req.URL.Query()),
		headers,
		signed,
		payloadHash,
	}, "\n")
	date := t.Format("20060102")
	scope := date + "/" + region + "/s3/aws4_request"
	toSign := strings.Join([]string{signingAlgorithm, t.Format(amzDateFormat), scope, sha256Hex([]byte(canonical))}, "\n")
	key := hmacSHA256([]byte("AWS4"+secretKey), date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	return fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s, Signature=%s", signingAlgorithm, accessKey, scope, signed, sig)
}

// canonicalHeaders are the canonical header block (each "name:value\n")
// and the signed header names joined by ';'.
func canonicalHeaders(req *http.Request) (string, string) {
	vals := map[string]string{"host": req.URL.Host}
	if req.Host != "" {
		vals["host"] = req.Host
	}
	for name, vs := range req.Header {
		n := strings.ToLower(name)
		if n != "content-type" && n != "range" && !strings.HasPrefix(n, "x-amz-") {
			continue
		}
		trimmed := make([]string, len(vs))
		for i, v := range vs {
			trimmed[i] = strings.Join(strings.Fields(v), " ")
		}
		vals[n] = strings.Join(trimmed, ",")
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + ":" + vals[n] + "\n")
	}
	return b.String(), strings.Join(names, ";")
}

// canonicalQuery is the query sorted by name and value, each escaped as
// SigV4 asks (spaces as %20, nothing left unescaped but A-Z a-z 0-9 - _ . ~).
func canonicalQuery(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, escape(k, false)+"="+escape(v, false))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// escapePath escapes every byte of p but the unreserved ones and '/'.
func escapePath(p string) string { return escape(p, true) }

func escape(s string, keepSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' ||
			ch == '-' || ch == '_' || ch == '.' || ch == '~' || keepSlash && ch == '/' {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
