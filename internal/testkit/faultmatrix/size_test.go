package faultmatrix

import "os"

// fullSize reports whether the full-size runs are asked for
// (FLINKKIT_FULL=1): every seed and every crash point of the tables. By
// default the seeded tests run a share of them, the same share on every
// run.
var fullSize = os.Getenv("FLINKKIT_FULL") == "1"

// sized is n when a flag set it (n >= 0), else the full size with
// FLINKKIT_FULL=1 and the default size without.
func sized(n, def, full int) int {
	switch {
	case n >= 0:
		return n
	case fullSize:
		return full
	}
	return def
}

// crashStride is how many decisive crash points of a cell
// TestControllerMatrix steps over: every one with FLINKKIT_FULL=1, one
// in two by default, starting at the first, so each cell still crashes
// right after its first change of the cluster.
func crashStride() int {
	if fullSize || *allCrashesFlag {
		return 1
	}
	return 2
}
