package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// maxSecretSize bounds the file of one secret.
const maxSecretSize = 1 << 20

// dirSecrets reads the secrets a job's arguments name (${secret:NAME})
// from the files of --secret-dir: NAME is the file's path in it, which no
// path, ".." or symbolic link leaves. One trailing newline is not part of
// the value (files written with echo end with one).
type dirSecrets struct {
	dir string // as given, for messages; "" when --secret-dir is not set
}

// Secret returns the content of the file name in the directory.
func (d dirSecrets) Secret(_ context.Context, name string) (string, error) {
	if d.dir == "" {
		return "", errors.New("no --secret-dir (or $FLINKCTL_SECRET_DIR) is given: a directory with one file per secret, named as the job file's ${secret:NAME} names it")
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return "", fmt.Errorf("--secret-dir %s: %v", d.dir, unwrapPath(err))
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return "", fmt.Errorf("no file %s in --secret-dir %s: %v", name, d.dir, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("file %s in --secret-dir %s: %v", name, d.dir, unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s in --secret-dir %s is not a regular file", name, d.dir)
	}
	if st.Size() > maxSecretSize {
		return "", fmt.Errorf("file %s in --secret-dir %s is %d bytes, more than a secret's %d", name, d.dir, st.Size(), maxSecretSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSecretSize+1))
	if err != nil {
		return "", fmt.Errorf("reading %s in --secret-dir %s: %v", name, d.dir, unwrapPath(err))
	}
	if len(b) > maxSecretSize {
		return "", fmt.Errorf("file %s in --secret-dir %s grew past a secret's %d bytes", name, d.dir, maxSecretSize)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return v, nil
}

// unwrapPath is the cause of a path error, without the path, which the
// messages name already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
