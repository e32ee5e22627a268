package fleet

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/lifecycle"
	"github.com/flinkkit/flinkkit/policy"
)

// DecodeSpec reads one deployment's spec from data, the content of the
// file named file (used in errors only): a YAML document, or JSON, whose
// fields are lifecycle.JobSpec's JSON names. A file holds one spec; a
// second YAML document in it is an error.
//
// Decoding is strict. A field JobSpec does not have, a value of the
// wrong kind (a list for a number, text for true or false), a key given
// twice and a spec that Validate refuses are errors, each naming the
// file, the line and the field as the file writes it:
//
//	jobs/orders.yaml:12: job.paralelism: unknown field (did you mean "parallelism"?)
//	jobs/orders.yaml:12: job.parallelism: want a whole number, got "four"
//
// Every error found is reported (up to 20), ordered by line, joined in
// one error. Validate runs once the file decodes; its errors match
// lifecycle.ErrInvalidSpec (and lifecycle.ErrUnknownFormat for a
// formatVersion newer than this release reads). A
// number, true or false written where text is wanted (the values of
// job.flinkConfiguration) is read as the text written. Durations are
// text with a unit ("90s"), as in JSON. YAML's anchors, aliases and
// merge keys ("<<") are followed.
//
// A fleet restarts its jobs by default: a spec that does not set
// restart.mode is read with policy.RestartFromLatestState, so that a job
// that fails, that Flink loses or that someone cancels from outside (the
// Flink UI) is started again from its newest
// state, within the restart policy's other fields (their defaults:
// policy.RestartPolicy.WithDefaults); "restart: {mode: Never}" opts out.
// The default is the decoder's, not the Runner's: the spec stored in a
// Record, shown by a plan and compared by Sync is the one that runs,
// and a spec built in Go is run as it is written.
func DecodeSpec(file string, data []byte) (lifecycle.JobSpec, error) {
	var spec lifecycle.JobSpec
	lines, errs := decodeFile(file, data, &spec)
	if len(errs) > 0 {
		return lifecycle.JobSpec{}, join(errs)
	}
	if err := settleSpec(&spec); err != nil {
		return lifecycle.JobSpec{}, join(placed(file, lines, err))
	}
	return spec, nil
}

// settleSpec gives a decoded spec the decoder's defaults (restart.mode:
// DefaultRestartMode) and validates it: DecodeSpec and DecodeDeployment
// both read their spec's fields so, and place its errors in the file.
func settleSpec(spec *lifecycle.JobSpec) error {
	if spec.Restart.Mode == "" {
		spec.Restart.Mode = DefaultRestartMode
	}
	return spec.Validate()
}

// DefaultRestartMode is the restart mode DecodeSpec reads for a spec
// that does not set restart.mode.
const DefaultRestartMode = policy.RestartFromLatestState

// Cluster is a Flink cluster a fleet runs jobs on.
type Cluster struct {
	// Name names the cluster in the fleet: 1 to 253 letters, digits,
	// '.', '_' and '-', starting with a letter or digit.
	Name string `json:"name"`
	// URL is the address of its JobManager's REST API, http or https.
	URL string `json:"url"`
}

// ClusterList is the content of a file listing a fleet's clusters:
//
//	clusters:
//	  - name: eu-1
//	    url: https://flink-eu-1.example.com:8081
type ClusterList struct {
	// Clusters are the clusters, each name once.
	Clusters []Cluster `json:"clusters"`
}

// DecodeClusters reads a ClusterList from data, the content of the file
// named file, as strictly as DecodeSpec reads a spec: an unknown field,
// a value of the wrong kind, a cluster without a valid name or an http
// or https URL, and a name listed twice are errors naming the file, the
// line and the field (clusters[1].url).
func DecodeClusters(file string, data []byte) (ClusterList, error) {
	var list ClusterList
	lines, errs := decodeFile(file, data, &list)
	if len(errs) > 0 {
		return ClusterList{}, join(errs)
	}
	var bad []error
	seen := map[string]int{}
	for i, c := range list.Clusters {
		at := fmt.Sprintf("clusters[%d]", i)
		if err := checkSegment(c.Name); err != nil {
			bad = append(bad, fmt.Errorf("%s.name: %q is not a valid name: use 1 to %d letters, digits, '.', '_' and '-', starting with a letter or digit",
				at, c.Name, maxNameLength))
		} else if j, dup := seen[c.Name]; dup {
			bad = append(bad, fmt.Errorf("%s.name: %q is clusters[%d]'s name too", at, c.Name, j))
		} else {
			seen[c.Name] = i
		}
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad = append(bad, fmt.Errorf("%s.url: %q is not an http or https URL with a host", at, c.URL))
		}
	}
	if len(bad) > 0 {
		return ClusterList{}, join(placed(file, lines, errors.Join(bad...)))
	}
	return list, nil
}

// join joins errs in one error, one per line, ordered by line; past
// maxErrors, a last line counts the rest.
func join(errs []*fileError) error {
	slices.SortStableFunc(errs, func(a, b *fileError) int { return a.line - b.line })
	if len(errs) > maxErrors {
		more := &fileError{file: errs[0].file, err: fmt.Errorf("and %d more errors", len(errs)-maxErrors)}
		errs = append(errs[:maxErrors:maxErrors], more)
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// leadingPath matches the field path a validation error starts with
// ("job.parallelism: ..."): JSON names, '.', indexes.
var leadingPath = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*(?:\.[a-zA-Z][a-zA-Z0-9_]*|\[[0-9]+\])*: `)

// placed splits a validation error into its parts, each a fileError at
// the line of the field it names: the field itself where the file
// writes it, else the nearest enclosing field the file writes, else the
// start of the file. Each part matches what err matched.
func placed(file string, lines map[string]int, err error) []*fileError {
	var out []*fileError
	for _, part := range parts(err, "") {
		path, msg := part.path, part.err.Error()
		if path == "" {
			if m := leadingPath.FindString(msg); m != "" {
				path, msg = strings.TrimSuffix(m, ": "), msg[len(m):]
			}
		}
		line, ok := 0, false
		for p := path; !ok; p = parent(p) {
			line, ok = lines[p]
			if p == "" {
				break
			}
		}
		out = append(out, &fileError{file: file, line: line, path: path,
			err: &invalid{msg: msg, causes: []error{err, part.err}}})
	}
	return out
}

// invalid is one part of a validation error: its message, matching what
// the whole error and the part matched (lifecycle.ErrInvalidSpec,
// lifecycle.ErrUnknownFormat).
type invalid struct {
	msg    string
	causes []error
}

func (e *invalid) Error() string   { return e.msg }
func (e *invalid) Unwrap() []error { return e.causes }

type part struct {
	path string
	err  error
}

// parts lists the errors err joins, each with the path of the field it
// is about where the error says it in its structure: a policy's
// FieldError under the policy's field ("update: ..."), a format error
// at formatVersion. prefix is the path err is about.
func parts(err error, prefix string) []part {
	var fe *policy.FieldError
	var fmtErr *format.Error
	switch {
	case errors.As(err, &fe) && err == error(fe):
		return []part{{path: joinPath(prefix, fe.Field), err: fmt.Errorf("%s: %s", strconv.Quote(fe.Value), fe.Message)}}
	case errors.As(err, &fmtErr) && err == error(fmtErr):
		return []part{{path: joinPath(prefix, "formatVersion"), err: err}}
	}
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []part
		for _, e := range multi.Unwrap() {
			if e == lifecycle.ErrInvalidSpec {
				continue
			}
			out = append(out, parts(e, prefix)...)
		}
		return out
	}
	if inner := errors.Unwrap(err); inner != nil {
		// "update: <the policy's errors>": the field, then what the
		// policy says of it.
		if m := leadingPath.FindString(err.Error()); m != "" && err.Error() == m+inner.Error() {
			if _, structured := inner.(interface{ Unwrap() []error }); structured || isStructured(inner) {
				return parts(inner, joinPath(prefix, strings.TrimSuffix(m, ": ")))
			}
		}
	}
	if prefix != "" {
		return []part{{path: prefix, err: err}}
	}
	return []part{{err: err}}
}

// isStructured reports whether err is an error parts reads a path from.
func isStructured(err error) bool {
	var fe *policy.FieldError
	var fmtErr *format.Error
	return errors.As(err, &fe) && err == error(fe) || errors.As(err, &fmtErr) && err == error(fmtErr)
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// parent is the path enclosing p: "job" for "job.args[1]"'s "job.args".
func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// deploymentFile is the content of a file stating one deployment: its
// name, cluster, application and job to adopt beside its spec's fields.
type deploymentFile struct {
	Name        string `json:"name,omitempty"`
	Cluster     string `json:"cluster,omitempty"`
	Application string `json:"application,omitempty"`
	AdoptName   string `json:"adoptName,omitempty"`
	lifecycle.JobSpec
}

// DecodeDeployment reads a Deployment from data, the content of the file
// named file: the fields of its spec, as DecodeSpec reads them, and
// beside them at the top level the deployment's name, cluster,
// application and adoptName:
//
//	name: orders
//	cluster: eu-1
//	application: shop
//	job:
//	  jarFile: orders-2.1.jar
//	  parallelism: 4
//
// A field the file leaves out stays empty: a caller that names
// deployments by their files, or runs one cluster, fills in Name or
// Cluster. The errors are DecodeSpec's, and a name or application that
// is not a valid name (see Store) is one too, naming its line.
func DecodeDeployment(file string, data []byte) (Deployment, error) {
	var f deploymentFile
	lines, errs := decodeFile(file, data, &f)
	if len(errs) > 0 {
		return Deployment{}, join(errs)
	}
	var bad []error
	for _, n := range []struct{ field, value string }{{"name", f.Name}, {"application", f.Application}} {
		if n.value == "" {
			continue
		}
		if checkName(n.value) != nil {
			bad = append(bad, fmt.Errorf("%s: %q is not a valid name: use 1 to %d bytes of segments separated by '/', each of letters, digits, '.', '_' and '-' starting with a letter or digit",
				n.field, n.value, maxNameLength))
		}
	}
	if err := settleSpec(&f.JobSpec); err != nil {
		bad = append(bad, err)
	}
	if len(bad) > 0 {
		return Deployment{}, join(placed(file, lines, errors.Join(bad...)))
	}
	return Deployment{Name: f.Name, Cluster: f.Cluster, Spec: f.JobSpec, Application: f.Application, AdoptName: f.AdoptName}, nil
}
