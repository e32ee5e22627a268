package lifecycle

import (
	"os"
	"testing"
)

// TestMain runs the package's tests and benchmarks; in the process
// BenchmarkFleetPoll starts for its fake JobManager (fleetFakeEnv set),
// it serves that JobManager instead (serveFleetFake).
func TestMain(m *testing.M) {
	if slots := os.Getenv(fleetFakeEnv); slots != "" {
		os.Exit(serveFleetFake(slots))
	}
	code := m.Run()
	closeBenchFleets()
	os.Exit(code)
}
