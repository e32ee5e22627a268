// Package bytesize writes a number of bytes for people: in B, KiB, MiB
// or GiB, as flinkkit's messages and reports show state and file sizes.
package bytesize

import "fmt"

// String shows n bytes in B, KiB, MiB or GiB, with one decimal above B.
func String(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
}
