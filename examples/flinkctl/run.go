package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkkit/flinkkit/fleet"
)

func (a *app) runCmd() *cobra.Command {
	var dir, metrics string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "run -f DIR",
		Short: "Keep the jobs of a directory of job files as they say, until stopped",
		Long: `run keeps the jobs of the job files in DIR as their specs say, until SIGINT
or SIGTERM: the fleet runner reconciles each job when it is due and at once
when the cluster's overview shows its job changed (a job that fails, or that
Flink loses, is restarted from its newest state unless its spec says
"restart: {mode: Never}"). The directory is read again every --interval:
a new file deploys its job, a changed one updates it, and an applied job
whose file is gone is torn down with a final savepoint recorded under its
name, as delete does. A file that does not decode is reported and the jobs
run on as the directory last read well said.

A line is printed whenever a job's verdict or situation changes. With
--metrics-addr, /metrics serves the runner's metrics in the Prometheus text
format. ` + "`flinkctl status`" + ` shows the records while run runs.

` + jobFileHelp + `
` + exitCodesHelp,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInput("run needs -f DIR, the directory of job files (see `flinkctl run --help`)")
			}
			if interval <= 0 {
				return badInput("--interval %v: must be positive", interval)
			}
			return a.run(cmd.Context(), dir, interval, metrics)
		},
	}
	cmd.Flags().StringVarP(&dir, "file", "f", "", "the directory of job files (or one job file)")
	cmd.Flags().DurationVar(&interval, "interval", 30*time.Second, "how often the directory is read again")
	cmd.Flags().StringVar(&metrics, "metrics-addr", "", "serve /metrics at this address (host:port)")
	_ = cmd.MarkFlagDirname("file")
	return cmd
}

// run runs the fleet of the job files in dir until ctx ends.
func (a *app) run(ctx context.Context, dir string, interval time.Duration, metrics string) error {
	deps, root, err := a.readJobs(dir)
	if err != nil {
		return err
	}
	if err := a.useJars(root); err != nil {
		return err
	}
	unlock, err := a.state().lock(fleetLock)
	if err != nil {
		return err
	}
	defer unlock()
	r, _, err := a.runner(nil)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(a.stdout, format+"\n", args...)
	}
	last := map[string]string{}
	r.OnResult = func(res fleet.Result) {
		line := fmt.Sprintf("%s: %s (%s)", res.Name, orDash(string(res.Verdict)), orDash(string(res.Situation)))
		switch {
		case res.Deleted:
			line = res.Name + ": torn down, its record deleted"
		case res.Err != nil:
			line += ": " + firstLine(res.Err.Error())
		case res.Removed:
			line += ", being torn down"
		}
		mu.Lock()
		changed := last[res.Name] != line
		last[res.Name] = line
		mu.Unlock()
		if changed {
			say("%s", line)
		}
	}
	resync := func(deps []fleet.Deployment) error {
		cs, err := r.Sync(ctx, deps)
		if err != nil {
			return err
		}
		for _, l := range []struct {
			what  string
			names []string
		}{{"added", cs.Added}, {"changed", cs.Changed}, {"removed", cs.Removed}} {
			if len(l.names) > 0 {
				say("%s: %s", l.what, strings.Join(l.names, ", "))
			}
		}
		return nil
	}
	if err := resync(deps); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return badInput("%s", strings.TrimPrefix(err.Error(), "fleet: "))
	}
	if metrics != "" {
		ln, err := net.Listen("tcp", metrics)
		if err != nil {
			return badInput("--metrics-addr: %v", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_ = r.WriteMetrics(w)
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		say("metrics at http://%s/metrics", ln.Addr())
	}
	clusters := a.url
	if a.clustersFile != "" {
		clusters = "the clusters of " + a.clustersFile
	}
	say("running the %d job(s) of %s on %s; the directory is read every %v", len(deps), dir, clusters, interval)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for {
		select {
		case <-ctx.Done():
			<-done
			say("stopped; the records are in %s", a.state().path("records"))
			return nil
		case <-time.After(interval):
		}
		deps, _, err := a.readJobs(dir)
		if err == nil {
			err = resync(deps)
		}
		if err != nil && ctx.Err() == nil {
			mu.Lock()
			fmt.Fprintf(a.stderr, "flinkctl: %s: %s; the jobs run on as before\n", dir, firstLine(strings.TrimPrefix(err.Error(), "fleet: ")))
			mu.Unlock()
		}
	}
}
