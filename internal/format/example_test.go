package format_test

import (
	"errors"
	"fmt"

	"github.com/flinkkit/flinkkit/internal/format"
)

func ExampleCheck() {
	fmt.Println(format.Check("lifecycle.Progress", 0, 1))
	err := format.Check("lifecycle.Progress", 2, 1)
	fmt.Println(errors.Is(err, format.ErrUnknown))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// lifecycle.Progress: format version 2 is newer than this flinkkit reads (up to 1): it was written by a later flinkkit; run that release or a later one, and do not write this value back with this one
}
