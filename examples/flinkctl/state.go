package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// stateFormat is the format version of the files flinkctl writes in its
// state directory; a newer one is refused, never overwritten.
const stateFormat = 1

// stateDir is flinkctl's state directory:
//
//	deployments/NAME.json  the spec and the lifecycle.JobStatus of an applied job
//	deployments/NAME.lock  held while a command acts on NAME
//	restore-points/        the lifecycle.FileStore of final savepoints, by name
//	operations/KEY.json    the lifecycle.Progress of an imperative operation in flight
//	savepoints/JOB.json    the savepoint.History of the savepoints flinkctl took of JOB
//	health/JOB.json        the policy.HealthHistory of JOB's health samples
//
// A '/' of NAME (app/streamlet) is written '~' in file names (fileKey),
// as lifecycle.FileStore writes it in restore-points/.
type stateDir struct{ root string }

// deployment is what deployments/NAME.json holds.
type deployment struct {
	FormatVersion int                 `json:"formatVersion"`
	Name          string              `json:"name"`
	Spec          lifecycle.JobSpec   `json:"spec"`
	Status        lifecycle.JobStatus `json:"status"`
	// Deleted is set once `delete` tore the job down: a later apply of
	// the name starts a new deployment from its restore point.
	Deleted bool `json:"deleted,omitempty"`
}

// defaultStateDir is $XDG_STATE_HOME/flinkctl when that is set, else
// .flinkctl in the working directory: like a build tool's state, the
// status of what was applied stays beside the job files it came from.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "flinkctl")
	}
	return ".flinkctl"
}

// maxName is the longest name: the restore point store's limit.
const maxName = 200

// checkName refuses a deployment name that the state directory could not
// keep safely, or that the restore point store (lifecycle.FileStore,
// where delete keeps the final savepoint under the name) refuses. A name
// is segments separated by '/', as "app/streamlet": each segment of
// letters, digits, '.', '_' and '-', starting with a letter or digit.
// The message names the problem.
func checkName(name string) error {
	problem := ""
	switch {
	case name == "":
		problem = "it is empty"
	case len(name) > maxName:
		problem = fmt.Sprintf("it is %d bytes long, more than %d", len(name), maxName)
	}
	for seg := range strings.SplitSeq(name, "/") {
		if problem != "" {
			break
		}
		switch {
		case seg == "":
			problem = "it has an empty segment (a '/' at the start or the end, or '//')"
		case seg == "." || seg == "..":
			problem = fmt.Sprintf("it has a %q segment", seg)
		}
		for _, r := range seg {
			if problem != "" {
				break
			}
			switch {
			case unicode.IsControl(r):
				problem = fmt.Sprintf("it has the control character %U", r)
			case r > unicode.MaxASCII || !isAlnum(byte(r)) && !strings.ContainsRune("._-", r):
				problem = fmt.Sprintf("it has the character %q", r)
			}
		}
		if problem == "" && !isAlnum(seg[0]) {
			problem = fmt.Sprintf("its segment %q does not start with a letter or digit", seg)
		}
	}
	if problem == "" {
		// The library's own rule, in case it is stricter than the above.
		if _, _, err := (&lifecycle.MemoryStore{}).Get(context.Background(), name); err != nil {
			problem = "the restore point store refuses it"
		}
	}
	if problem != "" {
		return badInput("invalid name %q: %s; a name is segments separated by '/' (as app/streamlet), each of letters, digits, '.', '_' and '-' starting with a letter or digit, at most %d bytes in all",
			name, problem, maxName)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// fileKey is the file name of a name (or of a key holding one) in the
// state directory: '/' written as '~', as lifecycle.FileStore does. A
// valid name has no '~', so the mapping is reversible (nameOfFile).
func fileKey(name string) string { return strings.ReplaceAll(name, "/", "~") }

// nameOfFile is the name whose fileKey is key.
func nameOfFile(key string) string { return strings.ReplaceAll(key, "~", "/") }

func (s stateDir) path(parts ...string) string {
	return filepath.Join(append([]string{s.root}, parts...)...)
}

func (s stateDir) deploymentPath(name string) string {
	return s.path("deployments", fileKey(name)+".json")
}

// restorePoints is the store of the final savepoints, by name.
func (s stateDir) restorePoints() (*lifecycle.FileStore, error) {
	return lifecycle.NewFileStore(s.path("restore-points"))
}

// loadDeployment reads NAME's file; ok is false when there is none.
func (s stateDir) loadDeployment(name string) (d deployment, ok bool, err error) {
	ok, err = readJSON(s.deploymentPath(name), &d)
	if err == nil && ok && d.FormatVersion > stateFormat {
		err = fmt.Errorf("%s was written by a newer flinkctl (format %d, this one reads %d): use that release",
			s.deploymentPath(name), d.FormatVersion, stateFormat)
	}
	return d, ok, err
}

// saveDeployment writes NAME's file atomically.
func (s stateDir) saveDeployment(d *deployment) error {
	d.FormatVersion = stateFormat
	return writeJSON(s.deploymentPath(d.Name), d)
}

// deployments lists the names of the applied deployments.
func (s stateDir) deployments() ([]string, error) {
	es, err := os.ReadDir(s.path("deployments"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var names []string
	for _, e := range es {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(n, ".") {
			names = append(names, nameOfFile(n))
		}
	}
	return names, err
}

// history reads the savepoints flinkctl took of job.
func (s stateDir) history(job flinkapi.JobID) (savepoint.History, error) {
	var h savepoint.History
	if _, err := readJSON(s.path("savepoints", string(job)+".json"), &h); err != nil {
		return h, err
	}
	return h, h.CheckFormat() // one a later flinkkit wrote is never written back
}

// saveHistory writes the savepoints flinkctl took of job.
func (s stateDir) saveHistory(job flinkapi.JobID, h savepoint.History) error {
	return writeJSON(s.path("savepoints", string(job)+".json"), h)
}

// lock takes the lock of key (a deployment name or a job id) for this
// process, or fails at once naming what holds it. The lock goes with the
// process, also when it dies.
func (s stateDir) lock(key string) (unlock func(), err error) {
	p := s.path("deployments", fileKey(key)+".lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		return nil, &exitError{code: exitBlocked, msg: fmt.Sprintf("another flinkctl (%s) is acting on %s: wait for it to end, or stop it and run the command again",
			strings.TrimSpace(string(holder)), key)}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d", os.Getpid())), 0)
	return func() { f.Close() }, nil
}

// readJSON reads path into v; ok is false when there is no such file.
func readJSON(path string, v any) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w (move the file away to start over)", path, err)
	}
	return true, nil
}

// writeJSON writes v to path atomically: a temporary file in the same
// directory, synced, then renamed over path, and the directory synced, so
// that a crash leaves the old file or the new one, never half of one.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// removeFile removes path; a missing file is no error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
