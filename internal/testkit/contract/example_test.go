package contract_test

import (
	"fmt"

	"github.com/flinkkit/flinkkit/internal/testkit/contract"
)

// The suite checks savepoints on disk; LocationPath turns the locations
// Flink reports into local paths and refuses other file systems.
func ExampleLocationPath() {
	for _, loc := range []string{"file:/tmp/sp/savepoint-1", "file:///tmp/sp/savepoint-2", "s3://bucket/savepoint-3"} {
		p, err := contract.LocationPath(loc)
		fmt.Printf("%q %v\n", p, err != nil)
	}
	// Output:
	// "/tmp/sp/savepoint-1" false
	// "/tmp/sp/savepoint-2" false
	// "" true
}
