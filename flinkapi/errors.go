package flinkapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Sentinel errors, matched with errors.Is. An *APIError matches the sentinel
// of its status code; input and version errors match theirs before any
// request is sent.
var (
	// ErrNotFound: Flink answered 404 (unknown job, trigger id, jar or route).
	ErrNotFound = errors.New("flinkapi: not found")
	// ErrConflict: Flink answered 409, e.g. cancelling a job that already
	// reached another terminal state.
	ErrConflict = errors.New("flinkapi: conflict")
	// ErrUnavailable: Flink (or a proxy in front of it) answered 429, 502,
	// 503 or 504, e.g. during a JobManager leader election.
	ErrUnavailable = errors.New("flinkapi: unavailable")
	// ErrBadRequest: Flink answered 400: the request was malformed, carried a
	// field this version does not know, or lacked a required setting.
	ErrBadRequest = errors.New("flinkapi: bad request")
	// ErrTimeout: Flink answered 408 (e.g. a cancel that timed out inside
	// the JobManager) or the request's own timeout expired.
	ErrTimeout = errors.New("flinkapi: timeout")
	// ErrUnsupported: the cluster's Flink version lacks the requested
	// feature; nothing was sent. The error is an *UnsupportedError.
	ErrUnsupported = errors.New("flinkapi: unsupported by this Flink version")
	// ErrInvalidInput: an argument was rejected before any request was sent.
	ErrInvalidInput = errors.New("flinkapi: invalid input")
	// ErrResponseTooLarge: the answer was larger than the client's maximum
	// response size (see WithMaxResponseSize).
	ErrResponseTooLarge = errors.New("flinkapi: response too large")
	// ErrOperationFailed: an asynchronous operation completed with a
	// failure cause (see OperationResult.Failure).
	ErrOperationFailed = errors.New("flinkapi: operation failed")
	// ErrWaitTimeout: a Waiter's maximum wait passed before the operation
	// completed. The operation may still complete on the cluster.
	ErrWaitTimeout = errors.New("flinkapi: wait timed out")

	// ErrMisconfigured: the client is set up wrong for this cluster, and a
	// retry will not help: its credentials were refused (ErrUnauthorized,
	// ErrForbidden), its base URL leads to a redirect (ErrRedirect), or TLS
	// failed on a certificate or on the scheme (ErrTLS). The client never
	// retries such an error, IsRetryable is false for it, and the message
	// names the option or setting to fix. A caller should stop the operation
	// and return the error instead of polling until its deadline.
	ErrMisconfigured = errors.New("flinkapi: client misconfigured for this cluster")
	// ErrUnauthorized: the server answered 401: credentials are missing or
	// refused (WithBasicAuth, WithBearerToken). Matches ErrMisconfigured.
	ErrUnauthorized = errors.New("flinkapi: unauthorized")
	// ErrForbidden: the server answered 403: the credentials given are not
	// allowed the request. Matches ErrMisconfigured.
	ErrForbidden = errors.New("flinkapi: forbidden")
	// ErrRedirect: the server answered 3xx. A JobManager never redirects its
	// REST API, so the base URL leads elsewhere, most often to the login
	// page of a proxy; APIError.Location says where. The client never
	// follows redirects. Matches ErrMisconfigured.
	ErrRedirect = errors.New("flinkapi: redirected")
	// ErrTLS: TLS with the server failed for a reason a retry does not
	// change: its certificate is signed by an authority the client does not
	// trust, is for another host name, or is expired; the server refused the
	// client's certificate; or one side speaks TLS and the other plain HTTP
	// (an https:// base URL for a plain-HTTP server, or an http:// one for
	// a TLS server where the server says so). Matches ErrMisconfigured.
	ErrTLS = errors.New("flinkapi: TLS failed")

	// ErrDecode: a successful (2xx) answer could not be read: its body is
	// not the JSON Flink sends for the call (a proxy's HTML page, a body cut
	// short where the connection gave no sign of it) or lacks a value the
	// call needs. The error is a *DecodeError. The client does not retry it
	// and IsRetryable is false, since the same answer most likely comes
	// again; but it is not ErrMisconfigured, so a caller that polls may
	// poll again.
	ErrDecode = errors.New("flinkapi: answer not understood")
)

// APIError is an answer of the JobManager (or of a proxy in front of it)
// with a status code of 400 or more, or a redirect (3xx), which the client
// never follows. Flink's error body {"errors": [...]} is split into
// readable messages and the Java stack trace that often follows the first
// one. None of its fields holds the client's credentials, even when the
// server echoes them.
type APIError struct {
	StatusCode int    // HTTP status code
	Method     string // HTTP method of the request
	Path       string // request path, without host, query or credentials
	// Errors holds Flink's messages, one per entry of the error body, each
	// reduced to its first line without the Java exception class name.
	Errors []string
	// StackTrace is the Java stack trace that came with the messages, if any.
	StackTrace string
	// Location is where a redirect (3xx) pointed, resolved against the
	// request's URL, with user info, query and fragment replaced by
	// "xxxxx"; empty for other answers.
	Location string

	// toTLS marks a redirect of a plain HTTP request to the same host with
	// https://, as Flink's REST server with TLS answers one.
	toTLS bool
}

// Error returns "flinkapi: METHOD PATH: CODE: message", with where a
// redirect pointed, and for an answer that ErrMisconfigured matches, what
// to configure.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("flinkapi: ")
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(e.Path)
	fmt.Fprintf(&b, ": %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.isRedirect() {
		if e.Location != "" {
			b.WriteString(": redirected to ")
			b.WriteString(e.Location)
		} else {
			b.WriteString(": a redirect without a usable Location")
		}
	}
	if msg := e.Message(); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if a := e.advice(); a != "" {
		b.WriteString("; ")
		b.WriteString(a)
	}
	return b.String()
}

func (e *APIError) isRedirect() bool { return e.StatusCode >= 300 && e.StatusCode < 400 }

// isPlainHTTPToTLS recognises the 400 that a TLS server answers a plain
// HTTP request with: Go's "Client sent an HTTP request to an HTTPS server."
// and nginx's "The plain HTTP request was sent to HTTPS port". (Flink's
// own answer is a redirect to https://, which toTLS marks.)
func (e *APIError) isPlainHTTPToTLS() bool {
	if e.StatusCode != http.StatusBadRequest {
		return false
	}
	for _, m := range e.Errors {
		if containsFold(m, "http request to an https server") || containsFold(m, "plain http request was sent to https port") {
			return true
		}
	}
	return false
}

// advice says what to configure for an answer that ErrMisconfigured
// matches, and is empty for others.
func (e *APIError) advice() string {
	switch {
	case e.toTLS && e.isRedirect():
		return "the server speaks TLS (Flink's security.ssl.rest.enabled): use https:// in the base URL given to NewClient, " +
			"with the cluster's CA given with WithCAFile or WithTLSConfig"
	case e.isRedirect():
		return "the client does not follow redirects, and a JobManager never redirects its REST API: " +
			"check the base URL given to NewClient (this is likely the login page of a proxy in front of the JobManager; " +
			"the proxy's credentials go in WithBasicAuth or WithBearerToken)"
	case e.StatusCode == http.StatusUnauthorized:
		return "the server wants credentials that were missing or refused: set them with WithBasicAuth or WithBearerToken"
	case e.StatusCode == http.StatusForbidden:
		return "the server refuses this request: check the credentials given with WithBasicAuth or WithBearerToken " +
			"(or the client certificate given with WithTLSConfig), and whether the cluster allows the request at all"
	case e.isPlainHTTPToTLS():
		return "the server speaks TLS: use https:// in the base URL given to NewClient, with the cluster's CA given with WithTLSConfig"
	}
	return ""
}

// Message returns Flink's messages joined by "; ", without stack traces.
func (e *APIError) Message() string { return strings.Join(e.Errors, "; ") }

// Is maps the status code to the package's sentinel errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrConflict:
		return e.StatusCode == http.StatusConflict
	case ErrUnavailable:
		switch e.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	case ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrTimeout:
		return e.StatusCode == http.StatusRequestTimeout
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrRedirect:
		return e.isRedirect()
	case ErrTLS:
		return e.isPlainHTTPToTLS() || e.toTLS && e.isRedirect()
	case ErrMisconfigured:
		return e.advice() != ""
	}
	return false
}

// TransportError is a failure to get any answer from the JobManager:
// connection refused or reset, DNS failure, TLS failure, or a timeout.
// It is never an answer of Flink's; compare APIError.
type TransportError struct {
	Method string // HTTP method of the request
	Path   string // request path, without host, query or credentials
	Err    error  // the cause: a net.Error, a TLS or DNS error, context.DeadlineExceeded
	// Unreadable reports that the server began to answer but its answer
	// was no HTTP response the client reads: headers over
	// 64 KiB, or bytes that are not HTTP. Such an error
	// matches ErrDecode and is not retried: the same server sends the
	// same answer again.
	Unreadable bool
}

// Error names the request and the cause, without credentials; for a TLS
// failure that ErrTLS matches, it names the TLSError's cause and what to
// configure.
func (e *TransportError) Error() string {
	if te := e.tlsError(); te != nil {
		return fmt.Sprintf("flinkapi: %s %s: TLS with the JobManager failed: %v", e.Method, e.Path, te)
	}
	if e.Unreadable {
		return fmt.Sprintf("flinkapi: %s %s: the answer is not an HTTP response the client reads: %v", e.Method, e.Path, e.Err)
	}
	return fmt.Sprintf("flinkapi: %s %s: no answer from the JobManager: %v", e.Method, e.Path, e.Err)
}

// tlsError is the TLS failure that a retry does not change behind e: the
// *TLSError the client put in Err, or one made up from Err for a
// TransportError built elsewhere; nil for any other failure.
func (e *TransportError) tlsError() *TLSError {
	var te *TLSError
	if errors.As(e.Err, &te) {
		return te
	}
	if c := classifyTLS(e.Err, nil, false); c != "" {
		return &TLSError{Cause: c, Err: e.Err}
	}
	return nil
}

// Unwrap returns the underlying network error.
func (e *TransportError) Unwrap() error { return e.Err }

// Is makes a timed-out request match ErrTimeout, and a TLS failure that a
// retry does not change match ErrTLS and ErrMisconfigured.
func (e *TransportError) Is(target error) bool {
	switch target {
	case ErrTimeout:
		var ne net.Error
		return errors.Is(e.Err, context.DeadlineExceeded) || errors.As(e.Err, &ne) && ne.Timeout()
	case ErrTLS, ErrMisconfigured:
		return e.tlsError() != nil
	case ErrDecode:
		return e.Unreadable
	}
	return false
}

// DecodeError is a successful (2xx) answer that the client could not read;
// it matches ErrDecode. A body cut short by a closed connection is a
// *TransportError instead, which is retried.
type DecodeError struct {
	Method string // HTTP method of the request
	Path   string // request path, without host, query or credentials
	Err    error  // the cause: a *json.SyntaxError, *json.UnmarshalTypeError, or a missing or malformed value
}

// Error returns "flinkapi: METHOD PATH: decoding answer: cause".
func (e *DecodeError) Error() string {
	return fmt.Sprintf("flinkapi: %s %s: decoding answer: %v", e.Method, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is makes a DecodeError match ErrDecode.
func (e *DecodeError) Is(target error) bool { return target == ErrDecode }

// IsJobNotFound reports whether err is Flink's answer that it does not know
// the job: 404 on a job route ("Job <id> not found", "Job could not be
// found."), that is neither an unknown route nor an unknown trigger id, or
// the 500 that GET /jobs/:jobid/status answers with "Could not find Flink
// job (<id>)". After a JobManager restart without high availability every
// job answers this way. A proxy's own 404 page is not taken for it.
func IsJobNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Path, "/jobs/") {
		return false
	}
	switch ae.StatusCode {
	case http.StatusNotFound:
		if isTriggerNotFound(ae) || isUnknownRoute(ae) {
			return false
		}
		for _, m := range ae.Errors {
			if containsFold(m, "job") && (containsFold(m, "not found") || containsFold(m, "could not be found")) ||
				containsFold(m, "could not find flink job") {
				return true
			}
		}
	case http.StatusInternalServerError:
		for _, m := range ae.Errors {
			if containsFold(m, "could not find flink job") {
				return true
			}
		}
	}
	return false
}

// IsDuplicateJob reports whether err is Flink's refusal of a jar run whose
// job id is already in use. Flink answers 400 "Could not execute
// application." as for any failing program; only the innermost cause says
// "Job has already been submitted." (1.x) or "Application has already been
// submitted." (2.x). The job with that id exists: do not submit again.
func IsDuplicateJob(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		return false
	}
	for c := range CauseChain(ae.StackTrace) {
		if containsFold(c.Line, "has already been submitted") || containsFold(c.Class, "duplicatejobsubmission") ||
			containsFold(c.Class, "duplicateapplicationsubmission") {
			return true
		}
	}
	return false
}

// containsFold reports whether substr (lower case ASCII) is in s, ignoring
// ASCII case, without allocating.
func containsFold(s, substr string) bool {
	n := len(substr)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != substr[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// IsTriggerNotFound reports whether err is Flink's 404 for an unknown trigger
// id of an asynchronous operation: the result expired (after
// rest.async.store-duration) or the JobManager restarted and forgot it. The
// operation may still have completed; look it up in the checkpoint history.
func IsTriggerNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound && isTriggerNotFound(ae)
}

func isTriggerNotFound(ae *APIError) bool {
	for _, m := range ae.Errors {
		// 1.15+: "There is no savepoint operation with triggerId=... for job
		// ..."; before: "Operation not found under key: ...".
		if containsFold(m, "operation not found under key") || containsFold(m, "operation with triggerid") {
			return true
		}
	}
	return false
}

// isUnknownRoute recognises Flink's answers for a route it does not serve:
// "Not found: /uri" for most methods, and for GET the web UI's file handler's
// "Unable to load requested file /uri."
func isUnknownRoute(ae *APIError) bool {
	return len(ae.Errors) > 0 && (strings.HasPrefix(ae.Errors[0], "Not found:") ||
		strings.HasPrefix(ae.Errors[0], "Unable to load requested file"))
}

// IsTerminal reports whether err is Flink's 409 saying the job already
// reached another terminal state (cancelling a FAILED or FINISHED job on
// Flink 1.15 and later).
func IsTerminal(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
		return false
	}
	return strings.Contains(strings.ToLower(ae.Message()), "terminal state") || ae.Message() == ""
}

// IsUnknownRoute reports whether err is Flink's 404 for a route it does not
// serve, which is how an older cluster answers a newer endpoint.
func IsUnknownRoute(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound && isUnknownRoute(ae)
}

// IsRetryable reports whether err is transient: a transport failure
// (connection refused or reset, timeout) or an answer of 429, 502, 503 or
// 504 (the codes ErrUnavailable matches). An error that ErrMisconfigured
// matches (a certificate or TLS scheme failure, 401, 403, a redirect) is
// not, nor is a cancelled context. It says nothing about whether retrying
// the request is safe; the client retries only GETs and triggers that carry
// a client trigger id.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrMisconfigured) {
		return false
	}
	var te *TransportError
	if errors.As(err, &te) {
		return !te.Unreadable && !errors.Is(te.Err, context.Canceled)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return errors.Is(ae, ErrUnavailable)
	}
	return false
}

// newAPIError builds an *APIError from a status code and a body, which may
// be Flink's {"errors": [...]} or anything a proxy sends.
func newAPIError(method, path string, status int, body []byte) *APIError {
	e := &APIError{StatusCode: status, Method: method, Path: path}
	e.Errors, e.StackTrace = parseErrorBody(body)
	return e
}

// Bounds of what an error body puts into an APIError: a server may send
// megabytes, and the error's message ends up in logs and statuses.
const (
	maxErrorMessage  = 1024     // bytes of one message
	maxErrorMessages = 8        // messages; the rest are counted
	maxStackTrace    = 16 << 10 // bytes of the stack trace
)

// parseErrorBody extracts messages and a stack trace from an error body. It
// never fails: a body that is not Flink's error JSON becomes one message
// (truncated) so that a proxy's HTML page still says something. Each
// message, their number and the stack trace are bounded (maxErrorMessage,
// maxErrorMessages, maxStackTrace).
func parseErrorBody(body []byte) (msgs []string, trace string) {
	var eb struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &eb); err != nil || len(eb.Errors) == 0 {
		s := strings.TrimSpace(string(body))
		if s == "" || len(eb.Errors) == 0 && err == nil {
			return nil, ""
		}
		msg, tr := splitJavaError(s)
		return []string{truncate(msg, 512)}, truncate(tr, maxStackTrace)
	}
	more := 0
	for _, raw := range eb.Errors {
		msg, tr := splitJavaError(raw)
		if tr != "" && trace == "" {
			trace = truncate(tr, maxStackTrace)
		}
		switch {
		case msg == "":
		case len(msgs) == maxErrorMessages:
			more++
		default:
			msgs = append(msgs, truncate(msg, maxErrorMessage))
		}
	}
	if more > 0 {
		msgs = append(msgs, fmt.Sprintf("(%d more)", more))
	}
	return msgs, trace
}

const (
	serverSidePrefix = "<Exception on server side:"
	serverSideSuffix = "End of exception on server side>"
)

// splitJavaError splits a string from Flink, which may hold a whole Java
// stack trace, into a one-line message and the rest. The message is the
// first line without the exception class names in front of it
// ("org.apache.flink...RestHandlerException: Job x not found" gives
// "Job x not found"); a line that is only a class name is kept. Flink's
// "<Exception on server side: ... End of exception on server side>" wrapper
// is removed.
func splitJavaError(s string) (message, trace string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, serverSidePrefix) {
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, serverSidePrefix), serverSideSuffix))
	}
	first, rest, _ := strings.Cut(s, "\n")
	c := parseCauseLine(strings.TrimSpace(first))
	message = c.Message
	if message == "" {
		message = c.Class
	}
	return message, strings.TrimSpace(rest)
}

// IsJavaClassName reports whether s looks like a fully qualified Java class
// name: dot-separated identifiers, at least one dot, last part capitalised.
func IsJavaClassName(s string) bool {
	if s == "" || len(s) > 300 {
		return false
	}
	dots, start := 0, 0 // start: index of the current part's first byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if i == start {
				return false // empty part
			}
			dots++
			start = i + 1
		case c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9':
			if i == start {
				return false
			}
		default:
			return false // also every byte of a non-ASCII character
		}
	}
	if dots == 0 || start == len(s) {
		return false
	}
	return 'A' <= s[start] && s[start] <= 'Z'
}

// IsUnsupportedByScheduler reports whether err is Flink's answer to the
// resource requirements endpoints (GET and PUT
// /jobs/:jobid/resource-requirements, 1.18+) on a job whose scheduler has
// none, the default and the adaptive batch scheduler: 500 with
// "java.lang.UnsupportedOperationException: The DefaultScheduler does not
// support changing the parallelism without a job restart." The job's
// parallelism changes only with a restart (an upgrade) there.
func IsUnsupportedByScheduler(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusInternalServerError {
		return false
	}
	for _, m := range append(ae.Errors[:len(ae.Errors):len(ae.Errors)], ae.StackTrace) {
		if containsFold(m, "unsupportedoperationexception") || containsFold(m, "does not support") {
			return true
		}
	}
	return false
}

// IsDispatcherJobNotFound reports whether err is the 500 that handlers
// asking the dispatcher about a job answer for a job it does not know:
// Flink's FlinkJobNotFoundException ("Could not find Flink job (<id>)")
// inside an internal server error, as the resource requirements and
// rescaling endpoints answer. IsJobNotFound recognises the same answer
// of the status call by its message.
func IsDispatcherJobNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusInternalServerError {
		return false
	}
	for _, m := range append(ae.Errors[:len(ae.Errors):len(ae.Errors)], ae.StackTrace) {
		if containsFold(m, "flinkjobnotfoundexception") {
			return true
		}
	}
	return false
}

// IsJarNotFound reports whether err is Flink's answer for a jar id it does
// not know (the jar was deleted, or the JobManager restarted and lost its
// upload directory): "Jar file <dir>/<id> does not exist" for a jar run or
// a jar plan, as a 400 or as the 500 whose trace carries it (the handler
// throws it inside a CompletionException), "File <id> does not exist in
// <dir>." (400) for a jar deletion, or a 404 naming the jar. Upload the jar
// again.
func IsJarNotFound(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Path, "/jars/") {
		return false
	}
	switch ae.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound:
		for _, m := range ae.Errors {
			if containsFold(m, "does not exist") {
				return true
			}
		}
	case http.StatusInternalServerError:
		for _, m := range ae.Errors {
			if strings.HasPrefix(m, "Jar file ") && containsFold(m, "does not exist") {
				return true
			}
		}
	}
	return false
}

// TasksNotRunning reports whether the operation failed because not all of
// the job's tasks were running (Flink's NOT_ALL_REQUIRED_TASKS_RUNNING:
// "Checkpoint triggering task ... is not being executed at the moment.
// Aborting checkpoint. Failure reason: Not all required tasks are
// currently running."): a job is RUNNING before all its tasks are, and a
// savepoint triggered again once they run may succeed.
func (f *FailureCause) TasksNotRunning() bool {
	return f != nil && f.causedBy("not all required tasks are currently running")
}

// FilesNotFound reports whether the operation failed because the files it
// was about were not found: a savepoint disposal whose savepoint is gone
// (java.io.FileNotFoundException, "Cannot find checkpoint or savepoint
// file/directory").
func (f *FailureCause) FilesNotFound() bool {
	return f != nil && (f.causedBy("filenotfoundexception") || f.causedBy("cannot find checkpoint or savepoint"))
}

// causedBy reports whether the lower-case substr is in the class of f or
// in any line of its chain of causes.
func (f *FailureCause) causedBy(substr string) bool {
	if containsFold(f.Class, substr) {
		return true
	}
	for c := range CauseChain(f.StackTrace) {
		if containsFold(c.Line, substr) {
			return true
		}
	}
	return false
}

// IsProgramError reports whether err is Flink's answer for a jar whose
// program failed while Flink built its job, on a jar run or a jar plan:
// the program's main method threw (a wrong argument, for instance), or the
// jar has no usable entry class. Flink wraps such a failure in a
// ProgramInvocationException, answered as 400 "Could not execute
// application." by the jar run and as 500 with the trace by the jar plan;
// RootCause of APIError.StackTrace gives the program's own message. A jar
// run refused because the job id is in use (IsDuplicateJob) is not a
// program error, nor is a jar the cluster lacks (IsJarNotFound).
func IsProgramError(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Path, "/jars/") || IsDuplicateJob(err) {
		return false
	}
	if ae.StatusCode != http.StatusBadRequest && ae.StatusCode != http.StatusInternalServerError {
		return false
	}
	for c := range CauseChain(ae.StackTrace) {
		if containsFold(c.Line, "programinvocationexception") {
			return true
		}
	}
	for _, m := range ae.Errors {
		if containsFold(m, "programinvocationexception") || containsFold(m, "the main method caused an error") {
			return true
		}
	}
	return false
}
