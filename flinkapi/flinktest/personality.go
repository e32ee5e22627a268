package flinktest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/flinkkit/flinkkit/flinkapi"
)

// personality is what differs between the Flink versions the fake plays.
type personality struct {
	version flinkapi.Version
	name    string // as GET /config reports it
}

func newPersonality(s string) (personality, error) {
	v, err := flinkapi.ParseVersion(s)
	if err != nil {
		return personality{}, err
	}
	if !v.AtLeast(1, 15) || v.Major > 2 {
		return personality{}, fmt.Errorf("flink %s is not supported: the fake plays 1.15 to 2.x", s)
	}
	return personality{version: v, name: v.String()}, nil
}

func (p personality) atLeast(major, minor int) bool { return p.version.AtLeast(major, minor) }

// strictMapper: Flink 1.15 to 1.19 reject request bodies with fields the
// request class does not declare; 1.20 and later ignore them.
func (p personality) strictMapper() bool { return !p.atLeast(1, 20) }

// Endpoints that appeared in later releases.
func (p personality) hasJobStatus() bool            { return p.atLeast(1, 16) }
func (p personality) hasCheckpointTrigger() bool    { return p.atLeast(1, 17) }
func (p personality) hasResourceRequirements() bool { return p.atLeast(1, 18) }

// Response fields that appeared or went away.
func (p personality) hasJobType() bool           { return p.atLeast(1, 16) }
func (p personality) hasSavepointFormat() bool   { return p.atLeast(1, 16) }
func (p personality) hasTaskManagerID() bool     { return p.atLeast(1, 16) }
func (p personality) hasFailureLabels() bool     { return p.atLeast(1, 18) }
func (p personality) hasEndpoint() bool          { return p.atLeast(1, 19) }
func (p personality) isV2() bool                 { return p.version.Major >= 2 }
func (p personality) hasLegacyExceptions() bool  { return !p.isV2() }
func (p personality) hasLocation() bool          { return !p.isV2() }
func (p personality) hasApplicationFields() bool { return p.isV2() }
func (p personality) hasResultTimes() bool       { return p.atLeast(2, 3) }
func (p personality) hasApplications() bool      { return p.atLeast(2, 3) }
func (p personality) hasRescaleHistory() bool    { return p.atLeast(2, 3) }

// Request fields of the jar run body per version.
func (p personality) jarRunFields() []string {
	f := []string{"entryClass", "programArgsList", "parallelism", "jobId", "allowNonRestoredState", "savepointPath", "restoreMode"}
	if !p.isV2() {
		f = append(f, "programArgs")
	}
	if p.atLeast(1, 17) {
		f = append(f, "flinkConfiguration")
	}
	if p.atLeast(1, 20) {
		f = append(f, "claimMode")
	}
	return f
}

// Request fields of the run-application body (2.3): the jar run's, with
// claimMode and without restoreMode, and the application's id.
func (p personality) jarRunApplicationFields() []string {
	return []string{"entryClass", "programArgsList", "parallelism", "jobId", "allowNonRestoredState", "savepointPath", "claimMode", "flinkConfiguration", "applicationId"}
}

// Request fields of the jar plan body per version: those that the jar run
// shares with it (Flink's JarRequestBody).
func (p personality) jarPlanFields() []string {
	f := []string{"entryClass", "programArgsList", "parallelism", "jobId"}
	if !p.isV2() {
		f = append(f, "programArgs")
	}
	if p.atLeast(1, 17) {
		f = append(f, "flinkConfiguration")
	}
	return f
}

// commit is a short, stable commit id for the version.
func (p personality) commit() string {
	if p.name == "1.20.5" {
		return "0980485"
	}
	if p.name == "2.3.0" {
		return "c0f8d1a"
	}
	sum := sha256.Sum256([]byte("flink " + p.name))
	return hex.EncodeToString(sum[:])[:7]
}

func (p personality) revision() string {
	return p.commit() + " @ 2026-06-08T09:21:06+02:00"
}
