package plaincheck_test

import (
	"fmt"
	"reflect"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/plaincheck"
)

// A record whose hand-written DeepCopyInto is a plain struct copy: a slice
// field makes that copy shallow, and Problems names it.
func ExampleProblems() {
	type record struct {
		Location string
		Time     time.Time
		Tags     []string
	}
	for _, p := range plaincheck.Problems("record", reflect.TypeOf(record{})) {
		fmt.Println(p)
	}
	// Output:
	// record.Tags is a slice: a plain struct copy would share it, so DeepCopyInto must copy it
}
