package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkkit/flinkkit/flinkapi"
	"github.com/flinkkit/flinkkit/policy"
)

// healthResult is the JSON result of health.
type healthResult struct {
	Job         flinkapi.JobID     `json:"jobID"`
	JobState    flinkapi.JobState  `json:"jobState"`
	Health      policy.HealthState `json:"health"`
	Problem     policy.Reason      `json:"problem"`
	Message     string             `json:"message"`
	Restarts    int64              `json:"restarts"`
	Checkpoints int64              `json:"completedCheckpoints"`
	Samples     int                `json:"samples"`
}

func (a *app) healthCmd() *cobra.Command {
	var p policy.HealthPolicy
	var window, cpWindow, transition time.Duration
	cmd := a.jobCommand(&cobra.Command{
		Use:   "health JOB",
		Short: "Judge a job's health: restarts, checkpoint progress, stuck states",
		Long: `health samples JOB (a job id, or the name of an applied job): its state, Flink's
restart count and its checkpoints, adds the sample to JOB's health history in
--state-dir and judges it by policy.EvaluateHealth: more than --max-restarts
restarts within --window, no checkpoint within the checkpoint window, or a
transitional state longer than --transition-timeout make it unhealthy (exit
code 1). Restarts are counted from the job's start when it started within
the window, else from the oldest sample in the window: run health
repeatedly (e.g. with watch) for a job older than the window.

` + exitCodesHelp,
	}, func(cmd *cobra.Command, arg string, job flinkapi.JobID, c *flinkapi.Client) error {
		p.Window, p.CheckpointWindow, p.TransitionTimeout = policy.Duration(window), policy.Duration(cpWindow), policy.Duration(transition)
		if err := p.Validate(); err != nil {
			return badInput("%v", err)
		}
		ctx, cancel := a.withTimeout(cmd.Context())
		defer cancel()
		d, err := c.Job(ctx, job)
		if err != nil {
			return err
		}
		now := a.now()
		sample := policy.HealthSample{Time: now, State: d.State, StateSince: d.Timestamps[d.State], Restarts: -1}
		if n, ok, err := c.JobRestarts(ctx, job); err == nil && ok {
			sample.Restarts = n
		}
		stats, err := c.Checkpoints(ctx, job)
		if err != nil && !errors.Is(err, flinkapi.ErrNotFound) {
			return err
		}
		if stats != nil {
			sample.CompletedCheckpoints = stats.Counts.Completed
			if lc := stats.LatestCompleted; lc != nil {
				sample.LatestCheckpoint = lc.LatestAck
			}
		}
		path := a.state().path("health", string(job)+".json")
		var h policy.HealthHistory
		if _, err := readJSON(path, &h); err != nil {
			return err
		}
		if err := h.CheckFormat(); err != nil {
			return err // one a later flinkkit wrote is never written back
		}
		if h.JobID != job && !d.StartTime.IsZero() && now.Sub(d.StartTime) < p.WithDefaults().Window.Std() {
			// Flink counts restarts from the job's start: none then.
			h.Add(job, d.StartTime, policy.HealthSample{Time: d.StartTime, State: flinkapi.JobCreated, Restarts: 0}, p)
		}
		if cfg, err := c.CheckpointConfig(ctx, job); err == nil {
			h.CheckpointInterval, h.CheckpointTimeout = policy.Duration(cfg.Interval), policy.Duration(cfg.Timeout)
		}
		h.Add(job, d.StartTime, sample, p)
		if err := writeJSON(path, h); err != nil {
			return err
		}
		obs := policy.Observations{JobManagerReachable: true, LastContact: now,
			Job: &policy.Job{ID: d.ID, State: d.State, StartTime: d.StartTime, EndTime: d.EndTime, StateSince: d.Timestamps[d.State]}}
		dec := policy.EvaluateHealth(p, h, obs, now)
		res := healthResult{Job: job, JobState: d.State, Health: dec.State, Problem: dec.Problem, Message: dec.Message(),
			Restarts: sample.Restarts, Checkpoints: sample.CompletedCheckpoints, Samples: len(h.Samples)}
		if a.output == "json" {
			if err := a.emitJSON(res); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(a.stdout, "job %s %s: %s (%s); %d restarts, %d checkpoints completed\n", job, d.State, dec.State, dec.Message(),
				max(sample.Restarts, 0), sample.CompletedCheckpoints)
		}
		if dec.State == policy.Unhealthy {
			return &exitError{code: exitFailed, msg: fmt.Sprintf("job %s is unhealthy: %s", job, dec.Message())}
		}
		return nil
	})
	cmd.Flags().IntVar(&p.MaxRestarts, "max-restarts", policy.DefaultHealthMaxRestarts, "restarts tolerated within --window")
	cmd.Flags().DurationVar(&window, "window", policy.DefaultHealthWindow.Std(), "the period restarts are counted over")
	cmd.Flags().DurationVar(&cpWindow, "checkpoint-window", 0, "longest time without a completed checkpoint (0: from the job's checkpoint interval and timeout)")
	cmd.Flags().DurationVar(&transition, "transition-timeout", policy.DefaultTransitionTimeout.Std(), "longest time in a transitional state (CREATED, RESTARTING, ...)")
	return cmd
}
