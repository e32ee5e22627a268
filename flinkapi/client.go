package flinkapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-resty/resty/v2"
)

// Client talks to one Flink JobManager's REST API. It is safe for concurrent
// use and keeps one connection pool. Create it with NewClient.
type Client struct {
	base          string        // scheme://host[:port][/prefix], no trailing slash
	rc            *resty.Client // sends jar uploads (multipart bodies)
	hc            *http.Client  // sends every other request
	header        http.Header   // User-Agent, Accept and Authorization of every request; never modified
	timeout       time.Duration
	uploadTimeout time.Duration
	retry         RetryPolicy
	log           *slog.Logger
	maxBody       int64 // the largest answer body read, WithMaxResponseSize
	fixedVersion  Version
	red           *redactor // the credentials to keep out of messages
	// tlsFiles are the files of WithCAFile and WithClientCertificateFiles,
	// nil without them.
	tlsFiles *tlsFiles
	// clientCert reports whether the client has a certificate to present,
	// which tells a server's refusal of it from its want of one.
	clientCert bool

	// ver is the version learnt from the cluster, shared with the
	// clients WithoutRetries derives from this one.
	ver *versionCache
}

// versionCache holds the cluster's version once it is known.
type versionCache struct {
	mu sync.Mutex
	v  Version
}

// NewClient returns a client for the JobManager at baseURL, such as
// "http://localhost:8081" or "https://flink.example.com/jobmanager/". The URL
// must not carry credentials (nor any '@'): use WithBasicAuth or
// WithBearerToken. The error for such a URL does not repeat what comes
// before its '@'.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	s := settings{
		timeout:         defaultTimeout,
		uploadTimeout:   defaultUploadTimeout,
		userAgent:       defaultUserAgent,
		retry:           DefaultRetryPolicy,
		logger:          slog.New(slog.DiscardHandler),
		maxResponseSize: defaultMaxResponseSize,
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("flinkapi: NewClient: option %d is nil", i)
		}
		if err := opt(&s); err != nil {
			return nil, fmt.Errorf("flinkapi: NewClient: %w", err)
		}
	}
	u, _ := url.Parse(base) // parsed by parseBaseURL
	tlsCfg, files, err := tlsClientConfig(s, u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("flinkapi: NewClient: %w", err)
	}
	hc, err := buildHTTPClient(s, tlsCfg)
	if err != nil {
		return nil, err
	}
	rc := resty.NewWithClient(hc).
		SetBaseURL(base).
		SetLogger(quietLogger{}).
		SetDisableWarn(true).
		// The client reads and decodes every body itself (readBody): once,
		// into a buffer sized from Content-Length, bounded by maxBody,
		// without resty's content-type matching and limit reader.
		SetDoNotParseResponse(true).
		SetHeader("User-Agent", s.userAgent).
		SetHeader("Accept", "application/json").
		SetRedirectPolicy(resty.RedirectPolicyFunc(func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }))
	if s.basicUser != "" {
		rc.SetBasicAuth(s.basicUser, s.basicPass)
	}
	if s.bearer != "" {
		rc.SetAuthToken(s.bearer)
	}
	upload := s.uploadTimeout
	if s.timeout > upload {
		upload = s.timeout
	}
	header := http.Header{
		"User-Agent": {s.userAgent},
		"Accept":     {"application/json"},
	}
	switch {
	case s.basicUser != "":
		header["Authorization"] = []string{"Basic " + base64.StdEncoding.EncodeToString([]byte(s.basicUser+":"+s.basicPass))}
	case s.bearer != "":
		header["Authorization"] = []string{"Bearer " + s.bearer}
	}
	return &Client{
		base:          base,
		rc:            rc,
		hc:            hc,
		header:        header,
		timeout:       s.timeout,
		uploadTimeout: upload,
		retry:         s.retry,
		log:           s.logger,
		maxBody:       s.maxResponseSize,
		fixedVersion:  s.version,
		red:           newRedactor(s),
		tlsFiles:      files,
		clientCert:    hasClientCertificate(s),
		ver:           &versionCache{v: s.version},
	}, nil
}

// WithoutRetries returns a client like c that sends every request once
// (NoRetry), sharing c's connections and the version it learnt: for a
// caller that retries by coming back later, such as lifecycle.Controller,
// whose calls send a bounded number of requests and never wait in a
// retry. A client without retries is returned as it is.
func (c *Client) WithoutRetries() *Client {
	if c.retry.MaxAttempts == 1 {
		return c
	}
	n := *c // the fields are set once, at NewClient, and never change
	n.retry = NoRetry
	return &n
}

// BaseURL returns the JobManager URL the client talks to.
func (c *Client) BaseURL() string { return c.base }

func parseBaseURL(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", invalidInput("base URL is empty; want e.g. http://localhost:8081")
	}
	// Any '@' is taken for user info, however malformed the rest is, and
	// nothing before it is ever repeated: a password may hold any
	// character, and url.Parse's errors quote the whole URL.
	if strings.Contains(raw, "@") {
		return "", invalidInput("base URL %q must not contain credentials; use WithBasicAuth or WithBearerToken", truncate(redactBaseURL(raw), 100))
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which the message quotes once
		}
		return "", invalidInput("base URL %q: %v", truncate(raw, 100), err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", invalidInput("base URL must start with http:// or https://, got scheme %q", u.Scheme)
	case u.Host == "":
		return "", invalidInput("base URL %q has no host", truncate(raw, 100))
	case u.RawQuery != "" || u.Fragment != "":
		return "", invalidInput("base URL %q must not have a query or fragment", truncate(raw, 100))
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// buildHTTPClient builds the client's HTTP client: the caller's
// (WithHTTPClient), copied, or one of its own, with tlsCfg in a clone of
// the transport where WithTLSConfig (or a file option) asks for it or the
// transport is the client's own.
func buildHTTPClient(s settings, tlsCfg *tls.Config) (*http.Client, error) {
	var hc http.Client
	if s.httpClient != nil {
		hc = *s.httpClient // never modify the caller's client
	}
	own := hc.Transport == nil
	if own {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		t.MaxResponseHeaderBytes = maxResponseHeaderBytes
		hc.Transport = t
	}
	if s.tlsConfig != nil || s.caFile != "" || s.certFile != "" || own {
		t, ok := hc.Transport.(*http.Transport)
		if !ok {
			return nil, errors.New("flinkapi: NewClient: WithTLSConfig, WithCAFile and WithClientCertificateFiles need the HTTP client's transport to be an *http.Transport")
		}
		t = t.Clone()
		t.TLSClientConfig = tlsCfg
		hc.Transport = t
	}
	hc.Transport = noRedirects{hc.Transport}
	if s.budget != nil {
		hc.Transport = budgeted{next: hc.Transport, b: s.budget}
	}
	return &hc, nil
}

// maxResponseHeaderBytes bounds the headers of an answer the client
// reads with its own transport (not one given with WithHTTPClient):
// Flink's are a few hundred bytes; a server that sends more is not read
// further, and the error (a *TransportError matching ErrDecode) is not
// retried.
const maxResponseHeaderBytes = 64 << 10

// locationKey is where noRedirects moves the Location header of a redirect.
const locationKey = "Flinkapi-Redirect-Location"

// noRedirects hands every redirect (3xx) to the client as an answer: it
// moves the Location header away, so that net/http neither follows it nor
// fails on an unparsable one (with an error that would quote it).
type noRedirects struct{ next http.RoundTripper }

// RoundTrip sends r through the transport underneath.
func (t noRedirects) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp != nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc, ok := resp.Header["Location"]; ok {
			h := resp.Header.Clone()
			delete(h, "Location")
			h[locationKey] = loc
			resp.Header = h
		}
	}
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// transport underneath.
func (t noRedirects) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// quietLogger silences resty's own logging, which would print request
// headers (Authorization among them); the client logs through slog, and
// only messages already free of credentials.
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}

// call describes one REST request.
type call struct {
	method string
	path   string     // validated and escaped, starting with "/"
	query  url.Values // optional
	body   any        // JSON body, or nil
	// upload, if set, sends a multipart body with one jar file.
	upload *jarUpload
	// retry marks a request that is safe to repeat: a GET, or a trigger
	// that carries a client trigger id.
	retry bool
	// secrets are values the body carries that the call never reports:
	// they are redacted from its errors and log lines.
	secrets []string
}

type jarUpload struct {
	name string
	r    io.Reader
}

// do sends the call, retrying where safe, and decodes a 2xx answer into out
// (which may be nil). It returns the status code of the last answer.
func (c *Client) do(ctx context.Context, cl call, out any) (int, error) {
	if ctx == nil {
		return 0, invalidInput("context is nil")
	}
	var body []byte
	if cl.body != nil {
		var err error
		if body, err = json.Marshal(cl.body); err != nil {
			return 0, fmt.Errorf("flinkapi: %s %s: encoding request: %w", cl.method, cl.path, err)
		}
	}
	attempts := 1
	callCtx := ctx // bounds the whole call: every attempt, body reads and waits
	if cl.retry {
		attempts = c.retry.MaxAttempts
		if c.retry.MaxElapsed > 0 {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeout(ctx, c.retry.MaxElapsed)
			defer cancel()
		}
	}
	var bo *backoff.ExponentialBackOff
	start := time.Now()
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := c.once(ctx, callCtx, cl, body, out)
		if c.log.Enabled(ctx, slog.LevelDebug) {
			c.log.LogAttrs(ctx, slog.LevelDebug, "flink request",
				slog.String("method", cl.method), slog.String("path", cl.path),
				slog.Int("status", status), slog.Int("attempt", attempt),
				slog.Duration("elapsed", time.Since(start)), slog.Any("error", err))
		}
		if err == nil || attempt >= attempts || !IsRetryable(err) || callCtx.Err() != nil {
			return status, err
		}
		if bo == nil {
			bo = backoff.NewExponentialBackOff(
				backoff.WithInitialInterval(c.retry.InitialInterval),
				backoff.WithMaxInterval(c.retry.MaxInterval),
				backoff.WithMaxElapsedTime(0), // callCtx's deadline bounds the call
				backoff.WithRandomizationFactor(0.5),
				backoff.WithMultiplier(2),
			)
		}
		wait := bo.NextBackOff()
		if retryAfter > wait {
			wait = min(retryAfter, c.retry.MaxInterval)
		}
		if dl, ok := callCtx.Deadline(); ok && time.Until(dl) <= wait {
			return status, err // no attempt could start before the deadline
		}
		c.log.LogAttrs(ctx, slog.LevelInfo, "retrying flink request",
			slog.String("method", cl.method), slog.String("path", cl.path),
			slog.Int("attempt", attempt), slog.Duration("wait", wait), slog.String("error", err.Error()))
		t := time.NewTimer(wait)
		select {
		case <-callCtx.Done():
			t.Stop()
			return status, err
		case <-t.C:
		}
	}
}

// once sends one attempt within callCtx, which is ctx or a context of the
// whole call derived from it.
func (c *Client) once(ctx, callCtx context.Context, cl call, body []byte, out any) (status int, retryAfter time.Duration, err error) {
	timeout := c.timeout
	if cl.upload != nil {
		timeout = c.uploadTimeout
	}
	actx, cancel := context.WithTimeout(callCtx, timeout)
	defer cancel()

	var answered atomic.Bool // the server sent the first byte of an answer
	hs := &handshakeNote{}   // what the server asked of the client in a TLS handshake
	sctx := context.WithValue(actx, handshakeKey{}, hs)
	resp, err := c.send(httptrace.WithClientTrace(sctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { answered.Store(true) }}), cl, body)
	if resp != nil && resp.Body != nil {
		defer resp.Body.Close()
	}
	if err != nil {
		err := c.transportError(ctx, callCtx, actx, timeout, cl, err, hs)
		if te, ok := err.(*TransportError); ok && answered.Load() && actx.Err() == nil {
			te.Unreadable = true
		}
		return 0, 0, err
	}
	status = resp.StatusCode
	if status >= 300 && status < 400 {
		return status, 0, c.redirectError(cl, resp)
	}
	raw, err := c.readBody(resp)
	if err != nil {
		return status, 0, c.transportError(ctx, callCtx, actx, timeout, cl, err, hs)
	}
	if status >= 400 {
		return status, parseRetryAfter(resp.Header.Get("Retry-After")), c.apiError(cl, status, raw)
	}
	if status < 200 || status >= 300 {
		return status, 0, &APIError{StatusCode: status, Method: cl.method, Path: cl.path,
			Errors: []string{"unexpected status " + strconv.Itoa(status)}}
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		var err error
		if d, ok := out.(bodyDecoder); ok {
			err = d.decodeBody(raw)
		} else {
			err = json.Unmarshal(raw, out)
		}
		if err != nil {
			return status, 0, c.decodeError(cl.method, cl.path, err)
		}
	}
	return status, 0, nil
}

// send sends one request of the call with net/http; a jar upload goes
// through resty, which writes the multipart body.
func (c *Client) send(actx context.Context, cl call, body []byte) (*http.Response, error) {
	if c.tlsFiles != nil && c.tlsFiles.changed() {
		// A CA or key pair replaced on disk: the request connects anew
		// with it instead of on a connection made with the old one.
		c.hc.CloseIdleConnections()
	}
	if cl.upload != nil {
		r := c.rc.R().SetContext(actx)
		if cl.query != nil {
			r.SetQueryParamsFromValues(cl.query)
		}
		r.SetMultipartField("jarfile", cl.upload.name, "application/x-java-archive", cl.upload.r)
		resp, err := r.Execute(cl.method, cl.path)
		if resp == nil {
			return nil, err
		}
		return resp.RawResponse, err
	}
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, cl.method, u, rd)
	if err != nil {
		return nil, err
	}
	// A map of the request's own holding the client's one-value slices:
	// net/http and a cookie jar only replace values (Set) or append to
	// them, which copies a full slice, so the client's stay as they are.
	h := make(http.Header, len(c.header)+1)
	for k, v := range c.header {
		h[k] = v[:len(v):len(v)]
	}
	if body != nil {
		h["Content-Type"] = jsonContentType
	}
	req.Header = h
	return c.hc.Do(req)
}

var jsonContentType = []string{"application/json"}

// bodyDecoder is an answer type that decodes its body itself.
type bodyDecoder interface{ decodeBody(raw []byte) error }

// errBodyTooLarge is readBody's error for an answer above the client's
// maximum response size.
var errBodyTooLarge = errors.New("body too large")

// readBody reads an answer's body once: into a buffer of its
// Content-Length where the server gives one (one allocation, no copies),
// else into a buffer that doubles, never past the client's maximum
// response size. A larger body fails with errBodyTooLarge.
//
// The buffer is the call's own, not pooled: an operator polls a large
// answer every 30 s or so, long enough for a pool to be emptied by the
// collections in between, and a pooled buffer of the largest answer would
// stay held between polls for nothing.
func (c *Client) readBody(resp *http.Response) ([]byte, error) {
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return nil, nil
	}
	limit := c.maxBody
	size := int64(512)
	if n := resp.ContentLength; n >= 0 {
		if limit > 0 && n > limit {
			return nil, errBodyTooLarge
		}
		size = n + 1 // the extra byte reads the end without growing the buffer
	} else if limit > 0 && size > limit+1 {
		size = limit + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if limit > 0 && int64(len(buf)) > limit {
				return nil, errBodyTooLarge
			}
			next := 2 * int64(cap(buf))
			if limit > 0 && next > limit+1 {
				next = limit + 1
			}
			nb := make([]byte, len(buf), next)
			copy(nb, buf)
			buf = nb
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if limit > 0 && int64(len(buf)) > limit {
		return nil, errBodyTooLarge
	}
	return buf, nil
}

// transportError builds the error of an attempt that got no answer. ctx is
// the caller's context, callCtx the whole call's, actx the attempt's, which
// ends after timeout; hs is what a TLS handshake of the attempt noted.
func (c *Client) transportError(ctx, callCtx, actx context.Context, timeout time.Duration, cl call, err error, hs *handshakeNote) error {
	if errors.Is(err, errBodyTooLarge) {
		return fmt.Errorf("flinkapi: %s %s: %w (limit %d bytes)", cl.method, cl.path, ErrResponseTooLarge, c.maxBody)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is the caller's; keep errors free of it
	}
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case callCtx.Err() != nil:
		err = fmt.Errorf("gave up after the retry policy's MaxElapsed of %v: %w", c.retry.MaxElapsed, context.DeadlineExceeded)
	case actx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("request timed out after %v: %w", timeout, context.DeadlineExceeded)
	}
	// A transport of the caller's (WithHTTPClient) may put anything in its
	// errors, the request's URL and headers among them.
	err = c.red.cleanError(err)
	if cause := classifyTLS(err, hs, c.clientCert); cause != "" {
		err = &TLSError{Cause: cause, Err: err}
	}
	return &TransportError{Method: cl.method, Path: cl.path, Err: err}
}

// redirectError builds the error of a redirect, which the client never
// follows, naming its target without credentials.
func (c *Client) redirectError(cl call, resp *http.Response) *APIError {
	e := &APIError{StatusCode: resp.StatusCode, Method: cl.method, Path: cl.path}
	loc := resp.Header.Get(locationKey)
	if loc == "" {
		loc = resp.Header.Get("Location") // should net/http ever stop before noRedirects
	}
	if loc == "" {
		return e
	}
	base := &url.URL{}
	if resp.Request != nil {
		base = resp.Request.URL
	}
	if u, err := base.Parse(loc); err == nil {
		e.Location = c.red.clean(redactLocation(u))
		e.toTLS = base.Scheme == "http" && u.Scheme == "https" && u.Hostname() == base.Hostname()
	}
	return e
}

// decodeError builds the error of an answer the client could not read,
// without the client's credentials should the answer echo them.
func (c *Client) decodeError(method, path string, err error) *DecodeError {
	return &DecodeError{Method: method, Path: path, Err: c.red.cleanError(err)}
}

// apiError builds the error of an answer of 400 or more, without the
// client's credentials or the values the call marks secret should the
// server echo them.
func (c *Client) apiError(cl call, status int, body []byte) *APIError {
	// The body is cleaned whole, before its messages are cut to length: a
	// cut could leave half a URL whose user info no longer ends in '@',
	// or half a secret.
	red := c.red.with(cl.secrets)
	e := newAPIError(cl.method, cl.path, status, []byte(red.clean(string(body))))
	for i, m := range e.Errors {
		e.Errors[i] = red.clean(m)
	}
	e.StackTrace = red.clean(e.StackTrace)
	return e
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// get is a retried GET decoding into out.
func (c *Client) get(ctx context.Context, path string, query url.Values, out any) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: path, query: query, retry: true}, out)
	return err
}

// jobPath returns "/jobs/<id><suffix>" after validating id.
func jobPath(id JobID, suffix string) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	return "/jobs/" + string(id) + suffix, nil
}
