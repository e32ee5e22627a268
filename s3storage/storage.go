package s3storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/flinkkit/flinkkit/lifecycle"
)

// API is the part of the S3 client (*s3.Client) that Storage uses.
type API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// Storage is a lifecycle.Storage (and lifecycle.StorageEntries) of an
// S3-compatible object store: the paths it takes are s3://, s3a:// and
// s3p:// URIs, s3://<bucket>/<key>, as Flink writes them. A "directory"
// is a prefix of keys: List reads the prefix dir + "/" with "/" as the
// delimiter, and Delete removes every object under path + "/" and the
// object path itself.
//
// It refuses (an error matching lifecycle.ErrStoragePath) a URI of
// another scheme, one without a bucket, a bucket's root, a key with an
// empty, "." or ".." element, and a bucket outside Options.Buckets when
// that is set.
//
// Its methods are safe for concurrent use.
type Storage struct {
	client  API
	buckets []string
}

// Compile-time checks.
var (
	_ lifecycle.Storage        = (*Storage)(nil)
	_ lifecycle.StorageEntries = (*Storage)(nil)
)

// FromClient returns a Storage over an S3 client of the caller's
// (usually an *s3.Client, configured as they need). When buckets is not
// empty, paths in other buckets are refused.
func FromClient(client API, buckets ...string) *Storage {
	return &Storage{client: client, buckets: slices.Clone(buckets)}
}

// maxDeleteBatch is the most keys one DeleteObjects request takes.
const maxDeleteBatch = 1000

// location is a path split into the parts S3 needs.
type location struct {
	bucket string
	key    string // without leading or trailing "/"; never empty
	base   string // the path as given, without trailing "/"
}

// schemes are the URI schemes of Flink's S3 file systems: s3 (both
// plugins), s3a (flink-s3-fs-hadoop) and s3p (flink-s3-fs-presto).
var schemes = []string{"s3", "s3a", "s3p"}

// parse splits p, refusing what Storage does not touch.
func (s *Storage) parse(p string) (location, error) {
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok || !slices.Contains(schemes, strings.ToLower(scheme)) {
		return location{}, fmt.Errorf("%w: %q is not an s3://, s3a:// or s3p:// URI", lifecycle.ErrStoragePath, p)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return location{}, fmt.Errorf("%w: %q names no bucket", lifecycle.ErrStoragePath, p)
	}
	if i := strings.IndexFunc(bucket, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}); i >= 0 {
		return location{}, fmt.Errorf("%w: %q: the bucket name %q has the character %q", lifecycle.ErrStoragePath, p, bucket, bucket[i])
	}
	if len(s.buckets) > 0 && !slices.Contains(s.buckets, bucket) {
		return location{}, fmt.Errorf("%w: %q: bucket %q is not one of %q", lifecycle.ErrStoragePath, p, bucket, s.buckets)
	}
	key = strings.TrimRight(key, "/")
	if key == "" {
		return location{}, fmt.Errorf("%w: %q is the root of bucket %q", lifecycle.ErrStoragePath, p, bucket)
	}
	for _, elem := range strings.Split(key, "/") {
		switch elem {
		case "":
			return location{}, fmt.Errorf("%w: %q has an empty path element (\"//\")", lifecycle.ErrStoragePath, p)
		case ".", "..":
			return location{}, fmt.Errorf("%w: %q contains %q", lifecycle.ErrStoragePath, p, elem)
		}
	}
	return location{bucket: bucket, key: key, base: strings.TrimRight(p, "/")}, nil
}

// List returns the direct entries of dir, sorted, as URIs in dir's form:
// the common prefixes and the objects under dir + "/" (a name that is
// both, a prefix and an object, once). A dir without objects under it
// has none: no error.
func (s *Storage) List(ctx context.Context, dir string) ([]string, error) {
	entries, err := s.Entries(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Path)
	}
	return slices.Compact(out), nil
}

// Entries returns the direct entries of dir, as List does, with their
// sizes and modification times: a common prefix is a directory (no size,
// no time), an object a file with its Size and LastModified. A name that
// is both is listed twice, the directory first. An empty object named
// dir + "/" (the marker some tools write for a directory) is not an
// entry of dir.
func (s *Storage) Entries(ctx context.Context, dir string) ([]lifecycle.StorageEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	loc, err := s.parse(dir)
	if err != nil {
		return nil, err
	}
	prefix := loc.key + "/"
	in := &s3.ListObjectsV2Input{Bucket: aws.String(loc.bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/")}
	var out []lifecycle.StorageEntry
	for page := s3.NewListObjectsV2Paginator(s.client, in); page.HasMorePages(); {
		res, err := page.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3storage: list %s: %w", dir, missingBucket(err))
		}
		for _, cp := range res.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")
			if name != "" {
				out = append(out, lifecycle.StorageEntry{Path: loc.base + "/" + name, Dir: true})
			}
		}
		for _, o := range res.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if name == "" || strings.Contains(name, "/") {
				continue
			}
			out = append(out, lifecycle.StorageEntry{Path: loc.base + "/" + name, Size: aws.ToInt64(o.Size),
				Modified: aws.ToTime(o.LastModified)})
		}
	}
	slices.SortFunc(out, func(a, b lifecycle.StorageEntry) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		switch {
		case a.Dir == b.Dir:
			return 0
		case a.Dir:
			return -1
		default:
			return 1
		}
	})
	return out, nil
}

// Delete removes every object under path + "/" and the object path
// itself: one listing of the prefix (1,000 keys a page) and
// DeleteObjects requests of up to 1,000 keys each, page after page. Then
// it deletes the directory keys of path and of every directory under it
// (path + "/", path + "/chk-1/", ..., the deepest first): stores with
// folders (SeaweedFS) would list an emptied folder as a common prefix
// still, and a store without them finds no such key, which is no error.
// A path with no objects is no error. Throttled requests are retried by
// the client (the SDK's retryer); a key the store failed to delete is an
// error naming it.
func (s *Storage) Delete(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	loc, err := s.parse(path)
	if err != nil {
		return err
	}
	var batch []types.ObjectIdentifier
	add := func(key string) error {
		batch = append(batch, types.ObjectIdentifier{Key: aws.String(key)})
		if len(batch) < maxDeleteBatch {
			return nil
		}
		return s.flush(ctx, path, loc.bucket, &batch)
	}
	prefix := loc.key + "/"
	// dirs are the directory keys under path (ending in "/"), path + "/"
	// included: those of the listed keys' folders, and the listed keys
	// ending in "/" (folder markers). They are deleted after the objects.
	dirs := map[string]struct{}{prefix: {}}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(loc.bucket), Prefix: aws.String(prefix)}
	for page := s3.NewListObjectsV2Paginator(s.client, in); page.HasMorePages(); {
		res, err := page.NextPage(ctx)
		if err != nil {
			err = missingBucket(err)
			if errors.Is(err, errNoBucket) {
				return nil // nothing to delete
			}
			return fmt.Errorf("s3storage: delete %s: list: %w", path, err)
		}
		for _, o := range res.Contents {
			key := aws.ToString(o.Key)
			for i := strings.LastIndexByte(key, '/'); i >= len(prefix); i = strings.LastIndexByte(key[:i], '/') {
				dirs[key[:i+1]] = struct{}{}
			}
			if strings.HasSuffix(key, "/") {
				continue // a folder marker, in dirs
			}
			if err := add(key); err != nil {
				return err
			}
		}
	}
	rest := make([]string, 0, len(dirs))
	for d := range dirs {
		rest = append(rest, d)
	}
	// The deepest first; then in key order, for requests that do not
	// depend on map order.
	slices.SortFunc(rest, func(a, b string) int {
		if c := strings.Count(b, "/") - strings.Count(a, "/"); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, d := range append(rest, loc.key) {
		if err := add(d); err != nil {
			return err
		}
	}
	return s.flush(ctx, path, loc.bucket, &batch)
}

// flush deletes the keys of batch, if any, and empties it.
func (s *Storage) flush(ctx context.Context, path, bucket string, batch *[]types.ObjectIdentifier) error {
	if len(*batch) == 0 {
		return nil
	}
	err := s.deleteBatch(ctx, bucket, *batch)
	*batch = (*batch)[:0]
	if err != nil {
		return fmt.Errorf("s3storage: delete %s: %w", path, err)
	}
	return nil
}

// deleteBatch deletes keys (at most maxDeleteBatch) in one request, in
// quiet mode: the answer names the keys that failed only.
func (s *Storage) deleteBatch(ctx context.Context, bucket string, keys []types.ObjectIdentifier) error {
	res, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(bucket),
		Delete: &types.Delete{Objects: keys, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return err
	}
	if len(res.Errors) == 0 {
		return nil
	}
	first := res.Errors[0]
	return fmt.Errorf("%d of %d keys not deleted, first %q: %s: %s", len(res.Errors), len(keys),
		aws.ToString(first.Key), aws.ToString(first.Code), aws.ToString(first.Message))
}

// errNoBucket is matched by the error of a listing of a bucket that does
// not exist.
var errNoBucket = errors.New("no such bucket")

// missingBucket marks the error of a request to a bucket that does not
// exist with errNoBucket, keeping the SDK's error in the chain.
func missingBucket(err error) error {
	var nb *types.NoSuchBucket
	if errors.As(err, &nb) {
		return fmt.Errorf("%w: %w", errNoBucket, err)
	}
	return err
}
