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

	"github.com/flinkkit/flinkkit/fleet"
	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/atomicfile"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/savepoint"
)

// stateFormat is the format version of the files flinkctl writes in its
// state directory; a newer one is refused, never overwritten.
const stateFormat = 1

// stateDir is flinkctl's state directory:
//
//	records/NAME.json      the fleet.Record of an applied job: its spec, the spec its job last ran under, its lifecycle.JobStatus
//	deployments/.fleet.lock  held while a command acts on the applied jobs (apply, run, delete, a stop of an applied job's job)
//	restore-points/        the lifecycle.FileStore of final savepoints, by name
//	operations/KEY.json    the lifecycle.Progress of an imperative operation in flight
//	savepoints/JOB.json    the savepoint.History of the savepoints flinkctl took of JOB
//	health/JOB.json        the policy.HealthHistory of JOB's health samples
//	deployments/NAME.json  an applied job as releases before the fleet runner kept it: read as its record until the
//	                       record is first written, then renamed NAME.json.migrated
//
// A '/' of NAME (app/streamlet) is written '~' in file names (fileKey),
// as lifecycle.FileStore and fleet.DirStore write it.
type stateDir struct{ root string }

// deployment is what flinkctl keeps of an applied job.
type deployment = fleet.Record

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
	return s.path("records", fileKey(name)+".json")
}

// restorePoints is the store of the final savepoints, by name.
func (s stateDir) restorePoints() (*lifecycle.FileStore, error) {
	return lifecycle.NewFileStore(s.path("restore-points"))
}

// loadDeployment reads NAME's record; ok is false when there is none.
// It takes no lock and never waits.
func (s stateDir) loadDeployment(name string) (d deployment, ok bool, err error) {
	st, err := s.records(nil)
	if err != nil {
		return d, false, err
	}
	return st.Load(context.Background(), name)
}

// saveDeployment writes NAME's record atomically.
func (s stateDir) saveDeployment(d *deployment) error {
	st, err := s.records(nil)
	if err != nil {
		return err
	}
	return st.Save(context.Background(), d)
}

// deployments lists the names of the applied deployments.
func (s stateDir) deployments() ([]string, error) {
	st, err := s.records(nil)
	if err != nil {
		return nil, err
	}
	recs, err := st.List(context.Background())
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
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

// fleetLock is the key of the lock of the applied jobs: held by the
// command whose fleet.Runner acts on them (one at a time), and by a
// command that changes an applied job's record beside a Runner. A name
// never starts with a dot.
const fleetLock = ".fleet"

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
		what := key
		if key == fleetLock {
			what = "the applied jobs of " + s.root
		}
		return nil, &exitError{code: exitBlocked, msg: fmt.Sprintf("another flinkctl (%s) is acting on %s: wait for it to end, or stop it and run the command again",
			strings.TrimSpace(string(holder)), what)}
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

// writeJSON writes v to path, indented, atomically (atomicfile.Write, as
// fleet.DirStore and lifecycle.FileStore write their files): a crash
// leaves the old file or the new one, never half of one.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// removeFile removes path; a missing file is no error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
