package flinkfixture

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
