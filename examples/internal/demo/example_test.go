package demo_test

import (
	"os"
	"time"

	"github.com/flinkkit/flinkkit/examples/internal/demo"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// Output that is not a terminal gets a plain line for each change of a
// waiting phase's progress, and one line per phase.
func ExamplePrinter() {
	out := demo.NewPlainPrinter(os.Stdout)
	report := out.Report("savepoint")
	report(lifecycle.Report{Progress: lifecycle.Progress{Phase: lifecycle.PhaseSavepoint}, Elapsed: 100 * time.Millisecond})
	report(lifecycle.Report{Progress: lifecycle.Progress{Phase: lifecycle.PhaseSavepoint}, Elapsed: 200 * time.Millisecond}) // no change
	report(lifecycle.Report{Progress: lifecycle.Progress{Phase: lifecycle.PhaseSavepoint},
		HasSavepoint: true, Savepoint: savepoint.Progress{Acknowledged: 2, Total: 3, Fraction: 2.0 / 3, Bytes: 2048},
		Elapsed: 700 * time.Millisecond})
	out.Phase("savepoint", "taken at %s after %s", "file:/savepoints/savepoint-1", demo.Seconds(900*time.Millisecond))
	// Output:
	//   savepoint: Savepoint (0.1s)
	//   savepoint: Savepoint: 2/3 subtasks (66%), 2.0 KiB (0.7s)
	// savepoint  taken at file:/savepoints/savepoint-1 after 0.9s
}
