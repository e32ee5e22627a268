package contract

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flinkkit/flinkkit/internal/wait"
)

// Target is the JobManager the suite runs against, with what the suite needs
// to know about it and the hooks that reach beyond its REST API.
//
// The suite expects a session cluster with one TaskManager, jar submission
// enabled, Flink's default scheduler, and a default savepoint directory.
type Target struct {
	// URL is the base URL of the JobManager's REST API; required.
	URL string
	// Version is the Flink version the cluster must report, e.g. "1.20.5".
	// The client learns the version from the cluster; this is only compared
	// with it. Empty skips the comparison.
	Version string

	// JarPath is the test job jar on the local disk; required.
	JarPath string
	// EntryClass is the test job's main class; required.
	EntryClass string

	// SavepointDir is the cluster's default savepoint directory as a local
	// path; savepoint locations must lie under it. Empty skips the check.
	SavepointDir string
	// CheckpointDir is the cluster's checkpoint directory as a local path;
	// checkpoint locations must lie under it. Empty skips the check.
	CheckpointDir string

	// OutDir returns a new, empty folder for the test job's --out argument.
	// Nil: folders under a temporary directory of the test.
	OutDir func(name string) string
	// ReadCounts reads the test job's <dir>/<key>.count files. Nil skips the
	// state test (a target that runs no real job has no counts).
	ReadCounts func(dir string) (map[string]int64, error)
	// SavepointExists reports whether the savepoint at a location Flink
	// reported still exists. Nil skips the checks of files on disk. For a
	// cluster on this machine use LocalSavepointExists.
	SavepointExists func(location string) (bool, error)

	// RestartJobManager restarts the JobManager without high availability
	// and returns when its REST API answers again with the TaskManager
	// registered. Nil skips the RestartJobManager item.
	RestartJobManager func(ctx context.Context) error
	// AdaptiveURL is the REST URL of a second cluster of the same version
	// whose JobManager runs the adaptive scheduler
	// (jobmanager.scheduler: adaptive), for the resource requirements
	// calls. Empty skips that item. On Flink 2.3+ it must keep a rescale
	// history (web.adaptive-scheduler.rescale-history.size above 0), and
	// rescale soon after a change of requirements
	// (jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling
	// short, as RescaleHistoryConfig sets it): its job's in-place rescale
	// is confirmed from the history.
	AdaptiveURL string
	// ShutdownURL is the REST URL of a cluster the suite may shut down with
	// DELETE /cluster, after every other item. Empty skips that item.
	ShutdownURL string

	// Now is the clock that deadlines and timestamp checks use; nil:
	// time.Now.
	Now func() time.Time
	// Sleep waits between polls; nil: a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
	// PollInterval is the wait between polls; 0: 100 ms.
	PollInterval time.Duration
	// Timeout bounds each wait for a job state, a checkpoint, an
	// asynchronous operation or a count; 0: 60 s.
	Timeout time.Duration
}

// Defaults of Target.
const (
	DefaultPollInterval = 100 * time.Millisecond
	DefaultTimeout      = 60 * time.Second
)

// withDefaults checks the required fields and fills in the optional ones.
// outBase is used for OutDir when the target has none.
func (tg Target) withDefaults(outBase func() string) (Target, error) {
	var missing []string
	if tg.URL == "" {
		missing = append(missing, "URL")
	}
	if tg.JarPath == "" {
		missing = append(missing, "JarPath")
	}
	if tg.EntryClass == "" {
		missing = append(missing, "EntryClass")
	}
	if len(missing) > 0 {
		return tg, fmt.Errorf("contract: Target lacks %s", strings.Join(missing, ", "))
	}
	if tg.Now == nil {
		tg.Now = time.Now
	}
	if tg.Sleep == nil {
		tg.Sleep = sleep
	}
	if tg.PollInterval <= 0 {
		tg.PollInterval = DefaultPollInterval
	}
	if tg.Timeout <= 0 {
		tg.Timeout = DefaultTimeout
	}
	if tg.OutDir == nil {
		base := outBase()
		tg.OutDir = func(name string) string {
			dir, err := os.MkdirTemp(base, name+"-")
			if err != nil {
				panic(fmt.Sprintf("contract: create out folder: %v", err))
			}
			return dir
		}
	}
	return tg, nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }

// LocationPath turns a location Flink reports ("file:/a/b", "file:///a/b"
// or a plain absolute path) into a local path. Locations of other file
// systems (s3://, hdfs://) give an error.
func LocationPath(location string) (string, error) {
	if strings.HasPrefix(location, "/") {
		return filepath.Clean(location), nil
	}
	u, err := url.Parse(location)
	if err != nil {
		return "", fmt.Errorf("contract: location %q: %w", location, err)
	}
	if u.Scheme != "file" || u.Host != "" && u.Host != "localhost" || u.Path == "" {
		return "", fmt.Errorf("contract: location %q is not on the local file system", location)
	}
	return filepath.Clean(u.Path), nil
}

// LocalSavepointExists reports whether the savepoint directory at a
// location on the local file system exists.
func LocalSavepointExists(location string) (bool, error) {
	p, err := LocationPath(location)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// under reports whether location lies inside the local directory dir.
func under(location, dir string) bool {
	p, err := LocationPath(location)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// RescaleHistoryConfig is the Flink configuration the cluster at
// Target.AdaptiveURL runs with: the adaptive scheduler, a rescale history
// of 16 rescales (Flink 2.3+; older versions ignore the option) and no
// cooldown after a rescale, so that new resource requirements rescale the
// job at once.
var RescaleHistoryConfig = map[string]string{
	"jobmanager.scheduler":                                             "adaptive",
	"web.adaptive-scheduler.rescale-history.size":                      "16",
	"jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "0 ms",
}
