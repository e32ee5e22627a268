package flinkfixture_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

// ReadCounts reads what the test job wrote: one <key>.count file per key.
// Files the job is still writing (dot files) and other files are skipped.
func ExampleReadCounts() {
	dir, _ := os.MkdirTemp("", "counts")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "key-0.count"), []byte("41\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "key-1.count"), []byte("40\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, ".key-2.count.tmp"), []byte("39"), 0o644)
	counts, err := flinkfixture.ReadCounts(dir)
	fmt.Println(counts, err)
	// Output:
	// map[key-0:41 key-1:40] <nil>
}
