// Package storage is the lifecycle.Storage of the operator: the file
// system Flink's checkpoints and savepoints lie on, read and written
// for the storage audits of the FlinkJobs and for the disposals of
// application clusters whose JobManager is gone.
//
// A Storage routes each path by its scheme: s3://, s3a:// and s3p://
// to an S3-compatible object store configured as Flink's S3 file
// system is (New's flinkConfig), file: URIs and absolute paths to the
// operator's own file system (where the volume that holds Flink's state
// is mounted at the path Flink's pods use). A path of a scheme it was
// not given is refused with an error matching lifecycle.ErrStoragePath.
package storage

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/s3storage"
)

// Storage is a lifecycle.Storage (and lifecycle.StorageEntries) over
// the object store and the local file system New was given.
type Storage struct {
	s3    *s3storage.Storage // nil: no object store
	local bool               // file: URIs and absolute paths
}

// Compile-time checks.
var (
	_ lifecycle.Storage        = (*Storage)(nil)
	_ lifecycle.StorageEntries = (*Storage)(nil)
)

// New returns the Storage of the operator's flags: flinkConfig, if not
// empty, is a Flink configuration file (config.yaml, nested or flat,
// or the older flink-conf.yaml) whose s3.* options configure the object
// store as they configure Flink's S3 file system (s3storage.FlinkOptions:
// endpoint, region, path style, credentials; what it leaves out comes
// from the AWS SDK's environment); local turns on the local file
// system. With neither, New returns nil: no Storage.
func New(ctx context.Context, flinkConfig string, local bool) (*Storage, error) {
	s := &Storage{local: local}
	if flinkConfig != "" {
		conf, err := ReadFlinkConfig(flinkConfig)
		if err != nil {
			return nil, err
		}
		if s.s3, err = s3storage.NewFromFlinkConfig(ctx, conf); err != nil {
			return nil, fmt.Errorf("%s: %w", flinkConfig, err)
		}
	}
	if s.s3 == nil && !s.local {
		return nil, nil
	}
	return s, nil
}

// ReadFlinkConfig reads a Flink configuration file into its entries,
// flattened to their full keys (s3: {endpoint: x} is s3.endpoint: x).
// A file that is not YAML, or whose top level is not a mapping, is an
// error naming the file.
func ReadFlinkConfig(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if len(bytes.TrimSpace(b)) > 0 {
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: not a Flink configuration file: %w", path, err)
		}
	}
	conf := map[string]string{}
	flatten("", doc, conf)
	return conf, nil
}

// flatten adds the scalar entries of m under prefix to conf.
func flatten(prefix string, m map[string]any, conf map[string]string) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch v := v.(type) {
		case map[string]any:
			flatten(key, v, conf)
		case nil:
			conf[key] = ""
		case string:
			conf[key] = v
		case bool:
			conf[key] = strconv.FormatBool(v)
		case float64:
			conf[key] = strconv.FormatFloat(v, 'f', -1, 64)
		case []any:
			parts := make([]string, 0, len(v))
			for _, e := range v {
				parts = append(parts, fmt.Sprint(e))
			}
			conf[key] = strings.Join(parts, ";")
		default:
			conf[key] = fmt.Sprint(v)
		}
	}
}

// objectSchemes are the schemes of the object store's paths.
var objectSchemes = []string{"s3", "s3a", "s3p"}

// route returns the Storage of path, or an error matching
// lifecycle.ErrStoragePath.
func (s *Storage) route(path string) (interface {
	lifecycle.Storage
	lifecycle.StorageEntries
}, error) {
	scheme := ""
	if u, err := url.Parse(path); err == nil {
		scheme = strings.ToLower(u.Scheme)
	}
	switch {
	case slices.Contains(objectSchemes, scheme) && s.s3 != nil:
		return s.s3, nil
	case (scheme == "file" || (scheme == "" && strings.HasPrefix(path, "/"))) && s.local:
		return lifecycle.LocalStorage{}, nil
	}
	return nil, fmt.Errorf("%w: %q: the operator's storage reads %s", lifecycle.ErrStoragePath, path, s.reads())
}

// reads says which paths s reads, for errors.
func (s *Storage) reads() string {
	switch {
	case s.s3 != nil && s.local:
		return "s3://, s3a://, s3p://, file: and absolute paths"
	case s.s3 != nil:
		return "s3://, s3a:// and s3p:// paths only (--storage-local is off)"
	default:
		return "file: and absolute paths only (--storage-flink-config is not set)"
	}
}

// List lists dir on its Storage.
func (s *Storage) List(ctx context.Context, dir string) ([]string, error) {
	r, err := s.route(dir)
	if err != nil {
		return nil, err
	}
	return r.List(ctx, dir)
}

// Entries lists dir with sizes and times on its Storage.
func (s *Storage) Entries(ctx context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	r, err := s.route(dir)
	if err != nil {
		return nil, err
	}
	return r.Entries(ctx, dir)
}

// Delete removes path on its Storage.
func (s *Storage) Delete(ctx context.Context, path string) error {
	r, err := s.route(path)
	if err != nil {
		return err
	}
	return r.Delete(ctx, path)
}
