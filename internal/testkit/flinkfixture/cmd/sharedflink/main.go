// Command sharedflink starts one real Flink session cluster of
// FLINK_VERSION (one JobManager, one TaskManager with
// flinkfixture.SharedSlots task slots) that keeps its checkpoints and
// savepoints in an S3-compatible object store on 127.0.0.1 (a SeaweedFS
// server started with it, flinkfixture.Config.ObjectStore; -objectstore=false
// keeps them on local disk), runs a command with FLINKKIT_SHARED_CLUSTER
// naming the cluster's description, and stops the cluster and the store
// when the command ends, fails or is interrupted. The tests that need only
// a plain session cluster (flinkfixture.SharedForTest) use it instead of
// starting one each, and the clusters those tests start with
// Config.ObjectStore use its store; `make integration` runs the real-Flink
// suites of every package under it, once per Flink version:
//
//	FLINK_VERSION=1.20.5 go run ./internal/testkit/flinkfixture/cmd/sharedflink -- \
//		go test -tags integration -count=1 -p 1 ./lifecycle/
//
// It exits with the command's exit status, or 1 when the cluster did not
// start or stop cleanly.
//
// sharedflink is test harness (internal/testkit): it runs the real-Flink
// suites and is no part of the library.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flinkkit/flinkkit/internal/testkit/flinkfixture"
)

func main() {
	os.Exit(run())
}

func run() int {
	slots := flag.Int("slots", flinkfixture.SharedSlots, "task slots of the TaskManager")
	objectStore := flag.Bool("objectstore", true, "keep checkpoints and savepoints in an S3-compatible object store")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: FLINK_VERSION=<version> sharedflink [-slots N] [-objectstore=false] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		return 2
	}
	version := os.Getenv("FLINK_VERSION")
	if version == "" {
		fmt.Fprintln(os.Stderr, "sharedflink: set FLINK_VERSION (e.g. 1.20.5 or 2.3.0)")
		return 2
	}

	// Signals are caught from here on, so that an interrupted run stops
	// the cluster; the command gets them from the terminal's process
	// group, or forwarded below.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	begin := time.Now()
	cluster, err := flinkfixture.Start(ctx, flinkfixture.Config{Version: version, Slots: *slots, ObjectStore: *objectStore})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sharedflink: the shared Flink %s cluster did not start: %v\n", version, err)
		return 1
	}
	code := func() int {
		desc := filepath.Join(cluster.WorkDir, "shared-cluster.json")
		if err := cluster.WriteDescription(desc); err != nil {
			fmt.Fprintf(os.Stderr, "sharedflink: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "sharedflink: shared Flink %s at %s (%d slots) ready in %v; %s=%s\n",
			cluster.FlinkVersion, cluster.URL, cluster.Slots, time.Since(begin).Round(time.Millisecond), flinkfixture.SharedEnv, desc)
		if cluster.Store != nil {
			fmt.Fprintf(os.Stderr, "sharedflink: checkpoints in %s, savepoints in %s (object store at %s)\n",
				cluster.CheckpointURI, cluster.SavepointURI, cluster.Store.Endpoint)
		}
		defer func() {
			for _, p := range cluster.Processes() {
				fmt.Fprintf(os.Stderr, "sharedflink: %s pid %d RSS %d MiB at the end\n", p.Role, p.PID, p.RSS>>20)
			}
		}()

		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "sharedflink: %v before the command started\n", sig)
			return 1
		default:
		}
		cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), flinkfixture.SharedEnv+"="+desc)
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "sharedflink: %v\n", err)
			return 1
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case err := <-done:
				var ee *exec.ExitError
				switch {
				case err == nil:
					return 0
				case errors.As(err, &ee) && ee.ExitCode() > 0:
					return ee.ExitCode()
				default:
					fmt.Fprintf(os.Stderr, "sharedflink: %s: %v\n", flag.Arg(0), err)
					return 1
				}
			}
		}
	}()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "sharedflink: stop the shared cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
