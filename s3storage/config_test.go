package s3storage

import (
	"context"
	"strings"
	"testing"
)

func TestFlinkOptions(t *testing.T) {
	tests := []struct {
		name string
		conf map[string]string
		want Options
	}{
		{"nothing set", map[string]string{"state.checkpoints.dir": "s3://b/ckpt"}, Options{}},
		{"Flink's names", map[string]string{
			"s3.endpoint": "http://minio:9000", "s3.path.style.access": "true",
			"s3.access-key": "AK", "s3.secret-key": "SK", "s3.endpoint.region": "eu-west-1",
		}, Options{Endpoint: "http://minio:9000", PathStyle: true, AccessKey: "AK", SecretKey: "SK", Region: "eu-west-1"}},
		{"Hadoop's names", map[string]string{
			"fs.s3a.endpoint": "https://s3.example.com", "fs.s3a.path.style.access": "TRUE",
			"fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.session.token": "TOK",
			"fs.s3a.endpoint.region": "us-west-2",
		}, Options{Endpoint: "https://s3.example.com", PathStyle: true, AccessKey: "AK", SecretKey: "SK", SessionToken: "TOK", Region: "us-west-2"}},
		{"s3a. prefix, hyphens, s3.region", map[string]string{
			"s3a.endpoint": " http://ceph:7480 ", "s3a.path-style-access": "false", "s3.region": "ap-south-1",
		}, Options{Endpoint: "http://ceph:7480", Region: "ap-south-1"}},
		{"host without scheme: https", map[string]string{"s3.endpoint": "s3.eu-central-1.amazonaws.com"},
			Options{Endpoint: "https://s3.eu-central-1.amazonaws.com"}},
		{"host without scheme, no SSL: http", map[string]string{"s3.endpoint": "127.0.0.1:8333", "s3.connection.ssl.enabled": "false"},
			Options{Endpoint: "http://127.0.0.1:8333"}},
		{"same value under two names", map[string]string{"s3.access-key": "AK", "fs.s3a.access.key": "AK", "s3.secret-key": "SK"},
			Options{AccessKey: "AK", SecretKey: "SK"}},
		{"a provider of static keys", map[string]string{"s3.access-key": "AK", "s3.secret-key": "SK",
			"s3.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"},
			Options{AccessKey: "AK", SecretKey: "SK"}},
		{"another provider: the default chain", map[string]string{"s3.access-key": "AK", "s3.secret-key": "SK",
			"fs.s3a.aws.credentials.provider": "com.amazonaws.auth.WebIdentityTokenCredentialsProvider"},
			Options{}},
	}
	for _, tt := range tests {
		got, err := FlinkOptions(tt.conf)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got.Endpoint != tt.want.Endpoint || got.Region != tt.want.Region || got.PathStyle != tt.want.PathStyle ||
			got.AccessKey != tt.want.AccessKey || got.SecretKey != tt.want.SecretKey || got.SessionToken != tt.want.SessionToken {
			t.Errorf("%s: FlinkOptions = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestFlinkOptionsErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		conf map[string]string
		says []string
	}{
		{map[string]string{"s3.path.style.access": "yes please"}, []string{"s3.path.style.access", "yes please"}},
		{map[string]string{"fs.s3a.connection.ssl.enabled": "maybe"}, []string{"fs.s3a.connection.ssl.enabled"}},
		{map[string]string{"s3.endpoint": "ftp://host"}, []string{"s3.endpoint", "ftp://host"}},
		{map[string]string{"s3a.endpoint": "http://"}, []string{"s3a.endpoint"}},
		{map[string]string{"s3.endpoint": "http://a", "fs.s3a.endpoint": "http://b"}, []string{"s3.endpoint", "fs.s3a.endpoint", "two values"}},
		{map[string]string{"s3.path.style.access": "true", "s3.path-style-access": "false"}, []string{"s3.path.style.access", "s3.path-style-access"}},
		{map[string]string{"s3.access-key": "AK"}, []string{"s3.access-key", "s3.secret-key"}},
		{map[string]string{"fs.s3a.secret.key": "SK"}, []string{"fs.s3a.secret.key", "s3.access-key"}},
		{map[string]string{"s3.session.token": "T"}, []string{"s3.session.token"}},
	}
	for _, tt := range tests {
		_, err := FlinkOptions(tt.conf)
		if err == nil {
			t.Errorf("FlinkOptions(%v): no error", tt.conf)
			continue
		}
		for _, s := range tt.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("FlinkOptions(%v) = %v, want it to name %q", tt.conf, err, s)
			}
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		o    Options
		says string
	}{
		{Options{Endpoint: "minio:9000"}, `endpoint "minio:9000"`},
		{Options{Endpoint: "http://"}, "not an http:// or https:// URL"},
		{Options{Endpoint: "http://minio", AccessKey: "AK"}, "secret key"},
		{Options{Endpoint: "http://minio", SecretKey: "SK"}, "access key"},
		{Options{Endpoint: "http://minio", SessionToken: "T"}, "session token"},
		{Options{Endpoint: "http://minio", Buckets: []string{"a/b"}}, `"a/b" in Buckets`},
		{Options{}, "no region"},
	}
	for _, tt := range tests {
		_, err := New(ctx, tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tt.o, err, tt.says)
		}
	}
	// An endpoint and no region anywhere: us-east-1, what S3-compatible
	// stores take; the default credential chain finds nothing yet sends
	// nothing.
	if _, err := New(ctx, Options{Endpoint: "http://minio:9000"}); err != nil {
		t.Errorf("New with an endpoint only: %v", err)
	}
	if _, err := New(ctx, Options{Region: "eu-west-1"}); err != nil {
		t.Errorf("New with a region only: %v", err)
	}
}
