package flinkapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Version is a Flink release as the JobManager reports it in GET /config
// ("flink-version"), reduced to major, minor and patch. Suffixes such as
// "-SNAPSHOT" are dropped. The zero Version means "unknown".
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion parses "1.20.1", "2.1-SNAPSHOT", "1.15" and similar strings.
func ParseVersion(s string) (Version, error) {
	orig := s
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "v"))
	if i := strings.IndexAny(s, "-+ "); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, invalidInput("Flink version %q: want MAJOR.MINOR[.PATCH]", truncate(orig, 64))
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1000 {
			return Version{}, invalidInput("Flink version %q: %q is not a version number", truncate(orig, 64), truncate(p, 16))
		}
		nums[i] = n
	}
	v := Version{nums[0], nums[1], nums[2]}
	if v.Major == 0 {
		return Version{}, invalidInput("Flink version %q: major version 0 does not exist", truncate(orig, 64))
	}
	return v, nil
}

// String formats v as "MAJOR.MINOR.PATCH", or "unknown" for the zero Version.
func (v Version) String() string {
	if v.IsZero() {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// IsZero reports whether v is the zero (unknown) Version.
func (v Version) IsZero() bool { return v == Version{} }

// compare returns -1, 0 or +1 as v is older than, equal to or newer than w.
func (v Version) compare(w Version) int {
	for _, d := range [3]int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// AtLeast reports whether v is the same as or newer than major.minor.
func (v Version) AtLeast(major, minor int) bool {
	return v.compare(Version{Major: major, Minor: minor}) >= 0
}

// Feature is a part of the REST API that only some Flink versions have.
type Feature int

// Features the client gates by version. Each names the first Flink release
// that has it; asking an older cluster for it fails with ErrUnsupported
// before any request is sent.
const (
	FeatureStopWithSavepoint    Feature = iota + 1 // POST /jobs/:jobid/stop (1.9)
	FeatureClientTriggerID                         // "triggerId" in trigger bodies (1.15)
	FeatureSavepointFormatType                     // "formatType" in savepoint and stop bodies (1.15)
	FeatureRestoreMode                             // "restoreMode" in jar run (1.15)
	FeatureClaimMode                               // "claimMode" in jar run, replacing restoreMode (1.20)
	FeatureJobStatusEndpoint                       // GET /jobs/:jobid/status (1.16)
	FeatureJarRunConfiguration                     // "flinkConfiguration" in jar run (1.17)
	FeatureCheckpointTrigger                       // POST /jobs/:jobid/checkpoints (1.17)
	FeatureResourceRequirements                    // GET/PUT /jobs/:jobid/resource-requirements (1.18)
	FeatureLegacyClaimMode                         // claim mode LEGACY (1.15 to 1.20; removed in 2.0)
	FeatureApplications                            // /applications endpoints and POST /jars/:jarid/run-application (2.3)
	FeatureRescaleHistory                          // GET /jobs/:jobid/rescales/history and /rescales/details/:rescaleuuid (2.3)
)

type featureInfo struct {
	name      string
	since     Version
	removedIn Version // zero: still present
}

var features = map[Feature]featureInfo{
	FeatureStopWithSavepoint:    {name: "stop with savepoint (POST /jobs/:jobid/stop)", since: Version{1, 9, 0}},
	FeatureClientTriggerID:      {name: "client trigger ids", since: Version{1, 15, 0}},
	FeatureSavepointFormatType:  {name: "savepoint format type", since: Version{1, 15, 0}},
	FeatureRestoreMode:          {name: "jar run restore mode", since: Version{1, 15, 0}},
	FeatureClaimMode:            {name: "jar run claim mode field", since: Version{1, 20, 0}},
	FeatureJobStatusEndpoint:    {name: "job status endpoint (GET /jobs/:jobid/status)", since: Version{1, 16, 0}},
	FeatureJarRunConfiguration:  {name: "Flink configuration in jar run", since: Version{1, 17, 0}},
	FeatureCheckpointTrigger:    {name: "checkpoint trigger (POST /jobs/:jobid/checkpoints)", since: Version{1, 17, 0}},
	FeatureResourceRequirements: {name: "resource requirements (/jobs/:jobid/resource-requirements)", since: Version{1, 18, 0}},
	FeatureLegacyClaimMode:      {name: "claim mode LEGACY", since: Version{1, 15, 0}, removedIn: Version{2, 0, 0}},
	FeatureApplications:         {name: "applications (/applications, POST /jars/:jarid/run-application)", since: Version{2, 3, 0}},
	FeatureRescaleHistory:       {name: "rescale history (/jobs/:jobid/rescales)", since: Version{2, 3, 0}},
}

// String names the feature and the Flink versions that have it.
func (f Feature) String() string {
	fi, ok := features[f]
	if !ok {
		return "feature(" + strconv.Itoa(int(f)) + ")"
	}
	return fi.name
}

// Supports reports whether a cluster of version v has feature f.
// An unknown (zero) version supports nothing that is gated.
func (v Version) Supports(f Feature) bool {
	fi, ok := features[f]
	if !ok || v.IsZero() {
		return false
	}
	if v.compare(fi.since) < 0 {
		return false
	}
	return fi.removedIn.IsZero() || v.compare(fi.removedIn) < 0
}

// require returns an error matching ErrUnsupported unless v has f.
func (v Version) require(f Feature) error {
	if v.Supports(f) {
		return nil
	}
	fi := features[f]
	if !fi.removedIn.IsZero() && v.compare(fi.removedIn) >= 0 {
		return &UnsupportedError{Feature: f, Cluster: v, Since: fi.since, RemovedIn: fi.removedIn}
	}
	return &UnsupportedError{Feature: f, Cluster: v, Since: fi.since}
}

// UnsupportedError says that the cluster's Flink version lacks a feature the
// caller asked for. It matches ErrUnsupported. No request was sent.
type UnsupportedError struct {
	Feature   Feature
	Cluster   Version // the cluster's version
	Since     Version // first version with the feature
	RemovedIn Version // first version without it again; zero if still present
}

// Error names the feature, the cluster's version and the versions that
// have it.
func (e *UnsupportedError) Error() string {
	if !e.RemovedIn.IsZero() {
		return fmt.Sprintf("flinkapi: %s is not supported by Flink %s: it exists from %d.%d up to before %d.%d",
			e.Feature, e.Cluster, e.Since.Major, e.Since.Minor, e.RemovedIn.Major, e.RemovedIn.Minor)
	}
	return fmt.Sprintf("flinkapi: %s needs Flink %d.%d or later; the cluster runs %s",
		e.Feature, e.Since.Major, e.Since.Minor, e.Cluster)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Version returns the cluster's Flink version. It asks GET /config once and
// caches the answer; RefreshVersion asks again (after a cluster upgrade, for
// example). A version fixed with WithFlinkVersion is returned without a
// request.
func (c *Client) Version(ctx context.Context) (Version, error) {
	c.ver.mu.Lock()
	v := c.ver.v
	c.ver.mu.Unlock()
	if !v.IsZero() {
		return v, nil
	}
	return c.RefreshVersion(ctx)
}

// RefreshVersion asks the cluster for its version again and caches it.
// With WithFlinkVersion it returns the fixed version without a request.
func (c *Client) RefreshVersion(ctx context.Context) (Version, error) {
	if !c.fixedVersion.IsZero() {
		return c.fixedVersion, nil
	}
	cfg, err := c.Config(ctx)
	if err != nil {
		return Version{}, err
	}
	v, err := ParseVersion(cfg.FlinkVersion)
	if err != nil {
		return Version{}, c.decodeError(http.MethodGet, "/config", errors.New("unreadable flink-version: "+inputMessage(err)))
	}
	c.ver.mu.Lock()
	c.ver.v = v
	c.ver.mu.Unlock()
	return v, nil
}

// requireFeature fetches the version (cached) and checks f.
func (c *Client) requireFeature(ctx context.Context, f Feature) (Version, error) {
	v, err := c.Version(ctx)
	if err != nil {
		return v, err
	}
	return v, v.require(f)
}
