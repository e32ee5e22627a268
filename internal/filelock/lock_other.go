//go:build !unix

package filelock

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// lock has no lock between processes to take outside Unix: it says so.
func lock(*os.File) error {
	return errors.ErrUnsupported
}
