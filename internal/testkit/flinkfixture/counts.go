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
// cluster on this machine (a file: URI or a path) exists on disk.
func LocationExists(location string) bool {
	if location == "" {
		return false
	}
	_, err := os.Stat(strings.TrimPrefix(location, "file:"))
	return err == nil
}
