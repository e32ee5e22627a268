//go:build unix

package flinkapi

import (
	"io/fs"
	"strconv"
	"syscall"
)

// fileIdentity is the device and inode of a file: a file replaced by a
// rename (or a Kubernetes Secret volume's symbolic link moved to a new
// folder) has another, even with the same size and modification time.
func fileIdentity(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10)
	}
	return ""
}
