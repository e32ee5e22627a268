// Package flinkapi is a typed client for the REST API of Apache Flink's
// JobManager, for Flink 1.15 to 2.x.
//
// It is built for programs that manage Flink jobs (Kubernetes operators,
// streaming runtimes, command-line tools) and gets right what hand-rolled
// REST calls get wrong: every call takes a context, has a timeout and a
// bounded answer size; errors are typed and tell Flink's answers apart from
// network failures; retries happen only where they are safe; and the client
// never sends a request field the cluster's Flink version does not know.
//
//	c, err := flinkapi.NewClient("http://localhost:8081")
//	if err != nil { ... }
//	op, err := c.TriggerSavepoint(ctx, jobID, flinkapi.SavepointRequest{})
//	if err != nil { ... }
//	res, err := flinkapi.NewWaiter(c).Wait(ctx, op, 5*time.Minute)
//	if err != nil { ... }
//	fmt.Println("savepoint at", res.Location)
//
// # Calls
//
// Each method's comment names its endpoint and the first Flink version that
// has it. Cluster: Config, Version, Overview, TaskManagers, ShutdownCluster.
// Jobs: ListJobs, JobsOverview, Job, JobStatus, JobConfig, JobExceptions,
// CancelJob, ResourceRequirements, SetResourceRequirements, JobMetrics,
// JobRestarts.
// Checkpoints: Checkpoints, CheckpointConfig, CheckpointDetails,
// TriggerCheckpoint. Savepoints: TriggerSavepoint, StopWithSavepoint,
// DisposeSavepoint. Asynchronous results: OperationStatus and Waiter.
// Jars: UploadJar, UploadJarReader, ListJars, RunJar, DeleteJar.
// Applications (Flink 2.3+): Applications, Application, CancelApplication,
// RunJarApplication (an asynchronous jar run: it answers with the
// application's id before the program submits its job).
// Rescale history (Flink 2.3+, the adaptive scheduler with
// web.adaptive-scheduler.rescale-history.size above 0): RescaleHistory,
// RescaleDetails (a rescale's vertices before and after, and its
// Downtime), to confirm an in-place rescale.
//
// # TLS
//
// A JobManager with REST SSL (security.ssl.rest.enabled) has an https://
// base URL. WithCAFile trusts its CA (the certificate in the cluster's
// rest.ssl.truststore) and WithClientCertificateFiles presents the client
// certificate it asks for with security.ssl.rest.authentication-enabled;
// both read their PEM files again at each new connection, and the client
// opens a new one after a file changed, so a certificate rotated on disk
// (or in a mounted Kubernetes Secret) is used without a new client.
// WithTLSConfig gives a whole tls.Config instead, or beside them. Flink's
// default security.ssl.algorithms (TLS_RSA_WITH_AES_128_CBC_SHA) is a
// cipher suite Go does not offer: the cluster must list ECDHE suites.
//
// # Versions
//
// The client learns the cluster's version from GET /config once and caches
// it (Version, RefreshVersion; WithFlinkVersion fixes it). Flink up to 1.19
// rejects unknown request fields with 400, so fields are sent only to
// versions that know them: trigger ids and savepoint format types from
// 1.15, "restoreMode" from 1.15 and "claimMode" from 1.20, jar-run
// configuration from 1.17; the application and rescale history endpoints
// exist from 2.3. Asking for a feature the cluster lacks fails with
// an error matching ErrUnsupported that names the feature and both
// versions, before any request is sent.
//
// # Errors
//
// Answers of 400 and above are *APIError values, with Flink's message split
// from its Java stack trace. They match sentinels through errors.Is
// (ErrNotFound, ErrConflict, ErrUnavailable, ErrBadRequest, ErrTimeout,
// ErrUnauthorized, ErrForbidden). IsJobNotFound, IsApplicationNotFound,
// IsTriggerNotFound, IsTerminal, IsUnknownRoute, IsRescaleNotFound and
// IsRescaleHistoryUnavailable tell apart Flink's different 404 and 409
// answers. Failures to get any answer are *TransportError values. A 2xx
// answer the client cannot read (not the JSON Flink sends, or without a
// value the call needs) is a *DecodeError matching ErrDecode, which names
// the call and unwraps to the cause. Arguments are validated first: a
// malformed job, trigger or jar id, or a parallelism or parallelism bound
// that is negative or above Flink's limit of 32768, fails with
// ErrInvalidInput and nothing is sent, so no input can change the request
// path.
//
// An error that means the client is set up wrong for the cluster matches
// ErrMisconfigured: a retry will not help. These are answers 401
// (ErrUnauthorized) and 403 (ErrForbidden); any redirect (ErrRedirect): the
// client never follows one, since a JobManager never redirects its REST
// API, and APIError.Location says where it pointed (often a proxy's login
// page); and TLS failures (ErrTLS): a server certificate of an authority
// the client does not trust, for another host name or expired, a client
// certificate the server refuses, an https:// base URL for a plain-HTTP
// server, or an http:// one for a TLS server that answers so (a TLS server
// that just closes the connection cannot be told from a network failure).
// A TLS failure of the handshake is a *TLSError inside the request's
// *TransportError, whose Cause names it in a closed set
// (TLSUnknownAuthority, TLSExpired, TLSHostnameMismatch,
// TLSInvalidCertificate, TLSClientCertificateRequired,
// TLSClientCertificateRejected, TLSHandshakeRefused, TLSSchemeMismatch,
// TLSLocalFiles). Their messages name what to configure: WithTLSConfig,
// WithCAFile, WithClientCertificateFiles, WithBasicAuth, WithBearerToken,
// or the base URL given to NewClient. A caller should stop
// on errors.Is(err, ErrMisconfigured) and report the error, not poll until
// its deadline.
//
// No error and no log line of the client contains credentials. A base URL
// with user info is refused without being repeated; the client's password,
// token and the user info of any URL are replaced by "xxxxx" in whatever a
// server or transport echoes (error bodies, Location headers, transport
// errors); the Authorization header is never logged.
//
// # Retries
//
// GETs, and savepoint, stop and checkpoint triggers that carry a client
// trigger id, are retried after connection failures and answers of 429, 502,
// 503 and 504, with capped exponential backoff and jitter (RetryPolicy),
// within the context's deadline and the policy's MaxElapsed (30 s by
// default): that bounds the whole call, every attempt's body read included,
// so a server that trickles its answer is cut off with ErrTimeout. A
// retried trigger sends the same trigger id, which Flink 1.15+
// deduplicates. Jar uploads, jar runs, cancels and disposals are never
// retried: their second attempt is not harmless. Misconfigurations and
// answers the client cannot read (ErrDecode) are not retried either;
// IsRetryable says false for both.
//
// # Asynchronous operations
//
// Savepoints, stops, checkpoints and disposals return an Operation. Its
// result (OperationResult) is IN_PROGRESS until it is COMPLETED with a
// location, a checkpoint id or a failure cause. A Waiter polls with growing
// delays between MinDelay and MaxDelay until the result arrives or maxWait
// passes; IN_PROGRESS and transient errors mean "poll again". Flink keeps
// results for rest.async.store-duration (5 minutes by default) and forgets
// them when the JobManager restarts: then IsTriggerNotFound is true and the
// savepoint must be looked up in the checkpoint history (package savepoint).
//
// # Time
//
// Flink reports instants and durations in milliseconds. The client converts
// them once, with FromMillis and DurationFromMillis, into time.Time and
// time.Duration; the types of this package carry only those.
package flinkapi
