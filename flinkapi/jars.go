package flinkapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// UploadJar uploads a jar file from disk to a session cluster and returns
// the id Flink gave it. The cluster must run with web.submit.enable. It is
// never retried: a retry could leave two copies.
//
// It reads the file the caller names, in the directory the caller names
// (a symbolic link out of that directory is refused): give it only paths
// you trust. To read jars that others name (a spec, a custom resource),
// open them in a directory of your choice (os.Root, or lifecycle.Jars,
// which the lifecycle operations use) and call UploadJarReader. The file
// must be a regular file; it is read up to its size when opened, and no
// further.
//
// Flink REST: POST /jars/upload (1.5+)
func (c *Client) UploadJar(ctx context.Context, file string) (JarID, error) {
	name := filepath.Base(file)
	if !strings.HasSuffix(name, ".jar") {
		return "", invalidInput("jar file %q: Flink accepts only files whose name ends in .jar", file)
	}
	// Opened in its own directory, non-blocking: a FIFO is refused below
	// rather than waited on.
	root, err := os.OpenRoot(filepath.Dir(file))
	if err != nil {
		return "", invalidInput("jar file: %v", err)
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", invalidInput("jar file: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", invalidInput("jar file: %v", err)
	}
	if !st.Mode().IsRegular() {
		return "", invalidInput("jar file %q is not a regular file", file)
	}
	return c.UploadJarReader(ctx, name, io.LimitReader(f, st.Size()))
}

// UploadJarReader uploads a jar read from r under the file name name, which
// must end in ".jar". It is never retried. The whole of r is sent (and
// held in memory while sent): bound it (io.LimitReader) when it may be
// large.
//
// Flink REST: POST /jars/upload (1.5+)
func (c *Client) UploadJarReader(ctx context.Context, name string, r io.Reader) (JarID, error) {
	if err := JarID(name).Validate(); err != nil {
		return "", fmt.Errorf("jar file name: %w", err)
	}
	if r == nil {
		return "", invalidInput("jar reader is nil")
	}
	var out jarUploadWire
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/jars/upload", upload: &jarUpload{name: name, r: r}}, &out); err != nil {
		return "", err
	}
	id := JarID(path.Base(filepath.ToSlash(out.Filename)))
	if out.Status != "success" || id.Validate() != nil {
		return "", c.decodeError(http.MethodPost, "/jars/upload", fmt.Errorf("unexpected answer (status %q, filename %q)", truncate(out.Status, 40), truncate(out.Filename, 200)))
	}
	return id, nil
}

type jarUploadWire struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
}

// Jar is one uploaded jar of GET /jars.
type Jar struct {
	ID       JarID
	Name     string
	Uploaded time.Time
	Entries  []JarEntry // entry classes found in the manifest
}

// JarEntry is an entry class of a jar.
type JarEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type jarsWire struct {
	Address string    `json:"address"`
	Files   []jarWire `json:"files"`
}

type jarWire struct {
	ID       JarID      `json:"id"`
	Name     string     `json:"name"`
	Uploaded int64      `json:"uploaded"`
	Entry    []JarEntry `json:"entry"`
}

// ListJars lists the uploaded jars, newest first.
//
// Flink REST: GET /jars (1.5+)
func (c *Client) ListJars(ctx context.Context) ([]Jar, error) {
	var out jarsWire
	if err := c.get(ctx, "/jars", nil, &out); err != nil {
		return nil, err
	}
	jars := make([]Jar, len(out.Files))
	for i, w := range out.Files {
		jars[i] = Jar{ID: w.ID, Name: w.Name, Uploaded: FromMillis(w.Uploaded), Entries: w.Entry}
	}
	return jars, nil
}

// ClaimMode says who owns the files of the snapshot a job restores from.
type ClaimMode string

// Claim modes for RunJarRequest (1.15+; called restore mode before 1.20).
const (
	ClaimModeClaim   ClaimMode = "CLAIM"    // the job owns the snapshot and may delete it
	ClaimModeNoClaim ClaimMode = "NO_CLAIM" // the job never touches the snapshot (Flink's default)
	ClaimModeLegacy  ClaimMode = "LEGACY"   // 1.15 to 1.20 only
)

// RunJarRequest describes a job to start from an uploaded jar.
type RunJarRequest struct {
	// EntryClass overrides the jar manifest's main class.
	EntryClass string
	// ProgramArgs are the program's arguments, one per element.
	ProgramArgs []string
	// Parallelism overrides the default parallelism; 0 keeps it. At most
	// 32768, Flink's limit.
	Parallelism int
	// JobID is the id the new job gets. Choose it (NewJobID) and record it
	// before calling: after an error, look the job up with this id before
	// submitting again, so a retried submission never runs the job twice.
	JobID JobID
	// SavepointPath restores the job from a savepoint or retained checkpoint.
	SavepointPath string
	// AllowNonRestoredState lets the job start although the snapshot holds
	// state that no operator of the new job claims.
	AllowNonRestoredState bool
	// ClaimMode (1.15+): who owns the restored snapshot; empty keeps Flink's
	// default. Sent as "restoreMode" before 1.20 and "claimMode" since.
	ClaimMode ClaimMode
	// FlinkConfiguration holds job configuration entries (1.17+).
	FlinkConfiguration map[string]string
	// Secrets are values that ProgramArgs (or FlinkConfiguration) carry
	// and that must never be reported: the client replaces each
	// occurrence by "xxxxx", as it does its own credentials, in the error
	// it returns (Flink's answer to a program that fails in its main
	// method often repeats its arguments), and so in its log lines. They
	// are not sent.
	Secrets []string
}

type runJarWire struct {
	EntryClass            string            `json:"entryClass,omitempty"`
	ProgramArgsList       []string          `json:"programArgsList,omitempty"`
	Parallelism           int               `json:"parallelism,omitempty"`
	JobID                 JobID             `json:"jobId,omitempty"`
	SavepointPath         string            `json:"savepointPath,omitempty"`
	AllowNonRestoredState bool              `json:"allowNonRestoredState,omitempty"`
	RestoreMode           ClaimMode         `json:"restoreMode,omitempty"`
	ClaimMode             ClaimMode         `json:"claimMode,omitempty"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration,omitempty"`
}

// buildRunJar validates req against the cluster's version and returns the
// body to send.
func buildRunJar(v Version, req RunJarRequest) (*runJarWire, error) {
	if req.Parallelism < 0 || req.Parallelism > maxParallelism {
		return nil, invalidInput("RunJarRequest.Parallelism must be 1 to %d, Flink's limit (or 0 for the default), got %d", maxParallelism, req.Parallelism)
	}
	if req.JobID != "" {
		if err := req.JobID.Validate(); err != nil {
			return nil, err
		}
	}
	if req.SavepointPath != "" && strings.TrimSpace(req.SavepointPath) == "" {
		return nil, invalidInput("savepoint path is blank; leave it empty to start without state")
	}
	if req.EntryClass != "" && !IsJavaClassName(req.EntryClass) && !isSimpleClassName(req.EntryClass) {
		return nil, invalidInput("entry class %q is not a Java class name", truncate(req.EntryClass, 100))
	}
	w := &runJarWire{
		EntryClass: req.EntryClass, ProgramArgsList: req.ProgramArgs, Parallelism: req.Parallelism,
		JobID: req.JobID, SavepointPath: req.SavepointPath, AllowNonRestoredState: req.AllowNonRestoredState,
	}
	switch req.ClaimMode {
	case "":
	case ClaimModeClaim, ClaimModeNoClaim, ClaimModeLegacy:
		if req.ClaimMode == ClaimModeLegacy {
			if err := v.require(FeatureLegacyClaimMode); err != nil {
				return nil, err
			}
		}
		if v.Supports(FeatureClaimMode) {
			w.ClaimMode = req.ClaimMode
		} else if err := v.require(FeatureRestoreMode); err != nil {
			return nil, err
		} else {
			w.RestoreMode = req.ClaimMode
		}
	default:
		return nil, invalidInput("claim mode %q: want CLAIM, NO_CLAIM or LEGACY", req.ClaimMode)
	}
	if len(req.FlinkConfiguration) > 0 {
		if err := v.require(FeatureJarRunConfiguration); err != nil {
			return nil, err
		}
		for k := range req.FlinkConfiguration {
			if strings.TrimSpace(k) == "" {
				return nil, invalidInput("flink configuration has an empty key")
			}
		}
		w.FlinkConfiguration = req.FlinkConfiguration
	}
	return w, nil
}

func isSimpleClassName(s string) bool {
	return !strings.Contains(s, ".") && IsJavaClassName("p."+s)
}

// RunJar starts a job from an uploaded jar and returns its job id. It is
// never retried: after a transport error the job may or may not have been
// submitted. Set req.JobID and, before submitting again, ask Job for that id.
// A job id already in use answers an error for which IsDuplicateJob is true.
//
// Flink REST: POST /jars/:jarid/run (1.5+; restoreMode 1.15+, claimMode
// 1.20+, flinkConfiguration 1.17+)
func (c *Client) RunJar(ctx context.Context, jar JarID, req RunJarRequest) (JobID, error) {
	id, _, err := c.RunJarIDs(ctx, jar, req)
	return id, err
}

// RunJarIDs is RunJar that also returns the id of the application Flink
// wrapped the job in, from the answer's applicationId (Flink 2.3+: the
// SingleJobApplication whose id is the job's). It is empty where the
// answer has none, and a malformed one is an error, as a malformed job id
// is.
//
// Flink REST: POST /jars/:jarid/run (as RunJar)
func (c *Client) RunJarIDs(ctx context.Context, jar JarID, req RunJarRequest) (JobID, ApplicationID, error) {
	if err := jar.Validate(); err != nil {
		return "", "", err
	}
	v, err := c.Version(ctx)
	if err != nil {
		return "", "", err
	}
	body, err := buildRunJar(v, req)
	if err != nil {
		return "", "", err
	}
	var out runJarResponseWire
	p := "/jars/" + string(jar) + "/run"
	if _, err := c.do(ctx, call{method: http.MethodPost, path: p, body: body, secrets: req.Secrets}, &out); err != nil {
		return "", "", err
	}
	if err := out.JobID.Validate(); err != nil {
		return "", "", c.decodeError(http.MethodPost, p, errors.New("no usable job id: "+inputMessage(err)))
	}
	if out.ApplicationID != "" {
		if err := out.ApplicationID.Validate(); err != nil {
			return "", "", c.decodeError(http.MethodPost, p, errors.New("no usable application id: "+inputMessage(err)))
		}
		out.ApplicationID = ApplicationID(strings.ToLower(string(out.ApplicationID)))
	}
	return out.JobID, out.ApplicationID, nil
}

type runJarResponseWire struct {
	JobID         JobID         `json:"jobid"`
	ApplicationID ApplicationID `json:"applicationId"`
}

// DeleteJar deletes an uploaded jar. Flink answers 400 (not 404) for a jar
// it does not know.
//
// Flink REST: DELETE /jars/:jarid (1.5+)
func (c *Client) DeleteJar(ctx context.Context, jar JarID) error {
	if err := jar.Validate(); err != nil {
		return err
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/jars/" + string(jar)}, nil)
	return err
}
