//go:build !unix

package flinkapi

import "io/fs"

// fileIdentity is empty where the system gives no inode: size and
// modification time tell a file's versions apart there.
func fileIdentity(fs.FileInfo) string { return "" }
