package flinkfixture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// RepoRoot is flinkkit's repository root: the nearest folder at or above
// the working directory that holds both a go.mod and scripts/flink.sh, so
// that tests of a nested module (examples/operator) find it too.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, "scripts", "flink.sh")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("flinkfixture: no folder with go.mod and scripts/flink.sh above the working directory")
		}
		dir = parent
	}
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// Prepare runs <repo>/scripts/flink.sh version with FLINK_CACHE_DIR set to
// cacheDir: it resolves the Flink jars and builds the test job, and returns
// at once when both are up to date. Without the script (the repo root is not
// found) it does nothing and Start checks that the files exist.
func Prepare(ctx context.Context, version, cacheDir string) error {
	root, err := RepoRoot()
	if err != nil {
		return nil
	}
	script := filepath.Join(root, "scripts", "flink.sh")
	if _, err := os.Stat(script); err != nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, "bash", script, version)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "FLINK_CACHE_DIR="+cacheDir)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("flinkfixture: scripts/flink.sh %s: %w\n%s", version, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// ErrNotConfigured is returned by StartFromEnv when neither FLINK_VERSION nor
// FLINK_URL is set; a TestMain usually skips the integration tests then.
var ErrNotConfigured = errors.New("flinkfixture: set FLINK_VERSION (e.g. 1.20.5 or 2.3.0) or FLINK_URL")

// StartFromEnv starts a cluster for the tests of a package, configured from
// the environment:
//
//	FLINK_URL      use the cluster already running at this URL (nothing is
//	               started or stopped; the test job jar is taken from the
//	               cache for FLINK_VERSION if that is set)
//	FLINK_VERSION  otherwise start that version with Start(ctx, base)
//
// base supplies the other settings; its Version is replaced by FLINK_VERSION.
func StartFromEnv(ctx context.Context, base Config) (*Cluster, error) {
	version := os.Getenv("FLINK_VERSION")
	if url := strings.TrimRight(os.Getenv("FLINK_URL"), "/"); url != "" {
		return external(ctx, url, version, base)
	}
	if version == "" {
		return nil, ErrNotConfigured
	}
	base.Version = version
	return Start(ctx, base)
}

func external(ctx context.Context, url, version string, base Config) (*Cluster, error) {
	c := &Cluster{
		URL:          url,
		Version:      version,
		TestJobClass: TestJobClass,
		External:     true,
		http:         &http.Client{Timeout: 10 * time.Second},
	}
	var fc struct {
		FlinkVersion string `json:"flink-version"`
	}
	if err := c.getJSON(ctx, "/config", &fc); err != nil {
		return nil, fmt.Errorf("flinkfixture: FLINK_URL %s: %w", url, err)
	}
	c.FlinkVersion = fc.FlinkVersion
	if c.Version == "" {
		c.Version = fc.FlinkVersion
	}
	cache := base.CacheDir
	if cache == "" {
		cache = os.Getenv("FLINK_CACHE_DIR")
	}
	if cache == "" {
		if root, err := RepoRoot(); err == nil {
			cache = filepath.Join(root, ".cache", "flink")
		}
	}
	if cache != "" && c.Version != "" {
		jar := filepath.Join(cache, c.Version, "flinkkit-testjob.jar")
		if _, err := os.Stat(jar); err == nil {
			c.TestJobJar = jar
		}
	}
	return c, nil
}
