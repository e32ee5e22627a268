package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/internal/format"
	"github.com/flinkkit/flinkkit/lifecycle"
)

// FormatVersion is the newest format of Record that this release writes
// and reads. A record of a newer format is refused (an error matching
// lifecycle.ErrUnknownFormat), never acted on or written over.
const FormatVersion = 1

// Record is what is stored of one deployment: the spec it should run,
// the spec its job was last applied under, and the Controller's status,
// written together so that none of them is ever stored without the
// others.
type Record struct {
	// FormatVersion is the format the record was written in; Save sets
	// it. 0 reads as 1.
	FormatVersion int `json:"formatVersion,omitempty"`
	// Name is the deployment's name: the Controller's Name, and the
	// record's key in its Store. It must be a safe file name (see
	// DirStore).
	Name string `json:"name"`
	// Cluster names the cluster the deployment runs on (a key of
	// Runner.Clusters).
	Cluster string `json:"cluster,omitempty"`
	// Application names the application the deployment belongs to, if
	// any (Deployment.Application).
	Application string `json:"application,omitempty"`
	// AdoptName is the Flink job name of the running job the deployment
	// adopts (Deployment.AdoptName), and Adopting the job found under it,
	// recorded before the Controller is asked to adopt it.
	AdoptName string         `json:"adoptName,omitempty"`
	Adopting  flinkapi.JobID `json:"adopting,omitempty"`
	// AdoptSpec is the spec the deployment had when Sync stored its
	// AdoptName: the spec the job found under that name is taken to
	// run. The adoption is made under it, so that a change of Spec
	// made before the adoption lands is carried out after it as an
	// upgrade, not recorded as what the adopted job already runs. Nil
	// in records written before it existed: the adoption is made under
	// Spec.
	AdoptSpec *lifecycle.JobSpec `json:"adoptSpec,omitempty"`
	// Spec is the spec the deployment should run, as last read from its
	// source.
	Spec lifecycle.JobSpec `json:"spec"`
	// Applied is the spec the Controller last acted under (nil until the
	// first Reconcile): what Controller.Delete is given to tear the job
	// down once Spec is gone from its source, and what tells whether
	// Spec changed since.
	Applied *lifecycle.JobSpec `json:"applied,omitempty"`
	// Status is the Controller's status of the deployment, stored after
	// every call.
	Status lifecycle.JobStatus `json:"status,omitzero"`
	// Removed says that the deployment is gone from its source: its job
	// is to be torn down (Controller.Delete, under Applied) and the
	// record deleted once that is done. Spec is kept as it last was.
	Removed bool `json:"removed,omitempty"`
}

// Store keeps the Records of a fleet. DirStore keeps them in files; a
// Store of another backend (a database, a Kubernetes object) implements
// the same four methods:
//
//   - Load returns the record of the deployment name; ok is false, with
//     a zero Record, when there is none.
//   - Save stores rec whole, replacing the one of its Name: after a
//     crash, the store holds the old record or the new one, never part
//     of either, and two Saves of one deployment (also from two
//     processes) take effect one after the other.
//   - Delete removes the record of name; deleting one that does not
//     exist is not an error.
//   - List returns every record, ordered by name; it never waits for a
//     Save in progress, and each record it returns is whole.
//
// Every method refuses a name that is not a valid deployment name with
// an error naming it, and a record of a format newer than FormatVersion
// with an error matching lifecycle.ErrUnknownFormat.
type Store interface {
	Load(ctx context.Context, name string) (rec Record, ok bool, err error)
	Save(ctx context.Context, rec *Record) error
	Delete(ctx context.Context, name string) error
	List(ctx context.Context) ([]Record, error)
}

// maxNameLength bounds a deployment's name, as Kubernetes bounds an
// object's name.
const maxNameLength = 253

// checkName returns an error naming name unless it is a valid deployment
// name: 1 to 253 bytes of segments separated by '/' (app/streamlet, as
// lifecycle's restore-point stores name a deployment), each of ASCII
// letters, digits, '.', '_' and '-', the first a letter or digit. A
// DirStore writes '/' as '~' in file names, so such a name is a file name
// on every system, never a path, and never one of the names a DirStore
// keeps for itself (they start with a dot).
func checkName(name string) error {
	bad := name == "" || len(name) > maxNameLength
	for seg := range strings.SplitSeq(name, "/") {
		bad = bad || checkSegment(seg) != nil
	}
	if bad {
		return fmt.Errorf("fleet: deployment name %q is not a safe file name: "+
			"use 1 to %d bytes of segments separated by '/', each of letters, digits, '.', '_' and '-' starting with a letter or digit", name, maxNameLength)
	}
	return nil
}

// checkSegment returns an error naming s unless it is 1 to 253 ASCII
// letters, digits, '.', '_' and '-', the first a letter or digit: a
// segment of a deployment name, and a cluster's name.
func checkSegment(s string) error {
	bad := s == "" || len(s) > maxNameLength || !isAlnum(s[0])
	for i := 0; i < len(s) && !bad; i++ {
		bad = !isAlnum(s[i]) && !strings.ContainsRune("._-", rune(s[i]))
	}
	if bad {
		return fmt.Errorf("fleet: name %q is not a safe file name: "+
			"use 1 to %d letters, digits, '.', '_' and '-', starting with a letter or digit", s, maxNameLength)
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// checkRecord returns the error for a decoded record that is not the
// record of name, or of a format this release does not read.
func checkRecord(rec *Record, name string) error {
	if err := format.Check("fleet.Record", rec.FormatVersion, FormatVersion); err != nil {
		return err
	}
	if rec.Name != name {
		return fmt.Errorf("fleet: the record of %q holds the deployment %q", name, rec.Name)
	}
	return nil
}

// errNoName is the error for a record saved without a name.
var errNoName = errors.New("fleet: a record needs a Name")
