package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkkit/flinkkit/flinkapi/flinktest"
)

// newestFakeVersion is the newest Flink release the fake JobManager
// plays in full (flinktest models 1.15 to 2.x; 2.3.0 is the newest it
// has the REST answers of).
const newestFakeVersion = "2.3.0"

// exampleJob is the job file `fake` writes beside the jar of the test
// job, for a first apply.
const exampleJob = `# A job file for flinkctl: a name and the fields of lifecycle.JobSpec.
name: counter
job:
  jarFile: counter.jar        # relative to this file
  entryClass: %s
  args: ["--out", "/tmp/counts", "--rate", "40", "--checkpoint-interval", "1000"]
update:
  mode: Savepoint             # an upgrade stops with a savepoint and starts from it
restart:
  mode: FromLatestState       # a failed job restarts from its newest state
`

func (a *app) fakeCmd() *cobra.Command {
	var port int
	var version, example string
	cmd := &cobra.Command{
		Use:   "fake [--port 8081] [--flink-version V]",
		Short: "Run a fake Flink JobManager (flinktest) on a port, to try flinkctl without a cluster",
		Long: `fake serves a fake Flink JobManager (flinkkit's flinktest) at
http://127.0.0.1:PORT until interrupted (Ctrl-C): a session cluster with one
TaskManager that runs flinkkit's test job (a keyed counter) in real time,
with the REST answers of the Flink version it plays. Its jobs, checkpoints
and savepoints live in memory and go with it.

It writes a job file and the test job's jar into --example-dir (default: a
new temporary directory) and prints what to run in another terminal:

  flinkctl apply -f DIR/counter.yaml
  flinkctl status counter

The default --flink-url, http://localhost:8081, is the fake on its default
port.

` + exitCodesHelp,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.fake(cmd.Context(), port, version, example)
		},
	}
	cmd.Flags().IntVar(&port, "port", 8081, "the port to serve on, on 127.0.0.1 (0: any free port)")
	cmd.Flags().StringVar(&version, "flink-version", newestFakeVersion, "the Flink version the fake plays: 1.15 to 2.x, e.g. 1.20.5")
	cmd.Flags().StringVar(&example, "example-dir", "", "where to write the example job file and jar (default: a new temporary directory)")
	_ = cmd.RegisterFlagCompletionFunc("flink-version", cobra.FixedCompletions([]string{"1.15.4", "1.18.1", "1.19.1", "1.20.5", newestFakeVersion},
		cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// newFake starts a flinktest server in real time playing version; an
// unknown version is bad input.
func newFake(version string) (srv *flinktest.Server, err error) {
	defer func() {
		// NewServer panics on an invalid option (a version it does not
		// play), as the mistake of a test; here it is the user's input.
		if r := recover(); r != nil {
			srv, err = nil, badInput("--flink-version %q: %s", version, strings.TrimPrefix(fmt.Sprint(r), "flinktest: WithVersion: "))
		}
	}()
	return flinktest.NewServer(flinktest.WithVersion(version), flinktest.WithRealTime(), flinktest.WithSavepointDuration(2*time.Second)), nil
}

// fake serves a fake JobManager on port until ctx ends.
func (a *app) fake(ctx context.Context, port int, version, example string) error {
	if port < 0 || port > 65535 {
		return badInput("--port %d: want 0 to 65535", port)
	}
	srv, err := newFake(version)
	if err != nil {
		return err
	}
	defer srv.Close()
	// flinktest serves on a port of its own choosing (httptest); the
	// port asked for forwards to it.
	target, err := url.Parse(srv.URL)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)))
	if err != nil {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("cannot serve on port %d (%v): choose another with --port", port, errors.Unwrap(err))}
	}
	hs := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()

	u := "http://" + ln.Addr().String()
	if example == "" {
		if example, err = os.MkdirTemp("", "flinkctl-fake-"); err != nil {
			return err
		}
	}
	if err := writeExample(example); err != nil {
		_ = hs.Close()
		return err
	}
	flag := ""
	if port != 8081 {
		flag = " --flink-url " + u
	}
	job := filepath.Join(example, "counter.yaml")
	fmt.Fprintf(a.stdout, "fake JobManager (flinktest) playing Flink %s at %s\n", version, u)
	fmt.Fprintf(a.stdout, "try, in another terminal:\n  flinkctl%s apply -f %s\n  flinkctl%s status counter\n  flinkctl%s jobs\n", flag, job, flag, flag)
	fmt.Fprintln(a.stdout, "Ctrl-C stops it; its jobs and savepoints go with it")

	select {
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	fmt.Fprintln(a.stdout, "fake JobManager stopped")
	return nil
}

// writeExample writes the example job file and the test job's jar into
// dir.
func writeExample(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--example-dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "counter.jar"), flinktest.MinimalJar(flinktest.CounterJobClass), 0o644); err != nil {
		return fmt.Errorf("--example-dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "counter.yaml"), fmt.Appendf(nil, exampleJob, flinktest.CounterJobClass), 0o644); err != nil {
		return fmt.Errorf("--example-dir: %w", err)
	}
	return nil
}
