package s3storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Options configure the S3 client of New.
type Options struct {
	// Endpoint is the URL of the S3 API, http:// or https://, for an
	// S3-compatible store (MinIO, SeaweedFS, Ceph, GCS's XML API, ...).
	// Empty: AWS S3's endpoint of Region.
	Endpoint string
	// Region is the region requests are signed for. Empty: the SDK's
	// (AWS_REGION, the shared config file), else "us-east-1" when
	// Endpoint is set (what S3-compatible stores accept); with neither
	// Endpoint nor a region New fails.
	Region string
	// PathStyle sends requests to <endpoint>/<bucket>/<key> rather than
	// to <bucket>.<endpoint>/<key>: what most S3-compatible stores need
	// (Flink's s3.path.style.access).
	PathStyle bool
	// AccessKey and SecretKey (and, for temporary credentials,
	// SessionToken) are static credentials. Empty: the SDK's default
	// chain (environment, shared files, web identity, container and
	// instance roles).
	AccessKey    string
	SecretKey    string
	SessionToken string
	// Buckets, when not empty, are the only buckets the Storage touches:
	// paths in other buckets are refused (lifecycle.ErrStoragePath).
	Buckets []string
	// HTTPClient sends the requests; nil: the SDK's default client
	// (with the CA bundle of the SDK's configuration, AWS_CA_BUNDLE).
	HTTPClient aws.HTTPClient
	// ClientOptions are applied last to the S3 client's options (retries,
	// logging, ...).
	ClientOptions []func(*s3.Options)
}

// New returns a Storage over an S3 client configured by o. It reads the
// SDK's shared configuration and environment for what o leaves out (the
// default credential chain, a region), but sends no request.
//
// Requests carry checksums only where the S3 API requires them
// (DeleteObjects), which S3-compatible stores accept; the SDK's standard
// retryer retries throttled and failed requests (3 attempts).
func New(ctx context.Context, o Options) (*Storage, error) {
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3storage: endpoint %q is not an http:// or https:// URL", o.Endpoint)
		}
	}
	if (o.AccessKey == "") != (o.SecretKey == "") {
		return nil, errors.New("s3storage: an access key needs its secret key and a secret key its access key")
	}
	if o.SessionToken != "" && o.AccessKey == "" {
		return nil, errors.New("s3storage: a session token needs an access key and a secret key")
	}
	for _, b := range o.Buckets {
		if b == "" || strings.Contains(b, "/") {
			return nil, fmt.Errorf("s3storage: %q in Buckets is not a bucket name", b)
		}
	}
	load := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if o.Region != "" {
		load = append(load, config.WithRegion(o.Region))
	}
	if o.AccessKey != "" {
		load = append(load, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, o.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("s3storage: the AWS SDK's configuration: %w", err)
	}
	if cfg.Region == "" {
		if o.Endpoint == "" {
			return nil, errors.New("s3storage: no region: set Options.Region (Flink: s3.endpoint.region) or AWS_REGION, or an endpoint")
		}
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		if o.HTTPClient != nil {
			so.HTTPClient = o.HTTPClient
		}
		for _, fn := range o.ClientOptions {
			fn(so)
		}
	})
	return FromClient(client, o.Buckets...), nil
}

// NewFromFlinkConfig is New with the Options that FlinkOptions reads
// from Flink's configuration.
func NewFromFlinkConfig(ctx context.Context, conf map[string]string) (*Storage, error) {
	o, err := FlinkOptions(conf)
	if err != nil {
		return nil, err
	}
	return New(ctx, o)
}

// flinkPrefixes are the prefixes under which Flink's S3 file system
// (flink-s3-fs-hadoop) takes Hadoop S3A's fs.s3a.* options: s3.x,
// s3a.x and fs.s3a.x all set fs.s3a.x.
var flinkPrefixes = []string{"s3.", "s3a.", "fs.s3a."}

// FlinkOptions reads the Options from Flink's configuration, the
// entries of its config.yaml (flink-conf.yaml) flattened to their full
// keys, as flink-s3-fs-hadoop reads them: every option under each of
// the prefixes s3., s3a. and fs.s3a. (s3.endpoint, s3a.endpoint and
// fs.s3a.endpoint are one option), spelt with Flink's hyphenated names
// or Hadoop's dotted ones. It reads:
//
//   - endpoint: Endpoint. Without a scheme (Hadoop's host[:port] form)
//     it is https://, or http:// with connection.ssl.enabled: false.
//   - endpoint.region (Hadoop S3A), or region (Flink's native S3 file
//     system): Region.
//   - path.style.access or path-style-access: PathStyle (true/false).
//   - access.key or access-key, secret.key or secret-key, and
//     session.token: static credentials.
//   - aws.credentials.provider: when set and it names neither
//     SimpleAWSCredentialsProvider nor TemporaryAWSCredentialsProvider
//     (web identity, instance profile, the default chain, ...), the
//     keys above are not used: credentials come from the SDK's default
//     chain, which reads the same sources.
//
// Other options are ignored. An option given under two names with two
// values, or a value that does not parse, is an error naming the keys.
func FlinkOptions(conf map[string]string) (Options, error) {
	var o Options
	var err error
	get := func(names ...string) string {
		if err != nil {
			return ""
		}
		var v string
		v, err = flinkOption(conf, names...)
		return v
	}
	getBool := func(def bool, names ...string) bool {
		v := get(names...)
		if err != nil || v == "" {
			return def
		}
		b, perr := strconv.ParseBool(strings.ToLower(v))
		if perr != nil {
			err = fmt.Errorf("s3storage: %s: %q is neither true nor false", flinkKey(conf, names...), v)
		}
		return b
	}
	endpoint := get("endpoint")
	ssl := getBool(true, "connection.ssl.enabled")
	o.Region = get("endpoint.region", "region")
	o.PathStyle = getBool(false, "path.style.access", "path-style-access")
	o.AccessKey = get("access.key", "access-key")
	o.SecretKey = get("secret.key", "secret-key")
	o.SessionToken = get("session.token")
	provider := get("aws.credentials.provider")
	if err != nil {
		return Options{}, err
	}
	if provider != "" && !strings.Contains(provider, "SimpleAWSCredentialsProvider") &&
		!strings.Contains(provider, "TemporaryAWSCredentialsProvider") {
		o.AccessKey, o.SecretKey, o.SessionToken = "", "", ""
	}
	if endpoint != "" {
		if !strings.Contains(endpoint, "://") {
			if ssl {
				endpoint = "https://" + endpoint
			} else {
				endpoint = "http://" + endpoint
			}
		}
		u, perr := url.Parse(endpoint)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Options{}, fmt.Errorf("s3storage: %s: %q is not an http(s) URL or a host[:port]",
				flinkKey(conf, "endpoint"), endpoint)
		}
		o.Endpoint = endpoint
	}
	switch {
	case o.AccessKey != "" && o.SecretKey == "":
		return Options{}, fmt.Errorf("s3storage: %s is set and s3.secret-key is not: static credentials need both",
			flinkKey(conf, "access.key", "access-key"))
	case o.AccessKey == "" && o.SecretKey != "":
		return Options{}, fmt.Errorf("s3storage: %s is set and s3.access-key is not: static credentials need both",
			flinkKey(conf, "secret.key", "secret-key"))
	}
	if o.SessionToken != "" && o.AccessKey == "" {
		return Options{}, fmt.Errorf("s3storage: %s is set without s3.access-key and s3.secret-key", flinkKey(conf, "session.token"))
	}
	return o, nil
}

// flinkOption is the value of the option with one of the suffixes names
// under one of flinkPrefixes, trimmed: "" when none is set, an error when
// two are set to different values.
func flinkOption(conf map[string]string, names ...string) (string, error) {
	var key, value string
	for _, k := range flinkKeys(names...) {
		v, ok := conf[k]
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if key != "" && v != value {
			return "", fmt.Errorf("s3storage: %s=%q and %s=%q set one option to two values", key, value, k, v)
		}
		key, value = k, v
	}
	return value, nil
}

// flinkKey is the key of conf that sets the option names, or the first
// of the keys it may be set by.
func flinkKey(conf map[string]string, names ...string) string {
	keys := flinkKeys(names...)
	for _, k := range keys {
		if _, ok := conf[k]; ok {
			return k
		}
	}
	return keys[0]
}

// flinkKeys are the keys that set the option names, in order: every
// prefix for the first name, then for the next.
func flinkKeys(names ...string) []string {
	var keys []string
	for _, n := range names {
		for _, p := range flinkPrefixes {
			if k := p + n; !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}
