package flinkfixture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ReadCounts reads the test job's <dir>/<key>.count files into a map from
// key to count. A missing folder gives an empty map. Other files (such as
// the job's temporary files) are ignored.
func ReadCounts(dir string) (map[string]int64, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int64, len(entries))
	for _, e := range entries {
		name := e.Name()
		key, ok := strings.CutSuffix(name, ".count")
		if !ok || key == "" || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("flinkfixture: %s: %w", filepath.Join(dir, name), err)
		}
		counts[key] = n
	}
	return counts, nil
}

// WaitCounts reads the test job's counts in dir (ReadCounts) every 200 ms
// until at least keys of them satisfy ok, and returns them. It fails t
// when timeout passes or ctx ends first.
func WaitCounts(t testing.TB, ctx context.Context, dir string, keys int, timeout time.Duration, ok func(key string, n int64) bool) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		counts, err := ReadCounts(dir)
		good := 0
		for k, n := range counts {
			if ok(k, n) {
				good++
			}
		}
		if err == nil && good >= keys {
			return counts
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("counts in %s: %v, %v", dir, counts, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// LocationExists reports whether a savepoint or checkpoint location of a
// cluster of the tests exists: a file: URI or an absolute path on this machine that
// exists on disk, or an s3:// URI in an object store of this process or of
// the shared cluster (Config.ObjectStore) with a _metadata object under
// it (or that names an object itself). An S3 location in a store that
// cannot be reached does not exist.
func LocationExists(location string) bool {
	if location == "" {
		return false
	}
	if bucket, key, ok := splitS3(location); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, s := range storesFor(bucket) {
			for _, k := range []string{key + "/_metadata", key} {
				if k == "" || k == "/_metadata" {
					continue
				}
				if ok, err := s.Exists(ctx, k); err == nil && ok {
					return true
				}
			}
		}
		return false
	}
	p, err := localPath(location)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}
