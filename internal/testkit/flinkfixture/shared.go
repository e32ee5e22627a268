package flinkfixture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// SharedEnv names the environment variable that points the tests at a
// session cluster shared by the tests of several packages: the path of
// the file WriteDescription wrote for it. Go runs each package's tests in
// a process of its own, so such a cluster is started outside the test
// binaries (cmd/sharedflink, which `make integration` runs once per Flink
// version) and the tests of all packages use it one after the other
// (go test -p 1, no t.Parallel among them).
const SharedEnv = "FLINKKIT_SHARED_CLUSTER"

// SharedSlots is the number of task slots of the shared cluster's one
// TaskManager: every test that shares it needs at most 4, and two jobs of
// a blue/green upgrade run side by side.
const SharedSlots = 8

// description is what the tests of other processes need to know of a
// shared cluster.
type description struct {
	URL           string       `json:"url"`
	Version       string       `json:"version"`
	FlinkVersion  string       `json:"flinkVersion"`
	WorkDir       string       `json:"workDir"`
	SavepointDir  string       `json:"savepointDir"`
	CheckpointDir string       `json:"checkpointDir"`
	SavepointURI  string       `json:"savepointURI"`
	CheckpointURI string       `json:"checkpointURI"`
	Store         *ObjectStore `json:"objectStore,omitempty"`
	ConfDir       string       `json:"confDir"`
	LogDir        string       `json:"logDir"`
	LibDir        string       `json:"libDir"`
	TestJobJar    string       `json:"testJobJar"`
	TestJobClass  string       `json:"testJobClass"`
	Slots         int          `json:"slots"`
	Ports         Ports        `json:"ports"`
}

// WriteDescription writes what the tests of other processes need to use
// the session cluster c (its URL, folders, test job jar and slots, and
// its object store with the store's credentials) to path, as JSON, for
// SharedEnv.
func (c *Cluster) WriteDescription(path string) error {
	if c.Application != nil {
		return errors.New("flinkfixture: an application cluster cannot be shared")
	}
	b, err := json.MarshalIndent(description{
		URL: c.URL, Version: c.Version, FlinkVersion: c.FlinkVersion,
		WorkDir: c.WorkDir, SavepointDir: c.SavepointDir, CheckpointDir: c.CheckpointDir,
		SavepointURI: c.SavepointURI, CheckpointURI: c.CheckpointURI, Store: c.Store,
		ConfDir: c.ConfDir, LogDir: c.LogDir, LibDir: c.LibDir,
		TestJobJar: c.TestJobJar, TestJobClass: c.TestJobClass, Slots: c.Slots, Ports: c.Ports,
	}, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Shared returns the shared session cluster that SharedEnv describes, or
// nil and no error when SharedEnv is not set. The cluster is External: it
// is not stopped by Stop, and its processes cannot be killed or restarted
// from a test.
func Shared() (*Cluster, error) {
	path := os.Getenv(SharedEnv)
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("flinkfixture: %s: %w", SharedEnv, err)
	}
	var d description
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("flinkfixture: %s %s: %w", SharedEnv, path, err)
	}
	if d.URL == "" || d.TestJobJar == "" || d.Slots <= 0 {
		return nil, fmt.Errorf("flinkfixture: %s %s: no URL, test job jar or slots", SharedEnv, path)
	}
	if d.Store != nil {
		registerStore(d.Store)
	}
	return &Cluster{
		URL: d.URL, Version: d.Version, FlinkVersion: d.FlinkVersion,
		WorkDir: d.WorkDir, SavepointDir: d.SavepointDir, CheckpointDir: d.CheckpointDir,
		SavepointURI: d.SavepointURI, CheckpointURI: d.CheckpointURI, Store: d.Store,
		ConfDir: d.ConfDir, LogDir: d.LogDir, LibDir: d.LibDir,
		TestJobJar: d.TestJobJar, TestJobClass: d.TestJobClass, Slots: d.Slots, Ports: d.Ports,
		External: true,
		shared:   true,
		http:     &http.Client{Timeout: 10 * time.Second},
	}, nil
}

// Shareable reports whether a test that asks for cfg can use a shared
// session cluster of slots task slots: a plain session cluster (no extra
// configuration, no application, no TLS, a TaskManager, no work folder of
// its own) with at most that many slots. Whether the state is in an
// object store is not a test's choice here: the shared cluster of
// `make integration` keeps it in one (Config.ObjectStore), and a test
// asking for cfg.ObjectStore gets the shared cluster only when it does.
func Shareable(cfg Config, slots int) bool {
	return len(cfg.Extra) == 0 && cfg.Application == nil && cfg.WorkDir == "" && cfg.Slots <= slots &&
		!cfg.KeepWorkDir && cfg.Java == "" && cfg.RESTTLS == nil && !cfg.NoTaskManager
}

// SharedForTest returns the shared session cluster of SharedEnv for the
// test t when one is set and cfg can use it (Shareable), and otherwise
// starts a cluster of t's own as StartForTest does, so that a package's
// tests run alone (go test -tags integration ./lifecycle/) as well.
//
// On the shared cluster the test starts alone: jobs that an earlier test
// left running are cancelled first, and the test waits until every task
// slot is free. When t ends, the jobs it started that still run are
// cancelled, and the cluster's logs are logged if t failed. The jobs that
// ran before t are known to the returned Cluster (ExistedBefore), for
// tests that count jobs. The shared cluster's processes are not t's: a
// test that kills or restarts a TaskManager or JobManager, or needs its
// own configuration, starts its own cluster with StartForTest.
func SharedForTest(t testing.TB, ctx context.Context, cfg Config) *Cluster {
	t.Helper()
	shared, err := Shared()
	if err != nil {
		t.Fatalf("%s: %v", t.Name(), err)
	}
	if shared == nil || !Shareable(cfg, shared.Slots) || cfg.ObjectStore && shared.Store == nil {
		return StartForTest(t, ctx, cfg)
	}
	if v := os.Getenv("FLINK_VERSION"); v != "" && v != shared.Version {
		t.Fatalf("%s: the shared cluster (%s) runs Flink %s, FLINK_VERSION is %s", t.Name(), os.Getenv(SharedEnv), shared.Version, v)
	}
	start := time.Now()
	left, err := shared.settle(ctx)
	if err != nil {
		t.Fatalf("%s: the shared cluster at %s: %v", t.Name(), shared.URL, err)
	}
	if len(left) > 0 {
		t.Logf("cancelled %d jobs an earlier test left running on the shared cluster: %s", len(left), strings.Join(left, " "))
	}
	jobs, err := shared.jobs(ctx)
	if err != nil {
		t.Fatalf("%s: the shared cluster at %s: %v", t.Name(), shared.URL, err)
	}
	shared.before = map[string]bool{}
	for _, j := range jobs {
		shared.before[j.ID] = true
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("shared cluster logs:\n" + shared.Logs())
		}
		// The test's context is usually cancelled by now.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := shared.settle(ctx); err != nil {
			t.Errorf("cancel the test's jobs on the shared cluster: %v", err)
		}
	})
	t.Logf("Flink %s at %s (shared, %d slots) ready for the test in %v", shared.FlinkVersion, shared.URL, shared.Slots,
		time.Since(start).Round(time.Millisecond))
	return shared
}

// ExistedBefore reports whether the job id was known to the shared
// cluster before the test got it from SharedForTest (always false for a
// cluster of the test's own): a test that counts the jobs on its cluster
// counts only the others.
func (c *Cluster) ExistedBefore(id string) bool { return c.before[id] }

// sharedJob is one entry of GET /jobs.
type sharedJob struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (c *Cluster) jobs(ctx context.Context) ([]sharedJob, error) {
	var resp struct {
		Jobs []sharedJob `json:"jobs"`
	}
	if err := c.getJSON(ctx, "/jobs", &resp); err != nil {
		return nil, err
	}
	return resp.Jobs, nil
}

// globallyTerminal are the job states Flink never leaves.
func globallyTerminal(state string) bool {
	return state == "FINISHED" || state == "CANCELED" || state == "FAILED"
}

// settle cancels the jobs that are not globally terminal, waits until they
// are, and then until every task slot is free again. It returns the ids of
// the jobs it cancelled.
func (c *Cluster) settle(ctx context.Context) ([]string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	var cancelled []string
	asked := map[string]bool{}
	for {
		jobs, err := c.jobs(ctx)
		if err != nil {
			return cancelled, err
		}
		live := 0
		for _, j := range jobs {
			if globallyTerminal(j.Status) {
				continue
			}
			live++
			if !asked[j.ID] {
				if err := c.cancelJob(ctx, j.ID); err != nil {
					return cancelled, fmt.Errorf("cancel job %s (%s): %w", j.ID, j.Status, err)
				}
				asked[j.ID] = true
				cancelled = append(cancelled, j.ID)
			}
		}
		if live == 0 {
			break
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return cancelled, fmt.Errorf("jobs still running: %v", jobs)
		}
	}
	for {
		var ov struct {
			SlotsTotal     int `json:"slots-total"`
			SlotsAvailable int `json:"slots-available"`
		}
		err := c.getJSON(ctx, "/overview", &ov)
		if err == nil && ov.SlotsTotal >= c.Slots && ov.SlotsAvailable == ov.SlotsTotal {
			return cancelled, nil
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return cancelled, fmt.Errorf("task slots not free: %d of %d available", ov.SlotsAvailable, ov.SlotsTotal)
		}
	}
}

func (c *Cluster) cancelJob(ctx context.Context, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, c.URL+"/jobs/"+id+"?mode=cancel", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	// 202 accepted; a job that ended meanwhile answers with an error the
	// next look at the job list sorts out.
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
